//! `notifications/tools/list_changed` for every client of a gateway: the manager's
//! tools-changed events for servers in scope, coalesced over a short window, become one
//! notification per connected client: per session for clients of the `initialize` era, per
//! open `subscriptions/listen` stream for 2026-07-28 clients.

use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ServerNotification, ToolListChangedNotification};
use rmcp::service::{Peer, SubscriptionSink};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::filter::ToolFilter;
use crate::manager::ManagerEvent;

/// How long one client may take to accept a notification before it is skipped this time.
const SEND_BOUND: Duration = Duration::from_secs(2);

/// The clients connected to one gateway.
#[derive(Default)]
pub(crate) struct Clients {
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Open `subscriptions/listen` streams.
    listeners: Mutex<Vec<SubscriptionSink>>,
}

impl Clients {
    fn lock(&self) -> MutexGuard<'_, Vec<Peer<RoleServer>>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A client finished its handshake.
    pub fn add(&self, peer: Peer<RoleServer>) {
        let mut peers = self.lock();
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }

    /// A 2026-07-28 client opened a `subscriptions/listen` stream.
    pub fn listen(&self, sink: SubscriptionSink) {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(sink);
    }

    /// Clients still connected.
    pub fn count(&self) -> usize {
        let mut peers = self.lock();
        peers.retain(|p| !p.is_transport_closed());
        peers.len()
    }

    /// Tell every connected client that the tool list changed, concurrently, each bounded.
    pub async fn notify_all(&self) {
        // Cloned out: no lock across the sends.
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.lock();
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
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
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
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
            self.listeners
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|sink| !closed.contains(sink.id()));
        }
    }
}

/// Call `notify` once per burst of the manager's tool changes to servers in scope, until
/// `stop` is cancelled or the manager is gone.
pub(crate) async fn forward_changes<F, Fut>(
    mut events: broadcast::Receiver<ManagerEvent>,
    filter: ToolFilter,
    debounce: Duration,
    stop: CancellationToken,
    mut notify: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        let changed = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => match event {
                Ok(ManagerEvent::ToolsChanged { server }) => filter.allows_server(&server),
                Ok(_) => false,
                // Missed events may have been changes: assume one.
                Err(broadcast::error::RecvError::Lagged(_)) => true,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        if !changed {
            continue;
        }
        // A reconnect or a burst of `list_changed` from one server gives several events in a
        // row; wait a little and send one notification for all of them.
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(debounce) => {}
        }
        loop {
            match events.try_recv() {
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(broadcast::error::TryRecvError::Closed) => return,
                _ => {}
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

    #[tokio::test]
    async fn a_burst_of_changes_is_one_notification_and_out_of_scope_ones_none() {
        let (events, receiver) = broadcast::channel(64);
        let stop = CancellationToken::new();
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = sent.clone();
        let forwarding = tokio::spawn(forward_changes(
            receiver,
            ToolFilter::default().with_servers(["a", "b"]),
            Duration::from_millis(50),
            stop.clone(),
            move || {
                counter.fetch_add(1, Ordering::SeqCst);
                std::future::ready(())
            },
        ));
        for _ in 0..10 {
            events.send(changed("a")).unwrap();
            events.send(changed("b")).unwrap();
            events
                .send(ManagerEvent::Connecting { server: "a".into() })
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(sent.load(Ordering::SeqCst), 1);

        // Servers out of scope and other events are not tool changes of this view.
        events.send(changed("elsewhere")).unwrap();
        events
            .send(ManagerEvent::Disconnected { server: "a".into() })
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(sent.load(Ordering::SeqCst), 1);

        events.send(changed("b")).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(sent.load(Ordering::SeqCst), 2);
        stop.cancel();
        forwarding.await.unwrap();
    }
}
