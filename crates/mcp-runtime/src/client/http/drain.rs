//! Answers still on their way when a streamable HTTP session expires.
//!
//! A server that expires a session (a 404 for a request that names it) may still answer the
//! requests the session took before: their answers come on their own response streams. rmcp
//! opens the new session once the requests that found the session gone have come back, and
//! then drops every stream of the old one, failing the calls still waiting on them ("session
//! was re-initialized before the response arrived") although their answers were coming. Those
//! calls may have run, so they cannot be sent again.
//!
//! So the transport counts the requests in flight and the response streams open on each session
//! ([`OpenStreams`]), and a 404 is handed to rmcp only once those of its session have ended, or
//! after [`DRAIN_BOUND`]: the answers arrive first, and only what is still unanswered then is
//! lost.
//! The request that got the 404 never reached the server and is sent again on the new
//! session, as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt as _;
use tokio::sync::Notify;

use super::sse::Events;

/// How long a request that found its session expired waits for that session's answers still
/// on their way. Bounded, so that a call that never ends holds up the others for this long
/// at most (it then fails as a call that may have run).
pub(crate) const DRAIN_BOUND: Duration = Duration::from_secs(10);

/// Response streams open per session, shared by the clones of one transport's HTTP client.
#[derive(Clone, Default)]
pub(crate) struct OpenStreams(Arc<Inner>);

#[derive(Default)]
struct Inner {
    open: Mutex<HashMap<Arc<str>, usize>>,
    /// Told whenever a stream ends.
    ended: Notify,
}

impl OpenStreams {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, usize>> {
        self.0.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request sent on `session`, counted as open until the guard is dropped (or handed to
    /// [`track_with`](Self::track_with) with the request's response stream). Counted from the
    /// moment it is sent: a request the server took may not have its response stream yet when
    /// another request of the session finds it expired.
    pub(crate) fn open(&self, session: Arc<str>) -> Open {
        *self.lock().entry(session.clone()).or_default() += 1;
        Open {
            streams: self.clone(),
            session,
        }
    }

    /// `events`, counted as open on `session` until it ends or is dropped.
    pub(crate) fn track(&self, session: Arc<str>, events: Events) -> Events {
        let open = self.open(session);
        self.track_with(open, events)
    }

    /// `events`, counted under `open` until it ends or is dropped.
    pub(crate) fn track_with(&self, open: Open, events: Events) -> Events {
        events
            .map(move |event| {
                let _open = &open;
                event
            })
            .boxed()
    }

    /// Until no response stream of `session` is open, or `bound` has passed.
    pub(crate) async fn settled(&self, session: &str, bound: Duration) {
        let drained = async {
            loop {
                let ended = self.0.ended.notified();
                if !self.lock().contains_key(session) {
                    return;
                }
                ended.await;
            }
        };
        if tokio::time::timeout(bound, drained).await.is_err() {
            tracing::debug!("answers of an expired session still missing after {bound:?}");
        }
    }
}

/// One request or response stream open on a session; ends when dropped.
pub(crate) struct Open {
    streams: OpenStreams,
    session: Arc<str>,
}

impl Drop for Open {
    fn drop(&mut self) {
        {
            let mut open = self.streams.lock();
            if let Some(count) = open.get_mut(&self.session) {
                *count -= 1;
                if *count == 0 {
                    open.remove(&self.session);
                }
            }
        }
        self.streams.0.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endless() -> Events {
        futures::stream::pending().boxed()
    }

    #[tokio::test]
    async fn a_session_settles_once_its_streams_end() {
        let streams = OpenStreams::default();
        let session: Arc<str> = Arc::from("s");
        let first = streams.track(session.clone(), endless());
        let second = streams.track(session.clone(), endless());
        let other = streams.track(Arc::from("t"), endless());
        let waiting = tokio::spawn({
            let streams = streams.clone();
            async move { streams.settled("s", Duration::from_secs(60)).await }
        });
        drop(first);
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "one stream of the session is still open"
        );
        drop(second);
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("settled once the streams ended")
            .unwrap();
        // Another session's stream does not hold it up, and a session with none settles at
        // once.
        streams.settled("s", Duration::from_secs(60)).await;
        drop(other);
        streams.settled("t", Duration::from_secs(60)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_never_ends_is_waited_for_within_the_bound() {
        let streams = OpenStreams::default();
        let _stuck = streams.track(Arc::from("s"), endless());
        streams.settled("s", DRAIN_BOUND).await;
    }
}
