//! Section: the start-up cost of the sandbox (Linux). N `mcpr mock` servers connected through
//! `McpManager::connect_servers`, plain and sandboxed (no network, no writable path), in
//! interleaved runs under the same load; the difference over N is what the sandbox adds per
//! server (the launcher's exec, namespaces, mounts and Landlock, and its fork of the server).

use std::time::{Duration, Instant};

use indexmap::IndexMap;
use mcp_runtime::config::{ServerConfig, Transport};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::sandbox::SandboxPolicy;

use crate::Ctx;
use crate::report::{self, Report, Table};

/// The goal: the sandbox adds at most this much to one server's start-up.
const GOAL_PER_SERVER: Duration = Duration::from_millis(15);

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let mut table = Table::new(
        "Sandboxed start-up: launch → all tools listed, plain vs sandboxed `mcpr mock` servers",
        &[
            "servers",
            "plain",
            "sandboxed",
            "added in all",
            "added per server",
        ],
    );
    if !cfg!(target_os = "linux") {
        table.missing("—", "the sandbox runs on Linux only");
        report.tables.push(table);
        return;
    }
    let mock = ctx.mock(&[]);
    let plain = ServerConfig::stdio(mock.command.clone(), mock.args.clone());
    let mut sandboxed = plain.clone();
    if let Transport::Stdio(stdio) = &mut sandboxed.transport {
        stdio.sandbox = Some(SandboxPolicy::default());
    }
    let mut one_server: Option<f64> = None;
    for &n in &ctx.settings.startup_counts {
        eprintln!("» sandbox: {n} servers, plain and sandboxed");
        let mut plain_runs = Vec::new();
        let mut boxed_runs = Vec::new();
        let mut problem = None;
        for _ in 0..ctx.settings.startup_runs {
            for (config, runs) in [(&plain, &mut plain_runs), (&sandboxed, &mut boxed_runs)] {
                match ctx.within_step(connect(config, n)) {
                    Ok(Ok(elapsed)) => runs.push(elapsed),
                    Ok(Err(why)) | Err(why) => problem = Some(why),
                }
            }
        }
        match (report::median(&plain_runs), report::median(&boxed_runs)) {
            (Some(plain), Some(boxed)) => {
                // Signed: under noise the sandboxed median can come out below the plain one.
                let added_ms = (boxed.as_secs_f64() - plain.as_secs_f64()) * 1000.0;
                if n == 1 {
                    one_server = Some(added_ms);
                }
                table.row(vec![
                    n.to_string(),
                    report::ms(plain),
                    report::ms(boxed),
                    format!("{added_ms:.1} ms"),
                    format!("{:.1} ms", added_ms / n as f64),
                ]);
            }
            _ => table.missing(
                &n.to_string(),
                &report::cell(&problem.unwrap_or_else(|| "no run".into())),
            ),
        }
    }
    table.note(
        "Servers start in parallel, so `added per server` for N > 1 is the added total over N; \
         the N = 1 row is the latency one server gains.",
    );
    report.tables.push(table);
    report.target(
        "sandbox start-up cost (one server)",
        "≤ 15 ms more than plain",
        one_server.map_or("not measured (no 1-server run)".into(), |ms| {
            format!("{ms:.1} ms")
        }),
        one_server.map(|added| added <= GOAL_PER_SERVER.as_secs_f64() * 1000.0),
    );
}

/// Connect `n` copies of `config`; the time until all are listed, or why they were not.
async fn connect(config: &ServerConfig, n: usize) -> Result<Duration, String> {
    let configs: IndexMap<String, ServerConfig> =
        (0..n).map(|i| (format!("s{i}"), config.clone())).collect();
    let manager = McpManager::new(ManagerOptions::default().with_reconnect(false));
    let started = Instant::now();
    let connected = manager.connect_servers(configs, IndexMap::new()).await;
    let elapsed = started.elapsed();
    let _ = tokio::time::timeout(Duration::from_secs(30), manager.disconnect_all()).await;
    match connected.errors.first() {
        None => Ok(elapsed),
        Some((name, error)) => Err(format!(
            "{} of {n} failed; {name}: {error}",
            connected.errors.len()
        )),
    }
}
