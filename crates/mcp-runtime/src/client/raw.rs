//! Tool results exactly as the server sent them.
//!
//! rmcp parses every message into its own types, which keep only the fields it knows: a field
//! of a newer protocol revision (on the result or on a content block) would be gone before the
//! caller sees it. So the `result` of every answer to a `tools/call` request in flight is also
//! kept whole, as a JSON object, and the client builds its [`ToolOutput`](super::ToolOutput)
//! from that. Over stdio the decoder reads it in its one pass over the line
//! ([`RawResults::arrived`]); the HTTP transports hand the text of every message they receive
//! to [`RawResults::observe`]. Requests are registered when they are sent (by the decoder, or
//! by [`Expect`], a transport wrapper), so an answer can never arrive before its registration.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

/// Tool calls in flight that one connection keeps track of at most; past it the oldest
/// registrations are dropped (their results then come from rmcp's parse, without unknown
/// fields). Only a call whose send failed inside rmcp is never taken back.
const MAX_PENDING: usize = 4096;

/// The answers to `tools/call` requests in flight, as received. Cheap to clone (shared).
#[derive(Clone, Default)]
pub(crate) struct RawResults {
    inner: Arc<Mutex<Inner>>,
    /// `pending.len()`, readable without the lock (the stdio reader checks it per line).
    expecting: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Inner {
    pending: HashSet<RequestId>,
    arrived: HashMap<RequestId, Map<String, Value>>,
}

/// The two fields of a JSON-RPC message that say whether it answers a request we wait for.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    result: Option<IgnoredAny>,
}

/// A response's result, taken whole.
#[derive(Deserialize)]
struct Response {
    result: Map<String, Value>,
}

impl RawResults {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep the answer to request `id` when it arrives.
    pub(crate) fn expect(&self, id: &RequestId) {
        let mut inner = self.lock();
        if inner.pending.len() >= MAX_PENDING {
            inner.pending.clear();
            inner.arrived.clear();
        }
        inner.pending.insert(id.clone());
        self.expecting.store(inner.pending.len(), Ordering::Relaxed);
    }

    /// Whether any answer is awaited (a cheap check before looking at a message).
    pub(crate) fn is_expecting(&self) -> bool {
        self.expecting.load(Ordering::Relaxed) > 0
    }

    /// Look at one received message (its JSON text); keep its result when it answers a
    /// request in flight.
    pub(crate) fn observe(&self, message: &[u8]) {
        if !self.is_expecting() {
            return;
        }
        let Ok(Head {
            id: Some(id),
            result: Some(_),
        }) = serde_json::from_slice::<Head>(message)
        else {
            return;
        };
        if !self.lock().pending.contains(&id) {
            return;
        }
        match serde_json::from_slice::<Response>(message) {
            Ok(response) => self.arrived(&id, response.result),
            Err(e) => tracing::debug!("a tool result could not be read as sent: {e}"),
        }
    }

    /// The result of request `id`, as sent, has arrived: keep it if the request is in flight.
    pub(crate) fn arrived(&self, id: &RequestId, result: Map<String, Value>) {
        let mut inner = self.lock();
        if inner.pending.remove(id) {
            inner.arrived.insert(id.clone(), result);
            self.expecting.store(inner.pending.len(), Ordering::Relaxed);
        }
    }

    /// The result of request `id` as the server sent it, if it was kept. Forgets the request
    /// either way.
    pub(crate) fn take(&self, id: &RequestId) -> Option<Map<String, Value>> {
        let mut inner = self.lock();
        inner.pending.remove(id);
        self.expecting.store(inner.pending.len(), Ordering::Relaxed);
        inner.arrived.remove(id)
    }
}

/// Forgets a request when the call that made it ends, however it ends (a result that
/// arrives later is then not kept).
pub(crate) struct Forget<'a> {
    pub(crate) raw: &'a RawResults,
    pub(crate) id: RequestId,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let mut inner = self.raw.lock();
        inner.pending.remove(&self.id);
        inner.arrived.remove(&self.id);
        self.raw
            .expecting
            .store(inner.pending.len(), Ordering::Relaxed);
    }
}

/// A transport wrapper that registers every `tools/call` request, and every request of a
/// method rmcp does not model, as it is sent.
pub(crate) struct Expect<T> {
    inner: T,
    raw: RawResults,
}

impl<T> Expect<T> {
    pub(crate) fn new(inner: T, raw: RawResults) -> Self {
        Expect { inner, raw }
    }
}

impl<T> Transport<RoleClient> for Expect<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(request) = &item
            && matches!(
                request.request,
                ClientRequest::CallToolRequest(_) | ClientRequest::CustomRequest(_)
            )
        {
            self.raw.expect(&request.id);
        }
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_awaited_answers_are_kept_and_then_forgotten() {
        let raw = RawResults::default();
        let id = RequestId::Number(7);
        raw.observe(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#);
        assert!(raw.take(&id).is_none(), "not awaited: not kept");
        raw.expect(&id);
        raw.observe(br#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
        raw.observe(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"x-new":1}}"#);
        let result = raw.take(&id).unwrap();
        assert_eq!(result["x-new"], 1);
        assert!(!raw.is_expecting());
        assert!(raw.take(&id).is_none());
    }
}
