//! The lifecycle of many servers: connect them all at once
//! behind a fast-start gate, offer cached tools for the slow ones, keep them healthy, and shut
//! them down. This file is the host-facing API; the bookkeeping is in `state`, the life of one
//! connection (connect, supervise, relist, reconnect) in `supervisor`, behind the seam in
//! `connection`, and what hosts read back in `report`.
//!
//! Per server the manager knows, separately: the source metadata, whether a handshake or a tool
//! load is in flight, the live connection, its live tools and its cached (deferred) tools.
//! Everything else — [`McpManager::status`], the tool view — is derived from that.
//!
//! ```no_run
//! # async fn demo() {
//! use indexmap::IndexMap;
//! use mcp_runtime::config::ServerConfig;
//! use mcp_runtime::manager::{ManagerOptions, McpManager};
//!
//! // `for_user` keeps tools cached and logins stored in the user's data directory;
//! // `ManagerOptions::default()` keeps nothing on disk.
//! let manager = McpManager::new(ManagerOptions::for_user());
//! let mut configs = IndexMap::new();
//! configs.insert("mock".to_owned(), ServerConfig::stdio("mcpr", ["mock"]));
//! let report = manager.connect_servers(configs, IndexMap::new()).await;
//! for server in &report.servers {
//!     println!("{}: {} tools{}", server.server, server.tools.len(),
//!              if server.deferred { " (cached)" } else { "" });
//! }
//! manager.disconnect_all().await;
//! # }
//! ```

mod connection;
mod events;
mod health;
mod options;
mod pinning;
mod reload;
mod remembered;
mod report;
mod state;
mod supervisor;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde_json::{Map, Value};
use tokio::sync::broadcast;

#[cfg(feature = "cache")]
use crate::cache::CacheKey;
use crate::client::model::tool_request::{Arguments, ToolRequest};
use crate::client::{
    CallOptions, ClientError, ConnectOptions, DEFAULT_EXIT_GRACE, McpClient, ToolDefinition,
    ToolOutput,
};
use crate::config::{ServerConfig, ServerSource};

use connection::{ClientConnector, Connection, STDERR_TAIL_LINES};
use state::{Entry, Inner, Phase, State};
use supervisor::run_server;

pub use events::{ManagerEvent, ServerNotice};
pub use health::{BACKOFF, Decision, ReconnectBudget, STORM_LIMIT, STORM_WINDOW};
pub use options::ManagerOptions;
pub use reload::ReloadSummary;
pub use report::{
    ConnectionState, ManagerError, ServerError, ServerReport, ServerStatus, ServerTools,
    StartupReport,
};

/// How long start-up waits before answering with what it has.
pub const DEFAULT_GATE: Duration = Duration::from_millis(250);

/// What the tool cache knows of a server at start-up (nothing without the `cache` feature).
#[cfg_attr(not(feature = "cache"), allow(dead_code))]
enum Cached {
    /// Its last tool list.
    Tools(Vec<ToolDefinition>),
    /// Its last start failed (and none succeeded since), with this error.
    Failed(String),
}

/// How long shutdown waits for pending cache writes.
#[cfg(feature = "cache")]
const CACHE_FLUSH_BOUND: Duration = Duration::from_secs(2);

/// How long shutting down waits for killed servers' processes to finish dying.
const KILLED_BOUND: Duration = Duration::from_secs(2);

/// Runs and tracks every configured MCP server. Cheap to clone; clones share the servers.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner<ClientConnector>>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().servers.keys().cloned().collect();
        f.debug_struct("McpManager")
            .field("servers", &names)
            .finish()
    }
}

impl McpManager {
    /// A manager with no servers yet.
    pub fn new(options: ManagerOptions) -> Self {
        let connector = ClientConnector {
            options: ConnectOptions {
                roots: vec![options.project.clone()],
                #[cfg(feature = "oauth")]
                auth: options.auth.clone(),
                identity: options.identity.clone(),
                #[cfg(feature = "cache")]
                cache: options.cache.clone(),
                elicitation: options.elicitation.clone(),
                http: options.http.clone(),
                relay_input: options.relay_input,
                inherit_env: options.inherit_env,
                ..ConnectOptions::default()
            },
        };
        McpManager {
            inner: Arc::new(Inner::new(options, connector)),
        }
    }

    /// The options this manager was built with.
    pub fn options(&self) -> &ManagerOptions {
        &self.inner.options
    }

    /// Receive [`ManagerEvent`]s from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ManagerEvent> {
        self.inner.events.subscribe()
    }

    /// Receive the servers' log lines and resource updates from now on (a subscriber that
    /// falls behind loses the oldest).
    pub fn notices(&self) -> broadcast::Receiver<ServerNotice> {
        self.inner.notices.subscribe()
    }

    /// Connect every server concurrently (handshake + `tools/list`) and return at the
    /// fast-start gate: servers done by then give live tools or errors; servers still
    /// pending give their cached tools (deferred) at once, or — without a cache entry — are
    /// waited for (bounded by their own timeouts) unless `wait_for_uncached` is off. Pending
    /// work continues in the background and replaces only that server's tools when it lands.
    ///
    /// Servers already connected or connecting are left alone (their source is updated), so
    /// connecting one more server never drops the tools of the others.
    pub async fn connect_servers(
        &self,
        configs: IndexMap<String, ServerConfig>,
        sources: IndexMap<String, ServerSource>,
    ) -> StartupReport {
        let gate_passed = Arc::new(AtomicBool::new(false));
        let mut started = Vec::new();
        {
            let mut state = self.lock();
            for (name, config) in configs {
                let source = sources.get(&name).cloned();
                if let Some(entry) = state.servers.get_mut(&name)
                    && !matches!(entry.phase, Phase::Failed | Phase::Suspended)
                {
                    if source.is_some() {
                        entry.source = source;
                    }
                    continue;
                }
                let generation = state.bump_generation();
                state
                    .servers
                    .insert(name.clone(), Entry::new(config, source, generation));
                self.spawn_server(&mut state, &name, generation, &gate_passed);
                started.push(name);
            }
        }
        self.inner.notify();
        self.gate(&started, gate_passed).await
    }

    /// Start the supervisor of `name` for `generation` (its entry is in `state` already).
    fn spawn_server(
        &self,
        state: &mut State<McpClient>,
        name: &str,
        generation: u64,
        gate_passed: &Arc<AtomicBool>,
    ) {
        let task = tokio::spawn(run_server(
            self.inner.clone(),
            name.to_owned(),
            generation,
            gate_passed.clone(),
        ));
        if let Some(entry) = state.servers.get_mut(name) {
            entry.task = Some(task);
        }
    }

    /// The fast-start gate over `started`, which are connecting: wait until they settle or the
    /// gate passes, offer cached tools of those still pending (waiting for the uncached ones
    /// unless `wait_for_uncached` is off), and report on them.
    async fn gate(&self, started: &[String], gate_passed: Arc<AtomicBool>) -> StartupReport {
        // The cached tools are read while the gate runs, not after it: at the deadline the
        // servers are still booting and contend for the CPU, and reads (and parses) one by one
        // then would come on top of the gate.
        let cached = self.read_cached(started);
        // The gate: everything settled, or the deadline.
        let deadline = tokio::time::Instant::now() + self.inner.options.gate;
        let _ = tokio::time::timeout_at(deadline, self.wait_settled(started)).await;
        gate_passed.store(true, Ordering::SeqCst);

        // Deferred tools for pending servers with a cache entry; wait for the others.
        let pending: Vec<&String> = {
            let state = self.lock();
            started
                .iter()
                .filter(|name| {
                    state
                        .servers
                        .get(*name)
                        .is_some_and(|e| e.phase.is_pending())
                })
                .collect()
        };
        let mut cached = match cached {
            Some(reading) if !pending.is_empty() => reading.await.unwrap_or_default(),
            _ => HashMap::new(),
        };
        let mut must_wait = Vec::new();
        let mut failed_before = IndexMap::new();
        for name in pending {
            match cached.remove(name) {
                Some(Cached::Tools(tools)) => {
                    let mut state = self.lock();
                    if let Some(entry) = state.servers.get_mut(name)
                        && entry.live_tools.is_none()
                    {
                        entry.cached_tools = Some(tools.into());
                    }
                }
                // It failed last time: the answer does not wait for it to fail again.
                Some(Cached::Failed(error)) => {
                    failed_before.insert(name.clone(), error);
                }
                None if self.inner.options.wait_for_uncached => must_wait.push(name.clone()),
                None => {}
            }
        }
        self.inner.notify();
        self.wait_settled(&must_wait).await;

        let state = self.lock();
        let mut report = StartupReport::default();
        for (name, error) in failed_before {
            if state
                .servers
                .get(&name)
                .is_some_and(|e| e.phase.is_pending())
            {
                report.failed_before.insert(name, error);
            }
        }
        for name in started {
            let Some(entry) = state.servers.get(name) else {
                continue;
            };
            match &entry.phase {
                Phase::Failed | Phase::Suspended => {
                    if let Some(error) = entry.last_error.clone() {
                        report.errors.insert(name.clone(), error);
                    }
                }
                phase => {
                    if phase.is_pending() {
                        report.pending.push(name.clone());
                    }
                    if let Some(tools) = entry.offered_tools(name) {
                        report.servers.push(tools);
                    }
                }
            }
        }
        report
    }

    /// Connect one server with this manager's connection settings (roots, logins, identity,
    /// elicitation, HTTP client), outside its supervision: no tool list, no reconnects, not
    /// among [`server_names`](Self::server_names). For a one-shot call that knows its server
    /// and tool. The caller closes the client; dropping it kills the server's process group.
    pub async fn open_client(
        &self,
        name: &str,
        config: &ServerConfig,
    ) -> Result<McpClient, ClientError> {
        self.inner.connector.open(name, config, None).await
    }

    /// The status of `name`: connected, connecting, or disconnected.
    pub fn status(&self, name: &str) -> ServerStatus {
        self.lock()
            .servers
            .get(name)
            .map_or(ServerStatus::Disconnected, |entry| {
                entry.phase.state().status()
            })
    }

    /// Names of the servers the manager knows, in config order.
    pub fn server_names(&self) -> Vec<String> {
        self.lock().servers.keys().cloned().collect()
    }

    /// The tools currently offered, per server: live tools of connected servers, cached tools
    /// of servers still connecting (and live tools kept while a server reconnects).
    pub fn server_tools(&self) -> Vec<ServerTools> {
        let state = self.lock();
        state
            .servers
            .iter()
            .filter_map(|(name, entry)| entry.offered_tools(name))
            .collect()
    }

    /// Visit each server's offered tools (as [`server_tools`](Self::server_tools) has them)
    /// under the lock, without copying names or sources, until `visit` returns `false`.
    /// Whether every visit returned `true`.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn visit_offered(
        &self,
        mut visit: impl FnMut(&str, &Arc<[ToolDefinition]>, bool) -> bool,
    ) -> bool {
        let state = self.lock();
        state.servers.iter().all(|(name, entry)| {
            entry
                .offered_list()
                .is_none_or(|(tools, deferred)| visit(name, &tools, deferred))
        })
    }

    /// The live connection of `name`, if connected.
    pub fn client(&self, name: &str) -> Option<Arc<McpClient>> {
        match &self.lock().servers.get(name)?.phase {
            Phase::Connected(client) => Some(client.clone()),
            _ => None,
        }
    }

    /// Reports for `mcpr status`, in config order.
    pub fn reports(&self) -> Vec<ServerReport> {
        let state = self.lock();
        state
            .servers
            .iter()
            .map(|(name, entry)| {
                let client = entry.phase.client();
                let offered = entry.offered_tools(name);
                ServerReport {
                    name: name.clone(),
                    state: entry.phase.state(),
                    provider: entry.source.as_ref().map(|s| s.provider_name.clone()),
                    path: entry.source.as_ref().map(|s| s.path.clone()),
                    // The detected transport (an HTTP server may have fallen back to SSE).
                    transport: client.map_or(entry.config.transport.kind_name(), |c| c.transport()),
                    pid: client.and_then(|c| c.pid()),
                    handshake_ms: client.map(|c| c.handshake_time().as_millis() as u64),
                    protocol_version: client.map(|c| c.info().protocol_version.clone()),
                    server_info: client.map(|c| format!("{} {}", c.info().name, c.info().version)),
                    tools: offered.as_ref().map_or(0, |o| o.tools.len()),
                    deferred: offered.as_ref().is_some_and(|o| o.deferred),
                    error: entry.last_error.clone(),
                    login: self.login_status(&entry.config),
                    stderr_tail: match client {
                        Some(client) => client.stderr_tail(STDERR_TAIL_LINES),
                        None => entry.stderr_tail.clone(),
                    },
                }
            })
            .collect()
    }

    /// Whether `name` is connected now (a call to it need not wait).
    fn is_connected(&self, name: &str) -> bool {
        self.lock().servers.get(name).is_some_and(
            |entry| matches!(&entry.phase, Phase::Connected(client) if !client.is_closed()),
        )
    }

    /// Wait until `name` is connected with its tools loaded, bounded by its startup timeout.
    /// Fails at once for a server that failed or was suspended.
    pub async fn wait_for_connection(&self, name: &str) -> Result<Arc<McpClient>, ManagerError> {
        let bound = self
            .lock()
            .servers
            .get(name)
            .ok_or_else(|| ManagerError::UnknownServer(name.to_owned()))?
            .config
            .startup_timeout();
        self.wait_connected(name, bound).await
    }

    /// Call `tool` on `server`. A server still connecting (or reconnecting) is waited for
    /// within the call's time limit. A call is sent again after a reconnect only when it
    /// provably never reached the server; a call that may have run is never replayed.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<ToolOutput, ManagerError> {
        self.call_tool_with(server, tool, Arguments::Object(arguments), options)
            .await
    }

    /// [`call_tool`](Self::call_tool) with the arguments as the caller has them (a relay:
    /// their text).
    pub(crate) async fn call_tool_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Arguments,
        options: CallOptions,
    ) -> Result<ToolOutput, ManagerError> {
        let limit = match options.timeout {
            Some(limit) => Some(limit),
            None => self
                .lock()
                .servers
                .get(server)
                .ok_or_else(|| ManagerError::UnknownServer(server.to_owned()))?
                .config
                .tool_timeout(),
        };
        let started = Instant::now();
        // Built once and lent to each attempt, so a resend needs no copy of the arguments.
        let mut call = ToolRequest::new(tool.to_owned(), arguments);
        call.resume(options.resumed.as_deref());
        loop {
            let remaining = limit.map(|l| l.saturating_sub(started.elapsed()));
            // Time spent waiting for the server to connect (at the start-up gate, or while it
            // reconnects) is a span of its own, beside the call's.
            let gate = (crate::telemetry::tracing() && !self.is_connected(server)).then(|| {
                let place = crate::telemetry::Place {
                    server,
                    traceparent: options.trace.traceparent(),
                    tracestate: options.trace.tracestate(),
                    ..Default::default()
                };
                crate::telemetry::start(crate::telemetry::Kind::Gate, place)
            });
            let client = match &options.cancel {
                Some(cancel) => tokio::select! {
                    // A connected client first: a cancellation is then the call's to see, and
                    // the usual call does not register with the token twice.
                    biased;
                    client = self.wait_connected(server, remaining) => client,
                    () = cancel.cancelled() => Err(ClientError::Cancelled {
                        server: server.to_owned(),
                        method: format!("tools/call `{tool}`"),
                    }.into()),
                },
                None => self.wait_connected(server, remaining).await,
            };
            if let Some(gate) = gate {
                gate.finish(match &client {
                    Ok(_) => crate::telemetry::Outcome::Ok,
                    Err(_) => crate::telemetry::Outcome::Failed("unavailable"),
                });
            }
            let client = client?;
            if let Some(held) = self.held_error(server, tool) {
                return Err(held);
            }
            // The remaining time of the caller's limit, and the caller's cancel and progress.
            let mut call_options = options.clone();
            call_options.timeout = limit.map(|l| l.saturating_sub(started.elapsed()));
            match client.call_tool_with(&mut call, call_options).await {
                Err(error) if error.never_reached_server() => {
                    // The connection died before the request left; the supervisor is already
                    // reconnecting (or will mark the server failed), so wait and send it again.
                    tracing::debug!(server, tool, "connection lost before sending; retrying");
                    // Sent afresh: answers to an earlier round's questions do not carry over.
                    call.resume(options.resumed.as_deref());
                    self.wait_for_client(server, remaining, |c| {
                        !Arc::ptr_eq(c, &client) && !c.is_closed()
                    })
                    .await?;
                }
                result => return result.map_err(ManagerError::from),
            }
        }
    }

    /// Disconnect and connect `name` again, resetting its crash-storm breaker. Returns once the
    /// new connection is up (or failed).
    pub async fn reconnect_server(&self, name: &str) -> Result<(), ManagerError> {
        let (old, generation) = {
            let mut state = self.lock();
            let generation = state.bump_generation();
            let entry = state
                .servers
                .get_mut(name)
                .ok_or_else(|| ManagerError::UnknownServer(name.to_owned()))?;
            if let Some(task) = entry.task.take() {
                task.abort();
            }
            let old = entry.phase.client().cloned();
            entry.budget.reset();
            entry.generation = generation;
            entry.phase = Phase::Connecting;
            entry.last_error = None;
            (old, generation)
        };
        if let Some(old) = old {
            old.close().await;
        }
        let task = tokio::spawn(run_server(
            self.inner.clone(),
            name.to_owned(),
            generation,
            Arc::new(AtomicBool::new(true)),
        ));
        if let Some(entry) = self.lock().servers.get_mut(name) {
            entry.task = Some(task);
        }
        self.inner.notify();
        self.wait_settled(&[name.to_owned()]).await;
        match self.status(name) {
            ServerStatus::Connected => Ok(()),
            _ => Err(ManagerError::Unavailable {
                server: name.to_owned(),
                cause: self.last_error(name),
            }),
        }
    }

    /// Forget `name`: stop any pending connection, close the transport (for stdio: the whole
    /// process group), and drop its tools and source metadata.
    pub async fn disconnect_server(&self, name: &str) {
        let removed = self.lock().servers.shift_remove(name);
        let Some(entry) = removed else { return };
        self.inner.notify();
        shutdown(entry, DEFAULT_EXIT_GRACE).await;
        self.inner.emit(ManagerEvent::Disconnected {
            server: name.to_owned(),
        });
        self.inner.emit(ManagerEvent::ToolsChanged {
            server: name.to_owned(),
        });
    }

    /// Disconnect every server concurrently and clear all state. When it returns, no server
    /// process (grandchildren included) is left.
    pub async fn disconnect_all(&self) {
        self.disconnect_all_within(DEFAULT_EXIT_GRACE).await;
    }

    /// [`disconnect_all`](Self::disconnect_all), giving each server `grace` to exit by itself
    /// after its stdin closes before SIGTERM and then SIGKILL to its group (see
    /// [`McpClient::close_within`]). Servers still connecting are killed at once, and waited for
    /// (up to two seconds) until their processes are gone. A one-shot command whose output is
    /// already printed passes a short grace.
    pub async fn disconnect_all_within(&self, grace: Duration) {
        let entries: Vec<(String, Entry<McpClient>)> = self.lock().servers.drain(..).collect();
        self.inner.notify();
        let closing = entries.into_iter().map(|(name, entry)| async move {
            shutdown(entry, grace).await;
            name
        });
        for name in futures::future::join_all(closing).await {
            self.inner.emit(ManagerEvent::Disconnected {
                server: name.clone(),
            });
            self.inner.emit(ManagerEvent::ToolsChanged { server: name });
        }
        // Servers still starting were killed, not waited for: let them finish dying, so a host
        // that exits next leaves no process behind.
        crate::client::killed_groups_gone(KILLED_BOUND).await;
        // The cache runs its work in order: once a job queued now has run, so have the writes
        // queued before it.
        #[cfg(feature = "cache")]
        if let Some(cache) = &self.inner.options.cache
            && tokio::time::timeout(CACHE_FLUSH_BOUND, cache.run(|_| ()))
                .await
                .is_err()
        {
            tracing::warn!("tool cache writes still pending at shutdown; some may be lost");
        }
    }

    /// The login state of a remote server, when the manager has a credential store.
    fn login_status(&self, config: &ServerConfig) -> Option<crate::auth::AuthStatus> {
        #[cfg(feature = "oauth")]
        if let (crate::config::Transport::Http(_), Some(auth)) =
            (&config.transport, &self.inner.options.auth)
        {
            return Some(crate::auth::status(config, &auth.store));
        }
        let _ = config;
        None
    }

    /// The last error of `name`, if any.
    pub fn last_error(&self, name: &str) -> Option<ServerError> {
        self.lock().servers.get(name)?.last_error.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State<McpClient>> {
        self.inner.lock()
    }

    /// Start reading what the tool cache knows of `names` (their tools, else a failed last
    /// start), in one job of the cache (`None` without a cache).
    #[cfg(feature = "cache")]
    fn read_cached(
        &self,
        names: &[String],
    ) -> Option<tokio::sync::oneshot::Receiver<HashMap<String, Cached>>> {
        let cache = self.inner.options.cache.as_ref()?;
        let keys: Vec<(String, CacheKey)> = {
            let state = self.lock();
            names
                .iter()
                .filter_map(|name| {
                    let entry = state.servers.get(name)?;
                    Some((name.clone(), self.cache_key(name, &entry.config)))
                })
                .collect()
        };
        Some(cache.run(move |cache| {
            keys.into_iter()
                .filter_map(|(name, key)| {
                    let known = match cache.get(&key) {
                        Some(tools) => Cached::Tools(tools),
                        None => Cached::Failed(cache.failure(&key)?),
                    };
                    Some((name, known))
                })
                .collect()
        }))
    }

    /// Without the `cache` feature nothing is known before a server answers.
    #[cfg(not(feature = "cache"))]
    fn read_cached(
        &self,
        _names: &[String],
    ) -> Option<tokio::sync::oneshot::Receiver<HashMap<String, Cached>>> {
        None
    }

    #[cfg(feature = "cache")]
    fn cache_key(&self, name: &str, config: &ServerConfig) -> CacheKey {
        CacheKey::new(name, &self.inner.options.project, config)
    }

    /// Wait until none of `names` is connecting any more.
    async fn wait_settled(&self, names: &[String]) {
        let mut changed = self.inner.changed.subscribe();
        loop {
            let pending = {
                let state = self.lock();
                names.iter().any(|name| {
                    state
                        .servers
                        .get(name)
                        .is_some_and(|e| e.phase.is_pending())
                })
            };
            if !pending || changed.changed().await.is_err() {
                return;
            }
        }
    }

    /// Wait for a usable connection to `name`, at most `bound`.
    async fn wait_connected(
        &self,
        name: &str,
        bound: Option<Duration>,
    ) -> Result<Arc<McpClient>, ManagerError> {
        self.wait_for_client(name, bound, |client| !client.is_closed())
            .await
    }

    /// Wait until `name` is connected through a client that `accept` takes, at most `bound`.
    /// Fails at once when the server failed, was suspended or is gone.
    async fn wait_for_client(
        &self,
        name: &str,
        bound: Option<Duration>,
        accept: impl Fn(&Arc<McpClient>) -> bool,
    ) -> Result<Arc<McpClient>, ManagerError> {
        let wait = async {
            // Subscribe before looking, so a change between the look and the wait is not lost.
            let mut changed = self.inner.changed.subscribe();
            loop {
                {
                    let state = self.lock();
                    let entry = state
                        .servers
                        .get(name)
                        .ok_or_else(|| ManagerError::UnknownServer(name.to_owned()))?;
                    match &entry.phase {
                        Phase::Connected(client) if accept(client) => return Ok(client.clone()),
                        Phase::Failed | Phase::Suspended => {
                            return Err(ManagerError::Unavailable {
                                server: name.to_owned(),
                                cause: entry.last_error.clone(),
                            });
                        }
                        _ => {}
                    }
                }
                if changed.changed().await.is_err() {
                    return Err(ManagerError::UnknownServer(name.to_owned()));
                }
            }
        };
        match bound {
            Some(bound) => tokio::time::timeout(bound, wait).await.unwrap_or_else(|_| {
                Err(ManagerError::ConnectTimeout {
                    server: name.to_owned(),
                    after: bound,
                })
            }),
            None => wait.await,
        }
    }
}

/// Stop an entry's background task and close its connection, giving the server `grace`.
async fn shutdown<K: Connection>(entry: Entry<K>, grace: Duration) {
    if let Some(task) = entry.task {
        // Aborting drops a connection still being made; a dropped client kills its
        // process group. Waiting for the task makes sure that has happened.
        task.abort();
        let _ = task.await;
    }
    if let Some(client) = entry.phase.client() {
        client.close_within(grace).await;
    }
}
