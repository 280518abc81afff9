//! Section 5: memory. RSS growth per idle connection, measured in a fresh process
//! (`mcpr-bench --rss-target MCPR N DIR`, so the bench's own earlier work does not count) that
//! connects N `mcpr mock` servers through `McpManager` and waits. The TypeScript SDK doing the
//! same in Node is shown for reference.
//!
//! Both first connect one server and measure after it: what the first connection costs once
//! (the code it runs paged in, worker threads' stacks, the cache's database) is no cost per
//! connection, and would otherwise be divided among the N.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::cache::ToolCache;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use serde_json::{Value, json};

use crate::report::{self, Report, Table};
use crate::{Ctx, proc, scripts};

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

/// `--rss-target MCPR N DIR`: prints `{"before_kib", "after_kib", "connected"}`.
pub(crate) fn target(args: &[String]) -> ExitCode {
    let [mcpr, count, dir] = args else {
        eprintln!("usage: mcpr-bench --rss-target MCPR N DIR");
        return ExitCode::from(2);
    };
    let count: usize = count.parse().unwrap_or(200);
    let dir = Path::new(dir);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let result = runtime.block_on(async {
        let manager = McpManager::new(
            ManagerOptions::default()
                .with_cache(Some(Arc::new(ToolCache::in_dir(dir))))
                .with_project(dir.to_owned())
                .with_reconnect(false),
        );
        let mock = || ServerConfig::stdio(mcpr.as_str(), ["mock"]);
        let warm_up = IndexMap::from([("warm-up".to_owned(), mock())]);
        let warmed = manager.connect_servers(warm_up, IndexMap::new()).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = rss_kib();
        let configs: IndexMap<String, ServerConfig> =
            (0..count).map(|i| (format!("idle{i}"), mock())).collect();
        let report = manager.connect_servers(configs, IndexMap::new()).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = rss_kib();
        let connected = report.servers.len();
        manager.disconnect_all().await;
        json!({"before_kib": before, "after_kib": after, "connected": connected,
               "errors": report.errors.len() + warmed.errors.len()})
    });
    println!("{result}");
    ExitCode::SUCCESS
}

fn row(table: &mut Table, label: &str, result: Result<Value, String>, count: usize) -> Option<f64> {
    match result {
        Ok(value) => {
            let (Some(before), Some(after), Some(connected)) = (
                value["before_kib"].as_f64(),
                value["after_kib"].as_f64(),
                value["connected"].as_u64(),
            ) else {
                table.missing(label, &format!("unexpected result {value}"));
                return None;
            };
            if connected as usize != count {
                table.missing(
                    label,
                    &format!("only {connected} of {count} servers connected"),
                );
                return None;
            }
            let per = (after - before).max(0.0) / count as f64;
            table.row(vec![
                label.into(),
                format!("{before:.0} KiB"),
                format!("{after:.0} KiB"),
                format!("{per:.1} KiB"),
            ]);
            Some(per)
        }
        Err(why) => {
            table.missing(label, &why);
            None
        }
    }
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let n = s.idle;
    let mut table = Table::new(
        &format!("5. Memory: RSS with {n} idle connections to `mcpr mock`"),
        &[
            "client process",
            "RSS before",
            "RSS after",
            "per connection",
        ],
    );
    eprintln!("» memory: mcp-runtime, {n} idle connections");
    let dir = tempfile::tempdir_in(&ctx.work).expect("temp dir");
    let mut command = Command::new(&ctx.self_exe);
    command
        .arg("--rss-target")
        .arg(&ctx.mcpr)
        .arg(n.to_string())
        .arg(dir.path());
    let runtime = match proc::run_bounded(&mut command, s.step) {
        Ok(outcome) if outcome.success() => outcome
            .stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .ok_or_else(|| "no result on stdout".to_owned()),
        Ok(outcome) => Err(outcome.failure("rss target")),
        Err(e) => Err(format!("spawn: {e}")),
    };
    let per = row(&mut table, "mcp-runtime (McpManager)", runtime, n);

    eprintln!("» memory: TypeScript SDK, {n} idle connections");
    let ts = match &ctx.peers.npm {
        Ok(npm) => {
            let job = json!({"mode": "idle", "count": n, "server": ctx.mock(&[]).json()});
            scripts::typescript(&ctx.scripts, &npm.root, &job, s.step).map(|(v, _)| v)
        }
        Err(why) => Err(format!("npm peers: {why}")),
    };
    let ts_per = row(&mut table, "TypeScript SDK (Node)", ts, n);
    if let (Some(per), Some(ts_per)) = (per, ts_per)
        && per > 0.0
    {
        table.note(format!(
            "The TypeScript SDK uses {} the memory per idle connection.",
            report::ratio(ts_per / per)
        ));
    }
    table.note(
        "RSS growth of the client process only (the servers are separate processes), in a \
         fresh process, 500 ms after every server listed its tools. Both clients connect one \
         server first and count from there, so what only the first connection costs (code paged \
         in, threads started) is not divided among the others.",
    );
    report.tables.push(table);
    report.target(
        "RSS per idle connection",
        "≤ 64 KiB",
        per.map_or("not measured".into(), |p| format!("{p:.1} KiB")),
        per.map(|p| p <= 64.0),
    );
}
