//! Section 1: client cost per call. Sequential and in-flight `echo` calls/s against `mcpr mock`
//! (a fast Rust server, so the client's own cost shows) and against server-everything (the
//! server is the bottleneck; for reference), for mcp-runtime, the TypeScript and Python SDKs,
//! and the hand-written pipe client (the physical limit).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use serde_json::json;

use crate::rates::{Rates, cpu_time};
use crate::report::{self, Report, Table};
use crate::scripts::{self, Server};
use crate::{Ctx, raw};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Raw,
    Runtime,
    RuntimeTask,
    RuntimeOneThread,
    TypeScript,
    Python,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Raw => "hand-written JSON-RPC over pipes (limit)",
            Kind::Runtime => "mcp-runtime (McpClient)",
            Kind::RuntimeTask => "mcp-runtime (McpClient), from a task on the multi-thread runtime",
            Kind::RuntimeOneThread => "mcp-runtime (McpClient), current-thread runtime",
            Kind::TypeScript => "TypeScript SDK",
            Kind::Python => "Python SDK",
        }
    }
}

/// The best of the rounds, or the first failure.
type Figure = Option<Result<Rates, String>>;

fn keep_best(figure: &mut Figure, new: Result<Rates, String>) {
    *figure = match (figure.take(), new) {
        (Some(Ok(old)), Ok(new)) => Some(Ok(Rates {
            seq: old.seq.max(new.seq),
            par: old.par.max(new.par),
            cpu_seq: old.cpu_seq.min(new.cpu_seq),
            cpu_par: old.cpu_par.min(new.cpu_par),
        })),
        (Some(Ok(old)), Err(_)) => Some(Ok(old)),
        (_, new) => Some(new),
    };
}

/// mcp-runtime's rates on one connection.
pub(crate) async fn runtime_rates(
    server: &Server,
    calls: usize,
    warmup: usize,
    in_flight: usize,
) -> Result<Rates, String> {
    let config = ServerConfig::stdio(server.command.clone(), server.args.clone());
    let client = McpClient::connect("bench", &config, &ConnectOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let client = Arc::new(client);
    let result = async {
        let args = json!({"message": "hello"}).as_object().cloned();
        for i in 0..warmup {
            let output = client
                .call_tool("echo", args.clone(), CallOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            if i == 0 && !output.text().contains("hello") {
                return Err(format!("unexpected echo answer: {}", output.text()));
            }
        }
        let cpu = cpu_time();
        let started = Instant::now();
        for _ in 0..calls {
            client
                .call_tool("echo", args.clone(), CallOptions::default())
                .await
                .map_err(|e| e.to_string())?;
        }
        let seq = started.elapsed();
        let cpu_seq = cpu_time() - cpu;

        let cpu = cpu_time();
        let started = Instant::now();
        let workers = (0..in_flight.min(calls)).map(|w| {
            let client = client.clone();
            let args = args.clone();
            tokio::spawn(async move {
                for _ in (w..calls).step_by(in_flight) {
                    client
                        .call_tool("echo", args.clone(), CallOptions::default())
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok::<(), String>(())
            })
        });
        for worker in futures::future::join_all(workers).await {
            worker.map_err(|e| e.to_string())??;
        }
        let par = started.elapsed();
        let cpu_par = cpu_time() - cpu;
        Ok(Rates::new(calls, seq, par, cpu_seq, cpu_par))
    }
    .await;
    client.close().await;
    result
}

fn measure(ctx: &Ctx, kind: Kind, server: &Server) -> Result<Rates, String> {
    let s = &ctx.settings;
    let job = || {
        json!({"mode": "calls", "server": server.json(), "calls": s.calls, "warmup": s.warmup,
               "in_flight": s.in_flight})
    };
    let from_json = |(value, _): (serde_json::Value, Duration)| -> Result<Rates, String> {
        let field = |name: &str| value[name].as_f64();
        match (
            field("seq"),
            field("par"),
            field("cpu_seq"),
            field("cpu_par"),
        ) {
            (Some(seq), Some(par), Some(cpu_seq), Some(cpu_par)) => Ok(Rates {
                seq,
                par,
                cpu_seq,
                cpu_par,
            }),
            _ => Err(format!("unexpected script result {value}")),
        }
    };
    match kind {
        Kind::Raw => raw::rates(
            &server.command,
            &server.args,
            s.calls,
            s.warmup,
            s.in_flight,
            s.step,
        ),
        Kind::Runtime => ctx.within_step(runtime_rates(server, s.calls, s.warmup, s.in_flight))?,
        Kind::RuntimeTask => {
            let (server, calls, warmup, in_flight) =
                (server.clone(), s.calls, s.warmup, s.in_flight);
            ctx.within_step_in_task(async move {
                runtime_rates(&server, calls, warmup, in_flight).await
            })?
        }
        Kind::RuntimeOneThread => {
            ctx.within_step_on_one_thread(runtime_rates(server, s.calls, s.warmup, s.in_flight))?
        }
        Kind::TypeScript => {
            let npm = ctx
                .peers
                .npm
                .as_ref()
                .map_err(|e| format!("npm peers: {e}"))?;
            scripts::typescript(&ctx.scripts, &npm.root, &job(), s.step).and_then(from_json)
        }
        Kind::Python => {
            let python = ctx
                .peers
                .python
                .as_ref()
                .map_err(|e| format!("Python SDK: {e}"))?;
            scripts::python(&ctx.scripts, python, &job(), s.step).and_then(from_json)
        }
    }
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let kinds = [
        Kind::Raw,
        Kind::Runtime,
        Kind::RuntimeTask,
        Kind::RuntimeOneThread,
        Kind::TypeScript,
        Kind::Python,
    ];
    let at = |wanted: Kind| kinds.iter().position(|kind| *kind == wanted).unwrap_or(0);
    let mock = ctx.mock(&[]);
    let everything = ctx.everything();
    // [kind][0 = mock, 1 = server-everything]
    let mut figures: Vec<[Figure; 2]> = kinds.iter().map(|_| [None, None]).collect();
    for round in 0..s.rounds {
        for (k, kind) in kinds.iter().enumerate() {
            eprintln!(
                "» client cost: {} vs mcpr mock (round {}/{})",
                kind.label(),
                round + 1,
                s.rounds
            );
            keep_best(&mut figures[k][0], measure(ctx, *kind, &mock));
            eprintln!("» client cost: {} vs server-everything", kind.label());
            let result = match &everything {
                Ok(server) => measure(ctx, *kind, server),
                Err(why) => Err(why.clone()),
            };
            keep_best(&mut figures[k][1], result);
        }
    }

    let limit = figures[at(Kind::Raw)][0].clone().and_then(Result::ok);
    let runtime = figures[at(Kind::Runtime)][0].clone().and_then(Result::ok);
    let one_thread = figures[at(Kind::RuntimeOneThread)][0]
        .clone()
        .and_then(Result::ok);
    let inf = s.in_flight;
    let mut table = Table::new(
        &format!(
            "1. Client cost per call: `echo` calls/s over stdio ({} calls, {inf} in flight)",
            s.calls
        ),
        &[
            "client",
            "`mcpr mock` sequential",
            "÷ limit",
            &format!("`mcpr mock` {inf} in flight"),
            "÷ limit",
            "client CPU per call (seq / in flight)",
            "mcp-runtime ÷ this (seq / in flight)",
            "server-everything sequential",
            &format!("server-everything {inf} in flight"),
        ],
    );
    for (k, kind) in kinds.iter().enumerate() {
        let mut cells = vec![kind.label().to_owned()];
        match &figures[k][0] {
            Some(Ok(r)) => {
                let vs_limit = |v: f64, l: f64| report::ratio(v / l);
                cells.push(report::count(r.seq));
                cells.push(limit.map_or("—".into(), |l| vs_limit(r.seq, l.seq)));
                cells.push(report::count(r.par));
                cells.push(limit.map_or("—".into(), |l| vs_limit(r.par, l.par)));
                cells.push(format!("{:.1} µs / {:.1} µs", r.cpu_seq, r.cpu_par));
                cells.push(runtime.map_or("—".into(), |rt| {
                    format!(
                        "{} / {}",
                        report::ratio(rt.seq / r.seq),
                        report::ratio(rt.par / r.par)
                    )
                }));
            }
            Some(Err(why)) => {
                cells.push(format!("n/a ({})", report::cell(why)));
                cells.extend(["—".to_owned(), "—".into(), "—".into(), "—".into()]);
            }
            None => cells.extend([
                "—".to_owned(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
            ]),
        }
        match &figures[k][1] {
            Some(Ok(r)) => {
                cells.push(report::count(r.seq));
                cells.push(report::count(r.par));
            }
            Some(Err(why)) => {
                cells.push(format!("n/a ({})", report::cell(why)));
                cells.push("—".into());
            }
            None => cells.extend(["—".to_owned(), "—".into()]),
        }
        table.row(cells);
    }
    table.note(format!(
        "Timed inside each client after connecting and {} warm-up calls; best of {} round(s). \
         `÷ limit` is calls/s relative to the hand-written client on the same server. \
         Client CPU is the user + system time of the client process alone (not the server) \
         divided by the calls: what each client costs, whatever bounds its throughput. \
         mcp-runtime runs three times: on the bench's multi-thread runtime, calling from the \
         main thread (`block_on`) while the connection's reader runs on a worker, so every \
         answer wakes another thread; from a task spawned on that runtime, as an agent's own \
         tasks call (the answer's wake-up runs the caller on the reader's worker); and on a \
         current-thread runtime, where the caller and the reader share one thread, as the \
         hand-written client and the SDKs do.",
        s.warmup, s.rounds
    ));
    report.tables.push(table);

    // Targets, judged on calls made from a task on the runtime: how an async agent calls. A
    // caller outside the runtime (`block_on` per call) pays a thread wake-up per answer on top,
    // shown next to it.
    let task = figures[at(Kind::RuntimeTask)][0]
        .clone()
        .and_then(Result::ok);
    let elsewhere = |l: &Rates| {
        [
            ("calling from outside the runtime (`block_on`)", runtime),
            ("on a current-thread runtime", one_thread),
        ]
        .into_iter()
        .filter_map(|(how, rates)| {
            rates.map(|r| {
                format!(
                    "; {how} {} ({:.1} µs, CPU {:.1} µs per call)",
                    report::ratio(l.seq / r.seq),
                    1e6 / r.seq,
                    r.cpu_seq
                )
            })
        })
        .collect::<String>()
    };
    match (task, limit) {
        (Some(task), Some(l)) => {
            report.target(
                "client cost vs hand-written limit, sequential (time per call)",
                "≤ 1.5×",
                format!(
                    "{} from a task on the runtime ({:.1} µs vs {:.1} µs per call){}",
                    report::ratio(l.seq / task.seq),
                    1e6 / task.seq,
                    1e6 / l.seq,
                    elsewhere(&l)
                ),
                Some(l.seq / task.seq <= 1.5),
            );
            report.target(
                "client CPU per sequential call",
                "≤ 25 µs",
                format!(
                    "{:.1} µs from a task on the runtime (the hand-written client: {:.1} µs)",
                    task.cpu_seq, l.cpu_seq
                ),
                Some(task.cpu_seq <= 25.0),
            );
        }
        _ => report.target(
            "client cost vs hand-written limit, sequential (time per call)",
            "≤ 1.5×",
            "not measured".into(),
            None,
        ),
    }
    let ts = figures[at(Kind::TypeScript)][0].clone();
    match (task, ts) {
        (Some(rt), Some(Ok(ts))) => report.target(
            "calls/s vs TypeScript SDK against `mcpr mock` (sequential; in flight)",
            "≥ 3×",
            format!(
                "{}; {} from a task on the runtime{}",
                report::ratio(rt.seq / ts.seq),
                report::ratio(rt.par / ts.par),
                runtime.map_or_else(String::new, |b| format!(
                    "; calling from outside the runtime (`block_on`) {}; {}",
                    report::ratio(b.seq / ts.seq),
                    report::ratio(b.par / ts.par)
                ))
            ),
            Some(rt.seq / ts.seq >= 3.0),
        ),
        (_, Some(Err(why))) => report.target(
            "calls/s vs TypeScript SDK against `mcpr mock` (sequential; in flight)",
            "≥ 3×",
            format!("not measured: {why}"),
            None,
        ),
        _ => report.target(
            "calls/s vs TypeScript SDK against `mcpr mock` (sequential; in flight)",
            "≥ 3×",
            "not measured".into(),
            None,
        ),
    }
}
