//! Manager benchmarks: start-up to tools for 1, 10 and 50 the mock (`mcp-mock`) servers (cold
//! cache, and warm cache with one server hanging forever), RSS per idle connection with 200
//! connections, and naming + registry of 10,000 tools. Prints figures; asserts nothing about
//! speed.
//!
//! Run: `cargo bench -p mcp-runtime --bench manager` (`BENCH_IDLE=N` changes the idle connection count).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::client::ToolDefinition;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager, ServerTools};
use mcp_runtime::session::Session;
use mcp_runtime::tools::{NamingStyle, mcp_tools};

fn mock(args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(mcp_testkit::mock_bin(), args.iter().copied())
}

fn manager(dir: &Path) -> McpManager {
    McpManager::new(
        ManagerOptions::default()
            .with_cache(Some(Arc::new(ToolCache::in_dir(dir))))
            .with_project(dir.to_owned())
            .with_reconnect(false),
    )
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    println!("\n## Manager (mock servers over stdio)\n");
    println!("| measurement | figure |");
    println!("|---|---:|");
    runtime.block_on(async {
        for n in [1usize, 10, 50] {
            let cold = tempfile::tempdir().expect("temp dir");
            let (elapsed, tools) = start_up(cold.path(), n, None).await;
            println!("| cold start-up to tools, {n} servers | {} ms ({tools} tools) |", elapsed.as_millis());
        }
        for n in [10usize, 50] {
            let (elapsed, tools) = start_up(dir.path(), n, Some("--hang-init")).await;
            println!(
                "| warm cache, {n} servers, one hanging forever | {} ms ({tools} tools, gate 250 ms) |",
                elapsed.as_millis()
            );
        }
        let idle: usize = std::env::var("BENCH_IDLE").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
        let per_connection = idle_rss(dir.path(), idle).await;
        println!("| RSS per idle connection ({idle} connections) | {:.1} KiB |", per_connection);
    });
    let (naming, registry) = naming_and_registry(10_000);
    println!(
        "| naming 10,000 tools | {:.2} ms |",
        naming.as_secs_f64() * 1000.0
    );
    println!(
        "| session refresh with 10,000 tools | {:.2} ms |",
        registry.as_secs_f64() * 1000.0
    );
}

/// Connect `n` servers; with `hang`, the last one gets that fault and a warm cache entry.
async fn start_up(dir: &Path, n: usize, hang: Option<&str>) -> (Duration, usize) {
    let mut configs = IndexMap::new();
    for i in 0..n {
        configs.insert(format!("s{i}"), mock(&[]));
    }
    if let Some(fault) = hang {
        let hanging = mock(&[fault]);
        // Warm the cache: the hanging server's last list is what a normal one offers.
        let tools = listed_tools(dir).await;
        ToolCache::in_dir(dir).put(&CacheKey::new("hanging", dir, &hanging), &tools);
        configs.shift_remove(&format!("s{}", n - 1));
        configs.insert("hanging".into(), hanging);
    }
    let manager = manager(dir);
    let started = Instant::now();
    let report = manager.connect_servers(configs, IndexMap::new()).await;
    let elapsed = started.elapsed();
    let tools = report.servers.iter().map(|s| s.tools.len()).sum();
    manager.disconnect_all().await;
    (elapsed, tools)
}

async fn listed_tools(dir: &Path) -> Vec<ToolDefinition> {
    let manager = manager(dir);
    let mut configs = IndexMap::new();
    configs.insert("probe".to_owned(), mock(&[]));
    let report = manager.connect_servers(configs, IndexMap::new()).await;
    let tools = report
        .servers
        .first()
        .map(|s| s.tools.to_vec())
        .unwrap_or_default();
    manager.disconnect_all().await;
    tools
}

/// RSS growth of this process per connected, idle server.
async fn idle_rss(dir: &Path, n: usize) -> f64 {
    let manager = manager(dir);
    let before = rss_kib();
    let configs = (0..n).map(|i| (format!("idle{i}"), mock(&[]))).collect();
    manager.connect_servers(configs, IndexMap::new()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    manager.disconnect_all().await;
    (after.saturating_sub(before)) as f64 / n as f64
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or_default()
}

fn naming_and_registry(count: usize) -> (Duration, Duration) {
    let servers: Vec<ServerTools> = (0..100)
        .map(|s| {
            let tools: Vec<ToolDefinition> = (0..count / 100)
                .map(|t| {
                    serde_json::from_value(serde_json::json!({
                        "name": format!("tool.{t}-with a long and awkward name to sanitise"),
                        "description": "a tool",
                        "inputSchema": {"type": "object"}
                    }))
                    .expect("tool")
                })
                .collect();
            ServerTools {
                server: format!("server {s}"),
                source: None,
                tools: tools.into(),
                deferred: false,
            }
        })
        .collect();
    let started = Instant::now();
    let tools = mcp_tools(&servers, NamingStyle::Mcpr);
    let naming = started.elapsed();
    let mut session = Session::new(
        McpManager::new(ManagerOptions::default().with_cache(None)),
        NamingStyle::Mcpr,
    );
    let started = Instant::now();
    session.refresh_mcp_tools(tools);
    (naming, started.elapsed())
}
