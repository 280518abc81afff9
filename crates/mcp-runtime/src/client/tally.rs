//! The log lines a connection has read off the wire, counted in the order messages arrive.
//!
//! rmcp hands each notification to a task of its own, so a log line the server wrote before
//! an answer may reach the host after the answer. The transport is the one place where the
//! order is still the server's: [`Tallied`] counts the log lines as they are received, so
//! that once an answer is in, whoever passes the lines on (the gateway) knows how many came
//! before it and can wait for them. A stdio connection's own reader (see `own`) counts the
//! same way after the opening.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// How many `notifications/message` a connection has received, less those dropped before
/// reaching the host (its event queue was full). Cheap to clone (shared).
#[derive(Clone, Default, Debug)]
pub(crate) struct LogTally(Arc<AtomicU64>);

impl LogTally {
    /// Log lines received so far and handed on (or still on their way).
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// A line received earlier was dropped: it will never reach the host.
    pub(crate) fn dropped(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    /// Count `message` if it is a log line (`notifications/message`).
    pub(crate) fn count(&self, message: &RxJsonRpcMessage<RoleClient>) {
        if let JsonRpcMessage::Notification(notification) = message
            && matches!(
                notification.notification,
                ServerNotification::LoggingMessageNotification(_)
            )
        {
            self.0.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// A transport wrapper that counts the log lines it receives into a [`LogTally`].
pub(crate) struct Tallied<T> {
    inner: T,
    tally: LogTally,
}

impl<T> Tallied<T> {
    pub(crate) fn new(inner: T, tally: LogTally) -> Self {
        Tallied { inner, tally }
    }

    /// The wrapped transport (a stdio connection's reader counts on its own after the
    /// opening, see `own`).
    pub(crate) fn into_inner(self) -> T {
        self.inner
    }
}

impl<T> Transport<RoleClient> for Tallied<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let tally = &self.tally;
        let received = self.inner.receive();
        async move {
            let message = received.await;
            if let Some(message) = &message {
                tally.count(message);
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_log_lines_are_counted() {
        let tally = LogTally::default();
        let line: RxJsonRpcMessage<RoleClient> = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x"}
        }))
        .unwrap();
        let answer: RxJsonRpcMessage<RoleClient> =
            serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
                .unwrap();
        tally.count(&line);
        tally.count(&answer);
        tally.count(&line);
        assert_eq!(tally.get(), 2);
    }
}
