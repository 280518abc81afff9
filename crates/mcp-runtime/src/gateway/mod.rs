//! The gateway: every server of one [`McpManager`] served again as one MCP
//! server, so that sub-agents and other clients share one set of connections — one process per
//! backend server, however many clients.
//!
//! - [`Gateway`] is an rmcp server handler over the manager's *live* tool view (not a
//!   snapshot): tools are named `mcp_<server>_<tool>`, their descriptions say which
//!   server they come from, and every tools-changed event of the manager becomes one coalesced
//!   `notifications/tools/list_changed` to each connected client. Serve it over stdio
//!   ([`Gateway::serve_stdio`]), any byte stream ([`Gateway::serve_io`]) or streamable HTTP
//!   ([`http::bind`]). Resources, resource templates and prompts of the servers are served
//!   too, namespaced by server.
//! - [`SubAgentHandle`] gives a sub-agent running in the same process the same view and calls,
//!   with a per-call time cap and an abort that reaches the server, without a protocol hop.
//! - In discovery mode ([`ToolSearchMode`]) a client lists a search tool, an invoke tool, the
//!   tools of `alwaysLoad` servers and the tools it found, instead of every tool; each client
//!   has its own activated tools.
//! - [`ToolFilter`] scopes either of them to some servers, tools, prompts and resources. A
//!   scoped view is a boundary: what it does not offer cannot be listed, called, read or got
//!   through it, and a resource read reaches a server only for a URI that server listed or
//!   that one of its resource templates produces.
//!
//! Tool definitions go out whole, `_meta` included. MCP Apps' `ui://` URIs (a tool's
//! `_meta.ui.resourceUri`, listed resources and templates) are namespaced by server, since two
//! servers may serve the same one: `ui://<rest>` of server `S` is presented as
//! `ui://mcpr/<S>/<rest>`, `S` percent-encoded (everything but letters, digits and `-_.~`).
//! The rule is reversible and depends on nothing but the name and the URI, so a presented URI
//! is the same after a restart; it applies to every `ui://` URI a server sends, one already
//! shaped like a presented URI included, and a read of a presented URI goes only to the server
//! it names, for its own URI, and only when the view offers `<S>/<its own URI>`.
//!
//! Calls behave as the host's own: a tool whose server is still connecting waits for
//! it (bounded by the call's timeout); a failed server's tool returns an error result
//! `MCP error: ...`; the client's cancellation reaches the server as `notifications/cancelled`;
//! the server's progress notifications reach the client under the client's progress token.
//! A call's trace context (`_meta.traceparent`, `tracestate`, `baggage`) reaches the server
//! unchanged: the gateway makes no span of its own.
//! The servers' log lines reach the clients that asked for them, tagged with the server's
//! name, and a client's resource subscriptions reach the server that offers the resource
//! (once for all clients), whose updates come back to each subscriber.
//! A server's questions during a call or a `prompts/get` (elicitation, sampling, roots) go to
//! the client that made it, in the client's era: as requests over its session, or as an `input_required` result it
//! answers by retrying; what the client did not declare, the gateway answers itself (declines,
//! or offers the project as root). Build the manager with
//! [`ManagerOptions::relay_input`](crate::manager::ManagerOptions::relay_input) so that
//! servers of 2025-11-25 and older are told they may ask.
//! Replicas behind a load balancer share the key of those answers' `requestState`s
//! ([`GatewayOptions::state_key`], a [`StateKeyFile`]), so that any of them resumes a call of
//! a 2026-07-28 backend; [`Gateway::health`] says whether a gateway serves (`GET /healthz`).
//!
//! Where it lives: what the gateway answers is beside this file (`handler`, with `answer`,
//! `progress`, `catalog`, `apps` (MCP Apps' `ui://` URIs namespaced by server), `view`, `filter`, `template`, `search_mode`, `subscriptions`,
//! `notify`, `hints`, `prompt`, `subagent`, `health`, `state_key`, `param_headers` (the
//! `Mcp-Param-*` headers checked for the servers behind)); the questions a backend
//! asks during a call, their sealed `requestState` and the resumption of carried calls are
//! under `input/`; the byte plumbing (the transports, the stream's fast path, results relayed
//! as sent, HTTP sessions and `GET /healthz`) is under `wire/`, which calls into the rest and is
//! never imported by it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_runtime::gateway::GatewayError> {
//! use indexmap::IndexMap;
//! use mcp_runtime::config::ServerConfig;
//! use mcp_runtime::gateway::{Gateway, GatewayOptions};
//! use mcp_runtime::manager::{ManagerOptions, McpManager};
//!
//! let manager = McpManager::new(ManagerOptions::default());
//! let gateway = Gateway::new(manager.clone(), GatewayOptions::default());
//! // `tools/list` waits (bounded) for the start-up gate; `initialize` is answered at once.
//! let starting = gateway.starting();
//! let mut configs = IndexMap::new();
//! configs.insert("mock".to_owned(), ServerConfig::stdio("mcpr", ["mock"]));
//! let connecting = manager.clone();
//! tokio::spawn(async move {
//!     connecting.connect_servers(configs, IndexMap::new()).await;
//!     drop(starting);
//! });
//! let served = gateway.serve_stdio().await;
//! manager.disconnect_all().await;
//! served
//! # }
//! ```

mod answer;
mod apps;
mod catalog;
mod filter;
mod handler;
mod health;
mod hints;
mod input;
mod notify;
mod param_headers;
mod progress;
mod prompt;
mod search_mode;
mod state_key;
mod subagent;
mod subscriptions;
mod tasks;
mod template;
mod view;
mod wire;

pub use wire::http;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::service::ServerInitializeError;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::manager::McpManager;
use crate::tools::{McpTool, NamingStyle};

pub use crate::client::{CallOptions, OutputCap};
pub use catalog::CatalogError;
pub use filter::ToolFilter;
pub use health::{BackendHealth, Health, HealthStatus};
pub use input::resume::MAX_SPENT;
pub use input::{DEFAULT_PARK, MAX_PARKED};
pub use search_mode::{
    DEFAULT_LIMIT, INVOKE_TOOL, MAX_LIMIT, MAX_QUERY_CHARS, SEARCH_TOOL, ToolSearchMode,
    estimate_tokens,
};
pub use state_key::{CHECK_EVERY, CHECK_MISSED_EVERY, ROTATION_SLACK, StateKeyError, StateKeyFile};
pub use subagent::{DEFAULT_CALL_CAP, SubAgentHandle, SubAgentOptions};

use notify::Clients;
use view::ScopedTools;

/// How long tool changes must pause before clients are told (one notification per burst).
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// How long `tools/list` waits for start-up at most (see [`Gateway::starting`]).
pub const DEFAULT_STARTUP_WAIT: Duration = Duration::from_secs(30);

/// Settings of a [`Gateway`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Which servers and tools are served (default: all).
    pub filter: ToolFilter,
    /// How tools are named (default `mcp_<server>_<tool>`).
    pub naming: NamingStyle,
    /// The quiet period of `notifications/tools/list_changed`: tool changes are collected until
    /// they pause this long (at most twenty times as long), then each client whose own list
    /// changed is told once.
    pub debounce: Duration,
    /// Overrides every server's tool timeout for calls through the gateway.
    pub call_timeout: Option<Duration>,
    /// Upper bound on how long `tools/list` waits for [`Gateway::starting`] to be released.
    pub startup_wait: Duration,
    /// `serverInfo.name` told to clients.
    pub name: String,
    /// Whether clients list every tool or search for them (default: every tool).
    pub tool_search: ToolSearchMode,
    /// Servers whose tools are listed in discovery mode too (`alwaysLoad` in the config).
    pub always_load: BTreeSet<String>,
    /// Cap on each tool result sent to a client (default [`OutputCap::for_agents`]: about
    /// 100 KB, or `MCPR_MAX_OUTPUT` bytes); `None` sends results whole.
    pub output_cap: Option<OutputCap>,
    /// The key every `requestState` given to a 2026-07-28 client is sealed under. Replicas
    /// behind one load balancer share one [`StateKeyFile`], so that a client's retry may
    /// reach any of them; `None` (the default): a key made for this process, so that only
    /// this process can resume its clients' calls.
    pub state_key: Option<StateKeyFile>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            filter: ToolFilter::default(),
            naming: NamingStyle::Mcpr,
            debounce: DEFAULT_DEBOUNCE,
            call_timeout: None,
            startup_wait: DEFAULT_STARTUP_WAIT,
            name: "mcpr-gateway".to_owned(),
            tool_search: ToolSearchMode::Off,
            always_load: BTreeSet::new(),
            output_cap: OutputCap::for_agents(),
            state_key: None,
        }
    }
}

/// Failures of serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The client's `initialize` failed.
    #[error("gateway: MCP handshake with the client failed: {0}")]
    Handshake(String),
    /// The MCP service stopped with an error.
    #[error("gateway: the MCP service failed: {0}")]
    Service(String),
    /// The HTTP address cannot be bound.
    #[error("gateway: cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A non-loopback address without a bearer token.
    #[error("gateway: {addr} is not a loopback address; serving on it requires a bearer token")]
    TokenRequired {
        /// The address.
        addr: SocketAddr,
    },
    /// The HTTP server failed.
    #[error("gateway: the HTTP server failed: {0}")]
    Http(std::io::Error),
}

/// One MCP server in front of all the manager's servers. Cheap to clone: clones share the view,
/// the clients and the manager, so every client of every transport shares one connection per
/// backend server.
///
/// Creating one starts a background task (it needs a Tokio runtime) that forwards tool changes
/// to the clients; it stops when the last clone is dropped.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
    /// The state of the one client this handler serves (see [`Gateway::for_new_client`]).
    activated: Arc<search_mode::ActivatedTools>,
    /// What that client was last shown of the tool list (see `notify`).
    listing: Arc<notify::Listing>,
    /// Identifies this client to the `subscriptions` relay.
    client: u64,
    /// Served through a [`relay::RelayTransport`]: tool results go out as placeholders that
    /// the transport replaces by the result as the server sent it.
    relaying: bool,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("manager", &self.inner.scope.manager)
            .field("filter", &self.inner.scope.filter)
            .field("clients", &self.inner.clients.count())
            .finish()
    }
}

struct Inner {
    scope: ScopedTools,
    catalog: catalog::Catalog,
    tool_search: search_mode::ToolSearch,
    options: GatewayOptions,
    clients: Arc<Clients>,
    /// Logs and resource subscriptions of the clients.
    relay: Arc<subscriptions::Relay>,
    /// Calls parked until their 2026-07-28 client answers a backend's question.
    inputs: Arc<input::Inputs>,
    /// The tasks of backends handed to clients under the gateway's ids (see `tasks`).
    tasks: tasks::TaskRoutes,
    /// `false` while a [`Starting`] guard is alive.
    started: watch::Sender<bool>,
    /// Stops the change forwarder with the last clone.
    _forwarder: DropGuard,
}

impl Gateway {
    /// A gateway over `manager`'s servers. Must be called inside a Tokio runtime.
    pub fn new(manager: McpManager, options: GatewayOptions) -> Self {
        let clients = Arc::new(Clients::default());
        let stop = CancellationToken::new();
        let changes = manager.subscribe();
        let relay = Arc::new(subscriptions::Relay::new(
            manager.clone(),
            options.filter.clone(),
        ));
        tokio::spawn(subscriptions::run(
            relay.clone(),
            manager.notices(),
            manager.subscribe(),
            stop.clone(),
        ));
        let (started, _) = watch::channel(true);
        let inner = Arc::new_cyclic(|gateway: &Weak<Inner>| {
            // Weak: the forwarder must not keep the gateway alive (it stops with the last clone).
            let gateway = gateway.clone();
            tokio::spawn(notify::forward_changes(
                changes,
                options.filter.clone(),
                options.debounce,
                stop.clone(),
                move || {
                    let gateway = gateway.clone();
                    async move {
                        if let Some(inner) = gateway.upgrade() {
                            let clients = inner.clients.clone();
                            clients
                                .notify_changed(|activated| inner.list_digest(activated))
                                .await;
                        }
                    }
                },
            ));
            Inner {
                scope: ScopedTools::new(manager, options.filter.clone(), options.naming),
                catalog: catalog::Catalog::default(),
                tool_search: search_mode::ToolSearch::new(
                    options.tool_search,
                    options.always_load.clone(),
                ),
                inputs: input::Inputs::new(options.call_timeout, options.state_key.as_ref()),
                tasks: tasks::TaskRoutes::default(),
                options,
                clients,
                relay,
                started,
                _forwarder: stop.drop_guard(),
            }
        });
        Gateway {
            inner,
            activated: Arc::default(),
            listing: Arc::default(),
            client: 0,
            relaying: false,
        }
    }

    /// The manager behind the gateway.
    pub fn manager(&self) -> &McpManager {
        &self.inner.scope.manager
    }

    /// The tools served right now (live and cached ones, filtered, sorted by name).
    pub fn tools(&self) -> Vec<McpTool> {
        self.inner.scope.view().to_vec()
    }

    /// Clients connected right now (over every transport).
    pub fn clients(&self) -> usize {
        self.inner.clients.count()
    }

    /// Mark start-up as in progress until the returned guard is dropped: meanwhile `tools/list`
    /// (and a call to a name not known yet) waits, at most [`GatewayOptions::startup_wait`],
    /// so that a client connecting early gets the tools of the start-up gate rather than an
    /// empty list. `initialize` is answered at once regardless.
    pub fn starting(&self) -> Starting {
        self.inner.started.send_replace(false);
        Starting {
            started: self.inner.started.clone(),
        }
    }

    /// A handle for a sub-agent in this process, sharing the gateway's manager.
    pub fn sub_agent(&self, options: SubAgentOptions) -> SubAgentHandle {
        SubAgentHandle::new(self.manager().clone(), options)
    }

    /// A handler for one more client, served through a [`relay::RelayTransport`]: it shares
    /// everything with this one but the client's own state (the tools it activated in
    /// discovery mode).
    pub(crate) fn for_new_client(&self) -> Gateway {
        Gateway {
            inner: self.inner.clone(),
            activated: Arc::default(),
            listing: Arc::default(),
            client: self.inner.relay.next_id(),
            relaying: true,
        }
    }

    /// Serve one client over the process's stdin and stdout until the client closes stdin.
    /// Nothing else may write to stdout meanwhile.
    pub async fn serve_stdio(self) -> Result<(), GatewayError> {
        #[cfg(unix)]
        if let Some((reader, writer)) = wire::stdio::stdio_streams() {
            let served = self.serve_io(reader, writer).await;
            wire::stdio::restore_blocking();
            return served;
        }
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serve one client over a byte stream (newline-delimited JSON-RPC) until it closes.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), GatewayError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let handler = self.for_new_client();
        // `tools/call` is read, run and answered by the front end itself; everything else
        // goes through rmcp's service (see `wire::front`).
        let front = wire::front::Front::new(handler.clone(), writer);
        let (reader, writer) = front.split(reader);
        let transport = wire::relay::RelayTransport(AsyncRwTransport::new_server(reader, writer));
        let served = match rmcp::serve_server(handler, transport).await {
            Ok(running) => {
                front.open(running.peer().clone());
                running
                    .waiting()
                    .await
                    .map(|_| ())
                    .map_err(|e| GatewayError::Service(e.to_string()))
            }
            // The client went away before the handshake ended: a normal way to stop.
            Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
                Ok(())
            }
            Err(e) => Err(GatewayError::Handshake(e.to_string())),
        };
        front.finish().await;
        served
    }

    /// Wait until start-up is over (or the bound passes).
    async fn wait_started(&self) {
        let mut started = self.inner.started.subscribe();
        let bound = self.inner.options.startup_wait;
        let _ = tokio::time::timeout(bound, started.wait_for(|s| *s)).await;
    }
}

/// Start-up in progress (see [`Gateway::starting`]); dropping it ends start-up.
#[derive(Debug)]
pub struct Starting {
    started: watch::Sender<bool>,
}

impl Drop for Starting {
    fn drop(&mut self) {
        self.started.send_replace(true);
    }
}

crate::setters!(GatewayOptions {
    with_filter => filter: ToolFilter,
    with_naming => naming: NamingStyle,
    with_debounce => debounce: Duration,
    with_call_timeout => call_timeout: Option<Duration>,
    with_startup_wait => startup_wait: Duration,
    with_name => name: String,
    with_tool_search => tool_search: ToolSearchMode,
    with_always_load => always_load: BTreeSet<String>,
    with_output_cap => output_cap: Option<OutputCap>,
    with_state_key => state_key: Option<StateKeyFile>,
});
