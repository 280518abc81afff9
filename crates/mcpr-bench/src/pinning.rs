//! Section 2e: what tool pinning costs at start-up. `connect_servers` for N `mcpr mock`
//! servers with pinning off and on (the pins already written, as on every start-up after the
//! first), interleaved in one run, and the pin checks alone (`PinStore::check` on the same N
//! tool lists, timed in-process) as a share of the start-up.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use mcp_runtime::client::ToolDefinition;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::pins::{PinStore, pin_key};

use crate::Ctx;
use crate::report::{self, Report, Table};

/// One start-up of `configs`: elapsed time, and each server's tools.
async fn start(
    dir: &Path,
    configs: IndexMap<String, ServerConfig>,
    pins: Option<Arc<PinStore>>,
) -> (Duration, Vec<(String, Vec<ToolDefinition>)>) {
    let manager = McpManager::new(
        ManagerOptions::default()
            .with_project(dir.to_owned())
            .with_reconnect(false)
            .with_pins(pins),
    );
    let started = Instant::now();
    let report = manager.connect_servers(configs, IndexMap::new()).await;
    let elapsed = started.elapsed();
    let tools = report
        .servers
        .iter()
        .map(|s| (s.server.clone(), s.tools.to_vec()))
        .collect();
    let _ = tokio::time::timeout(Duration::from_secs(30), manager.disconnect_all()).await;
    (elapsed, tools)
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let n = s.startup_counts.iter().copied().max().unwrap_or(50);
    let mock = ctx.mock(&[]);
    let configs: IndexMap<String, ServerConfig> = (0..n)
        .map(|i| {
            let config = ServerConfig::stdio(mock.command.clone(), mock.args.clone());
            (format!("s{i}"), config)
        })
        .collect();
    eprintln!("» start-up: {n} servers, tool pinning off and on");
    let dir = tempfile::tempdir_in(&ctx.work).expect("temp dir");
    let pins = Arc::new(PinStore::at(dir.path().join("pins.json")));
    let (mut off, mut on, mut checks) = (Vec::new(), Vec::new(), Vec::new());
    let mut problem = None;
    // The first start-up pins every tool; the runs after it check against those pins.
    let first = ctx.within_step(start(dir.path(), configs.clone(), Some(pins.clone())));
    if let Err(why) = &first {
        problem = Some(why.clone());
    }
    for _ in 0..s.startup_runs {
        match ctx.within_step(start(dir.path(), configs.clone(), None)) {
            Ok((elapsed, _)) => off.push(elapsed),
            Err(why) => problem = Some(why),
        }
        match ctx.within_step(start(dir.path(), configs.clone(), Some(pins.clone()))) {
            Ok((elapsed, tools)) => {
                on.push(elapsed);
                // The checks alone, on the lists this start-up received.
                let started = Instant::now();
                for (server, tools) in &tools {
                    let key = pin_key(server, dir.path(), &configs[server]);
                    let _ = pins.check(&key, tools, |_| false);
                }
                checks.push(started.elapsed());
            }
            Err(why) => problem = Some(why),
        }
    }
    let mut table = Table::new(
        &format!("2e. Tool pinning at start-up, {n} servers (`connect_servers`)"),
        &[
            "servers",
            "pinning off",
            "pinning on (pins written)",
            "on ÷ off",
            "pin checks alone",
            "checks ÷ start-up",
        ],
    );
    let mut cells = vec![n.to_string()];
    match (
        report::median(&off),
        report::median(&on),
        report::median(&checks),
    ) {
        (Some(off), Some(on), Some(checks)) => {
            let share = checks.as_secs_f64() / on.as_secs_f64();
            cells.push(report::ms(off));
            cells.push(report::ms(on));
            cells.push(report::ratio(on.as_secs_f64() / off.as_secs_f64()));
            cells.push(report::ms(checks));
            cells.push(format!("{:.2}%", share * 100.0));
            report.target(
                &format!("tool pinning, {n} servers"),
                "≤ 1% of connect_servers",
                format!(
                    "{:.2}% ({} of {})",
                    share * 100.0,
                    report::ms(checks),
                    report::ms(on)
                ),
                Some(share <= 0.01),
            );
        }
        _ => {
            let why = problem.unwrap_or_else(|| "no run".into());
            cells.push(format!("n/a ({})", report::cell(&why)));
            cells.extend(["—".to_owned(), "—".into(), "—".into(), "—".into()]);
            report.target(
                &format!("tool pinning, {n} servers"),
                "≤ 1% of connect_servers",
                format!("not measured: {why}"),
                None,
            );
        }
    }
    table.row(cells);
    table.note(format!(
        "Median of {} interleaved runs in one process. Pinning on reads nothing new from disk: \
         the store is loaded once and written only when a tool is seen for the first time. \
         \"Pin checks alone\" times `PinStore::check` (canonical JSON and SHA-256 of every \
         definition) on the tool lists of that start-up, the work pinning adds; the whole \
         start-up is dominated by spawning {n} processes, so \"on ÷ off\" is mostly noise.",
        s.startup_runs
    ));
    report.tables.push(table);
}
