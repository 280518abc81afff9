//! The caching hints (`ttlMs`, `cacheScope`) of the gateway's 2026-07-28 results (`tools/list`,
//! `resources/list`, `resources/templates/list`, `prompts/list`, `server/discover`), from those
//! of the servers behind it. A `resources/read` result is one server's answer, hints and all.
//!
//! A result made of one server's answer carries that server's hints as it set them; a result
//! merged from several servers is fresh only as long as every part is (the shortest `ttlMs`)
//! and private if any part is. A server that gave no hints (an older revision), or that is
//! not connected (its tools come from the cache, or it is still starting), makes the result
//! never fresh (`ttlMs: 0`); a server that does not offer what is listed has no part in it. What the gateway makes itself (the tools of discovery mode, one
//! client's own) keeps rmcp's `ttlMs: 0`, `private`.

use rmcp::model::{
    CacheScope, DiscoverResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult,
};

use super::view::ScopedTools;
use crate::cache::CacheHints;

/// The hints of the servers in scope, merged: what a result built from all of them may say.
/// `each` gives a connected server's hints, or `None` when it has no part in the result (it
/// does not offer what is listed); a server that is not connected counts as never fresh.
fn merged(
    scope: &ScopedTools,
    each: impl Fn(&crate::client::McpClient) -> Option<CacheHints>,
) -> Hints {
    let mut merged: Option<CacheHints> = None;
    for server in scope.manager.server_names() {
        if !scope.filter.allows_server(&server) {
            continue;
        }
        let hints = match scope.manager.client(&server) {
            Some(client) => each(&client),
            None => Some(CacheHints::default()),
        };
        if let Some(hints) = hints {
            merged = Some(merged.map_or(hints, |before| before.and(hints)));
        }
    }
    Hints(merged)
}

/// Hints for a result; `None` when no server in scope has a part in it (the result says
/// nothing then, and rmcp's conservative defaults apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hints(Option<CacheHints>);

impl Hints {
    /// `ttlMs` and `cacheScope` on the wire.
    fn wire(self) -> Option<(u64, CacheScope)> {
        let hints = self.0?;
        let ttl_ms = hints
            .ttl
            .map_or(0, |ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let scope = if hints.private {
            CacheScope::Private
        } else {
            CacheScope::Public
        };
        Some((ttl_ms, scope))
    }
}

/// The hints of the gateway's tool list: those of every server's last `tools/list`.
pub(crate) fn tools(scope: &ScopedTools) -> Hints {
    merged(scope, |client| Some(client.tools_cache_hints()))
}

/// The hints of the gateway's list answering `method` (`resources/list`,
/// `resources/templates/list`, `prompts/list`), once the servers were just asked for theirs.
pub(crate) fn listing(scope: &ScopedTools, method: &str) -> Hints {
    merged(scope, |client| client.list_cache_hints(method))
}

/// The hints of the gateway's `server/discover`: those of the servers' own (a server that
/// opened with `initialize` has none).
pub(crate) fn discovery(scope: &ScopedTools) -> Hints {
    merged(scope, |client| {
        Some(client.discovery_cache_hints().unwrap_or_default())
    })
}

/// `result` with `hints`.
pub(crate) fn on_discover(result: &mut DiscoverResult, hints: Hints) {
    if let Some((ttl_ms, scope)) = hints.wire() {
        result.ttl_ms = ttl_ms;
        result.cache_scope = scope;
    }
}

/// A list result that carries caching hints.
pub(crate) trait Cacheable {
    fn set_hints(&mut self, ttl_ms: u64, scope: CacheScope);
}

macro_rules! cacheable {
    ($($result:ty),*) => {$(
        impl Cacheable for $result {
            fn set_hints(&mut self, ttl_ms: u64, scope: CacheScope) {
                self.ttl_ms = Some(ttl_ms);
                self.cache_scope = Some(scope);
            }
        }
    )*};
}

cacheable!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult
);

/// `result` with `hints`.
pub(crate) fn on_list<T: Cacheable>(mut result: T, hints: Hints) -> T {
    if let Some((ttl_ms, scope)) = hints.wire() {
        result.set_hints(ttl_ms, scope);
    }
    result
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn hints_go_on_the_wire_as_set() {
        let set = |ttl_ms, private| Hints(Some(CacheHints::new(ttl_ms, private))).wire();
        assert_eq!(set(Some(60_000), false), Some((60_000, CacheScope::Public)));
        assert_eq!(set(Some(5_000), true), Some((5_000, CacheScope::Private)));
        assert_eq!(set(None, false), Some((0, CacheScope::Public)));
        assert_eq!(Hints(None).wire(), None);
    }

    #[test]
    fn merged_hints_are_the_most_restrictive() {
        let a = CacheHints::new(Some(60_000), false);
        let b = CacheHints::new(Some(5_000), true);
        let merged = Hints(Some(a.and(b))).wire();
        assert_eq!(merged, Some((5_000, CacheScope::Private)));
        let never = CacheHints::new(None, false);
        assert_eq!(a.and(never).ttl, None);
        assert_eq!(b.ttl, Some(Duration::from_millis(5_000)));
    }
}
