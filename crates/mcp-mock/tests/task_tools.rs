//! `mcp-mock --task-tools` over stdio, spoken to in raw JSON-RPC lines by a 2026-07-28
//! client: tools that run as tasks, polled with `tasks/get`, answered with `tasks/update`,
//! stopped with `tasks/cancel`. Every read has a timeout and the child is killed on drop.

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use mcp_testkit::line_channel;
use serde_json::{Value, json};

/// Bound on any single wait for output.
const TIMEOUT: Duration = Duration::from_secs(10);

/// How often a test polls a task (many times, each bounded: no timed assertion).
const POLLS: usize = 500;

struct Mock {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
    /// Notifications seen while waiting for answers.
    notifications: Vec<Value>,
}

impl Mock {
    fn start() -> Mock {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-mock"))
            .args(["--era", "2026-07-28", "--task-tools"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp-mock");
        let stdin = child.stdin.take();
        let lines = line_channel(child.stdout.take().expect("stdout is piped"));
        Mock {
            child,
            stdin,
            lines,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    /// Sends `method` with `params` (given the `_meta` of a client that declares the tasks
    /// extension, or none) and returns the answer.
    fn request(&mut self, method: &str, mut params: Value, tasks: bool) -> Value {
        let extensions = if tasks {
            json!({"io.modelcontextprotocol/tasks": {}})
        } else {
            json!({})
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "task-test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": extensions},
            "progressToken": "p",
        });
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write to the mock");
        stdin.flush().expect("flush");
        loop {
            let line = self
                .lines
                .recv_timeout(TIMEOUT)
                .expect("an answer from the mock in time");
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            self.notifications.push(message);
        }
    }

    /// `tasks/get` until `done` holds of the task (bounded), the task then.
    fn poll(&mut self, id: &Value, done: impl Fn(&Value) -> bool) -> Value {
        let mut task = Value::Null;
        for _ in 0..POLLS {
            task = self.request("tasks/get", json!({"taskId": id}), true)["result"].clone();
            if done(&task) {
                return task;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the task never got there: {task}");
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

#[test]
fn task_tools_run_as_tasks_report_progress_ask_and_cancel() {
    let mut mock = Mock::start();
    let discover = mock.request("server/discover", json!({}), true);
    assert_eq!(
        discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{discover}"
    );

    // A task that works in steps: its progress arrives, its result is inlined.
    let created = mock.request(
        "tools/call",
        call("task_sleep", json!({"ms": 300, "steps": 3})),
        true,
    )["result"]
        .clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert_eq!(created["pollIntervalMs"], 100);
    let id = created["taskId"].clone();
    let done = mock.poll(&id, |t| t["status"] == "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "slept 300 ms",
        "{done}"
    );
    assert_eq!(done["statusMessage"], "step 3 of 3", "{done}");
    let progress: Vec<&Value> = mock
        .notifications
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", mock.notifications);

    // A task that asks: the question is an input request, answered with tasks/update.
    let created = mock.request("tools/call", call("task_ask", json!({})), true)["result"].clone();
    let id = created["taskId"].clone();
    let asking = mock.poll(&id, |t| t["status"] == "input_required");
    assert_eq!(
        asking["inputRequests"]["name"]["method"], "elicitation/create",
        "{asking}"
    );
    let answer = json!({"taskId": id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}});
    let ack = mock.request("tasks/update", answer, true);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = mock.poll(&id, |t| t["status"] == "completed");
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"accept {"name":"Ada"}"#
    );

    // A long task, cancelled: it stays cancelled.
    let created = mock.request(
        "tools/call",
        call("task_sleep", json!({"ms": 600000})),
        true,
    )["result"]
        .clone();
    let id = created["taskId"].clone();
    let ack = mock.request("tasks/cancel", json!({"taskId": id}), true);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let task = mock.request("tasks/get", json!({"taskId": id}), true)["result"].clone();
    assert_eq!(task["status"], "cancelled", "{task}");
    assert!(task.get("result").is_none(), "{task}");
    let unknown = mock.request("tasks/get", json!({"taskId": "nope"}), true);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[test]
fn clients_without_the_extension_get_no_task() {
    let mut mock = Mock::start();
    let required = mock.request(
        "tools/call",
        call("task_required", json!({"text": "x"})),
        false,
    );
    assert_eq!(required["error"]["code"], -32021, "{required}");
    assert_eq!(
        required["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let get = mock.request("tasks/get", json!({"taskId": "x"}), false);
    assert_eq!(get["error"]["code"], -32021, "{get}");
    // A tool that may be a task answers at once.
    let sleep = mock.request(
        "tools/call",
        call("task_sleep", json!({"ms": 10, "steps": 1})),
        false,
    );
    assert_eq!(
        sleep["result"]["content"][0]["text"], "slept 10 ms",
        "{sleep}"
    );
    assert!(sleep["result"].get("taskId").is_none(), "{sleep}");
    let required = mock.request(
        "tools/call",
        call("task_required", json!({"text": "x"})),
        true,
    );
    assert_eq!(required["result"]["resultType"], "task", "{required}");
}
