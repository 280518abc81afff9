//! The seam between the supervisor and a live connection: what the reconnect logic needs
//! from "connect a server" and "the connection it gave", and nothing else. The manager uses
//! [`McpClient`]; the supervisor's unit tests script a fake so back-off, the breaker, re-lists
//! and generation checks can be exercised without processes.

use tokio::sync::mpsc;

use crate::cache::CacheHints;
use crate::client::{ClientError, ClientEvent, ConnectOptions, McpClient, ToolDefinition};
use crate::config::resolve::resolution_may_block;
use crate::config::{EnvSource, ServerConfig, resolve_connect_values_with};

/// How many stderr lines a report, an error or a lost connection keeps.
pub(crate) const STDERR_TAIL_LINES: usize = 20;

/// A live connection as the supervisor sees it.
#[async_trait::async_trait]
pub(crate) trait Connection: Send + Sync + 'static {
    /// `tools/list`, all pages.
    async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ClientError>;
    /// The caching hints of the last [`list_tools`](Self::list_tools) (none by default).
    fn tools_cache_hints(&self) -> CacheHints {
        CacheHints::default()
    }
    /// Use `tools`, fresh in the cache, instead of listing (nothing to do by default).
    fn adopt_cached_tools(&self, tools: &[ToolDefinition]) {
        let _ = tools;
    }
    /// Resolves once the transport has closed.
    async fn closed(&self);
    /// Shut the connection down; describes how the server ended, when known.
    async fn close(&self) -> Option<String>;
    /// [`close`](Self::close), giving the server `grace` to exit by itself.
    async fn close_within(&self, grace: std::time::Duration) -> Option<String> {
        let _ = grace;
        self.close().await
    }
    /// The last stderr lines of the server.
    fn stderr_tail(&self) -> Vec<String>;
}

/// Makes connections for the supervisor.
#[async_trait::async_trait]
pub(crate) trait Connector: Send + Sync + 'static {
    /// The connection this connector makes.
    type Conn: Connection;
    /// Resolve connect-time values and connect `name`, sending its notifications to `events`.
    async fn connect(
        &self,
        name: &str,
        config: &ServerConfig,
        events: mpsc::Sender<ClientEvent>,
    ) -> Result<Self::Conn, ClientError>;
}

#[async_trait::async_trait]
impl Connection for McpClient {
    async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ClientError> {
        McpClient::list_tools(self).await
    }

    fn tools_cache_hints(&self) -> CacheHints {
        McpClient::tools_cache_hints(self)
    }

    fn adopt_cached_tools(&self, tools: &[ToolDefinition]) {
        McpClient::adopt_cached_tools(self, tools)
    }

    async fn closed(&self) {
        McpClient::closed(self).await
    }

    async fn close(&self) -> Option<String> {
        McpClient::close(self)
            .await
            .map(|status| status.to_string())
    }

    async fn close_within(&self, grace: std::time::Duration) -> Option<String> {
        McpClient::close_within(self, grace)
            .await
            .map(|status| status.to_string())
    }

    fn stderr_tail(&self) -> Vec<String> {
        McpClient::stderr_tail(self, STDERR_TAIL_LINES)
    }
}

/// The real connector: resolves `!command` and env values, then [`McpClient::connect`].
pub(crate) struct ClientConnector {
    /// Roots and OAuth; `events` is filled per connection.
    pub options: ConnectOptions,
}

#[async_trait::async_trait]
impl Connector for ClientConnector {
    type Conn = McpClient;

    async fn connect(
        &self,
        name: &str,
        config: &ServerConfig,
        events: mpsc::Sender<ClientEvent>,
    ) -> Result<McpClient, ClientError> {
        self.open(name, config, Some(events)).await
    }
}

impl ClientConnector {
    /// Resolve connect-time values and connect, sending the server's notifications to
    /// `events` when given.
    pub(crate) async fn open(
        &self,
        name: &str,
        config: &ServerConfig,
        events: Option<mpsc::Sender<ClientEvent>>,
    ) -> Result<McpClient, ClientError> {
        // `!command` values run a shell (bounded at 10 s) and secrets are read from a file:
        // those stay off the async threads. The rest is a few lookups, done here rather than
        // on the blocking pool, which would start a thread for each of a burst of servers.
        let resolved = if resolution_may_block(config) {
            let (server, config) = (name.to_owned(), config.clone());
            tokio::task::spawn_blocking(move || {
                resolve_connect_values_with(&server, &config, true, &EnvSource::Process)
            })
            .await
            .map_err(|e| config_error(name, e.to_string()))?
        } else {
            resolve_connect_values_with(name, config, true, &EnvSource::Process)
        };
        let resolved = resolved.map_err(|e| config_error(name, e.to_string()))?;
        let options = ConnectOptions {
            events,
            ..self.options.clone()
        };
        McpClient::connect(name, &resolved, &options).await
    }
}

fn config_error(name: &str, message: String) -> ClientError {
    ClientError::Config {
        server: name.to_owned(),
        message,
    }
}
