//! What the manager keeps in the tool cache: a server's last tools (used at the next start-up,
//! and instead of listing while the server's `ttlMs` says they are fresh) and its failed starts.
//! Without the `cache` feature each of these does nothing and nothing is known in advance.

use std::sync::Arc;

use super::connection::Connector;
use super::report::ServerError;
use super::state::Inner;
use crate::cache::CacheHints;
#[cfg(feature = "cache")]
use crate::cache::CacheKey;
#[cfg(feature = "cache")]
use crate::client::ClientError;
use crate::client::ToolDefinition;
use crate::config::ServerConfig;

/// The cached tools of `name`, if the server's last list is still within its `ttlMs`.
#[cfg(feature = "cache")]
pub(super) async fn fresh_cached_tools<C: Connector>(
    inner: &Inner<C>,
    name: &str,
    config: &ServerConfig,
) -> Option<Vec<ToolDefinition>> {
    let cache = inner.options.cache.as_ref()?;
    let key = CacheKey::new(name, &inner.options.project, config);
    let entry = cache
        .run(move |cache| cache.get_entry(&key))
        .await
        .ok()
        .flatten()?;
    if entry.fresh {
        tracing::debug!(
            server = name,
            "tool list still fresh in the cache; not listing"
        );
    }
    entry.fresh.then_some(entry.tools)
}

/// Write a server's tools to the cache in the background (best effort), as the server's
/// caching hints allow: a private list of a remote server is not written; a private list of a
/// stdio server is kept as deferred tools only (see [`stand_in_hints`]).
#[cfg(feature = "cache")]
pub(super) fn store_tools<C: Connector>(
    inner: &Inner<C>,
    name: &str,
    config: &ServerConfig,
    tools: &Arc<[ToolDefinition]>,
    hints: CacheHints,
) {
    let Some(cache) = inner.options.cache.as_ref() else {
        return;
    };
    let hints = stand_in_hints(config, hints);
    let key = CacheKey::new(name, &inner.options.project, config);
    let tools = tools.clone();
    // Not awaited: shutting down waits for the cache's queue (`disconnect_all_within`).
    cache.queue(move |cache| cache.put_with_hints(&key, &tools, hints));
}

/// Remember in the tool cache that `name` failed to start, so the next start-up does not hold
/// its answer for it (a cancelled start is no failure of the server).
#[cfg(feature = "cache")]
pub(super) fn remember_failure<C: Connector>(
    inner: &Inner<C>,
    name: &str,
    config: &ServerConfig,
    error: &ServerError,
) {
    let Some(cache) = inner.options.cache.as_ref() else {
        return;
    };
    if matches!(error.client_error(), Some(ClientError::Cancelled { .. })) {
        return;
    }
    let key = CacheKey::new(name, &inner.options.project, config);
    let error = error.to_string();
    cache.queue(move |cache| cache.put_failure(&key, &error));
}

/// The hints a tool list is stored under. `private` forbids sharing a list across
/// authorization contexts. A stdio server's context is its command, arguments and
/// environment, all in the cache key's config hash, and the cache file is the user's own, so
/// its private list is kept — never as fresh, only as the deferred tools shown at the start-up
/// gate until the server's own list arrives. Without this, every server built on an SDK whose
/// default scope is `private` (the Python SDK 2.x) would hold up every start-up. A remote
/// server's context is also its login, which the key does not name: its private list is not
/// kept.
#[cfg(feature = "cache")]
pub(crate) fn stand_in_hints(config: &ServerConfig, hints: CacheHints) -> CacheHints {
    match (&config.transport, hints.private) {
        (crate::config::Transport::Stdio(_), true) => CacheHints::new(None, false),
        _ => hints,
    }
}

/// Without a cache no list is ever fresh.
#[cfg(not(feature = "cache"))]
pub(super) async fn fresh_cached_tools<C: Connector>(
    _inner: &Inner<C>,
    _name: &str,
    _config: &ServerConfig,
) -> Option<Vec<ToolDefinition>> {
    None
}

/// Without a cache nothing is written.
#[cfg(not(feature = "cache"))]
pub(super) fn store_tools<C: Connector>(
    _inner: &Inner<C>,
    _name: &str,
    _config: &ServerConfig,
    _tools: &Arc<[ToolDefinition]>,
    _hints: CacheHints,
) {
}

/// Without a cache no failure is remembered.
#[cfg(not(feature = "cache"))]
pub(super) fn remember_failure<C: Connector>(
    _inner: &Inner<C>,
    _name: &str,
    _config: &ServerConfig,
    _error: &ServerError,
) {
}
