//! Which server and tool a `mcpr call` names: `SERVER TOOL`, a tool of a server given inline,
//! or an agent-facing `mcp_<server>_<tool>` name. A name is resolved from the configs and the
//! tool cache, so that only the server offering the tool is started; only when the cache
//! cannot decide are the servers the name could belong to started and asked, and never the
//! others, which cannot offer it. A name nobody offers gets a "did you mean".

use std::sync::Arc;

use indexmap::IndexMap;
use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::config::{Discovery, ServerConfig};
use mcp_runtime::manager::{ServerError, ServerTools};
use mcp_runtime::tools::{NamingStyle, mcp_tools, sanitize, servers_for_name};

use crate::advice::Advise as _;
use crate::connect::{OneShot, Progress, StartOptions, start};
use crate::exit::Failure;
use crate::inline::INLINE_NAME;
use crate::suggest::{closest, did_you_mean};

/// What a call's words name.
pub(crate) struct Target<'a> {
    /// The server, as configured.
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
    /// The words after the name: the tool's arguments.
    pub arguments: &'a [String],
    /// Servers started while resolving a name the cache could not, to call through.
    pub started: Option<OneShot>,
}

/// Read the call's `words` (`SERVER TOOL ARGS...`, `NAME ARGS...`, or with a server given
/// `inline`, `[inline] TOOL ARGS...`) against the servers of `discovery`.
pub(crate) async fn resolve<'a>(
    discovery: &Discovery,
    words: &'a [String],
    inline: bool,
) -> Result<Target<'a>, Failure> {
    let named = |server: &str, tool: &str, arguments: &'a [String]| Target {
        server: server.to_owned(),
        tool: tool.to_owned(),
        arguments,
        started: None,
    };
    let Some(first) = words.first() else {
        return Err(Failure::usage("which tool? (see `mcpr tools`)"));
    };
    if inline {
        // One server: its name may be left out.
        let words = match words {
            [name, rest @ ..]
                if name == INLINE_NAME && rest.first().is_some_and(|w| !is_arguments(w)) =>
            {
                rest
            }
            all => all,
        };
        return match words {
            [tool, arguments @ ..] => Ok(named(INLINE_NAME, tool, arguments)),
            [] => Err(Failure::usage("which tool of the inline server?")),
        };
    }
    if discovery.configs.contains_key(first) {
        return match words.get(1) {
            Some(tool) => Ok(named(first, tool, &words[2..])),
            None => Err(Failure::usage(format!(
                "which tool of `{first}`? (see `mcpr tools {first}`)"
            ))),
        };
    }
    // `mcp_<server>_<tool>` names always start with `mcp_`; anything else names a server.
    if first.starts_with("mcp_") {
        let (server, tool, started) = by_name(discovery, first).await?;
        return Ok(Target {
            server,
            tool,
            arguments: &words[1..],
            started,
        });
    }
    // A server a config defines but that cannot start (a missing variable, untrusted): why.
    if discovery.errors.contains_key(first.as_str()) || discovery.winner(first).is_some() {
        return Err(crate::discovery::not_enabled(discovery, first));
    }
    let names: Vec<&str> = discovery.configs.keys().map(String::as_str).collect();
    Err(Failure::usage(format!(
        "no enabled server named `{}` (configured: {}){}",
        crate::term::line(first),
        names.join(", "),
        did_you_mean(first, names.iter().copied())
    )))
}

/// Whether `word` is tool arguments (JSON, `@FILE`, `-`, `key=value`) rather than a name.
pub(crate) fn is_arguments(word: &str) -> bool {
    word.starts_with('{') || word.starts_with('@') || word == "-" || word.contains('=')
}

/// The server and tool of the agent-facing `name`, and the servers started to find them
/// when the cache could not tell.
async fn by_name(
    discovery: &Discovery,
    name: &str,
) -> Result<(String, String, Option<OneShot>), Failure> {
    let owners = servers_for_name(
        NamingStyle::Mcpr,
        name,
        discovery.configs.keys().map(String::as_str),
    );
    if owners.is_empty() {
        return Err(no_owner(discovery, name));
    }
    let owners: IndexMap<String, ServerConfig> = owners
        .into_iter()
        .filter_map(|s| Some((s.to_owned(), discovery.configs.get(s)?.clone())))
        .collect();
    if let Some(cached) = cached_tools(discovery, &owners)
        && let Some(found) = mcp_tools(&cached, NamingStyle::Mcpr)
            .into_iter()
            .find(|t| t.name == name)
    {
        return Ok((found.server, found.tool, None));
    }
    // Not cached, or a tool the cache does not know yet: ask those servers, and only them.
    let sources = discovery
        .sources
        .iter()
        .filter(|(server, _)| owners.contains_key(*server))
        .map(|(server, source)| (server.clone(), source.clone()))
        .collect();
    let options = StartOptions {
        progress: Progress::Quiet,
        wait: true,
        reconnect: false,
    };
    let started =
        crate::shutdown::until_signal(start(discovery.cwd.clone(), owners, sources, options))
            .await?;
    let tools = mcp_tools(&started.report.servers, NamingStyle::Mcpr);
    let held = started.manager.held_tools();
    let servers = OneShot::Manager(started.manager);
    if let Some(found) = tools.iter().find(|t| t.name == name) {
        return Ok((found.server.clone(), found.tool.clone(), Some(servers)));
    }
    servers.stop().await;
    // A held tool has no name in the view; say why rather than "no tool".
    if let Some(failure) = crate::cmd::trust_pins::held_by_name(name, &held) {
        return Err(failure);
    }
    let names = tools.iter().map(|t| t.name.as_str());
    Err(unknown_name(name, names, &started.report.errors))
}

/// The cached tools of every server in `owners`, or `None` when one has no cache entry (the
/// names of a set depend on the whole set).
fn cached_tools(
    discovery: &Discovery,
    owners: &IndexMap<String, ServerConfig>,
) -> Option<Vec<ServerTools>> {
    let cache = ToolCache::user_default()?;
    owners
        .iter()
        .map(|(server, config)| {
            let tools = cache.get(&CacheKey::new(server, &discovery.cwd, config))?;
            Some(ServerTools {
                server: server.clone(),
                source: discovery.sources.get(server).cloned(),
                tools: Arc::from(tools),
                deferred: false,
            })
        })
        .collect()
}

/// A name no server offers: exit 2 with the closest name, or exit 3 when a server that could
/// offer it failed to start (naming only those servers).
fn unknown_name<'a>(
    name: &str,
    names: impl IntoIterator<Item = &'a str>,
    errors: &IndexMap<String, ServerError>,
) -> Failure {
    if errors.is_empty() {
        return Failure::usage(format!(
            "no tool named `{}`{} (see `mcpr tools`)",
            crate::term::line(name),
            did_you_mean(name, names)
        ));
    }
    let failed: Vec<String> = errors
        .iter()
        .map(|(server, error)| {
            crate::cmd::tools::with_name(server, error.explained().lines().next().unwrap_or(""))
        })
        .collect();
    Failure::connection(format!(
        "no tool named `{}`: the server it would belong to failed to start: {}",
        crate::term::line(name),
        crate::term::line(&failed.join("; "))
    ))
}

/// A name whose `mcp_<server>_` part matches no configured server: exit 2, suggesting the
/// name with the closest server, and naming the servers there are.
fn no_owner(discovery: &Discovery, name: &str) -> Failure {
    let servers: Vec<String> = discovery.configs.keys().map(|s| sanitize(s)).collect();
    let guess = name.strip_prefix("mcp_").and_then(|rest| {
        rest.match_indices('_').find_map(|(at, _)| {
            let server = closest(&rest[..at], servers.iter().map(String::as_str))?;
            Some(format!("mcp_{server}_{}", &rest[at + 1..]))
        })
    });
    let hint = guess
        .map(|g| format!("; did you mean `{}`?", crate::term::line(&g)))
        .unwrap_or_default();
    let names: Vec<&str> = discovery.configs.keys().map(String::as_str).collect();
    Failure::usage(format!(
        "no tool named `{}`: no configured server's tools are named so (configured: {}){hint}",
        crate::term::line(name),
        names.join(", ")
    ))
}
