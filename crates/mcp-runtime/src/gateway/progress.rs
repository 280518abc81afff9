//! A backend's progress during a call, sent on to the gateway client that made the call under
//! the client's own progress token. Both ways a call runs use it: the handler's, and a call
//! whose backend asks the client questions meanwhile (see `input`).

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;

use crate::client::ProgressUpdate;

/// Sends a backend's progress to the client under the client's own token.
pub(crate) struct Forwarder {
    token: ProgressToken,
    peer: rmcp::Peer<RoleServer>,
    last: Option<f64>,
}

impl Forwarder {
    pub(crate) fn new(token: ProgressToken, context: &RequestContext<RoleServer>) -> Self {
        Forwarder {
            token,
            peer: context.peer.clone(),
            last: None,
        }
    }

    pub(crate) async fn send(&mut self, update: ProgressUpdate) {
        // rmcp handles each notification on a task of its own, so they may arrive out of
        // order; progress must increase, so a stale one is dropped rather than sent.
        if self.last.is_some_and(|last| update.progress <= last) {
            return;
        }
        self.last = Some(update.progress);
        let mut param = ProgressNotificationParam::new(self.token.clone(), update.progress);
        if let Some(total) = update.total {
            param = param.with_total(total);
        }
        if let Some(message) = update.message {
            param = param.with_message(message);
        }
        // Boxed: rmcp's send future (~1.3 KB) would otherwise sit in every call's future.
        if let Err(e) = Box::pin(self.peer.notify_progress(param)).await {
            tracing::debug!("gateway: progress not delivered: {e}");
        }
    }
}
