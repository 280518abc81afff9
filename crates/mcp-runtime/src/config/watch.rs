//! Noticing that the configuration changed, for a host that reloads by itself (`mcpr serve
//! --watch`): the files discovery reads ([`config_files`]), the files its servers read
//! (`envFile`, `{file:}`) and the trust store are polled every [`POLL_INTERVAL`], and a
//! change is reported once the files have stayed the same for one more interval, so that an
//! editor's save in several writes gives one reload.
//!
//! Polling rather than file-system events: most of these files do not exist (one per host
//! and level), a host may create one at any time, and editors replace files rather than write
//! them; a poll of a few dozen paths twice a second costs nothing and sees all of it. Each poll
//! compares size, modification and change times and inode, and the content of files up to
//! [`HASHED_BYTES`] (a rewrite within one timestamp tick is still seen).
//!
//! ```no_run
//! # async fn demo() {
//! use mcp_runtime::config::watch::ConfigWatch;
//! use mcp_runtime::config::{DiscoveryOptions, load_all_mcp_configs};
//!
//! let cwd = std::env::current_dir().unwrap();
//! let options = DiscoveryOptions::default();
//! let mut watch = ConfigWatch::new(&cwd, options.clone());
//! loop {
//!     watch.changed().await;
//!     let discovery = load_all_mcp_configs(&cwd, &options);
//!     watch.set_reads(&discovery);
//!     // manager.reload(discovery.configs, discovery.sources).await;
//! }
//! # }
//! ```

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use super::{Discovery, DiscoveryOptions, config_files};

/// How often the files are looked at.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Files up to this size are compared by content too; larger ones (a host's history file) by
/// size and times only.
pub const HASHED_BYTES: u64 = 1024 * 1024;

/// Watches the configuration of one project. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct ConfigWatch {
    cwd: PathBuf,
    options: DiscoveryOptions,
    /// Files the discovered servers read.
    reads: Vec<PathBuf>,
    /// The state last reported (or first seen).
    seen: u64,
}

impl ConfigWatch {
    /// Watch what discovery for `cwd` with `options` reads, as it is now.
    pub fn new(cwd: &Path, options: DiscoveryOptions) -> Self {
        let mut watch = ConfigWatch {
            cwd: cwd.to_owned(),
            options,
            reads: Vec::new(),
            seen: 0,
        };
        watch.seen = watch.fingerprint();
        watch
    }

    /// Also watch the files the servers of `discovery` read (`envFile`, `{file:}`); call it
    /// after each discovery, since they change with the configs.
    pub fn set_reads(&mut self, discovery: &Discovery) {
        let mut reads: Vec<PathBuf> = discovery
            .servers
            .iter()
            .flat_map(|server| server.reads.iter().cloned())
            .collect();
        reads.sort();
        reads.dedup();
        self.reads = reads;
        self.seen = self.fingerprint();
    }

    /// The files watched right now (the set follows the hosts' own rules, e.g. a directory
    /// of config files).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files = config_files(&self.cwd, &self.options);
        files.extend(self.reads.iter().cloned());
        files
    }

    /// Wait until a watched file changes and then stays the same for one more
    /// [`POLL_INTERVAL`]. Cancel-safe: dropping the future loses nothing.
    pub async fn changed(&mut self) {
        loop {
            tokio::time::sleep(POLL_INTERVAL).await;
            let now = self.poll().await;
            if now == self.seen {
                continue;
            }
            // Settle: an editor may still be writing.
            let mut last = now;
            loop {
                tokio::time::sleep(POLL_INTERVAL).await;
                let again = self.poll().await;
                if again == last {
                    break;
                }
                last = again;
            }
            self.seen = last;
            return;
        }
    }

    /// Whether a watched file differs from when it was last seen, looking once and now
    /// (without waiting for it to settle); the new state counts as seen.
    pub fn changed_now(&mut self) -> bool {
        let now = self.fingerprint();
        let changed = now != self.seen;
        self.seen = now;
        changed
    }

    /// The fingerprint, computed off the async threads.
    async fn poll(&self) -> u64 {
        let watch = self.clone();
        tokio::task::spawn_blocking(move || watch.fingerprint())
            .await
            .unwrap_or_default()
    }

    /// One number for the state of every watched file.
    fn fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        for file in self.files() {
            file.hash(&mut hasher);
            file_state(&file, &mut hasher);
        }
        hasher.finish()
    }
}

/// Hash what tells one file's versions apart: absent, or size, times, inode and (for small
/// files) content.
fn file_state(path: &Path, hasher: &mut DefaultHasher) {
    let Ok(meta) = std::fs::metadata(path) else {
        0u8.hash(hasher);
        return;
    };
    1u8.hash(hasher);
    meta.len().hash(hasher);
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .hash(hasher);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.ctime(), meta.ctime_nsec(), meta.ino()).hash(hasher);
    }
    if meta.is_file() && meta.len() <= HASHED_BYTES {
        let mut content = Vec::new();
        let read = std::fs::File::open(path)
            .and_then(|file| file.take(HASHED_BYTES).read_to_end(&mut content));
        if read.is_ok() {
            content.hash(hasher);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EnvSource;

    #[test]
    fn a_config_file_that_appears_or_changes_is_noticed() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let options = DiscoveryOptions {
            home: Some(home.path().to_owned()),
            env: EnvSource::map([("PATH", "/usr/bin")]),
            trust_store: Some(home.path().join("trust.json")),
            ..DiscoveryOptions::default()
        };
        let mut watch = ConfigWatch::new(project.path(), options);
        let config = home.path().join(".claude.json");
        assert!(watch.files().contains(&config));
        assert!(!watch.changed_now());

        std::fs::write(&config, r#"{"mcpServers": {}}"#).unwrap();
        assert!(watch.changed_now());
        assert!(!watch.changed_now());
        // Same size, same second: the content still tells.
        std::fs::write(&config, r#"{"mcpServers": []}"#).unwrap();
        assert!(watch.changed_now());
        std::fs::remove_file(&config).unwrap();
        assert!(watch.changed_now());
    }
}
