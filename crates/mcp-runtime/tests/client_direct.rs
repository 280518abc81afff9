//! The direct request path of a stdio connection (requests written by the caller, answers
//! handed over by the read loop) against real servers over real pipes: a call given up on
//! still tells the server, a server that dies fails every call in flight, and hostile answers
//! (wrong id types, unknown and huge ids, duplicates) neither panic nor hang the client.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::client::{CallOptions, ClientError, ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use serde_json::{Value, json};
use support::{args, mock, recorded, temp_dir};

/// Far longer than any of these tests takes: reaching it means the client hung.
const HANG: Duration = Duration::from_secs(60);

async fn connect(config: &ServerConfig) -> McpClient {
    McpClient::connect("mock", config, &ConnectOptions::default())
        .await
        .unwrap()
}

/// A stdio config that runs the Python server `script` (written into `dir`) with python3,
/// given 20 s to start and `timeout_ms` for each request.
fn python_server(dir: &tempfile::TempDir, script: &str, timeout_ms: u64) -> ServerConfig {
    let path = dir.path().join("server.py");
    std::fs::write(&path, script).unwrap();
    let mut config = ServerConfig::stdio("python3", [path.to_string_lossy().into_owned()]);
    config.startup_timeout_ms = Some(20_000);
    config.timeout_ms = Some(timeout_ms);
    config
}

/// Wait (bounded by [`HANG`]) until the record holds a line that mentions `needle`.
async fn wait_recorded(path: &std::path::Path, needle: &str) -> Vec<Value> {
    tokio::time::timeout(HANG, async {
        loop {
            let found = recorded(path, needle);
            if !found.is_empty() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("`{needle}` never reached the server"))
}

#[tokio::test]
async fn dropping_a_call_sends_notifications_cancelled_with_its_id() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let client = Arc::new(connect(&mock(&["--record", &record.to_string_lossy()])).await);
    let call = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool("sleep", args(json!({"ms": 10_000})), CallOptions::default())
                .await
        })
    };
    let sent = wait_recorded(&record, "\"sleep\"").await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let cancels = wait_recorded(&record, "notifications/cancelled").await;
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    assert_eq!(cancels[0]["params"]["requestId"], sent[0]["id"]);
    // The connection goes on.
    client.ping().await.unwrap();
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
}

#[tokio::test]
async fn a_server_dying_with_ten_calls_in_flight_fails_every_one() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let mut config = mock(&["--record", &record.to_string_lossy()]);
    // Far longer than the test may take: only the connection's end can end the calls.
    config.tool_timeout_ms = Some(120_000);
    let client = Arc::new(connect(&config).await);
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .call_tool(
                        "sleep",
                        args(json!({"ms": 100_000})),
                        CallOptions::default(),
                    )
                    .await
            })
        })
        .collect();
    tokio::time::timeout(HANG, async {
        while recorded(&record, "\"sleep\"").len() < 10 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the ten calls reached the server");
    let pid = client.pid().unwrap();
    // SAFETY: kill(2) with a pid we own; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    for call in calls {
        let error = tokio::time::timeout(HANG, call)
            .await
            .expect("a call hung after the server died")
            .unwrap()
            .unwrap_err();
        assert!(error.is_connection_lost(), "{error}");
        assert!(matches!(error, ClientError::Exited { .. }), "{error}");
    }
    // A call after the end is refused at once.
    let error = tokio::time::timeout(
        HANG,
        client.call_tool("echo", args(json!({"text": "x"})), CallOptions::default()),
    )
    .await
    .expect("a call after the end hung")
    .unwrap_err();
    assert!(error.is_connection_lost(), "{error}");
    client.close().await;
}

/// A server that answers every `tools/call` with hostile answers before the right one (and
/// the right one twice): ids of the wrong type, unknown ids in the client's range, ids too
/// big for any integer, negative ids, and a late error for the same id.
const HOSTILE: &str = r#"
import json, sys
out = sys.stdout.buffer
def send(text):
    out.write(text.encode() + b"\n")
    out.flush()
def answer(id, result):
    send(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}))
def text(t):
    return {"content": [{"type": "text", "text": t}]}
for raw in sys.stdin.buffer:
    try:
        msg = json.loads(raw)
    except Exception:
        continue
    if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
        continue
    m, id = msg["method"], msg["id"]
    if m == "initialize":
        answer(id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "0"}})
    elif m == "ping":
        answer(id, {})
    elif m == "tools/call":
        answer(str(id), text("wrong id type"))
        answer(id + 7, text("unknown id"))
        answer([id], text("array id"))
        answer(None, text("null id"))
        send('{"jsonrpc":"2.0","id":1e400,"result":{}}')
        send('{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}')
        send('{"jsonrpc":"2.0","id":99999999999999999999999999999999,"result":{}}')
        answer(-id, text("negative id"))
        send('{"jsonrpc":"2.0","id":%d,"result":{},"result":{}}' % id)
        send('{"jsonrpc":"2.0","result":%s,"id":%d}' % (json.dumps(text(msg["params"]["arguments"]["text"])), id))
        answer(id, text("duplicate"))
        send(json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": 1, "message": "late"}}))
    else:
        send(json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}))
"#;

#[tokio::test]
async fn hostile_answers_neither_panic_nor_hang_and_the_right_one_wins() {
    let dir = temp_dir();
    let config = python_server(&dir, HOSTILE, 20_000);
    tokio::time::timeout(HANG, async {
        let client = connect(&config).await;
        for text in ["first", "second", "third"] {
            let out = client
                .call_tool("t", args(json!({"text": text})), CallOptions::default())
                .await
                .unwrap();
            assert_eq!(out.text(), text, "the answer to this call, once");
        }
        client.ping().await.unwrap();
        client.close().await;
    })
    .await
    .expect("the client hung on hostile answers");
}

/// A server whose `tools/call` answers with the result text the call passes as `raw`, written
/// on as it is: the test decides every byte of the answer's `result`.
const ECHO_RAW: &str = include_str!("fixtures/echo_raw.py");

#[tokio::test]
async fn hostile_tool_results_get_a_clear_error_at_once() {
    let dir = temp_dir();
    // Far longer than the test: an answer the client cannot read must not wait for it.
    let config = python_server(&dir, ECHO_RAW, HANG.as_millis() as u64 * 2);
    tokio::time::timeout(HANG, async {
        let client = connect(&config).await;
        let call = |raw: String| {
            let client = &client;
            async move {
                client
                    .call_tool("t", args(json!({ "raw": raw })), CallOptions::default())
                    .await
            }
        };
        let deep = format!("{}1{}", "[".repeat(50_000), "]".repeat(50_000));
        for (raw, says) in [
            (r#"{"content":null}"#.to_owned(), "expected a sequence"),
            (r#"{"content":[{"type":"text","text":"a"},7]}"#.to_owned(), "invalid result"),
            (r#"{"isError":"yes"}"#.to_owned(), "expected a boolean"),
            (r#"{"content":[],"x":1e400}"#.to_owned(), "number out of range"),
            (format!(r#"{{"structuredContent":{deep}}}"#), "recursion limit"),
            ("[1,2]".to_owned(), ""),
            ("\"text\"".to_owned(), ""),
        ] {
            let error = call(raw.clone()).await.unwrap_err();
            assert!(
                matches!(error, ClientError::Protocol { .. }),
                "{}: {error}",
                &raw[..raw.len().min(60)]
            );
            assert!(error.to_string().contains(says), "{error}");
        }
        // Odd but valid results are read whole; the connection still works after all the
        // above.
        let big = "é".repeat(1 << 20);
        let output = call(json!({"content": [{"type": "text", "text": big}]}).to_string())
            .await
            .unwrap();
        assert_eq!(output.text(), big);
        let odd = r#"{"content":[{"type":"text","text":"a","text":"b"},{"a":1,"type":7}],"isError":true,"isError":false,"k":{"z":1}}"#;
        let output = call(odd.to_owned()).await.unwrap();
        assert_eq!(output.text(), "b", "the last of a field twice");
        assert!(!output.is_error);
        assert_eq!(
            serde_json::to_value(&output).unwrap(),
            json!({"content": [{"type": "text", "text": "b"}, {"a": 1, "type": 7}],
                   "isError": false, "k": {"z": 1}})
        );
        client.ping().await.unwrap();
        client.close().await;
    })
    .await
    .expect("the client hung on a hostile result");
}
