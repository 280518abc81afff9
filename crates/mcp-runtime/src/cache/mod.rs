//! The on-disk tool cache: the last tool list of every server, so start-up can offer
//! a slow server's tools before it answers (deferred tools).
//!
//! One SQLite file per user (WAL mode: safe for several agents at once). The key is the server
//! name, the project directory and a SHA-256 of the server's config, so a changed config never
//! serves stale tools. Entries expire after 30 days and are rewritten on every successful list.
//! The cache is best effort: a corrupt, locked or unreadable file is a miss, never a failure.
//!
//! It also remembers which servers failed their last start without ever listing tools here
//! (for [`FAILURE_TTL`]), so start-up need not hold its answer for them, and which era of MCP
//! each server speaks (keyed by server name and config
//! hash), so a later start-up opens the connection the right way without probing first.
//!
//! Protocol 2026-07-28 puts caching hints on list results and on `server/discover`: `ttlMs`
//! (how long the result may be taken as fresh) and `cacheScope`. They are honoured here:
//! - a tool list with a positive `ttlMs` is stored with the instant it stops being fresh;
//!   while fresh, a start-up may use it instead of listing again ([`ToolCache::get_entry`]).
//!   Without a `ttlMs` (or with `0`) it is stored as before, usable only as deferred tools
//!   until the server's own list arrives;
//! - a `server/discover` result with a positive `ttlMs` is kept until then, so a start-up
//!   within it needs no discovery round trip ([`ToolCache::discovery`]);
//! - a result whose `cacheScope` is `private` may only be reused within the authorization
//!   context that fetched it. This file is shared by every agent and project of the user, so
//!   `put_with_hints` does not write such results (and removes an older entry for the same
//!   key). The manager stores a stdio server's private list as a plain, never-fresh entry
//!   instead, since the key covers that server's whole context (see
//!   `manager::supervisor::stand_in_hints`).
//!
//! Its rooms: this file (the keys and hints, which the client and the manager use whether or not
//! anything is stored), and, with the `cache` feature, `store` ([`ToolCache`]), `file` (the
//! SQLite file, its tables and how it is opened) and `lane` (the cache's own thread, on which
//! async callers' work runs in order). Without the feature there is no cache: every start-up
//! lists tools afresh.

use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::client::model::types::ToolDefinition;
use crate::config::ServerConfig;

#[cfg(feature = "cache")]
mod file;
#[cfg(feature = "cache")]
mod lane;
#[cfg(feature = "cache")]
mod store;

#[cfg(feature = "cache")]
#[cfg_attr(docsrs, doc(cfg(feature = "cache")))]
pub use store::ToolCache;

/// How long an entry stays valid.
pub const CACHE_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// How long a failed start is remembered (a successful list forgets it at once).
pub const FAILURE_TTL: Duration = Duration::from_secs(3600);

/// The caching hints of a 2026-07-28 result (`ttlMs`, `cacheScope`); older servers send none,
/// which is the default: never fresh, shareable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheHints {
    /// How long the result may be taken as fresh after it arrived; `None` for `0` or absent.
    pub ttl: Option<Duration>,
    /// `cacheScope: "private"`: not to be shared across authorization contexts.
    pub private: bool,
}

impl CacheHints {
    /// The hints of one result: `ttl_ms` (`None` when absent) and whether its scope is
    /// private.
    pub fn new(ttl_ms: Option<u64>, private: bool) -> Self {
        CacheHints {
            ttl: ttl_ms.filter(|ms| *ms > 0).map(Duration::from_millis),
            private,
        }
    }

    /// The hints of a list made of several pages: fresh only as long as every page is, and
    /// private if any page is.
    pub fn and(self, other: CacheHints) -> CacheHints {
        CacheHints {
            ttl: self.ttl.zip(other.ttl).map(|(a, b)| a.min(b)),
            private: self.private || other.private,
        }
    }
}

/// A cached tool list.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedTools {
    /// The tools of the server's last listing.
    pub tools: Vec<ToolDefinition>,
    /// Still within the `ttlMs` the server gave that listing: it may be used instead of a
    /// new one.
    pub fresh: bool,
}

/// Identifies one cache entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// Server name as configured.
    pub server: String,
    /// Project directory the server was configured for.
    pub project: String,
    /// SHA-256 (hex) of the server's config.
    pub config_hash: String,
}

impl CacheKey {
    /// The key of `server` with `config` in `project`.
    pub fn new(server: &str, project: &Path, config: &ServerConfig) -> Self {
        CacheKey {
            server: server.to_owned(),
            project: project.to_string_lossy().into_owned(),
            config_hash: config_hash(config),
        }
    }
}

/// SHA-256 of the parts of a config that decide which tools a server offers (transport, command,
/// arguments, URL, environment and header *names*). Values of `env` and headers are left out:
/// they hold secrets, and rotating a token does not change a server's tools.
pub fn config_hash(config: &ServerConfig) -> String {
    use crate::config::Transport;
    let mut hasher = Sha256::new();
    let mut feed = |part: &str| {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    };
    match &config.transport {
        Transport::Stdio(stdio) => {
            feed("stdio");
            feed(&stdio.command);
            stdio.args.iter().for_each(|a| feed(a));
            stdio.env.keys().for_each(|k| feed(k));
            feed(
                &stdio
                    .cwd
                    .as_deref()
                    .unwrap_or(Path::new(""))
                    .to_string_lossy(),
            );
        }
        Transport::Http(http) => {
            feed(config.transport.kind_name());
            feed(&http.url);
            http.headers.keys().for_each(|k| feed(k));
        }
    }
    crate::fsutil::hex(&hasher.finalize())
}
