//! Logs and resource subscriptions between the gateway's clients and the servers behind it.
//!
//! - **Logs.** A client of the `initialize` era asks for logs with `logging/setLevel`; a
//!   2026-07-28 client names a level in the `_meta` of each request, and gets the logs of the
//!   server it called on that request's stream for as long as the request runs. The servers
//!   are asked for the most verbose level any client wants (`logging/setLevel` on the
//!   servers that offer logging; a 2026-07-28 server is asked per request), and each client
//!   gets only the lines at its own level or above, their logger prefixed with the server's
//!   name (`<server>` or `<server>/<logger>`), so the client knows where they come from.
//! - **Resources.** A subscription goes to the server that offers the URI (see `catalog`),
//!   once however many clients subscribe: the server is asked on the first subscriber and
//!   released after the last one leaves. Its `notifications/resources/updated` reaches each
//!   subscriber: a session as a notification, a 2026-07-28 client on its
//!   `subscriptions/listen` stream. (That stream is acknowledged as it opens, before the
//!   server behind has been asked: a change in that moment is not reported.)
//! - A server that reconnects is asked again for the level and the subscriptions it had.
//! - A 2026-07-28 request's stream ends with its answer, so the lines its server sent before
//!   the answer must be passed on first. They reach the relay through tasks of their own
//!   (rmcp's, the manager's), possibly after the answer: the connection counts the lines it
//!   receives in the order they arrive, the relay counts the lines it has passed on, and the
//!   answer waits (bounded) until the second count has caught up with the first.

// rmcp marks logging and `resources/subscribe` deprecated because protocol 2026-07-28 drops
// them; the revisions with sessions, which the gateway serves too, still have them.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, SubscriptionSink};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::filter::ToolFilter;
use crate::client::LOG_LEVELS;
use crate::manager::{ManagerEvent, McpManager, ServerNotice};

/// How long one client may take to accept a relayed notification before it is skipped.
const SEND_BOUND: Duration = Duration::from_secs(2);

/// Where a subscriber's notifications go.
#[derive(Clone)]
pub(crate) enum Target {
    /// A client of the `initialize` era: its session.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 client: its `subscriptions/listen` stream.
    Listen(SubscriptionSink),
}

impl Target {
    fn closed(&self) -> bool {
        match self {
            Target::Session(peer) => peer.is_transport_closed(),
            // Released explicitly when the stream ends (see `Relay::release`).
            Target::Listen(_) => false,
        }
    }
}

/// A client that wants log lines.
struct LogWant {
    peer: Peer<RoleServer>,
    /// Index in [`LOG_LEVELS`]: lines at this level or above.
    rank: usize,
    /// Only this server's lines (a 2026-07-28 request); `None`: every server's.
    server: Option<String>,
}

#[derive(Default)]
struct State {
    /// By client or request id.
    logs: HashMap<u64, LogWant>,
    /// `(server, uri)` → subscriber id → where to send.
    resources: BTreeMap<(String, String), BTreeMap<u64, Target>>,
    /// The level the servers were last asked for.
    level: Option<usize>,
}

/// The relay of one gateway, shared by all its clients.
pub(crate) struct Relay {
    manager: McpManager,
    filter: ToolFilter,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Log lines passed on (or found unwanted), per server: what an answer waits for.
    passed: watch::Sender<HashMap<String, u64>>,
}

/// The rank of a level as rmcp types it.
pub(super) fn wire_rank(level: rmcp::model::LoggingLevel) -> Option<usize> {
    serde_json::to_value(level)
        .ok()
        .and_then(|level| level.as_str().and_then(rank))
}

/// The rank of a level's wire spelling.
pub(crate) fn rank(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|l| *l == level)
}

impl Relay {
    pub(super) fn new(manager: McpManager, filter: ToolFilter) -> Self {
        Relay {
            manager,
            filter,
            state: Mutex::default(),
            next_id: AtomicU64::new(1),
            passed: watch::Sender::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh id for a client, a request or a listen stream.
    pub(super) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Connected servers in scope, in config order.
    fn servers(&self) -> Vec<(String, Arc<crate::client::McpClient>)> {
        self.manager
            .server_names()
            .into_iter()
            .filter(|name| self.filter.allows_server(name))
            .filter_map(|name| self.manager.client(&name).map(|client| (name, client)))
            .collect()
    }

    /// Whether a server in scope offers logging (the gateway offers it then).
    pub(super) fn offers_logging(&self) -> bool {
        self.servers().iter().any(|(_, c)| c.offers_logging())
    }

    /// Whether a server in scope offers the 2026-07-28 tasks extension (the gateway passes
    /// tasks through then, see `tasks`).
    pub(super) fn offers_tasks(&self) -> bool {
        self.servers()
            .iter()
            .any(|(_, c)| c.task_protocol() == Some(crate::client::TaskProtocol::Extension))
    }

    /// Whether a server in scope offers resource subscriptions (the gateway offers them then).
    pub(super) fn offers_subscriptions(&self) -> bool {
        self.servers()
            .iter()
            .any(|(_, c)| c.offers_resource_subscriptions())
    }

    /// Client `id` (a session) wants every server's lines at `level` and above.
    pub(super) async fn set_level(&self, id: u64, peer: Peer<RoleServer>, level: usize) {
        self.lock().logs.insert(
            id,
            LogWant {
                peer,
                rank: level,
                server: None,
            },
        );
        self.apply_level().await;
    }

    /// Request `id` (of a 2026-07-28 client) wants `server`'s lines at `level` and above
    /// until the returned guard is dropped.
    pub(super) async fn watch_request(
        self: &Arc<Self>,
        peer: Peer<RoleServer>,
        level: usize,
        server: &str,
    ) -> RequestLogs {
        let id = self.next_id();
        self.lock().logs.insert(
            id,
            LogWant {
                peer,
                rank: level,
                server: Some(server.to_owned()),
            },
        );
        self.apply_level().await;
        let order = self
            .manager
            .client(server)
            .filter(|client| client.offers_logging())
            .map(|client| {
                // Received first: a line passed on between the two reads is in neither count.
                let received = client.log_lines_received();
                LineOrder {
                    server: server.to_owned(),
                    passed: self.passed_lines(server),
                    received,
                    client,
                }
            });
        RequestLogs {
            relay: self.clone(),
            id,
            order,
        }
    }

    /// Log lines of `server` passed on so far.
    fn passed_lines(&self, server: &str) -> u64 {
        self.passed.borrow().get(server).copied().unwrap_or(0)
    }

    /// One more log line of `server` is done with (passed on, or wanted by nobody).
    fn line_passed(&self, server: &str) {
        self.passed.send_modify(|passed| {
            if let Some(count) = passed.get_mut(server) {
                *count += 1;
            } else {
                passed.insert(server.to_owned(), 1);
            }
        });
    }

    /// Ask the servers for the most verbose level any client wants, if that changed.
    async fn apply_level(&self) {
        let wanted = {
            let mut state = self.lock();
            state
                .logs
                .retain(|_, want| !want.peer.is_transport_closed());
            let wanted = state.logs.values().map(|want| want.rank).min();
            if wanted.is_none() || wanted == state.level {
                return;
            }
            state.level = wanted;
            wanted
        };
        let Some(level) = wanted else { return };
        let asks = self
            .servers()
            .into_iter()
            .filter(|(_, client)| client.offers_logging())
            .map(|(server, client)| async move {
                if let Err(e) = client.set_log_level(LOG_LEVELS[level]).await {
                    tracing::debug!("gateway: log level not set on `{server}`: {e}");
                }
            });
        futures::future::join_all(asks).await;
    }

    /// Subscribe `target` (subscriber `id`) to `uri` of `server`; the server is asked on the
    /// first subscriber only.
    pub(super) async fn subscribe(
        &self,
        server: &str,
        uri: &str,
        id: u64,
        target: Target,
    ) -> Result<(), String> {
        self.sweep().await;
        let key = (server.to_owned(), uri.to_owned());
        let first = {
            let mut state = self.lock();
            let subscribers = state.resources.entry(key.clone()).or_default();
            let first = subscribers.is_empty();
            subscribers.insert(id, target);
            first
        };
        if !first {
            return Ok(());
        }
        let asked = match self.manager.client(server) {
            Some(client) if client.offers_resource_subscriptions() => client
                .subscribe_resource(uri)
                .await
                .map_err(|e| format!("MCP error: {e}")),
            Some(_) => Err(format!(
                "server `{server}` does not offer resource subscriptions"
            )),
            None => Err(format!("MCP error: server `{server}` is not connected")),
        };
        if asked.is_err() {
            let mut state = self.lock();
            if let Some(subscribers) = state.resources.get_mut(&key) {
                subscribers.remove(&id);
                if subscribers.is_empty() {
                    state.resources.remove(&key);
                }
            }
        }
        asked
    }

    /// Subscriber `id` leaves `uri` of `server`; the server is released after the last one.
    pub(super) async fn unsubscribe(&self, server: &str, uri: &str, id: u64) {
        let key = (server.to_owned(), uri.to_owned());
        let last = {
            let mut state = self.lock();
            match state.resources.get_mut(&key) {
                Some(subscribers) => {
                    subscribers.remove(&id);
                    let last = subscribers.is_empty();
                    if last {
                        state.resources.remove(&key);
                    }
                    last
                }
                None => false,
            }
        };
        if last {
            self.release_on_server(vec![key]).await;
        }
    }

    /// Subscriber `id` is gone (its listen stream ended): leave everything it subscribed to.
    pub(super) async fn release(&self, id: u64) {
        let emptied = drop_subscribers(&mut self.lock(), |subscriber, _| subscriber == id);
        self.release_on_server(emptied).await;
    }

    /// Forget sessions that closed; release what only they subscribed to.
    async fn sweep(&self) {
        let emptied = {
            let mut state = self.lock();
            state
                .logs
                .retain(|_, want| !want.peer.is_transport_closed());
            drop_subscribers(&mut state, |_, target| target.closed())
        };
        self.release_on_server(emptied).await;
    }

    async fn release_on_server(&self, keys: Vec<(String, String)>) {
        for (server, uri) in keys {
            if let Some(client) = self.manager.client(&server)
                && let Err(e) = client.unsubscribe_resource(&uri).await
            {
                tracing::debug!("gateway: `{uri}` not released on `{server}`: {e}");
            }
        }
    }

    /// A server (re)connected: ask it again for the level and the subscriptions it had.
    async fn restore(&self, server: &str) {
        let Some(client) = self.manager.client(server) else {
            return;
        };
        let (level, uris) = {
            let state = self.lock();
            let uris: Vec<String> = state
                .resources
                .keys()
                .filter(|(s, _)| s == server)
                .map(|(_, uri)| uri.clone())
                .collect();
            (state.level, uris)
        };
        if let Some(level) = level
            && client.offers_logging()
            && let Err(e) = client.set_log_level(LOG_LEVELS[level]).await
        {
            tracing::debug!("gateway: log level not set again on `{server}`: {e}");
        }
        for uri in uris {
            if let Err(e) = client.subscribe_resource(&uri).await {
                tracing::warn!("gateway: `{uri}` not subscribed again on `{server}`: {e}");
            }
        }
    }

    /// Pass one server notice on to the clients that asked for it.
    async fn deliver(&self, notice: ServerNotice) {
        match notice {
            ServerNotice::Log {
                server,
                level,
                logger,
                data,
            } => {
                let Ok(wire_level) = serde_json::from_value::<LoggingLevel>(level.clone().into())
                else {
                    return;
                };
                let line_rank = rank(&level).unwrap_or(1);
                let peers: Vec<Peer<RoleServer>> = {
                    let state = self.lock();
                    state
                        .logs
                        .values()
                        .filter(|want| {
                            want.rank <= line_rank
                                && want.server.as_deref().is_none_or(|s| s == server)
                        })
                        .map(|want| want.peer.clone())
                        .collect()
                };
                let logger = match logger {
                    Some(logger) => format!("{server}/{logger}"),
                    None => server,
                };
                let mut param = LoggingMessageNotificationParam::new(wire_level, data);
                param.logger = Some(logger);
                let sends = peers.iter().map(|peer| {
                    let param = param.clone();
                    async move {
                        #[allow(deprecated)] // current in the revisions with sessions
                        let sent = peer.notify_logging_message(param);
                        if !matches!(tokio::time::timeout(SEND_BOUND, sent).await, Ok(Ok(()))) {
                            tracing::debug!("gateway: a log line was not delivered");
                        }
                    }
                });
                futures::future::join_all(sends).await;
            }
            ServerNotice::ResourceUpdated { server, uri } => {
                let targets: Vec<Target> = {
                    let state = self.lock();
                    state
                        .resources
                        .get(&(server.clone(), uri.clone()))
                        .map(|subscribers| subscribers.values().cloned().collect())
                        .unwrap_or_default()
                };
                // Subscribed under the URI the server knows; the client knows the presented one.
                let uri = super::apps::presented(&server, &uri).unwrap_or(uri);
                let sends = targets.iter().map(|target| {
                    let uri = uri.clone();
                    async move {
                        let sent = match target {
                            Target::Session(peer) => tokio::time::timeout(
                                SEND_BOUND,
                                peer.notify_resource_updated(
                                    ResourceUpdatedNotificationParam::new(uri),
                                ),
                            )
                            .await
                            .is_ok_and(|r| r.is_ok()),
                            Target::Listen(sink) => {
                                tokio::time::timeout(SEND_BOUND, sink.notify_resource_updated(uri))
                                    .await
                                    .is_ok_and(|r| r.is_ok())
                            }
                        };
                        if !sent {
                            tracing::debug!("gateway: a resource update was not delivered");
                        }
                    }
                });
                futures::future::join_all(sends).await;
                // A subscriber that left without unsubscribing is noticed here at the latest.
                self.sweep().await;
            }
        }
    }
}

/// Remove the subscribers `gone` picks; returns the `(server, uri)` keys left with none, which
/// the servers should be released from.
fn drop_subscribers(
    state: &mut State,
    mut gone: impl FnMut(u64, &Target) -> bool,
) -> Vec<(String, String)> {
    let mut emptied = Vec::new();
    state.resources.retain(|key, subscribers| {
        subscribers.retain(|id, target| !gone(*id, target));
        if subscribers.is_empty() {
            emptied.push(key.clone());
        }
        !subscribers.is_empty()
    });
    emptied
}

/// The log lines of one 2026-07-28 request; they stop when this is dropped.
pub(crate) struct RequestLogs {
    relay: Arc<Relay>,
    id: u64,
    /// Where the server's lines stood as the request started, when it offers logging.
    order: Option<LineOrder>,
}

/// The log line counts of one server as a request started.
struct LineOrder {
    server: String,
    client: Arc<crate::client::McpClient>,
    /// Lines its connection had received.
    received: u64,
    /// Lines the relay had passed on.
    passed: u64,
}

/// How long an answer waits at most for the log lines received before it: a line the relay
/// never sees (its notices fell behind a flooding server) must not hold it longer.
const LINES_BOUND: Duration = Duration::from_millis(500);

impl RequestLogs {
    /// Wait until the log lines the server sent before its answer (which has arrived) are
    /// passed on, so that they go out first. Bounded by [`LINES_BOUND`].
    pub(super) async fn settle(&self) {
        let Some(order) = &self.order else { return };
        let since = order
            .client
            .log_lines_received()
            .saturating_sub(order.received);
        if since == 0 {
            return;
        }
        let target = order.passed + since;
        let mut passed = self.relay.passed.subscribe();
        let caught_up =
            passed.wait_for(|passed| passed.get(&order.server).copied().unwrap_or(0) >= target);
        if tokio::time::timeout(LINES_BOUND, caught_up).await.is_err() {
            tracing::debug!(
                "gateway: an answer of `{}` went out before all its log lines",
                order.server
            );
        }
    }
}

impl Drop for RequestLogs {
    fn drop(&mut self) {
        self.relay.lock().logs.remove(&self.id);
    }
}

/// Relay the servers' notices to the clients, and restore what a reconnected server had,
/// until `stop` is cancelled or the manager is gone.
pub(crate) async fn run(
    relay: Arc<Relay>,
    mut notices: broadcast::Receiver<ServerNotice>,
    mut events: broadcast::Receiver<ManagerEvent>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            notice = notices.recv() => match notice {
                Ok(notice) => {
                    let line_of = match &notice {
                        ServerNotice::Log { server, .. } => Some(server.clone()),
                        ServerNotice::ResourceUpdated { .. } => None,
                    };
                    if relay.filter.allows_server(notice_server(&notice)) {
                        relay.deliver(notice).await;
                    }
                    if let Some(server) = line_of {
                        relay.line_passed(&server);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!("gateway: {missed} server notices were dropped");
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            event = events.recv() => match event {
                Ok(ManagerEvent::Connected { server, .. }) if relay.filter.allows_server(&server) => {
                    relay.restore(&server).await;
                }
                Ok(ManagerEvent::Disconnected { .. } | ManagerEvent::Reconnecting { .. }) => {
                    relay.sweep().await;
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

fn notice_server(notice: &ServerNotice) -> &str {
    match notice {
        ServerNotice::Log { server, .. } | ServerNotice::ResourceUpdated { server, .. } => server,
    }
}
