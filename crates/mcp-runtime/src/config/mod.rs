//! Server configuration: what one MCP server is, and how it is read from a config file.
//!
//! This is the first step of the lifecycle (config → client → manager → tools → gateway):
//! nothing here starts a process or opens a socket.

mod error;
mod file;
mod validate;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use error::ConfigError;
pub use file::{ConfigFile, ServerEntry, load_config_file, parse_config_str};
pub use validate::server_from_json;

/// Timeout used when a server's config sets none (SPEC A4: 30 s).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Environment variable that overrides every timeout of every server, in milliseconds.
pub const TIMEOUT_ENV: &str = "MCPR_TIMEOUT_MS";

/// One configured MCP server, validated and ready to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// How to reach the server.
    pub transport: Transport,
    /// `timeout` (ms) bounding every request; `0` means none.
    pub timeout_ms: Option<u64>,
    /// `startup_timeout_ms`: overrides `timeout` for the handshake and first `tools/list`.
    pub startup_timeout_ms: Option<u64>,
    /// `tool_timeout_ms`: overrides `timeout` for tool calls.
    pub tool_timeout_ms: Option<u64>,
    /// `enabled: false` servers are dropped before any connection attempt.
    pub enabled: bool,
}

/// The transport of a server and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A local process speaking JSON-RPC over its stdin/stdout.
    Stdio(StdioConfig),
    /// A remote server reached over HTTP.
    Http(HttpConfig),
}

/// A server started as a child process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioConfig {
    /// Program to run (looked up on `PATH` when it has no slash).
    pub command: String,
    /// Arguments, without the program.
    pub args: Vec<String>,
    /// Added to (and overriding) the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Working directory; the caller's when absent.
    pub cwd: Option<PathBuf>,
}

/// A remote server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Endpoint URL.
    pub url: String,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// Which HTTP flavour of MCP the server speaks.
    pub kind: HttpKind,
}

/// HTTP flavours of MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpKind {
    /// Streamable HTTP (protocol 2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (protocol 2024-11-05).
    Sse,
}

impl Transport {
    /// Short name shown to users: `stdio`, `http` or `sse`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(HttpConfig {
                kind: HttpKind::StreamableHttp,
                ..
            }) => "http",
            Transport::Http(HttpConfig {
                kind: HttpKind::Sse,
                ..
            }) => "sse",
        }
    }
}

impl ServerConfig {
    /// A stdio server with default settings.
    ///
    /// ```
    /// use mcp_runtime::config::ServerConfig;
    /// let cfg = ServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
    /// assert_eq!(cfg.transport.kind_name(), "stdio");
    /// ```
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ServerConfig {
            transport: Transport::Stdio(StdioConfig {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                ..StdioConfig::default()
            }),
            timeout_ms: None,
            startup_timeout_ms: None,
            tool_timeout_ms: None,
            enabled: true,
        }
    }

    /// Bound on the handshake and first `tools/list` (SPEC B5); `None` means unbounded.
    pub fn startup_timeout(&self) -> Option<Duration> {
        resolve_timeout(self.startup_timeout_ms.or(self.timeout_ms), env_timeout_ms())
    }

    /// Bound on one tool call (SPEC B5); `None` means unbounded.
    pub fn tool_timeout(&self) -> Option<Duration> {
        resolve_timeout(self.tool_timeout_ms.or(self.timeout_ms), env_timeout_ms())
    }

    /// Bound on any other request (`tools/list`, `ping`, ...); `None` means unbounded.
    pub fn request_timeout(&self) -> Option<Duration> {
        resolve_timeout(self.timeout_ms, env_timeout_ms())
    }
}

fn env_timeout_ms() -> Option<u64> {
    std::env::var(TIMEOUT_ENV).ok()?.trim().parse().ok()
}

/// `MCPR_TIMEOUT_MS` beats the config, the config beats the default, and 0 disables the bound.
fn resolve_timeout(configured_ms: Option<u64>, env_ms: Option<u64>) -> Option<Duration> {
    match env_ms.or(configured_ms).unwrap_or(DEFAULT_TIMEOUT_MS) {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_resolution_order() {
        assert_eq!(resolve_timeout(None, None), Some(Duration::from_secs(30)));
        assert_eq!(resolve_timeout(Some(500), None), Some(Duration::from_millis(500)));
        assert_eq!(resolve_timeout(Some(500), Some(7)), Some(Duration::from_millis(7)));
        assert_eq!(resolve_timeout(Some(0), None), None);
        assert_eq!(resolve_timeout(Some(500), Some(0)), None);
    }

    #[test]
    fn specific_timeouts_override_the_general_one() {
        let mut cfg = ServerConfig::stdio("x", Vec::<String>::new());
        cfg.timeout_ms = Some(1_000);
        cfg.tool_timeout_ms = Some(2_000);
        assert_eq!(
            resolve_timeout(cfg.tool_timeout_ms.or(cfg.timeout_ms), None),
            Some(Duration::from_millis(2_000))
        );
        assert_eq!(
            resolve_timeout(cfg.startup_timeout_ms.or(cfg.timeout_ms), None),
            Some(Duration::from_millis(1_000))
        );
    }
}
