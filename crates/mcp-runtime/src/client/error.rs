//! Errors of one connection. Each names the server; those that happen while the process is
//! starting carry the tail of its stderr, which is usually where the real reason is.

use std::time::Duration;

/// A failure to connect to, or talk with, one MCP server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server's command could not be started at all.
    #[error("server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        /// Server name.
        server: String,
        /// The command as configured.
        command: String,
        /// Why the OS refused.
        source: std::io::Error,
    },
    /// The server did not answer in time.
    #[error("server `{server}`: {phase} timed out after {}{}", format_duration(*after), StderrTail(stderr))]
    Timeout {
        /// Server name.
        server: String,
        /// What was being waited for (`initialize`, `tools/list`, `tools/call echo`, ...).
        phase: String,
        /// The bound that was hit.
        after: Duration,
        /// Last lines the server wrote on stderr.
        stderr: Vec<String>,
    },
    /// The server process ended (or closed its output) while we were talking to it.
    #[error("server `{server}`: {} during {phase}{}", exit_text(status.as_deref()), StderrTail(stderr))]
    Exited {
        /// Server name.
        server: String,
        /// What was in progress.
        phase: String,
        /// Exit status, when the process has been reaped (e.g. `exit status: 1`).
        status: Option<String>,
        /// Last lines the server wrote on stderr.
        stderr: Vec<String>,
    },
    /// The handshake failed for a protocol reason (bad response, JSON-RPC error).
    #[error(
        "server `{server}`: initialize failed: {message}{}",
        StderrTail(stderr)
    )]
    Handshake {
        /// Server name.
        server: String,
        /// What went wrong.
        message: String,
        /// Last lines the server wrote on stderr.
        stderr: Vec<String>,
    },
    /// The server chose a protocol version this client does not speak.
    #[error("server `{server}`: unsupported protocol version `{version}` (this client speaks {})", crate::client::SUPPORTED_PROTOCOL_VERSIONS.join(", "))]
    UnsupportedProtocol {
        /// Server name.
        server: String,
        /// The version the server picked.
        version: String,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("server `{server}`: {method} failed: {message}")]
    Rpc {
        /// Server name.
        server: String,
        /// The request method (and tool name for calls).
        method: String,
        /// The server's error message and code.
        message: String,
    },
    /// The server broke the protocol after the handshake (e.g. a repeating list cursor).
    #[error("server `{server}`: {method}: {message}")]
    Protocol {
        /// Server name.
        server: String,
        /// The request method.
        method: String,
        /// What the server did wrong.
        message: String,
    },
    /// The caller cancelled the request; the server was told with `notifications/cancelled`.
    #[error("server `{server}`: {method} cancelled")]
    Cancelled {
        /// Server name.
        server: String,
        /// The request method.
        method: String,
    },
    /// The configured transport is not available in this build.
    #[error("server `{server}`: {transport} servers are not supported yet")]
    UnsupportedTransport {
        /// Server name.
        server: String,
        /// The transport's name.
        transport: &'static str,
    },
}

impl ClientError {
    /// The server's last stderr lines, when the error carries them.
    pub fn stderr_tail(&self) -> &[String] {
        match self {
            ClientError::Timeout { stderr, .. }
            | ClientError::Exited { stderr, .. }
            | ClientError::Handshake { stderr, .. } => stderr,
            _ => &[],
        }
    }

    /// `true` when the connection is gone and the request cannot succeed on it (as opposed to
    /// a slow or failing request on a live connection).
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, ClientError::Exited { .. })
    }
}

fn exit_text(status: Option<&str>) -> String {
    match status {
        Some(status) => format!("server exited ({status})"),
        None => "connection closed".to_owned(),
    }
}

fn format_duration(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// Renders the stderr tail after a message: `; stderr: ...` on following indented lines.
struct StderrTail<'a>(&'a [String]);

impl std::fmt::Display for StderrTail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        f.write_str("\n  stderr:")?;
        for line in self.0 {
            write!(f, "\n  | {line}")?;
        }
        Ok(())
    }
}
