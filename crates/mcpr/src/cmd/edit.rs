//! `mcpr add | remove | enable | disable`: edit mcpr's own config files (the only files mcpr
//! writes): `$XDG_CONFIG_HOME/mcpr/mcp.json` (user) or `.mcpr/mcp.json` (project).
//!
//! ```text
//! mcpr add NAME [--scope user|project] [-e K=V]... -- CMD ARGS...
//! mcpr add NAME --url URL [--transport http|sse] [-H 'K: V']...
//! mcpr add NAME --from-registry SERVER[@VERSION] [-e K=V]... [--header-value VAR=V]...
//! mcpr remove NAME [--scope user|project]
//! mcpr enable NAME | mcpr disable NAME
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use mcp_runtime::config::writer::{self, Scope};
use mcp_runtime::config::{
    DiscoveryOptions, HttpConfig, HttpKind, ProjectTrustState, ServerConfig, ServerState,
    StdioConfig, Transport, load_all_mcp_configs, server_from_json, trust_project,
};

use crate::advice::Advise as _;
use crate::cli::GlobalArgs;
use crate::discovery::CliFlags;
use crate::discovery::tilde;
use crate::exit::{self, Failure, Outcome};

/// Which of mcpr's files to edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// `$XDG_CONFIG_HOME/mcpr/mcp.json` (default `~/.config/mcpr/mcp.json`).
    User,
    /// `.mcpr/mcp.json` in the project (shared with the repository; needs `mcpr trust`).
    Project,
}

impl From<ScopeArg> for Scope {
    fn from(scope: ScopeArg) -> Self {
        match scope {
            ScopeArg::User => Scope::User,
            ScopeArg::Project => Scope::Project,
        }
    }
}

/// Transports `mcpr add` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    /// A local process (the default with a command).
    Stdio,
    /// Streamable HTTP (the default with `--url`).
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
}

/// Arguments of `mcpr add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The server's name (any characters; tool names are sanitised separately).
    pub name: String,
    /// Which file to write.
    #[arg(long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// Write the project's `.mcpr/mcp.json` (the same as `--scope project`).
    #[arg(long, conflicts_with = "scope")]
    pub project: bool,
    /// An environment variable for a stdio server (repeatable). `${VAR}` is expanded when the
    /// server starts, so secrets need not be written to the file. With `--from-registry`: a
    /// value the registry entry asks for.
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Install the server published in an MCP Registry under this name (`NAME@VERSION` for a
    /// version other than the latest).
    #[arg(long, value_name = "SERVER[@VERSION]", conflicts_with_all = ["url", "command", "headers", "transport"])]
    pub from_registry: Option<String>,
    /// With `--from-registry`: a value of a header or URL variable (repeatable). Secret values
    /// go to mcpr's secret store, or write `${VAR}` to read them from the environment.
    #[arg(
        long = "header-value",
        value_name = "VAR=VALUE",
        requires = "from_registry"
    )]
    pub header_values: Vec<String>,
    /// With `--from-registry`: a value of a command-line argument, by its flag or value hint
    /// (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE", requires = "from_registry")]
    pub arg_values: Vec<String>,
    /// With `--from-registry`: install this kind when the server offers several.
    #[arg(long, value_enum, requires = "from_registry")]
    pub kind: Option<crate::cmd::registry::KindArg>,
    #[command(flatten)]
    pub registry: crate::cmd::registry::RegistryArg,
    /// The endpoint of a remote server.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The transport (default: stdio with a command, http with `--url`).
    #[arg(long, value_enum)]
    pub transport: Option<TransportArg>,
    /// A request header of a remote server, `'Name: value'` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// Request timeout in milliseconds (0 = none).
    #[arg(long, value_name = "MS")]
    pub timeout: Option<u64>,
    /// Replace an existing server of that name in the same file.
    #[arg(long)]
    pub force: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Arguments of `mcpr remove`.
#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// The server's name.
    pub name: String,
    /// Which file (needed only when both define the server).
    #[arg(long, value_enum)]
    pub scope: Option<ScopeArg>,
}

/// Arguments of `mcpr enable` and `mcpr disable`.
#[derive(Debug, clap::Args)]
pub struct ToggleArgs {
    /// The server's name, as `mcpr servers` shows it.
    pub name: String,
}

fn build(args: &AddArgs) -> Result<ServerConfig, String> {
    let transport =
        match (&args.url, args.command.is_empty(), args.transport) {
            (Some(_), false, _) => {
                return Err("give either a command (after `--`) or --url, not both".into());
            }
            (None, true, _) => return Err(
                "give the server's command after `--` (mcpr add NAME -- CMD ARGS...) or --url URL"
                    .into(),
            ),
            (Some(_), true, Some(TransportArg::Stdio)) => {
                return Err("--transport stdio needs a command after `--`, not --url".into());
            }
            (None, false, Some(TransportArg::Http | TransportArg::Sse)) => {
                return Err("--transport http/sse needs --url".into());
            }
            (None, false, _) => {
                if !args.headers.is_empty() {
                    return Err("-H/--header is for remote servers (--url)".into());
                }
                let mut env = BTreeMap::new();
                for pair in &args.env {
                    let (key, value) = pair
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .ok_or_else(|| format!("-e `{pair}`: expected KEY=VALUE"))?;
                    env.insert(key.to_owned(), value.to_owned());
                }
                Transport::Stdio(StdioConfig {
                    command: args.command[0].clone(),
                    args: args.command[1..].to_vec(),
                    env,
                    cwd: None,
                })
            }
            (Some(url), true, kind) => {
                if !args.env.is_empty() {
                    return Err("-e/--env is for stdio servers (a command after `--`)".into());
                }
                let mut headers = BTreeMap::new();
                for header in &args.headers {
                    let (key, value) = header
                        .split_once(':')
                        .filter(|(k, _)| !k.trim().is_empty())
                        .ok_or_else(|| format!("-H `{header}`: expected 'Name: value'"))?;
                    headers.insert(key.trim().to_owned(), value.trim().to_owned());
                }
                Transport::Http(HttpConfig {
                    url: url.clone(),
                    headers,
                    kind: if kind == Some(TransportArg::Sse) {
                        HttpKind::Sse
                    } else {
                        HttpKind::StreamableHttp
                    },
                    oauth: None,
                })
            }
        };
    let mut config = ServerConfig::stdio("", Vec::<String>::new());
    config.transport = transport;
    config.timeout_ms = args.timeout;
    // Validate exactly as discovery will read it back.
    server_from_json(&args.name, &writer::server_to_json(&config)).map_err(|e| e.to_string())
}

/// Whether the project is trusted right now (so that our own edit keeps it trusted).
fn project_trusted(cwd: &Path, options: &DiscoveryOptions) -> bool {
    load_all_mcp_configs(cwd, options).project.state == ProjectTrustState::Trusted
}

/// After mcpr itself changed `.mcpr/mcp.json` of a trusted project, trust the new contents:
/// the user made this change, not the repository.
fn keep_trust(cwd: &Path, options: &DiscoveryOptions, was_trusted: bool) {
    if was_trusted && let Err(e) = trust_project(cwd, options) {
        eprintln!("warning: could not keep the project trusted: {e}");
    }
}

fn context(global: &GlobalArgs) -> (CliFlags, std::path::PathBuf, DiscoveryOptions) {
    let flags = global.discovery_flags();
    let cwd = flags.cwd();
    let options = flags.options();
    (flags, cwd, options)
}

/// `mcpr add`.
pub async fn add(global: &GlobalArgs, args: AddArgs) -> Outcome {
    let scope: Scope = if args.project {
        Scope::Project
    } else {
        args.scope.into()
    };
    if let Some(spec) = &args.from_registry {
        return crate::cmd::registry::add(
            global,
            crate::cmd::registry::FromRegistry {
                name: &args.name,
                spec,
                scope,
                kind: args.kind,
                env: &args.env,
                header_values: &args.header_values,
                arg_values: &args.arg_values,
                force: args.force,
                timeout: args.timeout,
                registry: &args.registry,
            },
        )
        .await;
    }
    if args.registry.registry.is_some() {
        return Err(Failure::usage("--registry goes with --from-registry"));
    }
    let config = build(&args).map_err(Failure::usage)?;
    let (_, cwd, options) = context(global);
    let was_trusted = scope == Scope::Project && project_trusted(&cwd, &options);
    let path = writer::add_server(&options, &cwd, scope, &args.name, &config, args.force)
        .map_err(|e| Failure::usage(e.explained()))?;
    keep_trust(&cwd, &options, was_trusted);
    let shown = config.redacted();
    println!(
        "Added `{}` ({}: {}) to {}",
        args.name,
        shown.transport,
        shown.target(),
        tilde(&path)
    );
    let found = load_all_mcp_configs(&cwd, &options);
    let others: Vec<String> = found
        .servers
        .iter()
        .filter(|s| s.name == args.name && s.source.path != path)
        .map(|s| format!("{} ({})", s.source.provider_name, tilde(&s.source.path)))
        .collect();
    if !others.is_empty() {
        // Paths of other tools' files, some inside the project: shown escaped.
        println!("Also defined by: {}", crate::term::line(&others.join(", ")));
    }
    if let Some(winner) = found.winner(&args.name)
        && winner.source.path == path
        && winner.state != ServerState::Enabled
    {
        println!("State: {}", winner.state);
        if winner.state == ServerState::PendingApproval {
            println!("Project servers start once you run `mcpr trust`.");
        }
    }
    Ok(exit::OK)
}

/// `mcpr remove`.
pub async fn remove(global: &GlobalArgs, args: RemoveArgs) -> Outcome {
    let (flags, cwd, options) = context(global);
    let found = flags.discover();
    let was_trusted = found.project.state == ProjectTrustState::Trusted;
    let path = writer::remove_server(
        &options,
        &cwd,
        &args.name,
        args.scope.map(Scope::from),
        Some(&found),
    )
    .map_err(|e| Failure::usage(e.explained()))?;
    if path == writer::project_config_path(&cwd) {
        keep_trust(&cwd, &options, was_trusted);
    }
    println!("Removed `{}` from {}", args.name, tilde(&path));
    let after = load_all_mcp_configs(&cwd, &options);
    if after.winner(&args.name).is_none()
        && let Some(store) = mcp_runtime::registry::SecretStore::default_path(&options.env)
            .map(mcp_runtime::registry::SecretStore::new)
    {
        match store.remove(&args.name) {
            Ok(true) => println!("Forgot its stored secrets."),
            Ok(false) => {}
            Err(e) => eprintln!("warning: could not forget its stored secrets: {e}"),
        }
    }
    if let Some(next) = after.winner(&args.name) {
        println!(
            "`{}` is still defined by {} in {} ({})",
            args.name,
            next.source.provider_name,
            tilde(&next.source.path),
            next.state
        );
    }
    Ok(exit::OK)
}

/// `mcpr enable`.
pub async fn enable(global: &GlobalArgs, args: ToggleArgs) -> Outcome {
    toggle(global, args, true)
}

/// `mcpr disable`.
pub async fn disable(global: &GlobalArgs, args: ToggleArgs) -> Outcome {
    toggle(global, args, false)
}

fn toggle(global: &GlobalArgs, args: ToggleArgs, enabled: bool) -> Outcome {
    let (flags, _, options) = context(global);
    let found = flags.discover();
    if let Some(failure) = &found.failure {
        return Err(Failure::usage(format!(
            "{}: {}",
            failure.path, failure.error
        )));
    }
    let change = writer::set_enabled(&found, &options, &args.name, enabled)
        .map_err(|e| Failure::usage(e.explained()))?;
    let word = if enabled { "enabled" } else { "disabled" };
    if change.changed {
        println!("`{}` {word} (in {})", args.name, tilde(&change.path));
    } else {
        println!("`{}` was already {word}", args.name);
    }
    if let Some(still_off) = change.still_off {
        println!("Note: {}", still_off.explained());
    }
    Ok(exit::OK)
}
