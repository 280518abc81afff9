//! The mock's event store: every event of every streamable HTTP stream, kept in memory so that
//! a client can resume any stream with `Last-Event-ID`.
//!
//! rmcp's in-memory sessions forget a response stream as soon as they have sent its response,
//! so a stream cut before the client read the response (`--drop-stream`) could not be resumed
//! without this. A replay sends the stored events after the given one, then keeps following
//! the stream until its response has been sent, so a resumption made while the tool still
//! runs also gets the result.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use tokio::sync::Notify;

/// Events kept, all streams together; the oldest go first.
const CAPACITY: usize = 100_000;

/// An in-memory [`EventStore`]; clones share one log.
#[derive(Clone, Default)]
pub(crate) struct MemoryEvents {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    events: Mutex<Log>,
    /// Woken whenever an event is stored, for replays that follow a live stream.
    stored: Notify,
}

#[derive(Default)]
struct Log {
    /// Number of the next event (event ids are `e<number>`).
    next: u64,
    entries: VecDeque<Entry>,
}

struct Entry {
    number: u64,
    stream: String,
    event: ServerSseMessage,
}

impl Inner {
    /// The first event of `stream` numbered above `after`, if stored yet.
    fn next_after(&self, stream: &str, after: u64) -> Option<(u64, ServerSseMessage)> {
        let log = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        log.entries
            .iter()
            .find(|e| e.number > after && e.stream == stream)
            .map(|e| (e.number, e.event.clone()))
    }

    /// The stream of the event numbered `number`.
    fn stream_of(&self, number: u64) -> Option<String> {
        let log = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        log.entries
            .iter()
            .find(|e| e.number == number)
            .map(|e| e.stream.clone())
    }
}

fn parse_id(id: &str) -> Option<u64> {
    id.strip_prefix('e')?.parse().ok()
}

/// A response or error ends a request's stream.
fn is_final(event: &ServerSseMessage) -> bool {
    matches!(
        event.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}

#[async_trait::async_trait]
impl EventStore for MemoryEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, EventStoreError> {
        let id = {
            let mut log = self
                .inner
                .events
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let number = log.next;
            log.next += 1;
            if log.entries.len() >= CAPACITY {
                log.entries.pop_front();
            }
            let mut event = event.clone();
            event.event_id = Some(format!("e{number}"));
            log.entries.push_back(Entry {
                number,
                stream: stream_id.to_owned(),
                event,
            });
            format!("e{number}")
        };
        self.inner.stored.notify_waiters();
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let after =
            parse_id(last_event_id).ok_or_else(|| format!("unknown event id `{last_event_id}`"))?;
        let stream = self
            .inner
            .stream_of(after)
            .ok_or_else(|| format!("event `{last_event_id}` is no longer stored"))?;
        let replay = futures::stream::unfold(
            (self.inner.clone(), stream, after, false),
            |(store, stream, after, done)| async move {
                if done {
                    return None;
                }
                loop {
                    // Created before looking, so a wake-up in between is not missed. The client
                    // closing its GET drops this replay, which ends the wait.
                    let stored = store.stored.notified();
                    if let Some((number, event)) = store.next_after(&stream, after) {
                        let done = is_final(&event);
                        drop(stored);
                        return Some((event, (store, stream, number, done)));
                    }
                    stored.await;
                }
            },
        );
        Ok(Box::pin(replay))
    }
}
