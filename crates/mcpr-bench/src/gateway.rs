//! Section 4: the gateway. Per-call latency of `echo` on `mcpr mock`, direct versus through
//! `mcpr serve` (stdio), both driven by mcp-runtime's client; then the gateway process's own
//! cost (see `cost`).

mod cost;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::config::{ServerConfig, server_from_json};
use serde_json::json;

use crate::report::{self, Report, Table};
use crate::{Ctx, proc};

/// Whether this `mcpr` has the `serve` command.
fn has_serve(ctx: &Ctx) -> bool {
    let mut command = std::process::Command::new(&ctx.mcpr);
    command.arg("--help");
    proc::run_bounded(&mut command, Duration::from_secs(20)).is_ok_and(|outcome| {
        outcome
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with("serve "))
    })
}

/// Per-call latencies (sequential) and in-flight calls/s of `tool` through `config`.
async fn latencies(
    config: &ServerConfig,
    tool: Option<&str>,
    calls: usize,
    warmup: usize,
    in_flight: usize,
) -> Result<(Vec<Duration>, f64), String> {
    let client = McpClient::connect("bench", config, &ConnectOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let client = Arc::new(client);
    let result = async {
        let tool = match tool {
            Some(tool) => tool.to_owned(),
            // Through the gateway: the mock's echo under its gateway name.
            None => client
                .list_tools()
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|t| t.name.to_string())
                .find(|name| name.ends_with("echo"))
                .ok_or("the gateway lists no echo tool")?,
        };
        let args = json!({"message": "hello"}).as_object().cloned();
        for i in 0..warmup {
            let output = client
                .call_tool(&tool, args.clone(), CallOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            if i == 0 && !output.text().contains("hello") {
                return Err(format!("unexpected echo answer: {}", output.text()));
            }
        }
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            client
                .call_tool(&tool, args.clone(), CallOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            times.push(started.elapsed());
        }
        let started = Instant::now();
        let workers = (0..in_flight.min(calls)).map(|w| {
            let client = client.clone();
            let args = args.clone();
            let tool = tool.clone();
            tokio::spawn(async move {
                for _ in (w..calls).step_by(in_flight) {
                    client
                        .call_tool(&tool, args.clone(), CallOptions::default())
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok::<(), String>(())
            })
        });
        for worker in futures::future::join_all(workers).await {
            worker.map_err(|e| e.to_string())??;
        }
        let rate = calls as f64 / started.elapsed().as_secs_f64();
        Ok((times, rate))
    }
    .await;
    client.close().await;
    result
}

pub fn run(ctx: &Ctx, report: &mut Report) {
    let s = &ctx.settings;
    let inf = s.in_flight;
    let mut table = Table::new(
        &format!(
            "4. Gateway: `echo` on `mcpr mock`, direct vs through `mcpr serve` (stdio), {} calls",
            s.gateway_calls
        ),
        &[
            "path",
            "p50 per call",
            "mean per call",
            "p99 per call",
            &format!("{inf} in flight, calls/s"),
            "added per call (p50)",
        ],
    );
    eprintln!("» gateway: checking `mcpr serve`");
    if !has_serve(ctx) {
        table.missing("through `mcpr serve`", "mcpr serve not built");
        report.tables.push(table);
        return;
    }
    let config_file = ctx.work.join("gateway.json");
    let written = std::fs::write(
        &config_file,
        json!({"mcpServers": {"mock": {"command": ctx.mcpr, "args": ["mock"]}}}).to_string(),
    );
    if let Err(e) = written {
        table.missing("through `mcpr serve`", &format!("write config: {e}"));
        report.tables.push(table);
        return;
    }
    let direct = ServerConfig::stdio(ctx.mcpr.to_string_lossy(), ["mock"]);
    let env: serde_json::Map<String, serde_json::Value> = ctx
        .isolated_env()
        .into_iter()
        .map(|(k, v)| (k, json!(v)))
        .collect();
    let gateway = server_from_json(
        "gateway",
        &json!({
            "command": ctx.mcpr,
            "args": ["--strict-config", "--config", config_file, "serve"],
            "env": env,
            "cwd": ctx.project_dir(),
        }),
    );
    // The floor: a process in the middle that only copies bytes (see `relay`).
    let relay = ServerConfig::stdio(
        ctx.self_exe.to_string_lossy(),
        [
            "--relay-target".to_owned(),
            ctx.mcpr.to_string_lossy().into_owned(),
            "mock".to_owned(),
        ],
    );
    let paths: Vec<(&str, Result<ServerConfig, String>, Option<&str>)> = vec![
        ("direct (McpClient → mcpr mock)", Ok(direct), Some("echo")),
        (
            "through a do-nothing byte relay (McpClient → relay → mcpr mock)",
            Ok(relay),
            Some("echo"),
        ),
        (
            "through the gateway (McpClient → mcpr serve → mcpr mock)",
            gateway.map_err(|e| e.to_string()),
            None,
        ),
    ];
    let mut p50s = Vec::new();
    let mut rates = Vec::new();
    for (label, config, tool) in paths {
        eprintln!("» gateway: {label}");
        let result = config.and_then(|config| {
            ctx.runtime
                .block_on(async {
                    tokio::time::timeout(
                        s.step,
                        latencies(&config, tool, s.gateway_calls, s.warmup, s.in_flight),
                    )
                    .await
                })
                .map_err(|_| format!("no result within {} s", s.step.as_secs()))?
        });
        match result {
            Ok((mut times, rate)) => {
                times.sort();
                let p50 = times[times.len() / 2];
                let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
                let mean = times.iter().sum::<Duration>() / times.len() as u32;
                let added = p50s
                    .first()
                    .map(|direct: &Duration| {
                        format!(
                            "{:+.1} µs",
                            (p50.as_secs_f64() - direct.as_secs_f64()) * 1e6
                        )
                    })
                    .unwrap_or_else(|| "—".into());
                p50s.push(p50);
                rates.push(rate);
                table.row(vec![
                    label.into(),
                    report::us(p50),
                    report::us(mean),
                    report::us(p99),
                    report::count(rate),
                    added,
                ]);
            }
            Err(why) => table.missing(label, &why),
        }
    }
    table.note(
        "Sequential calls timed one by one after the warm-up; the gateway runs with an empty \
         HOME and `--strict-config --config FILE` naming one `mcpr mock`. The byte relay \
         (`mcpr-bench --relay-target`) is the floor of any process in the middle: it copies \
         each read on at once, one blocking thread per direction, and parses nothing.",
    );
    report.tables.push(table);
    if let ([direct, relay, through], [direct_rate, relay_rate, through_rate]) =
        (&p50s[..], &rates[..])
    {
        let added = (through.as_secs_f64() - direct.as_secs_f64()) * 1e6;
        let floor = (relay.as_secs_f64() - direct.as_secs_f64()) * 1e6;
        report.target(
            "gateway: added per sequential call (p50)",
            "≤ +50 µs",
            format!("{added:+.1} µs (a do-nothing byte relay: {floor:+.1} µs)"),
            Some(added <= 50.0),
        );
        let ratio = through_rate / direct_rate;
        report.target(
            &format!("gateway: {inf} in flight vs direct"),
            "≥ 0.8×",
            format!(
                "{} ({} vs {} calls/s; a do-nothing byte relay: {})",
                report::ratio(ratio),
                report::count(*through_rate),
                report::count(*direct_rate),
                report::ratio(relay_rate / direct_rate)
            ),
            Some(ratio >= 0.8),
        );
    }
    cost::run(ctx, report);
}
