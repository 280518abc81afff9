//! Remote servers: the client (`mcp-runtime`) over streamable HTTP and legacy HTTP+SSE, against
//! `mcp-mock --http/--sse` and its HTTP fault knobs, and against real peers written by others
//! (server-everything in both HTTP modes, a Python FastMCP server). Loopback only; every test
//! is bounded in time.

mod direct;
mod peers;
#[path = "../support/mod.rs"]
mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::client::{
    CallOptions, ClientError, ClientEvent, ConnectOptions, ElicitationResponse, McpClient,
};
use mcp_runtime::config::ServerConfig;
use serde_json::{Value, json};
use support::{ChildGuard, HttpMock, args, remote, temp_dir};

/// Upper bound of any one test.
const TEST_BOUND: Duration = Duration::from_secs(90);

async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(TEST_BOUND, test)
        .await
        .expect("test timed out")
}

async fn connect(config: &ServerConfig) -> Result<McpClient, ClientError> {
    McpClient::connect("remote", config, &ConnectOptions::default()).await
}

/// The JSON lines of a `--record` file.
fn recorded(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Recorded POSTs whose JSON-RPC method is `method`.
fn posts<'a>(lines: &'a [Value], method: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["http"] == "POST" && l["body"]["method"] == method)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Against `mcp-mock`

#[tokio::test]
async fn streamable_http_lists_calls_and_closes_the_session() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = HttpMock::http(&["--record", record.to_str().unwrap()]);
        let client = connect(&mock.config(Some("http"))).await.unwrap();
        assert_eq!(client.transport(), "http");
        assert_eq!(client.info().protocol_version, "2025-11-25");
        assert_eq!(client.pid(), None);

        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
        let out = client
            .call_tool("add", args(json!({"a": 2, "b": 3})), CallOptions::default())
            .await
            .unwrap();
        assert_eq!(out.structured_content, Some(json!({"sum": 5})));
        client.ping().await.unwrap();
        client.close().await;
        assert!(client.is_closed());

        let lines = recorded(&record);
        let session = posts(&lines, "tools/list")[0]["session"].clone();
        assert!(session.is_string(), "requests carry the session id");
        assert!(
            lines
                .iter()
                .any(|l| l["http"] == "DELETE" && l["session"] == session),
            "close ends the session with DELETE: {lines:#?}"
        );
        assert!(
            lines.iter().any(|l| l["http"] == "GET"),
            "the client opens the GET listener"
        );
    })
    .await;
}

#[tokio::test]
async fn progress_and_server_requests_work_over_streamable_http() {
    bounded(async {
        let mock = HttpMock::http(&[]);
        let root = temp_dir();
        let (events, mut notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
        let options = ConnectOptions::default()
            .with_roots(vec![root.path().to_owned()])
            .with_events(Some(events));
        let client = McpClient::connect("remote", &mock.config(None), &options)
            .await
            .unwrap();
        let out = client
            .call_tool(
                "progress",
                args(json!({"steps": 3, "interval_ms": 10})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "done");
        let mut progress = Vec::new();
        while let Ok(event) = notices.try_recv() {
            if let ClientEvent::Progress { progress: p, .. } = event {
                progress.push(p);
            }
        }
        assert_eq!(progress, vec![1.0, 2.0, 3.0]);

        // `roots` makes the server ask us (`roots/list`) in the middle of the call.
        let out = client
            .call_tool("roots", None, CallOptions::default())
            .await
            .unwrap();
        let expected = format!("file://{}", root.path().display());
        assert!(out.text().contains(&expected), "{}", out.text());
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn json_responses_without_a_session_work() {
    bounded(async {
        let mock = HttpMock::http(&["--json-response"]);
        let client = connect(&mock.config(None)).await.unwrap();
        assert_eq!(client.transport(), "http");
        let out = client
            .call_tool(
                "echo",
                args(json!({"text": "plain"})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "plain");
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn legacy_sse_lists_and_calls() {
    bounded(async {
        let mock = HttpMock::sse(&[]);
        let client = connect(&mock.config(Some("sse"))).await.unwrap();
        assert_eq!(client.transport(), "sse");
        assert!(client.list_tools().await.unwrap().len() >= 10);
        let out = client
            .call_tool("echo", args(json!({"text": "old"})), CallOptions::default())
            .await
            .unwrap();
        assert_eq!(out.text(), "old");
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_url_without_type_falls_back_to_legacy_sse_on_a_4xx() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = HttpMock::sse(&["--record", record.to_str().unwrap()]);
        let client = connect(&mock.config(None)).await.unwrap();
        assert_eq!(client.transport(), "sse");
        let out = client
            .call_tool(
                "echo",
                args(json!({"text": "fallback"})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "fallback");
        client.close().await;
        // First the streamable HTTP POSTs to the URL (`server/discover`, then `initialize`),
        // then the legacy GET.
        let lines = recorded(&record);
        assert_eq!(lines[0]["http"], "POST");
        assert_eq!(lines[0]["body"]["method"], "server/discover");
        assert_eq!(lines[1]["http"], "POST");
        assert_eq!(lines[1]["body"]["method"], "initialize");
        assert_eq!(lines[2]["http"], "GET");
    })
    .await;
}

#[tokio::test]
async fn forced_protocol_versions_are_checked_over_http() {
    bounded(async {
        let mock = HttpMock::http(&["--protocol-version", "1999-01-01"]);
        let err = connect(&mock.config(None)).await.unwrap_err();
        assert!(
            matches!(err, ClientError::UnsupportedProtocol { ref version, .. } if version == "1999-01-01"),
            "{err}"
        );
        let legacy = HttpMock::sse(&["--protocol-version", "2024-11-05"]);
        let client = connect(&legacy.config(Some("sse"))).await.unwrap();
        assert_eq!(client.info().protocol_version, "2024-11-05");
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn configured_headers_are_sent_and_401_is_explained() {
    bounded(async {
        for mock in [
            HttpMock::http(&["--require-token", "s3cret"]),
            HttpMock::sse(&["--require-token", "s3cret"]),
        ] {
            let kind = if mock.url.ends_with("/sse") {
                "sse"
            } else {
                "http"
            };
            let err = connect(&mock.config(Some(kind))).await.unwrap_err();
            let ClientError::AuthRequired {
                status,
                www_authenticate,
                ..
            } = &err
            else {
                panic!("{kind}: expected AuthRequired, got {err}");
            };
            assert_eq!(*status, 401);
            assert!(
                www_authenticate
                    .as_deref()
                    .is_some_and(|c| c.contains("realm=\"mcpr-mock\"")),
                "{err}"
            );
            assert!(err.to_string().contains("WWW-Authenticate"), "{err}");
            // A bare challenge (no OAuth resource metadata) may want a static token.
            assert!(
                err.to_string().contains("set an `Authorization` header"),
                "{err}"
            );

            let mut config = mock.config(Some(kind));
            if let mcp_runtime::config::Transport::Http(http) = &mut config.transport {
                http.headers
                    .insert("Authorization".into(), "Bearer s3cret".into());
            }
            let client = connect(&config).await.unwrap();
            let out = client
                .call_tool(
                    "echo",
                    args(json!({"text": "authorized"})),
                    CallOptions::default(),
                )
                .await
                .unwrap();
            assert_eq!(out.text(), "authorized");
            client.close().await;
        }
    })
    .await;
}

#[tokio::test]
async fn connection_refused_and_tls_failures_say_so() {
    bounded(async {
        let port = support::free_port();
        let err = connect(&remote(&format!("http://127.0.0.1:{port}/mcp"), None))
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Unreachable { .. }), "{err}");
        assert!(err.to_string().contains("Connection refused"), "{err}");
        assert!(err.never_reached_server());

        // TLS to a plain-HTTP server: the handshake fails, and the error says TLS.
        let mock = HttpMock::http(&[]);
        let https = mock.url.replace("http://", "https://");
        let err = connect(&remote(&https, None)).await.unwrap_err();
        assert!(matches!(err, ClientError::Tls { .. }), "{err}");
    })
    .await;
}

#[tokio::test]
async fn http_errors_carry_the_status_and_a_body_excerpt_and_are_not_retried() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = HttpMock::http(&["--http-500", "1", "--record", record.to_str().unwrap()]);
        let client = connect(&mock.config(None)).await.unwrap();
        let err = client
            .call_tool(
                "echo",
                args(json!({"text": "first"})),
                CallOptions::default(),
            )
            .await
            .unwrap_err();
        let ClientError::HttpStatus { status, body, .. } = &err else {
            panic!("expected HttpStatus, got {err}");
        };
        assert_eq!(*status, 500);
        assert!(body.contains("injected failure"), "{body}");
        assert!(
            err.to_string()
                .contains("HTTP 500 Internal Server Error from http://127.0.0.1:"),
            "{err}"
        );
        // The connection is still good, and the failed call was sent once.
        let out = client
            .call_tool(
                "echo",
                args(json!({"text": "second"})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "second");
        client.close().await;
        let lines = recorded(&record);
        let first: Vec<_> = posts(&lines, "tools/call")
            .into_iter()
            .filter(|l| l["body"]["params"]["arguments"]["text"] == "first")
            .collect();
        assert_eq!(first.len(), 1, "{lines:#?}");

        // A wrong path: the status and what the server said.
        let wrong = mock.url.replace("/mcp", "/nope");
        let err = connect(&remote(&wrong, Some("http"))).await.unwrap_err();
        assert!(
            matches!(err, ClientError::HttpStatus { status: 404, .. }),
            "{err}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_dropped_stream_is_resumed_without_losing_or_duplicating_a_result() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = HttpMock::http(&[
            "--drop-stream",
            "8",
            "--sse-retry",
            "50",
            "--record",
            record.to_str().unwrap(),
        ]);
        let client = Arc::new(connect(&mock.config(None)).await.unwrap());
        // Eight calls at once, each stream cut before its result.
        let calls = (0..8).map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let text = format!("call-{i}");
                let out = client
                    .call_tool("echo", args(json!({"text": text})), CallOptions::default())
                    .await
                    .unwrap();
                assert_eq!(out.text(), text, "each call gets its own result");
            })
        });
        for call in futures::future::join_all(calls).await {
            call.unwrap();
        }
        // Nothing stray arrives later: the next call gets exactly its own answer.
        let out = client
            .call_tool(
                "echo",
                args(json!({"text": "after"})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "after");
        client.close().await;

        let lines = recorded(&record);
        assert_eq!(
            posts(&lines, "tools/call").len(),
            9,
            "no call was sent twice"
        );
        let resumes = lines
            .iter()
            .filter(|l| l["http"] == "GET" && l["lastEventId"].is_string())
            .count();
        assert!(resumes >= 8, "each cut stream was resumed: {resumes}");
    })
    .await;
}

#[tokio::test]
async fn no_request_body_is_replayed_after_a_failed_resume() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = HttpMock::http(&[
            "--drop-stream",
            "1",
            "--fail-resume",
            "--sse-retry",
            "50",
            "--record",
            record.to_str().unwrap(),
        ]);
        let client = connect(&mock.config(None)).await.unwrap();
        let options = CallOptions::default().with_timeout(Duration::from_secs(5));
        let err = client
            .call_tool("echo", args(json!({"text": "lost"})), options)
            .await
            .unwrap_err();
        eprintln!("failed call: {err}");
        let out = client
            .call_tool(
                "echo",
                args(json!({"text": "next"})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "next");
        client.close().await;

        let lines = recorded(&record);
        let lost = posts(&lines, "tools/call")
            .into_iter()
            .filter(|l| l["body"]["params"]["arguments"]["text"] == "lost")
            .count();
        assert_eq!(lost, 1, "the call may have run: it must not be sent again");
        assert!(
            lines
                .iter()
                .any(|l| l["http"] == "GET" && l["lastEventId"].is_string()),
            "a resumption was attempted"
        );
    })
    .await;
}

#[tokio::test]
async fn an_expired_session_is_reinitialised_once() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = HttpMock::http(&[
            "--expire-session-after",
            "3",
            "--record",
            record.to_str().unwrap(),
        ]);
        let client = connect(&mock.config(None)).await.unwrap();
        client.list_tools().await.unwrap();
        for i in 0..4 {
            let text = format!("call-{i}");
            let out = client
                .call_tool("echo", args(json!({"text": text})), CallOptions::default())
                .await
                .unwrap();
            assert_eq!(out.text(), text);
        }
        client.close().await;
        let lines = recorded(&record);
        assert_eq!(
            posts(&lines, "initialize").len(),
            2,
            "one new session after the 404"
        );

        // A server whose every new session is already expired: one re-initialisation, then
        // the error, not an endless loop.
        let record = dir.path().join("record-0.jsonl");
        let mock = HttpMock::http(&[
            "--expire-session-after",
            "0",
            "--record",
            record.to_str().unwrap(),
        ]);
        let client = connect(&mock.config(None)).await.unwrap();
        let err = client.list_tools().await.unwrap_err();
        eprintln!("expired twice: {err}");
        client.close().await;
        let lines = recorded(&record);
        assert_eq!(posts(&lines, "initialize").len(), 2, "{lines:#?}");
    })
    .await;
}

/// Calls still running when their session expires keep their answers: the new session is
/// opened only once they have arrived, and only the calls the server refused with 404 are
/// sent again.
#[tokio::test]
async fn calls_running_when_the_session_expires_keep_their_answers() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        // Four calls on the first session; on the second, the ping that has rmcp's worker open
        // it (the direct road's calls found the first gone) and the two calls sent again.
        let mock = HttpMock::http(&[
            "--expire-session-after",
            "4",
            "--call-delay",
            "300",
            "--record",
            record.to_str().unwrap(),
        ]);
        let client = connect(&mock.config(None)).await.unwrap();
        // Four calls are taken by the session; the next two find it expired while the first
        // four still run.
        let calls = (0..6).map(|i| {
            let client = &client;
            async move {
                let text = format!("call-{i}");
                let out = client
                    .call_tool("echo", args(json!({"text": text})), CallOptions::default())
                    .await;
                (text, out)
            }
        });
        for (text, out) in futures::future::join_all(calls).await {
            match out {
                Ok(out) => assert_eq!(out.text(), text),
                Err(e) => panic!("{text} failed: {e}"),
            }
        }
        client.close().await;
        let lines = recorded(&record);
        assert_eq!(posts(&lines, "initialize").len(), 2, "one new session");
        let calls = posts(&lines, "tools/call");
        assert_eq!(calls.len(), 8, "only the two refused calls are sent again");
        assert!(
            posts(&lines, "ping").len() <= 1,
            "one ping opened the session"
        );
    })
    .await;
}

#[tokio::test]
async fn slow_sse_is_waited_for_within_the_call_timeout() {
    bounded(async {
        let mock = HttpMock::http(&["--sse-delay", "300"]);
        let client = connect(&mock.config(None)).await.unwrap();
        let out = client
            .call_tool(
                "echo",
                args(json!({"text": "slow"})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "slow");
        let options = CallOptions::default().with_timeout(Duration::from_millis(100));
        let err = client
            .call_tool("echo", args(json!({"text": "late"})), options)
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_server_that_dies_fails_calls_with_a_clear_error() {
    bounded(async {
        let mock = HttpMock::http(&["--crash-after", "0"]);
        let client = connect(&mock.config(None)).await.unwrap();
        let err = client
            .call_tool(
                "echo",
                args(json!({"text": "boom"})),
                CallOptions::default(),
            )
            .await
            .unwrap_err();
        eprintln!("crashed: {err}");
        assert!(
            matches!(
                err,
                ClientError::Transport { .. }
                    | ClientError::Unreachable { .. }
                    | ClientError::Exited { .. }
            ),
            "{err}"
        );
        // The next call cannot reach it either.
        let err = client.ping().await.unwrap_err();
        assert!(err.is_connection_lost(), "{err}");
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_response_over_the_size_limit_fails_the_call_without_refetching_it() {
    bounded(async {
        let mock = HttpMock::http(&[]);
        let client = connect(&mock.config(None)).await.unwrap();
        let started = std::time::Instant::now();
        let err = client
            .call_tool(
                "huge",
                args(json!({"bytes": 40_000_000})),
                CallOptions::default(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ClientError::Protocol { message, .. } if message.contains("larger than")),
            "{err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "failed after {:?}, not at the call timeout",
            started.elapsed()
        );
        // Below the limit (32 MiB) is fine.
        let out = client
            .call_tool(
                "huge",
                args(json!({"bytes": 1_000_000})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text().len(), 1_000_000);
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn the_http_mock_stops_on_sigterm_even_with_open_streams() {
    bounded(async {
        for mut mock in [HttpMock::http(&[]), HttpMock::sse(&[])] {
            let client = connect(&mock.config(None)).await.unwrap();
            client.list_tools().await.unwrap();
            // The client still holds its event stream open.
            let status =
                tokio::task::spawn_blocking(move || mock.terminate(Duration::from_secs(5)))
                    .await
                    .unwrap();
            assert!(status.is_some_and(|s| s.success()), "{status:?}");
            client.close().await;
        }
    })
    .await;
}
