//! Tools run as tasks (mcp-runtime `client::tasks`) against real servers: the mock's
//! conformance mode in both eras (the 2026-07-28 extension over stdio, which the client
//! probes for; 2025-11-25 core tasks over streamable HTTP with sessions, reached by
//! remembering that era in the tool cache), a task that outlives the connection that started
//! it (HTTP); and a hostile
//! server (a shell script over real pipes) whose task never ends or lies about itself.

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{
    CallOptions, ClientError, ConnectOptions, ElicitationHandler, ElicitationResponse, Era,
    McpClient, TaskProblem, TaskProtocol, TaskStart, TaskStatus,
};
use mcp_runtime::config::ServerConfig;
use mcp_testkit::{HttpMock, args, mock, temp_dir};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Connect to `config`, in the 2025-11-25 era (`initialize`) when `legacy`, else as the
/// client chooses (2026-07-28 for the conformance mock). The directory holds the cache that
/// remembers the era.
async fn connect(config: &ServerConfig, legacy: bool) -> (McpClient, tempfile::TempDir) {
    let dir = temp_dir();
    let mut options = ConnectOptions::default().with_elicitation(Some(confirming()));
    if legacy {
        let cache = ToolCache::in_dir(dir.path());
        cache.put_era("tasks", config, Era::Legacy);
        options = options.with_cache(Some(Arc::new(cache)));
    }
    let client = McpClient::connect("tasks", config, &options).await.unwrap();
    let expected = if legacy { "2025-11-25" } else { "2026-07-28" };
    assert_eq!(client.info().protocol_version, expected);
    (client, dir)
}

/// Answers every question with yes (`confirm: true`) and the name `Ada`.
fn confirming() -> ElicitationHandler {
    Arc::new(|_request| {
        Box::pin(async move {
            let answer = json!({"confirm": true, "name": "Ada"});
            ElicitationResponse::accept(answer.as_object().cloned().unwrap_or_default())
        })
    })
}

/// The conformance mock for one era: over stdio for 2026-07-28, over streamable HTTP (with
/// sessions) for 2025-11-25. The HTTP mock runs until the returned guard is dropped.
fn conformance(legacy: bool) -> (ServerConfig, Option<HttpMock>) {
    if legacy {
        let server = HttpMock::http(&["--conformance"]);
        (server.config(None), Some(server))
    } else {
        (mock(&["--conformance"]), None)
    }
}

/// A call that could only hang past this is a failure, not a slow test.
const BOUND: Duration = Duration::from_secs(60);

async fn bounded<T>(work: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, work)
        .await
        .expect("bounded wait")
}

#[tokio::test]
async fn a_task_tool_called_as_usual_is_followed_to_its_result_in_both_eras() {
    for legacy in [false, true] {
        let (config, _server) = conformance(legacy);
        let (client, _dir) = connect(&config, legacy).await;
        let protocol = if legacy {
            TaskProtocol::Core
        } else {
            TaskProtocol::Extension
        };
        assert_eq!(client.task_protocol(), Some(protocol));
        client.list_tools().await.unwrap();
        // Must be a task: over 2025-11-25 the client makes it one, over 2026-07-28 the
        // server does because the client declares the extension.
        let (status, mut states) = tokio::sync::mpsc::channel(64);
        let options = CallOptions::default().with_task_status(status);
        let output = bounded(client.call_tool("failing_job", None, options))
            .await
            .unwrap();
        assert!(output.is_error, "{output:?}");
        let mut seen = Vec::new();
        while let Ok(state) = states.try_recv() {
            seen.push(state.status);
        }
        assert!(seen.contains(&TaskStatus::Working), "{seen:?}");
        assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn a_task_is_started_read_waited_for_and_its_result_fetched_in_both_eras() {
    for legacy in [false, true] {
        let (config, _server) = conformance(legacy);
        let (client, _dir) = connect(&config, legacy).await;
        let arguments = args(json!({"seconds": 0.3, "label": "sum"}));
        let started = client
            .start_tool_task("slow_compute", arguments, &CallOptions::default())
            .await
            .unwrap();
        let TaskStart::Started(state) = started else {
            panic!("no task: {started:?}");
        };
        assert_eq!(state.status, TaskStatus::Working);
        assert!(state.poll_interval.is_some());
        let now = client.get_task(&state.id).await.unwrap();
        assert_eq!(now.id, state.id);
        let output = bounded(client.wait_task(&state.id, CallOptions::default()))
            .await
            .unwrap();
        assert_eq!(output.text(), "Computed sum in 0.3s");
        let again = client.task_result(&state.id).await.unwrap();
        assert_eq!(again.text(), output.text());
        client.close().await;
    }
}

#[tokio::test]
async fn a_cancelled_task_ends_cancelled_and_its_wait_says_so() {
    for legacy in [false, true] {
        let (config, _server) = conformance(legacy);
        let (client, _dir) = connect(&config, legacy).await;
        let arguments = args(json!({"seconds": 300, "label": "long"}));
        let TaskStart::Started(state) = client
            .start_tool_task("slow_compute", arguments, &CallOptions::default())
            .await
            .unwrap()
        else {
            panic!("no task");
        };
        client.cancel_task(&state.id).await.unwrap();
        let error = bounded(client.wait_task(&state.id, CallOptions::default()))
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                ClientError::Task {
                    problem: TaskProblem::Cancelled,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            client.get_task(&state.id).await.unwrap().status,
            TaskStatus::Cancelled
        );
        client.close().await;
    }
}

#[tokio::test]
async fn cancelling_the_wait_cancels_the_task_on_the_server() {
    for legacy in [false, true] {
        let (config, _server) = conformance(legacy);
        let (client, _dir) = connect(&config, legacy).await;
        let arguments = args(json!({"seconds": 300, "label": "long"}));
        let TaskStart::Started(state) = client
            .start_tool_task("slow_compute", arguments, &CallOptions::default())
            .await
            .unwrap()
        else {
            panic!("no task");
        };
        let cancel = CancellationToken::new();
        let options = CallOptions::default().with_cancel(cancel.clone());
        let waiting = client.wait_task(&state.id, options);
        let trigger = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        };
        let (error, ()) = bounded(async { tokio::join!(waiting, trigger) }).await;
        assert!(
            matches!(error, Err(ClientError::Cancelled { .. })),
            "{error:?}"
        );
        assert_eq!(
            client.get_task(&state.id).await.unwrap().status,
            TaskStatus::Cancelled
        );
        client.close().await;
    }
}

#[tokio::test]
async fn a_failed_task_is_the_servers_json_rpc_error() {
    for legacy in [false, true] {
        let (config, _server) = conformance(legacy);
        let (client, _dir) = connect(&config, legacy).await;
        let error =
            bounded(client.call_tool_as_task("protocol_error_job", None, CallOptions::default()))
                .await
                .unwrap_err();
        assert!(
            matches!(&error, ClientError::Rpc { message, .. } if message.contains("on purpose")),
            "{error}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn a_task_that_asks_is_answered_by_the_hosts_handler_in_both_eras() {
    for legacy in [false, true] {
        let (config, _server) = conformance(legacy);
        let (client, _dir) = connect(&config, legacy).await;
        let arguments = args(json!({"filename": "notes.txt"}));
        let output =
            bounded(client.call_tool_as_task("confirm_delete", arguments, CallOptions::default()))
                .await
                .unwrap();
        assert_eq!(output.text(), "Deleted notes.txt");
        client.close().await;
    }
}

#[tokio::test]
async fn tasks_are_listed_in_2025_11_25_and_the_extension_says_it_has_no_list() {
    let (config, _server) = conformance(true);
    let (client, _dir) = connect(&config, true).await;
    let arguments = args(json!({"seconds": 0.1, "label": "x"}));
    let TaskStart::Started(state) = client
        .start_tool_task("slow_compute", arguments, &CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("no task");
    };
    let page = client.list_tasks(None).await.unwrap();
    assert!(page.tasks.iter().any(|t| t.id == state.id), "{page:?}");
    client.close().await;

    let (client, _dir) = connect(&conformance(false).0, false).await;
    let error = client.list_tasks(None).await.unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Task {
                problem: TaskProblem::Unsupported(_),
                ..
            }
        ),
        "{error}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_task_outlives_its_connection_and_is_taken_up_by_id() {
    let server = HttpMock::http(&["--conformance"]);
    let config = server.config(None);
    let (first, _dir) = connect(&config, false).await;
    let arguments = args(json!({"seconds": 0.5, "label": "later"}));
    let TaskStart::Started(state) = first
        .start_tool_task("slow_compute", arguments, &CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("no task");
    };
    first.close().await;
    let (second, _dir) = connect(&config, false).await;
    let output = bounded(second.wait_task(&state.id, CallOptions::default()))
        .await
        .unwrap();
    assert_eq!(output.text(), "Computed later in 0.5s");
    second.close().await;
}

#[tokio::test]
async fn bad_task_ids_are_refused_before_anything_is_sent() {
    let (client, _dir) = connect(&conformance(false).0, false).await;
    let long = "x".repeat(10_000);
    for bad in ["", "a\nb", long.as_str()] {
        let error = client.get_task(bad).await.unwrap_err();
        assert!(
            matches!(
                &error,
                ClientError::Task {
                    problem: TaskProblem::InvalidId(_),
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().len() < 300, "{error}");
    }
    // An id the server does not know is its error, typed.
    let error = client.get_task("no-such-task").await.unwrap_err();
    assert!(matches!(error, ClientError::Rpc { .. }), "{error}");
    client.close().await;
}

/// A 2025-11-25 server in a shell script: `initialize` answered, every `tools/call` answered
/// with `$CREATED`, every `tasks/get` with `$STATE`; each `tasks/get` and `tasks/cancel` is
/// written to `$LOG`.
const HOSTILE: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      out='{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}' ;;
    *'"method":"tools/call"'*) out="$CREATED" ;;
    *'"method":"tasks/get"'*) echo get >> "$LOG"; out="$STATE" ;;
    *'"method":"tasks/cancel"'*) echo cancel >> "$LOG"; out='{}' ;;
    *) out='{}' ;;
  esac
  [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$out"
done
"#;

/// The hostile server with its answers (JSON, which holds no `'`), and the file its log
/// goes to.
fn hostile(created: &str, state: &str, log: &std::path::Path) -> ServerConfig {
    let script = format!(
        "CREATED='{created}'\nSTATE='{state}'\nLOG='{}'\n{HOSTILE}",
        log.display()
    );
    ServerConfig::stdio("sh", ["-c".to_owned(), script])
}

#[tokio::test]
async fn an_endless_task_with_a_huge_poll_interval_ends_at_the_calls_timeout_and_is_cancelled() {
    let dir = temp_dir();
    let log = dir.path().join("log");
    let forever = r#"{"taskId":"t1","status":"working","pollInterval":999999999999}"#;
    let config = hostile(&format!(r#"{{"task":{forever}}}"#), forever, &log);
    let (client, _cache) = connect(&config, true).await;
    // Past MAX_POLL_INTERVAL (5 s), so that the capped interval polls at least once.
    let options = CallOptions::default().with_timeout(Duration::from_secs(7));
    let error = bounded(client.call_tool_as_task("job", None, options))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error}");
    let asked = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(asked.lines().any(|l| l == "get"), "never polled: {asked:?}");
    assert!(
        asked.lines().any(|l| l == "cancel"),
        "not cancelled: {asked:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_server_lying_about_its_task_gets_a_typed_error() {
    let dir = temp_dir();
    let log = dir.path().join("log");
    let cases = [
        // An unknown status in the task it creates.
        (r#"{"task":{"taskId":"t1","status":"exploded"}}"#, "{}"),
        // An id that is no string.
        (r#"{"task":{"taskId":7,"status":"working"}}"#, "{}"),
        // A poll answered about another task.
        (
            r#"{"task":{"taskId":"t1","status":"working","pollInterval":1}}"#,
            r#"{"taskId":"t2","status":"completed"}"#,
        ),
    ];
    for (created, state) in cases {
        let (client, _cache) = connect(&hostile(created, state, &log), true).await;
        let options = CallOptions::default().with_timeout(Duration::from_secs(20));
        let error = bounded(client.call_tool_as_task("job", None, options))
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                ClientError::Task {
                    problem: TaskProblem::InvalidState(_),
                    ..
                }
            ),
            "{created}: {error}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn tasks_served_by_rmcps_task_support_are_followed_with_status_and_progress() {
    let config = mock(&["--task-tools", "--era", "2026-07-28"]);
    let (client, _dir) = connect(&config, false).await;
    assert_eq!(client.task_protocol(), Some(TaskProtocol::Extension));
    let (status, mut states) = tokio::sync::mpsc::channel(64);
    let options = CallOptions::default().with_task_status(status);
    let arguments = args(json!({"ms": 400, "steps": 4}));
    let output = bounded(client.call_tool("task_sleep", arguments, options))
        .await
        .unwrap();
    assert_eq!(output.text(), "slept 400 ms");
    let mut messages = Vec::new();
    while let Ok(state) = states.try_recv() {
        messages.extend(state.status_message);
    }
    assert!(
        messages.iter().any(|m| m.starts_with("step ")),
        "{messages:?}"
    );
    // Must be a task: the client declares the extension, so the server makes one.
    let output = bounded(client.call_tool(
        "task_required",
        args(json!({"text": "done"})),
        CallOptions::default(),
    ))
    .await
    .unwrap();
    assert_eq!(output.text(), "done");
    // A task that asks: the host's handler answers through `tasks/update`.
    let output = bounded(client.call_tool("task_ask", None, CallOptions::default()))
        .await
        .unwrap();
    assert!(output.text().starts_with("accept"), "{}", output.text());
    client.close().await;
}
