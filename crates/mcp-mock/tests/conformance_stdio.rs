//! `mcp-mock --conformance` over stdio, spoken to in raw JSON-RPC lines: both eras on one
//! pipe (the conformance suite itself only drives HTTP, see the CLI's `conformance_server`
//! tests). Every read has a timeout and the child is killed on drop.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Bound on any single wait for output.
const TIMEOUT: Duration = Duration::from_secs(10);

struct Mock {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
}

impl Mock {
    fn start() -> Mock {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-mock"))
            .arg("--conformance")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp-mock");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Mock {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to the mock");
        stdin.flush().expect("flush");
    }

    fn next(&self) -> Value {
        self.lines
            .recv_timeout(TIMEOUT)
            .expect("the mock wrote nothing in time")
    }

    /// The next message with `id`, skipping others.
    fn answer(&self, id: i64) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            assert!(Instant::now() < deadline, "no answer to {id}");
            let message = self.next();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `params` with the `_meta` a 2026-07-28 request carries.
fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    params
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn stateless_requests_are_checked_and_input_required_calls_round_trip() {
    let mut mock = Mock::start();
    mock.send(request(1, "server/discover", modern(json!({}))));
    let discover = mock.answer(1);
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    assert_eq!(discover["result"]["resultType"], "complete");
    assert_eq!(discover["result"]["cacheScope"], "public");

    mock.send(request(2, "tools/list", json!({})));
    assert_eq!(mock.answer(2)["error"]["code"], -32602);
    mock.send(request(3, "ping", modern(json!({}))));
    assert_eq!(mock.answer(3)["error"]["code"], -32601);

    let call = json!({"name": "test_input_required_result_tampered_state", "arguments": {}});
    mock.send(request(4, "tools/call", modern(call.clone())));
    let first = mock.answer(4)["result"].clone();
    assert_eq!(first["resultType"], "input_required");
    let state = first["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    let mut retry = call.clone();
    retry["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    retry["requestState"] = json!(state);
    mock.send(request(5, "tools/call", modern(retry.clone())));
    assert_eq!(
        mock.answer(5)["result"]["content"][0]["text"],
        "integrity-ok: state verified"
    );
    retry["requestState"] = json!(format!("x{state}"));
    mock.send(request(6, "tools/call", modern(retry)));
    assert_eq!(mock.answer(6)["error"]["code"], -32602);

    // A listen subscription: acknowledged first, then only what it asked for, tagged.
    mock.send(request(
        7,
        "subscriptions/listen",
        modern(json!({"notifications": {"toolsListChanged": true}})),
    ));
    let ack = mock.next();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    let trigger = |name: &str| modern(json!({"name": name, "arguments": {}}));
    mock.send(request(
        8,
        "tools/call",
        trigger("test_trigger_prompt_change"),
    ));
    mock.send(request(
        9,
        "tools/call",
        trigger("test_trigger_tool_change"),
    ));
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(mock.next());
    }
    let changes: Vec<&Value> = seen.iter().filter(|m| m.get("method").is_some()).collect();
    assert_eq!(changes.len(), 1, "{seen:?}");
    assert_eq!(changes[0]["method"], "notifications/tools/list_changed");
    assert_eq!(
        changes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
}

#[test]
fn a_session_carries_requests_to_the_client_and_stdin_eof_ends_the_process() {
    let mut mock = Mock::start();
    mock.send(request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "test", "version": "1"},
        }),
    ));
    assert_eq!(mock.answer(1)["result"]["protocolVersion"], "2025-11-25");
    mock.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mock.send(request(
        2,
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "Say hi"}}),
    ));
    let ask = mock.next();
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_eq!(ask["params"]["messages"][0]["content"]["text"], "Say hi");
    mock.send(json!({
        "jsonrpc": "2.0",
        "id": ask["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
    }));
    assert_eq!(
        mock.answer(2)["result"]["content"][0]["text"],
        "LLM response: hi"
    );
    mock.send(request(3, "ping", json!({})));
    assert_eq!(mock.answer(3)["result"], json!({}));

    drop(mock.stdin.take());
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = mock.child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the mock outlived its stdin");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
}
