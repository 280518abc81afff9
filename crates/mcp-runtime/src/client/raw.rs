//! Tool results exactly as the server sent them.
//!
//! rmcp parses every message into its own types, which keep only the fields it knows: a field
//! of a newer protocol revision (on the result or on a content block) would be gone before the
//! caller sees it. So each transport also hands the text of every message it receives to
//! [`RawResults::observe`], which keeps the answers to the `tools/call` requests in flight (and
//! nothing else), and the client builds its [`ToolOutput`](super::ToolOutput) from that text.
//! Requests are registered when they are sent ([`Expect`], a transport wrapper), so an answer
//! can never arrive before its registration.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, ReadBuf};

/// Tool calls in flight that one connection keeps track of at most; past it the oldest
/// registrations are dropped (their results then come from rmcp's parse, without unknown
/// fields). Only a call whose send failed inside rmcp is never taken back.
const MAX_PENDING: usize = 4096;

/// The longest stdio line kept for a tool result (rmcp refuses longer lines anyway).
const MAX_LINE: usize = 64 * 1024 * 1024;

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
    arrived: HashMap<RequestId, Vec<u8>>,
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
    fn expect(&self, id: &RequestId) {
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

    /// Look at one received message (its JSON text); keep it when it answers a request in
    /// flight.
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
        let mut inner = self.lock();
        if inner.pending.remove(&id) {
            inner.arrived.insert(id, message.to_vec());
            self.expecting.store(inner.pending.len(), Ordering::Relaxed);
        }
    }

    /// The result of request `id` as the server sent it, if it was kept. Forgets the request
    /// either way.
    pub(crate) fn take(&self, id: &RequestId) -> Option<Map<String, Value>> {
        let message = {
            let mut inner = self.lock();
            inner.pending.remove(id);
            self.expecting.store(inner.pending.len(), Ordering::Relaxed);
            inner.arrived.remove(id)?
        };
        match serde_json::from_slice::<Response>(&message) {
            Ok(response) => Some(response.result),
            Err(e) => {
                tracing::debug!("a tool result could not be re-read as sent: {e}");
                None
            }
        }
    }

    /// A [`Events`](super::sse::Events) stream whose messages are also observed.
    pub(crate) fn observe_events(&self, events: super::sse::Events) -> super::sse::Events {
        let raw = self.clone();
        events
            .inspect(move |event| {
                if let Ok(event) = event
                    && let Some(data) = &event.data
                {
                    raw.observe(data.as_bytes());
                }
            })
            .boxed()
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

/// A transport wrapper that registers every `tools/call` request as it is sent.
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
            && matches!(request.request, ClientRequest::CallToolRequest(_))
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

/// A stdio server's stdout, read through unchanged while each line that starts while a tool
/// call is in flight is also handed to [`RawResults::observe`].
pub(crate) struct ObservedLines<R> {
    inner: R,
    raw: RawResults,
    line: Vec<u8>,
    /// Bytes of the current line are being kept.
    keeping: bool,
    at_line_start: bool,
}

impl<R> ObservedLines<R> {
    pub(crate) fn new(inner: R, raw: RawResults) -> Self {
        ObservedLines {
            inner,
            raw,
            line: Vec::new(),
            keeping: false,
            at_line_start: true,
        }
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.at_line_start {
                self.keeping = self.raw.is_expecting();
                self.at_line_start = false;
            }
            let newline = bytes.iter().position(|b| *b == b'\n');
            let end = newline.map_or(bytes.len(), |i| i + 1);
            if self.keeping {
                if self.line.len() + end > MAX_LINE {
                    self.keeping = false;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(&bytes[..end]);
                }
            }
            if newline.is_some() {
                if self.keeping {
                    self.raw.observe(&self.line);
                }
                self.line.clear();
                self.at_line_start = true;
            }
            bytes = &bytes[end..];
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for ObservedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            this.scan(&buf.filled()[before..]);
        }
        polled
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

    #[tokio::test]
    async fn lines_split_across_reads_are_observed_whole() {
        use tokio::io::AsyncReadExt;
        let raw = RawResults::default();
        raw.expect(&RequestId::Number(1));
        let text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"é\"}],\"extra\":true}}\n";
        let (mut writer, reader) = tokio::io::duplex(8);
        let mut reader = ObservedLines::new(reader, raw.clone());
        let send = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            writer.write_all(text.as_bytes()).await.unwrap();
        });
        let mut read = vec![0; text.len()];
        reader.read_exact(&mut read).await.unwrap();
        send.await.unwrap();
        assert_eq!(read, text.as_bytes(), "passed through unchanged");
        let result = raw.take(&RequestId::Number(1)).unwrap();
        assert_eq!(result["extra"], true);
    }
}
