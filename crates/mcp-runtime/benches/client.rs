//! Client cost per call: `echo` calls/s of mcp-runtime against the mock (`mcp-mock`) over stdio, next to
//! a minimal hand-written JSON-RPC-over-pipes client (the physical limit of the same pipes and
//! server). Prints figures and ratios; asserts nothing about speed.
//!
//! Run: `cargo bench -p mcp-runtime --bench client` (`BENCH_CALLS=N` to change the count).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use serde_json::json;

fn main() {
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");

    let raw = raw_pipe_calls_per_sec(calls);
    let (sequential, in_flight) = runtime.block_on(runtime_calls_per_sec(calls));

    println!("\n## echo calls/s over stdio against the mock (`mcp-mock`) ({calls} calls)\n");
    println!("| client | calls/s | vs hand-written |");
    println!("|---|---:|---:|");
    println!("| hand-written JSON-RPC over pipes, sequential | {raw:.0} | 1.00 |");
    println!(
        "| mcp-runtime, sequential | {sequential:.0} | {:.2} |",
        sequential / raw
    );
    println!(
        "| mcp-runtime, 32 in flight | {in_flight:.0} | {:.2} |",
        in_flight / raw
    );
}

async fn runtime_calls_per_sec(calls: usize) -> (f64, f64) {
    let config = ServerConfig::stdio(mcp_testkit::mock_bin(), Vec::<String>::new());
    let client = McpClient::connect("bench", &config, &ConnectOptions::default())
        .await
        .expect("connect to the mock");
    let client = Arc::new(client);
    let args = json!({"text": "hello"}).as_object().cloned();
    for _ in 0..200 {
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
    let workers = (0..32).map(|w| {
        let client = client.clone();
        let args = args.clone();
        tokio::spawn(async move {
            for _ in (w..calls).step_by(32) {
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

/// The least a client can do: write a request line, read lines until the response.
fn raw_pipe_calls_per_sec(calls: usize) -> f64 {
    let mut child = Command::new(mcp_testkit::mock_bin())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the mock");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut request = |stdin: &mut std::process::ChildStdin,
                       id: usize,
                       method: &str,
                       params: serde_json::Value| {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        loop {
            line.clear();
            stdout.read_line(&mut line).expect("read");
            if line.contains(&format!("\"id\":{id}")) {
                break;
            }
        }
    };
    request(
        &mut stdin,
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}),
    );
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("write");
    let params = json!({"name": "echo", "arguments": {"text": "hello"}});
    for id in 1..=200 {
        request(&mut stdin, id, "tools/call", params.clone());
    }
    let started = Instant::now();
    for id in 1..=calls {
        request(&mut stdin, 1000 + id, "tools/call", params.clone());
    }
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    drop(stdin);
    let _ = child.wait();
    rate
}
