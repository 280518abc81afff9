//! Which config problems the user has been shown already, so that every command does not
//! repeat the same warnings about servers it does not use: each problem is shown once per
//! change of the configuration that produced it, then only counted.
//!
//! A problem is remembered by a digest (SHA-256) of its text and of the name, size and
//! modification time of the file it is in: editing that file shows its problems again. Only
//! digests are stored, never a value from a config, in `$XDG_STATE_HOME/mcpr/shown_problems`
//! (default `~/.local/state/mcpr/`), a private file of at most [`REMEMBERED`] lines. The
//! record only quiets repetition: a record that cannot be read or written shows everything.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use mcp_runtime::fsutil::BaseDir;
use sha2::{Digest as _, Sha256};

/// How many problems are remembered (the oldest are forgotten first).
const REMEMBERED: usize = 256;

/// The most the record is read of (twice what it holds).
const MAX_BYTES: u64 = 65 * REMEMBERED as u64 * 2;

/// The file's name in mcpr's state directory.
const FILE_NAME: &str = "shown_problems";

/// The digests of the problems shown, oldest first.
pub(crate) struct SeenProblems {
    path: Option<PathBuf>,
    digests: VecDeque<String>,
    changed: bool,
}

impl SeenProblems {
    /// The record of this user (empty when there is none, or no home to keep it in).
    pub(crate) fn load() -> SeenProblems {
        let path = BaseDir::State.app_dir().map(|dir| dir.join(FILE_NAME));
        SeenProblems::at(path)
    }

    fn at(path: Option<PathBuf>) -> SeenProblems {
        let digests = path
            .as_deref()
            .and_then(|path| mcp_runtime::fsutil::read_regular(path, MAX_BYTES).ok())
            .map(|bytes| {
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .filter(|line| line.len() == 64)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        SeenProblems {
            path,
            digests,
            changed: false,
        }
    }

    /// Whether the problem `text` (about `file`) is shown for the first time since its file
    /// last changed; it counts as shown from now on.
    pub(crate) fn first_time(&mut self, text: &str, file: Option<&Path>) -> bool {
        let digest = digest(text, file);
        if self.digests.contains(&digest) {
            return false;
        }
        self.digests.push_back(digest);
        while self.digests.len() > REMEMBERED {
            self.digests.pop_front();
        }
        self.changed = true;
        true
    }

    /// Keep the record for the next command (best effort: a failure only means the problems
    /// are shown again).
    pub(crate) fn save(&self) {
        let Some(path) = &self.path else {
            return;
        };
        if !self.changed {
            return;
        }
        let mut text = String::with_capacity(65 * self.digests.len());
        for digest in &self.digests {
            text.push_str(digest);
            text.push('\n');
        }
        let _ = mcp_runtime::fsutil::write_atomic(path, text.as_bytes());
    }
}

/// The digest of a problem: its text, and its file's path, size and modification time.
fn digest(text: &str, file: Option<&Path>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    if let Some(file) = file {
        hasher.update([0]);
        hasher.update(file.as_os_str().as_encoded_bytes());
        if let Ok(meta) = std::fs::metadata(file) {
            hasher.update(meta.len().to_le_bytes());
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            hasher.update(modified.to_le_bytes());
        }
    }
    mcp_runtime::fsutil::hex(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_is_new_once_per_change_of_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("state/shown_problems");
        let config = dir.path().join("mcp.json");
        std::fs::write(&config, "{}").unwrap();

        let mut seen = SeenProblems::at(Some(record.clone()));
        assert!(seen.first_time("missing token", Some(&config)));
        assert!(!seen.first_time("missing token", Some(&config)));
        seen.save();

        let mut seen = SeenProblems::at(Some(record.clone()));
        assert!(
            !seen.first_time("missing token", Some(&config)),
            "remembered"
        );
        assert!(seen.first_time("unknown key", Some(&config)));
        std::fs::write(&config, "{\"changed\": true}").unwrap();
        assert!(
            seen.first_time("missing token", Some(&config)),
            "the file changed"
        );
        let stored = std::fs::read_to_string(&record).unwrap();
        // Words with letters beyond `a`-`f`: a hex digest can spell `bad`, never these.
        assert!(!stored.contains("missing"), "only digests: {stored}");
    }
}
