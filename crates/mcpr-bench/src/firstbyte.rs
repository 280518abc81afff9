//! Section 7 (run only when `BENCH_ONLY` names `firstbyte`): the first byte of `mcpr tools`
//! with many real servers and a warm cache. The real servers of the discovery corpus (npm and
//! PyPI, [`crate::real_servers`]) are installed, listed once with `mcpr tools --wait` to fill
//! the tool cache, then `mcpr tools` runs N times: launch → first byte on stdout, and launch →
//! exit (its servers, still booting at the gate, are stopped after the output). Between runs
//! the bench waits until no server process is left, and counts those it had to wait for.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::report::{self, Report, Table};
use crate::{Ctx, proc, real_servers};

/// What one `mcpr tools` run showed.
struct Run {
    first_byte: Duration,
    exit: Duration,
    /// Server processes still alive when `mcpr` had exited.
    left: usize,
    /// Servers offered from the cache (`cached: still connecting` in the listing).
    deferred: usize,
    /// Servers listed.
    listed: usize,
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let gate = Duration::from_millis(250);
    let mut table = Table::new(
        "7. First byte of `mcpr tools` with real servers, warm cache",
        &["measure", "median", "min", "max"],
    );
    let result = measure(ctx, s.firstbyte_runs, &mut table);
    let target = "first byte of `mcpr tools`, real servers, warm cache";
    let goal = format!("≤ gate + 50 ms = {} ms", gate.as_millis() + 50);
    match result {
        Ok(first_byte) => report.target(
            target,
            &goal,
            report::ms(first_byte),
            Some(first_byte <= gate + Duration::from_millis(50)),
        ),
        Err(why) => {
            table.missing("all", &why);
            report.target(target, &goal, "not measured".into(), None);
        }
    }
    report.tables.push(table);
}

/// Install, warm the cache, time `runs` runs; fill `table`, return the first byte's median.
fn measure(ctx: &Ctx, runs: usize, table: &mut Table) -> Result<Duration, String> {
    eprintln!("» first byte: real servers in {}", ctx.peers_dir.display());
    real_servers::install(&ctx.peers_dir)?;
    let work = ctx.work.join("real-servers");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    real_servers::prepare_work(&work)?;
    let servers = real_servers::servers(&ctx.peers_dir, &work);
    let entries: serde_json::Map<String, Value> = servers
        .iter()
        .map(|server| (server.name.clone(), server.json(&work)))
        .collect();
    let config = ctx.work.join("real-servers.json");
    std::fs::write(&config, json!({ "mcpServers": entries }).to_string())
        .map_err(|e| format!("write {}: {e}", config.display()))?;
    let tools = |extra: &[&str]| {
        let mut command = Command::new(&ctx.mcpr);
        command
            .arg("--strict-config")
            .arg("--config")
            .arg(&config)
            .arg("tools")
            .args(extra)
            .current_dir(ctx.project_dir())
            .stdin(Stdio::null());
        crate::isolate(&mut command, &ctx.isolated_env());
        command
    };

    eprintln!("» first byte: filling the cache (`mcpr tools --wait`)");
    let warm = proc::run_bounded(&mut tools(&["--wait"]), ctx.settings.step)
        .map_err(|e| format!("mcpr tools --wait: {e}"))?;
    let cached = warm.stdout.lines().filter(|l| !l.starts_with(' ')).count();
    if cached == 0 {
        return Err(warm.failure("mcpr tools --wait"));
    }
    wait_until_gone(&ctx.peers_dir, Duration::from_secs(10));

    let mut done = Vec::new();
    for i in 0..runs {
        eprintln!("» first byte: run {}/{runs}", i + 1);
        done.push(time_once(
            &mut tools(&[]),
            &ctx.peers_dir,
            ctx.settings.step,
        )?);
        wait_until_gone(&ctx.peers_dir, Duration::from_secs(10));
    }
    let pick = |f: fn(&Run) -> Duration| -> Vec<Duration> { done.iter().map(f).collect() };
    let row = |table: &mut Table, label: &str, times: Vec<Duration>| {
        let min = times.iter().min().copied().unwrap_or_default();
        let max = times.iter().max().copied().unwrap_or_default();
        let median = report::median(&times).unwrap_or_default();
        table.row(vec![
            label.into(),
            report::ms(median),
            report::ms(min),
            report::ms(max),
        ]);
        median
    };
    let first_byte = row(
        table,
        "launch → first byte on stdout",
        pick(|r| r.first_byte),
    );
    row(table, "launch → exit", pick(|r| r.exit));
    let deferred: Vec<usize> = done.iter().map(|r| r.deferred).collect();
    let left: usize = done.iter().map(|r| r.left).sum();
    let listed = done.iter().map(|r| r.listed).max().unwrap_or(0);
    table.note(format!(
        "{} servers configured ({}), {cached} listed by the warm-up `mcpr tools --wait` and \
         cached; in the timed runs {listed} listed, of them {} offered from the cache while \
         still connecting (per run: {deferred:?}); server processes alive after `mcpr` exited: \
         {left} in {runs} runs.",
        servers.len(),
        servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        deferred.iter().max().unwrap_or(&0),
    ));
    table.note(format!(
        "Median of {runs} runs of `mcpr --strict-config --config FILE tools` with an empty HOME \
         whose tool cache the warm-up filled; the bench waits until every server process is \
         gone before the next run. Node and Python servers start with dummy credentials."
    ));
    Ok(first_byte)
}

/// One run of `command`: first byte and exit, timed from the spawn.
fn time_once(command: &mut Command, peers: &Path, bound: Duration) -> Result<Run, String> {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut group = proc::spawn(command).map_err(|e| format!("spawn mcpr: {e}"))?;
    let watchdog = proc::Watchdog::new(group.pgid(), bound);
    let mut stdout = group.child().stdout.take().ok_or("no stdout")?;
    let stderr = group.child().stderr.take();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    let mut bytes = vec![0u8; 1];
    let first = stdout.read(&mut bytes).map_err(|e| e.to_string())?;
    let first_byte = started.elapsed();
    let mut rest = Vec::new();
    let _ = stdout.read_to_end(&mut rest);
    let status = group.wait().map_err(|e| e.to_string())?;
    let exit = started.elapsed();
    let left = server_processes(peers);
    if watchdog.disarm() {
        return Err(format!("mcpr tools: no exit within {} s", bound.as_secs()));
    }
    let stderr = errors.join().unwrap_or_default();
    if first == 0 {
        return Err(format!(
            "mcpr tools printed nothing ({status}): {}",
            proc::clip(&stderr, 160)
        ));
    }
    bytes.truncate(first);
    bytes.extend(rest);
    let listing = String::from_utf8_lossy(&bytes);
    let headers: Vec<&str> = listing.lines().filter(|l| !l.starts_with(' ')).collect();
    Ok(Run {
        first_byte,
        exit,
        left,
        deferred: headers.iter().filter(|l| l.contains("cached")).count(),
        listed: headers.len(),
    })
}

/// How many processes run a program from under `peers` (the real servers), from `/proc`.
fn server_processes(peers: &Path) -> usize {
    let needle = peers.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(&needle))
        .count()
}

/// Wait (at most `bound`) until no server process is left, so runs do not overlap.
fn wait_until_gone(peers: &Path, bound: Duration) {
    let deadline = Instant::now() + bound;
    while server_processes(peers) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let the machine settle after the servers' exit.
    std::thread::sleep(Duration::from_millis(500));
}
