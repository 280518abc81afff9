//! Trace context (`_meta.traceparent`, `tracestate`, `baggage`) reaching the backend, with real
//! processes: `mcpr mock --echo-meta` backends (one of the `initialize` era, one of
//! 2026-07-28) return the `_meta` their `tools/call` carried.
//!
//! - through `mcpr serve`: the TypeScript SDK client over stdio (the stream's fast path) and
//!   over HTTP sessions; mcpr's own client over HTTP in both eras (2026-07-28 takes the
//!   stateless fast path). Without telemetry configured the gateway makes no span: the
//!   context arrives unchanged, and a malformed `traceparent` is not passed on;
//! - `mcpr call` with `TRACEPARENT`/`TRACESTATE`/`BAGGAGE` in its environment; a malformed
//!   value is dropped with a one-line warning and never sent.

mod support;

use std::process::{Command, Stdio};
use std::sync::Arc;

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{CallOptions, ConnectOptions, Era, McpClient, TraceContext};
use serde_json::{Value, json};
use support::sdk::{Sdk, ServeWorld, Target};
use support::{MCPR, temp_dir, text};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACESTATE: &str = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
const BAGGAGE: &str = "userId=alice,serverNode=DF%2028";

/// Backends `old` (the `initialize` era) and `new` (2026-07-28), both with `--echo-meta`.
fn world() -> ServeWorld {
    let dir = temp_dir();
    let servers = json!({
        "old": {"command": MCPR, "args": ["mock", "--echo-meta"]},
        "new": {"command": MCPR, "args": ["mock", "--echo-meta", "--era", "2026-07-28"]},
    });
    ServeWorld::with_servers(dir, servers)
}

/// The `_meta` the backend echoed in `result`.
fn echoed(result: &Value) -> Value {
    let text = support::sdk::text(result);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not the echoed _meta: {text}: {e}"))
}

/// The whole context arrived as sent.
fn assert_whole(meta: &Value) {
    assert_eq!(meta["traceparent"], TRACEPARENT, "{meta}");
    assert_eq!(meta["tracestate"], TRACESTATE, "{meta}");
    assert_eq!(meta["baggage"], BAGGAGE, "{meta}");
}

/// The TypeScript SDK client sends the context on calls to both backends, then a malformed
/// `traceparent` that must not reach them (its well-formed `baggage` still does).
fn typescript_calls(world: &ServeWorld, target: Target<'_>) {
    let mut client = world.connect(Sdk::TypeScript, target);
    let context = json!({"traceparent": TRACEPARENT, "tracestate": TRACESTATE, "baggage": BAGGAGE});
    for tool in ["mcp_old_meta", "mcp_new_meta"] {
        let answer = client.step(json!({"op": "call", "name": tool, "meta": context}));
        assert_whole(&echoed(&answer["result"]));
    }
    let malformed =
        json!({"traceparent": "00-not-a-trace", "tracestate": TRACESTATE, "baggage": BAGGAGE});
    let answer = client.step(json!({"op": "call", "name": "mcp_old_meta", "meta": malformed}));
    let meta = echoed(&answer["result"]);
    assert!(meta.get("traceparent").is_none(), "{meta}");
    assert!(meta.get("tracestate").is_none(), "{meta}");
    assert_eq!(meta["baggage"], BAGGAGE, "{meta}");
    client.close();
}

#[test]
fn a_typescript_clients_trace_context_reaches_the_backends_over_stdio() {
    let world = world();
    typescript_calls(&world, Target::Stdio(&[]));
}

#[test]
fn a_typescript_clients_trace_context_reaches_the_backends_over_http() {
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    typescript_calls(&world, Target::Http(&url, None));
}

/// mcpr's own client, in both eras, against the HTTP gateway: its `CallOptions::trace` reaches
/// both backends.
#[tokio::test(flavor = "multi_thread")]
async fn mcpr_clients_of_both_eras_carry_their_trace_context_through_the_gateway() {
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let trace = TraceContext::default()
        .with_traceparent(TRACEPARENT)
        .and_then(|t| t.with_tracestate(TRACESTATE))
        .and_then(|t| t.with_baggage(BAGGAGE))
        .unwrap();
    for era in [Era::Legacy, Era::Modern] {
        let config = support::remote(&url, None);
        let mut options = ConnectOptions::default();
        let cache = Arc::new(ToolCache::in_dir(&world.path(&format!("cache-{era:?}"))));
        cache.put_era("gateway", &config, era);
        options.cache = Some(cache);
        let client = McpClient::connect("gateway", &config, &options)
            .await
            .expect("connect to the gateway");
        assert_eq!(client.opening().era, era);
        for tool in ["mcp_old_meta", "mcp_new_meta"] {
            let output = client
                .call_tool(tool, None, CallOptions::default().with_trace(trace.clone()))
                .await
                .expect("meta call");
            let meta: Value = serde_json::from_str(&output.text()).expect("echoed _meta");
            assert_whole(&meta);
        }
        client.close().await;
    }
}

/// `mcpr call SERVER meta` straight to the mock, with `env` set.
fn call_with_env(world: &ServeWorld, env: &[(&str, &str)]) -> (Value, String) {
    let mut command = Command::new(MCPR);
    command
        .args(["--strict-config", "--config"])
        .arg(&world.config)
        .args(["call", "old", "meta", "--json"])
        .stdin(Stdio::null());
    world.isolate(&mut command);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run mcpr call");
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let result: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&output.stdout)));
    (echoed(&result), stderr)
}

#[test]
fn mcpr_call_takes_the_trace_context_from_its_environment() {
    let world = world();
    let (meta, stderr) = call_with_env(
        &world,
        &[
            ("TRACEPARENT", TRACEPARENT),
            ("TRACESTATE", TRACESTATE),
            ("BAGGAGE", BAGGAGE),
        ],
    );
    assert_whole(&meta);
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn mcpr_call_drops_a_malformed_traceparent_with_one_warning() {
    let world = world();
    let bad = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
    let (meta, stderr) = call_with_env(&world, &[("TRACEPARENT", bad)]);
    assert!(meta.get("traceparent").is_none(), "sent anyway: {meta}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("TRACEPARENT"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].starts_with("warning: TRACEPARENT"), "{stderr}");
    assert!(!stderr.contains(bad), "the value is not echoed: {stderr}");
}
