//! Errors of one connection. Each names the server; those that happen while the process is
//! starting carry the tail of its stderr, which is usually where the real reason is.

use std::time::Duration;

/// A failure to connect to, or talk with, one MCP server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    #[error("server `{server}`: {} during {phase}{}{}", exit_text(status.as_deref()), StderrTail(stderr), HeldBack(held_back))]
    Exited {
        /// Server name.
        server: String,
        /// What was in progress.
        phase: String,
        /// Exit status, when the process has been reaped (e.g. `exit status: 1`).
        status: Option<String>,
        /// Last lines the server wrote on stderr.
        stderr: Vec<String>,
        /// When it ended during start-up: names of host variables kept from its environment
        /// that inheriting everything would have passed (at most
        /// [`HELD_BACK_SHOWN`](crate::client::environment::HELD_BACK_SHOWN); never values).
        held_back: Vec<String>,
    },
    /// The handshake failed for a protocol reason (bad response, JSON-RPC error).
    #[error(
        "server `{server}`: initialize failed: {message}{}{}",
        StderrTail(stderr),
        HeldBack(held_back)
    )]
    Handshake {
        /// Server name.
        server: String,
        /// What went wrong.
        message: String,
        /// Last lines the server wrote on stderr.
        stderr: Vec<String>,
        /// A stdio server's host variables kept from its environment (names only), as for
        /// [`ClientError::Exited`].
        held_back: Vec<String>,
    },
    /// The server chose a protocol version this client does not speak.
    #[error("server `{server}`: unsupported protocol version `{version}` (this client speaks {})", super::era::SUPPORTED_PROTOCOL_VERSIONS.join(", "))]
    UnsupportedProtocol {
        /// Server name.
        server: String,
        /// The version the server picked.
        version: String,
    },
    /// The request was never written to the server: the connection was already gone. Unlike
    /// [`ClientError::Exited`] during a request, this proves the server did not act on it, so
    /// it is safe to send again on a new connection.
    #[error("server `{server}`: {method} not sent: the connection is closed")]
    NotSent {
        /// Server name.
        server: String,
        /// The request method.
        method: String,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("server `{server}`: {method} failed: {message} (code {code})")]
    Rpc {
        /// Server name.
        server: String,
        /// The request method (and tool name for calls).
        method: String,
        /// The JSON-RPC error code (e.g. -32601 for an unknown method).
        code: i32,
        /// The server's error message.
        message: String,
        /// The error's `data`, if the server sent any.
        data: Option<Box<serde_json::Value>>,
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
    /// A skill file did not match the server's own listing of it, so it was not used.
    #[error("server `{server}`: skill file {uri} rejected: {reason}")]
    SkillRejected {
        /// Server name.
        server: String,
        /// The file.
        uri: String,
        /// What did not match.
        reason: SkillRejection,
    },
    /// The caller cancelled the request; the server was told with `notifications/cancelled`.
    #[error("server `{server}`: {method} cancelled")]
    Cancelled {
        /// Server name.
        server: String,
        /// The request method.
        method: String,
    },
    /// A connect-time value could not be resolved (`!command`, an unset variable).
    #[error("{message}")]
    Config {
        /// Server name.
        server: String,
        /// The config error, naming the server and field.
        message: String,
    },
    /// A remote server could not be reached: DNS failure, connection refused or reset.
    #[error("server `{server}`: cannot reach {url}: {reason}")]
    Unreachable {
        /// Server name.
        server: String,
        /// The URL without its query (which may hold credentials).
        url: String,
        /// The underlying cause, e.g. `Connection refused (os error 111)`.
        reason: String,
    },
    /// The TLS handshake with a remote server failed (certificate, protocol).
    #[error("server `{server}`: TLS failure with {url}: {reason}")]
    Tls {
        /// Server name.
        server: String,
        /// The URL without its query.
        url: String,
        /// What rustls reported, e.g. `invalid peer certificate: UnknownIssuer`.
        reason: String,
    },
    /// A remote server answered with an HTTP error status.
    #[error(
        "server `{server}`: {phase}: HTTP {} from {url}{}",
        status_text(*status),
        BodyExcerpt(body)
    )]
    HttpStatus {
        /// Server name.
        server: String,
        /// What was in progress (`initialize`, `tools/call `echo``, ...).
        phase: String,
        /// The URL without its query.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the response body (at most 2 KiB).
        body: String,
    },
    /// A remote server wants credentials (HTTP 401 or 403) that we do not have.
    #[error(
        "server `{server}`: {failure} ({url} answered HTTP {status}{})",
        www_authenticate.as_deref().map(|c| format!(", WWW-Authenticate: {c}")).unwrap_or_default()
    )]
    AuthRequired {
        /// Server name.
        server: String,
        /// The URL without its query.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The server's `WWW-Authenticate` challenge, if it sent one.
        www_authenticate: Option<String>,
        /// Why no credential could be presented (not logged in, expired, more scope needed).
        failure: Box<crate::auth::AuthFailure>,
    },
    /// The server asked for credentials, and the credential store that would hold them could
    /// not be read (a corrupt or inaccessible file). Servers that ask for none are unaffected.
    #[error("server `{server}`: {reason}")]
    CredentialStore {
        /// Server name.
        server: String,
        /// The store's error, naming its file.
        reason: String,
    },
    /// Protocol 2026-07-28 over HTTP: the response stream of a request broke before its
    /// answer, and there is no resumption in that revision. The request may or may not have
    /// run on the server; it was sent again (once) only if that is safe.
    #[error(
        "server `{server}`: the answer to {method} was lost (the response stream broke before it arrived); {}",
        outcome(*repeated)
    )]
    AnswerLost {
        /// Server name.
        server: String,
        /// The request method (and tool name for calls).
        method: String,
        /// The request was sent a second time, and that answer was lost too.
        repeated: bool,
    },
    /// A task could not be used: a bad task id or state, a task that ended without a result,
    /// or a task operation the server's revision does not have.
    #[error("server `{server}`: task `{task}`: {problem}")]
    Task {
        /// Server name.
        server: String,
        /// The task id (control characters escaped).
        task: String,
        /// What was wrong.
        problem: super::task::TaskProblem,
    },
    /// An HTTP exchange failed after the connection was made (reset, truncated response).
    #[error("server `{server}`: {phase}: HTTP connection failed: {reason}")]
    Transport {
        /// Server name.
        server: String,
        /// What was in progress.
        phase: String,
        /// The underlying cause.
        reason: String,
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

    /// Names of host variables kept from a stdio server that failed to start (see
    /// [`ClientError::Exited`]); empty otherwise.
    pub fn held_back(&self) -> &[String] {
        match self {
            ClientError::Exited { held_back, .. } | ClientError::Handshake { held_back, .. } => {
                held_back
            }
            _ => &[],
        }
    }

    /// `true` when the connection is gone and the request cannot succeed on it (as opposed to
    /// a slow or failing request on a live connection).
    pub fn is_connection_lost(&self) -> bool {
        matches!(
            self,
            ClientError::Exited { .. }
                | ClientError::NotSent { .. }
                | ClientError::Unreachable { .. }
                | ClientError::Tls { .. }
        )
    }

    /// `true` when the server refused us for want of credentials that a login would give.
    pub fn needs_login(&self) -> bool {
        matches!(self, ClientError::AuthRequired { .. })
    }

    /// Why the server's authorization failed, when it did: a host turns this into its own
    /// advice (a login command, a settings page, the scopes to ask for).
    pub fn auth_failure(&self) -> Option<&crate::auth::AuthFailure> {
        match self {
            ClientError::AuthRequired { failure, .. } => Some(failure),
            _ => None,
        }
    }

    /// The error's kind, as telemetry records it in `error.type`: a JSON-RPC error's code
    /// for the codes JSON-RPC and MCP define, else a word for the variant. Never a message.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ClientError::Rpc { code, .. } => match code {
                -32700 => "-32700",
                -32600 => "-32600",
                -32601 => "-32601",
                -32602 => "-32602",
                -32603 => "-32603",
                -32002 => "-32002",
                -32042 => "-32042",
                _ => "rpc_error",
            },
            ClientError::Spawn { .. } => "spawn",
            ClientError::Timeout { .. } => "timeout",
            ClientError::Exited { .. } => "exited",
            ClientError::Handshake { .. } => "handshake",
            ClientError::UnsupportedProtocol { .. } => "unsupported_protocol",
            ClientError::NotSent { .. } => "not_sent",
            ClientError::Protocol { .. } => "protocol",
            ClientError::SkillRejected { .. } => "skill_rejected",
            ClientError::Cancelled { .. } => "cancelled",
            ClientError::Config { .. } => "config",
            ClientError::Unreachable { .. } => "unreachable",
            ClientError::Tls { .. } => "tls",
            ClientError::HttpStatus { .. } => "http_status",
            ClientError::AuthRequired { .. } => "auth_required",
            ClientError::CredentialStore { .. } => "credential_store",
            ClientError::AnswerLost { .. } => "answer_lost",
            ClientError::Task { .. } => "task",
            ClientError::Transport { .. } => "transport",
        }
    }

    /// `true` when the request provably never reached the server (safe to retry elsewhere):
    /// it was not sent, or no connection to a remote server could be made.
    pub fn never_reached_server(&self) -> bool {
        matches!(
            self,
            ClientError::NotSent { .. } | ClientError::Unreachable { .. } | ClientError::Tls { .. }
        )
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

/// `404 Not Found`: the code and, when it has one, its reason phrase.
fn status_text(status: u16) -> String {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason());
    match reason {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

/// Renders the start of an HTTP error body after a message: `: <first 300 characters>`, on
/// one line, or nothing for an empty body. The tags of an HTML error page are dropped, leaving
/// its text (`Cannot POST /mcp`).
struct BodyExcerpt<'a>(&'a str);

impl std::fmt::Display for BodyExcerpt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 300;
        let lower = self.0.trim_start().to_ascii_lowercase();
        let text = if lower.starts_with("<!doctype") || lower.starts_with("<html") {
            strip_tags(self.0)
        } else {
            self.0.to_owned()
        };
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if flat.is_empty() {
            return Ok(());
        }
        let shown: String = flat.chars().take(SHOWN).collect();
        let more = if flat.chars().count() > SHOWN {
            "…"
        } else {
            ""
        };
        write!(f, ": {shown}{more}")
    }
}

/// The text of an HTML page, without its tags and its `<head>` (title, styles).
fn strip_tags(html: &str) -> String {
    let body = match html.to_ascii_lowercase().find("</head>") {
        Some(end) => &html[end + "</head>".len()..],
        None => html,
    };
    let mut text = String::with_capacity(body.len());
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
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

/// The held-back variable names of a start-up error, when there are any.
struct HeldBack<'a>(&'a [String]);

impl std::fmt::Display for HeldBack<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        write!(
            f,
            "\n  not passed from mcpr's environment: {}\n  (name the ones it needs in the \
             server's `env_vars`, or set `inheritEnv: true`)",
            self.0.join(", ")
        )
    }
}

/// Why a skill file was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillRejection {
    /// The listing does not name this file, so nothing vouches for it.
    #[error("the skill's listing does not include it")]
    Unlisted,
    /// Its length differs from the listing's.
    #[error("{actual} bytes where the listing says {listed}")]
    Size {
        /// What the listing says.
        listed: u64,
        /// What was read.
        actual: u64,
    },
    /// Its SHA-256 differs from the listing's.
    #[error("its digest is {actual}, not the listed {listed}")]
    Digest {
        /// What the listing says.
        listed: String,
        /// What was read.
        actual: String,
    },
    /// The `SKILL.md` front matter is missing or differs from the listing's.
    #[error("its front matter {0}")]
    Frontmatter(String),
    /// The read returned no usable content.
    #[error("{0}")]
    Content(String),
}

/// How an [`ClientError::AnswerLost`] ends, in words.
fn outcome(repeated: bool) -> &'static str {
    if repeated {
        "it was sent once more and that answer was lost too"
    } else {
        "the request may or may not have run on the server, so it was not sent again"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_errors_show_the_status_and_the_text_of_an_html_body() {
        let error = ClientError::HttpStatus {
            server: "s".into(),
            phase: "initialize".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            status: 404,
            body: "<!DOCTYPE html>\n<html><head><title>Error</title></head>\n<body><pre>Cannot POST /mcp</pre></body></html>".into(),
        };
        assert_eq!(
            error.to_string(),
            "server `s`: initialize: HTTP 404 Not Found from http://127.0.0.1:1/mcp: Cannot POST /mcp"
        );
    }
}
