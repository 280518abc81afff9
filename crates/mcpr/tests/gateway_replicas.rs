//! `mcpr serve --http` replicas behind a real load balancer: HAProxy (Debian's package,
//! installed by the test set-up if missing), health-checking each replica on `/healthz`.
//!
//! - Round robin without stickiness, a 2026-07-28 backend (the conformance mock, shared over
//!   HTTP, whose tools answer `input_required`, one of them with a signed `requestState` of
//!   its own), and the Python SDK 2.3 (`auto`) answering elicitations: with one
//!   `--state-key-file` every round trip ends well, and both replicas resume retries; without
//!   it (each replica its own key) the same set-up fails with the integrity error, so the
//!   shared key is what makes it work.
//! - Initialize-era backends (each replica its own `mcpr mock --elicit-tool`) need affinity:
//!   HAProxy's stick table on `Mcp-Session-Id`, as `docs/deploy.md` gives it, keeps each
//!   2025-11-25 session (the SDK in `legacy` mode) on its replica, and both replicas serve
//!   one. A 2026-07-28 client has no session to stick to: its retry that reaches the other
//!   replica is refused with a word on affinity.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ChildGuard, HttpMock, MCPR, isolate_env, temp_dir};

/// Bound on a client's whole run, and on any wait.
const BOUND: Duration = Duration::from_secs(90);

/// The conformance mock's input-required tools, as the gateway serves them.
const ELICITATION: &str = "mcp_c_test_input_required_result_elicitation";
const BACKEND_STATE: &str = "mcp_c_test_input_required_result_request_state";

/// What a replica logs when it resumes a call from the state its client carried.
const RESUMED: &str = "resuming a call from the state its client carried";

/// One `mcpr serve --http` replica, its stderr kept.
struct Replica {
    _child: ChildGuard,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    /// `mcpr serve --http 127.0.0.1:0` of the config `config`, with `extra` flags; returns
    /// once it serves (its `/healthz` says 200).
    fn start(dir: &Path, config: &Path, extra: &[&str]) -> Replica {
        let mut command = Command::new(MCPR);
        command
            .args(["--strict-config", "--config"])
            .arg(config)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(extra)
            .env(
                "RUST_LOG",
                "warn,rmcp=off,mcp_runtime::gateway::input::resume=info",
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // A home (and tool cache) of its own, as a replica on its own machine has.
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let home = dir.join(format!("home{}", STARTED.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(home.join("project")).unwrap();
        isolate_env(&mut command, &home);
        command.current_dir(home.join("project"));
        let mut child = ChildGuard::spawn(&mut command);
        let stderr = child.0.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (url_tx, url_rx) = mpsc::channel();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = url_tx.send(url.to_owned());
                }
                eprintln!("[replica] {line}");
                kept.lock().unwrap().push(line);
            }
        });
        let url: String = url_rx.recv_timeout(BOUND).expect("no `listening on` line");
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .expect("a port");
        let replica = Replica {
            _child: child,
            port,
            log,
        };
        let deadline = Instant::now() + BOUND;
        while health(port) != 200 {
            assert!(Instant::now() < deadline, "replica never healthy");
            std::thread::sleep(Duration::from_millis(100));
        }
        replica
    }

    /// How many calls it resumed from a carried state.
    fn resumed(&self) -> usize {
        let log = self.log.lock().unwrap();
        log.iter().filter(|line| line.contains(RESUMED)).count()
    }
}

/// The status of `GET /healthz` on `127.0.0.1:port`.
fn health(port: u16) -> u16 {
    let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    support::http_exchange(port, request).0
}

/// The HAProxy configuration of `docs/deploy.md`: round robin over `replicas`, each
/// health-checked on `/healthz`; `sticky` adds the stick table on `Mcp-Session-Id`.
fn haproxy_config(port: u16, replicas: &[&Replica], sticky: bool) -> String {
    let mut config = format!(
        "global\n    maxconn 256\n\n\
         defaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    \
         timeout server 60s\n\n\
         frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend mcpr\n\n\
         backend mcpr\n    balance roundrobin\n    http-reuse never\n    option httpchk\n    \
         http-check send meth GET uri /healthz\n    http-check expect status 200\n"
    );
    if sticky {
        config.push_str(
            "    stick-table type string len 128 size 100k expire 30m\n    \
             stick store-response res.hdr(mcp-session-id)\n    \
             stick match req.hdr(mcp-session-id)\n",
        );
    }
    for (i, replica) in replicas.iter().enumerate() {
        config.push_str(&format!(
            "    server r{} 127.0.0.1:{} check inter 1s\n",
            i + 1,
            replica.port
        ));
    }
    config
}

/// HAProxy in front of `replicas`, running until dropped; returns it and its MCP URL.
fn balancer(dir: &Path, replicas: &[&Replica], sticky: bool) -> (ChildGuard, String) {
    let haproxy = support::haproxy();
    let port = support::free_port();
    let config = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&config, haproxy_config(port, replicas, sticky)).unwrap();
    let check = Command::new(&haproxy)
        .arg("-c")
        .arg("-f")
        .arg(&config)
        .output()
        .expect("run haproxy -c");
    assert!(
        check.status.success(),
        "HAProxy refuses the configuration: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let mut command = Command::new(haproxy);
    command
        .arg("-db")
        .arg("-f")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let child = ChildGuard::spawn(&mut command);
    support::wait_for_port(port, BOUND);
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

/// The Python SDK 2.3 client: `Client(URL, mode=MODE)`, answering each elicitation (`ok:
/// true` when asked for `ok`, else the name Ada); calls each tool, ROUNDS times, and prints
/// one JSON line per result or error. Every other round it lists the tools once more, so
/// that round robin gives the next round's retries to the other replica.
const PY_CLIENT: &str = r#"
import asyncio, json, sys
import mcp.types as types
from mcp.client.client import Client

async def elicit(context, params):
    asked = json.dumps(params.model_dump(mode="json", by_alias=True))
    content = {"ok": True} if '"ok"' in asked else {"name": "Ada"}
    return types.ElicitResult(action="accept", content=content)

async def main():
    url, mode, rounds, tools = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    try:
        async with Client(url, mode=mode, elicitation_callback=elicit) as client:
            print(json.dumps({"protocol": client.protocol_version}), flush=True)
            for round in range(rounds):
                for tool in tools:
                    try:
                        result = await client.call_tool(tool, {})
                        print(json.dumps({"tool": tool, "text": result.content[0].text}), flush=True)
                    except Exception as e:
                        print(json.dumps({"tool": tool, "error": str(e)}), flush=True)
                if round % 2 == 0:
                    await client.list_tools()
    except Exception as e:
        print(json.dumps({"error": repr(e)}), flush=True)

asyncio.run(main())
"#;

/// Run the Python client against `url`; its lines.
fn run_python(dir: &Path, url: &str, mode: &str, rounds: usize, tools: &[&str]) -> Vec<Value> {
    let script = dir.join("client.py");
    std::fs::write(&script, PY_CLIENT).unwrap();
    let mut command = Command::new(support::python_sdk_2());
    command
        .arg(&script)
        .args([url, mode, &rounds.to_string()])
        .args(tools);
    let (out, err) = support::run_client(&mut command, BOUND);
    out.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}\n{err}")))
        .collect()
}

/// `mcpr serve --generate-state-key DIR/state.key`; the file's path.
fn generate_key(dir: &Path) -> String {
    let key = dir.join("state.key");
    let generated = Command::new(MCPR)
        .arg("serve")
        .arg("--generate-state-key")
        .arg(&key)
        .output()
        .unwrap();
    assert!(generated.status.success(), "{generated:?}");
    key.to_string_lossy().into_owned()
}

/// `servers` as a config file `name` in `dir`.
fn config(dir: &Path, name: &str, servers: Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

#[test]
fn replicas_sharing_a_state_key_resume_each_others_calls_of_a_2026_backend_and_only_then() {
    let dir = temp_dir();
    let dir = dir.path();
    // One backend for both replicas, as a remote server would be.
    let backend = HttpMock::http(&["--conformance"]);
    let servers = config(
        dir,
        "mcp.json",
        json!({"c": {"type": "http", "url": backend.url}}),
    );
    let rounds = 4;
    let tools = [ELICITATION, BACKEND_STATE];

    // Each replica its own key: a retry that reaches the other replica cannot be opened.
    {
        let (one, two) = (
            Replica::start(dir, &servers, &[]),
            Replica::start(dir, &servers, &[]),
        );
        let (_haproxy, url) = balancer(dir, &[&one, &two], false);
        let lines = run_python(dir, &url, "auto", 1, &tools);
        assert_eq!(lines[0]["protocol"], "2026-07-28", "{lines:?}");
        let refused = lines
            .iter()
            .filter(|line| {
                line["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("integrity check failed"))
            })
            .count();
        assert!(refused > 0, "no retry was refused: {lines:?}");
    }

    // One key, generated once and given to both.
    let key = generate_key(dir);
    let flags = ["--state-key-file", key.as_str()];
    let (one, two) = (
        Replica::start(dir, &servers, &flags),
        Replica::start(dir, &servers, &flags),
    );
    let (_haproxy, url) = balancer(dir, &[&one, &two], false);
    let lines = run_python(dir, &url, "auto", rounds, &tools);
    assert_eq!(lines[0]["protocol"], "2026-07-28", "{lines:?}");
    let results = &lines[1..];
    assert_eq!(results.len(), rounds * tools.len(), "{lines:?}");
    for result in results {
        let expected = if result["tool"] == ELICITATION {
            "Hello, Ada!"
        } else {
            // The backend's own signed state came back to it intact.
            "state-ok: requestState validated"
        };
        assert_eq!(result["text"], expected, "{lines:?}");
    }
    // Every round trip was resumed from its carried state, and both replicas took some.
    let (first, second) = (one.resumed(), two.resumed());
    assert_eq!(first + second, results.len(), "{first} + {second}");
    assert!(
        first > 0 && second > 0,
        "one replica took every retry: {first} + {second}"
    );
}

#[test]
fn initialize_era_sessions_keep_to_their_replica_by_mcp_session_id() {
    let dir = temp_dir();
    let dir = dir.path();
    // A shared key too, as a deployment has: the refusal below can then say why.
    let key = generate_key(dir);
    let replica = |n: usize| {
        let record = dir.join(format!("backend{n}.jsonl"));
        let servers = config(
            dir,
            &format!("mcp{n}.json"),
            json!({"m": {"command": MCPR, "args": [
                "mock", "--elicit-tool", "--record", record.to_string_lossy(),
            ]}}),
        );
        (
            Replica::start(dir, &servers, &["--state-key-file", &key]),
            record,
        )
    };
    let ((one, record_one), (two, record_two)) = (replica(1), replica(2));
    let (_haproxy, url) = balancer(dir, &[&one, &two], true);

    // The header the stick table keys on is there.
    let (session, status) = initialize_session_id(&url);
    assert_eq!(status, 200);
    assert!(
        session.is_some_and(|id| !id.is_empty()),
        "no Mcp-Session-Id"
    );

    // Two sessions: round robin gives each its replica, the stick table keeps it there (the
    // elicitation's answer included).
    for _ in 0..2 {
        let lines = run_python(dir, &url, "legacy", 2, &["mcp_m_elicit"]);
        assert_eq!(lines[0]["protocol"], "2025-11-25", "{lines:?}");
        assert_eq!(lines.len(), 3, "{lines:?}");
        for result in &lines[1..] {
            assert_eq!(result["text"], r#"accept {"name":"Ada"}"#, "{lines:?}");
        }
    }
    for record in [record_one, record_two] {
        let calls = support::recorded(&record, "tools/call");
        assert!(!calls.is_empty(), "{} served no session", record.display());
    }

    // A 2026-07-28 client has no session to stick to: its call waits in one replica's
    // memory (the backend keeps its request open), and the retry that reaches the other is
    // refused, saying why.
    let lines = run_python(dir, &url, "auto", 1, &["mcp_m_elicit"]);
    assert_eq!(lines[0]["protocol"], "2026-07-28", "{lines:?}");
    let error = lines[1]["error"].as_str().unwrap_or_default();
    assert!(error.contains("another gateway instance"), "{lines:?}");
}

/// POST a 2025-11-25 `initialize` to `url`: the `Mcp-Session-Id` of the answer, and its
/// status.
fn initialize_session_id(url: &str) -> (Option<String>, u16) {
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(&authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    // The head is enough (the answer's stream may stay open).
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    (session, status)
}
