//! What a host asks a server to send it beyond answers: the level of its log messages
//! (`logging/setLevel`, or on a 2026-07-28 connection the level every request names) and
//! updates of resources (`resources/subscribe`, or on a 2026-07-28
//! connection the `subscriptions/listen` stream, see `listen`). Both arrive as
//! [`ClientEvent`](super::ClientEvent)s on [`ConnectOptions::events`](super::ConnectOptions).

// rmcp marks `logging/setLevel` and `resources/subscribe` deprecated because protocol
// 2026-07-28 drops them; the older revisions we speak still have them.
#![allow(deprecated)]

use rmcp::model::{
    ClientRequest, LoggingLevel, ServerResult, SetLevelRequest, SetLevelRequestParams,
    SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};

use std::sync::atomic::Ordering;

use super::{ClientError, Era, McpClient, listen};

/// The levels of `logging/setLevel`, least severe first.
pub(crate) const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The index of [`LOG_LEVEL`](super::era::LOG_LEVEL) in [`LOG_LEVELS`].
pub(crate) fn default_log_level() -> usize {
    LOG_LEVELS
        .iter()
        .position(|l| *l == super::era::LOG_LEVEL)
        .unwrap_or(1)
}

impl McpClient {
    /// The level the requests of a 2026-07-28 connection ask for.
    pub(crate) fn log_level(&self) -> &'static str {
        LOG_LEVELS
            .get(self.log_level.load(Ordering::Relaxed))
            .copied()
            .unwrap_or(super::era::LOG_LEVEL)
    }

    /// How many log lines (`notifications/message`) this connection has received, counted
    /// as they arrive: once an answer is in, every line the server sent before it is counted,
    /// though its [`ClientEvent::Log`](super::ClientEvent) may still be on its way. Lines
    /// dropped because the host fell behind are taken off again.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn log_lines_received(&self) -> u64 {
        self.handler.log_tally.get()
    }

    /// Whether the server declares the `logging` capability.
    pub fn offers_logging(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.logging.is_some())
    }

    /// Whether the server declares `resources.subscribe`.
    pub fn offers_resource_subscriptions(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| {
            info.capabilities
                .resources
                .as_ref()
                .and_then(|r| r.subscribe)
                .unwrap_or(false)
        })
    }

    /// Ask for log messages of `level` (`debug` … `emergency`) and above. A 2026-07-28
    /// connection has no such request: every later request names the level instead.
    pub async fn set_log_level(&self, level: &str) -> Result<(), ClientError> {
        let method = "logging/setLevel";
        let unknown = || self.protocol_error(method, format!("unknown log level `{level}`"));
        let rank = LOG_LEVELS
            .iter()
            .position(|l| *l == level)
            .ok_or_else(unknown)?;
        let level: LoggingLevel = serde_json::from_value(level.into()).map_err(|_| unknown())?;
        if self.opening.era == Era::Modern {
            self.log_level.store(rank, Ordering::Relaxed);
            return Ok(());
        }
        let request =
            ClientRequest::SetLevelRequest(SetLevelRequest::new(SetLevelRequestParams::new(level)));
        self.empty_request(request, method).await
    }

    /// Ask for `notifications/resources/updated` about `uri`: they arrive as
    /// [`ClientEvent::ResourceUpdated`](super::ClientEvent::ResourceUpdated).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let method = "resources/subscribe";
        if self.opening.era == Era::Modern {
            return self.listen_to(method, uri, true).await;
        }
        let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(
            SubscribeRequestParams::new(uri),
        ));
        self.empty_request(request, method).await
    }

    /// Stop the updates about `uri`.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let method = "resources/unsubscribe";
        if self.opening.era == Era::Modern {
            return self.listen_to(method, uri, false).await;
        }
        let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(
            UnsubscribeRequestParams::new(uri),
        ));
        self.empty_request(request, method).await
    }

    /// A request whose answer is `{}`.
    async fn empty_request(&self, request: ClientRequest, method: &str) -> Result<(), ClientError> {
        match self
            .request(request, method, self.config.request_timeout(), None)
            .await?
        {
            ServerResult::EmptyResult(_) => Ok(()),
            _ => Err(self.protocol_error(method, "unexpected response type")),
        }
    }

    /// Add `uri` to (or take it from) the resources of the `subscriptions/listen` stream: a
    /// new stream with the new set replaces the old one once the server acknowledged it.
    async fn listen_to(&self, method: &str, uri: &str, on: bool) -> Result<(), ClientError> {
        let mut listening = self.listening.lock().await;
        let mut resources = listening.resources.clone();
        let changed = if on {
            resources.insert(uri.to_owned())
        } else {
            resources.remove(uri)
        };
        if !changed {
            return Ok(());
        }
        super::first_answered(self.first_answer.clone()).await;
        let listener = listen::open(&self.peer, &self.handler, &resources)
            .await
            .map_err(|e| self.protocol_error(method, e))?;
        listening.listener = listener;
        listening.resources = resources;
        Ok(())
    }
}
