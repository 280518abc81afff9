//! Whether a server definition comes from the user's own files or from the project directory:
//! the one word every part of discovery (the providers, trust, the results) shares, so it
//! depends on none of them.

use std::fmt;

/// Whether a definition comes from the user's own files or from the project directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// The user's home (and `--config` files).
    User,
    /// The project (including Claude Code's per-project entries in `~/.claude.json`).
    Project,
}

impl Level {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::User => "user",
            Level::Project => "project",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
