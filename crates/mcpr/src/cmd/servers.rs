//! `mcpr servers [--all] [--json]`: every MCP server of every AI tool, one line each — name,
//! transport, command or URL (secrets redacted), provider and file, level, state (a server that
//! waits for approval names the file that changed or that it reads from an untrusted project).
//! Problems met while reading configs go to stderr with file:line:column.

use mcp_runtime::auth::{self, AuthStatus, CredentialStore};
use mcp_runtime::config::{DiscoveredServer, Discovery, ProjectTrustState, ServerState, Transport};
use serde_json::{Value, json};

use crate::connect::OneShot;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use mcp_runtime::fsutil::display_path;

/// Arguments of `mcpr servers`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServersArgs {
    /// Also show definitions that are shadowed by a higher-priority one, or filtered.
    #[arg(long)]
    pub all: bool,
    /// Print JSON (for scripts).
    #[arg(long)]
    pub json: bool,
    /// Show each command or URL in full on one line, whatever the terminal's width (on a
    /// terminal, a long one is otherwise wrapped to fit).
    #[arg(long)]
    pub wide: bool,
}

fn visible(server: &DiscoveredServer, all: bool) -> bool {
    all || !matches!(server.state, ServerState::Shadowed { .. })
}

/// The columns of `mcpr servers`.
const HEADER: [&str; 6] = [
    "NAME",
    "TRANSPORT",
    "COMMAND / URL",
    "SOURCE",
    "LEVEL",
    "STATE",
];

/// `mcpr servers`.
pub(crate) async fn run(global: &GlobalArgs, args: ServersArgs) -> Outcome {
    let found = crate::discovery::CliFlags::from(global).discover();
    if let Some(failure) = &found.failure {
        return Err(Failure::usage(format!(
            "{}: {}",
            failure.path, failure.error
        )));
    }
    crate::discovery::print_warnings(&found);
    let servers: Vec<&DiscoveredServer> = found
        .servers
        .iter()
        .filter(|s| visible(s, args.all))
        .collect();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&found, &servers)).unwrap_or_default()
        );
        return Ok(exit::OK);
    }
    if servers.is_empty() {
        println!(
            "No MCP servers configured (looked in every known AI tool's config; see `mcpr add`)."
        );
        return Ok(exit::OK);
    }
    let store = CredentialStore::user_default();
    let rows: Vec<[String; 6]> = servers
        .iter()
        .map(|s| {
            let mut state = s.state.to_string();
            if let Some(detail) = crate::discovery::pending_detail(s) {
                state.push_str(&format!(" ({detail})"));
            }
            if let Some(login) = login_of(&found, s, store.as_ref())
                && login != AuthStatus::NotLoggedIn
            {
                state.push_str(&format!(", {}", crate::cmd::login::label(&login)));
            }
            let (transport, target) = match s.redacted() {
                Some(r) => (r.transport.to_owned(), r.target()),
                None => ("?".to_owned(), String::new()),
            };
            let source = format!("{} {}", s.source.provider_name, shorten_location(s));
            // Names, commands and URLs come from config files, which may be hostile.
            [
                s.name.clone(),
                transport,
                target,
                source,
                s.source.level.to_string(),
                state,
            ]
            .map(|cell| crate::term::line(&cell).into_owned())
        })
        .collect();
    let header = HEADER.map(String::from);
    let width = (!args.wide).then(crate::term::table_width).flatten();
    for line in table(&header, &rows, width) {
        println!("{line}");
    }
    let pending = found.pending().count();
    if pending > 0 {
        let why = match found.project.state {
            ProjectTrustState::Changed if !found.project.changed.is_empty() => {
                let files: Vec<String> = found
                    .project
                    .changed
                    .iter()
                    .map(|f| display_path(f))
                    .collect();
                format!(
                    "the project's files changed since you trusted it ({})",
                    files.join(", ")
                )
            }
            ProjectTrustState::Changed => {
                "the project's files changed since you trusted it".to_owned()
            }
            _ => "the project's files are not trusted yet".to_owned(),
        };
        // File names come from the project.
        let why = crate::term::line(&why);
        eprintln!("{pending} server(s) pending approval: {why}; review them and run `mcpr trust`");
    }
    Ok(exit::OK)
}

fn shorten_location(server: &DiscoveredServer) -> String {
    let mut out = display_path(&server.source.path);
    if let Some(line) = server.line {
        out.push_str(&format!(":{line}"));
    }
    out
}

/// The column of commands and URLs, the one wrapped to fit.
const COMMAND_COLUMN: usize = 2;

/// The narrowest the command column gets when wrapped, however narrow the terminal.
const MIN_COMMAND_WIDTH: usize = 16;

/// The table's lines: columns two spaces apart, the last unpadded. With a `width` (a
/// terminal's), a command or URL longer than the room left by the other columns is wrapped
/// onto lines of its own under its column, so that every argument stays visible.
fn table(header: &[String; 6], rows: &[[String; 6]], width: Option<usize>) -> Vec<String> {
    let mut widths = [0usize; 6];
    for row in std::iter::once(header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    if let Some(width) = width {
        // Every column but the last is followed by two spaces.
        let others: usize = widths
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != COMMAND_COLUMN)
            .map(|(_, w)| w + 2)
            .sum::<usize>()
            .saturating_sub(2);
        let room = width.saturating_sub(others + 2).max(MIN_COMMAND_WIDTH);
        widths[COMMAND_COLUMN] = widths[COMMAND_COLUMN].min(room);
    }
    let mut lines = Vec::new();
    for row in std::iter::once(header).chain(rows) {
        let pieces = wrap(&row[COMMAND_COLUMN], widths[COMMAND_COLUMN]);
        for (n, piece) in pieces.iter().enumerate() {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                let cell = match (i, n) {
                    (COMMAND_COLUMN, _) => piece.as_str(),
                    (_, 0) => cell.as_str(),
                    _ => "",
                };
                if i == row.len() - 1 {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
                }
            }
            lines.push(line.trim_end().to_owned());
        }
    }
    lines
}

/// `text` cut into pieces of at most `width` characters, at spaces where it can be.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        let len = current.chars().count();
        if len > 0 && len + 1 + word.len() <= width {
            current.push(' ');
            current.extend(&word);
            continue;
        }
        if len > 0 {
            pieces.push(std::mem::take(&mut current));
        }
        // A word longer than the column (a long path or URL) is cut across lines.
        while word.len() > width {
            pieces.push(word.drain(..width).collect());
        }
        current = word.into_iter().collect();
    }
    pieces.push(current);
    pieces
}

/// The stored login of a remote server that is in use (its expanded URL is the key).
fn login_of(
    found: &Discovery,
    server: &DiscoveredServer,
    store: Option<&CredentialStore>,
) -> Option<AuthStatus> {
    if server.state != ServerState::Enabled {
        return None;
    }
    let config = found.configs.get(&server.name)?;
    let store = store?;
    matches!(config.transport, Transport::Http(_)).then(|| auth::status(config, store))
}

fn to_json(found: &Discovery, servers: &[&DiscoveredServer]) -> Value {
    let store = CredentialStore::user_default();
    let servers: Vec<Value> = servers
        .iter()
        .map(|s| {
            let shown = s.redacted();
            json!({
                "name": s.name,
                "transport": shown.as_ref().map(|r| r.transport),
                "target": shown.as_ref().map(|r| r.target()),
                "command": shown.as_ref().and_then(|r| r.command.clone()),
                "args": shown.as_ref().map(|r| r.args.clone()),
                "url": shown.as_ref().and_then(|r| r.url.clone()),
                "env": shown.as_ref().map(|r| r.env.clone()),
                "headers": shown.as_ref().map(|r| r.headers.clone()),
                "provider": s.source.provider_id,
                "provider_name": s.source.provider_name,
                "file": s.source.path,
                "line": s.line,
                "column": s.column,
                "level": s.source.level.as_str(),
                "state": s.state.to_string(),
                "pending_reason": s.pending_reason.as_ref().map(ToString::to_string),
                "reads": s.reads,
                "enabled": s.state == ServerState::Enabled,
                "trusted": s.trusted,
                "login": login_of(found, s, store.as_ref()),
            })
        })
        .collect();
    let warnings: Vec<Value> = found
        .warnings
        .iter()
        .map(|w| json!({"file": w.file, "line": w.line, "column": w.column, "server": w.server, "message": w.message}))
        .collect();
    json!({
        "cwd": found.cwd,
        "servers": servers,
        "warnings": warnings,
        "project": {
            "root": found.project.root,
            "files": found.project.files,
            "hash": found.project.hash,
            "changed": found.project.changed,
            "trusted": found.project.is_trusted(),
            "state": format!("{:?}", found.project.state),
        },
    })
}

/// Arguments of `mcpr get`.
#[derive(Debug, clap::Args)]
pub(crate) struct GetArgs {
    /// The server's name, as `mcpr list` shows it.
    #[arg(add = clap_complete::engine::ArgValueCompleter::new(crate::complete::server_names))]
    pub name: String,
    /// Print JSON (the same fields as `mcpr list --json`).
    #[arg(long)]
    pub json: bool,
    /// Also connect to the server and report: handshake time, tools, protocol, or the error
    /// (exit 3 when it cannot connect).
    #[arg(long)]
    pub check: bool,
}

/// `mcpr get NAME`: one server in detail: every definition of that name, the one that counts
/// first, with its command or URL, environment and headers (secrets redacted), file and state.
pub(crate) async fn get(global: &GlobalArgs, args: GetArgs) -> Outcome {
    let found = crate::discovery::CliFlags::from(global).discover();
    if let Some(failure) = &found.failure {
        return Err(Failure::usage(format!(
            "{}: {}",
            failure.path, failure.error
        )));
    }
    let mut definitions: Vec<&DiscoveredServer> = found
        .servers
        .iter()
        .filter(|s| s.name == args.name)
        .collect();
    if definitions.is_empty() {
        return Err(Failure::usage(format!(
            "no server named `{}` is configured (see `mcpr list`)",
            args.name
        )));
    }
    // The definition that counts first.
    if let Some(winner) = found.winner(&args.name) {
        definitions.sort_by_key(|s| !std::ptr::eq(*s, winner));
    }
    if args.json {
        let json = to_json(&found, &definitions);
        println!(
            "{}",
            serde_json::to_string_pretty(&json["servers"]).unwrap_or_default()
        );
        return Ok(exit::OK);
    }
    let store = CredentialStore::user_default();
    for (i, server) in definitions.iter().enumerate() {
        if i == 1 {
            println!("\nAlso defined by:");
        }
        let indent = if i == 0 { "" } else { "  " };
        let mut rows: Vec<(&str, String)> = Vec::new();
        if i == 0 {
            println!("{}", crate::term::line(&server.name));
        }
        let mut state = server.state.to_string();
        if let Some(detail) = crate::discovery::pending_detail(server) {
            state.push_str(&format!(" ({detail})"));
        }
        rows.push(("state", state));
        rows.push((
            "source",
            format!(
                "{} ({}, {} level)",
                server.source.provider_name,
                shorten_location(server),
                server.source.level
            ),
        ));
        if let Some(shown) = server.redacted() {
            rows.push(("type", shown.transport.to_owned()));
            if let Some(command) = &shown.command {
                rows.push(("command", command.clone()));
                if !shown.args.is_empty() {
                    rows.push(("args", shown.args.join(" ")));
                }
            }
            if let Some(cwd) = &shown.cwd {
                rows.push(("cwd", cwd.clone()));
            }
            if let Some(url) = &shown.url {
                rows.push(("url", url.clone()));
            }
            for (key, value) in &shown.env {
                rows.push(("env", format!("{key}={value}")));
            }
            for (key, value) in &shown.headers {
                rows.push(("header", format!("{key}: {value}")));
            }
        }
        if let Some(Transport::Stdio(stdio)) = server.config.as_ref().map(|c| &c.transport)
            && let Some(policy) = &stdio.sandbox
        {
            rows.extend(crate::cmd::sandbox::rows(policy));
        }
        if let Some(config) = &server.config {
            let inherit = mcp_runtime::client::environment::inherit_requested();
            if let Some(names) = mcp_runtime::client::environment::names_for(config, inherit) {
                // Names only, never values: what the server would receive if started now.
                rows.push(("passes", names.join(" ")));
            }
        }
        if i == 0
            && let Some(login) = login_of(&found, server, store.as_ref())
            && login != AuthStatus::NotLoggedIn
        {
            rows.push(("login", crate::cmd::login::label(&login)));
        }
        for (key, value) in rows {
            // Everything here comes from config files, which may be hostile.
            println!("{indent}  {key:<8} {}", crate::term::line(&value));
        }
    }
    if args.check {
        return check(&found, &args.name).await;
    }
    Ok(exit::OK)
}

/// `mcpr get NAME --check`: connect to the server as configured, list its tools and ping it,
/// and print one `check` line: how it went, or why it could not start or connect.
async fn check(found: &Discovery, name: &str) -> Outcome {
    let Some(config) = found.configs.get(name) else {
        let why = found
            .winner(name)
            .or_else(|| found.servers.iter().find(|s| s.name == name))
            .map(|s| s.state.to_string())
            .unwrap_or_else(|| "not configured".into());
        println!("  {:<8} not started: {}", "check", crate::term::line(&why));
        return Err(Failure::usage(format!(
            "server `{name}` is not started: {why}"
        )));
    };
    let opened = match OneShot::open(found.cwd.clone(), name, config).await {
        Ok(opened) => opened,
        Err(e) => {
            println!("  {:<8} failed", "check");
            return Err(Failure::connection(crate::advice::Advise::explained(&e)));
        }
    };
    let Some(client) = opened.client() else {
        return Err(Failure::internal("no connection"));
    };
    let tools = client.list_tools().await;
    let ping = client.ping().await;
    let info = client.info().clone();
    let handshake = client.handshake_time().as_millis();
    opened.stop().await;
    match (tools, ping) {
        (Ok(tools), Ok(())) => {
            println!(
                "  {:<8} connected in {handshake} ms: {} tools, protocol {}, {} {}",
                "check",
                tools.len(),
                crate::term::line(&info.protocol_version),
                crate::term::line(&info.name),
                crate::term::line(&info.version)
            );
            Ok(exit::OK)
        }
        (Err(e), _) | (_, Err(e)) => {
            println!("  {:<8} connected, then failed", "check");
            Err(Failure::connection(crate::term::line(&e.to_string())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_wraps_under_its_column_and_loses_nothing() {
        let header = HEADER.map(String::from);
        let command =
            "npx -y @modelcontextprotocol/server-filesystem /home/me/projects/very/deep/dir";
        let row = [
            "fs",
            "stdio",
            command,
            "Cursor ~/.cursor/mcp.json",
            "user",
            "enabled",
        ]
        .map(String::from);
        let lines = table(&header, std::slice::from_ref(&row), Some(80));
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
        assert!(lines.len() > 2, "{lines:#?}");
        let column = lines[0].find("COMMAND").unwrap();
        let shown: String = lines[1..]
            .iter()
            .map(|l| l[column..].split("  ").next().unwrap())
            .collect();
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        assert_eq!(squeeze(&shown), squeeze(command), "{lines:#?}");
        // Without a width (a pipe, or --wide): one line, in full.
        let lines = table(&header, &[row], None);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains(command));
    }
}
