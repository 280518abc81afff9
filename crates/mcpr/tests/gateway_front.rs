//! `mcpr serve`'s front end reads `tools/call` itself, runs it and writes its answer (the
//! fast path); everything else goes to the MCP service. These tests drive it over real pipes:
//!
//! - hostile `tools/call` lines (wrong types, bad ids, stray fields, malformed, longer than
//!   the fast path reads) get the answers the service always gave them, and the gateway goes
//!   on answering;
//! - a call's revision and metadata are checked as the service checks them, in a session
//!   opened with `initialize` and in one opened with `server/discover`;
//! - calls written all at once each get their own answer, a cancelled call gets none (and its
//!   server hears of it), and a progress token is honoured;
//! - the TypeScript SDK's concurrent calls, with an abort and progress among them.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::{ChildGuard, MCPR, line_channel, temp_dir};

/// Generous bound against a hang; never reached when things work.
const HANG: Duration = Duration::from_secs(60);

/// One `mcpr serve --raw-names` of a single mock (recording what it receives), opened as a
/// 2025-11-25 session (or a 2026-07-28 one, see [`Serve::start_modern`]), with a thread
/// reading its stdout.
struct Serve {
    child: ChildGuard,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
    world: ServeWorld,
}

/// The `_meta` every request of a 2026-07-28 session carries.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "front", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

impl Serve {
    fn start() -> Serve {
        Serve::open(false)
    }

    /// A session opened with `server/discover`, as 2026-07-28 clients open one.
    fn start_modern() -> Serve {
        Serve::open(true)
    }

    fn open(modern: bool) -> Serve {
        let dir = temp_dir();
        let record = dir.path().join("mock.jsonl");
        let servers = json!({"mock": {"command": MCPR,
            "args": ["mock", "--record", record.to_string_lossy()]}});
        let world = ServeWorld::with_servers(dir, servers);
        let mut command = Command::new(MCPR);
        command
            .args(world.serve_args(&["--raw-names"]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        world.isolate(&mut command);
        let mut child = ChildGuard::spawn(&mut command);
        let stdin = child.0.stdin.take().unwrap();
        let lines = line_channel(child.0.stdout.take().unwrap());
        let mut serve = Serve {
            child,
            stdin,
            lines,
            world,
        };
        let list = if modern {
            serve.send(
                &json!({"jsonrpc": "2.0", "id": "init", "method": "server/discover",
                    "params": {"_meta": modern_meta()}})
                .to_string(),
            );
            serve.answer(&json!("init"));
            json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list",
                "params": {"_meta": modern_meta()}})
            .to_string()
        } else {
            serve.send(
                &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "front", "version": "0"}}})
                .to_string(),
            );
            serve.answer(&json!("init"));
            serve.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
            r#"{"jsonrpc":"2.0","id":"list","method":"tools/list"}"#.to_owned()
        };
        // The mock's tools are listed once it is up.
        let deadline = Instant::now() + HANG;
        loop {
            serve.send(&list);
            let listed = serve.answer(&json!("list"));
            if listed["result"]["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|t| t["name"] == "echo"))
            {
                break;
            }
            assert!(Instant::now() < deadline, "the mock's tools never came");
            std::thread::sleep(Duration::from_millis(50));
        }
        serve
    }

    fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    fn send_bytes(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn next(&mut self) -> Value {
        let line = self.lines.recv_timeout(HANG).unwrap_or_else(|e| {
            panic!(
                "no line from the gateway: {e} (exited: {:?})",
                self.child.0.try_wait()
            )
        });
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"))
    }

    /// The answer to request `id`, skipping anything else.
    fn answer(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next();
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Everything the gateway writes before it answers a `ping` sent now.
    fn before_ping(&mut self, probe: &str) -> Vec<Value> {
        self.send(&json!({"jsonrpc": "2.0", "id": probe, "method": "ping"}).to_string());
        let mut seen = Vec::new();
        loop {
            let message = self.next();
            if message["id"] == json!(probe) {
                return seen;
            }
            // Notifications of the gateway's own (the tool list, once the mock is up) are not
            // answers.
            if message.get("method").is_none() {
                seen.push(message);
            }
        }
    }

    /// Lines the mock received, as JSON.
    fn recorded(&self) -> Vec<Value> {
        std::fs::read_to_string(self.world.path("mock.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

fn echo(id: Value, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}})
    .to_string()
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
}

/// The error JSON-RPC gives a well-formed message it cannot read as one: `Invalid request`,
/// with no id (the service cannot tell which request it was).
fn invalid_request() -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}})
}

#[test]
fn hostile_call_lines_get_the_answers_they_always_had() {
    let mut serve = Serve::start();
    // A call whose params are not a call's: taken for a request of another kind, which the
    // gateway does not serve.
    let other_kind = [
        (
            1,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
        ),
        (
            2,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
        ),
        (4, r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#),
    ];
    for (id, line) in other_kind {
        serve.send(line);
        let answer = serve.answer(&json!(id));
        assert_eq!(
            answer["error"],
            json!({"code": -32601, "message": "tools/call"}),
            "{line}"
        );
    }
    // Lines that are not a request as JSON-RPC defines it: refused as a whole.
    let refused = [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"1.0","id":5,"method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"id":6,"method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"},"error":null}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","method":"tools/call","params":{"name":"echo"}}"#,
        r#""just a string""#,
    ];
    for (n, line) in refused.iter().enumerate() {
        serve.send(line);
        let seen = serve.before_ping(&format!("probe-refused-{n}"));
        assert_eq!(seen, [invalid_request()], "{line}");
    }
    // Not JSON: no answer at all.
    let ignored: [&[u8]; 2] = [
        br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo""#,
        b"\xff\xfe{not utf-8}",
    ];
    for (n, line) in ignored.iter().enumerate() {
        serve.send_bytes(line);
        let seen = serve.before_ping(&format!("probe-ignored-{n}"));
        assert_eq!(
            seen,
            Vec::<Value>::new(),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
    // Calls that are well formed but wrong: the same errors as ever, under their ids.
    serve.send(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nope"}}"#);
    let unknown = serve.answer(&json!(10));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(
        unknown["error"]["message"], "unknown tool: nope",
        "{unknown}"
    );
    serve.send(
        &json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "x"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}})
        .to_string(),
    );
    let version = serve.answer(&json!(11));
    assert_eq!(version["error"]["code"], -32022, "{version}");
    assert_eq!(
        version["error"]["data"]["requested"], "1999-01-01",
        "{version}"
    );
    serve.send(
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","requestState":"forged.00"}}"#,
    );
    let forged = serve.answer(&json!(12));
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    assert_eq!(
        forged["error"]["message"], "requestState integrity check failed",
        "{forged}"
    );
    // Calls the service would take as they are, odd as they look: answered.
    let accepted = [
        (json!(-13), echo(json!(-13), "negative id")),
        (json!("s14"), echo(json!("s14"), "string id")),
        (
            json!(15),
            r#"{"jsonrpc":"2.0","id":15,"method":"tools\/call","params":{"name":"echo","arguments":{"text":"escaped method"}}}"#.to_owned(),
        ),
        (
            json!(16),
            r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo","arguments":{"text":"crlf"}}}"#.to_owned()
                + "\r",
        ),
        (json!(21), format!("\u{feff}{}", echo(json!(21), "byte order mark"))),
        (
            json!(22),
            r#"{"jsonrpc":"2\u002e0","id":22,"method":"tools/call","params":{"name":"echo","arguments":{"text":"escaped version"}}}"#.to_owned(),
        ),
        (
            json!(17),
            r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"extra"},"other":1},"other":2}"#.to_owned(),
        ),
    ];
    for (id, line) in &accepted {
        serve.send(line);
        let answer = serve.answer(id);
        assert!(
            answer["result"]["content"][0]["text"].is_string(),
            "{answer}"
        );
    }
    // Longer than the fast path reads: the service reads it, and answers it (capped, as
    // every result the gateway relays).
    let long = "y".repeat(2 * 1024 * 1024);
    serve.send(&echo(json!(18), &long));
    let capped = serve.answer(&json!(18));
    assert!(text_of(&capped).starts_with("yyyy"), "{capped}");
    // Longer than the service reads at all (16 MiB): dropped, and the gateway goes on.
    let huge = "z".repeat(17 * 1024 * 1024);
    serve.send(&echo(json!(19), &huge));
    let seen = serve.before_ping("probe-huge");
    assert_eq!(seen, Vec::<Value>::new());
    serve.send(&echo(json!(20), "still here"));
    assert_eq!(text_of(&serve.answer(&json!(20))), "still here");
}

/// The fast path passes a call's arguments on as their text: what reaches the server is the
/// object the client sent, escapes, numbers and nesting included; arguments nested deeper
/// than the service reads still never reach it.
#[test]
fn arguments_reach_the_server_as_the_client_sent_them() {
    let mut serve = Serve::start();
    let nested = |depth: usize| format!("{}0{}", "[".repeat(depth), "]".repeat(depth));
    let sent = [
        r#"{"text":"caf\u00e9 \"quoted\" \\ \/ \n tab\t","n":[1,-2.5e3,18446744073709551615,0.1],"o":{"a":null,"b":[true,false,{}]},"empty":""}"#.to_owned(),
        r#"  {  "text" : "spaced"  }  "#.to_owned(),
        format!(r#"{{"text":"deep","d":{}}}"#, nested(100)),
    ];
    for (n, arguments) in sent.iter().enumerate() {
        serve.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#
        ));
        let answer = serve.answer(&json!(n));
        assert!(answer["result"]["content"].is_array(), "{answer}");
    }
    // Deeper than the service reads: refused whole, as before, and never sent on.
    serve.send(&format!(
        r#"{{"jsonrpc":"2.0","id":"too-deep","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"too deep","d":{}}}}}}}"#,
        nested(200)
    ));
    let seen = serve.before_ping("probe-deep");
    assert!(
        seen.iter().all(|m| m["id"] != json!("too-deep")),
        "{seen:?}"
    );
    let calls: Vec<Value> = serve
        .recorded()
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), sent.len(), "{calls:?}");
    for (call, arguments) in calls.iter().zip(&sent) {
        let expected: Value = serde_json::from_str(arguments).unwrap();
        assert_eq!(call["params"]["arguments"], expected);
    }
}

/// A `tools/call` the fast path runs itself gets the checks the service makes of a request's
/// revision and metadata: one that fails them gets the service's error, one that passes them
/// its answer, in a session opened either way.
#[test]
fn revision_and_metadata_of_a_call_are_checked_as_the_service_checks_them() {
    let call = |id: u32, meta: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": format!("call {id}")}, "_meta": meta}})
        .to_string()
    };
    let mut without = modern_meta();
    without
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let mut malformed = modern_meta();
    malformed["io.modelcontextprotocol/clientCapabilities"] = json!(5);
    let mut older = modern_meta();
    older["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    for mut serve in [Serve::start(), Serve::start_modern()] {
        for (id, meta) in [(1, without.clone()), (2, malformed.clone())] {
            serve.send(&call(id, meta));
            let refused = serve.answer(&json!(id));
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
            assert!(
                refused["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("io.modelcontextprotocol/clientCapabilities")),
                "{refused}"
            );
        }
        serve.send(&call(3, older.clone()));
        let unknown = serve.answer(&json!(3));
        assert_eq!(unknown["error"]["code"], -32022, "{unknown}");
        serve.send(&call(4, modern_meta()));
        let answered = serve.answer(&json!(4));
        assert_eq!(text_of(&answered), "call 4", "{answered}");
        assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
        // Only the call that passed reached the server.
        let calls: Vec<Value> = serve
            .recorded()
            .into_iter()
            .filter(|m| m["method"] == "tools/call")
            .map(|m| m["params"]["arguments"]["text"].clone())
            .collect();
        assert_eq!(calls, [json!("call 4")]);
    }
}

#[test]
fn progress_reaches_only_a_client_that_asked_for_it() {
    let mut serve = Serve::start();
    let call = |id: &str, meta: Option<Value>| {
        let mut params = json!({"name": "progress", "arguments": {"steps": 3, "interval_ms": 5}});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    // The server may report progress either way (the gateway's connection may give its
    // requests tokens of its own); the gateway passes it on only under a token of the
    // client's.
    serve.send(&call("quiet", None));
    serve.send(&call("loud", Some(json!({"progressToken": 7}))));
    let mut answered = 0;
    while answered < 2 {
        let message = serve.next();
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], 7, "{message}");
        } else if message["id"] == "quiet" || message["id"] == "loud" {
            assert_eq!(text_of(&message), "done");
            answered += 1;
        }
    }
    let reported = serve
        .recorded()
        .iter()
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == "progress")
        .count();
    assert_eq!(reported, 2);
}

#[test]
fn calls_written_at_once_get_their_own_answers_and_a_cancelled_one_none() {
    let mut serve = Serve::start();
    // A call the client gives up on, then many at once, in one write.
    let mut batch = json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": 30000}}})
    .to_string();
    for i in 0..64 {
        batch.push('\n');
        batch.push_str(&echo(json!(i), &format!("call {i}")));
    }
    batch.push('\n');
    batch.push_str(
        &json!({"jsonrpc": "2.0", "id": "progress", "method": "tools/call",
            "params": {"name": "progress", "arguments": {"steps": 3, "interval_ms": 5},
                "_meta": {"progressToken": "mine"}}})
        .to_string(),
    );
    serve.send(&batch);
    let mut answered = std::collections::BTreeMap::new();
    let mut progress = Vec::new();
    while answered.len() < 65 {
        let message = serve.next();
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "mine", "{message}");
            assert!(
                !answered.contains_key("\"progress\""),
                "progress after the answer: {message}"
            );
            progress.push(message["params"]["progress"].as_f64().unwrap());
            continue;
        }
        if message.get("method").is_some() {
            // Another notification (the tool list, once the mock is up).
            continue;
        }
        let id = message["id"].clone();
        assert!(
            answered.insert(id.to_string(), message).is_none(),
            "answered twice"
        );
    }
    for i in 0..64 {
        let answer = &answered[&i.to_string()];
        // The mock's result as it sent it, and nothing of a later revision for this session.
        assert_eq!(
            answer,
            &json!({"jsonrpc": "2.0", "id": i, "result": {
                "content": [{"type": "text", "text": format!("call {i}")}], "isError": false}})
        );
    }
    assert_eq!(text_of(&answered["\"progress\""]), "done");
    // In order, under the client's token, before the answer. Not necessarily all three: the
    // backend connection hands each notification to a task of its own, so under load one
    // may reach the gateway after a later one (dropped as stale) or after the answer.
    assert!(
        progress.windows(2).all(|w| w[0] < w[1])
            && progress.iter().all(|p| [1.0, 2.0, 3.0].contains(p)),
        "{progress:?}"
    );
    // The sleeping call is cancelled: no answer comes, and its server is told.
    serve.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"test"}}"#,
    );
    let deadline = Instant::now() + HANG;
    while !serve
        .recorded()
        .iter()
        .any(|m| m["method"] == "notifications/cancelled")
    {
        assert!(
            Instant::now() < deadline,
            "the mock never heard of the cancellation"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen = serve.before_ping("after-cancel");
    assert_eq!(
        seen,
        Vec::<Value>::new(),
        "a cancelled call is not answered"
    );
    serve.send(&echo(json!("last"), "still here"));
    assert_eq!(text_of(&serve.answer(&json!("last"))), "still here");
    // Closing stdin ends the gateway.
    let Serve {
        mut child, stdin, ..
    } = serve;
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the gateway did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The TypeScript SDK: 64 concurrent calls, one aborted and one with progress among them.
const TS_CONCURRENT: &str = r#"
const cfg = JSON.parse(process.argv[2]);
const sdk = (path) => import(cfg.sdk + "/dist/esm/" + path);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const client = new Client({ name: "front-ts", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: cfg.command, args: cfg.args, env: process.env, stderr: "inherit" }));
const abort = new AbortController();
const sleeping = client.callTool({ name: "sleep", arguments: { ms: 30000 } }, undefined, { signal: abort.signal })
  .then(() => "answered", () => "aborted");
const progress = [];
const progressed = client.callTool({ name: "progress", arguments: { steps: 3, interval_ms: 20 } }, undefined,
  { onprogress: (p) => progress.push(p.progress) });
const echoes = Array.from({ length: 64 }, (_, i) => client.callTool({ name: "echo", arguments: { text: `call ${i}` } }));
setTimeout(() => abort.abort("test"), 300);
const texts = (await Promise.all(echoes)).map((r) => r.content[0].text);
// Aborted before the calls below, so that the gateway is still serving as it cancels.
const sleep = await sleeping;
const unknown = await client.callTool({ name: "nope", arguments: {} })
  .then((r) => ({ result: r }), (e) => ({ code: e.code, message: e.message }));
const after = (await client.callTool({ name: "echo", arguments: { text: "after" } })).content[0].text;
process.stdout.write(JSON.stringify({ texts, sleep, progress,
  progressed: (await progressed).content[0].text, unknown, after }) + "\n");
await client.close();
process.exit(0);
"#;

#[test]
fn typescript_sdk_concurrent_calls_through_the_fast_path() {
    let dir = temp_dir();
    let record = dir.path().join("mock.jsonl");
    let servers = json!({"mock": {"command": MCPR,
        "args": ["mock", "--record", record.to_string_lossy()]}});
    let world = ServeWorld::with_servers(dir, servers);
    let script = world.path("concurrent.mjs");
    std::fs::write(&script, TS_CONCURRENT).unwrap();
    let config = json!({"sdk": support::typescript_sdk(), "command": MCPR,
        "args": world.serve_args(&["--raw-names"])});
    let mut command = Command::new("node");
    command
        .arg(&script)
        .arg(config.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    world.isolate(&mut command);
    let mut child = ChildGuard::spawn(&mut command);
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(HANG).expect("the TypeScript client hung");
    let out: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("client said {line:?}: {e}"));
    let expected: Vec<String> = (0..64).map(|i| format!("call {i}")).collect();
    assert_eq!(out["texts"], json!(expected), "{out}");
    assert_eq!(out["sleep"], "aborted", "{out}");
    // In order when it comes (see the test above on why not every one must).
    let progress: Vec<u64> = out["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]) && progress.iter().all(|p| (1..=3).contains(p)),
        "{out}"
    );
    assert_eq!(out["progressed"], "done", "{out}");
    assert_eq!(out["unknown"]["code"], -32602, "{out}");
    assert_eq!(out["after"], "after", "{out}");
    let deadline = Instant::now() + HANG;
    while !std::fs::read_to_string(&record)
        .unwrap_or_default()
        .contains("notifications/cancelled")
    {
        assert!(
            Instant::now() < deadline,
            "the abort never reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
