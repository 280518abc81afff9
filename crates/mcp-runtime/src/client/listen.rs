//! Live notifications in protocol 2026-07-28. That revision has no standing stream for a
//! server's own messages: a client that wants to hear of tool list changes or of changes to
//! resources opens `subscriptions/listen`, whose response is the stream. One listener task per
//! connection forwards what arrives to the host as the older revisions' notifications did
//! ([`ClientEvent::ToolsChanged`](super::ClientEvent::ToolsChanged),
//! [`ClientEvent::ResourceUpdated`](super::ClientEvent::ResourceUpdated)), so hosts need not
//! know which era a server speaks. The filter of a stream cannot change: subscribing to one
//! more resource opens a new stream with the whole set and then drops the old one.

use std::collections::BTreeSet;

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::{Peer, RoleClient};

use super::ClientEvent;
use super::handler::Handler;

/// The listener of one connection; stopped when dropped.
pub(crate) struct Listener(tokio::task::JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What one modern connection listens to: the open stream and the resources it names.
#[derive(Default)]
pub(crate) struct Listening {
    pub listener: Option<Listener>,
    pub resources: BTreeSet<String>,
}

/// How long a new connection waits for the server to acknowledge its subscription.
const ACK_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

/// Listen for tool list changes on a modern connection whose server offers them, when the
/// host listens for events at all. Waits (bounded) for the acknowledgement, so a change made
/// right after connecting is not missed: the server keeps no backlog for late listeners.
pub(crate) async fn start(peer: &Peer<RoleClient>, handler: &Handler) -> Option<Listener> {
    match open(peer, handler, &BTreeSet::new()).await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::debug!(server = %handler.server, "{e}");
            None
        }
    }
}

/// Open a stream for tool list changes (when the server offers them) and for updates of
/// `resources`; `Ok(None)` when there is nothing to listen for or nobody to tell.
pub(crate) async fn open(
    peer: &Peer<RoleClient>,
    handler: &Handler,
    resources: &BTreeSet<String>,
) -> Result<Option<Listener>, String> {
    if handler.events.is_none() {
        return Ok(None);
    }
    let offers = peer
        .peer_info()
        .and_then(|info| {
            info.capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
        })
        .unwrap_or(false);
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
    let mut subscription = match tokio::time::timeout(ACK_BOUND, peer.listen(filter.build())).await
    {
        Ok(Ok(subscription)) => subscription,
        Ok(Err(e)) => return Err(format!("subscriptions/listen refused: {e}")),
        Err(_) => return Err("subscriptions/listen not acknowledged in time".to_owned()),
    };
    let handler = handler.clone();
    Ok(Some(Listener(tokio::spawn(async move {
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
    }))))
}
