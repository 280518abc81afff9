//! `mcpr add | remove | enable | disable`: edit mcpr's own config files:
//! `$XDG_CONFIG_HOME/mcpr/mcp.json` (user) or `.mcpr/mcp.json` (project). `add --to HOST`
//! writes that host's file instead (`cmd/hosts.rs`).
//!
//! ```text
//! mcpr add [--scope user|project] [-e K=V]... NAME [--] CMD ARGS...
//! mcpr add --to claude|cursor|vscode|codex|gemini [--scope user|project|local] NAME ...
//! mcpr add [--transport http|sse] [-H 'K: V']... NAME URL      (or NAME --url URL)
//! mcpr add-json NAME '{"command": "...", "args": [...]}'
//! mcpr add NAME --from-registry SERVER[@VERSION] [-e K=V]... [--header-value VAR=V]...
//! mcpr remove NAME [--scope user|project]
//! mcpr enable NAME | mcpr disable NAME
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use mcp_runtime::config::writer::hosts::HostScope;
use mcp_runtime::config::writer::{self, Scope};
use mcp_runtime::config::{
    DiscoveryOptions, HttpConfig, HttpKind, ProjectTrustState, ServerConfig, ServerState,
    StdioConfig, Transport, load_all_mcp_configs, server_from_json, trust_project,
};

use crate::advice::Advise as _;
use crate::discovery::CliFlags;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use mcp_runtime::fsutil::display_path;

/// Which file to edit: mcpr's own, or with `--to HOST` that host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ScopeArg {
    /// `$XDG_CONFIG_HOME/mcpr/mcp.json` (default `~/.config/mcpr/mcp.json`), or the host's
    /// file in the home directory.
    User,
    /// `.mcpr/mcp.json` in the project (shared with the repository; needs `mcpr trust`), or
    /// the host's project file.
    Project,
    /// With `--to claude`: this project's entry in `~/.claude.json` (Claude Code's local
    /// scope).
    Local,
}

impl ScopeArg {
    /// The mcpr file this names (`local` is Claude Code's only).
    pub(crate) fn mcpr(self) -> Result<Scope, Failure> {
        match self {
            ScopeArg::User => Ok(Scope::User),
            ScopeArg::Project => Ok(Scope::Project),
            ScopeArg::Local => Err(Failure::usage(
                "--scope local is Claude Code's (with --to claude); mcpr's own files are user \
                 or project",
            )),
        }
    }

    /// The host file this names.
    pub(crate) fn host(self) -> HostScope {
        match self {
            ScopeArg::User => HostScope::User,
            ScopeArg::Project => HostScope::Project,
            ScopeArg::Local => HostScope::Local,
        }
    }
}

/// Transports `mcpr add` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TransportArg {
    /// A local process (the default with a command).
    Stdio,
    /// Streamable HTTP (the default with `--url`).
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
}

/// Arguments of `mcpr add`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "mcpr's options go before NAME; everything after the command belongs to the server, \
even words that look like options.\n\nExamples:\n  \
mcpr add everything npx -y @modelcontextprotocol/server-everything\n  \
mcpr add -e API_KEY='${API_KEY}' search -- node search.js --verbose\n  \
mcpr add --transport http docs https://example.com/mcp -H 'Authorization: Bearer ${TOKEN}'\n  \
mcpr add --from-registry io.github.example/server example"
)]
pub(crate) struct AddArgs {
    /// The server's name (any characters; tool names are sanitised separately).
    pub name: String,
    /// Which file to write.
    #[arg(short, long, value_enum, default_value = "user")]
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
    /// Write this host's own config file instead of mcpr's, in its shape (`--scope` picks its
    /// user or project file, or for Claude Code `local`).
    #[arg(
        long,
        value_enum,
        value_name = "HOST",
        conflicts_with = "from_registry"
    )]
    pub to: Option<crate::cmd::hosts::HostArg>,
    /// Replace an existing server of that name in the same file.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub sandbox: crate::cmd::sandbox::SandboxArgs,
    /// The server's command and its arguments (`--` before them is optional), or with
    /// `--transport http|sse` its URL.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND|URL"
    )]
    pub command: Vec<String>,
}

/// Arguments of `mcpr add-json`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mcpr add-json files '{\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"]}'\n  \
mcpr add-json docs '{\"type\": \"http\", \"url\": \"https://example.com/mcp\"}'"
)]
pub(crate) struct AddJsonArgs {
    /// The server's name.
    pub name: String,
    /// The server's entry, as it would appear under `mcpServers` in a config file.
    pub json: String,
    /// Which file to write.
    #[arg(short, long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// Write this host's own config file instead of mcpr's, in its shape.
    #[arg(long, value_enum, value_name = "HOST")]
    pub to: Option<crate::cmd::hosts::HostArg>,
    /// Replace an existing server of that name in the same file.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `mcpr remove`.
#[derive(Debug, clap::Args)]
pub(crate) struct RemoveArgs {
    /// The server's name.
    #[arg(add = clap_complete::engine::ArgValueCompleter::new(crate::complete::server_names))]
    pub name: String,
    /// Which file (needed only when both define the server).
    #[arg(short, long, value_enum)]
    pub scope: Option<ScopeArg>,
}

/// Arguments of `mcpr enable` and `mcpr disable`.
#[derive(Debug, clap::Args)]
pub(crate) struct ToggleArgs {
    /// The server's name, as `mcpr servers` shows it.
    #[arg(add = clap_complete::engine::ArgValueCompleter::new(crate::complete::server_names))]
    pub name: String,
}

/// Whether `word` is the URL of a remote server rather than a program.
fn is_url(word: &str) -> bool {
    word.starts_with("http://") || word.starts_with("https://")
}

fn is_header_flag(word: &str) -> bool {
    word == "-H" || word == "--header" || word.starts_with("--header=")
}

/// The values of `-H V` / `--header V` / `--header=V` words after a URL; anything else there
/// is an error (a remote server takes no arguments).
fn trailing_headers(words: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if let Some(value) = word.strip_prefix("--header=") {
            out.push(value.to_owned());
        } else if is_header_flag(word) {
            let value = words
                .next()
                .ok_or_else(|| format!("{word} needs a value: {word} 'Name: value'"))?;
            out.push(value.clone());
        } else {
            return Err(format!(
                "`{word}` after the URL: a remote server takes only headers there (-H 'Name: value')"
            ));
        }
    }
    Ok(out)
}

fn build(args: &AddArgs) -> Result<ServerConfig, String> {
    // `mcpr add --transport http NAME URL` (as `claude mcp add` takes it), or a lone URL.
    let remote = matches!(args.transport, Some(TransportArg::Http | TransportArg::Sse));
    let mut headers = args.headers.clone();
    let positional_url = match args.command.as_slice() {
        [url] if args.url.is_none() && (remote || is_url(url)) => Some(url.clone()),
        // `NAME URL -H 'K: V'...`: headers may follow the URL, as `claude mcp add` takes them.
        [url, rest @ ..]
            if args.url.is_none() && (remote || is_url(url)) && is_header_flag(&rest[0]) =>
        {
            headers.extend(trailing_headers(rest)?);
            Some(url.clone())
        }
        [_, _, ..] if args.url.is_none() && remote => {
            let kind = if args.transport == Some(TransportArg::Sse) {
                "sse"
            } else {
                "http"
            };
            return Err(format!(
                "--transport {kind} takes one URL after the name: mcpr add --transport {kind} {} URL",
                args.name
            ));
        }
        _ => None,
    };
    let (url, command) = match &positional_url {
        Some(url) => (Some(url), &[][..]),
        None => (args.url.as_ref(), args.command.as_slice()),
    };
    let transport = match (url, command.is_empty(), args.transport) {
        (Some(_), false, _) => {
            return Err("give either a command or --url, not both".into());
        }
        (None, true, _) => {
            return Err(format!(
                "give the server's command after its name (mcpr add {0} CMD ARGS...), or its \
                     URL (mcpr add --transport http {0} URL)",
                args.name
            ));
        }
        (Some(_), true, Some(TransportArg::Stdio)) => {
            return Err("--transport stdio needs a command, not a URL".into());
        }
        (None, false, Some(TransportArg::Http | TransportArg::Sse)) => {
            return Err("--transport http/sse needs a URL".into());
        }
        (None, false, _) => {
            if !headers.is_empty() {
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
                command: command[0].clone(),
                args: command[1..].to_vec(),
                env,
                cwd: None,
                sandbox: args
                    .sandbox
                    .policy(&std::env::current_dir().unwrap_or_default()),
                inherit_env: false,
            })
        }
        (Some(url), true, kind) => {
            if !args.env.is_empty() {
                return Err("-e/--env is for stdio servers (a command, not a URL)".into());
            }
            if args.sandbox.sandbox {
                return Err("--sandbox is for stdio servers (a command, not a URL)".into());
            }
            let mut parsed = BTreeMap::new();
            for header in &headers {
                let (key, value) = crate::inline::parse_header(header)?;
                parsed.insert(key, value);
            }
            Transport::Http(HttpConfig {
                url: url.clone(),
                headers: parsed,
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
pub(crate) fn project_trusted(cwd: &Path, options: &DiscoveryOptions) -> bool {
    load_all_mcp_configs(cwd, options).project.state == ProjectTrustState::Trusted
}

/// After mcpr itself changed `.mcpr/mcp.json` of a trusted project, trust the new contents:
/// the user made this change, not the repository.
pub(crate) fn keep_trust(cwd: &Path, options: &DiscoveryOptions, was_trusted: bool) {
    if was_trusted && let Err(e) = trust_project(cwd, options) {
        eprintln!("warning: could not keep the project trusted: {e}");
    }
}

pub(crate) fn context(global: &GlobalArgs) -> (CliFlags, std::path::PathBuf, DiscoveryOptions) {
    let flags = crate::discovery::CliFlags::from(global);
    let cwd = flags.cwd();
    let options = flags.options();
    (flags, cwd, options)
}

/// `mcpr add`.
pub(crate) async fn add(global: &GlobalArgs, args: AddArgs) -> Outcome {
    let scope_arg = if args.project {
        ScopeArg::Project
    } else {
        args.scope
    };
    if let Some(host) = args.to {
        let config = build(&args).map_err(Failure::usage)?;
        return crate::cmd::hosts::write_to_host(
            global,
            host.into(),
            scope_arg.host(),
            &args.name,
            &config,
            args.force,
        );
    }
    let scope = scope_arg.mcpr()?;
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
    write_server(global, scope, &args.name, &config, args.force)
}

/// `mcpr add-json NAME JSON`: a server entry in the JSON of a config file.
pub(crate) async fn add_json(global: &GlobalArgs, args: AddJsonArgs) -> Outcome {
    let entry: serde_json::Value = serde_json::from_str(&args.json)
        .map_err(|e| Failure::usage(format!("the server's entry is not valid JSON: {e}")))?;
    let config = server_from_json(&args.name, &entry).map_err(Failure::usage)?;
    if let Some(host) = args.to {
        return crate::cmd::hosts::write_to_host(
            global,
            host.into(),
            args.scope.host(),
            &args.name,
            &config,
            args.force,
        );
    }
    write_server(global, args.scope.mcpr()?, &args.name, &config, args.force)
}

/// Write `config` as `name` to mcpr's file of `scope`, and say where it went and what else
/// defines that name.
fn write_server(
    global: &GlobalArgs,
    scope: Scope,
    name: &str,
    config: &ServerConfig,
    force: bool,
) -> Outcome {
    let (_, cwd, options) = context(global);
    let was_trusted = scope == Scope::Project && project_trusted(&cwd, &options);
    let path = writer::add_server(&options, &cwd, scope, name, config, force)
        .map_err(|e| Failure::usage(e.explained()))?;
    keep_trust(&cwd, &options, was_trusted);
    let shown = config.redacted();
    println!(
        "Added `{name}` ({}: {}) to {}",
        shown.transport,
        shown.target(),
        display_path(&path)
    );
    let found = load_all_mcp_configs(&cwd, &options);
    let others: Vec<String> = found
        .servers
        .iter()
        .filter(|s| s.name == name && s.source.path != path)
        .map(|s| {
            format!(
                "{} ({})",
                s.source.provider_name,
                display_path(&s.source.path)
            )
        })
        .collect();
    if !others.is_empty() {
        // Paths of other tools' files, some inside the project: shown escaped.
        println!("Also defined by: {}", crate::term::line(&others.join(", ")));
    }
    if let Some(winner) = found.winner(name)
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
pub(crate) async fn remove(global: &GlobalArgs, args: RemoveArgs) -> Outcome {
    let (flags, cwd, options) = context(global);
    let found = flags.discover();
    let was_trusted = found.project.state == ProjectTrustState::Trusted;
    let path = writer::remove_server(
        &options,
        &cwd,
        &args.name,
        args.scope.map(ScopeArg::mcpr).transpose()?,
        Some(&found),
    )
    .map_err(|e| Failure::usage(e.explained()))?;
    if path == writer::project_config_path(&cwd) {
        keep_trust(&cwd, &options, was_trusted);
    }
    println!("Removed `{}` from {}", args.name, display_path(&path));
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
            display_path(&next.source.path),
            next.state
        );
    }
    Ok(exit::OK)
}

/// `mcpr enable`.
pub(crate) async fn enable(global: &GlobalArgs, args: ToggleArgs) -> Outcome {
    toggle(global, args, true)
}

/// `mcpr disable`.
pub(crate) async fn disable(global: &GlobalArgs, args: ToggleArgs) -> Outcome {
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
        println!("`{}` {word} (in {})", args.name, display_path(&change.path));
    } else {
        println!("`{}` was already {word}", args.name);
    }
    if let Some(still_off) = change.still_off {
        println!("Note: {}", still_off.explained());
    }
    Ok(exit::OK)
}
