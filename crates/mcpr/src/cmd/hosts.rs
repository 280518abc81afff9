//! Other hosts' config files: `mcpr add --to HOST` writes a server into that host's own file,
//! `mcpr add-from HOST [NAME...]` copies servers from one host's config to mcpr's (or, with
//! `--to`, to another host's).
//!
//! ```text
//! mcpr add --to claude|cursor|vscode|codex|gemini [--scope user|project|local] NAME CMD ARGS...
//! mcpr add-from HOST [NAME...] [--to HOST] [--scope user|project|local] [--force]
//! ```
//!
//! Values are copied as written (a `${VAR}` stays a reference; nothing is expanded, nothing
//! secret is printed). A server from a project that is not trusted is never copied: it is
//! named, with how to review it.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use mcp_runtime::config::writer::hosts::{Host, HostFile, HostScope, mcpr_entry};
use mcp_runtime::config::writer::{self, McprFile, Scope};
use mcp_runtime::config::{
    ConfigError, DiscoveredServer, DiscoveryOptions, ServerConfig, ServerState,
};
use mcp_runtime::fsutil::display_path;

use crate::advice::Advise as _;
use crate::cmd::edit::{ScopeArg, context, keep_trust, project_trusted};
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;

/// A host whose config mcpr writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HostArg {
    /// Claude Code: `~/.claude.json` (user, local) or `.mcp.json` (project).
    Claude,
    /// Cursor: `~/.cursor/mcp.json` or `.cursor/mcp.json`.
    Cursor,
    /// VS Code: the user `mcp.json` or `.vscode/mcp.json` (`servers`).
    Vscode,
    /// Codex: `~/.codex/config.toml` or `.codex/config.toml` (`[mcp_servers.NAME]`).
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json` or `.gemini/settings.json`.
    Gemini,
}

impl From<HostArg> for Host {
    fn from(host: HostArg) -> Self {
        match host {
            HostArg::Claude => Host::Claude,
            HostArg::Cursor => Host::Cursor,
            HostArg::Vscode => Host::VsCode,
            HostArg::Codex => Host::Codex,
            HostArg::Gemini => Host::Gemini,
        }
    }
}

/// Arguments of `mcpr add-from`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
mcpr add-from claude                 copy every Claude Code server to mcpr's user config\n  \
mcpr add-from cursor github --to vscode --scope project\n  \
mcpr add-from codex docs --force     replace mcpr's `docs` with Codex's")]
pub(crate) struct AddFromArgs {
    /// The host to copy from: any host mcpr reads (`claude`, `claude-desktop`, `cursor`,
    /// `vscode`, `codex`, `gemini`, `windsurf`, `zed`, `opencode`, `goose`, ...).
    #[arg(value_name = "HOST")]
    pub from: String,
    /// The servers to copy (default: all of the host's).
    pub names: Vec<String>,
    /// Copy into this host's config instead of mcpr's.
    #[arg(long, value_enum, value_name = "HOST")]
    pub to: Option<HostArg>,
    /// Which file to write (mcpr's or the `--to` host's).
    #[arg(short, long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// Replace servers of the same name already in the file written.
    #[arg(long)]
    pub force: bool,
}

/// The error for names the target file already has.
fn clash(names: &[&str], path: &std::path::Path) -> Failure {
    let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    Failure::usage(format!(
        "{} already defined in {}; add --force to replace {}",
        list.join(", "),
        display_path(path),
        if names.len() == 1 { "it" } else { "them" }
    ))
}

/// Print the settings `host` could not take.
fn say_dropped(name: &str, host: Host, dropped: &[String]) {
    if !dropped.is_empty() {
        println!(
            "Note: `{name}`: not carried, {} has no field for: {}",
            host.name(),
            dropped.join(", ")
        );
    }
}

/// `mcpr add --to HOST`: write `config` as `name` into the host's file of `scope`.
pub(crate) fn write_to_host(
    global: &GlobalArgs,
    host: Host,
    scope: HostScope,
    name: &str,
    config: &ServerConfig,
    force: bool,
) -> Outcome {
    let (_, cwd, options) = context(global);
    let was_trusted = scope == HostScope::Project && project_trusted(&cwd, &options);
    let mut file =
        HostFile::load(host, scope, &options, &cwd).map_err(|e| Failure::usage(e.explained()))?;
    if file.contains(name) && !force {
        return Err(clash(&[name], file.path()));
    }
    let dropped = file
        .set_server(name, config)
        .map_err(|e| Failure::usage(e.explained()))?;
    file.save().map_err(|e| Failure::usage(e.explained()))?;
    keep_trust(&cwd, &options, was_trusted);
    let shown = config.redacted();
    println!(
        "Added `{name}` ({}: {}) to {} ({})",
        shown.transport,
        shown.target(),
        display_path(file.path()),
        host.name()
    );
    say_dropped(name, host, &dropped);
    Ok(exit::OK)
}

/// The host's definitions that may be copied, one per name (the one the host itself uses:
/// discovery lists a host's project files before its user file); the others are reported.
fn copyable<'d>(
    servers: &'d [DiscoveredServer],
    from: &str,
    names: &[String],
) -> Result<Vec<(&'d str, &'d ServerConfig)>, Failure> {
    let mut first: IndexMap<&str, &DiscoveredServer> = IndexMap::new();
    for server in servers.iter().filter(|s| s.source.provider_id == from) {
        first.entry(server.name.as_str()).or_insert(server);
    }
    if first.is_empty() {
        let mut hosts: Vec<&str> = Vec::new();
        for server in servers {
            let id = server.source.provider_id.as_str();
            if id != "mcpr" && !hosts.contains(&id) {
                hosts.push(id);
            }
        }
        let seen = if hosts.is_empty() {
            "no other host's servers were found".to_owned()
        } else {
            format!("hosts with servers here: {}", hosts.join(", "))
        };
        return Err(Failure::usage(format!(
            "no servers of `{}` were found ({seen})",
            crate::term::line(from)
        )));
    }
    if let Some(missing) = names.iter().find(|n| !first.contains_key(n.as_str())) {
        return Err(Failure::usage(format!(
            "`{}` has no server `{}` (see `mcpr servers --all`)",
            crate::term::line(from),
            crate::term::line(missing)
        )));
    }
    let mut out = Vec::new();
    for (name, server) in first {
        if !names.is_empty() && !names.iter().any(|n| n == name) {
            continue;
        }
        let shown = display_path(&server.source.path);
        let path = crate::term::line(&shown);
        if !server.trusted || server.state == ServerState::PendingApproval {
            println!(
                "Skipped `{name}`: it comes from {path}, a project that is not trusted; review \
                 it with `mcpr get {name}`, then `mcpr trust` before copying it"
            );
            continue;
        }
        match &server.config {
            Some(config) => out.push((name, config)),
            None => println!("Skipped `{name}` ({path}): {}", server.state),
        }
    }
    Ok(out)
}

/// `mcpr add-from HOST [NAME...]`.
pub(crate) async fn add_from(global: &GlobalArgs, args: AddFromArgs) -> Outcome {
    let (flags, cwd, options) = context(global);
    let found = flags.discover();
    let servers = copyable(&found.servers, &args.from, &args.names)?;
    let from = found
        .servers
        .iter()
        .find(|s| s.source.provider_id == args.from)
        .map_or(args.from.as_str(), |s| s.source.provider_name.as_str());
    if servers.is_empty() {
        return Err(Failure::usage(format!(
            "nothing to copy from {from} (see `mcpr servers --all`)"
        )));
    }
    let (path, copied) = match args.to {
        Some(to) => copy_to_host(&args, to.into(), &servers, &cwd, &options)?,
        None => copy_to_mcpr(&args, &servers, &cwd, &options)?,
    };
    let list: Vec<String> = copied.iter().map(|n| format!("`{n}`")).collect();
    println!(
        "Copied {} from {from} to {}",
        crate::term::line(&list.join(", ")),
        display_path(&path)
    );
    Ok(exit::OK)
}

/// Say why `name` was not copied.
fn skipped(name: &str, error: &ConfigError) {
    println!(
        "Skipped `{name}`: {}",
        crate::term::line(&error.explained())
    );
}

/// What was written: the file, and the servers copied into it.
type Copied<'a> = (PathBuf, Vec<&'a str>);

/// Copy `servers` into mcpr's file of the chosen scope.
fn copy_to_mcpr<'a>(
    args: &AddFromArgs,
    servers: &[(&'a str, &ServerConfig)],
    cwd: &Path,
    options: &DiscoveryOptions,
) -> Result<Copied<'a>, Failure> {
    let scope = args.scope.mcpr()?;
    let was_trusted = scope == Scope::Project && project_trusted(cwd, options);
    let path =
        writer::config_path(options, cwd, scope).map_err(|e| Failure::usage(e.explained()))?;
    let mut file = McprFile::load(&path).map_err(|e| Failure::usage(e.explained()))?;
    let clashes: Vec<&str> = servers
        .iter()
        .map(|(name, _)| *name)
        .filter(|n| file.server(n).is_some())
        .collect();
    if !clashes.is_empty() && !args.force {
        return Err(clash(&clashes, &path));
    }
    let mut copied = Vec::new();
    for (name, config) in servers {
        match mcpr_entry(name, config) {
            Ok(entry) => {
                file.set_server(name, entry);
                copied.push(*name);
            }
            Err(e) => skipped(name, &e),
        }
    }
    if copied.is_empty() {
        return Err(Failure::usage("nothing was copied"));
    }
    file.save().map_err(|e| Failure::usage(e.explained()))?;
    keep_trust(cwd, options, was_trusted);
    Ok((path, copied))
}

/// Copy `servers` into `to`'s file of the chosen scope.
fn copy_to_host<'a>(
    args: &AddFromArgs,
    to: Host,
    servers: &[(&'a str, &ServerConfig)],
    cwd: &Path,
    options: &DiscoveryOptions,
) -> Result<Copied<'a>, Failure> {
    let scope = args.scope.host();
    let was_trusted = scope == HostScope::Project && project_trusted(cwd, options);
    let mut file =
        HostFile::load(to, scope, options, cwd).map_err(|e| Failure::usage(e.explained()))?;
    let clashes: Vec<&str> = servers
        .iter()
        .map(|(name, _)| *name)
        .filter(|n| file.contains(n))
        .collect();
    if !clashes.is_empty() && !args.force {
        return Err(clash(&clashes, file.path()));
    }
    let mut copied = Vec::new();
    let mut notes = Vec::new();
    for (name, config) in servers {
        match file.set_server(name, config) {
            Ok(dropped) => {
                copied.push(*name);
                notes.push((*name, dropped));
            }
            Err(e) => skipped(name, &e),
        }
    }
    if copied.is_empty() {
        return Err(Failure::usage("nothing was copied"));
    }
    file.save().map_err(|e| Failure::usage(e.explained()))?;
    keep_trust(cwd, options, was_trusted);
    for (name, dropped) in notes {
        say_dropped(name, to, &dropped);
    }
    Ok((file.path().to_owned(), copied))
}
