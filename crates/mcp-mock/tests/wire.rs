//! Wire-level tests of `mcp-mock`: the real binary, spoken to in raw JSON-RPC lines over its
//! stdin/stdout, with no MCP client library in between. This checks the wire independently of
//! rmcp (which the mock is built on) and of our own client.
//!
//! Every read has a timeout and every child is killed on drop, so a broken mock fails a test
//! instead of hanging it.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mcp_testkit::line_channel;
use serde_json::{Value, json};

/// Bound on any single wait for output; generous for slow CI machines.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A running `mcp-mock` and the lines it has written.
struct Mock {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Mock {
    fn start(args: &[&str]) -> Mock {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-mock"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp-mock");
        let stdin = child.stdin.take();
        let lines = line_channel(child.stdout.take().expect("stdout is piped"));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Mock {
            child,
            stdin,
            lines,
            stderr,
        }
    }

    /// Writes one JSON message as one line.
    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write to the mock");
        stdin.flush().expect("flush to the mock");
    }

    /// The next raw stdout line, or `None` on timeout or EOF.
    fn line(&self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// The next JSON message (non-JSON lines are a test failure).
    fn message(&self) -> Value {
        let line = self
            .line(TIMEOUT)
            .expect("a message from the mock within the timeout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and returns its response, skipping notifications in between.
    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.message();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// `initialize` (protocol `version`) followed by `notifications/initialized`.
    fn handshake(&mut self, version: &str) -> Value {
        let response = self.request(
            0,
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {"roots": {"listChanged": true}},
                "clientInfo": {"name": "mock-wire-test", "version": "0"}
            }),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        response
    }

    fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    /// Closes stdin, the way clients stop a stdio server.
    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits for the process to exit.
    fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of the first content block of a `tools/call` response.
fn first_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {response}"))
}

#[test]
fn handshake_list_call_and_eof() {
    let mut mock = Mock::start(&["--name", "wire"]);
    let init = mock.handshake("2025-11-25");
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(result["serverInfo"]["name"], "wire");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);

    let ping = mock.request(1, "ping", json!({}));
    assert_eq!(ping["result"], json!({}), "{ping}");

    let list = mock.request(2, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools array");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for expected in [
        "echo",
        "add",
        "sleep",
        "fail",
        "image",
        "structured",
        "mixed",
        "progress",
        "huge",
        "roots",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    assert!(list["result"].get("nextCursor").is_none(), "{list}");

    let echo = mock.call(3, "echo", json!({"text": "héllo \"wire\"\n"}));
    assert_eq!(first_text(&echo), "héllo \"wire\"\n");
    assert_eq!(echo["result"]["content"].as_array().map(Vec::len), Some(1));

    let add = mock.call(4, "add", json!({"a": 2, "b": 3}));
    assert_eq!(first_text(&add), "5");
    assert_eq!(add["result"]["structuredContent"], json!({"sum": 5}));

    let fail = mock.call(5, "fail", json!({}));
    assert_eq!(fail["result"]["isError"], true, "{fail}");
    assert_eq!(first_text(&fail), "failure requested");

    let huge = mock.call(6, "huge", json!({"bytes": 100_000}));
    assert_eq!(first_text(&huge).len(), 100_000);

    let unknown = mock.call(7, "no_such_tool", json!({}));
    assert!(unknown.get("error").is_some(), "{unknown}");

    mock.close_stdin();
    let closed_at = Instant::now();
    let status = mock.wait(TIMEOUT).expect("the mock exits on stdin EOF");
    assert!(status.success(), "{status}");
    // The contract is < 100 ms; leave room for a loaded machine.
    assert!(
        closed_at.elapsed() < Duration::from_secs(2),
        "took {:?}",
        closed_at.elapsed()
    );
}

#[test]
fn older_clients_get_their_version_and_forced_version_is_verbatim() {
    let mut old = Mock::start(&[]);
    let init = old.handshake("2024-11-05");
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05", "{init}");
    let echo = old.call(1, "echo", json!({"message": "alias"}));
    assert_eq!(first_text(&echo), "alias");

    let mut forced = Mock::start(&["--protocol-version", "1999-01-01"]);
    let init = forced.handshake("2025-11-25");
    assert_eq!(init["result"]["protocolVersion"], "1999-01-01", "{init}");
}

#[test]
fn pagination_collects_every_tool_once() {
    let mut mock = Mock::start(&["--tools", "25", "--page-size", "7"]);
    mock.handshake("2025-11-25");
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        assert!(page < 20, "pagination does not end");
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let response = mock.request(100 + page, "tools/list", params);
        let tools = response["result"]["tools"]
            .as_array()
            .expect("tools array")
            .clone();
        assert!(tools.len() <= 7, "page of {}", tools.len());
        names.extend(
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned)),
        );
        match response["result"].get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(names.len(), 10 + 25, "{names:?}");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "duplicates in {names:?}");
    for i in 0..25 {
        assert!(names.contains(&format!("tool_{i}")), "tool_{i} missing");
    }
}

#[test]
fn garbage_lines_never_split_json_frames() {
    let mut mock = Mock::start(&["--garbage", "2"]);
    mock.send(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}
    }));
    let mut garbage = 0;
    let mut seen = |mock: &Mock, until_id: i64| -> Value {
        loop {
            let line = mock.line(TIMEOUT).expect("a line within the timeout");
            if line.trim_start().starts_with('{') {
                // A JSON-looking line must be one whole message.
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("split or corrupt frame ({e}): {line}"));
                if value["id"] == json!(until_id) {
                    return value;
                }
            } else {
                assert!(
                    serde_json::from_str::<Value>(&line).is_err(),
                    "garbage is JSON: {line}"
                );
                garbage += 1;
            }
        }
    };
    let init = seen(&mock, 0);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    mock.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mock.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "huge", "arguments": {"bytes": 200_000}}}));
    let huge = seen(&mock, 1);
    assert_eq!(first_text(&huge).len(), 200_000);
    mock.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "echo", "arguments": {"text": "after garbage"}}}));
    let echo = seen(&mock, 2);
    assert_eq!(first_text(&echo), "after garbage");
    assert_eq!(
        garbage, 6,
        "2 before the first response and 2 before each of 2 call responses"
    );
}

#[test]
fn record_captures_cancellation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let record = dir.path().join("received.jsonl");
    let record_arg = record.to_str().expect("utf-8 temp path");
    let mut mock = Mock::start(&["--record", record_arg]);
    mock.handshake("2025-11-25");
    mock.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": "sleep", "arguments": {"ms": 60_000}}}));
    mock.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 7, "reason": "test"}}),
    );
    // Lines are recorded before they are handled, so once the ping is answered the
    // cancellation is on disk.
    let ping = mock.request(8, "ping", json!({}));
    assert_eq!(ping["result"], json!({}));

    let text = std::fs::read_to_string(&record).expect("read the record file");
    let messages: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert_eq!(
        messages.first().map(|m| m["method"].clone()),
        Some(json!("initialize"))
    );
    assert!(
        messages
            .iter()
            .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == 7),
        "no cancellation in {text}"
    );
    // The cancelled call is never answered, and the server keeps serving.
    let echo = mock.call(9, "echo", json!({"text": "still here"}));
    assert_eq!(first_text(&echo), "still here");
}

#[test]
fn crash_after_one_call_exits_101_on_the_second() {
    let mut mock = Mock::start(&["--crash-after", "1"]);
    mock.handshake("2025-11-25");
    let first = mock.call(1, "echo", json!({"text": "one"}));
    assert_eq!(first_text(&first), "one");
    mock.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "echo", "arguments": {"text": "two"}}}));
    let status = mock.wait(TIMEOUT).expect("the mock crashes");
    assert_eq!(status.code(), Some(101), "{status}");
    // Nothing answered the second call.
    while let Some(line) = mock.line(Duration::from_millis(200)) {
        assert!(!line.contains("\"id\":2"), "call 2 was answered: {line}");
    }
}

#[test]
fn fail_init_exits_1_with_the_message() {
    let mut mock = Mock::start(&["--fail-init", "config is broken"]);
    let status = mock.wait(TIMEOUT).expect("the mock exits");
    assert_eq!(status.code(), Some(1), "{status}");
    assert_eq!(
        mock.line(Duration::from_millis(500)),
        None,
        "nothing on stdout"
    );
    // The stderr reader thread may lag the exit a little.
    let deadline = Instant::now() + TIMEOUT;
    while !mock.stderr().contains("config is broken") {
        assert!(Instant::now() < deadline, "stderr: {:?}", mock.stderr());
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn stdin_eof_exits_promptly_even_with_a_hung_call() {
    let mut mock = Mock::start(&["--hang-call"]);
    mock.handshake("2025-11-25");
    mock.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "echo", "arguments": {"text": "never"}}}));
    assert_eq!(
        mock.line(Duration::from_millis(200)),
        None,
        "a hung call was answered"
    );
    mock.close_stdin();
    let closed_at = Instant::now();
    let status = mock.wait(TIMEOUT).expect("the mock exits on stdin EOF");
    assert!(status.success(), "{status}");
    assert!(
        closed_at.elapsed() < Duration::from_secs(2),
        "took {:?}",
        closed_at.elapsed()
    );
}

#[test]
fn stdin_eof_during_a_hung_initialize_exits_0() {
    let mut mock = Mock::start(&["--hang-init"]);
    mock.send(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}
    }));
    assert_eq!(
        mock.line(Duration::from_millis(200)),
        None,
        "initialize was answered"
    );
    mock.close_stdin();
    let status = mock.wait(TIMEOUT).expect("the mock exits on stdin EOF");
    assert!(status.success(), "{status}");
}

#[test]
fn tool_file_tools_are_listed_and_called() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("tools.json");
    std::fs::write(
        &file,
        json!([
            {"name": "weather", "description": "Fixed weather",
             "result": {"content": [{"type": "text", "text": "sunny"}]}},
            {"name": "mirror", "inputSchema": {"type": "object", "properties": {"x": {"type": "number"}}}}
        ])
        .to_string(),
    )
    .expect("write the tool file");
    let mut mock = Mock::start(&["--tool-file", file.to_str().expect("utf-8 temp path")]);
    mock.handshake("2025-11-25");
    let list = mock.request(1, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"weather") && names.contains(&"mirror"),
        "{names:?}"
    );
    assert_eq!(first_text(&mock.call(2, "weather", json!({}))), "sunny");
    let mirrored: Value =
        serde_json::from_str(first_text(&mock.call(3, "mirror", json!({"x": 1}))))
            .expect("JSON text");
    assert_eq!(mirrored, json!({"x": 1}));
}

/// Whether `fd`'s open file description is in non-blocking mode.
fn non_blocking(fd: &impl std::os::fd::AsRawFd) -> bool {
    // SAFETY: F_GETFL on a descriptor the test owns.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(flags >= 0, "fcntl failed");
    flags & libc::O_NONBLOCK != 0
}

/// The mock reads its stdin pipe through the reactor (made non-blocking), but a pipe it shares
/// with its stderr (`2>&1`) stays blocking, and stdin is blocking again once it exits: the
/// pipes are shared with whoever started it.
#[test]
fn pipes_are_read_without_blocking_and_left_blocking() {
    let (stdin_read, mut stdin_write) = std::io::pipe().expect("stdin pipe");
    let stdin_kept = stdin_read.try_clone().expect("clone of stdin's read end");
    let (out_read, out_write) = std::io::pipe().expect("stdout pipe");
    let out_kept = out_write.try_clone().expect("clone of stdout's write end");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-mock"))
        .stdin(stdin_read)
        .stdout(out_write.try_clone().expect("stdout"))
        .stderr(out_write)
        .spawn()
        .expect("spawn mcp-mock");
    let lines = line_channel(out_read);
    let send = |pipe: &mut std::io::PipeWriter, message: Value| {
        writeln!(pipe, "{message}").expect("write to the mock");
    };
    send(
        &mut stdin_write,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "0"}}}),
    );
    send(
        &mut stdin_write,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin_write,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "through the pipes"}}}),
    );
    let deadline = Instant::now() + TIMEOUT;
    let answer = loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the echo answer");
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue; // a stderr line
        };
        if message["id"] == json!(1) {
            break message;
        }
    };
    assert_eq!(
        answer["result"]["content"][0]["text"],
        json!("through the pipes"),
        "{answer}"
    );
    assert!(
        non_blocking(&stdin_kept),
        "stdin is read through the reactor"
    );
    assert!(
        !non_blocking(&out_kept),
        "stdout shared with stderr was made non-blocking"
    );
    drop(stdin_write);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the mock did not exit on stdin EOF"
        );
        thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(
        !non_blocking(&stdin_kept),
        "stdin was left non-blocking after the mock exited"
    );
}
