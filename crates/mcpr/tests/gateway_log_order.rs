//! A 2026-07-28 request that names a log level gets the log lines its server sends while it
//! runs on the request's own stream, and that stream ends with the answer: the lines the
//! server sent before its answer must come before it, every time.
//!
//! The clients here read the wire themselves (a JSON line at a time over stdio, the event
//! stream of each POST over HTTP), so the order checked is the order the gateway wrote, not
//! the order a client library hands things on in.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use support::sdk::ServeWorld;
use support::{ChildGuard, MCPR, temp_dir};

/// Calls in a row; every one must have its line before its answer.
const CALLS: u64 = 50;

/// A world with one backend `m`, the mock with `--notify-tools` (its `log` tool sends one
/// line, then answers).
fn world() -> ServeWorld {
    let servers = json!({"m": {"command": MCPR, "args": ["mock", "--notify-tools"]}});
    ServeWorld::with_servers(temp_dir(), servers)
}

/// Call `id` of the run: `mcp_m_log` with a text of its own, asking for lines at `debug`.
fn call(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": "mcp_m_log",
            "arguments": {"text": format!("line {id}"), "level": "warning"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "order", "version": "1"},
                "io.modelcontextprotocol/logLevel": "debug",
            },
        },
    })
}

/// What one call's messages were, in the order they arrived: `Ok(())` when its log line
/// came before its answer, else what came instead.
fn judge(id: u64, messages: &[Value]) -> Result<(), String> {
    let text = format!("line {id}");
    let answer = messages
        .iter()
        .position(|m| m["id"] == json!(id))
        .ok_or_else(|| format!("call {id}: no answer in {messages:?}"))?;
    let answer_text = messages[answer]["result"]["content"][0]["text"].clone();
    if answer_text != json!("logged") {
        return Err(format!("call {id}: answered {:?}", messages[answer]));
    }
    let line = messages[..answer].iter().position(|m| {
        m["method"] == json!("notifications/message") && m["params"]["data"] == json!(text)
    });
    match line {
        Some(_) => Ok(()),
        None => Err(format!(
            "call {id}: its log line did not come before its answer: {messages:?}"
        )),
    }
}

/// Over stdio: 50 calls in a row on `mcpr serve`'s stdin, each line read off its stdout.
#[test]
fn log_lines_come_before_the_answer_over_stdio() {
    let world = world();
    let mut command = Command::new(MCPR);
    command
        .args(world.serve_args(&[]))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    world.isolate(&mut command);
    let mut gateway = ChildGuard::spawn(&mut command);
    let mut stdin = gateway.0.stdin.take().expect("stdin");
    let stdout = gateway.0.stdout.take().expect("stdout");
    let (lines, received) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(message) = serde_json::from_str(&line)
                && lines.send(message).is_err()
            {
                return;
            }
        }
    });
    let mut failures = Vec::new();
    for id in 1..=CALLS {
        writeln!(stdin, "{}", call(id)).expect("write a call");
        stdin.flush().expect("flush");
        let mut messages = Vec::new();
        loop {
            let message = received
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("call {id}: no answer; so far {messages:?}"));
            let answered = message["id"] == json!(id);
            messages.push(message);
            if answered {
                break;
            }
        }
        if let Err(failure) = judge(id, &messages) {
            failures.push(failure);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// POST `body` to `url` as a 2026-07-28 `tools/call` over HTTP/1.0 (so the body ends with
/// the connection, without chunking); the messages of its event stream, in order.
fn post(url: &str, body: &Value) -> Vec<Value> {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_once('/').expect("a path");
    let body = body.to_string();
    let name = body_name(&body);
    let request = format!(
        "POST /{path} HTTP/1.0\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: {name}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the answer");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    assert!(
        head.starts_with("HTTP/1.") && head.contains(" 200 "),
        "{response}"
    );
    if head.to_ascii_lowercase().contains("application/json") {
        return serde_json::from_str(body).into_iter().collect();
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// The tool name of a `tools/call` body (the `Mcp-Name` header must repeat it).
fn body_name(body: &str) -> String {
    let value: Value = serde_json::from_str(body).expect("a JSON body");
    value["params"]["name"]
        .as_str()
        .expect("a tool name")
        .to_owned()
}

/// Over HTTP: 50 calls in a row, each POST's event stream read to its end.
#[test]
fn log_lines_come_before_the_answer_over_http() {
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let failures: Vec<String> = (1..=CALLS)
        .filter_map(|id| judge(id, &post(&url, &call(id))).err())
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}
