//! Section 4, continued: what the gateway process itself costs. Instructions per call of
//! `mcpr serve` under callgrind (noise-free, unlike the wall times beside it), and its RSS per
//! idle backend. Both drive `mcpr serve` with the hand-written JSON-RPC client, so only the
//! gateway's own work is counted.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::raw::RawClient;
use crate::report::{self, Report, Table};
use crate::{Ctx, isolate};

/// Warm-up calls before counting (both runs make them, so they cancel out).
const WARMUP: usize = 20;

/// Tools of one `mcpr mock` (its built-in ones).
const MOCK_TOOLS: usize = 10;

/// Idle servers behind the gateway for the RSS figure (besides the first).
const IDLE_BACKENDS: usize = 50;

/// How long the gateway's servers may take to list their tools.
const LISTED_BOUND: Duration = Duration::from_secs(60);

/// A config of `count` `mcpr mock` servers, written into the bench's work directory.
fn mock_config(ctx: &Ctx, count: usize) -> Result<PathBuf, String> {
    let servers: serde_json::Map<String, Value> = (0..count)
        .map(|i| {
            let name = if count == 1 {
                "mock".to_owned()
            } else {
                format!("idle{i}")
            };
            (name, json!({"command": ctx.mcpr, "args": ["mock"]}))
        })
        .collect();
    let path = ctx.work.join(format!("gateway-{count}.json"));
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string())
        .map_err(|e| format!("write {}: {e}", path.display()))?;
    Ok(path)
}

/// `mcpr serve` of `config`, under `wrapper` (e.g. valgrind) when given, in the isolated HOME.
fn serve(ctx: &Ctx, config: &Path, wrapper: &[String], raw_names: bool) -> Command {
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(&ctx.mcpr);
            command
        }
        None => Command::new(&ctx.mcpr),
    };
    command
        .arg("--strict-config")
        .arg("--config")
        .arg(config)
        .arg("serve");
    if raw_names {
        // One server under its own names: the raw client's `echo` reaches the mock's echo.
        command.arg("--raw-names");
    }
    isolate(&mut command, &ctx.isolated_env());
    command.current_dir(ctx.project_dir());
    command
}

/// Instructions of one `mcpr serve` run with `calls` sequential echo calls (after the warm-up).
fn collected(ctx: &Ctx, config: &Path, calls: usize) -> Result<u64, String> {
    // One file per process (`%p`): the gateway forks a watchdog that dumps a profile of its own.
    let out = ctx.work.join(format!("callgrind.gateway.{calls}.%p.out"));
    let wrapper = [
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        format!("--callgrind-out-file={}", out.display()),
    ];
    let mut client = RawClient::connect_command(serve(ctx, config, &wrapper, true))?;
    // valgrind runs the gateway in its own process: the file of that pid is the gateway's.
    let out = ctx
        .work
        .join(format!("callgrind.gateway.{calls}.{}.out", client.pgid()));
    for _ in 0..WARMUP {
        client.checked_call()?;
    }
    client.calls(calls, 1)?;
    client.close(Duration::from_secs(60));
    let profile = std::fs::read_to_string(&out)
        .map_err(|e| format!("no callgrind output ({}): {e}", out.display()))?;
    profile
        .lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| "no `totals:` line in callgrind's output".into())
}

/// RSS of `mcpr serve` with `count` idle `mcpr mock` servers, once every tool is listed.
fn rss_with(ctx: &Ctx, count: usize) -> Result<u64, String> {
    let config = mock_config(ctx, count)?;
    let mut client = RawClient::connect_command(serve(ctx, &config, &[], false))?;
    let started = Instant::now();
    let mut id = 1;
    loop {
        let line = client.request(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
        ))?;
        id += 1;
        let listed: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let tools = listed["result"]["tools"].as_array().map_or(0, Vec::len);
        if tools >= count * MOCK_TOOLS {
            break;
        }
        if started.elapsed() > LISTED_BOUND {
            client.close(Duration::from_secs(10));
            return Err(format!(
                "only {tools} of {} tools listed",
                count * MOCK_TOOLS
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // As in section 5: idle for a moment after the last list.
    std::thread::sleep(Duration::from_millis(500));
    let rss = rss_kib(client.pgid());
    client.close(Duration::from_secs(10));
    rss.ok_or_else(|| "cannot read the gateway's RSS".into())
}

/// VmRSS of process `pid`, in KiB.
fn rss_kib(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|kib| kib.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

pub(super) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let calls = s.callgrind_calls;
    let idle = IDLE_BACKENDS;
    let mut table = Table::new(
        "4b. Gateway process: instructions per call (callgrind) and RSS per idle backend",
        &["measure", "runs", "per call / per backend"],
    );
    let valgrind = crate::machine::version_of("valgrind", &["--version"]);
    let counted = if !valgrind.starts_with("valgrind") {
        Err(format!("valgrind is missing: {valgrind}"))
    } else {
        eprintln!("» gateway: `mcpr serve` under callgrind, 0 and {calls} calls");
        mock_config(ctx, 1).and_then(|config| {
            let base = collected(ctx, &config, 0)?;
            let total = collected(ctx, &config, calls)?;
            Ok((base, total))
        })
    };
    match counted {
        Ok((base, total)) => {
            let per = total.saturating_sub(base) as f64 / calls as f64;
            table.row(vec![
                "instructions of `mcpr serve` per sequential `echo` call".into(),
                format!(
                    "{} with {calls} calls, {} with 0",
                    report::count(total as f64),
                    report::count(base as f64)
                ),
                report::count(per),
            ]);
        }
        Err(why) => table.missing("instructions of `mcpr serve` per call", &why),
    }
    eprintln!(
        "» gateway: RSS of `mcpr serve` with 1 and {} idle servers",
        idle + 1
    );
    let rss = rss_with(ctx, 1).and_then(|one| Ok((one, rss_with(ctx, idle + 1)?)));
    let per_backend = match rss {
        Ok((one, many)) => {
            let per = many.saturating_sub(one) as f64 / idle as f64;
            table.row(vec![
                format!("RSS of `mcpr serve` per idle `mcpr mock` ({MOCK_TOOLS} tools)"),
                format!("{one} KiB with 1 server, {many} KiB with {}", idle + 1),
                format!("{per:.1} KiB"),
            ]);
            Some(per)
        }
        Err(why) => {
            table.missing("RSS of `mcpr serve` per idle backend", &why);
            None
        }
    };
    table.note(format!(
        "Instructions: {valgrind}, the `mcpr serve` process only (its `mcpr mock` runs \
         natively), served `--raw-names` so the hand-written client's `echo` reaches the \
         mock; per call = (instructions with {calls} calls − with 0) / {calls}, {WARMUP} \
         warm-up calls in both runs. Callgrind counts a `rep movsb` copy byte by byte, so large \
         memory copies weigh more here than in time. RSS: a fresh `mcpr serve` each time, \
         500 ms after `tools/list` first shows every server's tools; per backend = (RSS with \
         {} servers − with 1) / {idle}.",
        idle + 1
    ));
    report.tables.push(table);
    if let Some(per) = per_backend {
        report.target(
            "gateway: RSS per idle backend (10 tools)",
            "≤ 64 KiB",
            format!("{per:.1} KiB"),
            Some(per <= 64.0),
        );
    }
}
