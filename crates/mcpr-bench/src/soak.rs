//! The gateway soak (`BENCH_ONLY=soak`): the scenario of the CLI's soak test
//! (`mcp_testkit::soak`) run against the measured `mcpr`. 3,000 `tools/call`s go through
//! `mcpr serve` (stdio), 64 in flight at every moment, over six backends that crash, hang,
//! write garbage, answer HTTP 500, expire their sessions and cut their event streams. Reported:
//! how long it took, how the gateway's memory grew over it, and how every call ended; the
//! targets are that no call is lost and none fails but by an injected fault.
//!
//! The soak bounds its own waits (60 s for any one answer, 30 s for a backend to listen), so
//! it runs outside [`Ctx::within_step`](crate::Ctx::within_step).

use mcp_testkit::soak::{self, CALLS, IN_FLIGHT, Memory, SoakRun};

use crate::Ctx;
use crate::report::{self, Report, Table};

/// How many unexpected outcomes the notes spell out (the count is in the table).
const SHOWN: usize = 5;

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    eprintln!(
        "» soak: {CALLS} calls, {IN_FLIGHT} in flight, through `mcpr serve` over six failing backends"
    );
    let mut table = Table::new(
        "Gateway soak: `mcpr serve` (stdio) over six failing backends",
        &["figure", "value"],
    );
    match soak::run(&ctx.mcpr, &ctx.work) {
        Ok(run) => {
            rows(&mut table, &run);
            report.target(
                "soak: calls lost",
                "0",
                report::count(run.lost() as f64),
                Some(run.lost() == 0),
            );
            let unexpected = run.unexpected().len();
            report.target(
                "soak: non-injected failures",
                "0",
                report::count(unexpected as f64),
                Some(unexpected == 0),
            );
        }
        Err(why) => {
            let why = why.to_string();
            table.missing("soak", &why);
            for what in ["soak: calls lost", "soak: non-injected failures"] {
                report.target(what, "0", format!("n/a ({why})"), None);
            }
        }
    }
    table.note(
        "The backends: `crash` (stdio, exits on its 151st call and is started again), `hang` \
         (stdio, never answers; 1 s time limit, every 50th call), `garbage` (stdio, lines that \
         are not JSON before every answer), `http500` (its first 30 calls get HTTP 500), \
         `expire` (each session expires after 25 requests, calls take 20 ms) and `drop` (the \
         event streams of its first 20 calls are cut before the answer, then resumed). Calls \
         are raw JSON-RPC lines on the gateway's stdin, timed from the first call sent to the \
         last answer read. A replay is allowed only for a call refused (404) on an expired \
         session, sent once more on the new session. RSS from the gateway's `/proc/PID/status` (`VmRSS`, `VmHWM`), at \
         start once every backend's tools were listed; the backends are processes of their own.",
    );
    report.tables.push(table);
}

fn rows(table: &mut Table, run: &SoakRun) {
    let seconds = run.elapsed.as_secs_f64();
    let mut row = |what: &str, value: String| table.row(vec![what.to_owned(), value]);
    row("calls", report::count(run.calls.len() as f64));
    row("in flight", IN_FLIGHT.to_string());
    row("seconds", format!("{seconds:.2} s"));
    row(
        "calls/s",
        report::count(run.calls.len() as f64 / seconds.max(f64::EPSILON)),
    );
    row("gateway RSS at start", mib(run.memory_at_start));
    row("gateway RSS at the end", mib(run.memory_at_end));
    row(
        "RSS growth",
        match (run.memory_at_start, run.memory_at_end) {
            (Some(start), Some(end)) => format!(
                "{:+.1} MiB",
                (end.rss_kib as f64 - start.rss_kib as f64) / 1024.0
            ),
            _ => "n/a (no /proc)".into(),
        },
    );
    row(
        "gateway peak RSS (VmHWM)",
        run.memory_at_end.map_or("n/a (no /proc)".into(), |memory| {
            format!("{:.1} MiB", memory.peak_kib as f64 / 1024.0)
        }),
    );
    row("answered", report::count(run.answered() as f64));
    let injected = run.injected_by_backend();
    let by_backend: Vec<String> = injected
        .iter()
        .map(|(backend, count)| format!("{backend} {count}"))
        .collect();
    row(
        "injected failures",
        format!(
            "{} ({})",
            report::count(injected.values().sum::<usize>() as f64),
            by_backend.join(", ")
        ),
    );
    let unexpected = run.unexpected();
    row(
        "non-injected failures",
        report::count(unexpected.len() as f64),
    );
    row("lost (never answered)", report::count(run.lost() as f64));
    row(
        "replays (calls sent to an HTTP backend again)",
        report::count(run.replays() as f64),
    );

    if let Some(why) = &run.stalled {
        table.note(format!("The soak stopped early: {why}."));
    }
    let troubles = [
        ("Failed without an injected fault", &unexpected),
        ("Answered twice", &run.answered_twice),
        ("Lines answering no call", &run.strays),
    ];
    for (what, list) in troubles {
        if !list.is_empty() {
            let shown: Vec<&str> = list.iter().take(SHOWN).map(String::as_str).collect();
            table.note(format!(
                "{what} ({}): {}",
                list.len(),
                report::cell(&shown.join("; "))
            ));
        }
    }
}

/// `12.3 MiB` of resident memory, or why there is no figure.
fn mib(memory: Option<Memory>) -> String {
    memory.map_or("n/a (no /proc)".into(), |memory| {
        format!("{:.1} MiB", memory.rss_kib as f64 / 1024.0)
    })
}
