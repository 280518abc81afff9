//! What the gateway costs per call: `echo` against `mcpr mock`, called directly (mcp-runtime's
//! client over stdio), in process through a sub-agent handle, and through `mcpr serve` over
//! stdio and over streamable HTTP (loopback). Per-call latency (sequential: mean, p50, p99) and
//! throughput (sequential and 32 in flight), with ratios to the direct call. Prints a markdown
//! table; asserts nothing about speed.
//!
//! Run: `cargo bench -p mcpr --bench gateway` (`BENCH_CALLS=N` to change the count).

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient, ToolOutput};
use mcp_runtime::config::{ServerConfig, Transport, server_from_json};
use mcp_runtime::gateway::{SubAgentHandle, SubAgentOptions};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use serde_json::{Map, Value, json};

const MCPR: &str = env!("CARGO_BIN_EXE_mcpr");
const IN_FLIGHT: usize = 32;
const WARM_UP: usize = 200;

type Call = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ToolOutput> + Send>> + Send + Sync>;

/// Figures of one path.
struct Figures {
    mean: Duration,
    p50: Duration,
    p99: Duration,
    sequential: f64,
    in_flight: f64,
}

fn main() {
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let home = tempfile::tempdir().expect("temp home");
    let config_file = home.path().join("mcp.json");
    let servers = json!({"mcpServers": {"mock": {"command": MCPR, "args": ["mock"]}}});
    std::fs::write(&config_file, servers.to_string()).expect("write config");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");

    let direct = runtime.block_on(over_client(
        ServerConfig::stdio(MCPR, ["mock"]),
        "echo",
        calls,
    ));
    let in_process = runtime.block_on(over_sub_agent(calls));
    let gateway_stdio = runtime.block_on(over_client(
        gateway_stdio_config(home.path(), &config_file),
        "mcp_mock_echo",
        calls,
    ));
    let (mut gateway, url) = gateway_http(home.path(), &config_file);
    let remote =
        server_from_json("gateway", &json!({"type": "http", "url": url})).expect("remote config");
    let gateway_http = runtime.block_on(over_client(remote, "mcp_mock_echo", calls));
    // SAFETY: signalling the gateway we started, so it disconnects its backend.
    unsafe { libc::kill(gateway.id() as i32, libc::SIGTERM) };
    let _ = gateway.wait();

    println!("\n## `echo` through the gateway vs direct ({calls} calls, `mcpr mock` backend)\n");
    println!(
        "| path | mean µs | p50 µs | p99 µs | calls/s sequential | calls/s {IN_FLIGHT} in flight | latency vs direct | throughput ({IN_FLIGHT} in flight) vs direct |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, figures) in [
        ("direct (client → mock, stdio)", &direct),
        ("sub-agent handle (in process)", &in_process),
        ("gateway over stdio", &gateway_stdio),
        ("gateway over streamable HTTP", &gateway_http),
    ] {
        println!(
            "| {name} | {} | {} | {} | {:.0} | {:.0} | {:.2}× | {:.2}× |",
            figures.mean.as_micros(),
            figures.p50.as_micros(),
            figures.p99.as_micros(),
            figures.sequential,
            figures.in_flight,
            figures.mean.as_secs_f64() / direct.mean.as_secs_f64(),
            figures.in_flight / direct.in_flight,
        );
    }
}

/// The gateway as a stdio server config, in an isolated home.
fn gateway_stdio_config(home: &Path, config_file: &Path) -> ServerConfig {
    let mut config = ServerConfig::stdio(
        MCPR,
        [
            "--strict-config".to_owned(),
            "--config".to_owned(),
            config_file.to_string_lossy().into_owned(),
            "serve".to_owned(),
        ],
    );
    if let Transport::Stdio(stdio) = &mut config.transport {
        for (key, value) in isolated_env(home) {
            stdio.env.insert(key.to_owned(), value);
        }
    }
    config
}

/// `mcpr serve --http 127.0.0.1:0`; returns the process and its URL.
fn gateway_http(home: &Path, config_file: &Path) -> (Child, String) {
    let mut command = Command::new(MCPR);
    command
        .arg("--strict-config")
        .arg("--config")
        .arg(config_file)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    for (key, value) in isolated_env(home) {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn mcpr serve --http");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the gateway printed no URL");
    // Keep draining stderr so the gateway never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

/// Environment that keeps the gateway's config discovery and tool cache in `home`.
fn isolated_env(home: &Path) -> Vec<(&'static str, String)> {
    let at = |sub: &str| home.join(sub).to_string_lossy().into_owned();
    vec![
        ("HOME", at("")),
        ("XDG_CONFIG_HOME", at(".config")),
        ("XDG_CACHE_HOME", at(".cache")),
        ("XDG_DATA_HOME", at(".local/share")),
    ]
}

fn echo_args() -> Option<Map<String, Value>> {
    json!({"text": "hello"}).as_object().cloned()
}

/// Calls of `tool` through mcp-runtime's client connected with `config`.
async fn over_client(config: ServerConfig, tool: &'static str, calls: usize) -> Figures {
    let client = McpClient::connect("bench", &config, &ConnectOptions::default())
        .await
        .expect("connect");
    let client = Arc::new(client);
    // The gateway lists after the start-up gate; be sure the backend is there.
    client.list_tools().await.expect("tools/list");
    let call: Call = {
        let client = client.clone();
        Arc::new(move || {
            let client = client.clone();
            Box::pin(async move {
                client
                    .call_tool(tool, echo_args(), CallOptions::default())
                    .await
                    .expect("echo")
            })
        })
    };
    let figures = measure(call, calls).await;
    client.close().await;
    figures
}

/// Calls through a sub-agent handle over a manager connected to the mock.
async fn over_sub_agent(calls: usize) -> Figures {
    let manager = McpManager::new(ManagerOptions::default().with_cache(None));
    let mut configs = IndexMap::new();
    configs.insert("mock".to_owned(), ServerConfig::stdio(MCPR, ["mock"]));
    manager.connect_servers(configs, IndexMap::new()).await;
    let handle = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    let call: Call = Arc::new(move || {
        let handle = handle.clone();
        Box::pin(async move {
            handle
                .call("mcp_mock_echo", echo_args(), CallOptions::default())
                .await
                .expect("echo")
        })
    });
    let figures = measure(call, calls).await;
    manager.disconnect_all().await;
    figures
}

async fn measure(call: Call, calls: usize) -> Figures {
    for _ in 0..WARM_UP {
        assert_eq!(call().await.text(), "hello");
    }
    let mut latencies = Vec::with_capacity(calls);
    let started = Instant::now();
    for _ in 0..calls {
        let one = Instant::now();
        let output = call().await;
        latencies.push(one.elapsed());
        assert!(!output.is_error);
    }
    let sequential = calls as f64 / started.elapsed().as_secs_f64();
    latencies.sort();
    let mean = latencies.iter().sum::<Duration>() / calls.max(1) as u32;
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];

    let started = Instant::now();
    let workers = (0..IN_FLIGHT).map(|w| {
        let call = call.clone();
        tokio::spawn(async move {
            for _ in (w..calls).step_by(IN_FLIGHT) {
                assert!(!call().await.is_error);
            }
        })
    });
    for worker in futures::future::join_all(workers).await {
        worker.expect("worker");
    }
    let in_flight = calls as f64 / started.elapsed().as_secs_f64();
    Figures {
        mean,
        p50: at(0.50),
        p99: at(0.99),
        sequential,
        in_flight,
    }
}
