//! OpenTelemetry export and Prometheus metrics, with real processes and a real receiver: a
//! loopback OTLP/HTTP server in this test (`support/otlp.rs`) decodes what `mcpr serve` and
//! `mcpr call` export (protobuf and JSON) with the OpenTelemetry protocol definitions.
//!
//! - the gateway's span of a forwarded call is the client's `traceparent`'s child, and the
//!   backend (`mcpr mock --echo-meta`, which returns the `_meta` it got) receives the same
//!   trace with the gateway's span as parent; `mcpr call` under `TRACEPARENT` likewise;
//! - a reconnect attempt is a span with the new connection's span inside it, and a call's wait
//!   for its server (the gate) is a span under the client's trace;
//! - `OTEL_SDK_DISABLED=true` exports nothing and passes the context on unchanged; an
//!   unsupported protocol is named on one line and the command runs without telemetry;
//! - `mcpr prompt` and `mcpr resource` are spans that name the prompt, never its arguments
//!   or the URI read; a prompt through the gateway continues the client's trace;
//! - a collector that refuses connections or never answers costs the call nothing, and
//!   `mcpr call` still exits (bounded waits, no timed assertion);
//! - `mcpr serve --http` serves `GET /metrics` (with the token when it has one), and neither
//!   it nor the OTLP meters hold a secret argument, environment or header value, nor a series
//!   per tool name a hostile client makes up.

#[path = "support/otlp.rs"]
mod otlp;
mod support;

use std::io::{Read as _, Write as _};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use otlp::Collector;
use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::{ChildGuard, MCPR, line_channel, temp_dir, wait_bounded};

/// The client's trace: its trace id and the span id the gateway's span must name as parent.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const TRACESTATE: &str = "congo=t61rcWkgMzE";

/// Bound on any wait.
const BOUND: Duration = Duration::from_secs(60);

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{CLIENT_SPAN}-01")
}

/// One backend `old` that echoes the `_meta` of its calls.
fn world() -> ServeWorld {
    ServeWorld::with_servers(
        temp_dir(),
        json!({"old": {"command": MCPR, "args": ["mock", "--echo-meta"]}}),
    )
}

/// The `(trace id, parent span id)` of an echoed `traceparent`.
fn ids(traceparent: &Value) -> (String, String) {
    let text = traceparent.as_str().unwrap_or_default();
    let parts: Vec<&str> = text.split('-').collect();
    assert_eq!(parts.len(), 4, "not a traceparent: {traceparent}");
    (parts[1].to_owned(), parts[2].to_owned())
}

/// The `_meta` a backend echoed in a `tools/call` result.
fn echoed(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not the echoed _meta: {result}: {e}"))
}

/// `mcpr serve` over stdio for `world`, with `env`; a 2025-11-25 session opened on it.
struct StdioGateway {
    child: ChildGuard,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl StdioGateway {
    fn start(world: &ServeWorld, env: &[(&str, String)]) -> StdioGateway {
        let mut command = Command::new(MCPR);
        command
            .args(world.serve_args(&[]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        world.isolate(&mut command);
        command.envs(env.iter().map(|(k, v)| (k, v)));
        let mut child = ChildGuard::spawn(&mut command);
        let lines = line_channel(child.0.stdout.take().expect("stdout"));
        let mut gateway = StdioGateway {
            child,
            lines,
            next_id: 0,
        };
        let initialized = gateway.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}),
        );
        assert!(initialized.get("result").is_some(), "{initialized}");
        gateway.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        gateway
    }

    fn send(&mut self, message: Value) {
        let stdin = self.child.0.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Close stdin and wait (bounded) for the gateway to exit, flushing its telemetry.
    fn stop(mut self) {
        drop(self.child.0.stdin.take());
        let status = wait_bounded(&mut self.child, BOUND, "mcpr serve");
        assert!(status.success(), "{status}");
    }
}

#[test]
fn a_gateway_span_is_the_clients_child_and_the_backends_parent() {
    let collector = Collector::start();
    let world = world();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_SERVICE_NAME", "gateway-under-test".to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
    ];
    let mut gateway = StdioGateway::start(&world, &env);
    let meta = json!({"traceparent": traceparent(), "tracestate": TRACESTATE});
    let answer = gateway.request(
        "tools/call",
        json!({"name": "mcp_old_meta", "arguments": {}, "_meta": meta}),
    );
    let sent = echoed(&answer["result"]);
    gateway.stop();

    let span = collector.wait_span("tools/call meta");
    assert_eq!(span.trace_id, TRACE_ID, "{span:?}");
    assert_eq!(span.parent_span_id, CLIENT_SPAN, "{span:?}");
    assert_eq!(span.service, "gateway-under-test");
    // The backend continues the same trace under the gateway's span.
    let (trace, parent) = ids(&sent["traceparent"]);
    assert_eq!(trace, TRACE_ID, "{sent}");
    assert_eq!(parent, span.span_id, "{sent} / {span:?}");
    assert_eq!(sent["tracestate"], TRACESTATE, "{sent}");
    let attributes = &span.attributes;
    assert_eq!(attributes["mcp.method.name"], "tools/call", "{span:?}");
    assert_eq!(attributes["gen_ai.tool.name"], "meta", "{span:?}");
    assert_eq!(
        attributes["gen_ai.operation.name"], "execute_tool",
        "{span:?}"
    );
    assert_eq!(attributes["mcpr.server.name"], "old", "{span:?}");
    assert_eq!(attributes["network.transport"], "pipe", "{span:?}");
    assert_eq!(attributes["mcp.protocol.version"], "2025-11-25", "{span:?}");
    assert!(!attributes.contains_key("error.type"), "{span:?}");

    // The connection and its handshake are a span of their own.
    let connect = collector.wait_span("connect old");
    assert_eq!(
        connect.attributes["network.transport"], "pipe",
        "{connect:?}"
    );
    assert_eq!(connect.attributes["mcpr.server.name"], "old", "{connect:?}");
    let encodings = collector.encodings();
    assert!(encodings.iter().all(|e| *e == "protobuf"), "{encodings:?}");
}

#[test]
fn a_reconnect_and_a_wait_at_the_gate_are_spans() {
    let collector = Collector::start();
    // Dies on its first call, and takes a while to start again.
    let world = ServeWorld::with_servers(
        temp_dir(),
        json!({"old": {"command": MCPR,
                       "args": ["mock", "--echo-meta", "--crash-after", "0", "--init-delay", "500"]}}),
    );
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
    ];
    let mut gateway = StdioGateway::start(&world, &env);
    let meta = json!({"traceparent": traceparent()});
    let params = json!({"name": "mcp_old_meta", "arguments": {}, "_meta": meta});
    let first = gateway.request("tools/call", params.clone());
    assert_eq!(first["result"]["isError"], true, "{first}");
    // Sent while the backend starts again: it waits for it.
    let _ = gateway.request("tools/call", params);
    gateway.stop();

    let reconnect = collector.wait_span("reconnect old");
    let connects: Vec<_> = collector
        .spans()
        .into_iter()
        .filter(|s| s.name == "connect old" && s.parent_span_id == reconnect.span_id)
        .collect();
    assert_eq!(connects.len(), 1, "the connection is the reconnect's child");
    let gate = collector.wait_span("gate old");
    assert_eq!(gate.trace_id, TRACE_ID, "{gate:?}");
    assert_eq!(gate.parent_span_id, CLIENT_SPAN, "{gate:?}");
    let failed = collector
        .spans()
        .into_iter()
        .find(|s| s.name == "tools/call meta" && s.attributes.contains_key("error.type"));
    assert!(
        failed.is_some(),
        "the crashed call's span carries error.type"
    );
}

/// `mcpr call old meta --json` with `env`: the echoed `_meta`.
fn call(world: &ServeWorld, env: &[(&str, String)]) -> Value {
    call_with_stderr(world, env).0
}

/// [`call`], and what it wrote on stderr.
fn call_with_stderr(world: &ServeWorld, env: &[(&str, String)]) -> (Value, String) {
    let (out, err) = run(world, &["call", "old", "meta", "--json"], env);
    let result: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    (echoed(&result), err)
}

/// `mcpr ARGS` on `world`'s config with `env`, to its end (bounded); stdout and stderr.
fn run(world: &ServeWorld, args: &[&str], env: &[(&str, String)]) -> (String, String) {
    let mut command = Command::new(MCPR);
    command
        .args(["--strict-config", "--config"])
        .arg(&world.config)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    world.isolate(&mut command);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    let mut child = ChildGuard::spawn(&mut command);
    let mut stdout = child.0.stdout.take().expect("stdout");
    let mut stderr = child.0.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = wait_bounded(&mut child, BOUND, "mcpr");
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "{args:?}: {status}: {err}");
    (out, err)
}

#[test]
fn prompts_and_resource_reads_are_spans_without_their_values() {
    let collector = Collector::start();
    let world = ServeWorld::with_servers(
        temp_dir(),
        json!({"r": {"command": MCPR, "args": ["mock", "--resources"]}}),
    );
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())];
    let (out, _) = run(
        &world,
        &["prompt", "r", "greet", &format!("name={SECRET_ARGUMENT}")],
        &env,
    );
    assert!(out.contains(SECRET_ARGUMENT), "{out}");
    let uri = format!("mock://r/items/{SECRET_ARGUMENT}");
    run(&world, &["resource", "r", &uri], &env);
    let prompt = collector.wait_span("prompts/get greet");
    assert_eq!(
        prompt.attributes["mcp.method.name"], "prompts/get",
        "{prompt:?}"
    );
    assert_eq!(
        prompt.attributes["gen_ai.prompt.name"], "greet",
        "{prompt:?}"
    );
    let read = collector.wait_span("resources/read");
    assert_eq!(read.attributes["mcpr.server.name"], "r", "{read:?}");
    // Through the gateway, the prompt's span continues the client's trace.
    let gateway_env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
    ];
    let mut gateway = StdioGateway::start(&world, &gateway_env);
    let got = gateway.request(
        "prompts/get",
        json!({"name": "mcp_r_greet", "arguments": {"name": "ada"},
               "_meta": {"traceparent": traceparent()}}),
    );
    assert!(got.get("result").is_some(), "{got}");
    // And so does a resource read's.
    let got = gateway.request(
        "resources/read",
        json!({"uri": "mock://mcpr-mock/items/7", "_meta": {"traceparent": traceparent()}}),
    );
    assert!(got.get("result").is_some(), "{got}");
    gateway.stop();
    for name in ["prompts/get greet", "resources/read"] {
        let deadline = Instant::now() + BOUND;
        let relayed = loop {
            let found = collector
                .spans()
                .into_iter()
                .find(|s| s.name == name && s.parent_span_id == CLIENT_SPAN);
            if let Some(span) = found {
                break span;
            }
            assert!(Instant::now() < deadline, "{name}: {:?}", collector.spans());
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(relayed.trace_id, TRACE_ID, "{relayed:?}");
    }
    for span in collector.spans() {
        let leaked = span
            .attributes
            .values()
            .any(|v| v.contains(SECRET_ARGUMENT));
        assert!(!leaked && !span.name.contains(SECRET_ARGUMENT), "{span:?}");
    }
}

#[test]
fn nothing_is_exported_when_disabled_and_a_protocol_mcpr_lacks_is_named() {
    let collector = Collector::start();
    let world = world();
    let disabled = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_SDK_DISABLED", "true".to_owned()),
        ("TRACEPARENT", traceparent()),
    ];
    // No span: the incoming context goes on unchanged.
    let sent = call(&world, &disabled);
    assert_eq!(sent["traceparent"], traceparent().as_str(), "{sent}");
    let grpc = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_owned()),
    ];
    // The call runs without telemetry, and says why on one line.
    let (_, stderr) = call_with_stderr(&world, &grpc);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("telemetry")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
        "{stderr}"
    );
    assert!(collector.spans().is_empty(), "{:?}", collector.spans());
    assert!(collector.metrics().0.is_empty());
}

#[test]
fn mcpr_call_exports_its_span_under_traceparent_as_json() {
    let collector = Collector::start();
    let world = world();
    let env = [
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{}/v1/traces", collector.endpoint()),
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_owned()),
        ("TRACEPARENT", traceparent()),
    ];
    let sent = call(&world, &env);
    let span = collector.wait_span("tools/call meta");
    assert_eq!(span.trace_id, TRACE_ID, "{span:?}");
    assert_eq!(span.parent_span_id, CLIENT_SPAN, "{span:?}");
    assert_eq!(span.service, "mcpr");
    let (trace, parent) = ids(&sent["traceparent"]);
    assert_eq!(
        (trace.as_str(), parent.as_str()),
        (TRACE_ID, span.span_id.as_str())
    );
    assert_eq!(collector.encodings().first(), Some(&"json"));
    // Only traces were configured: no meters went out.
    assert!(
        collector.metrics().0.is_empty(),
        "{:?}",
        collector.metrics()
    );
}

#[test]
fn a_collector_that_refuses_or_hangs_costs_the_call_nothing() {
    let world = world();
    // Refuses: a port that was free a moment ago, nobody listening.
    let refused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused_port = refused.local_addr().unwrap().port();
    drop(refused);
    // Hangs: accepts connections and never answers.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hanging_port = hanging.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in hanging.incoming().flatten() {
            held.push(stream);
        }
    });
    for port in [refused_port, hanging_port] {
        let env = [
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            ),
            ("TRACEPARENT", traceparent()),
        ];
        // The call completes and the process exits, within the bound.
        let sent = call(&world, &env);
        let (trace, _) = ids(&sent["traceparent"]);
        assert_eq!(trace, TRACE_ID, "{sent}");
    }
}

/// One HTTP/1.1 request to the gateway; status and (de-chunked) body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(BOUND)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
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
    (status, body)
}

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

const TOKEN: &str = "t0ken-for-metrics";
const SECRET_ARGUMENT: &str = "sk-argument-9f8e7d6c5b4a";
const SECRET_ENV: &str = "env-secret-1a2b3c4d5e6f";
const SECRET_HEADER: &str = "header-secret-0a9b8c7d6e";

/// A 2026-07-28 stateless `tools/call` of `name` with `arguments`, carrying the secret header.
fn post_call(port: u16, name: &str, arguments: Value) -> (u16, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        }},
    });
    let bearer = format!("Bearer {TOKEN}");
    let headers = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", name),
        ("Authorization", bearer.as_str()),
        ("X-Api-Key", SECRET_HEADER),
    ];
    http(port, "POST", "/mcp", &headers, &body.to_string())
}

/// The series (lines that are not comments) of `metric` in Prometheus text.
fn series<'a>(text: &'a str, metric: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.starts_with(&format!("{metric}{{")) || line.starts_with(&format!("{metric} "))
        })
        .collect()
}

#[test]
fn metrics_hold_no_secret_and_no_series_per_made_up_tool() {
    let collector = Collector::start();
    let world = ServeWorld::with_servers(
        temp_dir(),
        json!({"m": {"command": MCPR, "args": ["mock"], "env": {"API_KEY": SECRET_ENV}}}),
    );
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200".to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let token_file = world.path("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let token_file = token_file.to_string_lossy().into_owned();
    let (_gateway, url) = world.http_gateway(&["--token-file", &token_file], &env);
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    // Served once the mock's tools are listed.
    let deadline = Instant::now() + BOUND;
    loop {
        let (status, body) = post_call(port, "mcp_m_echo", json!({"text": SECRET_ARGUMENT}));
        if status == 200 && body.contains(SECRET_ARGUMENT) {
            break;
        }
        assert!(Instant::now() < deadline, "never served: {status} {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A hostile client makes up tool names.
    for n in 0..1_000 {
        let (status, _) = post_call(port, &format!("mcp_m_made_up_{n}"), json!({}));
        assert_ne!(status, 0, "the gateway stopped answering");
    }

    // No token, no meters: they name the backends and their tools.
    let (status, _) = http(port, "GET", "/metrics", &[], "");
    assert_eq!(status, 401);
    let bearer = format!("Bearer {TOKEN}");
    let (status, scraped) = http(port, "GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(status, 200, "{scraped}");
    let calls = series(&scraped, "mcpr_calls_total");
    assert!(
        calls
            .iter()
            .any(|line| line.contains("gen_ai_tool_name=\"echo\"")
                && line.contains("mcpr_server_name=\"m\"")
                && line.contains("outcome=\"ok\"")),
        "{scraped}"
    );
    assert!(calls.len() <= 4, "a series per made-up tool: {calls:#?}");
    let backends = series(&scraped, "mcpr_backends");
    assert!(
        backends
            .iter()
            .any(|line| line.contains("state=\"connected\"") && line.ends_with(" 1")),
        "{scraped}"
    );
    assert!(!series(&scraped, "mcpr_sessions").is_empty(), "{scraped}");
    assert!(!series(&scraped, "mcpr_tools_held").is_empty(), "{scraped}");
    assert!(
        !series(&scraped, "mcp_client_operation_duration_seconds_bucket").is_empty(),
        "{scraped}"
    );
    for secret in [SECRET_ARGUMENT, SECRET_ENV, SECRET_HEADER, TOKEN] {
        assert!(
            !scraped.contains(secret),
            "{secret} in /metrics:\n{scraped}"
        );
    }

    // The same meters go over OTLP, without the secrets either.
    collector.wait_metric("mcpr.calls");
    let (names, labels) = collector.metrics();
    for name in [
        "mcp.client.operation.duration",
        "mcpr.backends",
        "mcpr.sessions",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} not exported: {names:?}"
        );
    }
    let spans = collector.spans();
    for secret in [SECRET_ARGUMENT, SECRET_ENV, SECRET_HEADER, TOKEN] {
        assert!(
            !labels.iter().any(|l| l.contains(secret)),
            "{secret} in {labels:?}"
        );
        let in_span = spans.iter().find(|s| {
            s.attributes
                .iter()
                .any(|(k, v)| k.contains(secret) || v.contains(secret))
        });
        assert!(in_span.is_none(), "{secret} in {in_span:?}");
    }
}
