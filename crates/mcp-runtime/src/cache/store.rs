//! [`ToolCache`]: the SQLite file behind the cache, and the thread async callers' work runs on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};

use super::file::{CacheError, open};
use super::lane::{Job, start_lane};
use super::{CACHE_TTL, CacheHints, CacheKey, CachedTools, FAILURE_TTL, config_hash};
use crate::client::model::era::Era;
use crate::client::model::types::ToolDefinition;
use crate::config::ServerConfig;

/// File name inside the cache directory.
const FILE_NAME: &str = "tools.sqlite";

/// The tool cache. Cheap to share; every operation is short and synchronous.
pub struct ToolCache {
    path: PathBuf,
    /// Opened lazily on first use, so a host that never needs the cache never touches disk.
    connection: Mutex<Option<Connection>>,
    /// The queue of the cache's own thread for async callers ([`ToolCache::run`]), started on
    /// first use; `None` inside when the thread could not be started.
    lane: OnceLock<Option<mpsc::Sender<Job>>>,
}

impl std::fmt::Debug for ToolCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCache")
            .field("path", &self.path)
            .finish()
    }
}

impl ToolCache {
    /// A cache stored in `dir` (created on first write).
    pub fn in_dir(dir: &Path) -> Self {
        ToolCache {
            path: dir.join(FILE_NAME),
            connection: Mutex::new(None),
            lane: OnceLock::new(),
        }
    }

    /// The per-user cache: `$XDG_CACHE_HOME/mcpr`, else `~/.cache/mcpr`.
    pub fn user_default() -> Option<Self> {
        Self::user_default_in(&crate::ClientIdentity::default().data_dir)
    }

    /// The per-user cache of a host whose state lives under `data_dir` (see
    /// [`ClientIdentity::data_dir`](crate::ClientIdentity::data_dir)).
    pub fn user_default_in(data_dir: &str) -> Option<Self> {
        crate::fsutil::BaseDir::Cache
            .dir_of(data_dir)
            .map(|dir| Self::in_dir(&dir))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cached tools of `key`, if present and younger than [`CACHE_TTL`].
    pub fn get(&self, key: &CacheKey) -> Option<Vec<ToolDefinition>> {
        self.get_entry(key).map(|entry| entry.tools)
    }

    /// The cached tools of `key` and whether they are still fresh, if present and younger
    /// than [`CACHE_TTL`].
    pub fn get_entry(&self, key: &CacheKey) -> Option<CachedTools> {
        let result = self.with_connection(|db| {
            let row: Option<(String, i64, Option<i64>)> = db
                .query_row(
                    "SELECT tools, updated_at, fresh_until FROM tools
                     WHERE server = ?1 AND project = ?2 AND config_hash = ?3",
                    params![key.server, key.project, key.config_hash],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()?;
            Ok(row)
        });
        let (json, updated_at, fresh_until) = match result {
            Ok(Some(row)) => row,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(cache = %self.path.display(), "tool cache unreadable, ignoring it: {e}");
                return None;
            }
        };
        if now_secs().saturating_sub(updated_at) > CACHE_TTL.as_secs() as i64 {
            return None;
        }
        match serde_json::from_str(&json) {
            Ok(tools) => Some(CachedTools {
                tools,
                fresh: fresh_until.is_some_and(|until| now_millis() < until),
            }),
            Err(e) => {
                tracing::warn!(server = %key.server, "cached tools are corrupt, ignoring them: {e}");
                None
            }
        }
    }

    /// Store the tools of `key` (best effort: failures are logged, never returned).
    pub fn put(&self, key: &CacheKey, tools: &[ToolDefinition]) {
        self.put_with_hints(key, tools, CacheHints::default());
    }

    /// Store the tools of `key` as the server's caching `hints` allow: fresh for their `ttl`,
    /// and not at all when they are private (an older entry of `key` is then removed, so that
    /// no other context reads a list the server now calls private).
    pub fn put_with_hints(&self, key: &CacheKey, tools: &[ToolDefinition], hints: CacheHints) {
        if hints.private {
            let _ = self.with_connection(|db| {
                db.execute(
                    "DELETE FROM tools WHERE server = ?1 AND project = ?2 AND config_hash = ?3",
                    params![key.server, key.project, key.config_hash],
                )
            });
            return;
        }
        let fresh_until = fresh_until(hints);
        let json = match serde_json::to_string(tools) {
            Ok(json) => json,
            Err(e) => {
                tracing::warn!(server = %key.server, "cannot serialise tools for the cache: {e}");
                return;
            }
        };
        let result = self.with_connection(|db| {
            db.execute(
                "INSERT INTO tools (server, project, config_hash, tools, updated_at, fresh_until)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (server, project, config_hash)
                 DO UPDATE SET tools = excluded.tools, updated_at = excluded.updated_at,
                     fresh_until = excluded.fresh_until",
                params![
                    key.server,
                    key.project,
                    key.config_hash,
                    json,
                    now_secs(),
                    fresh_until
                ],
            )?;
            db.execute(
                "DELETE FROM failures WHERE server = ?1 AND project = ?2 AND config_hash = ?3",
                params![key.server, key.project, key.config_hash],
            )?;
            Ok(())
        });
        if let Err(e) = result {
            tracing::warn!(cache = %self.path.display(), "cannot write the tool cache: {e}");
        }
    }

    /// Remember that `key` failed to start with `error` (best effort).
    pub fn put_failure(&self, key: &CacheKey, error: &str) {
        let result = self.with_connection(|db| {
            db.execute(
                "INSERT INTO failures (server, project, config_hash, error, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (server, project, config_hash)
                 DO UPDATE SET error = excluded.error, updated_at = excluded.updated_at",
                params![key.server, key.project, key.config_hash, error, now_secs()],
            )?;
            Ok(())
        });
        if let Err(e) = result {
            tracing::warn!(cache = %self.path.display(), "cannot write the tool cache: {e}");
        }
    }

    /// The error of `key`'s last failed start, if younger than [`FAILURE_TTL`] and not
    /// followed by a successful list.
    pub fn failure(&self, key: &CacheKey) -> Option<String> {
        let result = self.with_connection(|db| {
            db.query_row(
                "SELECT error, updated_at FROM failures
                 WHERE server = ?1 AND project = ?2 AND config_hash = ?3",
                params![key.server, key.project, key.config_hash],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
            )
            .optional()
        });
        match result {
            Ok(Some((error, updated_at)))
                if now_secs().saturating_sub(updated_at) <= FAILURE_TTL.as_secs() as i64 =>
            {
                Some(error)
            }
            _ => None,
        }
    }

    /// The era `server` (with `config`) spoke at its last connection, if remembered and
    /// younger than [`CACHE_TTL`].
    pub fn era(&self, server: &str, config: &ServerConfig) -> Option<Era> {
        let hash = config_hash(config);
        let result = self.with_connection(|db| {
            db.query_row(
                "SELECT era, updated_at FROM eras WHERE server = ?1 AND config_hash = ?2",
                params![server, hash],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
            )
            .optional()
        });
        match result {
            Ok(Some((era, updated_at)))
                if now_secs().saturating_sub(updated_at) <= CACHE_TTL.as_secs() as i64 =>
            {
                Era::parse(&era)
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(cache = %self.path.display(), "tool cache unreadable, ignoring it: {e}");
                None
            }
        }
    }

    /// Remember the era `server` (with `config`) speaks (best effort).
    pub fn put_era(&self, server: &str, config: &ServerConfig, era: Era) {
        let hash = config_hash(config);
        let result = self.with_connection(|db| {
            db.execute(
                "INSERT INTO eras (server, config_hash, era, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (server, config_hash)
                 DO UPDATE SET era = excluded.era, updated_at = excluded.updated_at",
                params![server, hash, era.as_str(), now_secs()],
            )?;
            Ok(())
        });
        if let Err(e) = result {
            tracing::warn!(cache = %self.path.display(), "cannot write the tool cache: {e}");
        }
    }

    /// Forget the era of `server` (its cached opening failed).
    pub fn forget_era(&self, server: &str, config: &ServerConfig) {
        let hash = config_hash(config);
        let _ = self.with_connection(|db| {
            db.execute(
                "DELETE FROM eras WHERE server = ?1 AND config_hash = ?2",
                params![server, hash],
            )
        });
    }

    /// The `server/discover` result `server` (with `config`) gave last, if it is still fresh
    /// (within the `ttlMs` it came with).
    pub fn discovery(&self, server: &str, config: &ServerConfig) -> Option<serde_json::Value> {
        let hash = config_hash(config);
        let result = self.with_connection(|db| {
            db.query_row(
                "SELECT result, fresh_until FROM discoveries
                 WHERE server = ?1 AND config_hash = ?2",
                params![server, hash],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
            )
            .optional()
        });
        match result {
            Ok(Some((json, until))) if now_millis() < until => serde_json::from_str(&json).ok(),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(cache = %self.path.display(), "tool cache unreadable, ignoring it: {e}");
                None
            }
        }
    }

    /// Keep the `server/discover` `result` of `server` (with `config`) for as long as its
    /// `hints` say it is fresh; a result that is never fresh, or private, is not kept (and
    /// an older one is forgotten).
    pub fn put_discovery(
        &self,
        server: &str,
        config: &ServerConfig,
        result: &serde_json::Value,
        hints: CacheHints,
    ) {
        let until = fresh_until(hints).filter(|_| !hints.private);
        let Some(until) = until else {
            self.forget_discovery(server, config);
            return;
        };
        let hash = config_hash(config);
        let outcome = self.with_connection(|db| {
            db.execute(
                "INSERT INTO discoveries (server, config_hash, result, fresh_until)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (server, config_hash)
                 DO UPDATE SET result = excluded.result, fresh_until = excluded.fresh_until",
                params![server, hash, result.to_string(), until],
            )?;
            Ok(())
        });
        if let Err(e) = outcome {
            tracing::warn!(cache = %self.path.display(), "cannot write the tool cache: {e}");
        }
    }

    /// Forget the `server/discover` result of `server` (replaying it failed, or the server
    /// no longer lets it be kept).
    pub fn forget_discovery(&self, server: &str, config: &ServerConfig) {
        let hash = config_hash(config);
        let _ = self.with_connection(|db| {
            db.execute(
                "DELETE FROM discoveries WHERE server = ?1 AND config_hash = ?2",
                params![server, hash],
            )
        });
    }

    /// Queue `work` for the cache's own thread and return the receiver of its result (an error
    /// if `work` panicked). Jobs run one at a time in the order queued (see [`ToolCache::queue`]).
    pub(crate) fn run<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&ToolCache) -> T + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<T> {
        let (answer, receiver) = tokio::sync::oneshot::channel();
        self.queue(move |cache| {
            let _ = answer.send(work(cache));
        });
        receiver
    }

    /// Queue `work` for the cache's own thread, not waiting for it. Jobs run one at a time in
    /// the order queued, so a job queued after some writes finishes after them.
    ///
    /// This is how async code uses the cache. Every operation takes the database's lock, so on
    /// a shared blocking pool each caller waiting for it would hold a thread of its own: a burst
    /// of connections started dozens, and each kept its stack's touched pages in the process
    /// after it ended. The thread ends when the cache is dropped.
    pub(crate) fn queue(self: &Arc<Self>, work: impl FnOnce(&ToolCache) + Send + 'static) {
        let cache = Arc::clone(self);
        let job: Job = Box::new(move || work(&cache));
        match self.lane.get_or_init(start_lane) {
            Some(lane) => {
                if let Err(mpsc::SendError(job)) = lane.send(job) {
                    job();
                }
            }
            // No thread to be had: the work is short, so it runs here.
            None => job(),
        }
    }

    /// Run `work` on the open database, opening (and if needed creating) it first. A database
    /// that cannot be opened is reported and retried next time.
    fn with_connection<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, CacheError> {
        let mut slot = self.connection.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(open(&self.path)?);
        }
        let db = slot.as_ref().ok_or(CacheError::Closed)?;
        let result = work(db).map_err(CacheError::Sqlite);
        if result.is_err() {
            // A corrupt file stays corrupt; reopen next time in case it was replaced.
            *slot = None;
        }
        result
    }
}

/// The instant (ms since the epoch) a result received now stops being fresh.
fn fresh_until(hints: CacheHints) -> Option<i64> {
    let ttl = i64::try_from(hints.ttl?.as_millis()).unwrap_or(i64::MAX);
    Some(now_millis().saturating_add(ttl))
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn tool(name: &str) -> ToolDefinition {
        serde_json::from_value(serde_json::json!({"name": name, "inputSchema": {"type": "object"}}))
            .unwrap()
    }

    fn key(server: &str) -> CacheKey {
        CacheKey::new(
            server,
            Path::new("/project"),
            &ServerConfig::stdio("srv", ["--x"]),
        )
    }

    #[test]
    fn a_failed_start_is_remembered_until_a_list_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_dir(dir.path());
        assert!(cache.failure(&key("a")).is_none());
        cache.put_failure(&key("a"), "tools/list failed");
        assert_eq!(
            cache.failure(&key("a")).as_deref(),
            Some("tools/list failed")
        );
        assert!(cache.failure(&key("b")).is_none());
        cache.put(&key("a"), &[tool("one")]);
        assert!(cache.failure(&key("a")).is_none());
    }

    /// Async callers' work runs on one thread of the cache's own, in the order queued (a read
    /// queued after a write sees it), survives a panicking job, and the thread ends with the
    /// cache.
    #[tokio::test]
    async fn async_work_runs_in_order_on_one_thread_that_ends_with_the_cache() {
        struct OnExit(mpsc::Sender<()>);
        impl Drop for OnExit {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        thread_local!(static ON_EXIT: std::cell::RefCell<Option<OnExit>> = const {
            std::cell::RefCell::new(None)
        });

        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(ToolCache::in_dir(dir.path()));
        let (exited, exit) = mpsc::channel();
        let first = cache.run(move |_| {
            ON_EXIT.with(|slot| *slot.borrow_mut() = Some(OnExit(exited)));
            std::thread::current().id()
        });
        cache.queue(|cache| cache.put(&key("a"), &[tool("one")]));
        let read = cache.run(|cache| cache.get(&key("a")));
        let panicked = cache.run(|_| -> u8 { panic!("a job that panics") });
        let last = cache.run(|_| std::thread::current().id());

        let first = first.await.unwrap();
        assert_ne!(first, std::thread::current().id());
        assert_eq!(read.await.unwrap().map(|tools| tools.len()), Some(1));
        assert!(panicked.await.is_err());
        assert_eq!(last.await.unwrap(), first);

        drop(cache);
        exit.recv_timeout(Duration::from_secs(10))
            .expect("the cache's thread ends when the cache is dropped");
    }

    #[test]
    fn round_trip_and_key_isolation() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_dir(dir.path());
        assert!(cache.get(&key("a")).is_none());
        cache.put(&key("a"), &[tool("one"), tool("two")]);
        let got = cache.get(&key("a")).unwrap();
        assert_eq!(
            got.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert!(cache.get(&key("b")).is_none());

        // A different config is a different entry.
        let other = CacheKey::new(
            "a",
            Path::new("/project"),
            &ServerConfig::stdio("srv", ["--y"]),
        );
        assert!(cache.get(&other).is_none());

        // A second handle (another process) sees the same data.
        let again = ToolCache::in_dir(dir.path());
        assert_eq!(again.get(&key("a")).unwrap().len(), 2);
    }

    #[test]
    fn secret_values_do_not_change_the_key() {
        let mut a = ServerConfig::stdio("srv", Vec::<String>::new());
        let mut b = a.clone();
        if let (crate::config::Transport::Stdio(x), crate::config::Transport::Stdio(y)) =
            (&mut a.transport, &mut b.transport)
        {
            x.env.insert("TOKEN".into(), "secret-1".into());
            y.env.insert("TOKEN".into(), "secret-2".into());
        }
        assert_eq!(config_hash(&a), config_hash(&b));
    }

    #[test]
    fn eras_are_remembered_per_server_and_config() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_dir(dir.path());
        let config = ServerConfig::stdio("srv", ["--x"]);
        assert_eq!(cache.era("a", &config), None);
        cache.put_era("a", &config, Era::Modern);
        assert_eq!(cache.era("a", &config), Some(Era::Modern));
        assert_eq!(cache.era("b", &config), None);
        assert_eq!(cache.era("a", &ServerConfig::stdio("srv", ["--y"])), None);
        cache.put_era("a", &config, Era::Legacy);
        assert_eq!(
            ToolCache::in_dir(dir.path()).era("a", &config),
            Some(Era::Legacy)
        );
        cache.forget_era("a", &config);
        assert_eq!(cache.era("a", &config), None);
    }

    #[test]
    fn caching_hints_decide_freshness_and_what_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_dir(dir.path());
        cache.put(&key("a"), &[tool("one")]);
        assert!(
            !cache.get_entry(&key("a")).unwrap().fresh,
            "no ttl: never fresh"
        );
        let hour = CacheHints::new(Some(3_600_000), false);
        cache.put_with_hints(&key("a"), &[tool("one")], hour);
        assert!(cache.get_entry(&key("a")).unwrap().fresh);
        cache.put_with_hints(&key("a"), &[tool("one")], CacheHints::new(Some(0), false));
        assert!(
            !cache.get_entry(&key("a")).unwrap().fresh,
            "ttl 0: stale at once"
        );
        // Private: not written, and the older entry goes.
        cache.put_with_hints(
            &key("a"),
            &[tool("one")],
            CacheHints::new(Some(60_000), true),
        );
        assert!(cache.get(&key("a")).is_none());
        // A list is fresh as long as its least fresh page, private if any page is.
        assert_eq!(hour.and(CacheHints::new(None, false)).ttl, None);
        assert!(hour.and(CacheHints::new(Some(5), true)).private);
        assert_eq!(
            hour.and(CacheHints::new(Some(5), false)).ttl,
            Some(Duration::from_millis(5))
        );
    }

    #[test]
    fn discovery_results_are_kept_while_fresh_and_shareable() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_dir(dir.path());
        let config = ServerConfig::stdio("srv", ["--x"]);
        let result = serde_json::json!({"supportedVersions": ["2026-07-28"]});
        cache.put_discovery("a", &config, &result, CacheHints::new(Some(60_000), false));
        assert_eq!(cache.discovery("a", &config), Some(result.clone()));
        assert_eq!(cache.discovery("b", &config), None);
        cache.put_discovery("a", &config, &result, CacheHints::new(Some(60_000), true));
        assert_eq!(cache.discovery("a", &config), None, "private: forgotten");
        cache.put_discovery("a", &config, &result, CacheHints::new(Some(60_000), false));
        cache.forget_discovery("a", &config);
        assert_eq!(cache.discovery("a", &config), None);
        cache.put_discovery("a", &config, &result, CacheHints::new(Some(1), false));
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(cache.discovery("a", &config), None, "past its ttl");
    }

    #[test]
    fn a_file_without_freshness_gets_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let db = Connection::open(dir.path().join(FILE_NAME)).unwrap();
        db.execute_batch(
            "CREATE TABLE tools (server TEXT NOT NULL, project TEXT NOT NULL,
                config_hash TEXT NOT NULL, tools TEXT NOT NULL, updated_at INTEGER NOT NULL,
                PRIMARY KEY (server, project, config_hash))",
        )
        .unwrap();
        drop(db);
        let cache = ToolCache::in_dir(dir.path());
        cache.put_with_hints(
            &key("a"),
            &[tool("one")],
            CacheHints::new(Some(60_000), false),
        );
        assert!(cache.get_entry(&key("a")).unwrap().fresh);
    }

    #[test]
    fn a_corrupt_file_is_a_miss_not_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            b"this is not a database, just garbage bytes",
        )
        .unwrap();
        let cache = ToolCache::in_dir(dir.path());
        assert!(cache.get(&key("a")).is_none());
        cache.put(&key("a"), &[tool("one")]); // must not panic
    }
}
