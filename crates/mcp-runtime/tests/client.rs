//! The connection (mcp-runtime `client`) against a real server over real pipes: our own
//! `mcp-mock` with its fault knobs.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::client::{
    CallOptions, ClientError, ConnectOptions, Content, McpClient, group_alive,
};
use mcp_runtime::config::ServerConfig;
use serde_json::{Value, json};
use support::{alive, args, echo, mock, read_pid, recorded, temp_dir, wait_dead};
use tokio_util::sync::CancellationToken;

async fn connect(config: &ServerConfig) -> Result<McpClient, ClientError> {
    McpClient::connect("mock", config, &ConnectOptions::default()).await
}

#[tokio::test]
async fn handshake_negotiates_2025_11_25_and_reports_the_server() {
    let client = connect(&mock(&["--name", "hello"])).await.unwrap();
    assert_eq!(client.info().name, "hello");
    assert_eq!(client.info().protocol_version, "2025-11-25");
    client.ping().await.unwrap();
    assert!(!client.is_closed());
    client.close().await;
    assert!(client.is_closed());
}

#[tokio::test]
async fn thousand_tools_are_listed_across_pages() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let record_arg = record.to_string_lossy().into_owned();
    let client = connect(&mock(&[
        "--tools",
        "1000",
        "--page-size",
        "50",
        "--record",
        &record_arg,
    ]))
    .await
    .unwrap();
    let tools = client.list_tools().await.unwrap();
    let generated = tools.iter().filter(|t| t.name.starts_with("tool_")).count();
    assert_eq!(generated, 1000);
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), tools.len(), "no tool listed twice");
    assert!(tools.iter().any(|t| t.name == "echo"));
    // Every page was asked for: ceil(total / 50) requests.
    let pages = recorded(&record, "\"tools/list\"").len();
    assert_eq!(pages, tools.len().div_ceil(50));
    client.close().await;
}

#[tokio::test]
async fn only_tool_calls_carry_a_progress_token() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let record_arg = record.to_string_lossy().into_owned();
    let client = connect(&mock(&["--record", &record_arg])).await.unwrap();
    client.list_tools().await.unwrap();
    client.ping().await.unwrap();
    assert_eq!(echo(&client, "x").await.unwrap(), "x");
    client.close().await;
    let token = |request: &Value| request["params"]["_meta"].get("progressToken").cloned();
    let lists = recorded(&record, "\"tools/list\"");
    assert!(!lists.is_empty(), "tools/list was recorded");
    for request in lists.iter().chain(&recorded(&record, "\"ping\"")) {
        assert_eq!(token(request), None, "no progress to report: {request}");
    }
    let calls = recorded(&record, "\"tools/call\"");
    assert_eq!(calls.len(), 1);
    assert!(token(&calls[0]).is_some(), "{}", calls[0]);
}

#[tokio::test]
async fn a_repeated_cursor_is_an_error_not_an_endless_loop() {
    let client = connect(&mock(&[
        "--tools",
        "10",
        "--page-size",
        "2",
        "--repeat-cursor",
    ]))
    .await
    .unwrap();
    let error = client.list_tools().await.unwrap_err();
    assert!(matches!(error, ClientError::Protocol { .. }), "{error}");
    assert!(error.to_string().contains("repeated the cursor"), "{error}");
    client.close().await;
}

#[tokio::test]
async fn call_returns_text_and_tool_errors_are_results() {
    let client = connect(&mock(&[])).await.unwrap();
    let out = client
        .call_tool(
            "echo",
            args(json!({"text": "héllo 👋"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "héllo 👋");
    assert!(!out.is_error);

    let failed = client
        .call_tool("fail", None, CallOptions::default())
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.text(), "failure requested");

    let unknown = client
        .call_tool("no_such_tool", None, CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(unknown, ClientError::Rpc { .. }), "{unknown}");
    client.close().await;
}

/// A server is started with a parent-death signal, which the kernel sends when the *thread*
/// that started it exits. A host that connects from a short-lived thread (here a thread of a
/// blocking pool that idles out after 10 ms) must not lose its server when that thread ends.
#[test]
fn a_server_outlives_the_thread_that_connected_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_keep_alive(Duration::from_millis(10))
        .enable_all()
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    let client = runtime
        .block_on(runtime.spawn_blocking(move || handle.block_on(connect(&mock(&[])))))
        .unwrap()
        .unwrap();
    let pid = client.pid().expect("a stdio server has a pid");
    // Long enough for the blocking thread to have idled out many times over.
    std::thread::sleep(Duration::from_millis(500));
    runtime.block_on(async {
        assert!(
            alive(pid),
            "the server died with the thread that connected it"
        );
        assert_eq!(echo(&client, "still here").await.unwrap(), "still here");
        client.close().await;
    });
}

#[tokio::test]
async fn results_keep_every_content_kind_and_structured_content() {
    let client = connect(&mock(&[])).await.unwrap();
    let out = client
        .call_tool("mixed", None, CallOptions::default())
        .await
        .unwrap();
    let kinds: Vec<&str> = out
        .content
        .iter()
        .map(|block| match block {
            Content::Text { .. } => "text",
            Content::Image { .. } => "image",
            Content::Audio { .. } => "audio",
            Content::Resource { .. } => "resource",
            Content::ResourceLink(_) => "resource_link",
            _ => "unknown",
        })
        .collect();
    for kind in ["text", "image", "audio", "resource", "resource_link"] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert!(out.structured_content.is_some());

    let image = client
        .call_tool("image", None, CallOptions::default())
        .await
        .unwrap();
    assert!(
        matches!(&image.content[0], Content::Image { mime_type, .. } if mime_type == "image/png")
    );

    let structured = client
        .call_tool("structured", None, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(structured.structured_content.unwrap()["unit"], "C");
    client.close().await;
}

#[tokio::test]
async fn timeout_sends_notifications_cancelled() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let client = connect(&mock(&["--record", &record.to_string_lossy()]))
        .await
        .unwrap();
    let options = CallOptions::default().with_timeout(Duration::from_millis(200));
    let error = client
        .call_tool("sleep", args(json!({"ms": 10_000})), options)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error}");

    // The connection is still usable, and the server heard about the cancellation.
    client.ping().await.unwrap();
    let call_id = recorded(&record, "\"sleep\"")[0]["id"].clone();
    let cancels = recorded(&record, "notifications/cancelled");
    assert_eq!(cancels.len(), 1, "one cancellation recorded");
    assert_eq!(cancels[0]["params"]["requestId"], call_id);
    client.close().await;
}

#[tokio::test]
async fn cancelling_a_call_sends_notifications_cancelled() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let client = Arc::new(
        connect(&mock(&["--record", &record.to_string_lossy()]))
            .await
            .unwrap(),
    );
    let cancel = CancellationToken::new();
    let call = {
        let client = client.clone();
        let options = CallOptions::default().with_cancel(cancel.clone());
        tokio::spawn(async move {
            client
                .call_tool("sleep", args(json!({"ms": 10_000})), options)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(error, ClientError::Cancelled { .. }), "{error}");
    client.ping().await.unwrap();
    let cancels = recorded(&record, "notifications/cancelled");
    assert_eq!(cancels.len(), 1);
    assert_eq!(
        cancels[0]["params"]["requestId"],
        recorded(&record, "\"sleep\"")[0]["id"]
    );
    client.close().await;
}

#[tokio::test]
async fn crash_mid_call_fails_the_call_promptly_with_the_exit_status() {
    let mut config = mock(&["--crash-after", "1"]);
    // Far longer than the test may take: only crash detection can end the call in time.
    config.tool_timeout_ms = Some(120_000);
    let client = connect(&config).await.unwrap();
    client
        .call_tool("echo", args(json!({"text": "1"})), CallOptions::default())
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let error = client
        .call_tool("echo", args(json!({"text": "2"})), CallOptions::default())
        .await
        .unwrap_err();
    let ClientError::Exited { status, .. } = &error else {
        panic!("expected Exited, got {error}")
    };
    assert!(status.as_deref().unwrap_or("").contains("101"), "{error}");
    assert!(error.is_connection_lost());
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "crash detected by the timeout instead"
    );
    assert!(client.is_closed());
    client.close().await;
}

#[tokio::test]
async fn hang_in_initialize_times_out_with_the_stderr_tail() {
    let mut config = mock(&[
        "--hang-init",
        "--stderr",
        "booting: waiting for the license server",
    ]);
    config.startup_timeout_ms = Some(500);
    let dir = temp_dir();
    let pid_file = dir.path().join("pid");
    if let mcp_runtime::config::Transport::Stdio(stdio) = &mut config.transport {
        stdio.args.extend([
            "--pid-file".to_owned(),
            pid_file.to_string_lossy().into_owned(),
        ]);
    }
    let error = connect(&config).await.unwrap_err();
    let ClientError::Timeout { phase, .. } = &error else {
        panic!("expected Timeout, got {error}")
    };
    assert_eq!(phase, "initialize");
    assert!(
        error
            .stderr_tail()
            .iter()
            .any(|l| l.contains("waiting for the license server")),
        "{error}"
    );
    assert!(error.to_string().contains("waiting for the license server"));
    assert!(
        wait_dead(read_pid(&pid_file), Duration::from_secs(5)),
        "hung server killed"
    );
}

#[tokio::test]
async fn failure_at_start_up_reports_exit_status_and_stderr() {
    let error = connect(&mock(&["--fail-init", "fatal: config missing"]))
        .await
        .unwrap_err();
    let ClientError::Exited { status, phase, .. } = &error else {
        panic!("expected Exited, got {error}")
    };
    assert_eq!(phase, "initialize");
    assert!(status.as_deref().unwrap_or("").contains('1'), "{error}");
    assert!(
        error.to_string().contains("fatal: config missing"),
        "{error}"
    );
}

#[tokio::test]
async fn a_missing_command_is_a_spawn_error_naming_it() {
    let config = ServerConfig::stdio("/nonexistent/mcp-server-xyz", Vec::<String>::new());
    let error = connect(&config).await.unwrap_err();
    assert!(matches!(error, ClientError::Spawn { .. }), "{error}");
    assert!(error.to_string().contains("/nonexistent/mcp-server-xyz"));
}

#[tokio::test]
async fn garbage_on_stdout_is_tolerated() {
    let client = connect(&mock(&["--garbage", "3"])).await.unwrap();
    assert!(!client.list_tools().await.unwrap().is_empty());
    for i in 0..5 {
        let text = format!("call {i}");
        assert_eq!(echo(&client, &text).await.unwrap(), text);
    }
    client.close().await;
}

#[tokio::test]
async fn exit_right_after_the_handshake_is_a_clear_error() {
    // The server exits as soon as it handles `notifications/initialized`; depending on timing
    // the handshake or a request notices, and a request may find the connection closed before
    // it is sent. rmcp may answer a request that raced the notification first, so requests go
    // on until one meets the exit (bounded).
    let error = match connect(&mock(&["--exit-after-init"])).await {
        Ok(client) => {
            let mut error = None;
            for _ in 0..100 {
                if let Err(e) = client.list_tools().await {
                    error = Some(e);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            client.close().await;
            error.expect("the server exited, so a request must fail")
        }
        Err(error) => error,
    };
    assert!(
        error.is_connection_lost(),
        "expected a lost connection, got {error}"
    );
    assert!(
        error.to_string().contains("server exited")
            || error.to_string().contains("connection closed")
            || error
                .to_string()
                .contains("not sent: the connection is closed"),
        "{error}"
    );
}

#[tokio::test]
async fn unsupported_protocol_version_is_rejected() {
    let dir = temp_dir();
    let pid_file = dir.path().join("pid");
    let config = mock(&[
        "--protocol-version",
        "1999-01-01",
        "--pid-file",
        &pid_file.to_string_lossy(),
    ]);
    let error = connect(&config).await.unwrap_err();
    assert!(
        matches!(error, ClientError::UnsupportedProtocol { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("1999-01-01"));
    assert!(wait_dead(read_pid(&pid_file), Duration::from_secs(5)));
}

#[tokio::test]
async fn close_leaves_neither_the_server_nor_its_grandchild_alive() {
    let dir = temp_dir();
    let grandchild_file = dir.path().join("grandchild.pid");
    let client = connect(&mock(&["--grandchild", &grandchild_file.to_string_lossy()]))
        .await
        .unwrap();
    let server = client.pid().expect("stdio pid");
    let grandchild = read_pid(&grandchild_file);
    assert!(alive(server) && alive(grandchild));
    client.close().await;
    assert!(
        wait_dead(server, Duration::from_secs(5)),
        "server {server} still alive"
    );
    assert!(
        wait_dead(grandchild, Duration::from_secs(5)),
        "grandchild {grandchild} still alive"
    );
    assert!(!group_alive(server));
}

#[tokio::test]
async fn a_server_that_ignores_sigterm_is_killed() {
    let client = connect(&mock(&["--ignore-sigterm", "--hang-call"]))
        .await
        .unwrap();
    let pid = client.pid().expect("stdio pid");
    client.close().await;
    assert!(
        wait_dead(pid, Duration::from_secs(5)),
        "server {pid} survived close"
    );
}

#[tokio::test]
async fn dropping_a_client_kills_its_process_group() {
    let dir = temp_dir();
    let grandchild_file = dir.path().join("grandchild.pid");
    let client = connect(&mock(&["--grandchild", &grandchild_file.to_string_lossy()]))
        .await
        .unwrap();
    let (server, grandchild) = (client.pid().expect("stdio pid"), read_pid(&grandchild_file));
    drop(client);
    assert!(wait_dead(server, Duration::from_secs(5)));
    assert!(wait_dead(grandchild, Duration::from_secs(5)));
}

#[tokio::test]
async fn stderr_flood_neither_blocks_the_server_nor_grows_memory() {
    let client = connect(&mock(&["--stderr-flood"])).await.unwrap();
    for i in 0..200 {
        let text = format!("{i}");
        assert_eq!(echo(&client, &text).await.unwrap(), text);
    }
    let tail = client.stderr_tail(usize::MAX);
    assert!(
        !tail.is_empty() && tail.len() <= 200,
        "{} lines kept",
        tail.len()
    );
    client.close().await;
}

#[tokio::test]
async fn roots_list_is_answered_with_the_configured_roots() {
    let dir = temp_dir();
    let options = ConnectOptions::default().with_roots(vec![dir.path().to_owned()]);
    let client = McpClient::connect("mock", &mock(&[]), &options)
        .await
        .unwrap();
    let out = client
        .call_tool("roots", None, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(out.text(), format!("file://{}", dir.path().display()));
    client.close().await;
}

#[tokio::test]
async fn concurrent_calls_each_get_their_own_answer() {
    let client = Arc::new(connect(&mock(&["--call-delay", "5"])).await.unwrap());
    let calls = (0..200).map(|i| {
        let client = client.clone();
        async move {
            let text = format!("message {i}");
            assert_eq!(echo(&client, &text).await.unwrap(), text);
        }
    });
    futures::future::join_all(calls).await;
    client.close().await;
}

#[tokio::test]
async fn list_changed_notifications_reach_the_event_channel() {
    let (events, mut received) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let options = ConnectOptions::default().with_events(Some(events));
    let client = McpClient::connect("mock", &mock(&["--list-changed-ms", "50"]), &options)
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), received.recv())
        .await
        .expect("a list_changed within 10 s");
    assert_eq!(event, Some(mcp_runtime::client::ClientEvent::ToolsChanged));
    client.close().await;
}

#[tokio::test]
async fn a_notification_flood_is_bounded_and_calls_still_work() {
    use mcp_runtime::client::{ClientEvent, EVENT_BUFFER};
    // Nobody reads either channel during the flood: only their bounds limit what is queued.
    let (events, mut received) = tokio::sync::mpsc::channel(EVENT_BUFFER);
    let options = ConnectOptions::default().with_events(Some(events));
    let client = McpClient::connect("mock", &mock(&["--flood-tool"]), &options)
        .await
        .unwrap();
    let (progress, progress_received) = tokio::sync::mpsc::channel(8);
    let flooded = client
        .call_tool(
            "flood",
            args(json!({"count": 20000})),
            CallOptions::default().with_progress(progress),
        )
        .await
        .unwrap();
    assert_eq!(flooded.text(), "sent 20000 notifications");
    // Still responsive.
    assert_eq!(echo(&client, "still here").await.unwrap(), "still here");
    client.ping().await.unwrap();
    assert!(received.len() <= EVENT_BUFFER, "{} queued", received.len());
    assert!(progress_received.len() <= 8);
    // A tool-list change is never dropped, even when the queue was full of log events.
    let changed = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = received.recv().await {
            if event == ClientEvent::ToolsChanged {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(changed, Ok(true));
    client.close().await;
}

#[tokio::test]
async fn a_tool_list_past_the_cap_is_refused_naming_the_server() {
    let count = (mcp_runtime::client::MAX_LISTED_ITEMS + 1).to_string();
    let client = connect(&mock(&["--tools", &count, "--page-size", "1000"]))
        .await
        .unwrap();
    let error = client.list_tools().await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("server `mock`"), "{message}");
    assert!(message.contains("tools/list"), "{message}");
    assert!(message.contains("more than 10000 entries"), "{message}");
    // The connection itself is fine.
    client.ping().await.unwrap();
    client.close().await;
}

#[tokio::test]
async fn a_tool_listed_twice_is_offered_once_first_wins() {
    let dir = temp_dir();
    let file = dir.path().join("tools.json");
    std::fs::write(
        &file,
        json!([
            {"name": "twice", "description": "first"},
            {"name": "twice", "description": "second"}
        ])
        .to_string(),
    )
    .unwrap();
    let client = connect(&mock(&["--tool-file", file.to_str().unwrap()]))
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    let twice: Vec<_> = tools.iter().filter(|t| t.name == "twice").collect();
    assert_eq!(twice.len(), 1, "{twice:?}");
    assert_eq!(twice[0].description.as_deref(), Some("first"));
    client.close().await;
}

#[tokio::test]
async fn a_tool_list_past_the_byte_cap_is_refused() {
    // 65 tools of 1 MiB each, five to a page: every page is modest, the whole is not.
    let dir = temp_dir();
    let file = dir.path().join("big-tools.json");
    let description = "x".repeat(1 << 20);
    let tools: Vec<Value> = (0..65)
        .map(|i| json!({"name": format!("big_{i}"), "description": description}))
        .collect();
    std::fs::write(&file, Value::Array(tools).to_string()).unwrap();
    let client = connect(&mock(&[
        "--tool-file",
        file.to_str().unwrap(),
        "--page-size",
        "5",
    ]))
    .await
    .unwrap();
    let message = client.list_tools().await.unwrap_err().to_string();
    assert!(message.contains("server `mock`"), "{message}");
    assert!(message.contains("more than 64 MiB"), "{message}");
    client.close().await;
}

/// A timeout far longer than any of these tests may take: a call that fails must fail for its
/// own reason, not for this.
const LONG_TIMEOUT: Duration = Duration::from_secs(120);

#[tokio::test]
async fn an_answer_past_the_line_limit_fails_its_call_at_once_and_the_connection_goes_on() {
    let client = connect(&mock(&[])).await.unwrap();
    let options = CallOptions::default().with_timeout(LONG_TIMEOUT);
    // One text block of 17 MiB: one line of more than 16 MiB on the wire.
    let error = client
        .call_tool("huge", args(json!({"bytes": 17 << 20})), options)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("server `mock`")
            && message.contains("tools/call `huge`")
            && message.contains("a line of more than 16 MiB; the limit is 16 MiB"),
        "{message}"
    );
    assert!(!matches!(error, ClientError::Timeout { .. }), "{error}");
    // The line ended: the connection reads on.
    assert!(!client.is_closed());
    assert_eq!(echo(&client, "after").await.unwrap(), "after");
    client.close().await;
}

#[tokio::test]
async fn an_answer_that_never_ends_fails_its_call_and_then_the_connection() {
    let client = connect(&mock(&["--endless-answer"])).await.unwrap();
    let pid = client.pid().expect("stdio pid");
    let call = |text: &'static str| {
        let options = CallOptions::default().with_timeout(LONG_TIMEOUT);
        client.call_tool("echo", args(json!({ "text": text })), options)
    };
    // Two calls at once: the first answer written is a line without end, the other answer
    // never comes after it.
    let (a, b) = tokio::join!(call("a"), call("b"));
    let mut messages = [a.unwrap_err().to_string(), b.unwrap_err().to_string()];
    messages.sort_by_key(|message| message.contains("without ending it"));
    let [dropped, given_up] = messages;
    // The call answered fails as soon as the line passes the limit.
    assert!(
        dropped.contains("tools/call `echo`")
            && dropped.contains("a line of more than 16 MiB; the limit is 16 MiB"),
        "{dropped}"
    );
    // The other fails when the connection is given up.
    assert!(
        given_up.contains("tools/call `echo`")
            && given_up.contains("a line of more than 64 MiB without ending it")
            && given_up.contains("the connection is closed"),
        "{given_up}"
    );
    tokio::time::timeout(LONG_TIMEOUT, client.closed())
        .await
        .expect("closed() resolves although the server still runs");
    assert!(client.is_closed(), "the connection is reported failed");
    let next = echo(&client, "again").await.unwrap_err();
    assert!(matches!(next, ClientError::NotSent { .. }), "{next}");
    client.close().await;
    assert!(wait_dead(pid, Duration::from_secs(10)));
}
