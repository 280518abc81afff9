//! The server as a connected client reaches it after the opening: through rmcp's service (a
//! remote server), or through the connection's own reader (a stdio server, see `own`).

use std::sync::Arc;

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    ClientRequest, ServerPeerInfo, SubscriptionFilter,
};
use rmcp::service::{PeerRequestOptions, RequestHandle, ServiceError, Subscription};
use rmcp::{Peer, RoleClient};

use super::stdio::own::{OwnPeer, OwnSubscription};

/// The server of one connection.
#[derive(Clone, Debug)]
pub(crate) enum ServerPeer {
    /// A remote server: rmcp's service runs the connection.
    Service(Peer<RoleClient>),
    /// A stdio server: the connection's own reader runs it.
    Own(Arc<OwnPeer>),
}

/// A 2026-07-28 subscription (`subscriptions/listen`).
pub(crate) enum Listening {
    /// rmcp's: its notifications come out of it (boxed: rmcp's subscription is ~400 bytes).
    Service(Box<Subscription>),
    /// A stdio connection's: its reader hands the notifications to the host itself.
    Own(OwnSubscription),
}

impl ServerPeer {
    /// What the server said about itself in the opening.
    pub(crate) fn peer_info(&self) -> Option<Arc<ServerPeerInfo>> {
        match self {
            ServerPeer::Service(peer) => peer.peer_info(),
            ServerPeer::Own(own) => own.peer_info(),
        }
    }

    /// The protocol version the connection negotiated.
    pub(crate) fn negotiated(&self) -> Option<String> {
        self.peer_info()
            .map(|info| info.protocol_version.as_str().to_owned())
    }

    /// Whether the connection has ended.
    pub(crate) fn is_transport_closed(&self) -> bool {
        match self {
            ServerPeer::Service(peer) => peer.is_transport_closed(),
            ServerPeer::Own(own) => own.is_closed(),
        }
    }

    /// Send a request through rmcp's service. A stdio connection has none: its requests take
    /// the direct path (see `direct`), so this refuses them as not sent.
    pub(crate) async fn send_request_with_option(
        &self,
        request: ClientRequest,
        options: PeerRequestOptions,
    ) -> Result<RequestHandle<RoleClient>, ServiceError> {
        match self {
            ServerPeer::Service(peer) => peer.send_request_with_option(request, options).await,
            ServerPeer::Own(_) => Err(ServiceError::TransportClosed),
        }
    }

    /// Send `notifications/cancelled`.
    pub(crate) async fn notify_cancelled(
        &self,
        params: CancelledNotificationParam,
    ) -> Result<(), ServiceError> {
        match self {
            ServerPeer::Service(peer) => peer.notify_cancelled(params).await,
            ServerPeer::Own(own) => {
                let notice = ClientJsonRpcMessage::notification(
                    ClientNotification::CancelledNotification(CancelledNotification::new(params)),
                );
                own.notify(&notice)
                    .await
                    .map_err(|_| ServiceError::TransportClosed)
            }
        }
    }

    /// Open a 2026-07-28 subscription and wait for its acknowledgement.
    pub(crate) async fn listen(&self, filter: SubscriptionFilter) -> Result<Listening, String> {
        match self {
            ServerPeer::Service(peer) => peer
                .listen(filter)
                .await
                .map(|subscription| Listening::Service(Box::new(subscription)))
                .map_err(|e| e.to_string()),
            ServerPeer::Own(own) => own.listen(filter).await.map(Listening::Own),
        }
    }

    /// Stop the connection's own reader (a stdio server); nothing for rmcp's service, which
    /// its owner closes.
    pub(crate) async fn close(&self) {
        if let ServerPeer::Own(own) = self {
            own.close().await;
        }
    }
}
