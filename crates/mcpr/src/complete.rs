//! Dynamic shell completion: the scripts `mcpr completions SHELL` prints ask mcpr itself for
//! candidates (`COMPLETE=bash mcpr -- mcpr call ...`, clap_complete's `CompleteEnv`), so that
//! server names come from the configs and tool names from the tool cache at the moment of
//! completion. Nothing is started and nothing is run: discovery only reads config files, and
//! tools are those the cache remembers from earlier listings.
//!
//! Completion runs for the current directory with the default config locations (flags such as
//! `--cwd` or `--config` typed earlier on the line are not applied).

use std::collections::BTreeSet;
use std::ffi::OsStr;

use clap_complete::engine::CompletionCandidate;
use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::config::Discovery;
use mcp_runtime::manager::ServerTools;
use mcp_runtime::tools::{NamingStyle, mcp_tools};

use crate::flags::GlobalArgs;

/// The environment variable through which a shell asks for completions.
pub(crate) const COMPLETE_VAR: &str = "COMPLETE";

/// The registration script of `shell`: it hands every completion of `mcpr` to
/// `COMPLETE=<shell> mcpr -- ...`.
pub(crate) fn registration(shell: clap_complete::Shell) -> std::io::Result<Vec<u8>> {
    use clap_complete::env::EnvCompleter;
    let mut script = Vec::new();
    let completer: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &clap_complete::env::Bash,
        clap_complete::Shell::Zsh => &clap_complete::env::Zsh,
        clap_complete::Shell::Fish => &clap_complete::env::Fish,
        clap_complete::Shell::Elvish => &clap_complete::env::Elvish,
        clap_complete::Shell::PowerShell => &clap_complete::env::Powershell,
        _ => &clap_complete::env::Bash,
    };
    completer.write_registration(COMPLETE_VAR, "mcpr", "mcpr", "mcpr", &mut script)?;
    Ok(script)
}

/// What discovery finds here, quietly (completion must not write to the terminal).
fn discovery() -> Option<Discovery> {
    let found = crate::discovery::CliFlags::from(&GlobalArgs::default()).discover();
    found.failure.is_none().then_some(found)
}

/// Every configured server's name.
pub(crate) fn server_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(found) = discovery() else {
        return Vec::new();
    };
    let names: BTreeSet<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
    candidates(names.into_iter().map(str::to_owned), current)
}

/// The tools the cache remembers for the enabled servers.
fn cached_tools(found: &Discovery) -> Vec<ServerTools> {
    let Some(cache) = ToolCache::user_default() else {
        return Vec::new();
    };
    found
        .configs
        .iter()
        .filter_map(|(name, config)| {
            let tools = cache.get(&CacheKey::new(name, &found.cwd, config))?;
            Some(ServerTools {
                server: name.clone(),
                source: None,
                tools: tools.into(),
                deferred: true,
            })
        })
        .collect()
}

/// For `mcpr call`: server names, the cached tools' names, and their agent-facing names
/// (`mcp_<server>_<tool>`, as the gateway and the shell name them).
pub(crate) fn call_targets(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(found) = discovery() else {
        return Vec::new();
    };
    let servers = cached_tools(&found);
    let mut names: BTreeSet<String> = found.configs.keys().cloned().collect();
    names.extend(
        servers
            .iter()
            .flat_map(|s| s.tools.iter().map(|t| t.name.clone())),
    );
    names.extend(
        mcp_tools(&servers, NamingStyle::Mcpr)
            .into_iter()
            .map(|t| t.name),
    );
    candidates(names.into_iter(), current)
}

/// The names that start with what was typed so far.
fn candidates(names: impl Iterator<Item = String>, current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    names
        .filter(|name| name.starts_with(typed.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}
