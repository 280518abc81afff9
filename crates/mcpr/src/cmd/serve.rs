//! `mcpr serve`: every configured server behind one MCP server (the gateway), over stdio or
//! streamable HTTP, so that sub-agents and other clients share one process per server.
//!
//! The servers connect in the background while the gateway already answers `initialize`;
//! `tools/list` waits for the start-up gate (cached tools of slow servers are offered at once).
//! However it stops — the client closes stdin, SIGINT, SIGTERM — every server is disconnected
//! before exiting, so no server process outlives the gateway. With `--watch`, a changed config
//! file is applied by difference while serving, and no server configured yet is no error: the
//! gateway waits for a config to appear.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use mcp_runtime::config::watch::ConfigWatch;
use mcp_runtime::gateway::http::{
    self, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PEER, HttpOptions, SessionLimits,
};
use mcp_runtime::gateway::{Gateway, GatewayError, GatewayOptions, ToolFilter, ToolSearchMode};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::tools::NamingStyle;
use tokio_util::sync::CancellationToken;

use crate::advice::Advise as _;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;

/// The environment variable holding the HTTP bearer token (when no --token-file is given).
const TOKEN_ENV: &str = "MCPR_GATEWAY_TOKEN";

/// Refuse to serve when too many mcpr processes stand above this one: a config that runs
/// `mcpr serve` through a wrapper, which discovery cannot see through, would otherwise start
/// gateways without bound.
fn refuse_too_deep() -> Result<(), Failure> {
    use mcp_runtime::nesting::{self, MAX_GATEWAY_DEPTH, NESTING_ENV};
    if !nesting::gateway_too_deep() {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "refusing to start a gateway nested {} levels deep ({NESTING_ENV}={}; at most \
         {MAX_GATEWAY_DEPTH}): a config that mcpr reads starts `mcpr serve`, through a script or \
         `sh -c`, so each gateway would start another. Give a gateway that another mcpr starts its \
         own servers: `mcpr serve --strict-config --config FILE`",
        nesting::depth(),
        nesting::depth(),
    )))
}

/// Arguments of `mcpr serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Tools and prompts are served as mcp_<server>_<name>; glob patterns (`*`, `?`) \
        of --tools and --deny-tools match that name or `<server>/<name>`. Resources keep their \
        URI; patterns of --resources and --deny-resources match `<server>/<uri>`. Once any \
        allow pattern (--tools or --resources) is given, the view offers only what the allow \
        patterns name: --tools alone offers no resource. Patterns match without regard to \
        case (--deny-tools '*delete*' hides Delete_File and DELETE-ALL), except --resources, \
        which matches the URI's case as written. A resource is read from a server only if that \
        server listed its URI or has a resource template for it.\n\n\
        Over HTTP, a request with an Origin header other than the gateway's own is refused \
        (403). On a loopback address without a token, every local user and process can call \
        your tools: give --token-file (or MCPR_GATEWAY_TOKEN) to require a bearer token there \
        too.\n\n\
        HTTP sessions are capped: at most --max-sessions open at once (default 512), and \
        --max-sessions-per-address from one client address (default 64; an IPv6 address \
        counts by its /64). Past a cap, `initialize` gets 503 with a Retry-After header. A \
        session whose client sends neither notifications/initialized nor a request within \
        10 s is closed; when all sessions are taken, such sessions of the busiest address \
        make room for a client of a quieter one. An initialised session is closed after 5 \
        minutes without a message. A request for a session that is unknown or gone gets 404, \
        so that its client starts a new one.\n\n\
        With --discovery, clients list two tools instead of every tool: mcpr_search_tools, \
        which finds tools for a task and adds them to that client's list (the client is sent \
        notifications/tools/list_changed), and mcpr_invoke_tool, which calls a tool by name \
        for clients that do not refresh their list. Servers marked `alwaysLoad` in the config \
        keep their tools listed. --discovery=auto:N switches it on only while the full tool \
        list would be over N tokens, estimated as its JSON's characters / 4. A search finds, \
        and the invoke tool calls, only what --servers and --tools offer.\n\n\
        Examples:\n  \
        mcpr serve                                   # stdio, every configured server\n  \
        mcpr serve --servers github,files --tools 'files/read*' --deny-tools '*delete*'\n  \
        mcpr serve --servers files --resources 'files/file:///srv/docs/*'\n  \
        mcpr serve --http 127.0.0.1:8931             # http://127.0.0.1:8931/mcp\n  \
        mcpr serve --discovery=auto:10000            # search when the tools pass ~10k tokens\n  \
        MCPR_GATEWAY_TOKEN=... mcpr serve --http 0.0.0.0:8931"
)]
pub(crate) struct ServeArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio. Loopback addresses only,
    /// unless a bearer token is set (--token-file or MCPR_GATEWAY_TOKEN); a token is enforced
    /// on loopback addresses too.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Require `Authorization: Bearer <token>` on every HTTP request, the token being the
    /// content of FILE (default: $MCPR_GATEWAY_TOKEN, if set).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// HTTP sessions open at once, from all clients together; past it, `initialize` gets 503
    /// with Retry-After.
    #[arg(
        long,
        value_name = "N",
        requires = "http",
        default_value_t = DEFAULT_MAX_SESSIONS as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_sessions: u64,
    /// HTTP sessions open at once from one client address (an IPv6 address counts by its
    /// /64); past it, `initialize` gets 503 with Retry-After.
    #[arg(
        long,
        value_name = "N",
        requires = "http",
        default_value_t = DEFAULT_MAX_SESSIONS_PER_PEER as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_sessions_per_address: u64,
    /// Only these servers (comma-separated; repeatable).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub servers: Vec<String>,
    /// Only tools and prompts matching GLOB; `!GLOB` hides instead (repeatable).
    #[arg(long = "tools", value_name = "GLOB")]
    pub tools: Vec<String>,
    /// Hide tools and prompts matching GLOB (repeatable; wins over --tools).
    #[arg(long, value_name = "GLOB")]
    pub deny_tools: Vec<String>,
    /// Only resources whose `<server>/<uri>` matches GLOB; `!GLOB` hides instead (repeatable).
    #[arg(long = "resources", value_name = "GLOB")]
    pub resources: Vec<String>,
    /// Hide resources whose `<server>/<uri>` matches GLOB (repeatable; wins over --resources).
    #[arg(long, value_name = "GLOB")]
    pub deny_resources: Vec<String>,
    /// Name tools as Claude Code does (`mcp__server__tool`).
    #[arg(long)]
    pub claude_names: bool,
    /// Serve one server's tools, prompts and resources under their own names (no
    /// `mcp_<server>_` prefix), so that the gateway can stand in for that server. The view
    /// must hold exactly one server (pick it with --servers).
    #[arg(long, conflicts_with = "claude_names")]
    pub raw_names: bool,
    /// Time limit of each tool call in ms (default: each server's own tool timeout).
    #[arg(long, value_name = "MS")]
    pub timeout: Option<u64>,
    /// Offer a search tool and an invoke tool instead of every tool: `--discovery` (or `=on`)
    /// always, `--discovery=auto:N` while the full tool list would pass N estimated tokens
    /// (characters of its JSON / 4), `=off` never (the default).
    #[arg(
        long,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "on",
        value_parser = clap::value_parser!(ToolSearchMode)
    )]
    pub discovery: Option<ToolSearchMode>,
    /// Cut each tool result to BYTES (on a block and character boundary); the whole result
    /// goes to a private file (~/.cache/mcpr/outputs) that the cut result names. 0 for no
    /// cap. Default: $MCPR_MAX_OUTPUT, else 100000 (about 25k tokens).
    #[arg(long, value_name = "BYTES")]
    pub max_output: Option<usize>,
    /// Reload when a config file changes (polled twice a second): added servers start,
    /// removed ones stop, changed ones restart, the others keep running; clients are sent
    /// `notifications/tools/list_changed` when the tools change.
    #[arg(long)]
    pub watch: bool,
    #[command(flatten)]
    pub state_key: crate::cmd::state_key::StateKeyArgs,
}

pub(crate) async fn run(global: &GlobalArgs, args: ServeArgs) -> Outcome {
    if let Some(done) = crate::cmd::state_key::maintain(&args.state_key) {
        return done;
    }
    refuse_too_deep()?;
    let state_key = crate::cmd::state_key::load(&args.state_key)?;
    let mut discovery = if args.watch && args.servers.is_empty() {
        // Watching, no server yet is no error: the gateway serves nothing until a config
        // appears, then serves it.
        let discovery = crate::discovery::discover(global)?;
        if discovery.configs.is_empty() {
            eprintln!(
                "mcpr serve: no MCP servers configured yet; waiting for a config file to appear \
                 or change (--watch)"
            );
        }
        discovery
    } else {
        crate::discovery::discover_some(global)?
    };
    if !args.servers.is_empty() {
        let unknown: Vec<&str> = args
            .servers
            .iter()
            .filter(|name| !discovery.configs.contains_key(*name))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(Failure::usage(format!(
                "no enabled server named {}",
                unknown.join(", ")
            )));
        }
        discovery
            .configs
            .retain(|name, _| args.servers.contains(name));
    }
    if args.raw_names && discovery.configs.len() != 1 {
        return Err(Failure::usage(format!(
            "--raw-names serves one server under its own names, but the view holds {} servers; \
             pick one with --servers",
            discovery.configs.len()
        )));
    }
    let token = token(&args)?;
    if let Some(token) = &token {
        // However it was given (flag, file or variable), no backend gets it under any name: with
        // it, a backend could call every other backend's tools through this gateway.
        mcp_runtime::client::withhold_from_servers(token);
    }
    if let Some(addr) = args.http
        && token.is_none()
        && !addr.ip().is_loopback()
    {
        // Refused before any server starts.
        return Err(token_required(GatewayError::TokenRequired { addr }));
    }
    let output_cap = crate::cmd::agent_output_cap(args.max_output)?;
    let filter = filter(&args);
    let always_load = always_loaded(&discovery.configs);
    let watch = args.watch.then(|| {
        let flags = crate::discovery::CliFlags::from(global);
        let mut watch = ConfigWatch::new(&flags.cwd(), flags.options());
        watch.set_reads(&discovery);
        watch
    });

    let manager = McpManager::new(
        // The gateway keeps the per-user tool cache and stored logins.
        ManagerOptions::for_user()
            .with_project(discovery.cwd.clone())
            .with_reconnect(true)
            .with_inherit_env(mcp_runtime::client::environment::inherit_requested())
            // A server's questions during a call go to the client that made it.
            .with_relay_input(true),
    );
    let gateway = Gateway::new(
        manager.clone(),
        GatewayOptions::default()
            .with_filter(filter)
            .with_naming(if args.raw_names {
                NamingStyle::Raw
            } else if args.claude_names {
                NamingStyle::Claude
            } else {
                NamingStyle::Mcpr
            })
            .with_call_timeout(args.timeout.map(Duration::from_millis))
            .with_tool_search(args.discovery.unwrap_or_default())
            .with_always_load(always_load)
            .with_output_cap(output_cap)
            .with_state_key(state_key),
    );

    // Connect in the background: a client's `initialize` is answered at once, its
    // `tools/list` waits for the gate (see `Gateway::starting`).
    let starting = gateway.starting();
    let connecting = {
        let manager = manager.clone();
        let (configs, sources) = (discovery.configs, discovery.sources);
        tokio::spawn(async move {
            let report = manager.connect_servers(configs, sources).await;
            drop(starting);
            for (name, error) in &report.errors {
                eprintln!(
                    "mcpr serve: {}",
                    crate::cmd::tools::with_name(name, &error.explained())
                );
            }
        })
    };

    let serving = async {
        match args.http {
            None => serve_stdio(gateway).await,
            Some(addr) => serve_http(gateway, addr, token, session_limits(&args)).await,
        }
    };
    let served = match watch {
        None => serving.await,
        Some(watch) => tokio::select! {
            served = serving => served,
            never = reload_on_change(global, &args.servers, &manager, watch) => match never {},
        },
    };
    // Whatever ended serving, no server process may outlive us.
    connecting.abort();
    manager.disconnect_all().await;
    served
}

/// `--watch`: whenever a config file changes, discover again and reload the servers by
/// difference (the gateway tells its clients when the tools change). Runs until dropped; a
/// discovery that fails as a whole leaves the servers as they are.
async fn reload_on_change(
    global: &GlobalArgs,
    only: &[String],
    manager: &McpManager,
    mut watch: ConfigWatch,
) -> Infallible {
    loop {
        watch.changed().await;
        let discovery = match crate::discovery::discover(global) {
            Ok(discovery) => discovery,
            Err(failure) => {
                eprintln!("mcpr serve: {failure}; servers left as they were");
                continue;
            }
        };
        watch.set_reads(&discovery);
        if let Some(files) = crate::discovery::broken_sources(&discovery, manager) {
            eprintln!("mcpr serve: {files} cannot be read; servers left as they were");
            continue;
        }
        let mut configs = discovery.configs;
        if !only.is_empty() {
            configs.retain(|name, _| only.contains(name));
        }
        let summary = manager.reload(configs, discovery.sources).await;
        if !summary.is_noop() {
            eprintln!(
                "mcpr serve: reloaded: {}",
                crate::term::line(&summary.to_string())
            );
        }
        for (name, error) in &summary.startup.errors {
            eprintln!(
                "mcpr serve: {}",
                crate::term::text(&crate::cmd::tools::with_name(name, &error.to_string()))
            );
        }
    }
}

/// Serve one client on stdin/stdout until it closes stdin or a signal arrives.
async fn serve_stdio(gateway: Gateway) -> Outcome {
    tokio::select! {
        served = gateway.serve_stdio() => served.map(|()| exit::OK).map_err(Failure::internal),
        _ = crate::shutdown::interrupted() => Ok(exit::OK),
    }
}

/// The library says a token is needed; the CLI says how to give one.
fn token_required(error: GatewayError) -> Failure {
    Failure::usage(format!("{error} (--token-file FILE or {TOKEN_ENV})"))
}

/// The caps on HTTP sessions, as given (a count past the address space is no cap).
fn session_limits(args: &ServeArgs) -> SessionLimits {
    let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    SessionLimits {
        max_sessions: count(args.max_sessions),
        max_per_peer: count(args.max_sessions_per_address),
    }
}

/// Serve streamable HTTP until SIGINT or SIGTERM.
async fn serve_http(
    gateway: Gateway,
    addr: SocketAddr,
    token: Option<String>,
    sessions: SessionLimits,
) -> Outcome {
    let mut options = HttpOptions::new(addr).with_session_limits(sessions);
    options.token = token;
    let server = http::bind(gateway, options).await.map_err(|e| match e {
        GatewayError::TokenRequired { .. } => token_required(e),
        other => Failure::connection(other),
    })?;
    // Scripts and tests read this line to find the port.
    eprintln!("listening on {}", server.url());
    let stop = CancellationToken::new();
    let signal = stop.clone();
    let watcher = tokio::spawn(async move {
        crate::shutdown::interrupted().await;
        signal.cancel();
    });
    let served = server.serve(stop).await;
    watcher.abort();
    served.map(|()| exit::OK).map_err(Failure::internal)
}

/// The bearer token: --token-file, else $MCPR_GATEWAY_TOKEN.
fn token(args: &ServeArgs) -> Result<Option<String>, Failure> {
    let token = match &args.token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Failure::usage(format!(
                    "cannot read --token-file {}: {e}",
                    mcp_runtime::fsutil::display_path(path)
                ))
            })?;
            let token = text.trim().to_owned();
            if token.is_empty() {
                return Err(Failure::usage(format!(
                    "--token-file {} is empty",
                    mcp_runtime::fsutil::display_path(path)
                )));
            }
            warn_if_shared(path);
            Some(token)
        }
        None => std::env::var(TOKEN_ENV)
            .ok()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty()),
    };
    Ok(token)
}

/// Warn when other users can read the token file: whoever reads it can call every tool behind
/// the gateway, which is what the token is meant to stop.
fn warn_if_shared(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(metadata) = std::fs::metadata(path) {
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            eprintln!(
                "mcpr serve: warning: --token-file {} can be read by other users (mode {mode:03o}); \
                 whoever can read it can call your tools through the gateway (chmod 600 it)",
                mcp_runtime::fsutil::display_path(path)
            );
        }
    }
}

/// The servers marked `alwaysLoad`: their tools stay listed in discovery mode.
fn always_loaded(
    configs: &indexmap::IndexMap<String, mcp_runtime::config::ServerConfig>,
) -> BTreeSet<String> {
    configs
        .iter()
        .filter(|(_, config)| config.always_load)
        .map(|(name, _)| name.clone())
        .collect()
}

/// The scoped view of the flags.
fn filter(args: &ServeArgs) -> ToolFilter {
    let mut filter = ToolFilter::default();
    if !args.servers.is_empty() {
        filter = filter.with_servers(args.servers.iter().cloned());
    }
    for glob in &args.tools {
        filter = filter.with_pattern(glob.clone());
    }
    for glob in &args.deny_tools {
        filter = filter.deny(glob.clone());
    }
    for glob in &args.resources {
        filter = filter.with_resource_pattern(glob.clone());
    }
    for glob in &args.deny_resources {
        filter = filter.deny_resource(glob.clone());
    }
    filter
}

#[cfg(test)]
mod tests {
    use clap::Args as _;
    use mcp_runtime::gateway::http::{IDLE_EXPIRY, INIT_GRACE};

    use super::*;

    #[test]
    fn the_help_states_the_session_limits_in_force() {
        let command = ServeArgs::augment_args(clap::Command::new("serve"));
        let help = command.get_after_help().expect("an after help").to_string();
        for stated in [
            format!("(default {DEFAULT_MAX_SESSIONS})"),
            format!("(default {DEFAULT_MAX_SESSIONS_PER_PEER};"),
            format!("within {} s", INIT_GRACE.as_secs()),
            format!("after {} minutes", IDLE_EXPIRY.as_secs() / 60),
        ] {
            assert!(help.contains(&stated), "{stated:?} not in {help}");
        }
    }
}
