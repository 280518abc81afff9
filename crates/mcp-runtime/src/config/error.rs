//! Errors of the config layer. Every message names the file, the server and the field it is
//! about, so a user can go straight to the line to fix.

use std::path::{Path, PathBuf};

/// A problem reading or validating configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON (or not the expected shape).
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// One server entry is invalid; the other servers are unaffected.
    #[error("{}server `{server}`: field `{field}`: {message}", file.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Invalid {
        /// The file the entry came from, when known.
        file: Option<PathBuf>,
        /// The server's name as written.
        server: String,
        /// The offending field (dotted for nested keys, e.g. `env.PORT`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl ConfigError {
    /// Attach the file an entry came from.
    pub(crate) fn in_file(self, path: &Path) -> Self {
        match self {
            ConfigError::Invalid {
                file: None,
                server,
                field,
                message,
            } => ConfigError::Invalid {
                file: Some(path.to_owned()),
                server,
                field,
                message,
            },
            other => other,
        }
    }
}
