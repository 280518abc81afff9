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

impl Mock {
    /// Messages up to the answer with `id`: the answer, and everything else that came first.
    fn answer_and_others(&self, id: i64) -> (Value, Vec<Value>) {
        let mut others = Vec::new();
        loop {
            let message = self.next();
            if message["id"] == id && message.get("method").is_none() {
                return (message, others);
            }
            others.push(message);
        }
    }

    /// The next request from the server, skipping notifications.
    fn server_request(&self) -> Value {
        loop {
            let message = self.next();
            if message.get("method").is_some() && message.get("id").is_some() {
                return message;
            }
        }
    }
}

/// `params` of a 2026-07-28 request from a client that declares the tasks extension.
/// Clients of the session era send `_meta` too (rmcp sends `{}` with `initialize`, and a
/// progress token with a call): the session still opens and serves them.
#[test]
fn a_session_eras_meta_does_not_make_a_request_stateless() {
    let mut mock = Mock::start();
    let initialize = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
        "_meta": {},
    });
    mock.send(request(1, "initialize", initialize));
    assert_eq!(
        mock.answer(1)["result"]["protocolVersion"],
        "2025-11-25",
        "initialize with an empty _meta opens a session"
    );
    mock.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mock.send(request(
        2,
        "tools/list",
        json!({"_meta": {"progressToken": 7}}),
    ));
    let listed = mock.answer(2);
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{listed}"
    );
}

fn with_tasks(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
    });
    params
}

#[test]
fn session_tasks_ask_through_tasks_result_report_their_status_and_cancel() {
    let mut mock = Mock::start();
    mock.send(request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "test", "version": "1"},
        }),
    ));
    let init = mock.answer(1);
    assert_eq!(
        init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    mock.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mock.send(request(2, "tools/list", json!({})));
    let tools = mock.answer(2)["result"]["tools"].clone();
    let support = |name: &str| {
        tools
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .map(|t| t["execution"]["taskSupport"].clone())
    };
    assert_eq!(support("failing_job"), Some(json!("required")));
    assert_eq!(support("slow_compute"), Some(json!("optional")));
    assert_eq!(support("greet"), Some(Value::Null));

    // A tool that must be a task, called without one; a tool that cannot, called as one.
    mock.send(request(3, "tools/call", json!({"name": "failing_job"})));
    assert_eq!(mock.answer(3)["error"]["code"], -32601);
    let greet = json!({"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": 1000}});
    mock.send(request(4, "tools/call", greet));
    assert_eq!(mock.answer(4)["error"]["code"], -32601);

    // A task that asks the client: the question comes on the stream of tasks/result.
    let call =
        json!({"name": "confirm_delete", "arguments": {"filename": "f"}, "task": {"ttl": 60000}});
    mock.send(request(5, "tools/call", call));
    let task = mock.answer(5)["result"]["task"].clone();
    let id = task["taskId"].as_str().expect("a taskId").to_owned();
    assert_eq!(task["status"], "working");
    assert_eq!(task["pollInterval"], 100);
    assert!(task["ttl"].as_u64().is_some_and(|ttl| ttl > 0), "{task}");
    mock.send(request(6, "tasks/result", json!({"taskId": id})));
    let ask = mock.server_request();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    mock.send(json!({
        "jsonrpc": "2.0",
        "id": ask["id"],
        "result": {"action": "accept", "content": {"confirm": true}},
    }));
    let (result, others) = mock.answer_and_others(6);
    assert_eq!(result["result"]["content"][0]["text"], "Deleted f");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    assert!(
        others
            .iter()
            .any(|m| m["method"] == "notifications/tasks/status"
                && m["params"]["taskId"] == id
                && m["params"]["status"] == "completed"),
        "{others:?}"
    );
    mock.send(request(7, "tasks/list", json!({})));
    let listed = mock.answer(7)["result"]["tasks"].clone();
    assert_eq!(listed[0]["taskId"], id, "{listed}");
    assert_eq!(listed[0]["status"], "completed");

    // Cancelling: once, then never again; unknown tasks are invalid params.
    let slow = json!({"name": "slow_compute", "arguments": {"seconds": 60}, "task": {}});
    mock.send(request(8, "tools/call", slow));
    let slow_id = mock.answer(8)["result"]["task"]["taskId"].clone();
    mock.send(request(9, "tasks/cancel", json!({"taskId": slow_id})));
    assert_eq!(mock.answer(9)["result"]["status"], "cancelled");
    mock.send(request(10, "tasks/cancel", json!({"taskId": slow_id})));
    assert_eq!(mock.answer(10)["error"]["code"], -32602);
    mock.send(request(11, "tasks/get", json!({"taskId": "nope"})));
    assert_eq!(mock.answer(11)["error"]["code"], -32602);
}

#[test]
fn stateless_tasks_need_the_extension_and_take_answers_one_at_a_time() {
    let mut mock = Mock::start();
    mock.send(request(1, "tasks/get", modern(json!({"taskId": "x"}))));
    assert_eq!(mock.answer(1)["error"]["code"], -32021);
    mock.send(request(
        2,
        "tools/call",
        modern(json!({"name": "failing_job", "arguments": {}})),
    ));
    let refused = mock.answer(2)["error"].clone();
    assert_eq!(refused["code"], -32021);
    assert_eq!(
        refused["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    for (id, method) in [(3, "tasks/result"), (4, "tasks/list")] {
        mock.send(request(id, method, with_tasks(json!({"taskId": "x"}))));
        assert_eq!(mock.answer(id)["error"]["code"], -32601, "{method}");
    }

    mock.send(request(
        5,
        "tools/call",
        with_tasks(json!({"name": "multi_input", "arguments": {}})),
    ));
    let created = mock.answer(5)["result"].clone();
    assert_eq!(created["resultType"], "task");
    let id = created["taskId"].clone();
    let get = |mock: &mut Mock, n: i64| {
        mock.send(request(n, "tasks/get", with_tasks(json!({"taskId": id}))));
        mock.answer(n)["result"].clone()
    };
    let mut task = get(&mut mock, 6);
    for n in 7..100 {
        if task["status"] == "input_required" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        task = get(&mut mock, n);
    }
    assert_eq!(task["status"], "input_required", "{task}");
    let answer = json!({"action": "accept", "content": {"name": "Ada", "confirm": true}});
    mock.send(request(
        100,
        "tasks/update",
        with_tasks(json!({"taskId": id, "inputResponses": {"name": answer}})),
    ));
    assert_eq!(mock.answer(100)["result"]["resultType"], "complete");
    let task = get(&mut mock, 101);
    assert_eq!(task["status"], "input_required");
    assert_eq!(
        task["inputRequests"]
            .as_object()
            .map(|o| o.keys().collect::<Vec<_>>()),
        Some(vec![&"confirm".to_owned()])
    );
    mock.send(request(
        102,
        "tasks/update",
        with_tasks(json!({"taskId": id, "inputResponses": {"confirm": answer}})),
    ));
    mock.answer(102);
    let mut task = get(&mut mock, 103);
    for n in 104..200 {
        if task["status"] == "completed" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        task = get(&mut mock, n);
    }
    assert_eq!(
        task["result"]["content"][0]["text"], "Got name=Ada, confirm=true",
        "{task}"
    );
}

/// A hostile client that keeps creating tasks that never end: the server keeps a bounded
/// number and refuses the rest, rather than growing without limit.
#[test]
fn a_client_cannot_create_tasks_without_limit() {
    let mut mock = Mock::start();
    let call = with_tasks(json!({"name": "slow_compute", "arguments": {"seconds": 600}}));
    let mut refused = None;
    for id in 1..=400 {
        mock.send(request(id, "tools/call", call.clone()));
        let answer = mock.answer(id);
        if answer.get("error").is_some() {
            refused = Some((id, answer));
            break;
        }
        assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    }
    let (id, answer) = refused.expect("400 never-ending tasks were all accepted");
    assert_eq!(id, 257, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("too many tasks"), "{answer}");
}
