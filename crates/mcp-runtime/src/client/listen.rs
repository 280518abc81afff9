//! Live notifications in protocol 2026-07-28. That revision has no standing stream for a
//! server's own messages: a client that wants to hear of tool list changes opens
//! `subscriptions/listen`, whose response is the stream. One listener task per connection
//! forwards what arrives to the host as the older revisions' notifications did
//! ([`ClientEvent::ToolsChanged`](super::ClientEvent::ToolsChanged)), so hosts need not know
//! which era a server speaks.

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::{Peer, RoleClient};

use super::handler::Handler;

/// The listener of one connection; stopped when dropped.
pub(crate) struct Listener(tokio::task::JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long a new connection waits for the server to acknowledge its subscription.
const ACK_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

/// Listen for tool list changes on a modern connection whose server offers them, when the
/// host listens for events at all. Waits (bounded) for the acknowledgement, so a change made
/// right after connecting is not missed: the server keeps no backlog for late listeners.
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
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = match tokio::time::timeout(ACK_BOUND, peer.listen(filter)).await {
        Ok(Ok(subscription)) => subscription,
        Ok(Err(e)) => {
            tracing::debug!(server = %handler.server, "subscriptions/listen refused: {e}");
            return None;
        }
        Err(_) => {
            tracing::debug!(server = %handler.server, "subscriptions/listen not acknowledged in time");
            return None;
        }
    };
    let handler = handler.clone();
    Some(Listener(tokio::spawn(async move {
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
    })))
}
