//! What the manager tells a host: each server's connection state, its offered tools, the
//! start-up report, per-server reports for a status view, and the typed errors of the manager
//! boundary.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;

use crate::client::{ClientError, ToolDefinition};
use crate::config::ServerSource;

/// A server's connection in three words: connected, connecting or disconnected. The summary
/// of a [`ConnectionState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ServerStatus {
    /// Connected, tools loaded.
    Connected,
    /// A handshake, tool load or reconnect is in progress.
    Connecting,
    /// Not connected (failed, suspended, disconnected or unknown).
    Disconnected,
}

/// Where a server's connection stands, in detail. (Whether a server is configured, trusted and
/// enabled at all is discovery's business: see [`crate::config::ServerState`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The handshake is in progress.
    Connecting,
    /// Connected; the first `tools/list` is in progress.
    LoadingTools,
    /// Connected, tools loaded.
    Connected,
    /// The connection dropped; reconnect attempt `attempt` (1-based) is pending or running.
    Reconnecting {
        /// 1-based attempt number within the current outage.
        attempt: u32,
    },
    /// The first connection failed, or the connection was lost with reconnects turned off.
    Failed,
    /// Automatic reconnects stopped (back-off exhausted or crash storm).
    Suspended,
}

impl ConnectionState {
    /// The three-word summary.
    pub fn status(self) -> ServerStatus {
        match self {
            ConnectionState::Connected => ServerStatus::Connected,
            ConnectionState::Connecting
            | ConnectionState::LoadingTools
            | ConnectionState::Reconnecting { .. } => ServerStatus::Connecting,
            ConnectionState::Failed | ConnectionState::Suspended => ServerStatus::Disconnected,
        }
    }

    /// `true` while a handshake, tool load or reconnect is in progress.
    pub fn is_pending(self) -> bool {
        self.status() == ServerStatus::Connecting
    }
}

impl std::fmt::Display for ConnectionState {
    /// `connected`, `connecting`, `loading tools`, `reconnecting (attempt N)`, `failed`,
    /// `suspended`; honours width and alignment so tables can pad it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            ConnectionState::Connecting => "connecting".to_owned(),
            ConnectionState::LoadingTools => "loading tools".to_owned(),
            ConnectionState::Connected => "connected".to_owned(),
            ConnectionState::Reconnecting { attempt } => {
                format!("reconnecting (attempt {attempt})")
            }
            ConnectionState::Failed => "failed".to_owned(),
            ConnectionState::Suspended => "suspended".to_owned(),
        };
        f.pad(&text)
    }
}

impl serde::Serialize for ConnectionState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why a server is not (or no longer) connected. Cheap to clone: a report and every waiter
/// share the same error.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Connecting failed: spawn, handshake, config, timeout, authorization, ...
    #[error(transparent)]
    Connect(Arc<ClientError>),
    /// The live connection closed without being asked to.
    #[error("server `{server}`: connection lost ({status})")]
    ConnectionLost {
        /// Server name.
        server: String,
        /// How the server ended (an exit status), or `connection closed`.
        status: String,
    },
    /// Automatic reconnects stopped after `cause`.
    #[error("{cause}; {reason}")]
    Suspended {
        /// The failure that ended the last attempt.
        cause: Box<ServerError>,
        /// Why reconnects stopped (back-off exhausted, crash storm).
        reason: String,
    },
}

impl ServerError {
    /// The connection error underneath, if the failure was one.
    pub fn client_error(&self) -> Option<&ClientError> {
        match self {
            ServerError::Connect(error) => Some(error),
            ServerError::ConnectionLost { .. } => None,
            ServerError::Suspended { cause, .. } => cause.client_error(),
        }
    }

    /// `true` when the server refused for lack of credentials that a login would give.
    pub fn is_auth_required(&self) -> bool {
        self.client_error().is_some_and(ClientError::needs_login)
    }

    /// Why the server's authorization failed, when that is the failure.
    pub fn auth_failure(&self) -> Option<&crate::auth::AuthFailure> {
        self.client_error().and_then(ClientError::auth_failure)
    }
}

impl From<ClientError> for ServerError {
    fn from(error: ClientError) -> Self {
        ServerError::Connect(Arc::new(error))
    }
}

/// One server's tools as the manager currently offers them.
#[derive(Debug, Clone)]
pub struct ServerTools {
    /// Server name.
    pub server: String,
    /// Where it was configured, when known.
    pub source: Option<ServerSource>,
    /// The tools.
    pub tools: Arc<[ToolDefinition]>,
    /// `true` when these come from the cache because the server is still connecting.
    pub deferred: bool,
}

/// What [`McpManager::connect_servers`](super::McpManager::connect_servers) returns at the
/// gate (or after waiting for uncached servers).
#[derive(Debug, Default)]
pub struct StartupReport {
    /// Live and deferred tools of every server that has some, in config order.
    pub servers: Vec<ServerTools>,
    /// Servers that failed, with their error (naming the server, with its stderr tail).
    pub errors: IndexMap<String, ServerError>,
    /// Servers still connecting in the background.
    pub pending: Vec<String>,
    /// Servers still connecting that the answer did not wait for: they have no cached tools
    /// and their last start failed (the error, as the tool cache remembers it).
    pub failed_before: IndexMap<String, String>,
}

/// Everything a status view shows about one server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerReport {
    /// Server name.
    pub name: String,
    /// Where the connection stands.
    pub state: ConnectionState,
    /// Provider that configured it.
    pub provider: Option<String>,
    /// Config file.
    pub path: Option<PathBuf>,
    /// `stdio`, `http` or `sse` (as detected, once connected).
    pub transport: &'static str,
    /// Process id of a stdio server.
    pub pid: Option<u32>,
    /// Spawn-to-handshake time of the live connection.
    pub handshake_ms: Option<u64>,
    /// Protocol version the server chose.
    pub protocol_version: Option<String>,
    /// `serverInfo` name and version.
    pub server_info: Option<String>,
    /// Number of tools offered (live or deferred).
    pub tools: usize,
    /// Whether the tools are cached ones.
    pub deferred: bool,
    /// Last error, if any ([`ServerError::is_auth_required`] tells a missing login).
    pub error: Option<ServerError>,
    /// Last stderr lines.
    pub stderr_tail: Vec<String>,
    /// The stored OAuth login of a remote server (`None` for stdio servers).
    pub login: Option<crate::auth::AuthStatus>,
}

impl ServerReport {
    /// The three-word summary of [`state`](Self::state).
    pub fn status(&self) -> ServerStatus {
        self.state.status()
    }

    /// `true` when the last failure was the server asking for credentials a login would give.
    pub fn needs_login(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(ServerError::is_auth_required)
    }
}

/// Failures of manager operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// No server of that name is configured (or it was disconnected).
    #[error("no server named `{0}`")]
    UnknownServer(String),
    /// The server is not available (failed at start-up, suspended after crashes).
    #[error("server `{server}` is not connected: {}", cause_text(cause.as_ref()))]
    Unavailable {
        /// Server name.
        server: String,
        /// Why, when known.
        cause: Option<ServerError>,
    },
    /// Waiting for the connection took longer than the caller's bound.
    #[error("server `{server}`: still not connected after {} ms", after.as_millis())]
    ConnectTimeout {
        /// Server name.
        server: String,
        /// The bound.
        after: Duration,
    },
    /// The tool is held by its pin: its definition changed since it was first seen, or it
    /// shadows another server's tool (see [`crate::pins`]).
    #[error(
        "tool `{tool}` of server `{server}` is held: {reason}; review and accept it with \
         `mcpr trust {server}`"
    )]
    ToolHeld {
        /// Server name.
        server: String,
        /// The server's name for the tool.
        tool: String,
        /// Why it is held.
        reason: crate::pins::HoldReason,
    },
    /// The request itself failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

fn cause_text(cause: Option<&ServerError>) -> String {
    cause.map_or_else(|| "failed".to_owned(), ToString::to_string)
}

impl super::McpManager {
    /// Each server's name and connection state, in config order: what a health check shows.
    /// Reads memory only (no files, no network), so that it can be asked often.
    pub fn states(&self) -> Vec<(String, ConnectionState)> {
        let state = self.lock();
        state
            .servers
            .iter()
            .map(|(name, entry)| (name.clone(), entry.phase.state()))
            .collect()
    }
}

impl ManagerError {
    /// `true` when the caller cancelled the call.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ManagerError::Client(ClientError::Cancelled { .. }))
    }

    /// Why the server's authorization failed, when that is why the request failed.
    pub fn auth_failure(&self) -> Option<&crate::auth::AuthFailure> {
        match self {
            ManagerError::Client(error) => error.auth_failure(),
            ManagerError::Unavailable { cause, .. } => {
                cause.as_ref().and_then(ServerError::auth_failure)
            }
            _ => None,
        }
    }

    /// `true` when the server wants credentials that a login would give.
    pub fn is_auth_required(&self) -> bool {
        match self {
            ManagerError::Client(error) => error.needs_login(),
            ManagerError::Unavailable { cause, .. } => {
                cause.as_ref().is_some_and(ServerError::is_auth_required)
            }
            _ => false,
        }
    }
}
