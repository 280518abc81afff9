//! Live notifications in protocol 2026-07-28. That revision has no standing stream for a
//! server's own messages: a client that wants to hear of tool list changes or of changes to
//! resources opens `subscriptions/listen`, whose response is the stream. One listener task per
//! connection forwards what arrives to the host as the older revisions' notifications did
//! ([`ClientEvent::ToolsChanged`](super::ClientEvent::ToolsChanged),
//! [`ClientEvent::ResourceUpdated`](super::ClientEvent::ResourceUpdated)), so hosts need not
//! know which era a server speaks (on a stdio connection the reader hands them over itself,
//! see `own`, and the listener only waits for the stream's end). The filter of a stream cannot change: subscribing to one
//! more resource opens a new stream with the whole set and then drops the old one.
//!
//! The connection's first subscription is opened in the background: a server that is slow to
//! acknowledge it (or never does) costs the connection, its start-up gate and its first
//! `tools/list` nothing. The server keeps no backlog for late listeners, so a change between a
//! tool list the host already got and the acknowledgement could be missed: when the
//! acknowledgement arrives after such a list, the host is told the tools changed, and lists
//! once more. A resource subscription, by contrast, waits (bounded) for its acknowledgement,
//! so that updates flow once `resources/subscribe` returns.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{ServerNotification, SubscriptionFilter};
use tokio::sync::oneshot;

use super::ClientEvent;
use super::handler::Handler;
use super::link::{Listening as Subscription, ServerPeer};

/// The listener of one stream; stopped when dropped.
pub(crate) struct Listener {
    task: tokio::task::JoinHandle<()>,
    progress: Arc<Mutex<Progress>>,
}

/// How far the subscription has come, against the tool lists the host got meanwhile.
#[derive(Debug, Default)]
struct Progress {
    /// The server acknowledged the subscription: changes from now on reach the host.
    acknowledged: bool,
    /// A tool list was answered before that: it may miss a change made before the
    /// acknowledgement.
    listed_before: bool,
}

impl Listener {
    /// A tool list was answered: if the subscription is not acknowledged yet, the host is
    /// told to list again once it is.
    pub(crate) fn tools_listed(&self) {
        let mut progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if !progress.acknowledged {
            progress.listed_before = true;
        }
    }

    /// Whether the server has acknowledged the subscription.
    pub(crate) fn acknowledged(&self) -> bool {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .acknowledged
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What one modern connection listens to: the open stream and the resources it names.
#[derive(Default)]
pub(crate) struct Listening {
    pub listener: Option<Listener>,
    pub resources: BTreeSet<String>,
}

/// How long a resource subscription waits for the server to acknowledge its new stream.
const ACK_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the server says its tool list can change.
fn offers_tool_changes(peer: &ServerPeer) -> bool {
    peer.peer_info()
        .and_then(|info| {
            info.capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
        })
        .unwrap_or(false)
}

/// Listen for tool list changes on a modern connection whose server offers them, when the
/// host listens for events at all. Returns once the request is on its way (before the host's
/// first `tools/list`, so the server usually acknowledges before it answers that list), without
/// waiting for the acknowledgement: the listener's task does.
///
/// With `after`, the stream opens only once that connection's first request is answered (see
/// `send_first`).
pub(crate) async fn start(
    peer: &ServerPeer,
    handler: &Handler,
    after: Option<tokio::sync::watch::Receiver<bool>>,
) -> Option<Listener> {
    handler.events.as_ref()?;
    if !offers_tool_changes(peer) {
        return None;
    }
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let progress = Arc::new(Mutex::new(Progress::default()));
    let listen = listen(
        peer.clone(),
        handler.clone(),
        filter,
        progress.clone(),
        None,
    );
    let mut listening = Box::pin(async move {
        super::first_answered(after).await;
        listen.await;
    });
    // One poll sends `subscriptions/listen` (handing it to the connection's writer is
    // immediate) and stops at the wait for the acknowledgement; the task takes it from there.
    if futures::poll!(listening.as_mut()).is_ready() {
        return None;
    }
    let task = tokio::spawn(listening);
    Some(Listener { task, progress })
}

/// Open a stream for tool list changes (when the server offers them) and for updates of
/// `resources`, and wait (bounded) for its acknowledgement; `Ok(None)` when there is nothing
/// to listen for or nobody to tell.
pub(crate) async fn open(
    peer: &ServerPeer,
    handler: &Handler,
    resources: &BTreeSet<String>,
) -> Result<Option<Listener>, String> {
    if handler.events.is_none() {
        return Ok(None);
    }
    let offers = offers_tool_changes(peer);
    if !offers && resources.is_empty() {
        return Ok(None);
    }
    let mut filter = SubscriptionFilter::builder();
    if offers {
        filter = filter.tools_list_changed();
    }
    if !resources.is_empty() {
        filter = filter.resource_subscriptions(resources.iter().cloned());
    }
    let progress = Arc::new(Mutex::new(Progress::default()));
    let (acked, ack) = oneshot::channel();
    let task = tokio::spawn(listen(
        peer.clone(),
        handler.clone(),
        filter.build(),
        progress.clone(),
        Some(acked),
    ));
    let listener = Listener { task, progress };
    match tokio::time::timeout(ACK_BOUND, ack).await {
        Ok(Ok(Ok(()))) => Ok(Some(listener)),
        Ok(Ok(Err(e))) => Err(format!("subscriptions/listen refused: {e}")),
        Ok(Err(_)) => Err("subscriptions/listen ended before its acknowledgement".to_owned()),
        Err(_) => Err("subscriptions/listen not acknowledged in time".to_owned()),
    }
}

/// The listener's task: subscribe, then forward tool list changes and resource updates until
/// the stream ends. `acked` learns whether the server acknowledged.
async fn listen(
    peer: ServerPeer,
    handler: Handler,
    filter: SubscriptionFilter,
    progress: Arc<Mutex<Progress>>,
    acked: Option<oneshot::Sender<Result<(), String>>>,
) {
    let subscription = match peer.listen(filter).await {
        Ok(subscription) => subscription,
        Err(e) => {
            tracing::debug!(server = %handler.server, "subscriptions/listen refused: {e}");
            if let Some(acked) = acked {
                let _ = acked.send(Err(e.to_string()));
            }
            return;
        }
    };
    let listed_before = {
        let mut progress = progress.lock().unwrap_or_else(|e| e.into_inner());
        progress.acknowledged = true;
        std::mem::take(&mut progress.listed_before)
    };
    if let Some(acked) = acked {
        let _ = acked.send(Ok(()));
    }
    if listed_before {
        tracing::debug!(server = %handler.server, "subscription acknowledged after a tool list; listing again");
        handler.emit_tools_changed().await;
    }
    let mut subscription = match subscription {
        Subscription::Service(subscription) => subscription,
        // A stdio connection's reader hands the subscription's notifications to the host.
        Subscription::Own(mut subscription) => {
            subscription.ended().await;
            return;
        }
    };
    loop {
        match subscription.next().await {
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => {
                handler.emit_tools_changed().await;
            }
            Ok(Some(ServerNotification::ResourceUpdatedNotification(update))) => {
                handler.emit(ClientEvent::ResourceUpdated {
                    uri: update.params.uri,
                });
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(server = %handler.server, "subscription ended: {e}");
                break;
            }
        }
    }
}
