//! The lifecycle of many servers: connect them all at once
//! behind a fast-start gate, offer cached tools for the slow ones, keep them healthy, and shut
//! them down.
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
//! let manager = McpManager::new(ManagerOptions::default());
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

mod events;
mod health;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc, watch};

use crate::cache::{CacheKey, ToolCache};
use crate::client::{
    CallOptions, ClientError, ClientEvent, ConnectOptions, McpClient, ToolDefinition, ToolOutput,
};
use crate::config::{ServerConfig, ServerSource, resolve_connect_values_with};

pub use events::ManagerEvent;
pub use health::{BACKOFF, Decision, ReconnectBudget, STORM_LIMIT, STORM_WINDOW};

/// How long start-up waits before answering with what it has.
pub const DEFAULT_GATE: Duration = Duration::from_millis(250);

/// Settings of a manager.
#[derive(Clone)]
pub struct ManagerOptions {
    /// The fast-start gate.
    pub gate: Duration,
    /// After the gate, wait for pending servers that have no cached tools (the default:
    /// correctness first). `false` returns at the gate and lets them finish in the background.
    pub wait_for_uncached: bool,
    /// The tool cache; `None` disables deferred tools.
    pub cache: Option<Arc<ToolCache>>,
    /// The project directory: offered to servers as their root, and part of the cache key.
    pub project: PathBuf,
    /// Reconnect automatically when a connection drops.
    pub reconnect: bool,
    /// OAuth for remote servers: the credential store, and whether a 401 may start a login
    /// (by default: the per-user store, never a login — a host at start-up must not block on
    /// a browser).
    pub auth: Option<crate::auth::AuthContext>,
    /// Answers servers that ask the user for input (`elicitation/create`, or embedded in an
    /// `input_required` result); servers are told the client can be asked only when set.
    pub elicitation: Option<crate::client::ElicitationHandler>,
}

impl std::fmt::Debug for ManagerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerOptions")
            .field("gate", &self.gate)
            .field("wait_for_uncached", &self.wait_for_uncached)
            .field("cache", &self.cache)
            .field("project", &self.project)
            .field("reconnect", &self.reconnect)
            .field("auth", &self.auth)
            .field("elicitation", &self.elicitation.is_some())
            .finish()
    }
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            gate: DEFAULT_GATE,
            wait_for_uncached: true,
            cache: ToolCache::user_default().map(Arc::new),
            project: std::env::current_dir().unwrap_or_default(),
            reconnect: true,
            auth: crate::auth::AuthContext::user_default(),
            elicitation: None,
        }
    }
}

/// A server's state: connected, connecting or disconnected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerStatus {
    /// Connected, tools loaded.
    Connected,
    /// A handshake, tool load or reconnect is in progress.
    Connecting,
    /// Not connected (failed, suspended, disconnected or unknown).
    Disconnected,
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

/// What [`McpManager::connect_servers`] returns at the gate (or after waiting for uncached
/// servers).
#[derive(Debug, Default)]
pub struct StartupReport {
    /// Live and deferred tools of every server that has some, in config order.
    pub servers: Vec<ServerTools>,
    /// Servers that failed, with their error (naming the server, with its stderr tail).
    pub errors: IndexMap<String, String>,
    /// Servers still connecting in the background.
    pub pending: Vec<String>,
}

/// Everything `mcpr status` shows about one server.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerReport {
    /// Server name.
    pub name: String,
    /// Derived status.
    pub status: ServerStatus,
    /// A finer description: `connected`, `connecting`, `loading tools`, `reconnecting (attempt
    /// N)`, `failed`, `suspended`.
    pub state: String,
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
    /// Last error, if any.
    pub error: Option<String>,
    /// Last stderr lines.
    pub stderr_tail: Vec<String>,
    /// The last failure was the server asking for credentials a login would give.
    pub needs_login: bool,
    /// The stored OAuth login of a remote server (`None` for stdio servers).
    pub login: Option<crate::auth::AuthStatus>,
}

/// Failures of manager operations.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// No server of that name is configured (or it was disconnected).
    #[error("no server named `{0}`")]
    UnknownServer(String),
    /// The server is not available (failed at start-up, suspended after crashes).
    #[error("server `{server}` is not connected: {reason}")]
    Unavailable {
        /// Server name.
        server: String,
        /// Why.
        reason: String,
    },
    /// Waiting for the connection took longer than the caller's bound.
    #[error("server `{server}`: still not connected after {} ms", after.as_millis())]
    ConnectTimeout {
        /// Server name.
        server: String,
        /// The bound.
        after: Duration,
    },
    /// The request itself failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl ManagerError {
    /// `true` when the caller cancelled the call.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ManagerError::Client(ClientError::Cancelled { .. }))
    }
}

/// Runs and tracks every configured MCP server. Cheap to clone; clones share the servers.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().servers.keys().cloned().collect();
        f.debug_struct("McpManager")
            .field("servers", &names)
            .finish()
    }
}

struct Inner {
    options: ManagerOptions,
    state: Mutex<State>,
    /// Bumped on every state change; waiters watch it.
    changed: watch::Sender<u64>,
    events: broadcast::Sender<ManagerEvent>,
    /// Cache writes still running; `disconnect_all` lets them finish so a short-lived host
    /// (a one-shot CLI command) still leaves its tools in the cache.
    cache_writes: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// How long shutdown waits for pending cache writes.
const CACHE_FLUSH_BOUND: Duration = Duration::from_secs(2);

#[derive(Default)]
struct State {
    servers: IndexMap<String, Entry>,
    next_generation: u64,
}

/// One configured server.
struct Entry {
    config: ServerConfig,
    source: Option<ServerSource>,
    phase: Phase,
    /// Identifies the current connection sequence; work of an older one is discarded.
    generation: u64,
    live_tools: Option<Arc<[ToolDefinition]>>,
    /// Tools from the cache, offered while the server is still connecting.
    cached_tools: Option<Arc<[ToolDefinition]>>,
    task: Option<tokio::task::AbortHandle>,
    budget: ReconnectBudget,
    last_error: Option<String>,
    /// `last_error` was an authorization refusal (see [`ServerReport::needs_login`]).
    needs_login: bool,
    stderr_tail: Vec<String>,
}

#[derive(Clone)]
enum Phase {
    /// Handshake in progress.
    Connecting,
    /// Connected; the first `tools/list` is in progress.
    Loading(Arc<McpClient>),
    Connected(Arc<McpClient>),
    /// The connection dropped; the next attempt starts after a back-off.
    Reconnecting {
        attempt: u32,
    },
    Failed,
    /// Automatic reconnects stopped.
    Suspended,
}

impl Phase {
    fn status(&self) -> ServerStatus {
        match self {
            Phase::Connected(_) => ServerStatus::Connected,
            Phase::Connecting | Phase::Loading(_) | Phase::Reconnecting { .. } => {
                ServerStatus::Connecting
            }
            Phase::Failed | Phase::Suspended => ServerStatus::Disconnected,
        }
    }

    fn client(&self) -> Option<&Arc<McpClient>> {
        match self {
            Phase::Loading(client) | Phase::Connected(client) => Some(client),
            _ => None,
        }
    }
}

impl McpManager {
    /// A manager with no servers yet.
    pub fn new(options: ManagerOptions) -> Self {
        let (changed, _) = watch::channel(0);
        let (events, _) = broadcast::channel(1024);
        McpManager {
            inner: Arc::new(Inner {
                options,
                state: Mutex::new(State::default()),
                changed,
                events,
                cache_writes: Mutex::new(Vec::new()),
            }),
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
                let entry = Entry {
                    config,
                    source,
                    phase: Phase::Connecting,
                    generation,
                    live_tools: None,
                    cached_tools: None,
                    task: None,
                    budget: ReconnectBudget::default(),
                    last_error: None,
                    needs_login: false,
                    stderr_tail: Vec::new(),
                };
                state.servers.insert(name.clone(), entry);
                let task = tokio::spawn(run_server(
                    self.inner.clone(),
                    name.clone(),
                    generation,
                    gate_passed.clone(),
                ));
                if let Some(entry) = state.servers.get_mut(&name) {
                    entry.task = Some(task.abort_handle());
                }
                started.push(name);
            }
        }
        self.inner.notify();

        // The gate: everything settled, or the deadline.
        let deadline = tokio::time::Instant::now() + self.inner.options.gate;
        let _ = tokio::time::timeout_at(deadline, self.wait_settled(&started)).await;
        gate_passed.store(true, Ordering::SeqCst);

        // Deferred tools for pending servers with a cache entry; wait for the others.
        let mut must_wait = Vec::new();
        for name in &started {
            let lookup = {
                let state = self.lock();
                match state.servers.get(name) {
                    Some(entry) if entry.phase.status() == ServerStatus::Connecting => {
                        Some(self.cache_key(name, &entry.config))
                    }
                    _ => None,
                }
            };
            let Some(key) = lookup else { continue };
            let cached = match &self.inner.options.cache {
                Some(cache) => {
                    let cache = cache.clone();
                    tokio::task::spawn_blocking(move || cache.get(&key))
                        .await
                        .ok()
                        .flatten()
                }
                None => None,
            };
            match cached {
                Some(tools) => {
                    let mut state = self.lock();
                    if let Some(entry) = state.servers.get_mut(name)
                        && entry.live_tools.is_none()
                    {
                        entry.cached_tools = Some(tools.into());
                    }
                }
                None if self.inner.options.wait_for_uncached => must_wait.push(name.clone()),
                None => {}
            }
        }
        self.inner.notify();
        self.wait_settled(&must_wait).await;

        let state = self.lock();
        let mut report = StartupReport::default();
        for name in &started {
            let Some(entry) = state.servers.get(name) else {
                continue;
            };
            match &entry.phase {
                Phase::Failed | Phase::Suspended => {
                    let error = entry.last_error.clone().unwrap_or_else(|| "failed".into());
                    report.errors.insert(name.clone(), error);
                }
                phase => {
                    if phase.status() == ServerStatus::Connecting {
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

    /// The status of `name`: connected, connecting, or disconnected.
    pub fn status(&self, name: &str) -> ServerStatus {
        self.lock()
            .servers
            .get(name)
            .map_or(ServerStatus::Disconnected, |entry| entry.phase.status())
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
                    status: entry.phase.status(),
                    state: match &entry.phase {
                        Phase::Connecting => "connecting".into(),
                        Phase::Loading(_) => "loading tools".into(),
                        Phase::Connected(_) => "connected".into(),
                        Phase::Reconnecting { attempt } => {
                            format!("reconnecting (attempt {attempt})")
                        }
                        Phase::Failed => "failed".into(),
                        Phase::Suspended => "suspended".into(),
                    },
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
                    needs_login: entry.needs_login,
                    login: match (&entry.config.transport, &self.inner.options.auth) {
                        (crate::config::Transport::Http(_), Some(auth)) => {
                            Some(crate::auth::status(&entry.config, &auth.store))
                        }
                        _ => None,
                    },
                    stderr_tail: match client {
                        Some(client) => client.stderr_tail(20),
                        None => entry.stderr_tail.clone(),
                    },
                }
            })
            .collect()
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
        loop {
            let remaining = limit.map(|l| l.saturating_sub(started.elapsed()));
            let client = match &options.cancel {
                Some(cancel) => tokio::select! {
                    client = self.wait_connected(server, remaining) => client?,
                    () = cancel.cancelled() => {
                        return Err(ClientError::Cancelled {
                            server: server.to_owned(),
                            method: format!("tools/call `{tool}`"),
                        }.into());
                    }
                },
                None => self.wait_connected(server, remaining).await?,
            };
            let call_options = CallOptions {
                timeout: limit.map(|l| l.saturating_sub(started.elapsed())),
                cancel: options.cancel.clone(),
                progress: options.progress.clone(),
            };
            match client
                .call_tool(tool, arguments.clone(), call_options)
                .await
            {
                Err(error) if error.never_reached_server() => {
                    // The connection died before the request left; the supervisor is already
                    // reconnecting (or will mark the server failed), so wait and send it again.
                    tracing::debug!(server, tool, "connection lost before sending; retrying");
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
            entry.needs_login = false;
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
            entry.task = Some(task.abort_handle());
        }
        self.inner.notify();
        self.wait_settled(&[name.to_owned()]).await;
        match self.status(name) {
            ServerStatus::Connected => Ok(()),
            _ => Err(ManagerError::Unavailable {
                server: name.to_owned(),
                reason: self
                    .last_error(name)
                    .unwrap_or_else(|| "reconnect failed".into()),
            }),
        }
    }

    /// Forget `name`: stop any pending connection, close the transport (for stdio: the whole
    /// process group), and drop its tools and source metadata.
    pub async fn disconnect_server(&self, name: &str) {
        let removed = self.lock().servers.shift_remove(name);
        let Some(entry) = removed else { return };
        self.inner.notify();
        entry.shutdown().await;
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
        let entries: Vec<(String, Entry)> = self.lock().servers.drain(..).collect();
        self.inner.notify();
        let closing = entries.into_iter().map(|(name, entry)| async move {
            entry.shutdown().await;
            name
        });
        for name in futures::future::join_all(closing).await {
            self.inner.emit(ManagerEvent::Disconnected {
                server: name.clone(),
            });
            self.inner.emit(ManagerEvent::ToolsChanged { server: name });
        }
        let writes: Vec<_> = std::mem::take(
            &mut *self
                .inner
                .cache_writes
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        let flush = futures::future::join_all(writes);
        if tokio::time::timeout(CACHE_FLUSH_BOUND, flush)
            .await
            .is_err()
        {
            tracing::warn!("tool cache writes still pending at shutdown; some may be lost");
        }
    }

    /// The last error of `name`, if any.
    pub fn last_error(&self, name: &str) -> Option<String> {
        self.lock().servers.get(name)?.last_error.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.lock()
    }

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
                        .is_some_and(|e| e.phase.status() == ServerStatus::Connecting)
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
                                reason: entry.last_error.clone().unwrap_or_else(|| "failed".into()),
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

impl State {
    fn bump_generation(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }
}

impl Entry {
    /// The tools this server offers now: live ones, else cached ones while it connects.
    fn offered_tools(&self, name: &str) -> Option<ServerTools> {
        let (tools, deferred) = match (&self.live_tools, &self.cached_tools, &self.phase) {
            (Some(live), _, _) => (live.clone(), false),
            (None, Some(cached), phase) if phase.status() == ServerStatus::Connecting => {
                (cached.clone(), true)
            }
            _ => return None,
        };
        let tools: Arc<[ToolDefinition]> =
            if self.config.enabled_tools.is_some() || !self.config.disabled_tools.is_empty() {
                tools
                    .iter()
                    .filter(|t| self.config.allows_tool(&t.name))
                    .cloned()
                    .collect()
            } else {
                tools
            };
        Some(ServerTools {
            server: name.to_owned(),
            source: self.source.clone(),
            tools,
            deferred,
        })
    }

    /// Stop the background task and close the connection.
    async fn shutdown(self) {
        if let Some(task) = self.task {
            // Aborting drops a connection still being made; a dropped client kills its
            // process group.
            task.abort();
        }
        if let Some(client) = self.phase.client() {
            client.close().await;
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn notify(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    fn emit(&self, event: ManagerEvent) {
        // No subscriber is fine.
        let _ = self.events.send(event);
    }

    /// Apply `update` to the entry of `name` if it still belongs to `generation`. Returns
    /// whether it did.
    fn update(&self, name: &str, generation: u64, update: impl FnOnce(&mut Entry)) -> bool {
        let applied = {
            let mut state = self.lock();
            match state.servers.get_mut(name) {
                Some(entry) if entry.generation == generation => {
                    update(entry);
                    true
                }
                _ => false,
            }
        };
        if applied {
            self.notify();
        }
        applied
    }

    fn config_of(&self, name: &str, generation: u64) -> Option<ServerConfig> {
        let state = self.lock();
        let entry = state.servers.get(name)?;
        (entry.generation == generation).then(|| entry.config.clone())
    }
}

/// Why a live connection ended.
enum Ended {
    /// The transport closed without us asking.
    Unexpectedly,
    /// The server was disconnected or reconnected on request.
    OnRequest,
}

/// The life of one server for one generation: connect, supervise, reconnect on unexpected
/// close with back-off, until it fails for good, is suspended, or is disconnected.
async fn run_server(
    inner: Arc<Inner>,
    name: String,
    generation: u64,
    gate_passed: Arc<AtomicBool>,
) {
    // 0 = the first connection; >0 = the reconnect attempt of the current outage.
    let mut attempt: u32 = 0;
    loop {
        let Some(config) = inner.config_of(&name, generation) else {
            return;
        };
        inner.update(&name, generation, |e| {
            if !matches!(e.phase, Phase::Reconnecting { .. }) {
                e.phase = Phase::Connecting;
            }
        });
        inner.emit(ManagerEvent::Connecting {
            server: name.clone(),
        });
        let started = Instant::now();
        let lost = match establish(&inner, &name, generation, &config).await {
            Ok((client, mut notices)) => {
                let tools = inner
                    .lock()
                    .servers
                    .get(&name)
                    .and_then(|e| e.live_tools.as_ref().map(|t| t.len()))
                    .unwrap_or_default();
                inner.emit(ManagerEvent::Connected {
                    server: name.clone(),
                    tools,
                    elapsed: started.elapsed(),
                });
                inner.emit(ManagerEvent::ToolsChanged {
                    server: name.clone(),
                });
                match supervise(&inner, &name, generation, &client, &mut notices).await {
                    Ended::OnRequest => return,
                    Ended::Unexpectedly => client,
                }
            }
            Err(Establish::Lost(client)) => client,
            Err(Establish::Failed(error)) => {
                let message = error.to_string();
                let stderr = error.stderr_tail().to_vec();
                let needs_login = error.needs_login();
                inner.update(&name, generation, |e| e.needs_login = needs_login);
                if gate_passed.load(Ordering::SeqCst) {
                    tracing::warn!("{message}");
                } else {
                    tracing::debug!("{message}");
                }
                inner.emit(ManagerEvent::Failed {
                    server: name.clone(),
                    error: message.clone(),
                    stderr: stderr.clone(),
                });
                if attempt == 0 {
                    fail(&inner, &name, generation, message, stderr);
                    return;
                }
                // A failed reconnect attempt: back off further, or give up.
                inner.update(&name, generation, |e| e.stderr_tail = stderr);
                match plan_reconnect(&inner, &name, generation, attempt + 1, &message) {
                    Some(delay) => {
                        attempt += 1;
                        tokio::time::sleep(delay).await;
                        continue;
                    }
                    None => return,
                }
            }
        };

        // The connection dropped without being asked to: an outage.
        let status = lost
            .close()
            .await
            .map(|s| s.to_string())
            .unwrap_or_else(|| "connection closed".into());
        let message = format!("server `{name}`: connection lost ({status})");
        tracing::warn!("{message}");
        let stderr = lost.stderr_tail(20);
        if !inner.options.reconnect {
            inner.emit(ManagerEvent::Failed {
                server: name.clone(),
                error: message.clone(),
                stderr: stderr.clone(),
            });
            fail(&inner, &name, generation, message, stderr);
            return;
        }
        inner.update(&name, generation, |e| e.stderr_tail = stderr);
        match plan_reconnect(&inner, &name, generation, 1, &message) {
            Some(delay) => {
                attempt = 1;
                tokio::time::sleep(delay).await;
            }
            None => return,
        }
    }
}

/// Mark a server failed; its cached tools go (their server is not coming).
fn fail(inner: &Arc<Inner>, name: &str, generation: u64, message: String, stderr: Vec<String>) {
    let mut had_cached = false;
    inner.update(name, generation, |e| {
        had_cached = e.cached_tools.is_some() && e.live_tools.is_none();
        e.phase = Phase::Failed;
        e.last_error = Some(message);
        e.stderr_tail = stderr;
        e.cached_tools = None;
    });
    if had_cached {
        inner.emit(ManagerEvent::ToolsChanged {
            server: name.to_owned(),
        });
    }
}

/// Record an outage and decide about reconnect attempt `attempt`: the back-off to sleep, or
/// `None` when the server is now suspended.
fn plan_reconnect(
    inner: &Arc<Inner>,
    name: &str,
    generation: u64,
    attempt: u32,
    error: &str,
) -> Option<Duration> {
    let mut decision = None;
    inner.update(name, generation, |e| {
        let d = e.budget.next(attempt, Instant::now());
        match &d {
            Decision::Retry { attempt, .. } => {
                e.phase = Phase::Reconnecting { attempt: *attempt };
                e.last_error = Some(error.to_owned());
            }
            Decision::Suspend(reason) => {
                e.phase = Phase::Suspended;
                e.last_error = Some(format!("{error}; {reason}"));
            }
        }
        decision = Some(d);
    });
    match decision? {
        Decision::Retry { attempt, delay } => {
            inner.emit(ManagerEvent::Reconnecting {
                server: name.to_owned(),
                attempt,
                delay,
            });
            Some(delay)
        }
        Decision::Suspend(reason) => {
            tracing::warn!(server = name, "{reason}");
            inner.emit(ManagerEvent::Suspended {
                server: name.to_owned(),
                reason,
            });
            None
        }
    }
}

/// Steps 4–7 of the pipeline: resolve connect-time values, connect, list tools,
/// write the cache.
async fn establish(
    inner: &Arc<Inner>,
    name: &str,
    generation: u64,
    config: &ServerConfig,
) -> Result<(Arc<McpClient>, mpsc::Receiver<ClientEvent>), Establish> {
    // `!command` values run a shell (bounded at 10 s): keep them off the async threads.
    let resolved = {
        let (name, config) = (name.to_owned(), config.clone());
        tokio::task::spawn_blocking(move || {
            resolve_connect_values_with(&name, &config, true, &crate::config::EnvSource::Process)
        })
        .await
    };
    let resolved = match resolved {
        Ok(Ok(resolved)) => resolved,
        Ok(Err(e)) => return Err(Establish::Failed(config_error(name, e.to_string()))),
        Err(e) => return Err(Establish::Failed(config_error(name, e.to_string()))),
    };

    let (events, notices) = mpsc::channel(crate::client::EVENT_BUFFER);
    let options = ConnectOptions {
        roots: vec![inner.options.project.clone()],
        events: Some(events),
        auth: inner.options.auth.clone(),
        cache: inner.options.cache.clone(),
        elicitation: inner.options.elicitation.clone(),
    };
    let client = Arc::new(
        McpClient::connect(name, &resolved, &options)
            .await
            .map_err(Establish::Failed)?,
    );
    if !inner.update(name, generation, |e| {
        e.phase = Phase::Loading(client.clone())
    }) {
        client.close().await;
        return Err(Establish::Failed(superseded(name)));
    }
    // The first list belongs to start-up: the startup timeout bounds it too.
    let listing = match resolved.startup_timeout() {
        Some(bound) => tokio::time::timeout(bound, client.list_tools())
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    server: name.to_owned(),
                    phase: "tools/list".into(),
                    after: bound,
                    stderr: client.stderr_tail(20),
                })
            }),
        None => client.list_tools().await,
    };
    let tools = match listing {
        Ok(tools) => tools,
        // The handshake worked but the server died: that is an outage, not a bad config.
        Err(e) if e.is_connection_lost() => return Err(Establish::Lost(client)),
        Err(e) => {
            client.close().await;
            return Err(Establish::Failed(e));
        }
    };
    store_tools(inner, name, config, &tools);
    let accepted = inner.update(name, generation, |e| {
        e.live_tools = Some(tools.into());
        e.cached_tools = None;
        e.last_error = None;
        e.needs_login = false;
        e.phase = Phase::Connected(client.clone());
    });
    if !accepted {
        client.close().await;
        return Err(Establish::Failed(superseded(name)));
    }
    Ok((client, notices))
}

/// Why a connection attempt did not produce a usable connection.
enum Establish {
    /// It never got going (spawn, handshake, config, timeout): the attempt failed.
    Failed(ClientError),
    /// The handshake succeeded, then the connection dropped while loading tools.
    Lost(Arc<McpClient>),
}

/// Watch a live connection: re-list tools on `list_changed`; return when it closes.
async fn supervise(
    inner: &Arc<Inner>,
    name: &str,
    generation: u64,
    client: &Arc<McpClient>,
    notices: &mut mpsc::Receiver<ClientEvent>,
) -> Ended {
    loop {
        tokio::select! {
            () = client.closed() => break,
            notice = notices.recv() => match notice {
                Some(ClientEvent::ToolsChanged) => {
                    // Coalesce a burst of notifications into one re-list.
                    while let Ok(ClientEvent::ToolsChanged) = notices.try_recv() {}
                    relist(inner, name, generation, client).await;
                }
                Some(_) => {}
                // The connection's handler is gone: the transport closed.
                None => {
                    client.closed().await;
                    break;
                }
            },
        }
    }
    let current = inner
        .lock()
        .servers
        .get(name)
        .is_some_and(|e| e.generation == generation);
    if current {
        Ended::Unexpectedly
    } else {
        Ended::OnRequest
    }
}

/// `tools/list_changed`: list again, replace this server's tools, rewrite the cache.
async fn relist(inner: &Arc<Inner>, name: &str, generation: u64, client: &Arc<McpClient>) {
    match client.list_tools().await {
        Ok(tools) => {
            let Some(config) = inner.config_of(name, generation) else {
                return;
            };
            store_tools(inner, name, &config, &tools);
            if inner.update(name, generation, |e| e.live_tools = Some(tools.into())) {
                inner.emit(ManagerEvent::ToolsChanged {
                    server: name.to_owned(),
                });
            }
        }
        Err(e) => tracing::warn!("re-listing tools after list_changed failed: {e}"),
    }
}

/// Write a server's tools to the cache in the background (best effort).
fn store_tools(inner: &Arc<Inner>, name: &str, config: &ServerConfig, tools: &[ToolDefinition]) {
    let Some(cache) = inner.options.cache.clone() else {
        return;
    };
    let key = CacheKey::new(name, &inner.options.project, config);
    let tools = tools.to_vec();
    let write = tokio::task::spawn_blocking(move || cache.put(&key, &tools));
    let mut writes = inner.cache_writes.lock().unwrap_or_else(|e| e.into_inner());
    writes.retain(|w| !w.is_finished());
    writes.push(write);
}

fn config_error(name: &str, message: String) -> ClientError {
    ClientError::Config {
        server: name.to_owned(),
        message,
    }
}

fn superseded(name: &str) -> ClientError {
    ClientError::Cancelled {
        server: name.to_owned(),
        method: "connect (superseded by a newer connection)".into(),
    }
}
