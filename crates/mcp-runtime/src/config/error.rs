//! Errors of the config layer. Every message names the file, the server and the field it is
//! about, so a user can go straight to the line to fix.

use std::path::{Path, PathBuf};

/// A problem reading or validating configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
        "server `{server}`: field `{field}`: not run because the server's project is not trusted"
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
    /// An add names a server that the config file it writes already defines.
    #[error(
        "server `{server}`: already defined in {}",
        crate::fsutil::display_path(path)
    )]
    AlreadyDefined {
        /// The server's name.
        server: String,
        /// The config file that defines it.
        path: PathBuf,
    },
    /// An edit names a server that no config file defines.
    #[error("server `{server}`: no server of that name is configured")]
    NotConfigured {
        /// The server's name.
        server: String,
    },
    /// An edit of mcpr's own files names a server that another tool's file defines, which
    /// mcpr does not edit.
    #[error(
        "server `{server}`: not found in mcpr's config files; it is defined by {provider} in {}, and mcpr does not edit other tools' files",
        crate::fsutil::display_path(path)
    )]
    ForeignDefinition {
        /// The server's name.
        server: String,
        /// The tool whose file defines it.
        provider: String,
        /// That file.
        path: PathBuf,
    },
    /// An edit of mcpr's own files names a server that both the user and the project file
    /// define; the edit must say which.
    #[error("server `{server}`: defined in both the user and the project file")]
    AmbiguousScope {
        /// The server's name.
        server: String,
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

/// A copy keeps the I/O error's kind and message (`std::io::Error` itself cannot be cloned), so
/// that one error can be both kept in a [`Discovery`](super::Discovery) and handed on.
impl Clone for ConfigError {
    fn clone(&self) -> Self {
        let copy = |e: &std::io::Error| std::io::Error::new(e.kind(), e.to_string());
        match self {
            ConfigError::Read { path, source } => ConfigError::Read {
                path: path.clone(),
                source: copy(source),
            },
            ConfigError::Parse {
                path,
                line,
                column,
                message,
            } => ConfigError::Parse {
                path: path.clone(),
                line: *line,
                column: *column,
                message: message.clone(),
            },
            ConfigError::Invalid {
                file,
                server,
                field,
                message,
            } => ConfigError::Invalid {
                file: file.clone(),
                server: server.clone(),
                field: field.clone(),
                message: message.clone(),
            },
            ConfigError::Write { path, source } => ConfigError::Write {
                path: path.clone(),
                source: copy(source),
            },
            ConfigError::Untrusted { server, field } => ConfigError::Untrusted {
                server: server.clone(),
                field: field.clone(),
            },
            ConfigError::Edit { server, message } => ConfigError::Edit {
                server: server.clone(),
                message: message.clone(),
            },
            ConfigError::AlreadyDefined { server, path } => ConfigError::AlreadyDefined {
                server: server.clone(),
                path: path.clone(),
            },
            ConfigError::NotConfigured { server } => ConfigError::NotConfigured {
                server: server.clone(),
            },
            ConfigError::ForeignDefinition {
                server,
                provider,
                path,
            } => ConfigError::ForeignDefinition {
                server: server.clone(),
                provider: provider.clone(),
                path: path.clone(),
            },
            ConfigError::AmbiguousScope { server } => ConfigError::AmbiguousScope {
                server: server.clone(),
            },
            ConfigError::Discovery { path, message } => ConfigError::Discovery {
                path: path.clone(),
                message: message.clone(),
            },
        }
    }
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
