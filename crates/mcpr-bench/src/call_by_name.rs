//! Section `callname`: `mcpr call` by agent-facing name (`mcp_everything_echo`) against
//! `mcpr call SERVER TOOL`, with ten servers configured. The name is resolved from the configs
//! and the tool cache, so only the named tool's server starts, as with `SERVER TOOL`. One
//! untimed call of each first fills the tool cache (as any earlier `mcpr tools` would); then
//! median of N interleaved runs, launch to exit.

use std::process::{Command, Stdio};

use serde_json::json;

use crate::oneshot::Case;
use crate::report::{self, Report, Table};
use crate::{Ctx, proc};

/// The goal: a call by name costs at most this much more than one by server and tool.
const GOAL: f64 = 1.2;

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let mut table = Table::new(
        "Call by agent-facing name, 10 servers configured (wall time, launch → exit)",
        &["command", "median", "min", "÷ by server and tool"],
    );
    // The called server: server-everything when the npm peers are there, else the mock.
    let (called, arguments, expect) = match &ctx.peers.npm {
        Ok(npm) => (
            json!({"command": "node", "args": [npm.everything, "stdio"]}),
            r#"{"message": "hello"}"#,
            "Echo: hello",
        ),
        Err(_) => (
            json!({"command": ctx.mcpr, "args": ["mock"]}),
            r#"{"text": "hello"}"#,
            "hello",
        ),
    };
    let mut servers = serde_json::Map::new();
    servers.insert("everything".into(), called);
    for i in 1..10 {
        servers.insert(
            format!("other{i}"),
            json!({"command": ctx.mcpr, "args": ["mock"]}),
        );
    }
    let config = ctx.work.join("callname.json");
    if let Err(e) = std::fs::write(&config, json!({ "mcpServers": servers }).to_string()) {
        table.missing("all", &format!("write {}: {e}", config.display()));
        report.tables.push(table);
        return;
    }
    let call = |label: &str, words: &'static [&'static str]| {
        let (mcpr, config) = (ctx.mcpr.clone(), config.clone());
        let (env, cwd) = (ctx.isolated_env(), ctx.project_dir());
        Case::new(label, Some(expect), move || {
            let mut command = Command::new(&mcpr);
            command
                .arg("--strict-config")
                .arg("--config")
                .arg(&config)
                .arg("call")
                .args(words)
                .arg(arguments)
                .current_dir(&cwd)
                .stdin(Stdio::null());
            crate::isolate(&mut command, &env);
            command
        })
    };
    let mut cases = [
        call("`mcpr call everything echo`", &["everything", "echo"]),
        call("`mcpr call mcp_everything_echo`", &["mcp_everything_echo"]),
    ];
    // Untimed: fills the tool cache.
    for case in cases.iter_mut() {
        case.run_once(ctx.settings.step);
        case.times.clear();
    }
    let runs = ctx.settings.oneshot_runs;
    for run in 0..runs {
        eprintln!("» call by name: run {}/{runs}", run + 1);
        for case in cases.iter_mut().filter(|c| c.problem.is_none()) {
            case.run_once(ctx.settings.step);
        }
    }
    proc::kill_all();
    let medians: Vec<_> = cases
        .iter()
        .map(|c| {
            c.problem
                .is_none()
                .then(|| report::median(&c.times))
                .flatten()
        })
        .collect();
    for (case, median) in cases.iter().zip(&medians) {
        let Some(median) = median else {
            table.missing(&case.label, case.problem.as_deref().unwrap_or("no run"));
            continue;
        };
        let min = case.times.iter().min().copied().unwrap_or_default();
        let vs = medians[0].map_or("—".into(), |base| {
            report::ratio(median.as_secs_f64() / base.as_secs_f64())
        });
        table.row(vec![
            case.label.clone(),
            report::ms(*median),
            report::ms(min),
            vs,
        ]);
    }
    table.note(format!(
        "Median of {runs} runs, interleaved, after one untimed call of each (the tool cache \
         filled, so both check their arguments against the cached schema without listing tools). \
         The nine other servers are `mcpr mock`; none of them starts for either call."
    ));
    report.tables.push(table);
    let what = "`mcpr call <agent-facing name>` vs `mcpr call SERVER TOOL`, 10 servers";
    match (medians[0], medians[1]) {
        (Some(base), Some(by_name)) => {
            let ratio = by_name.as_secs_f64() / base.as_secs_f64();
            report.target(
                what,
                "≤ 1.2×",
                format!(
                    "{} ({} vs {})",
                    report::ratio(ratio),
                    report::ms(by_name),
                    report::ms(base)
                ),
                Some(ratio <= GOAL),
            );
        }
        _ => report.target(what, "≤ 1.2×", "not measured".into(), None),
    }
}
