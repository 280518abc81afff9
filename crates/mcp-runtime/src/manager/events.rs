//! What the manager tells hosts as servers come and go.

use std::time::Duration;

/// A change in one server's life. Subscribe with [`McpManager::subscribe`](super::McpManager::subscribe).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ManagerEvent {
    /// A connection attempt started.
    Connecting {
        /// Server name.
        server: String,
    },
    /// Connected and tools listed.
    Connected {
        /// Server name.
        server: String,
        /// Number of tools listed.
        tools: usize,
        /// From the start of the attempt to the tool list.
        elapsed: Duration,
    },
    /// The attempt (or a late background load) failed.
    Failed {
        /// Server name.
        server: String,
        /// The error, naming the server.
        error: super::ServerError,
        /// The server's last stderr lines.
        stderr: Vec<String>,
    },
    /// The server's tools changed (first list, `list_changed`, reconnect, disconnect).
    ToolsChanged {
        /// Server name.
        server: String,
    },
    /// The connection dropped unexpectedly; another attempt follows after `delay`.
    Reconnecting {
        /// Server name.
        server: String,
        /// 1-based attempt number.
        attempt: u32,
        /// Back-off before the attempt.
        delay: Duration,
    },
    /// Automatic reconnects stopped (too many crashes, or attempts exhausted); a manual
    /// reconnect starts again.
    Suspended {
        /// Server name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server was disconnected on request.
    Disconnected {
        /// Server name.
        server: String,
    },
}

impl ManagerEvent {
    /// The server the event is about.
    pub fn server(&self) -> &str {
        match self {
            ManagerEvent::Connecting { server }
            | ManagerEvent::Connected { server, .. }
            | ManagerEvent::Failed { server, .. }
            | ManagerEvent::ToolsChanged { server }
            | ManagerEvent::Reconnecting { server, .. }
            | ManagerEvent::Suspended { server, .. }
            | ManagerEvent::Disconnected { server } => server,
        }
    }
}

/// Something a connected server said that is not about its life: a log line, or a change to a
/// resource someone subscribed to. Receive them with
/// [`McpManager::notices`](super::McpManager::notices).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerNotice {
    /// `notifications/message`.
    Log {
        /// Server name.
        server: String,
        /// `debug` … `emergency`.
        level: String,
        /// The logger name, if given.
        logger: Option<String>,
        /// The payload, usually a string.
        data: serde_json::Value,
    },
    /// `notifications/resources/updated`.
    ResourceUpdated {
        /// Server name.
        server: String,
        /// The resource's URI.
        uri: String,
    },
}
