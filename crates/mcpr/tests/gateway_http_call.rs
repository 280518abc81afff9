//! The HTTP gateway's fast path for a stateless 2026-07-28 `tools/call` POST, over real
//! sockets to `mcpr serve --http` in front of `mcpr mock`:
//!
//! - a well-formed call is answered in one JSON body (not an event stream), with the tool's
//!   result as the server sent it, marked complete;
//! - a request that fails a check rmcp makes gets rmcp's refusal, not a call: a foreign
//!   `Origin`, a rebound `Host`, a missing or wrong token, an `Mcp-Name` or `Mcp-Method` that
//!   disagrees with the body (or comes twice), a protocol version header that disagrees with
//!   the body's `_meta`, a `_meta` without what 2026-07-28 requires;
//! - a call's progress comes first, as events under its client's token (two clients using
//!   the same token each get their own), then its answer;
//! - a call the path leaves to rmcp (it asks for log lines) still gets its answer.

mod support;

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::{MCPR, temp_dir};

const TOOL: &str = "mcp_m_echo";

/// An HTTP response: status, headers (names lower-cased), body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The JSON-RPC message of a JSON body, or of an event stream's only `data:` line.
    fn message(&self) -> Value {
        let text = match self.header("content-type") {
            Some(kind) if kind.starts_with("text/event-stream") => self
                .body
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .find(|data| !data.is_empty())
                .unwrap_or_default()
                .to_owned(),
            _ => self.body.clone(),
        };
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One `POST /mcp` to `127.0.0.1:port` with `body` and `headers` (with `Host: 127.0.0.1`
/// unless they name one), read to the end.
fn post(port: u16, headers: &[(&str, &str)], body: &Value) -> Answer {
    let body = body.to_string();
    let mut text = String::from("POST /mcp HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        text.push_str("Host: 127.0.0.1\r\n");
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(text.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        head: head.to_owned(),
        body,
    }
}

/// A chunked body's content.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// A 2026-07-28 `tools/call` of `name` as an SDK sends it, with `meta` merged into its `_meta`.
fn call(name: &str, message: &str, meta: Value) -> Value {
    let mut all = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    });
    if let (Some(all), Some(extra)) = (all.as_object_mut(), meta.as_object()) {
        all.extend(extra.clone());
    }
    json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": {"text": message}, "_meta": all},
    })
}

/// The headers an SDK sends with a call of `name`.
fn headers(name: &str) -> Vec<(&str, &str)> {
    vec![
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", name),
    ]
}

/// A gateway over one `mcpr mock` named `m`, started with `flags`; it and its port.
fn gateway(world: &ServeWorld, flags: &[&str]) -> (support::ChildGuard, u16) {
    let (child, url) = world.http_gateway(flags, &[]);
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    // Served once the mock's tools are listed.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let bearer = [("Authorization", "Bearer t0ken")];
    loop {
        let mut sent = headers(TOOL);
        sent.extend_from_slice(&bearer);
        let answer = post(port, &sent, &call(TOOL, "ready?", json!({})));
        if answer.status == 200 && answer.message().get("result").is_some() {
            return (child, port);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never served: {}",
            answer.body
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn world() -> ServeWorld {
    ServeWorld::with_servers(
        temp_dir(),
        json!({"m": {"command": MCPR, "args": ["mock"]}}),
    )
}

/// The text of a call's result.
fn text(message: &Value) -> &str {
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_stateless_call_is_answered_in_one_json_body() {
    let world = world();
    let (_gateway, port) = gateway(&world, &[]);
    let answer = post(port, &headers(TOOL), &call(TOOL, "hello", json!({})));
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let message = answer.message();
    assert_eq!(message["id"], 7, "{message}");
    assert_eq!(text(&message), "hello", "{message}");
    assert_eq!(message["result"]["resultType"], "complete", "{message}");

    // A tool nobody offers: the handler's error, in the body, with status 200 as rmcp gives.
    let unknown = "mcp_m_nothing";
    let answer = post(port, &headers(unknown), &call(unknown, "x", json!({})));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let message = answer.message();
    assert!(message["error"]["message"].is_string(), "{message}");

    // A call that asks for log lines is left to rmcp, and answered all the same.
    let answer = post(
        port,
        &headers(TOOL),
        &call(
            TOOL,
            "logged",
            json!({"io.modelcontextprotocol/logLevel": "debug"}),
        ),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(text(&answer.message()), "logged", "{}", answer.body);
}

#[test]
fn a_calls_progress_comes_as_events_under_the_clients_token_then_its_answer() {
    let world = world();
    let (_gateway, port) = gateway(&world, &[]);
    let tool = "mcp_m_progress";
    // Two clients' calls at once, both with the token `0`, as SDKs number them.
    let calls: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|_| {
            std::thread::spawn(move || {
                let mut body = call(tool, "", json!({"progressToken": 0}));
                body["params"]["arguments"] = json!({"steps": 3, "interval_ms": 20});
                post(port, &headers(tool), &body)
            })
        })
        .collect();
    for handle in calls {
        let answer = handle.join().unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(
            answer.header("content-type"),
            Some("text/event-stream"),
            "{}",
            answer.body
        );
        let messages: Vec<Value> = answer
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        let (last, progress) = messages.split_last().expect("events");
        assert_eq!(progress.len(), 3, "{}", answer.body);
        let mut before = f64::MIN;
        for update in progress {
            assert_eq!(update["method"], "notifications/progress", "{update}");
            assert_eq!(update["params"]["progressToken"], 0, "{update}");
            let now = update["params"]["progress"].as_f64().unwrap();
            assert!(now > before, "{}", answer.body);
            before = now;
        }
        assert_eq!(last["id"], 7, "{last}");
        assert_eq!(text(last), "done", "{last}");
    }
}

#[test]
fn requests_that_fail_the_endpoints_checks_are_refused_not_called() {
    let world = world();
    let token_file = world.path("token");
    std::fs::write(&token_file, "t0ken\n").unwrap();
    let token_flag = token_file.to_string_lossy().into_owned();
    let (_gateway, port) = gateway(&world, &["--token-file", &token_flag]);
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut all = headers(TOOL);
        all.push(("Authorization", "Bearer t0ken"));
        all.extend_from_slice(extra);
        all
    };
    let body = call(TOOL, "hello", json!({}));

    // With everything right, the call is made.
    let answer = post(port, &with(&[]), &body);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(text(&answer.message()), "hello");

    // No token, or a wrong one.
    let answer = post(port, &headers(TOOL), &body);
    assert_eq!(answer.status, 401, "{}", answer.body);
    let mut wrong = headers(TOOL);
    wrong.push(("Authorization", "Bearer wrong"));
    assert_eq!(post(port, &wrong, &body).status, 401);

    // A web page's request, or one through a rebound name.
    let answer = post(port, &with(&[("Origin", "http://evil.example")]), &body);
    assert_eq!(answer.status, 403, "{}", answer.body);
    let rebound = format!("evil.example:{port}");
    let mut sent = with(&[]);
    sent.push(("Host", &rebound));
    let answer = post(port, &sent, &body);
    assert_eq!(answer.status, 403, "{}", answer.body);

    // Headers that say another tool or method than the body, or say it twice: a middlebox
    // routing on them would see a request the gateway does not run.
    let mut other_name = headers("mcp_m_other");
    other_name.push(("Authorization", "Bearer t0ken"));
    let answer = post(port, &other_name, &body);
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(answer.body.contains("Mcp-Name"), "{}", answer.body);
    let mut other_method: Vec<_> = with(&[])
        .into_iter()
        .filter(|(name, _)| *name != "Mcp-Method")
        .collect();
    other_method.push(("Mcp-Method", "tools/list"));
    let answer = post(port, &other_method, &body);
    assert_eq!(answer.status, 400, "{}", answer.body);
    let answer = post(port, &with(&[("Mcp-Name", TOOL)]), &body);
    assert_eq!(answer.status, 400, "{}", answer.body);

    // A protocol version header that is not the one the body's `_meta` names.
    let mut older: Vec<_> = with(&[])
        .into_iter()
        .filter(|(name, _)| *name != "MCP-Protocol-Version")
        .collect();
    older.push(("MCP-Protocol-Version", "2025-11-25"));
    let answer = post(port, &older, &body);
    assert_eq!(answer.status, 400, "{}", answer.body);

    // A `_meta` without the client's capabilities, which 2026-07-28 requires.
    let mut bare = body.clone();
    if let Some(meta) = bare["params"]["_meta"].as_object_mut() {
        meta.remove("io.modelcontextprotocol/clientCapabilities");
    }
    let answer = post(port, &with(&[]), &bare);
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(answer.message()["error"].is_object(), "{}", answer.body);
}
