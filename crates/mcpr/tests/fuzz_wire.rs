//! Property tests of JSON-RPC input over real pipes, with generated hostile lines:
//!
//! - from a server: `McpClient` against a real process that writes generated lines before its
//!   answers; the client must return (connected or with an error), never panic or hang;
//! - from a gateway client: generated lines written into one `mcpr serve` process, which must
//!   keep answering a valid request after each batch.
//!
//! Case counts are fixed so the run stays short on a small CI machine.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_runtime::client::{ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use proptest::prelude::*;
use serde_json::{Value, json};
use support::{ChildGuard, MCPR, line_channel, temp_dir};

/// Generous bound against a hang; never reached when things work.
const HANG: Duration = Duration::from_secs(60);

/// A JSON value of any shape, deep nesting included.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::from),
        "[a-z/_]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z_]{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Something in an `id`: numbers (including the ones real requests use), strings, junk.
fn any_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (0i64..4).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => "[a-z0-9-]{0,6}".prop_map(Value::from),
        1 => any_json(),
    ]
}

fn method() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
            "resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
            "logging/setLevel", "completion/complete", "roots/list", "sampling/createMessage",
            "elicitation/create", "notifications/initialized", "notifications/cancelled",
            "notifications/progress", "notifications/message", "notifications/tools/list_changed",
            "notifications/roots/list_changed", "tasks/get", "",
        ])
        .prop_map(Value::from),
        1 => any_json(),
    ]
}

/// One JSON-RPC message with each member present, missing or wrong.
fn message() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop_oneof![Just(json!("2.0")), any_json()]),
        prop::option::of(any_id()),
        prop::option::of(method()),
        prop::option::of(any_json()),
        prop::option::of(any_json()),
        prop::option::of(any_json()),
    )
        .prop_map(|(version, id, method, params, result, error)| {
            let mut map = serde_json::Map::new();
            for (key, value) in [
                ("jsonrpc", version),
                ("id", id),
                ("method", method),
                ("params", params),
                ("result", result),
                ("error", error),
            ] {
                if let Some(value) = value {
                    map.insert(key.into(), value);
                }
            }
            Value::Object(map)
        })
}

/// One line (without its newline): a message, a batch, any JSON, text or bytes, deep nesting.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => message().prop_map(|m| m.to_string().into_bytes()),
        1 => prop::collection::vec(message(), 0..3).prop_map(|b| Value::from(b).to_string().into_bytes()),
        1 => any_json().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..40),
        1 => (0usize..100_000, prop::sample::select(vec!["[", "{\"a\":", "[{\"id\":"]))
            .prop_map(|(n, open)| open.repeat(n).into_bytes()),
        1 => Just(Vec::new()),
    ]
    .prop_map(|mut bytes| {
        bytes.retain(|&b| b != b'\n');
        bytes
    })
}

fn lines(max: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(line(), 0..max)
}

/// A minimal stdio server: before answering each request it writes the next batch of lines
/// from the file named by its first argument (hex, one batch per line).
const SCRIPT: &str = r#"
import json, sys
batches = [l.split() for l in open(sys.argv[1]).read().splitlines()]
out = sys.stdout.buffer
n = 0
for raw in sys.stdin.buffer:
    try:
        msg = json.loads(raw)
    except Exception:
        continue
    if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
        continue
    if n < len(batches):
        for h in batches[n]:
            out.write(bytes.fromhex(h[1:]) + b"\n")
        n += 1
    m = msg["method"]
    if m == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fuzz", "version": "0"}}
    elif m == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    elif m == "ping":
        result = {}
    else:
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                              "error": {"code": -32601, "message": "no"}}).encode() + b"\n")
        out.flush()
        continue
    out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n")
    out.flush()
"#;

fn hex(bytes: &[u8]) -> String {
    // A leading `x` so that an empty line still is one word.
    let mut text = String::from("x");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Connect to a server that writes `batches` before its answers, then list its tools.
/// Returns the tool count, or `None` when the client gave up with an error.
fn against_server(rt: &tokio::runtime::Runtime, batches: &[Vec<Vec<u8>>]) -> Option<usize> {
    let dir = temp_dir();
    let script = dir.path().join("server.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let data = dir.path().join("batches");
    let text: Vec<String> = batches
        .iter()
        .map(|b| b.iter().map(|l| hex(l)).collect::<Vec<_>>().join(" "))
        .collect();
    std::fs::write(&data, text.join("\n") + "\n").unwrap();
    let mut config = ServerConfig::stdio(
        "python3",
        [
            script.to_string_lossy().into_owned(),
            data.to_string_lossy().into_owned(),
        ],
    );
    config.startup_timeout_ms = Some(20_000);
    config.timeout_ms = Some(20_000);
    rt.block_on(async {
        tokio::time::timeout(HANG, async {
            let client = McpClient::connect("fuzz", &config, &ConnectOptions::default())
                .await
                .ok()?;
            let tools = client.list_tools().await;
            client.close().await;
            tools.ok().map(|t| t.len())
        })
        .await
        .expect("the client hung on hostile server output")
    })
}

#[test]
fn a_server_writing_plain_garbage_still_works() {
    let rt = runtime();
    let garbage = vec![
        b"not json {".to_vec(),
        Vec::new(),
        b"[[[[[[[[".to_vec(),
        vec![0xff, 0xfe, 0x00],
    ];
    assert_eq!(against_server(&rt, &[garbage.clone(), garbage]), Some(1));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    /// Hostile server output never panics or hangs the client.
    #[test]
    fn hostile_server_output_never_panics_the_client(
        batches in prop::collection::vec(lines(6), 0..3),
    ) {
        let rt = runtime();
        let _ = against_server(&rt, &batches);
    }
}

/// One `mcpr serve` process over stdio, initialized, with a thread reading its stdout.
struct Gateway {
    child: ChildGuard,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Gateway {
    fn start() -> Gateway {
        let dir = temp_dir();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("project")).unwrap();
        let config = dir.path().join("mcp.json");
        std::fs::write(
            &config,
            json!({"mcpServers": {"echo": {"command": MCPR, "args": ["mock"]}}}).to_string(),
        )
        .unwrap();
        let mut command = Command::new(MCPR);
        command
            .args(["--strict-config", "--config"])
            .arg(&config)
            .arg("serve")
            .current_dir(home.join("project"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        support::isolate_env(&mut command, &home);
        let mut child = ChildGuard::spawn(&mut command);
        let stdin = child.0.stdin.take().unwrap();
        let lines = line_channel(child.0.stdout.take().unwrap());
        let mut gateway = Gateway {
            child,
            stdin,
            lines,
            _dir: dir,
        };
        gateway.send(
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "0"}}})
            .to_string()
            .as_bytes(),
        );
        gateway.answer("init");
        gateway.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        gateway
    }

    fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Wait for the response to the request `id`; panics when the gateway is gone or hangs.
    fn answer(&mut self, id: &str) -> Value {
        loop {
            let line = self.lines.recv_timeout(HANG).unwrap_or_else(|e| {
                panic!(
                    "no answer to {id}: {e} (gateway exited: {:?})",
                    self.child.0.try_wait()
                )
            });
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && value.get("id") == Some(&json!(id))
            {
                return value;
            }
        }
    }
}

#[test]
fn hostile_client_input_never_stops_the_gateway() {
    let gateway = std::cell::RefCell::new(Gateway::start());
    let probe = std::cell::Cell::new(0u32);
    let config = ProptestConfig {
        cases: 150,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest::test_runner::TestRunner::new(config)
        .run(&lines(8), |batch| {
            let mut gateway = gateway.borrow_mut();
            for line in &batch {
                gateway.send(line);
            }
            probe.set(probe.get() + 1);
            let id = format!("probe-{}", probe.get());
            gateway.send(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
                    .to_string()
                    .as_bytes(),
            );
            let answer = gateway.answer(&id);
            prop_assert!(
                answer.get("result").is_some() || answer.get("error").is_some(),
                "{answer}"
            );
            Ok(())
        })
        .unwrap();
    let mut gateway = gateway.into_inner();
    assert!(
        gateway.child.0.try_wait().unwrap().is_none(),
        "the gateway exited"
    );
}
