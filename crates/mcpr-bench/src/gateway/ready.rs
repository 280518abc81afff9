//! Section 4, continued: how soon each path serves its first call. From the client's launch of
//! the process to the first `echo` answered through it (the connection's handshake, the
//! gateway's own connection to its server, the first call), each path in turn so that the
//! machine's drift falls on all alike, with no tool cache: a sub-agent that starts a gateway
//! waits this long for its first tool.

use std::time::{Duration, Instant};

use mcp_runtime::config::ServerConfig;

use super::Path;
use crate::Ctx;
use crate::report::{self, Report, Table};

/// Launches of each path.
const LAUNCHES: usize = 7;

/// Launch → first `echo` answered, once.
async fn first_call(config: &ServerConfig, tool: Option<&str>) -> Result<Duration, String> {
    let started = Instant::now();
    let path = Path::open(config, tool, 1).await?;
    let ready = started.elapsed();
    path.client.close().await;
    Ok(ready)
}

/// Each path's launches, in the order of `paths` (its config, and the tool to call when the
/// path does not rename it).
async fn launches(
    paths: Vec<(Result<ServerConfig, String>, Option<String>)>,
) -> Vec<Result<Vec<Duration>, String>> {
    let mut times: Vec<Result<Vec<Duration>, String>> = paths
        .iter()
        .map(|(config, _)| config.clone().map(|_| Vec::new()))
        .collect();
    for _ in 0..LAUNCHES {
        for ((config, tool), times) in paths.iter().zip(times.iter_mut()) {
            let (Ok(config), Ok(launched)) = (config, times.as_mut()) else {
                continue;
            };
            match first_call(config, tool.as_deref()).await {
                Ok(ready) => launched.push(ready),
                Err(e) => *times = Err(e),
            }
        }
    }
    times
}

pub(super) fn run(
    ctx: &Ctx,
    report: &mut Report,
    paths: Vec<(&str, Result<ServerConfig, String>, Option<&str>)>,
) {
    let mut table = Table::new(
        &format!("4c. Gateway: launch → first `echo` answered, median of {LAUNCHES}"),
        &["path", "median", "fastest", "slowest", "added (median)"],
    );
    eprintln!("» gateway: first call after launch");
    let owned = paths
        .iter()
        .map(|(_, config, tool)| (config.clone(), tool.map(str::to_owned)))
        .collect();
    let measured = ctx
        .within_step_in_task(launches(owned))
        .unwrap_or_else(|why| paths.iter().map(|_| Err(why.clone())).collect());
    let mut direct = None;
    for (i, ((label, _, _), result)) in paths.iter().zip(measured).enumerate() {
        match result {
            Ok(mut times) if !times.is_empty() => {
                times.sort();
                let median = times[times.len() / 2];
                let added = direct.map_or_else(
                    || "—".to_owned(),
                    |direct: Duration| {
                        format!(
                            "{:+.1} ms",
                            (median.as_secs_f64() - direct.as_secs_f64()) * 1e3
                        )
                    },
                );
                if i == super::DIRECT {
                    direct = Some(median);
                }
                table.row(vec![
                    (*label).to_owned(),
                    report::ms(median),
                    report::ms(times[0]),
                    report::ms(times[times.len() - 1]),
                    added,
                ]);
            }
            Ok(_) => table.missing(label, "not launched"),
            Err(why) => table.missing(label, &why),
        }
    }
    table.note(
        "Each launch spawns the path's process (and its server) with an empty HOME, so no \
         tool cache; the time ends when the first `echo` call's answer arrives. `added` is \
         over the server launched directly.",
    );
    report.tables.push(table);
}
