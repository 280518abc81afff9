//! Section 8: the HTTP gateway under concurrent sessions. `echo` on `mcpr mock --http`, reached
//! directly over streamable HTTP, through a do-nothing TCP relay (the floor of any process in
//! the middle, see `relay`), through a do-nothing HTTP proxy (the floor of any process that
//! reads HTTP, see `http_relay`), and through `mcpr serve --http`, by 1, 8 and 32 clients at once,
//! each with its own connection and session, calling one call after another. The paths take
//! turns, twice each (in order, then in reverse), so that drift in the machine's load falls on
//! all of them alike. With `BENCH_HTTP_OTEL=1` a fourth path is a gateway exporting its spans
//! and meters over OTLP to a loopback sink the bench starts (`otlp_sink`), and its added p50
//! against the gateway without export is reported.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::config::server_from_json;
use serde_json::json;

use crate::report::{self, Report, Table};
use crate::{Ctx, otlp_sink, proc};

/// Where each path is in the table.
const DIRECT: usize = 0;
const RELAY: usize = 1;
const HTTP_RELAY: usize = 2;
const GATEWAY: usize = 3;
/// The gateway exporting over OTLP (with `BENCH_HTTP_OTEL=1`).
const GATEWAY_OTEL: usize = 4;

/// One path's figures at one number of sessions.
#[derive(Default)]
struct Figures {
    times: Vec<Duration>,
    calls: usize,
    took: Duration,
}

impl Figures {
    fn rate(&self) -> f64 {
        self.calls as f64 / self.took.as_secs_f64().max(f64::EPSILON)
    }

    fn percentile(&self, per_cent: usize) -> Duration {
        let i = (self.times.len() * per_cent / 100).min(self.times.len().saturating_sub(1));
        self.times.get(i).copied().unwrap_or_default()
    }
}

/// Start `command` and wait (bounded) for the `listening on URL` line it prints on stderr.
fn listening(command: &mut Command, what: &str) -> Result<(proc::Group, String), String> {
    let mut group = proc::spawn(command.stdin(Stdio::null()).stderr(Stdio::piped()))
        .map_err(|e| format!("{what}: {e}"))?;
    let stderr = group
        .child()
        .stderr
        .take()
        .ok_or_else(|| format!("{what}: no stderr"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| format!("{what} printed no `listening on` line"))?;
    Ok((group, url))
}

/// `sessions` clients of `url`, connected and warmed up.
async fn connect(url: &str, sessions: usize, warmup: usize) -> Result<Vec<Arc<McpClient>>, String> {
    let config = server_from_json("bench", &json!({ "url": url })).map_err(|e| e.to_string())?;
    let mut clients = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let client = McpClient::connect("bench", &config, &ConnectOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        clients.push(Arc::new(client));
    }
    let tool = tool_name(&clients[0]).await?;
    for client in &clients {
        for _ in 0..warmup.div_ceil(sessions) {
            echo(client, &tool).await?;
        }
    }
    Ok(clients)
}

/// The mock's `echo`, under the gateway's name when reached through it.
async fn tool_name(client: &McpClient) -> Result<String, String> {
    client
        .list_tools()
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|t| t.name.to_string())
        .find(|name| name.ends_with("echo"))
        .ok_or_else(|| "no echo tool".to_owned())
}

async fn echo(client: &McpClient, tool: &str) -> Result<(), String> {
    let arguments = json!({"message": "hello"}).as_object().cloned();
    client
        .call_tool(tool, arguments, CallOptions::default())
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Every client calling one call after another until `window` has passed.
async fn run_window(clients: &[Arc<McpClient>], window: Duration) -> Result<Figures, String> {
    let tool = tool_name(&clients[0]).await?;
    let started = Instant::now();
    let deadline = started + window;
    let workers = clients.iter().map(|client| {
        let client = client.clone();
        let tool = tool.clone();
        tokio::spawn(async move {
            let mut times = Vec::new();
            while Instant::now() < deadline {
                let call = Instant::now();
                echo(&client, &tool).await?;
                times.push(call.elapsed());
            }
            Ok::<Vec<Duration>, String>(times)
        })
    });
    let mut figures = Figures::default();
    for worker in futures::future::join_all(workers).await {
        figures.times.extend(worker.map_err(|e| e.to_string())??);
    }
    figures.took = started.elapsed();
    figures.calls = figures.times.len();
    Ok(figures)
}

/// Each path at each number of sessions; `urls` in the order of [`DIRECT`], [`RELAY`],
/// [`HTTP_RELAY`] and [`GATEWAY`].
async fn measure(
    urls: Vec<String>,
    sessions: Vec<usize>,
    warmup: usize,
    window: Duration,
) -> Result<Vec<Vec<Figures>>, String> {
    let mut all = Vec::new();
    for n in sessions {
        eprintln!("» http: {n} sessions");
        let mut paths = Vec::new();
        for url in &urls {
            paths.push(connect(url, n, warmup).await?);
        }
        let mut figures: Vec<Figures> = urls.iter().map(|_| Figures::default()).collect();
        for i in (0..paths.len()).chain((0..paths.len()).rev()) {
            let run = run_window(&paths[i], window).await?;
            let kept = &mut figures[i];
            kept.times.extend(run.times);
            kept.calls += run.calls;
            kept.took += run.took;
        }
        for clients in paths {
            for client in clients {
                client.close().await;
            }
        }
        for kept in &mut figures {
            kept.times.sort();
        }
        all.push(figures);
    }
    Ok(all)
}

pub(crate) fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let mut table = Table::new(
        "8. HTTP gateway: `echo` on `mcpr mock --http`, by concurrent sessions",
        &[
            "path",
            "sessions",
            "p50 per call",
            "p99 per call",
            "calls/s",
            "vs direct",
        ],
    );
    let started = start_paths(ctx);
    let (_processes, urls, sink) = match started {
        Ok(started) => started,
        Err(why) => {
            table.missing("HTTP paths", &why);
            report.tables.push(table);
            return;
        }
    };
    let labels = [
        "direct (McpClient → mcpr mock --http)",
        "through a do-nothing TCP relay",
        "through a do-nothing HTTP proxy (hyper, one thread)",
        "through the gateway (McpClient → mcpr serve --http → mcpr mock --http)",
        "through the gateway exporting spans and meters over OTLP (a loopback sink)",
    ];
    let window = s.in_flight_window * 2;
    let measured = ctx
        .within_step_in_task(measure(
            urls.clone(),
            s.http_sessions.clone(),
            s.warmup,
            window,
        ))
        .and_then(|m| m);
    let measured = match measured {
        Ok(measured) => measured,
        Err(why) => {
            table.missing("HTTP paths", &why);
            report.tables.push(table);
            return;
        }
    };
    for (&n, figures) in s.http_sessions.iter().zip(&measured) {
        let direct_rate = figures[DIRECT].rate();
        for (label, path) in labels.iter().zip(figures) {
            table.row(vec![
                (*label).to_owned(),
                n.to_string(),
                report::us(path.percentile(50)),
                report::us(path.percentile(99)),
                report::count(path.rate()),
                report::ratio(path.rate() / direct_rate),
            ]);
        }
        if n == 1 {
            let added = |i: usize| {
                (figures[i].percentile(50).as_secs_f64()
                    - figures[DIRECT].percentile(50).as_secs_f64())
                    * 1e6
            };
            report.target(
                "HTTP gateway: added p50 at 1 session",
                "≤ a do-nothing TCP relay's, same run",
                format!(
                    "{:+.1} µs (the relay: {:+.1} µs; a do-nothing HTTP proxy: {:+.1} µs)",
                    added(GATEWAY),
                    added(RELAY),
                    added(HTTP_RELAY)
                ),
                Some(added(GATEWAY) <= added(RELAY)),
            );
        }
        if n == 1 && figures.len() > GATEWAY_OTEL {
            let on = figures[GATEWAY_OTEL].percentile(50).as_secs_f64();
            let off = figures[GATEWAY].percentile(50).as_secs_f64();
            report.target(
                "HTTP gateway: added p50 with OTLP export on, at 1 session",
                "small against the gateway's own added p50",
                format!(
                    "{:+.1} µs ({:.1} µs on, {:.1} µs off)",
                    (on - off) * 1e6,
                    on * 1e6,
                    off * 1e6
                ),
                None,
            );
        }
        if n == 32 {
            let ratio = figures[GATEWAY].rate() / direct_rate;
            report.target(
                "HTTP gateway: calls/s at 32 sessions vs direct",
                "≥ 0.6×",
                format!(
                    "{} ({} vs {} calls/s; the relay {}, a do-nothing HTTP proxy {})",
                    report::ratio(ratio),
                    report::count(figures[GATEWAY].rate()),
                    report::count(direct_rate),
                    report::ratio(figures[RELAY].rate() / direct_rate),
                    report::ratio(figures[HTTP_RELAY].rate() / direct_rate)
                ),
                Some(ratio >= 0.6),
            );
        }
    }
    table.note(format!(
        "Each session is a client of its own (its own connection, and its own session where \
         the era has sessions) calling one call after another for {} ms, twice per path (in \
         order, then in reverse); calls/s counts every session's calls. The gateway runs with \
         an empty HOME and `--strict-config --config FILE` naming the mock by URL; the relay \
         (`mcpr-bench --tcp-relay-target`) copies bytes between each accepted connection and \
         the mock, one thread per direction, and parses nothing; the HTTP proxy \
         (`mcpr-bench --http-relay-target`) reads each request's and answer's HTTP head with \
         hyper and passes them and their bodies on unread, over one connection to the mock per \
         front connection, on one thread as the gateway runs.",
        window.as_millis()
    ));
    if let Some(sink) = &sink {
        let (requests, bytes) = sink.received();
        table.note(format!(
            "The exporting gateway ran with `OTEL_EXPORTER_OTLP_ENDPOINT` set to a loopback sink \
             that answers every export at once, spans sent in batches every 200 ms and \
             meters every second (`OTEL_BSP_SCHEDULE_DELAY`, `OTEL_METRIC_EXPORT_INTERVAL`); \
             it received {requests} export requests, {bytes} bytes in all."
        ));
    }
    if !s.http_mock_flags.is_empty() {
        table.note(format!(
            "The mock ran with `{}`.",
            s.http_mock_flags.join(" ")
        ));
    }
    report.tables.push(table);
}

/// The processes of the paths, their URLs, and the OTLP sink when there is one.
type Paths = (Vec<proc::Group>, Vec<String>, Option<otlp_sink::Sink>);

/// Start the mock, the relays in front of it and the gateway over it (and, with
/// `BENCH_HTTP_OTEL=1`, an exporting gateway and its sink); their URLs in the order of
/// [`DIRECT`], [`RELAY`], [`HTTP_RELAY`], [`GATEWAY`] and [`GATEWAY_OTEL`].
fn start_paths(ctx: &Ctx) -> Result<Paths, String> {
    let mut mock = Command::new(&ctx.mcpr);
    mock.args(["mock", "--http", "127.0.0.1:0"])
        .args(&ctx.settings.http_mock_flags);
    let (mock, mock_url) = listening(&mut mock, "mcpr mock --http")?;
    let address = mock_url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .ok_or_else(|| format!("unexpected mock URL {mock_url}"))?
        .to_owned();
    let mut relay = Command::new(&ctx.self_exe);
    relay.args(["--tcp-relay-target", &address]);
    let (relay, relay_url) = listening(&mut relay, "the TCP relay")?;
    let mut http_relay = Command::new(&ctx.self_exe);
    http_relay.args(["--http-relay-target", &address]);
    let (http_relay, http_relay_url) = listening(&mut http_relay, "the HTTP proxy")?;
    let config_file = ctx.work.join("gateway-http.json");
    std::fs::write(
        &config_file,
        json!({"mcpServers": {"mock": {"url": mock_url}}}).to_string(),
    )
    .map_err(|e| format!("write config: {e}"))?;
    let gateway_command = || {
        let mut gateway = Command::new(&ctx.mcpr);
        gateway
            .arg("--strict-config")
            .arg("--config")
            .arg(&config_file)
            .args(["serve", "--http", "127.0.0.1:0"])
            .current_dir(ctx.project_dir());
        crate::isolate(&mut gateway, &ctx.isolated_env());
        gateway
    };
    let (gateway, gateway_url) = listening(&mut gateway_command(), "mcpr serve --http")?;
    let mut processes = vec![mock, relay, http_relay, gateway];
    let mut urls = vec![
        mock_url,
        relay_url + "/mcp",
        http_relay_url + "/mcp",
        gateway_url,
    ];
    let mut sink = None;
    if ctx.settings.http_otel {
        let started = otlp_sink::Sink::start().map_err(|e| format!("the OTLP sink: {e}"))?;
        let mut exporting = gateway_command();
        // Exports while the paths are measured, not only after.
        exporting
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &started.url)
            .env("OTEL_BSP_SCHEDULE_DELAY", "200")
            .env("OTEL_METRIC_EXPORT_INTERVAL", "1000");
        let (exporting, exporting_url) =
            listening(&mut exporting, "mcpr serve --http (exporting)")?;
        processes.push(exporting);
        urls.push(exporting_url);
        sink = Some(started);
    }
    Ok((processes, urls, sink))
}

/// `mcpr-bench --http-calls-target URL CALLS [SESSIONS]`: `SESSIONS` clients (1 unless given)
/// of the streamable HTTP server at `URL` each call its `echo` `CALLS` times, one call after
/// another, and the p50 and calls/s are printed. For profiling a gateway started by hand
/// (`perf record -p`, `valgrind --tool=callgrind`), with the bench's own client.
pub(crate) fn calls_target(args: &[String]) -> std::process::ExitCode {
    let (Some(url), Some(Ok(calls))) = (args.first(), args.get(1).map(|n| n.parse::<usize>()))
    else {
        eprintln!("usage: mcpr-bench --http-calls-target URL CALLS [SESSIONS]");
        return std::process::ExitCode::from(2);
    };
    let sessions = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1usize);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let run = runtime.block_on(async {
        let clients = connect(url, sessions, 0).await?;
        let tool = tool_name(&clients[0]).await?;
        let started = Instant::now();
        let workers = clients.iter().map(|client| {
            let (client, tool) = (client.clone(), tool.clone());
            async move {
                let mut times = Vec::with_capacity(calls);
                for _ in 0..calls {
                    let call = Instant::now();
                    echo(&client, &tool).await?;
                    times.push(call.elapsed());
                }
                Ok::<_, String>(times)
            }
        });
        let mut figures = Figures::default();
        for times in futures::future::join_all(workers).await {
            figures.times.extend(times?);
        }
        figures.took = started.elapsed();
        figures.calls = figures.times.len();
        figures.times.sort();
        for client in clients {
            client.close().await;
        }
        Ok::<_, String>(figures)
    });
    match run {
        Ok(figures) => {
            println!(
                "{} calls, p50 {:.1} µs, p99 {:.1} µs, {:.0} calls/s",
                figures.calls,
                figures.percentile(50).as_secs_f64() * 1e6,
                figures.percentile(99).as_secs_f64() * 1e6,
                figures.rate()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("{why}");
            std::process::ExitCode::FAILURE
        }
    }
}
