//! Section 3: one-shot CLI. Wall time of one `echo` call on server-everything (stdio), process
//! launch to exit: `mcpr call`, inspector-cli and a TypeScript SDK script, next to the server's
//! own spawn-and-exit time (stdin closed at once) as the floor. Median of N interleaved runs.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::report::{self, Report, Table};
use crate::{Ctx, proc};

/// One command to time: how to build it and what its stdout must contain (shared with the
/// call-by-name section).
pub(crate) struct Case {
    pub(crate) label: String,
    build: Box<dyn Fn() -> Command>,
    expect: Option<&'static str>,
    pub(crate) times: Vec<Duration>,
    /// Phase times the command reported on stderr (the hand-written client's `phases:` line).
    phases: Vec<Phases>,
    pub(crate) problem: Option<String>,
}

/// When the hand-written one-shot client had the initialize answer, the call answer, the
/// result printed and the server stopped, from before its spawn.
type Phases = [Duration; 4];

/// The `phases: initialize=µs call=µs printed=µs stopped=µs` line of the hand-written client.
fn parse_phases(stderr: &str) -> Option<Phases> {
    let line = stderr.lines().find_map(|l| l.strip_prefix("phases: "))?;
    let mut values = line.split(' ').map(|pair| {
        let micros = pair.split_once('=')?.1.parse().ok()?;
        Some(Duration::from_micros(micros))
    });
    Some([
        values.next()??,
        values.next()??,
        values.next()??,
        values.next()??,
    ])
}

impl Case {
    pub(crate) fn new(
        label: &str,
        expect: Option<&'static str>,
        build: impl Fn() -> Command + 'static,
    ) -> Case {
        Case {
            label: label.to_owned(),
            build: Box::new(build),
            expect,
            times: Vec::new(),
            phases: Vec::new(),
            problem: None,
        }
    }

    pub(crate) fn run_once(&mut self, bound: Duration) {
        let mut command = (self.build)();
        let outcome = match proc::run_bounded(&mut command, bound) {
            Ok(outcome) => outcome,
            Err(e) => {
                self.problem = Some(format!("spawn: {e}"));
                return;
            }
        };
        if !outcome.success() {
            self.problem = Some(outcome.failure("exit"));
            return;
        }
        if let Some(expect) = self.expect
            && !outcome.stdout.contains(expect)
        {
            self.problem = Some(format!(
                "stdout lacks `{expect}`: {}",
                proc::clip(&outcome.stdout, 120)
            ));
            return;
        }
        self.times.push(outcome.elapsed);
        self.phases.extend(parse_phases(&outcome.stderr));
    }
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let mut table = Table::new(
        "3. One-shot CLI: one `echo` call, launch → exit (wall time)",
        &[
            "command",
            "median",
            "min",
            "over the floor",
            "÷ `mcpr call`",
        ],
    );
    let config = ctx.work.join("oneshot.json");
    let mut servers = serde_json::Map::new();
    servers.insert(
        "mock".into(),
        json!({"command": ctx.mcpr, "args": ["mock"]}),
    );
    let npm = ctx.peers.npm.clone();
    if let Ok(npm) = &npm {
        servers.insert(
            "everything".into(),
            json!({"command": "node", "args": [npm.everything, "stdio"]}),
        );
    }
    if let Err(e) = std::fs::write(&config, json!({ "mcpServers": servers }).to_string()) {
        table.missing("all", &format!("write {}: {e}", config.display()));
        report.tables.push(table);
        return;
    }

    let mcpr_call = |server: &'static str| {
        let ctx_mcpr = ctx.mcpr.clone();
        let config = config.clone();
        let env = ctx.isolated_env();
        let cwd = ctx.project_dir();
        move || {
            let mut command = Command::new(&ctx_mcpr);
            command
                .arg("--strict-config")
                .arg("--config")
                .arg(&config)
                .args(["call", server, "echo", r#"{"message": "hello"}"#])
                .current_dir(&cwd)
                .stdin(Stdio::null());
            crate::isolate(&mut command, &env);
            command
        }
    };

    // Each row: (case, floor index) — the floor a row is compared with.
    let mut cases: Vec<(Case, Option<usize>)> = Vec::new();
    let mut missing: Vec<(String, String)> = Vec::new();
    match &npm {
        Ok(npm) => {
            let everything = npm.everything.clone();
            cases.push((
                Case::new(
                    "floor: `node server-everything stdio`, stdin closed",
                    None,
                    move || {
                        let mut command = Command::new("node");
                        command.arg(&everything).arg("stdio").stdin(Stdio::null());
                        command
                    },
                ),
                None,
            ));
            cases.push((
                Case::new(
                    "`mcpr call` → server-everything",
                    Some("Echo: hello"),
                    mcpr_call("everything"),
                ),
                Some(0),
            ));
            cases.push((
                raw_case(
                    "hand-written one-shot client → server-everything",
                    &ctx.self_exe,
                    &[
                        "node".into(),
                        npm.everything.to_string_lossy().into_owned(),
                        "stdio".into(),
                    ],
                ),
                Some(0),
            ));
            let (inspector, everything) = (npm.inspector.clone(), npm.everything.clone());
            cases.push((
                Case::new(
                    "inspector-cli 1.0.3 → server-everything",
                    Some("Echo: hello"),
                    move || {
                        let mut command = Command::new("node");
                        command
                            .arg(&inspector)
                            .arg("--cli")
                            .arg("node")
                            .arg(&everything)
                            .arg("stdio")
                            .args(["--method", "tools/call", "--tool-name", "echo"])
                            .args(["--tool-arg", "message=hello"])
                            .stdin(Stdio::null());
                        // inspector-cli 1.0.3 reads its own package.json as `../package.json`
                        // relative to the working directory: run it from its `build` dir.
                        if let Some(build) = inspector.parent() {
                            command.current_dir(build);
                        }
                        command
                    },
                ),
                Some(0),
            ));
            let (script, root, everything) = (
                ctx.scripts.typescript.clone(),
                npm.root.clone(),
                npm.everything.clone(),
            );
            cases.push((
                Case::new(
                    "TypeScript SDK script → server-everything",
                    Some("Echo: hello"),
                    move || {
                        let job = json!({"mode": "oneshot",
                                         "server": {"command": "node", "args": [everything, "stdio"]}});
                        let mut command = Command::new("node");
                        command
                            .arg(&script)
                            .arg(&root)
                            .arg(job.to_string())
                            .stdin(Stdio::null());
                        command
                    },
                ),
                Some(0),
            ));
        }
        Err(why) => missing.push(("server-everything rows".into(), format!("npm peers: {why}"))),
    }
    let floor_mock = cases.len();
    let mcpr = ctx.mcpr.clone();
    cases.push((
        Case::new("floor: `mcpr mock`, stdin closed", None, move || {
            let mut command = Command::new(&mcpr);
            command.arg("mock").stdin(Stdio::null());
            command
        }),
        None,
    ));
    cases.push((
        Case::new(
            "`mcpr call` → `mcpr mock`",
            Some("hello"),
            mcpr_call("mock"),
        ),
        Some(floor_mock),
    ));
    cases.push((
        raw_case(
            "hand-written one-shot client → `mcpr mock`",
            &ctx.self_exe,
            &[ctx.mcpr.to_string_lossy().into_owned(), "mock".into()],
        ),
        Some(floor_mock),
    ));

    for run in 0..s.oneshot_runs {
        eprintln!("» one-shot CLI: run {}/{}", run + 1, s.oneshot_runs);
        for (case, _) in cases.iter_mut() {
            if case.problem.is_none() {
                case.run_once(s.step);
            }
        }
    }

    let medians: Vec<Option<Duration>> = cases
        .iter()
        .map(|(case, _)| {
            if case.problem.is_some() {
                None
            } else {
                report::median(&case.times)
            }
        })
        .collect();
    let mcpr_everything = cases
        .iter()
        .position(|(c, _)| c.label == "`mcpr call` → server-everything")
        .and_then(|i| medians[i]);
    for (i, (case, floor)) in cases.iter().enumerate() {
        let Some(median) = medians[i] else {
            table.missing(
                &case.label,
                case.problem.as_deref().unwrap_or("no successful run"),
            );
            continue;
        };
        let min = case.times.iter().min().copied().unwrap_or_default();
        let over = floor
            .and_then(|f| medians[f])
            .map(|f| {
                let delta = median.as_secs_f64() - f.as_secs_f64();
                format!("{:+.1} ms", delta * 1000.0)
            })
            .unwrap_or_else(|| "—".into());
        let vs = if case.label.contains("server-everything") && !case.label.starts_with("floor") {
            mcpr_everything.map_or("—".into(), |m| {
                report::ratio(median.as_secs_f64() / m.as_secs_f64())
            })
        } else {
            "—".into()
        };
        table.row(vec![
            case.label.clone(),
            report::ms(median),
            report::ms(min),
            over,
            vs,
        ]);
    }
    for (label, why) in &missing {
        table.missing(label, why);
    }
    table.note(format!(
        "Median of {} runs, interleaved. `mcpr` runs with an empty HOME and \
         `--strict-config --config FILE`; inspector-cli runs its installed bin with node (no \
         npx) as `cli.js --cli` (which starts its `index.js` in a second node process), from its \
         `build` directory (1.0.3 finds its own package.json relative to the working directory). The floor includes server-everything's own exit \
         delay after stdin closes.",
        s.oneshot_runs
    ));
    for (case, _) in &cases {
        if let Some(note) = phase_note(case) {
            table.note(note);
        }
    }
    report.tables.push(table);

    let floor = medians.first().copied().flatten().filter(|_| npm.is_ok());
    match (mcpr_everything, floor) {
        (Some(call), Some(floor)) => {
            let over = call.as_secs_f64() - floor.as_secs_f64();
            report.target(
                "one-shot `mcpr call` vs server-everything's own spawn-and-exit",
                "≤ floor + 50 ms",
                format!(
                    "{:+.1} ms ({} vs {})",
                    over * 1000.0,
                    report::ms(call),
                    report::ms(floor)
                ),
                Some(over <= 0.050),
            );
        }
        _ => report.target(
            "one-shot `mcpr call` vs server-everything's own spawn-and-exit",
            "≤ floor + 50 ms",
            "not measured".into(),
            None,
        ),
    }
}

/// The hand-written one-shot client (this binary re-executed with `--oneshot-target`) against
/// `server`: the least any client can take for one call, the server's own handshake included.
fn raw_case(label: &str, bench: &std::path::Path, server: &[String]) -> Case {
    let (bench, server) = (bench.to_owned(), server.to_vec());
    Case::new(label, Some("hello"), move || {
        let mut command = Command::new(&bench);
        command
            .arg("--oneshot-target")
            .args(&server)
            .stdin(Stdio::null());
        command
    })
}

/// The median phases of a case that reported them, as a note.
fn phase_note(case: &Case) -> Option<String> {
    if case.phases.is_empty() || case.problem.is_some() {
        return None;
    }
    let phase = |i: usize| {
        let times: Vec<Duration> = case.phases.iter().map(|p| p[i]).collect();
        report::median(&times).map_or("?".into(), report::ms)
    };
    Some(format!(
        "{}, median of each phase from before the spawn: initialize answered at {}, call \
         answered at {}, result printed at {}, server stopped (stdin closed, SIGTERM to its \
         group at once, reaped) at {}.",
        case.label,
        phase(0),
        phase(1),
        phase(2),
        phase(3)
    ))
}
