//! A pipelined soak of `mcpr serve`: 3,000 `tools/call`s, 64 in flight at every moment,
//! written as raw JSON-RPC lines to the gateway's stdin, over six backends that fail in
//! every way the mock knows:
//!
//! - `crash`: a stdio server that exits on its 151st call (and is started again), failing
//!   the calls it was running;
//! - `hang`: a stdio server that never answers a call (each times out after a second);
//! - `garbage`: a stdio server that writes lines that are not JSON before every answer;
//! - `http500`: an HTTP server whose first 30 calls get HTTP 500;
//! - `expire`: an HTTP server that expires each session after 25 requests (then 404) while
//!   other calls of the session are still running (each takes 20 ms);
//! - `drop`: an HTTP server that cuts the event streams of its first 20 calls before the
//!   answer, so that they are resumed.
//!
//! Every call is answered exactly once, with its own text; the only failures are the injected
//! ones, told apart by their error text: the crash, the time limit, the 500's body. A call
//! that may have run is never sent twice: each text reaches an HTTP server once, except the
//! calls refused before they ran (a 404 for an expired session), sent once more on the new
//! session.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::{ChildGuard, HttpMock, MCPR, line_channel, temp_dir};

/// Calls in all, and how many are in flight at once.
const CALLS: usize = 3_000;
const IN_FLIGHT: usize = 64;

/// Generous bound on the wait for any one answer; never reached when things work.
const HANG: Duration = Duration::from_secs(60);

/// The backend call `index` goes to: every 50th to the one that hangs, the others in turn.
fn backend_of(index: usize) -> &'static str {
    const IN_TURN: [&str; 5] = ["crash", "garbage", "http500", "expire", "drop"];
    if index % 50 == 49 {
        "hang"
    } else {
        IN_TURN[index % IN_TURN.len()]
    }
}

/// Whether `error` (the text of a failed call to `backend`) is the failure that backend was
/// told to inject.
fn injected(backend: &str, error: &str) -> bool {
    match backend {
        "crash" => error.contains("exit status: 101"),
        "hang" => error.contains("timed out"),
        "http500" => error.contains("injected failure (mcpr mock --http-500)"),
        _ => false,
    }
}

/// The text of an answer's first content block, and whether it is an error (a JSON-RPC error
/// counts as one, with its message as the text).
fn outcome(answer: &Value) -> (bool, String) {
    if let Some(error) = answer.get("error") {
        return (true, error.to_string());
    }
    let result = &answer["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (result["isError"] == json!(true), text)
}

#[test]
fn every_call_is_answered_once_and_only_injected_failures_fail() {
    let records = temp_dir();
    let record = |name: &str| records.path().join(format!("{name}.jsonl"));
    let http500 = HttpMock::http(&[
        "--http-500",
        "30",
        "--record",
        record("http500").to_str().unwrap(),
    ]);
    let expire = HttpMock::http(&[
        "--expire-session-after",
        "25",
        "--call-delay",
        "20",
        "--record",
        record("expire").to_str().unwrap(),
    ]);
    let dropper = HttpMock::http(&[
        "--drop-stream",
        "20",
        "--sse-retry",
        "50",
        "--record",
        record("drop").to_str().unwrap(),
    ]);
    let stdio = |flags: &[&str]| {
        let mut args = vec!["mock"];
        args.extend_from_slice(flags);
        json!({"command": MCPR, "args": args})
    };
    let mut hang = stdio(&["--hang-call"]);
    hang["tool_timeout_ms"] = json!(1_000);
    let servers = json!({
        // About four crashes in all: under the crash-storm breaker's limit, so it comes back.
        "crash": stdio(&["--crash-after", "150"]),
        "hang": hang,
        "garbage": stdio(&["--garbage", "2"]),
        "http500": {"type": "http", "url": http500.url},
        "expire": {"type": "http", "url": expire.url},
        "drop": {"type": "http", "url": dropper.url},
    });
    let world = ServeWorld::with_servers(temp_dir(), servers);
    let mut command = Command::new(MCPR);
    command
        .args(world.serve_args(&[]))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    world.isolate(&mut command);
    let mut gateway = ChildGuard::spawn(&mut command);
    let mut stdin = gateway.0.stdin.take().unwrap();
    let lines = line_channel(gateway.0.stdout.take().unwrap());
    let mut send = |message: Value| {
        stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    let next = || -> Value {
        let line = lines
            .recv_timeout(HANG)
            .expect("the gateway stopped answering");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"))
    };

    send(
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "soak", "version": "0"}}}),
    );
    while next()["id"] != json!("init") {}
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Every backend's tools are listed before the first call (the list waits for them).
    send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}));
    let listed = loop {
        let message = next();
        if message["id"] == json!("list") {
            break message;
        }
    };
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for backend in ["crash", "hang", "garbage", "http500", "expire", "drop"] {
        let tool = format!("mcp_{backend}_echo");
        assert!(names.contains(&tool.as_str()), "{tool} not in {names:?}");
    }

    let started = Instant::now();
    let mut answers: HashMap<u64, Vec<Value>> = HashMap::new();
    let mut sent = 0;
    while answers.len() < CALLS {
        while sent < CALLS && sent - answers.len() < IN_FLIGHT {
            send(
                json!({"jsonrpc": "2.0", "id": sent, "method": "tools/call", "params": {
                "name": format!("mcp_{}_echo", backend_of(sent)),
                "arguments": {"text": format!("call-{sent}")}}}),
            );
            sent += 1;
        }
        let message = next();
        if message.get("method").is_some() {
            continue; // a notification of the gateway's own (a reconnect's list change)
        }
        let id = message["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("an answer to no call of ours: {message}"));
        assert!(id < CALLS as u64, "an answer to no call of ours: {message}");
        let previous = answers.entry(id).or_default();
        assert!(
            previous.is_empty(),
            "call {id} answered twice: {previous:?} then {message}"
        );
        previous.push(message);
    }
    eprintln!(
        "{CALLS} calls, {IN_FLIGHT} in flight, in {:?}",
        started.elapsed()
    );

    let mut unexpected = Vec::new();
    let mut injected_by_backend: BTreeMap<&str, usize> = BTreeMap::new();
    for index in 0..CALLS {
        let backend = backend_of(index);
        let (failed, text) = outcome(&answers[&(index as u64)][0]);
        if !failed {
            if text != format!("call-{index}") {
                unexpected.push(format!("call {index} ({backend}) answered {text:?}"));
            }
        } else if injected(backend, &text) {
            *injected_by_backend.entry(backend).or_default() += 1;
        } else {
            unexpected.push(format!("call {index} ({backend}) failed: {text}"));
        }
    }
    eprintln!("injected failures: {injected_by_backend:?}");
    assert!(
        unexpected.is_empty(),
        "{} calls failed without an injected fault:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert_eq!(
        injected_by_backend.get("http500"),
        Some(&30),
        "each 500 fails one call"
    );
    assert_eq!(
        injected_by_backend.get("hang"),
        Some(&(CALLS / 50)),
        "every call of the hanging server times out"
    );
    assert!(
        injected_by_backend.get("crash").is_some_and(|n| *n >= 1),
        "the crashing server crashed"
    );

    // No call that may have run was sent again: a text reaches an HTTP server twice only when
    // the first time was refused as of an expired session, and then on another session.
    for name in ["http500", "expire", "drop"] {
        let lines: Vec<Value> = std::fs::read_to_string(record(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        let mut sessions_of: HashMap<&str, Vec<&Value>> = HashMap::new();
        for line in &lines {
            if line["http"] == "POST"
                && line["body"]["method"] == "tools/call"
                && let Some(text) = line["body"]["params"]["arguments"]["text"].as_str()
            {
                sessions_of.entry(text).or_default().push(&line["session"]);
            }
        }
        for (text, sessions) in &sessions_of {
            let allowed = if name == "expire" { 2 } else { 1 };
            assert!(
                sessions.len() <= allowed,
                "{name}: {text} sent {} times",
                sessions.len()
            );
            if sessions.len() == 2 {
                assert_ne!(
                    sessions[0], sessions[1],
                    "{name}: {text} resent in its session"
                );
            }
        }
        match name {
            "expire" => assert!(
                lines
                    .iter()
                    .filter(|line| line["http"] == "POST" && line["body"]["method"] == "initialize")
                    .count()
                    > 5,
                "the sessions of `expire` expired again and again"
            ),
            "drop" => assert!(
                lines
                    .iter()
                    .any(|line| line["http"] == "GET" && line["lastEventId"].is_string()),
                "the streams `drop` cut were resumed"
            ),
            _ => {}
        }
    }
    drop((http500, expire, dropper));
}
