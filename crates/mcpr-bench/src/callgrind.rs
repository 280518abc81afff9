//! Section 6: the hot path in instructions. `valgrind --tool=callgrind` runs this binary in a
//! small target mode (`--callgrind-target runtime|raw MCPR CALLS`) that connects to `mcpr mock`,
//! makes a few warm-up calls and then CALLS `echo` calls. Each target runs twice, with 0 and
//! with CALLS calls: the difference is the cost of the calls alone (connect, warm-up and
//! shutdown cancel out). Only the client process is measured; the server runs natively.

use std::process::{Command, ExitCode};
use std::time::Duration;

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use serde_json::json;

use crate::report::{self, Report, Table};
use crate::{Ctx, proc, raw};

const WARMUP: usize = 20;

/// `--callgrind-target runtime|raw MCPR CALLS`.
pub(crate) fn target(args: &[String]) -> ExitCode {
    let [kind, mcpr, calls] = args else {
        eprintln!("usage: mcpr-bench --callgrind-target runtime|raw MCPR CALLS");
        return ExitCode::from(2);
    };
    let calls: usize = calls.parse().unwrap_or(1000);
    let result = match kind.as_str() {
        "raw" => raw::RawClient::connect(mcpr, &["mock".to_owned()]).and_then(|mut client| {
            for _ in 0..WARMUP {
                client.checked_call()?;
            }
            client.calls(calls, 1)?;
            client.close(Duration::from_secs(10));
            Ok(())
        }),
        "runtime" => {
            // One thread: the count is then the client's own work, not scheduler spinning.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            runtime.block_on(async {
                let config = ServerConfig::stdio(mcpr.as_str(), ["mock"]);
                let client = McpClient::connect("bench", &config, &ConnectOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let args = json!({"message": "hello"}).as_object().cloned();
                let mut result = Ok(());
                for _ in 0..WARMUP + calls {
                    if let Err(e) = client
                        .call_tool("echo", args.clone(), CallOptions::default())
                        .await
                    {
                        result = Err(e.to_string());
                        break;
                    }
                }
                client.close().await;
                result
            })
        }
        other => Err(format!("unknown target {other}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("callgrind target: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Instructions of one run of a target under callgrind.
fn collected(ctx: &Ctx, kind: &str, calls: usize) -> Result<u64, String> {
    // One file per process (`%p`): a forked watchdog dumps its own.
    let out = ctx.work.join(format!("callgrind.{kind}.{calls}.%p.out"));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&ctx.self_exe)
        .args(["--callgrind-target", kind])
        .arg(&ctx.mcpr)
        .arg(calls.to_string());
    let outcome = proc::run_bounded(&mut command, ctx.settings.step)
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    if !outcome.success() {
        return Err(outcome.failure("valgrind"));
    }
    // `==PID== Collected : N`, of the process valgrind started: the library forks a watchdog
    // when the first server starts, which valgrind follows and which reports a count of its own
    // (the host's count at the fork, and then its own).
    let pid_of = |line: &str| {
        line.strip_prefix("==")
            .and_then(|rest| rest.split_once("=="))
            .map(|(pid, _)| pid.to_owned())
    };
    let first = outcome.stderr.lines().find_map(pid_of);
    outcome
        .stderr
        .lines()
        .filter(|l| first.is_some() && pid_of(l) == first)
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, n)| n.trim().to_owned())
        })
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| "no `Collected :` line in valgrind's output".into())
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let calls = ctx.settings.callgrind_calls;
    let mut table = Table::new(
        &format!("6. Hot path: instructions for {calls} sequential `echo` calls (callgrind)"),
        &[
            "client",
            &format!("total, run with {calls} calls"),
            "baseline (connect, warm-up, close)",
            "per call",
            "÷ limit",
        ],
    );
    let valgrind = crate::machine::version_of("valgrind", &["--version"]);
    if !valgrind.starts_with("valgrind") {
        table.missing("mcp-runtime", &format!("valgrind is missing: {valgrind}"));
        report.tables.push(table);
        return;
    }
    let mut per_call = Vec::new();
    for (kind, label) in [
        ("raw", "hand-written JSON-RPC over pipes (limit)"),
        ("runtime", "mcp-runtime (McpClient, current-thread runtime)"),
    ] {
        eprintln!("» callgrind: {label}");
        let result = collected(ctx, kind, 0)
            .and_then(|base| collected(ctx, kind, calls).map(|total| (base, total)));
        match result {
            Ok((base, total)) => {
                let per = total.saturating_sub(base) as f64 / calls as f64;
                let vs = per_call
                    .first()
                    .map(|limit: &f64| report::ratio(per / limit))
                    .unwrap_or_else(|| "1.00×".into());
                per_call.push(per);
                table.row(vec![
                    label.into(),
                    report::count(total as f64),
                    report::count(base as f64),
                    report::count(per),
                    vs,
                ]);
            }
            Err(why) => table.missing(label, &why),
        }
    }
    table.note(format!(
        "{valgrind}. Per call = (instructions with {calls} calls − instructions with 0 calls) / \
         {calls}, client process only (the `mcpr mock` server is not traced); {WARMUP} warm-up \
         calls in both runs. Callgrind counts user-space instructions only: the hand-written \
         client spends its time in system calls, so this ratio is far larger than the time ratio \
         of section 1."
    ));
    report.tables.push(table);
}
