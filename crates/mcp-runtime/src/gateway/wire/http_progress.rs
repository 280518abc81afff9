//! The peer behind the HTTP fast path's calls (see `http_call`), and how a call's progress
//! finds its way back to the request that asked for it.
//!
//! The handler sends a call's progress to the peer its context names. rmcp's stateless path
//! builds a peer for every request; the fast path has one for all of them, served by
//! [`RoutingTransport`]: it reads nothing, and of what the handler sends it keeps only progress
//! notifications, each handed to the request whose call it belongs to. Requests share the
//! peer, and their clients pick their tokens freely (every SDK may start from `0`), so each
//! call is given a token of the gateway's own for the handler to use ([`Route`]), and its
//! progress leaves under the client's token again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{
    NumberOrString, ProgressNotificationParam, ProgressToken, ServerJsonRpcMessage,
    ServerNotification,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// The progress a call receives, under its client's token.
pub(super) type Progress = mpsc::UnboundedReceiver<ProgressNotificationParam>;

/// Where each call's progress goes, by the token the gateway gave the call.
#[derive(Default)]
pub(super) struct ProgressRoutes {
    routes: Mutex<HashMap<i64, (ProgressToken, ProgressSender)>>,
    next: AtomicI64,
}

impl ProgressRoutes {
    fn lock(&self) -> MutexGuard<'_, HashMap<i64, (ProgressToken, ProgressSender)>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A route for a call whose client named `token`: the token the handler is to use, and
    /// the call's progress under `token`. The route is gone when the [`Route`] is dropped.
    pub(super) fn open(self: &Arc<Self>, token: ProgressToken) -> (Route, Progress) {
        let own = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, progress) = mpsc::unbounded_channel();
        self.lock().insert(own, (token, sender));
        let route = Route {
            routes: self.clone(),
            own,
        };
        (route, progress)
    }

    /// Hand `param` to the call its token names, under the client's token; progress of a
    /// call whose route is gone is dropped.
    fn deliver(&self, mut param: ProgressNotificationParam) {
        let ProgressToken(NumberOrString::Number(own)) = param.progress_token else {
            return;
        };
        if let Some((token, sender)) = self.lock().get(&own) {
            param.progress_token = token.clone();
            let _ = sender.send(param);
        }
    }
}

type ProgressSender = mpsc::UnboundedSender<ProgressNotificationParam>;

/// One call's route, removed when dropped.
pub(super) struct Route {
    routes: Arc<ProgressRoutes>,
    own: i64,
}

impl Route {
    /// The token the handler is to send the call's progress under.
    pub(super) fn token(&self) -> ProgressToken {
        ProgressToken(NumberOrString::Number(self.own))
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.own);
    }
}

/// The fast path's peer's transport: reads nothing, ever; hands progress notifications to
/// their calls and drops everything else (nothing else is sent for a call the fast path
/// takes).
pub(super) struct RoutingTransport(pub(super) Arc<ProgressRoutes>);

impl Transport<RoleServer> for RoutingTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Delivered here, not in the future: the handler's send returns only after this
        // ran, so a call's progress is in its channel before the call's answer is ready.
        if let ServerJsonRpcMessage::Notification(notification) = item
            && let ServerNotification::ProgressNotification(progress) = notification.notification
        {
            self.0.deliver(progress.params);
        }
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        std::future::pending()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_goes_to_its_call_under_the_clients_token_until_the_route_is_gone() {
        let routes = Arc::new(ProgressRoutes::default());
        let client = ProgressToken(NumberOrString::Number(0));
        let (first, mut first_progress) = routes.open(client.clone());
        let (second, mut second_progress) = routes.open(client.clone());
        assert_ne!(first.token(), second.token());
        routes.deliver(ProgressNotificationParam::new(second.token(), 0.5));
        assert!(first_progress.try_recv().is_err());
        let got = second_progress.try_recv().unwrap();
        assert_eq!(got.progress_token, client);
        assert_eq!(got.progress, 0.5);
        let token = first.token();
        drop(first);
        routes.deliver(ProgressNotificationParam::new(token, 1.0));
        assert!(first_progress.try_recv().is_err());
    }
}
