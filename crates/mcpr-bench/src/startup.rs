//! Section 2: start-up, launch → every server's tools listed, for N `mcpr mock` servers over
//! stdio. Cold: mcp-runtime's `McpManager::connect_servers` with a fresh cache against the
//! TypeScript SDK connecting every server in parallel. Warm, with one server hanging forever
//! (`--hang-init`) and its tools in the cache: mcp-runtime returns at the gate with deferred
//! tools; a client without a cache waits. By era: one server's first start-up (the
//! `server/discover` probe, then its fallback) and its cached one (straight to the right
//! opening), for a legacy server, one that never answers unknown methods, and a 2026-07-28
//! server. Through the gate with 2026-07-28 servers: cold, warm (era cached), warm with a
//! fresh `ttlMs` (discovery replayed, tools not listed again), one old server that never
//! answers `server/discover` among them, and servers that never acknowledge
//! `subscriptions/listen`. What tool pinning costs (`pinning`, section 2e).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::client::ToolDefinition;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{DEFAULT_GATE, ManagerOptions, McpManager};
use serde_json::json;

use crate::Ctx;
use crate::report::{self, Report, Table};
use crate::scripts::{self, Server};

fn manager(dir: &Path) -> McpManager {
    McpManager::new(
        ManagerOptions::default()
            .with_cache(Some(Arc::new(ToolCache::in_dir(dir))))
            .with_project(dir.to_owned())
            .with_reconnect(false),
    )
}

fn config(server: &Server) -> ServerConfig {
    ServerConfig::stdio(server.command.clone(), server.args.clone())
}

/// One start-up: elapsed, tools, slowest handshake, deferred servers, errors.
struct Startup {
    elapsed: Duration,
    tools: usize,
    slowest_handshake: Duration,
    deferred: usize,
    errors: usize,
}

async fn connect(dir: &Path, configs: IndexMap<String, ServerConfig>) -> Startup {
    let manager = manager(dir);
    let started = Instant::now();
    let report = manager.connect_servers(configs, IndexMap::new()).await;
    let elapsed = started.elapsed();
    let slowest_handshake = manager
        .reports()
        .iter()
        .filter_map(|r| r.handshake_ms)
        .max()
        .map(Duration::from_millis)
        .unwrap_or_default();
    let startup = Startup {
        elapsed,
        tools: report.servers.iter().map(|s| s.tools.len()).sum(),
        slowest_handshake,
        deferred: report.servers.iter().filter(|s| s.deferred).count(),
        errors: report.errors.len(),
    };
    // Bounded: a hanging server is escalated to SIGKILL by the client, but never wait forever.
    let _ = tokio::time::timeout(Duration::from_secs(30), manager.disconnect_all()).await;
    startup
}

/// The tools a normal mock lists (to warm the cache of the hanging one).
async fn listed_tools(dir: &Path, mock: &Server) -> Vec<ToolDefinition> {
    let mut configs = IndexMap::new();
    configs.insert("probe".to_owned(), config(mock));
    let manager = manager(dir);
    let report = manager.connect_servers(configs, IndexMap::new()).await;
    let tools = report
        .servers
        .first()
        .map(|s| s.tools.to_vec())
        .unwrap_or_default();
    let _ = tokio::time::timeout(Duration::from_secs(30), manager.disconnect_all()).await;
    tools
}

fn mock_configs(mock: &Server, n: usize) -> IndexMap<String, ServerConfig> {
    (0..n).map(|i| (format!("s{i}"), config(mock))).collect()
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let mock = ctx.mock(&[]);
    let hanging = ctx.mock(&["--hang-init"]);
    let ts_root = ctx.peers.npm.as_ref().map(|npm| npm.root.clone());

    // Cold.
    let mut cold = Table::new(
        "2a. Cold start-up: launch → all tools listed (`mcpr mock` servers, fresh cache)",
        &[
            "servers",
            "mcp-runtime (connect_servers)",
            "slowest handshake in that run",
            "÷ slowest handshake",
            "TypeScript SDK (all in parallel)",
            "TS SDK ÷ mcp-runtime",
        ],
    );
    let mut largest: Option<(usize, Duration, Duration)> = None;
    for &n in &s.startup_counts {
        eprintln!("» start-up: {n} servers, cold, mcp-runtime and TypeScript SDK");
        let mut runs = Vec::new();
        let mut handshakes = Vec::new();
        let mut problem = None;
        let mut ts_runs = Vec::new();
        let mut ts_problem = None;
        for _ in 0..s.startup_runs {
            let dir = tempfile::tempdir_in(&ctx.work).expect("temp dir");
            let result = ctx.within_step(connect(dir.path(), mock_configs(&mock, n)));
            match result {
                Ok(run) if run.errors == 0 => {
                    runs.push(run.elapsed);
                    handshakes.push(run.slowest_handshake);
                }
                Ok(run) => problem = Some(format!("{} of {n} servers failed", run.errors)),
                Err(why) => problem = Some(why),
            }
            // The TypeScript SDK, same servers, right after (interleaved under the same load).
            match &ts_root {
                Ok(root) => {
                    let servers: Vec<_> = (0..n).map(|_| mock.json()).collect();
                    let job = json!({"mode": "startup", "servers": servers});
                    match scripts::typescript(&ctx.scripts, root, &job, s.step) {
                        Ok((value, _)) => match value["ms"].as_f64() {
                            Some(ms) => ts_runs.push(Duration::from_secs_f64(ms / 1000.0)),
                            None => ts_problem = Some(format!("unexpected result {value}")),
                        },
                        Err(why) => ts_problem = Some(why),
                    }
                }
                Err(why) => ts_problem = Some(format!("npm peers: {why}")),
            }
        }
        let runtime = report::median(&runs);
        let handshake = report::median(&handshakes);
        let ts = report::median(&ts_runs);
        let mut cells = vec![n.to_string()];
        match (runtime, handshake) {
            (Some(rt), Some(hs)) => {
                cells.push(report::ms(rt));
                cells.push(report::ms(hs));
                cells.push(report::ratio(rt.as_secs_f64() / hs.as_secs_f64()));
                if largest.is_none_or(|(m, _, _)| n > m) {
                    largest = Some((n, rt, hs));
                }
            }
            _ => {
                let why = problem.unwrap_or_else(|| "no run".into());
                cells.push(format!("n/a ({})", report::cell(&why)));
                cells.extend(["—".to_owned(), "—".into()]);
            }
        }
        match ts {
            Some(ts) => {
                cells.push(report::ms(ts));
                cells.push(runtime.map_or("—".into(), |rt| {
                    report::ratio(ts.as_secs_f64() / rt.as_secs_f64())
                }));
            }
            None => {
                let why = ts_problem.unwrap_or_else(|| "no run".into());
                cells.push(format!("n/a ({})", report::cell(&why)));
                cells.push("—".into());
            }
        }
        cold.row(cells);
    }
    cold.note(format!(
        "Median of {} runs, timed in-process from the first spawn to the last `tools/list` answer \
         (Node's own start-up is not counted). \"Slowest handshake\" is the longest spawn → \
         initialize time of any server in the same mcp-runtime run.",
        s.startup_runs
    ));
    report.tables.push(cold);
    match largest {
        Some((n, rt, hs)) => report.target(
            &format!("{n}-server cold start vs the slowest single handshake"),
            "≤ 1.3×",
            format!(
                "{} ({} vs {})",
                report::ratio(rt.as_secs_f64() / hs.as_secs_f64()),
                report::ms(rt),
                report::ms(hs)
            ),
            Some(rt.as_secs_f64() <= 1.3 * hs.as_secs_f64()),
        ),
        None => report.target(
            "cold start vs the slowest single handshake",
            "≤ 1.3×",
            "not measured".into(),
            None,
        ),
    }

    // Warm, one hanging.
    let gate = DEFAULT_GATE;
    let mut warm = Table::new(
        &format!(
            "2b. Warm cache, one server hanging forever (`mcpr mock --hang-init`), gate {}",
            report::ms(gate)
        ),
        &[
            "servers",
            "mcp-runtime (returns at the gate)",
            "tools (deferred servers)",
            "TypeScript SDK (no cache)",
        ],
    );
    let mut warm_counts: Vec<usize> = s
        .startup_counts
        .iter()
        .copied()
        .filter(|n| *n >= 2)
        .collect();
    if warm_counts.is_empty() {
        warm_counts = s.startup_counts.iter().copied().max().into_iter().collect();
    }
    let cache_dir = tempfile::tempdir_in(&ctx.work).expect("temp dir");
    let warmed = ctx.runtime.block_on(async {
        tokio::time::timeout(s.step, async {
            let tools = listed_tools(cache_dir.path(), &mock).await;
            if tools.is_empty() {
                return Err("the probe server listed no tools".to_owned());
            }
            ToolCache::in_dir(cache_dir.path()).put(
                &CacheKey::new("hanging", cache_dir.path(), &config(&hanging)),
                &tools,
            );
            Ok(())
        })
        .await
        .unwrap_or_else(|_| Err("probe timed out".into()))
    });
    for &n in &warm_counts {
        eprintln!("» start-up: {n} servers, warm cache, one hanging");
        let mut cells = vec![n.to_string()];
        let result = match &warmed {
            Err(why) => Err(why.clone()),
            Ok(()) => {
                let mut runs = Vec::new();
                let mut last = None;
                let mut problem = None;
                for _ in 0..s.startup_runs {
                    let mut configs = mock_configs(&mock, n - 1);
                    configs.insert("hanging".into(), config(&hanging));
                    let result = ctx.within_step(connect(cache_dir.path(), configs));
                    match result {
                        Ok(run) => {
                            runs.push(run.elapsed);
                            last = Some((run.tools, run.deferred));
                        }
                        Err(why) => problem = Some(why),
                    }
                }
                match (report::median(&runs), last) {
                    (Some(elapsed), Some(shape)) => Ok((elapsed, shape)),
                    _ => Err(problem.unwrap_or_else(|| "no run".into())),
                }
            }
        };
        match &result {
            Ok((elapsed, (tools, deferred))) => {
                cells.push(report::ms(*elapsed));
                cells.push(format!("{tools} ({deferred} deferred)"));
                report.target(
                    &format!("warm start, {n} servers, one hanging"),
                    &format!(
                        "≤ gate + 50 ms = {}",
                        report::ms(gate + Duration::from_millis(50))
                    ),
                    report::ms(*elapsed),
                    Some(*elapsed <= gate + Duration::from_millis(50)),
                );
            }
            Err(why) => {
                cells.push(format!("n/a ({})", report::cell(why)));
                cells.push("—".into());
                report.target(
                    &format!("warm start, {n} servers, one hanging"),
                    "≤ gate + 50 ms",
                    format!("not measured: {why}"),
                    None,
                );
            }
        }
        // The TypeScript SDK has no tool cache: it waits for the hanging server.
        let ts = match &ts_root {
            Err(why) => format!("n/a (npm peers: {})", report::cell(why)),
            Ok(root) => {
                let mut servers: Vec<_> = (0..n - 1).map(|_| mock.json()).collect();
                servers.push(hanging.json());
                let job = json!({"mode": "startup", "servers": servers});
                match scripts::typescript(&ctx.scripts, root, &job, s.hang_bound) {
                    Ok((value, _)) => format!("{:.0} ms", value["ms"].as_f64().unwrap_or(f64::NAN)),
                    Err(why) if why.contains("no exit within") => format!(
                        "no tools after {} (waits for the hanging server; SDK request timeout 60 s)",
                        report::ms(s.hang_bound)
                    ),
                    Err(why) => format!("n/a ({})", report::cell(&why)),
                }
            }
        };
        cells.push(ts);
        warm.row(cells);
    }
    warm.note(format!(
        "Median of {} runs. The hanging server's tools come from the tool cache (pre-populated \
         with `ToolCache::put`), so mcp-runtime returns them as deferred tools at the gate while \
         the server keeps connecting in the background.",
        s.startup_runs
    ));
    report.tables.push(warm);
    eras(ctx, report);
    modern_fleet(ctx, report);
    crate::pinning::run(ctx, report);
}

/// Section 2c: one server's start-up by era, first contact and cached.
fn eras(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let mut table = Table::new(
        "2c. Start-up by protocol era: one server, first contact vs era cached",
        &[
            "server",
            "first start-up",
            "cached start-up",
            "probes (first / cached)",
            "protocol",
        ],
    );
    let kinds: [(&str, &[&str]); 3] = [
        ("legacy (`mcpr mock`)", &[]),
        (
            "legacy, never answers unknown methods (`--ignore-unknown`)",
            &["--ignore-unknown"],
        ),
        (
            "2026-07-28 only (`--era 2026-07-28`)",
            &["--era", "2026-07-28"],
        ),
    ];
    for (label, flags) in kinds {
        eprintln!("» start-up by era: {label}");
        let server = ctx.mock(flags);
        let mut first = Vec::new();
        let mut cached = Vec::new();
        let mut seen = None;
        let mut problem = None;
        for _ in 0..s.startup_runs {
            let dir = tempfile::tempdir_in(&ctx.work).expect("temp dir");
            let runs = ctx.runtime.block_on(async {
                tokio::time::timeout(s.step, async {
                    let one = open_once(dir.path(), &server).await?;
                    let two = open_once(dir.path(), &server).await?;
                    Ok::<_, String>((one, two))
                })
                .await
                .unwrap_or_else(|_| Err("timed out".into()))
            });
            match runs {
                Ok((one, two)) => {
                    first.push(one.0);
                    cached.push(two.0);
                    seen = Some((one.1, two.1, one.2));
                }
                Err(why) => problem = Some(why),
            }
        }
        let mut cells = vec![label.to_owned()];
        match (report::median(&first), report::median(&cached), seen) {
            (Some(first), Some(cached), Some((probes, cached_probes, version))) => {
                cells.push(report::ms(first));
                cells.push(report::ms(cached));
                cells.push(format!("{probes} / {cached_probes}"));
                cells.push(version);
            }
            _ => {
                let why = problem.unwrap_or_else(|| "no run".into());
                cells.push(format!("n/a ({})", report::cell(&why)));
                cells.extend(["—".to_owned(), "—".into(), "—".into()]);
            }
        }
        table.row(cells);
    }
    table.note(format!(
        "Median of {} runs, each in a fresh cache directory: connect (spawn → opening complete) \
         and list tools, twice. The first start-up probes with `server/discover`; the second \
         finds the era in the tool cache and opens with `initialize` (legacy) or \
         `server/discover` (2026-07-28) at once. The cached legacy start-up is the opening \
         mcp-runtime made before it knew the 2026-07-28 revision (`initialize` only). A server \
         that never answers the probe costs the probe bound (100 ms after it has read the \
         probe) on first contact only.",
        s.startup_runs
    ));
    report.tables.push(table);
}

/// Connect one server with the era cache in `dir` and list its tools: elapsed time, probes sent
/// and the protocol version.
async fn open_once(dir: &Path, server: &Server) -> Result<(Duration, u32, String), String> {
    use mcp_runtime::client::{ConnectOptions, McpClient};
    let cache = Arc::new(ToolCache::in_dir(dir));
    // Open (or create) the database outside the timing: the figure is the opening's cost.
    let _ = cache.era("", &config(server));
    let options = ConnectOptions::default().with_cache(Some(cache));
    let started = Instant::now();
    let client = McpClient::connect("era", &config(server), &options)
        .await
        .map_err(|e| e.to_string())?;
    client.list_tools().await.map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    let seen = (
        elapsed,
        client.opening().probes,
        client.info().protocol_version.clone(),
    );
    client.close().await;
    Ok(seen)
}

/// Section 2d: N servers through the gate (`connect_servers`), 2026-07-28 ones and an old one
/// that never answers the probe, cold and warm.
fn modern_fleet(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let n = s.startup_counts.iter().copied().max().unwrap_or(10).max(2);
    let mut table = Table::new(
        &format!(
            "2d. Start-up through the gate, {n} servers speaking 2026-07-28 (`connect_servers`)"
        ),
        &[
            "servers",
            "cold (fresh cache)",
            "warm (cache from the cold run)",
            "tools",
        ],
    );
    let modern = ctx.mock(&["--era", "2026-07-28"]);
    let hinted = ctx.mock(&[
        "--era",
        "2026-07-28",
        "--ttl-ms",
        "3600000",
        "--cache-scope",
        "public",
    ]);
    let deaf = ctx.mock(&["--era", "2026-07-28", "--no-listen-ack"]);
    let ignoring = ctx.mock(&["--ignore-unknown"]);
    let legacy = ctx.mock(&[]);
    let same = |server: &Server| mock_configs(server, n);
    let with_one = |server: &Server, odd: &Server| {
        let mut configs = mock_configs(server, n - 1);
        configs.insert("odd".into(), config(odd));
        configs
    };
    let rows: [(String, IndexMap<String, ServerConfig>); 5] = [
        (
            format!("{n} × `mcpr mock` (legacy, for reference)"),
            same(&legacy),
        ),
        (format!("{n} × `--era 2026-07-28`"), same(&modern)),
        (
            format!(
                "{n} × `--era 2026-07-28 --ttl-ms 3600000` (warm: discovery replayed, tools not listed)"
            ),
            same(&hinted),
        ),
        (
            format!(
                "{} × `--era 2026-07-28` + 1 legacy that never answers `server/discover`",
                n - 1
            ),
            with_one(&modern, &ignoring),
        ),
        (
            format!(
                "{n} × `--era 2026-07-28 --no-listen-ack` (never acknowledge `subscriptions/listen`)"
            ),
            same(&deaf),
        ),
    ];
    for (label, configs) in rows {
        eprintln!("» start-up through the gate: {label}");
        let mut cold = Vec::new();
        let mut warm = Vec::new();
        let mut tools = None;
        let mut problem = None;
        for _ in 0..s.startup_runs {
            let dir = tempfile::tempdir_in(&ctx.work).expect("temp dir");
            let runs = ctx.within_step(async {
                let one = connect(dir.path(), configs.clone()).await;
                let two = connect(dir.path(), configs.clone()).await;
                (one, two)
            });
            match runs {
                Ok((one, two)) if one.errors + two.errors == 0 => {
                    cold.push(one.elapsed);
                    warm.push(two.elapsed);
                    tools = Some(two.tools);
                }
                Ok((one, two)) => {
                    problem = Some(format!("{} servers failed", one.errors + two.errors))
                }
                Err(why) => problem = Some(why),
            }
        }
        let mut cells = vec![label];
        match (report::median(&cold), report::median(&warm), tools) {
            (Some(cold), Some(warm), Some(tools)) => {
                cells.push(report::ms(cold));
                cells.push(report::ms(warm));
                cells.push(tools.to_string());
            }
            _ => {
                let why = problem.unwrap_or_else(|| "no run".into());
                cells.push(format!("n/a ({})", report::cell(&why)));
                cells.extend(["—".to_owned(), "—".into()]);
            }
        }
        table.row(cells);
    }
    table.note(format!(
        "Median of {} runs, each in a fresh cache directory: `connect_servers` (spawn → opening \
         → tools listed, gate {}) twice, the second with the cache the first wrote. Cold \
         2026-07-28 servers are probed with `server/discover`; warm ones are opened with it \
         at once (era cached), or with no round trip at all when their `server/discover` and \
         `tools/list` results are still within `ttlMs`. The old server that never answers the \
         probe costs its bound (100 ms after it read the probe) on first contact, inside the \
         gate. The subscription to tool list changes is opened in the background, so servers \
         that never acknowledge it start as fast as the others.",
        s.startup_runs,
        report::ms(DEFAULT_GATE),
    ));
    report.tables.push(table);
}
