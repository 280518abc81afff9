//! Live notifications in protocol 2026-07-28. That revision has no standing stream for a
//! server's own messages: a client that wants to hear of tool list changes opens
//! `subscriptions/listen`, whose response is the stream. One listener task per connection
//! forwards what arrives to the host as the older revisions' notifications did
//! ([`ClientEvent::ToolsChanged`](super::ClientEvent::ToolsChanged)), so hosts need not know
//! which era a server speaks.
//!
//! The subscription is opened in the background: a server that is slow to acknowledge it (or
//! never does) costs the connection, its start-up gate and its first `tools/list` nothing.
//! The server keeps no backlog for late listeners, so a change between a tool list the host
//! already got and the acknowledgement could be missed: when the acknowledgement arrives
//! after such a list, the host is told the tools changed, and lists once more.

use std::sync::{Arc, Mutex};

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::{Peer, RoleClient};

use super::handler::Handler;

/// The listener of one connection; stopped when dropped.
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

/// Listen for tool list changes on a modern connection whose server offers them, when the
/// host listens for events at all. Returns once the request is on its way (before the host's
/// first `tools/list`, so the server usually acknowledges before it answers that list), without
/// waiting for the acknowledgement: the listener's task does.
pub(crate) async fn start(peer: &Peer<RoleClient>, handler: &Handler) -> Option<Listener> {
    handler.events.as_ref()?;
    let offers = peer
        .peer_info()
        .and_then(|info| {
            info.capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
        })
        .unwrap_or(false);
    if !offers {
        return None;
    }
    let progress = Arc::new(Mutex::new(Progress::default()));
    let mut listening = Box::pin(listen(peer.clone(), handler.clone(), progress.clone()));
    // One poll sends `subscriptions/listen` (handing it to the connection's writer is
    // immediate) and stops at the wait for the acknowledgement; the task takes it from there.
    if futures::poll!(listening.as_mut()).is_ready() {
        return None;
    }
    let task = tokio::spawn(listening);
    Some(Listener { task, progress })
}

/// The listener's task: subscribe, then forward tool list changes until the stream ends.
async fn listen(peer: Peer<RoleClient>, handler: Handler, progress: Arc<Mutex<Progress>>) {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = match peer.listen(filter).await {
        Ok(subscription) => subscription,
        Err(e) => {
            tracing::debug!(server = %handler.server, "subscriptions/listen refused: {e}");
            return;
        }
    };
    let listed_before = {
        let mut progress = progress.lock().unwrap_or_else(|e| e.into_inner());
        progress.acknowledged = true;
        std::mem::take(&mut progress.listed_before)
    };
    if listed_before {
        tracing::debug!(server = %handler.server, "subscription acknowledged after a tool list; listing again");
        handler.emit_tools_changed().await;
    }
    loop {
        match subscription.next().await {
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => {
                handler.emit_tools_changed().await;
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
