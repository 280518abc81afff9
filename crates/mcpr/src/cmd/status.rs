//! `mcpr status`: start every configured server and report how each one is doing.

use mcp_runtime::manager::ServerReport;

use crate::cli::GlobalArgs;
use crate::connect::{Progress, StartOptions, start};
use crate::exit::{self, Failure, Outcome};
use crate::term;

/// Arguments of `mcpr status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Report at the start-up gate instead of waiting for every server to settle.
    #[arg(long)]
    pub no_wait: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: StatusArgs) -> Outcome {
    let discovery = crate::discovery::discover_some(global)?;
    let options = StartOptions {
        progress: if args.json {
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

    if args.json {
        let json: Vec<serde_json::Value> = reports.iter().map(report_json).collect();
        let text = serde_json::to_string_pretty(&json).map_err(Failure::internal)?;
        println!("{text}");
    } else {
        print_table(&reports);
    }
    // Printed first; the servers are stopped after.
    crate::connect::stop_after_output(&started.manager).await;
    let failed = reports
        .iter()
        .any(|r| r.error.is_some() && r.status() != mcp_runtime::manager::ServerStatus::Connected);
    Ok(if failed { exit::CONNECTION } else { exit::OK })
}

/// Print the status table of `reports` (shared by `mcpr status` and the shell's
/// `/mcp status`): one row per server, then the first line of each error with its stderr tail.
pub fn print_table(reports: &[ServerReport]) {
    let width = reports
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .max(6);
    // Logins matter only where there are remote servers.
    let show_login = reports.iter().any(|r| r.login.is_some() || r.needs_login());
    let login_width = if show_login {
        reports
            .iter()
            .map(|r| login_label(r).len())
            .max()
            .unwrap_or(5)
            .max(5)
            + 2
    } else {
        0
    };
    let login_header = if show_login { "LOGIN" } else { "" };
    println!(
        "{:width$}  {:<12} {:<5} {:>9} {:>5}  {:<10}  {login_header:login_width$}SOURCE",
        "SERVER", "STATE", "TYPE", "HANDSHAKE", "TOOLS", "PROTOCOL"
    );
    for report in reports {
        let handshake = report
            .handshake_ms
            .map(|ms| format!("{ms} ms"))
            .unwrap_or_else(|| "-".into());
        let tools = if report.deferred {
            format!("{}*", report.tools)
        } else {
            report.tools.to_string()
        };
        let source = match (&report.provider, &report.path) {
            (Some(provider), Some(path)) => {
                term::line(&format!("{provider} ({})", path.display())).into_owned()
            }
            _ => "-".into(),
        };
        let login = if show_login {
            login_label(report)
        } else {
            String::new()
        };
        println!(
            "{:width$}  {:<12} {:<5} {:>9} {:>5}  {:<10}  {login:login_width$}{source}",
            term::line(&report.name),
            report.state,
            report.transport,
            handshake,
            tools,
            term::line(report.protocol_version.as_deref().unwrap_or("-")),
        );
    }
    if reports.iter().any(|r| r.deferred) {
        println!("(* cached tools: the server was still connecting)");
    }
    for report in reports.iter().filter(|r| r.error.is_some()) {
        if let Some(error) = &report.error {
            println!(
                "\n{}: {}",
                term::line(&report.name),
                term::line(error.to_string().lines().next().unwrap_or_default())
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
}

/// `needs login`, `logged in (expires in 59 min)`, or `-`.
pub fn login_label(report: &ServerReport) -> String {
    if report.needs_login() {
        return "needs login".into();
    }
    match &report.login {
        Some(status) => crate::cmd::login::label(status),
        None => "-".into(),
    }
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
        "stderr_tail": report.stderr_tail,
        "needs_login": report.needs_login(),
        "login": report.login,
    })
}
