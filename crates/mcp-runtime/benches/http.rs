//! Client cost per call over the network transports: `echo` calls/s of mcp-runtime against
//! the mock (`mcp-mock`) over streamable HTTP and legacy HTTP+SSE (loopback), next to stdio, sequential
//! and with 32 calls in flight. Prints a markdown table; asserts nothing about speed.
//!
//! Run: `cargo bench -p mcp-runtime --bench http` (`BENCH_CALLS=N` to change the count).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::config::{ServerConfig, server_from_json};
use serde_json::json;

const IN_FLIGHT: usize = 32;
const WARM_UP: usize = 200;

fn main() {
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");

    let stdio = runtime.block_on(measure(
        ServerConfig::stdio(mcp_testkit::mock_bin(), Vec::<String>::new()),
        calls,
    ));
    let (mut http_server, http_url) = mock_server("--http");
    let http = runtime.block_on(measure(remote(&http_url, "http"), calls));
    let (mut sse_server, sse_url) = mock_server("--sse");
    let sse = runtime.block_on(measure(remote(&sse_url, "sse"), calls));
    for server in [&mut http_server, &mut sse_server] {
        let _ = server.kill();
        let _ = server.wait();
    }

    println!("\n## echo calls/s against the mock (`mcp-mock`) ({calls} calls, loopback)\n");
    println!(
        "| transport | sequential calls/s | {IN_FLIGHT} in flight calls/s | sequential vs stdio |"
    );
    println!("|---|---:|---:|---:|");
    for (name, (sequential, in_flight)) in [
        ("stdio", stdio),
        ("streamable HTTP", http),
        ("legacy HTTP+SSE", sse),
    ] {
        println!(
            "| {name} | {sequential:.0} | {in_flight:.0} | {:.2} |",
            sequential / stdio.0
        );
    }
}

/// `mcp-mock --http|--sse 127.0.0.1:0`; returns the process and the URL it printed.
fn mock_server(mode: &str) -> (Child, String) {
    let mut child = Command::new(mcp_testkit::mock_bin())
        .args([mode, "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the mock");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the mock printed its URL");
    // Keep draining stderr so the mock never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

fn remote(url: &str, kind: &str) -> ServerConfig {
    server_from_json("bench", &json!({"url": url, "type": kind})).expect("valid config")
}

/// (sequential, in flight) calls per second.
async fn measure(config: ServerConfig, calls: usize) -> (f64, f64) {
    let client = McpClient::connect("bench", &config, &ConnectOptions::default())
        .await
        .expect("connect to the mock");
    let client = Arc::new(client);
    let args = json!({"text": "hello"}).as_object().cloned();
    for _ in 0..WARM_UP {
        client
            .call_tool("echo", args.clone(), CallOptions::default())
            .await
            .expect("warm-up call");
    }

    let started = Instant::now();
    for _ in 0..calls {
        client
            .call_tool("echo", args.clone(), CallOptions::default())
            .await
            .expect("echo");
    }
    let sequential = calls as f64 / started.elapsed().as_secs_f64();

    let started = Instant::now();
    let workers = (0..IN_FLIGHT).map(|w| {
        let client = client.clone();
        let args = args.clone();
        tokio::spawn(async move {
            for _ in (w..calls).step_by(IN_FLIGHT) {
                client
                    .call_tool("echo", args.clone(), CallOptions::default())
                    .await
                    .expect("echo");
            }
        })
    });
    for worker in futures::future::join_all(workers).await {
        worker.expect("worker");
    }
    let in_flight = calls as f64 / started.elapsed().as_secs_f64();
    client.close().await;
    (sequential, in_flight)
}
