//! Resumable event streams of a 2025-11-25 session over HTTP (SSE polling).
//!
//! Every event stream that answers a session's POST opens with a priming event (an event id,
//! a `retry:` interval and empty data) and gives each message an id `<stream>-<index>`. The
//! server may close the connection before the answer (a tool does so with
//! [`Exchange::close_stream`](super::exchange::Exchange::close_stream)); what the request
//! sends afterwards is kept, and a GET with `Last-Event-ID` replays everything after that id
//! and then goes on live until the answer.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

/// The reconnection interval announced by every priming event.
pub(super) const RETRY: Duration = Duration::from_millis(500);

/// Streams of one session kept for resumption; older ones are forgotten.
const KEPT_STREAMS: usize = 32;

/// Where a stream's events go while a connection carries them.
pub(super) type Frames = mpsc::UnboundedSender<Bytes>;

/// One resumable stream: every event it had, and the connection carrying it now.
pub(super) struct Stream {
    id: u64,
    state: Mutex<State>,
}

struct State {
    events: Vec<Bytes>,
    live: Option<Frames>,
    /// The answer went out: nothing more comes.
    done: bool,
}

impl Stream {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn event_id(&self, index: usize) -> String {
        format!("{}-{index}", self.id)
    }

    /// Sends `message` on the connection, if one is open, and keeps it for a resumption.
    pub(super) fn push(&self, message: &Value) {
        let mut state = self.lock();
        let id = self.event_id(state.events.len());
        let event = Bytes::from(format!("id: {id}\nevent: message\ndata: {message}\n\n"));
        if let Some(live) = &state.live
            && live.send(event.clone()).is_err()
        {
            state.live = None;
        }
        state.events.push(event);
    }

    /// Closes the connection carrying the stream (the client may resume it).
    pub(super) fn close_connection(&self) {
        self.lock().live = None;
    }

    /// The answer went out: the connection ends after it.
    pub(super) fn finish(&self) {
        let mut state = self.lock();
        state.done = true;
        state.live = None;
    }

    /// Carries on over `frames`: every event after `index` first, then what comes.
    fn resume(&self, index: usize, frames: Frames) {
        let mut state = self.lock();
        for event in state.events.iter().skip(index + 1) {
            let _ = frames.send(event.clone());
        }
        // A finished stream ends with its replay (the frames are dropped).
        state.live = (!state.done).then_some(frames);
    }
}

/// The resumable streams of one session.
#[derive(Default)]
pub(super) struct Streams {
    next: AtomicU64,
    kept: Mutex<VecDeque<Arc<Stream>>>,
}

impl Streams {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Arc<Stream>>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a stream carried by `frames`, starting with its priming event.
    pub(super) fn open(&self, frames: Frames) -> Arc<Stream> {
        let stream = Arc::new(Stream {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(State {
                events: Vec::new(),
                live: Some(frames),
                done: false,
            }),
        });
        {
            let mut state = stream.lock();
            let priming = Bytes::from(format!(
                "id: {}\nretry: {}\ndata: \n\n",
                stream.event_id(0),
                RETRY.as_millis()
            ));
            if let Some(live) = &state.live {
                let _ = live.send(priming.clone());
            }
            state.events.push(priming);
        }
        let mut kept = self.lock();
        if kept.len() >= KEPT_STREAMS {
            kept.pop_front();
        }
        kept.push_back(stream.clone());
        stream
    }

    /// Resumes the stream `last_event_id` belongs to over `frames`; false when there is no
    /// such stream (any more).
    pub(super) fn resume(&self, last_event_id: &str, frames: Frames) -> bool {
        let Some((stream, index)) = last_event_id.trim().split_once('-') else {
            return false;
        };
        let (Ok(stream), Ok(index)) = (stream.parse::<u64>(), index.parse::<usize>()) else {
            return false;
        };
        let found = self.lock().iter().find(|s| s.id == stream).cloned();
        match found {
            Some(found) => {
                found.resume(index, frames);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(rx: &mut mpsc::UnboundedReceiver<Bytes>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(frame) = rx.try_recv() {
            out.push(String::from_utf8_lossy(&frame).into_owned());
        }
        out
    }

    #[test]
    fn a_closed_stream_resumes_after_the_last_event_seen() {
        let streams = Streams::default();
        let (tx, mut first) = mpsc::unbounded_channel();
        let stream = streams.open(tx);
        let opened = drain(&mut first);
        assert_eq!(opened.len(), 1);
        assert!(opened[0].starts_with("id: 0-0\nretry: 500\ndata: \n"));
        stream.close_connection();
        stream.push(&serde_json::json!({"n": 1}));
        assert!(first.try_recv().is_err(), "closed: nothing more");
        let (tx, mut second) = mpsc::unbounded_channel();
        assert!(streams.resume("0-0", tx));
        stream.push(&serde_json::json!({"n": 2}));
        stream.finish();
        let resumed = drain(&mut second);
        assert_eq!(resumed.len(), 2, "{resumed:?}");
        assert!(resumed[0].contains("id: 0-1") && resumed[0].contains(r#"{"n":1}"#));
        assert!(resumed[1].contains("id: 0-2"));
        assert!(!streams.resume("7-0", mpsc::unbounded_channel().0));
        assert!(!streams.resume("junk", mpsc::unbounded_channel().0));
    }
}
