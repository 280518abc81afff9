//! The supervisor against a scripted connection: back-off, the crash-storm breaker, re-lists
//! on `list_changed`, and generation checks, with tokio's clock paused so back-offs cost no
//! real time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, broadcast, mpsc, watch};

use super::super::ManagerOptions;
use super::super::connection::{Connection, Connector};
use super::super::events::ManagerEvent;
use super::super::health::{BACKOFF, STORM_LIMIT};
use super::super::report::{ConnectionState, ServerError};
use super::super::state::{Entry, Inner};
use super::run_server;
use crate::client::{ClientError, ClientEvent, ToolDefinition};
use crate::config::ServerConfig;

/// What the next `connect` does.
enum Step {
    /// Connects; `tools/list` answers these tool names.
    Up(&'static [&'static str]),
    /// Connects, but the connection drops during the first `tools/list`.
    DiesWhileListing,
    /// Waits for the notify, then connects with these tools.
    Gated(Arc<Notify>, &'static [&'static str]),
    /// Refuses with this error.
    Refuse(ClientError),
}

/// One scripted connection, shared between the fake and the test.
struct Link {
    tools: Mutex<Vec<ToolDefinition>>,
    dies_while_listing: bool,
    closed: watch::Sender<bool>,
    /// Whether the supervisor closed it (as opposed to it dying).
    closed_by_us: AtomicBool,
    lists: AtomicUsize,
    events: mpsc::Sender<ClientEvent>,
}

impl Link {
    /// The server goes away.
    fn die(&self) {
        self.closed.send_replace(true);
    }

    fn set_tools(&self, names: &[&str]) {
        *self.tools.lock().unwrap() = tools(names);
    }
}

struct FakeConn(Arc<Link>);

#[async_trait::async_trait]
impl Connection for FakeConn {
    async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ClientError> {
        self.0.lists.fetch_add(1, Ordering::SeqCst);
        if self.0.dies_while_listing {
            self.0.die();
            return Err(exited("tools/list"));
        }
        Ok(self.0.tools.lock().unwrap().clone())
    }

    async fn closed(&self) {
        let mut closed = self.0.closed.subscribe();
        let _ = closed.wait_for(|c| *c).await;
    }

    async fn close(&self) -> Option<String> {
        self.0.closed_by_us.store(true, Ordering::SeqCst);
        self.0.die();
        None
    }

    fn stderr_tail(&self) -> Vec<String> {
        vec!["last words".into()]
    }
}

/// Plays the steps in order; once they run out, every connect is refused.
#[derive(Default)]
struct Script {
    steps: Mutex<VecDeque<Step>>,
    made: Mutex<Vec<Arc<Link>>>,
    attempts: AtomicUsize,
}

#[async_trait::async_trait]
impl Connector for Arc<Script> {
    type Conn = FakeConn;

    async fn connect(
        &self,
        _name: &str,
        _config: &ServerConfig,
        events: mpsc::Sender<ClientEvent>,
    ) -> Result<FakeConn, ClientError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let step = self.steps.lock().unwrap().pop_front();
        let (names, dies_while_listing) = match step {
            Some(Step::Up(names)) => (names, false),
            Some(Step::DiesWhileListing) => (&[][..], true),
            Some(Step::Gated(gate, names)) => {
                gate.notified().await;
                (names, false)
            }
            Some(Step::Refuse(error)) => return Err(error),
            None => return Err(exited("initialize")),
        };
        let link = Arc::new(Link {
            tools: Mutex::new(tools(names)),
            dies_while_listing,
            closed: watch::Sender::new(false),
            closed_by_us: AtomicBool::new(false),
            lists: AtomicUsize::new(0),
            events,
        });
        self.made.lock().unwrap().push(link.clone());
        Ok(FakeConn(link))
    }
}

impl Script {
    fn link(&self, index: usize) -> Arc<Link> {
        self.made.lock().unwrap()[index].clone()
    }
}

fn tools(names: &[&str]) -> Vec<ToolDefinition> {
    names
        .iter()
        .map(|name| {
            serde_json::from_value(serde_json::json!({ "name": name, "inputSchema": {} }))
                .expect("a tool definition")
        })
        .collect()
}

fn exited(phase: &str) -> ClientError {
    ClientError::Exited {
        server: "fake".into(),
        phase: phase.into(),
        status: Some("exit status: 1".into()),
        stderr: vec!["boom".into()],
        held_back: Vec::new(),
    }
}

struct Harness {
    inner: Arc<Inner<Arc<Script>>>,
    script: Arc<Script>,
    events: broadcast::Receiver<ManagerEvent>,
}

impl Harness {
    fn new(steps: Vec<Step>) -> Self {
        Harness::with_options(steps, ManagerOptions::default())
    }

    fn with_options(steps: Vec<Step>, options: ManagerOptions) -> Self {
        let script = Arc::new(Script {
            steps: Mutex::new(steps.into()),
            ..Script::default()
        });
        let inner = Arc::new(Inner::new(options, script.clone()));
        let events = inner.events.subscribe();
        Harness {
            inner,
            script,
            events,
        }
    }

    /// Register `fake` and start its supervisor, as `connect_servers` does.
    fn start(&self) -> u64 {
        let generation = {
            let mut state = self.inner.lock();
            let generation = state.bump_generation();
            let config = ServerConfig::stdio("fake-server", Vec::<String>::new());
            state
                .servers
                .insert("fake".into(), Entry::new(config, None, generation));
            generation
        };
        tokio::spawn(run_server(
            self.inner.clone(),
            "fake".into(),
            generation,
            Arc::new(AtomicBool::new(true)),
        ));
        generation
    }

    /// The next event other than `Connecting`, bounded against hangs.
    async fn next(&mut self) -> ManagerEvent {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(600), self.events.recv())
                .await
                .expect("an event before the bound")
                .expect("the event channel is open");
            if !matches!(event, ManagerEvent::Connecting { .. }) {
                return event;
            }
        }
    }

    /// Wait for `Connected` (and the `ToolsChanged` that follows); returns its tool count.
    async fn connected(&mut self) -> usize {
        let event = self.next().await;
        let ManagerEvent::Connected { tools, .. } = event else {
            panic!("expected Connected, got {event:?}");
        };
        assert!(matches!(
            self.next().await,
            ManagerEvent::ToolsChanged { .. }
        ));
        tools
    }

    /// Wait until the entry reaches `state` (the event comes just before the record).
    async fn settled(&self, state: ConnectionState) {
        let mut changed = self.inner.changed.subscribe();
        let reached = changed.wait_for(|_| self.state() == state);
        tokio::time::timeout(Duration::from_secs(600), reached)
            .await
            .expect("the state before the bound")
            .expect("the manager is alive");
    }

    fn state(&self) -> ConnectionState {
        self.inner.lock().servers["fake"].phase.state()
    }

    fn last_error(&self) -> Option<ServerError> {
        self.inner.lock().servers["fake"].last_error.clone()
    }

    fn live_tools(&self) -> Vec<String> {
        let state = self.inner.lock();
        let tools = state.servers["fake"].live_tools.clone().unwrap_or_default();
        tools.iter().map(|t| t.name.clone()).collect()
    }
}

#[tokio::test(start_paused = true)]
async fn connects_and_lists_tools() {
    let mut h = Harness::new(vec![Step::Up(&["a", "b"])]);
    h.start();
    assert_eq!(h.connected().await, 2);
    assert_eq!(h.state(), ConnectionState::Connected);
    assert_eq!(h.live_tools(), ["a", "b"]);
    assert!(h.last_error().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_first_connection_that_fails_is_not_retried() {
    let refusal = ClientError::AuthRequired {
        server: "fake".into(),
        url: "https://example.test/mcp".into(),
        status: 401,
        www_authenticate: None,
        failure: Box::new(crate::auth::AuthFailure::LoginRequired {
            server: "fake".into(),
        }),
    };
    let mut h = Harness::new(vec![Step::Refuse(refusal)]);
    h.start();
    assert!(matches!(h.next().await, ManagerEvent::Failed { .. }));
    h.settled(ConnectionState::Failed).await;
    let error = h.last_error().expect("the failure is kept");
    assert!(error.is_auth_required(), "{error}");
    assert_eq!(h.script.attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_lost_connection_reconnects_after_the_first_back_off_and_relists() {
    let mut h = Harness::new(vec![Step::Up(&["a"]), Step::Up(&["a", "b"])]);
    h.start();
    assert_eq!(h.connected().await, 1);

    h.script.link(0).die();
    match h.next().await {
        ManagerEvent::Reconnecting { attempt, delay, .. } => {
            assert_eq!((attempt, delay), (1, BACKOFF[0]));
        }
        other => panic!("expected Reconnecting, got {other:?}"),
    }
    assert_eq!(h.state(), ConnectionState::Reconnecting { attempt: 1 });
    assert!(matches!(
        h.last_error(),
        Some(ServerError::ConnectionLost { .. })
    ));
    // The old tools stay on offer during the outage.
    assert_eq!(h.live_tools(), ["a"]);

    assert_eq!(h.connected().await, 2);
    assert_eq!(h.state(), ConnectionState::Connected);
    assert_eq!(h.live_tools(), ["a", "b"]);
    assert!(h.last_error().is_none(), "a reconnect clears the error");
}

#[tokio::test(start_paused = true)]
async fn failed_reconnects_back_off_further_then_suspend() {
    // One good connection, then every attempt is refused.
    let mut h = Harness::new(vec![Step::Up(&["a"])]);
    h.start();
    h.connected().await;
    h.script.link(0).die();

    let mut delays = Vec::new();
    loop {
        match h.next().await {
            ManagerEvent::Reconnecting { attempt, delay, .. } => {
                assert_eq!(attempt as usize, delays.len() + 1);
                delays.push(delay);
            }
            ManagerEvent::Failed { .. } => {}
            ManagerEvent::Suspended { reason, .. } => {
                // The whole back-off fits in the storm window, so the breaker is what stops
                // the attempt after the last back-off.
                assert!(reason.contains("crash storm"), "{reason}");
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(delays, BACKOFF);
    assert_eq!(h.state(), ConnectionState::Suspended);
    let error = h.last_error().expect("the reason is kept");
    assert!(matches!(error, ServerError::Suspended { .. }), "{error}");
    assert!(error.client_error().is_some(), "the last attempt's error");
    assert_eq!(h.script.attempts.load(Ordering::SeqCst), 1 + BACKOFF.len());
}

#[tokio::test(start_paused = true)]
async fn a_crash_storm_trips_the_breaker() {
    // Every reconnect succeeds, then the server dies again at once.
    let steps = (0..=STORM_LIMIT + 1).map(|_| Step::Up(&["a"])).collect();
    let mut h = Harness::new(steps);
    h.start();
    let mut connections = 0;
    let reason = loop {
        match h.next().await {
            ManagerEvent::Connected { .. } => {
                h.script.link(connections).die();
                connections += 1;
            }
            ManagerEvent::Reconnecting { attempt, .. } => {
                assert_eq!(attempt, 1, "each outage starts its own back-off")
            }
            ManagerEvent::Suspended { reason, .. } => break reason,
            _ => {}
        }
    };
    assert!(reason.contains("crash storm"), "{reason}");
    assert_eq!(connections, STORM_LIMIT + 1);
    assert_eq!(h.state(), ConnectionState::Suspended);
}

#[tokio::test(start_paused = true)]
async fn list_changed_relists_and_replaces_the_tools() {
    let mut h = Harness::new(vec![Step::Up(&["a"])]);
    h.start();
    h.connected().await;
    let link = h.script.link(0);
    link.set_tools(&["a", "b", "c"]);
    link.events.send(ClientEvent::ToolsChanged).await.unwrap();
    assert!(matches!(h.next().await, ManagerEvent::ToolsChanged { .. }));
    assert_eq!(h.live_tools(), ["a", "b", "c"]);
    assert_eq!(link.lists.load(Ordering::SeqCst), 2);
    assert_eq!(h.state(), ConnectionState::Connected);
}

#[tokio::test(start_paused = true)]
async fn a_connection_of_a_superseded_generation_is_closed_and_discarded() {
    let gate = Arc::new(Notify::new());
    let mut h = Harness::new(vec![Step::Gated(gate.clone(), &["a"])]);
    h.start();
    // While the handshake is in flight, a newer connection sequence takes over (what a
    // manual reconnect does).
    while h.script.attempts.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    {
        let mut state = h.inner.lock();
        let newer = state.bump_generation();
        state.servers.get_mut("fake").unwrap().generation = newer;
    }
    gate.notify_one();
    let event = h.next().await;
    assert!(matches!(event, ManagerEvent::Failed { .. }), "{event:?}");
    let link = h.script.link(0);
    assert!(
        link.closed_by_us.load(Ordering::SeqCst),
        "the stale connection is closed"
    );
    assert_eq!(link.lists.load(Ordering::SeqCst), 0);
    // The entry belongs to the newer sequence: nothing of the old one landed.
    assert_eq!(h.state(), ConnectionState::Connecting);
    assert!(h.last_error().is_none());
    assert!(h.live_tools().is_empty());
}

#[tokio::test(start_paused = true)]
async fn without_reconnects_a_lost_connection_fails() {
    let options = ManagerOptions {
        reconnect: false,
        ..ManagerOptions::default()
    };
    let mut h = Harness::with_options(vec![Step::Up(&["a"]), Step::Up(&["a"])], options);
    h.start();
    h.connected().await;
    h.script.link(0).die();
    match h.next().await {
        ManagerEvent::Failed { error, stderr, .. } => {
            assert!(
                matches!(error, ServerError::ConnectionLost { .. }),
                "{error}"
            );
            assert_eq!(stderr, ["last words"]);
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    h.settled(ConnectionState::Failed).await;
    assert_eq!(h.script.attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn dying_while_listing_is_an_outage_not_a_failure() {
    let mut h = Harness::new(vec![Step::DiesWhileListing, Step::Up(&["a"])]);
    h.start();
    let event = h.next().await;
    assert!(
        matches!(event, ManagerEvent::Reconnecting { attempt: 1, .. }),
        "{event:?}"
    );
    assert_eq!(h.connected().await, 1);
    assert_eq!(h.state(), ConnectionState::Connected);
}

#[test]
fn a_private_list_is_kept_as_a_stand_in_for_stdio_servers_only() {
    use crate::cache::CacheHints;
    let private = CacheHints::new(Some(60_000), true);
    let stdio = ServerConfig::stdio("srv", ["--x"]);
    let kept = crate::manager::remembered::stand_in_hints(&stdio, private);
    assert!(!kept.private, "kept in the user's own cache");
    assert_eq!(kept.ttl, None, "never fresh");
    let remote = crate::config::server_from_json(
        "svc",
        &serde_json::json!({"url": "https://example.com/mcp"}),
    )
    .expect("remote config");
    assert_eq!(
        crate::manager::remembered::stand_in_hints(&remote, private),
        private
    );
    let public = CacheHints::new(Some(60_000), false);
    assert_eq!(
        crate::manager::remembered::stand_in_hints(&stdio, public),
        public
    );
}
