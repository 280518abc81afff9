//! `notifications/tools/list_changed` for every client of a gateway. The manager's
//! tools-changed events for servers in scope are coalesced until they pause for a quiet period
//! (bounded, so that a steady stream still gets through); then each client whose own list
//! differs from the one it last saw is told once: per session for clients of the `initialize`
//! era, per open `subscriptions/listen` stream for 2026-07-28 clients.
//!
//! A session client hears nothing before its first `tools/list` (it will see the current list
//! then), and nothing more until it lists again. A listen stream has no listing tied to it: its
//! baseline is the list when it opened, and then the list it was last told about. A client's list
//! is compared by a digest of what `tools/list` would show it, so a reconnect that brings back the
//! same tools, or a change outside a discovery-mode client's short list, sends nothing.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ServerNotification, ToolListChangedNotification};
use rmcp::service::{Peer, SubscriptionSink};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::filter::ToolFilter;
use super::search_mode::ActivatedTools;
use crate::manager::ManagerEvent;

/// How long one client may take to accept a notification before it is skipped this time.
const SEND_BOUND: Duration = Duration::from_secs(2);

/// The longest a burst of changes is held back, however long it goes on (a multiple of the
/// quiet period).
const MAX_HOLD_QUIET_PERIODS: u32 = 20;

/// What one client was last shown of the tool list, to tell it of a change only when its own
/// list changed, and once until it lists again.
#[derive(Debug, Default)]
pub(crate) struct Listing(Mutex<Shown>);

#[derive(Debug, Default)]
struct Shown {
    /// The digest of the list the client last received; `None` before its first listing.
    digest: Option<u64>,
    /// Told of a change since then.
    told: bool,
}

impl Listing {
    fn lock(&self) -> MutexGuard<'_, Shown> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The client received a list with this digest.
    pub(super) fn listed(&self, digest: u64) {
        *self.lock() = Shown {
            digest: Some(digest),
            told: false,
        };
    }

    /// The client was told its list changed (by whoever changed it).
    pub(super) fn told(&self) {
        self.lock().told = true;
    }

    /// Whether a session client whose list is now `current` should be told, marking it told.
    fn tell_session(&self, current: u64) -> bool {
        let mut shown = self.lock();
        let tell = shown.digest.is_some_and(|d| d != current) && !shown.told;
        shown.told |= tell;
        tell
    }

    /// Whether a listen stream whose list is now `current` should be told; its baseline moves
    /// to `current` (a stream cannot be seen listing again).
    fn tell_stream(&self, current: u64) -> bool {
        let mut shown = self.lock();
        let tell = shown.digest.is_some_and(|d| d != current);
        shown.digest = Some(current);
        tell
    }
}

/// One connected client: its handle, and what the list it sees depends on.
struct Client<T> {
    handle: T,
    activated: Arc<ActivatedTools>,
    listing: Arc<Listing>,
}

/// The clients connected to one gateway.
#[derive(Default)]
pub(crate) struct Clients {
    peers: Mutex<Vec<Client<Peer<RoleServer>>>>,
    /// Open `subscriptions/listen` streams.
    listeners: Mutex<Vec<Client<SubscriptionSink>>>,
}

impl Clients {
    fn lock(&self) -> MutexGuard<'_, Vec<Client<Peer<RoleServer>>>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_listeners(&self) -> MutexGuard<'_, Vec<Client<SubscriptionSink>>> {
        self.listeners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A client finished its handshake.
    pub(super) fn add(
        &self,
        peer: Peer<RoleServer>,
        activated: Arc<ActivatedTools>,
        listing: Arc<Listing>,
    ) {
        let mut peers = self.lock();
        peers.retain(|c| !c.handle.is_transport_closed());
        peers.push(Client {
            handle: peer,
            activated,
            listing,
        });
    }

    /// A 2026-07-28 client opened a `subscriptions/listen` stream; `listing` holds the digest
    /// of its list now.
    pub(super) fn listen(
        &self,
        sink: SubscriptionSink,
        activated: Arc<ActivatedTools>,
        listing: Arc<Listing>,
    ) {
        self.lock_listeners().push(Client {
            handle: sink,
            activated,
            listing,
        });
    }

    /// Clients still connected.
    pub(super) fn count(&self) -> usize {
        let mut peers = self.lock();
        peers.retain(|c| !c.handle.is_transport_closed());
        peers.len()
    }

    /// Tell every client whose list (by `digest`, of what `tools/list` would show it) changed,
    /// concurrently, each bounded.
    pub(super) async fn notify_changed(&self, digest: impl Fn(&ActivatedTools) -> u64) {
        // Chosen and cloned out: no lock across the sends.
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.lock();
            peers.retain(|c| !c.handle.is_transport_closed());
            peers
                .iter()
                .filter(|c| c.listing.tell_session(digest(&c.activated)))
                .map(|c| c.handle.clone())
                .collect()
        };
        let sends = peers.iter().map(|peer| async move {
            match tokio::time::timeout(SEND_BOUND, peer.notify_tool_list_changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!("gateway: list_changed not delivered: {e}"),
                Err(_) => tracing::debug!("gateway: a client did not take list_changed in time"),
            }
        });
        futures::future::join_all(sends).await;
        let listeners: Vec<SubscriptionSink> = self
            .lock_listeners()
            .iter()
            .filter(|c| c.listing.tell_stream(digest(&c.activated)))
            .map(|c| c.handle.clone())
            .collect();
        let sends = listeners.iter().map(|sink| async move {
            let change = ServerNotification::ToolListChangedNotification(
                ToolListChangedNotification::default(),
            );
            match tokio::time::timeout(SEND_BOUND, sink.send(change)).await {
                Ok(Ok(())) => true,
                // Closed, or a stream that did not ask for tool changes: nothing to keep.
                Ok(Err(rmcp::service::SubscriptionSendError::SubscriptionClosed)) => false,
                Ok(Err(e)) => {
                    tracing::debug!("gateway: list_changed not delivered: {e}");
                    true
                }
                Err(_) => true,
            }
        });
        let open = futures::future::join_all(sends).await;
        let closed: Vec<_> = listeners
            .iter()
            .zip(open)
            .filter(|(_, open)| !open)
            .map(|(sink, _)| sink.id().clone())
            .collect();
        if !closed.is_empty() {
            self.lock_listeners()
                .retain(|c| !closed.contains(c.handle.id()));
        }
    }
}

/// Call `notify` once per burst of the manager's tool changes to servers in scope, once the
/// burst has paused for `quiet` (or has gone on for [`MAX_HOLD_QUIET_PERIODS`] of them), until
/// `stop` is cancelled or the manager is gone.
pub(crate) async fn forward_changes<F, Fut>(
    mut events: broadcast::Receiver<ManagerEvent>,
    filter: ToolFilter,
    quiet: Duration,
    stop: CancellationToken,
    mut notify: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    // Whether an event may be a change of this view's tools.
    let concerns = |event: &Result<ManagerEvent, broadcast::error::RecvError>| match event {
        Ok(ManagerEvent::ToolsChanged { server }) => filter.allows_server(server),
        Ok(_) => false,
        // Missed events may have been changes: assume one.
        Err(broadcast::error::RecvError::Lagged(_)) => true,
        Err(broadcast::error::RecvError::Closed) => false,
    };
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => event,
        };
        if matches!(event, Err(broadcast::error::RecvError::Closed)) {
            return;
        }
        if !concerns(&event) {
            continue;
        }
        // Servers connect one after another at start-up, a reconnect lists again, a server
        // may send `list_changed` in bursts: wait until the changes pause.
        let hold_until = Instant::now() + quiet * MAX_HOLD_QUIET_PERIODS;
        let mut quiet_until = Instant::now() + quiet;
        loop {
            let deadline = quiet_until.min(hold_until);
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep_until(deadline) => break,
                event = events.recv() => {
                    if matches!(event, Err(broadcast::error::RecvError::Closed)) {
                        notify().await;
                        return;
                    }
                    if concerns(&event) {
                        quiet_until = Instant::now() + quiet;
                    }
                }
            }
        }
        notify().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn changed(server: &str) -> ManagerEvent {
        ManagerEvent::ToolsChanged {
            server: server.to_owned(),
        }
    }

    const QUIET: Duration = Duration::from_millis(100);

    /// A forwarder over servers `a` and `b` counting its notifications.
    fn forwarder() -> (
        broadcast::Sender<ManagerEvent>,
        Arc<AtomicUsize>,
        CancellationToken,
        tokio::task::JoinHandle<()>,
    ) {
        let (events, receiver) = broadcast::channel(64);
        let stop = CancellationToken::new();
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = sent.clone();
        let forwarding = tokio::spawn(forward_changes(
            receiver,
            ToolFilter::default().with_servers(["a", "b"]),
            QUIET,
            stop.clone(),
            move || {
                counter.fetch_add(1, Ordering::SeqCst);
                std::future::ready(())
            },
        ));
        (events, sent, stop, forwarding)
    }

    // Time is paused: the clock moves only when every task waits, so these run exactly.
    #[tokio::test(start_paused = true)]
    async fn a_burst_of_changes_is_one_notification_and_out_of_scope_ones_none() {
        let (events, sent, stop, forwarding) = forwarder();
        for _ in 0..10 {
            events.send(changed("a")).unwrap();
            events.send(changed("b")).unwrap();
            events
                .send(ManagerEvent::Connecting { server: "a".into() })
                .unwrap();
        }
        tokio::time::sleep(QUIET * 3).await;
        assert_eq!(sent.load(Ordering::SeqCst), 1);

        // Servers out of scope and other events are not tool changes of this view.
        events.send(changed("elsewhere")).unwrap();
        events
            .send(ManagerEvent::Disconnected { server: "a".into() })
            .unwrap();
        tokio::time::sleep(QUIET * 3).await;
        assert_eq!(sent.load(Ordering::SeqCst), 1);

        events.send(changed("b")).unwrap();
        tokio::time::sleep(QUIET * 3).await;
        assert_eq!(sent.load(Ordering::SeqCst), 2);
        stop.cancel();
        forwarding.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn servers_connecting_one_after_another_are_one_notification_after_they_pause() {
        let (events, sent, stop, forwarding) = forwarder();
        // Twelve servers, each connecting 60 ms after the last: never a quiet period.
        for i in 0..12 {
            events
                .send(changed(if i % 2 == 0 { "a" } else { "b" }))
                .unwrap();
            tokio::time::sleep(QUIET * 6 / 10).await;
            assert_eq!(sent.load(Ordering::SeqCst), 0, "told before the pause");
        }
        tokio::time::sleep(QUIET * 2).await;
        assert_eq!(sent.load(Ordering::SeqCst), 1);
        stop.cancel();
        forwarding.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_steady_stream_of_changes_is_still_told_at_the_hold_bound() {
        let (events, sent, stop, forwarding) = forwarder();
        for _ in 0..(MAX_HOLD_QUIET_PERIODS * 3) {
            events.send(changed("a")).unwrap();
            tokio::time::sleep(QUIET / 2).await;
        }
        assert!(sent.load(Ordering::SeqCst) >= 1);
        stop.cancel();
        forwarding.await.unwrap();
    }

    #[test]
    fn a_session_is_told_after_its_first_listing_once_per_listing_and_only_of_a_real_change() {
        let listing = Listing::default();
        assert!(
            !listing.tell_session(1),
            "never listed: it will see the list when it lists"
        );
        listing.listed(1);
        assert!(!listing.tell_session(1), "same list");
        assert!(listing.tell_session(2));
        assert!(
            !listing.tell_session(3),
            "told already, until it lists again"
        );
        listing.listed(3);
        assert!(!listing.tell_session(3));
        listing.told();
        assert!(!listing.tell_session(4), "told by whoever changed its list");
        listing.listed(4);
        assert!(listing.tell_session(5));
    }

    #[test]
    fn a_listen_stream_is_told_of_each_change_from_the_list_it_was_last_told_about() {
        let listing = Listing::default();
        listing.listed(1);
        assert!(!listing.tell_stream(1));
        assert!(listing.tell_stream(2));
        assert!(!listing.tell_stream(2));
        assert!(listing.tell_stream(1));
    }
}
