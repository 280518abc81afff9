//! `mcpr status`: start every configured server and report how each one is doing.

use mcp_runtime::config::{Discovery, ServerState};
use mcp_runtime::fsutil::display_path;
use mcp_runtime::manager::ServerReport;

use crate::advice::Advise;
use crate::connect::{Progress, StartOptions, start};
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::term;

/// Arguments of `mcpr status`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// Report at the start-up gate instead of waiting for every server to settle.
    #[arg(long)]
    pub no_wait: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Say nothing but the table and its servers' errors: no connection lines, no problems of
    /// other servers' configs.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Exit 3 when any server failed (by default `status` exits 0 while one server answered;
    /// each failure is in the table and in the JSON's `error`).
    #[arg(long)]
    pub strict: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: crate::inline::InlineArgs,
}

pub(crate) async fn run(global: &GlobalArgs, args: StatusArgs) -> Outcome {
    let discovery = crate::inline::discover_some(global, &args.inline)?;
    let invalid = invalid_servers(&discovery);
    let options = StartOptions {
        progress: if args.json || args.quiet {
            Progress::Quiet
        } else {
            Progress::Show
        },
        wait: !args.no_wait,
        reconnect: false,
    };
    let started = crate::shutdown::until_signal(start(
        discovery.cwd.clone(),
        discovery.configs,
        discovery.sources,
        options,
    ))
    .await?;
    let reports = started.manager.reports();
    crate::cmd::trust_pins::warn_held(&started.manager);

    if args.json {
        let json: Vec<serde_json::Value> = reports
            .iter()
            .map(report_json)
            .chain(invalid.iter().map(invalid_json))
            .collect();
        let text = serde_json::to_string_pretty(&json).map_err(Failure::internal)?;
        println!("{text}");
    } else {
        print_table(&reports, &invalid, false);
    }
    // Printed first; the servers are stopped after.
    crate::connect::stop_after_output(&started.manager).await;
    let failed = reports
        .iter()
        .filter(|r| {
            r.error.is_some() && r.status() != mcp_runtime::manager::ServerStatus::Connected
        })
        .count();
    Ok(exit::listing(failed, reports.len(), args.strict))
}

/// A configured server that cannot start because its definition is invalid: shown in the
/// table with its reason, as it would otherwise vanish from it.
pub(crate) struct InvalidServer {
    name: String,
    reason: String,
    provider: String,
    /// The file, with the definition's line when known.
    location: String,
    path: std::path::PathBuf,
}

/// The servers of `discovery` whose definitions are invalid.
pub(crate) fn invalid_servers(discovery: &Discovery) -> Vec<InvalidServer> {
    discovery
        .servers
        .iter()
        .filter_map(|server| match &server.state {
            ServerState::Invalid(reason) => Some(InvalidServer {
                name: server.name.clone(),
                reason: reason.clone(),
                provider: server.source.provider_name.clone(),
                location: match server.line {
                    Some(line) => format!("{}:{line}", display_path(&server.source.path)),
                    None => display_path(&server.source.path),
                },
                path: server.source.path.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Print the status table of `reports` and of the `invalid` servers (shared by `mcpr status`
/// and the shell's `/mcp status`): one row per server, then the first line of each error with
/// its stderr tail, and each invalid definition's reason. `pid` adds each server's process id
/// (in the shell, where the processes are still running).
pub(crate) fn print_table(reports: &[ServerReport], invalid: &[InvalidServer], pid: bool) {
    // Logins matter only where there are remote servers.
    let show_login = reports.iter().any(|r| r.login.is_some() || r.needs_login());
    let mut columns = vec![
        Column::left("SERVER"),
        Column::left("STATE"),
        Column::left("TYPE"),
    ];
    if pid {
        columns.push(Column::right("PID"));
    }
    columns.extend([
        Column::right("HANDSHAKE"),
        Column::right("TOOLS"),
        Column::left("PROTOCOL"),
    ]);
    if show_login {
        columns.push(Column::left("LOGIN"));
    }
    columns.push(Column::left("SOURCE"));
    for report in reports {
        let mut cells = vec![
            term::line(&report.name).into_owned(),
            report.state.to_string(),
            report.transport.to_owned(),
        ];
        if pid {
            cells.push(report.pid.map_or_else(|| "-".into(), |pid| pid.to_string()));
        }
        cells.push(
            report
                .handshake_ms
                .map(|ms| format!("{ms} ms"))
                .unwrap_or_else(|| "-".into()),
        );
        cells.push(if report.deferred {
            format!("{}*", report.tools)
        } else {
            report.tools.to_string()
        });
        cells.push(term::line(report.protocol_version.as_deref().unwrap_or("-")).into_owned());
        if show_login {
            cells.push(login_label(report));
        }
        cells.push(match (&report.provider, &report.path) {
            (Some(provider), Some(path)) => term::line(&format!(
                "{provider} ({})",
                mcp_runtime::fsutil::display_path(path)
            ))
            .into_owned(),
            _ => "-".into(),
        });
        for (column, cell) in columns.iter_mut().zip(cells) {
            column.cells.push(cell);
        }
    }
    for server in invalid {
        let source = format!("{} ({})", server.provider, server.location);
        for column in columns.iter_mut() {
            let cell = match column.header {
                "SERVER" => term::line(&server.name).into_owned(),
                "STATE" => "invalid".into(),
                "SOURCE" => term::line(&source).into_owned(),
                _ => "-".into(),
            };
            column.cells.push(cell);
        }
    }
    for line in layout(&columns) {
        println!("{line}");
    }
    if reports.iter().any(|r| r.deferred) {
        println!("(* cached tools: the server was still connecting)");
    }
    for report in reports.iter().filter(|r| r.error.is_some()) {
        if let Some(error) = &report.error {
            println!(
                "\n{}: {}",
                term::line(&report.name),
                term::line(error.explained().lines().next().unwrap_or_default())
            );
            let tail: Vec<&String> = report.stderr_tail.iter().rev().take(10).collect();
            if !tail.is_empty() {
                println!("  stderr:");
                for line in tail.into_iter().rev() {
                    println!("  | {}", term::line(line));
                }
            }
        }
    }
    print_invalid_reasons(invalid);
}

/// The reason of each invalid definition, after the table.
fn print_invalid_reasons(invalid: &[InvalidServer]) {
    for server in invalid {
        println!(
            "\n{}: invalid definition in {}: {}",
            term::line(&server.name),
            term::line(&server.location),
            term::line(&server.reason)
        );
    }
}

/// One column of the status table: its header, its cells top to bottom, and its alignment.
struct Column {
    header: &'static str,
    right: bool,
    cells: Vec<String>,
}

impl Column {
    fn left(header: &'static str) -> Column {
        Column {
            header,
            right: false,
            cells: Vec::new(),
        }
    }

    fn right(header: &'static str) -> Column {
        Column {
            right: true,
            ..Column::left(header)
        }
    }
}

/// The table's lines, the header first: every column as wide as its widest cell (a state such
/// as `reconnecting (attempt 12)` included), two spaces apart; the last column unpadded.
fn layout(columns: &[Column]) -> Vec<String> {
    let widths: Vec<usize> = columns
        .iter()
        .map(|column| {
            column
                .cells
                .iter()
                .map(|cell| cell.chars().count())
                .chain([column.header.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rows = columns.first().map_or(0, |column| column.cells.len());
    let line = |cell: &dyn Fn(&Column) -> &str| {
        let mut text = String::new();
        for (i, (column, width)) in columns.iter().zip(&widths).enumerate() {
            let value = cell(column);
            let last = i + 1 == columns.len();
            if i > 0 {
                text.push_str("  ");
            }
            let pad = width.saturating_sub(value.chars().count());
            if column.right {
                text.push_str(&" ".repeat(pad));
                text.push_str(value);
            } else {
                text.push_str(value);
                if !last {
                    text.push_str(&" ".repeat(pad));
                }
            }
        }
        text
    };
    let mut lines = vec![line(&|column: &Column| column.header)];
    for row in 0..rows {
        lines.push(line(&|column: &Column| column.cells[row].as_str()));
    }
    lines
}

/// `needs login`, `logged in (expires in 59 min)`, or `-`.
pub(crate) fn login_label(report: &ServerReport) -> String {
    if report.needs_login() {
        return "needs login".into();
    }
    match &report.login {
        Some(status) => crate::cmd::login::label(status),
        None => "-".into(),
    }
}

/// An invalid definition as `mcpr status --json` prints it: the fields of a report that apply.
fn invalid_json(server: &InvalidServer) -> serde_json::Value {
    serde_json::json!({
        "name": server.name,
        "status": "invalid",
        "state": "invalid",
        "provider": server.provider,
        "path": server.path,
        "error": server.reason,
    })
}

/// One report as `mcpr status --json` prints it (field names and order are part of the CLI's
/// output; the error goes out as its message).
fn report_json(report: &ServerReport) -> serde_json::Value {
    serde_json::json!({
        "name": report.name,
        "status": report.status(),
        "state": report.state,
        "provider": report.provider,
        "path": report.path,
        "transport": report.transport,
        "pid": report.pid,
        "handshake_ms": report.handshake_ms,
        "protocol_version": report.protocol_version,
        "server_info": report.server_info,
        "tools": report.tools,
        "deferred": report.deferred,
        "error": report.error.as_ref().map(ToString::to_string),
        "advice": report.error.as_ref().and_then(Advise::advice),
        "stderr_tail": report.stderr_tail,
        "needs_login": report.needs_login(),
        "login": report.login,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(header: &'static str, right: bool, cells: &[&str]) -> Column {
        let mut column = if right {
            Column::right(header)
        } else {
            Column::left(header)
        };
        column.cells = cells.iter().map(|c| c.to_string()).collect();
        column
    }

    #[test]
    fn columns_stay_aligned_whatever_the_state() {
        let columns = [
            column("SERVER", false, &["a", "b", "c"]),
            column(
                "STATE",
                false,
                &["connected", "reconnecting (attempt 12)", "loading tools"],
            ),
            column("PID", true, &["7", "-", "12345"]),
            column("SOURCE", false, &["x", "y", "z"]),
        ];
        let lines = layout(&columns);
        assert_eq!(lines[0], "SERVER  STATE                        PID  SOURCE");
        assert_eq!(lines[2], "b       reconnecting (attempt 12)      -  y");
        // Every row puts the last column at the same place.
        let starts: Vec<usize> = lines.iter().map(|l| l.rfind("  ").unwrap()).collect();
        assert!(starts.windows(2).all(|w| w[0] == w[1]), "{lines:#?}");
    }
}
