//! Errors of the config layer. Every message names the file, the server and the field it is
//! about, so a user can go straight to the line to fix.

use std::path::{Path, PathBuf};

/// A problem reading or validating configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{}: cannot read: {source}", crate::fsutil::display_path(path))]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON (or not the expected shape).
    #[error("{}:{line}:{column}: {message}", crate::fsutil::display_path(path))]
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
    #[error("{}server `{server}`: field `{field}`: {message}", file.as_ref().map(|p| format!("{}: ", crate::fsutil::display_path(p))).unwrap_or_default())]
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
    /// A file could not be written (mcpr's own config file, the trust store).
    #[error("{}: cannot write: {source}", crate::fsutil::display_path(path))]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A connect-time value (`!command`) was requested for a server that is not trusted.
    #[error(
        "server `{server}`: field `{field}`: not run because the server's project is not trusted (run `mcpr trust`)"
    )]
    Untrusted {
        /// The server's name.
        server: String,
        /// The field holding the command.
        field: String,
    },
    /// An edit of mcpr's own config files cannot be made as asked.
    #[error("server `{server}`: {message}")]
    Edit {
        /// The server's name.
        server: String,
        /// Why, and what to do instead.
        message: String,
    },
    /// Discovery as a whole failed (a hard discovery failure).
    #[error("{path}: discovery failed: {message}")]
    Discovery {
        /// Always [`HARD_FAILURE_PATH`](super::HARD_FAILURE_PATH) (`.mcp.json`).
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl ConfigError {
    /// A per-server error naming the server and the field.
    pub(crate) fn invalid(server: &str, field: &str, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            file: None,
            server: server.to_owned(),
            field: field.to_owned(),
            message: message.into(),
        }
    }

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
