//! One live connection to one MCP server.
//!
//! [`McpClient::connect`] starts the server (stdio: a child process in its own process group),
//! performs the `initialize` handshake with protocol 2025-11-25 within the server's startup
//! timeout, and checks the version the server picked. The client then lists tools (following
//! `nextCursor`), calls them with a per-call timeout and cancellation (both of which send
//! `notifications/cancelled`), and closes on our own deadline so nothing outlives it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_runtime::client::ClientError> {
//! use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
//! use mcp_runtime::config::ServerConfig;
//!
//! let config = ServerConfig::stdio("mcpr", ["mock"]);
//! let client = McpClient::connect("mock", &config, &ConnectOptions::default()).await?;
//! let tools = client.list_tools().await?;
//! let args = serde_json::json!({"text": "hello"});
//! let output = client.call_tool("echo", args.as_object().cloned(), CallOptions::default()).await?;
//! assert_eq!(output.text(), "hello");
//! client.close().await;
//! # let _ = tools; Ok(()) }
//! ```

mod error;
mod handler;
mod stdio;
mod types;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ListToolsRequest, PaginatedRequestParams, ProtocolVersion, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService, ServiceError};
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, Transport};

pub use error::ClientError;
pub use handler::ClientEvent;
pub use stdio::group_alive;
pub use types::{Content, ServerInfo, ToolDefinition, ToolOutput};

use handler::Handler;
use stdio::{EXIT_GRACE, ServerProcess};

/// Protocol versions we accept from a server, oldest first. We ask for the newest.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Stderr lines attached to errors.
const STDERR_TAIL_LINES: usize = 20;

/// A `tools/list` that pages more than this many times is treated as broken.
const MAX_LIST_PAGES: usize = 10_000;

/// Settings of a connection that do not come from the server's config.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Directories offered to the server in `roots/list` (default: the current directory).
    pub roots: Vec<PathBuf>,
    /// Where to send server notifications (tool list changes, logs, progress).
    pub events: Option<mpsc::UnboundedSender<ClientEvent>>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            roots: std::env::current_dir().into_iter().collect(),
            events: None,
        }
    }
}

/// Per-call settings of [`McpClient::call_tool`].
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Overrides the server's tool timeout for this call.
    pub timeout: Option<Duration>,
    /// Cancels the call; the server is sent `notifications/cancelled`.
    pub cancel: Option<CancellationToken>,
}

/// A connected MCP server.
///
/// Calls take `&self` and may run concurrently; share the client with an `Arc`. Call
/// [`close`](Self::close) to shut it down; dropping it kills the server's process group as a
/// last resort.
pub struct McpClient {
    server: String,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// The child process of a stdio server; `None` for remote servers.
    process: Option<ServerProcess>,
    info: ServerInfo,
    handshake: Duration,
    config: ServerConfig,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .field("pid", &self.pid())
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Start (stdio) or reach the server and complete the MCP handshake, bounded by the server's
    /// startup timeout. On failure nothing is left running, and the error carries the tail of
    /// the server's stderr.
    pub async fn connect(
        server: &str,
        config: &ServerConfig,
        options: &ConnectOptions,
    ) -> Result<McpClient, ClientError> {
        let handler = Handler {
            server: server.to_owned(),
            roots: options.roots.clone(),
            events: options.events.clone(),
        };
        let started = Instant::now();
        let (process, handshake): (Option<ServerProcess>, Handshake) = match &config.transport {
            Transport::Stdio(stdio) => {
                let (process, pipes) = ServerProcess::spawn(server, stdio)?;
                let handshake = Box::pin(handler.serve((pipes.stdout, pipes.stdin)));
                (Some(process), handshake)
            }
            Transport::Http(_) => {
                return Err(ClientError::UnsupportedTransport {
                    server: server.to_owned(),
                    transport: config.transport.kind_name(),
                });
            }
        };

        let outcome = match config.startup_timeout() {
            Some(bound) => tokio::time::timeout(bound, handshake)
                .await
                .map_err(|_| bound),
            None => Ok(handshake.await),
        };
        let service = match outcome {
            Ok(Ok(service)) => service,
            Err(bound) => {
                let error = ClientError::Timeout {
                    server: server.to_owned(),
                    phase: "initialize".into(),
                    after: bound,
                    stderr: stderr_now(process.as_ref()),
                };
                stop(process).await;
                return Err(error);
            }
            Ok(Err(e)) => {
                let error = handshake_error(server, &e.to_string(), process.as_ref()).await;
                stop(process).await;
                return Err(error);
            }
        };
        let peer = service.peer().clone();
        let Some(info) = server_info(&peer) else {
            let error =
                handshake_error(server, "no initialize result recorded", process.as_ref()).await;
            stop(process).await;
            return Err(error);
        };
        let client = McpClient {
            server: server.to_owned(),
            peer,
            service: Mutex::new(Some(service)),
            process,
            info,
            handshake: started.elapsed(),
            config: config.clone(),
        };
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&client.info.protocol_version.as_str()) {
            let error = ClientError::UnsupportedProtocol {
                server: server.to_owned(),
                version: client.info.protocol_version.clone(),
            };
            client.close().await;
            return Err(error);
        }
        Ok(client)
    }

    /// The server's name as configured.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What the server reported in `initialize`.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// Time from spawn to a completed handshake.
    pub fn handshake_time(&self) -> Duration {
        self.handshake
    }

    /// OS process id of a stdio server (also its process group id).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ServerProcess::pid)
    }

    /// The last lines the server wrote on stderr.
    pub fn stderr_tail(&self, lines: usize) -> Vec<String> {
        self.process
            .as_ref()
            .map(|p| p.stderr_tail_now(lines))
            .unwrap_or_default()
    }

    /// `true` once the connection is gone (the process exited or the transport closed).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
            || self
                .process
                .as_ref()
                .is_some_and(|p| p.exit_status().is_some())
    }

    /// Resolves when the connection is gone, for whatever reason (for a stdio server: when
    /// its process exits).
    pub async fn closed(&self) {
        match &self.process {
            Some(process) => {
                process.exited().await;
            }
            None => {
                while !self.peer.is_transport_closed() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// List every tool, following `nextCursor` until the last page. A server that repeats a
    /// cursor is a protocol error rather than an endless loop.
    pub async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
            let result = self
                .request(request, "tools/list", self.config.request_timeout(), None)
                .await?;
            let ServerResult::ListToolsResult(page) = result else {
                return Err(self.protocol_error("tools/list", "unexpected response type"));
            };
            for tool in page.tools {
                tools.push(convert(&tool).map_err(|e| {
                    self.protocol_error("tools/list", format!("invalid tool definition: {e}"))
                })?);
            }
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(self.protocol_error(
                        "tools/list",
                        format!("server repeated the cursor `{next}`; stopping"),
                    ));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(self.protocol_error("tools/list", format!("more than {MAX_LIST_PAGES} pages")))
    }

    /// Call a tool. The server's tool timeout (or `options.timeout`) bounds the call; on
    /// timeout or cancellation the server is sent `notifications/cancelled`. A tool that fails
    /// on its own terms returns `Ok` with `is_error: true`.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<ToolOutput, ClientError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let timeout = options.timeout.or_else(|| self.config.tool_timeout());
        let method = format!("tools/call `{tool}`");
        match self
            .request(request, &method, timeout, options.cancel.as_ref())
            .await?
        {
            ServerResult::CallToolResult(result) => convert(&result)
                .map_err(|e| self.protocol_error(&method, format!("invalid result: {e}"))),
            // Some servers answer a tool with no output with `{}`.
            ServerResult::EmptyResult(_) => Ok(ToolOutput::default()),
            _ => Err(self.protocol_error(&method, "unexpected response type")),
        }
    }

    /// Send `ping` and wait for the answer.
    pub async fn ping(&self) -> Result<(), ClientError> {
        let request = ClientRequest::PingRequest(Default::default());
        self.request(request, "ping", self.config.request_timeout(), None)
            .await
            .map(|_| ())
    }

    /// Shut the server down: close the transport (for stdio: stdin EOF), give the process a
    /// short grace to exit, then SIGTERM and finally SIGKILL its whole process group. Returns
    /// the exit status of a stdio server. Safe to call twice.
    pub async fn close(&self) -> Option<std::process::ExitStatus> {
        let service = self
            .service
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut service) = service {
            // Cancelling the service drops the transport and with it the child's stdin (EOF).
            // rmcp's own close waits for its worker; bound it by our grace, not its 3 + 3 s.
            let _ = service.close_with_timeout(EXIT_GRACE).await;
        }
        match &self.process {
            Some(process) => Some(process.terminate(EXIT_GRACE).await),
            None => None,
        }
    }

    /// Send one request and map every failure to a [`ClientError`].
    async fn request(
        &self,
        request: ClientRequest,
        method: &str,
        timeout: Option<Duration>,
        cancel: Option<&CancellationToken>,
    ) -> Result<ServerResult, ClientError> {
        let mut options = PeerRequestOptions::no_options();
        // rmcp sends `notifications/cancelled` itself when this timeout expires.
        options.timeout = timeout;
        let handle = self
            .peer
            .send_request_with_option(request, options)
            .await
            .map_err(|e| self.service_error(method, e))?;
        let id = handle.id.clone();
        let response = match cancel {
            None => handle.await_response().await,
            Some(cancel) => tokio::select! {
                response = handle.await_response() => response,
                () = cancel.cancelled() => {
                    let notice = CancelledNotificationParam::new(
                        Some(id),
                        Some("cancelled by the client".into()),
                    );
                    let _ = self.peer.notify_cancelled(notice).await;
                    return Err(ClientError::Cancelled {
                        server: self.server.clone(),
                        method: method.to_owned(),
                    });
                }
            },
        };
        match response {
            Ok(result) => Ok(result),
            Err(e) => Err(self.service_error_after_send(method, e).await),
        }
    }

    fn service_error(&self, method: &str, error: ServiceError) -> ClientError {
        match error {
            ServiceError::McpError(e) => ClientError::Rpc {
                server: self.server.clone(),
                method: method.to_owned(),
                message: format!("{} (code {})", e.message, e.code.0),
            },
            ServiceError::Timeout { timeout } => ClientError::Timeout {
                server: self.server.clone(),
                phase: method.to_owned(),
                after: timeout,
                stderr: Vec::new(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => ClientError::Exited {
                server: self.server.clone(),
                phase: method.to_owned(),
                status: self
                    .process
                    .as_ref()
                    .and_then(ServerProcess::exit_status)
                    .map(|s| s.to_string()),
                stderr: stderr_now(self.process.as_ref()),
            },
            other => self.protocol_error(method, other.to_string()),
        }
    }

    /// Like `service_error`, but a lost connection waits briefly for the process to be reaped
    /// so the error can give its exit status.
    async fn service_error_after_send(&self, method: &str, error: ServiceError) -> ClientError {
        if matches!(
            error,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) {
            if let Some(process) = &self.process {
                process.exited_within(Duration::from_millis(100)).await;
            }
        }
        self.service_error(method, error)
    }

    fn protocol_error(&self, method: &str, message: impl Into<String>) -> ClientError {
        ClientError::Protocol {
            server: self.server.clone(),
            method: method.to_owned(),
            message: message.into(),
        }
    }
}

/// The handshake in progress, whatever the transport.
type Handshake = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    RunningService<RoleClient, Handler>,
                    rmcp::service::ClientInitializeError,
                >,
            > + Send,
    >,
>;

fn stderr_now(process: Option<&ServerProcess>) -> Vec<String> {
    process
        .map(|p| p.stderr_tail_now(STDERR_TAIL_LINES))
        .unwrap_or_default()
}

/// Kill whatever a failed connection left running.
async fn stop(process: Option<ServerProcess>) {
    if let Some(process) = process {
        process.terminate(Duration::ZERO).await;
    }
}

/// A failed handshake: if the process died, say how (exit status and stderr); otherwise report
/// the protocol failure.
async fn handshake_error(
    server: &str,
    message: &str,
    process: Option<&ServerProcess>,
) -> ClientError {
    if let Some(process) = process {
        // Let a dying process finish so the error can say how it ended.
        if let Some(status) = process.exited_within(Duration::from_millis(250)).await {
            return ClientError::Exited {
                server: server.to_owned(),
                phase: "initialize".into(),
                status: Some(status.to_string()),
                stderr: process.stderr_tail(STDERR_TAIL_LINES).await,
            };
        }
    }
    ClientError::Handshake {
        server: server.to_owned(),
        message: message.to_owned(),
        stderr: match process {
            Some(process) => process.stderr_tail(STDERR_TAIL_LINES).await,
            None => Vec::new(),
        },
    }
}

/// Convert an rmcp value into ours through the wire format they both follow.
fn convert<From: serde::Serialize, To: serde::de::DeserializeOwned>(
    value: &From,
) -> Result<To, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(value)?)
}

fn server_info(peer: &Peer<RoleClient>) -> Option<ServerInfo> {
    let info = peer.peer_info()?;
    let implementation = info.server_info.clone().unwrap_or_default();
    Some(ServerInfo {
        name: implementation.name,
        version: implementation.version,
        protocol_version: protocol_string(&info.protocol_version),
        instructions: info.instructions.clone(),
    })
}

fn protocol_string(version: &ProtocolVersion) -> String {
    version.as_str().to_owned()
}
