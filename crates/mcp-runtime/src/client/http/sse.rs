//! Server-sent events from an HTTP response body, with a bound on the size of one event.
//!
//! Both remote transports read SSE: streamable HTTP (POST responses and the GET listener) and
//! the legacy HTTP+SSE transport. The parser (`sse-stream`, the one rmcp uses) buffers an event
//! until its blank line, so a server that never ends an event would grow memory without limit;
//! the byte counter in front of it turns that into an error instead.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use sse_stream::{Error as SseError, Sse, SseStream};

use crate::client::raw::RawResults;

/// Largest SSE event accepted by default (the same as rmcp's: 16 MiB).
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A parsed event stream.
pub(crate) type Events = BoxStream<'static, Result<Sse, SseError>>;

/// `events`, with the data of every event also shown to `raw`, which keeps the results of the
/// tool calls in flight as the server sent them.
pub(crate) fn observed(events: Events, raw: &RawResults) -> Events {
    let raw = raw.clone();
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

/// An event grew past the limit.
#[derive(Debug, thiserror::Error)]
#[error("an SSE event exceeded {limit} bytes")]
pub(crate) struct EventTooLarge {
    /// The limit in bytes.
    pub limit: usize,
}

/// Parse `body` as `text/event-stream`, failing once one event exceeds `max_event_bytes`
/// (and then setting `overflowed`, when given).
pub(crate) fn events<S>(
    body: S,
    max_event_bytes: usize,
    overflowed: Option<Arc<AtomicBool>>,
) -> Events
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    let bounded = Bounded {
        inner: body.boxed(),
        limit: max_event_bytes,
        event_bytes: 0,
        at_line_start: true,
        after_cr: false,
        failed: false,
        overflowed,
    };
    SseStream::from_bytes_stream(bounded).boxed()
}

/// Counts the bytes of the event being received; a blank line (an event boundary in any of the
/// three line-ending styles SSE allows) resets the count.
struct Bounded {
    inner: BoxStream<'static, Result<Bytes, reqwest::Error>>,
    limit: usize,
    event_bytes: usize,
    at_line_start: bool,
    after_cr: bool,
    failed: bool,
    overflowed: Option<Arc<AtomicBool>>,
}

/// Errors of the byte stream under the parser.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error(transparent)]
    Read(#[from] reqwest::Error),
    #[error(transparent)]
    TooLarge(#[from] EventTooLarge),
}

impl Bounded {
    /// Advance the line state over `chunk`; `Err` once the current event is too large.
    fn advance(&mut self, chunk: &[u8]) -> Result<(), EventTooLarge> {
        for &byte in chunk {
            match byte {
                // The LF of a CRLF: the line already ended at the CR.
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.at_line_start {
                        self.event_bytes = 0;
                    }
                    self.at_line_start = true;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.after_cr = false;
                    self.at_line_start = false;
                    self.event_bytes += 1;
                    if self.event_bytes > self.limit {
                        return Err(EventTooLarge { limit: self.limit });
                    }
                }
            }
        }
        Ok(())
    }
}

impl Stream for Bounded {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match self.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(chunk))) => match self.advance(&chunk) {
                Ok(()) => Poll::Ready(Some(Ok(chunk))),
                Err(e) => {
                    self.failed = true;
                    tracing::warn!("dropped a server's event stream: {e}");
                    if let Some(overflowed) = &self.overflowed {
                        overflowed.store(true, Ordering::SeqCst);
                    }
                    Poll::Ready(Some(Err(e.into())))
                }
            },
            Poll::Ready(Some(Err(e))) => {
                self.failed = true;
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(limit: usize) -> Bounded {
        Bounded {
            inner: futures::stream::empty().boxed(),
            limit,
            event_bytes: 0,
            at_line_start: true,
            after_cr: false,
            failed: false,
            overflowed: None,
        }
    }

    #[test]
    fn blank_lines_reset_the_count_in_every_line_ending_style() {
        for boundary in ["\n\n", "\r\n\r\n", "\r\r"] {
            let mut bounded = counter(12);
            let event = format!("data: 123456{boundary}");
            for _ in 0..10 {
                assert!(bounded.advance(event.as_bytes()).is_ok(), "{boundary:?}");
            }
        }
    }

    #[test]
    fn an_event_split_across_lines_and_chunks_is_counted_whole() {
        let mut bounded = counter(12);
        assert!(bounded.advance(b"data: 1234\n").is_ok());
        assert!(bounded.advance(b"data").is_err());
    }

    #[tokio::test]
    async fn events_are_parsed_and_an_endless_event_fails() {
        let body = futures::stream::iter(vec![Ok(Bytes::from_static(
            b"event: endpoint\ndata: /m?s=1\n\ndata: x\n\n",
        ))]);
        let parsed: Vec<_> = events(body, 100, None).collect().await;
        assert_eq!(parsed.len(), 2);
        let first = parsed[0].as_ref().unwrap();
        assert_eq!(first.event.as_deref(), Some("endpoint"));
        assert_eq!(first.data.as_deref(), Some("/m?s=1"));

        let endless = futures::stream::iter(
            std::iter::repeat_with(|| Ok(Bytes::from_static(b"data: xxxxxxxx")))
                .take(100)
                .collect::<Vec<_>>(),
        );
        let overflowed = Arc::new(AtomicBool::new(false));
        let parsed: Vec<_> = events(endless, 64, Some(overflowed.clone()))
            .collect()
            .await;
        assert!(parsed.iter().any(Result::is_err));
        assert!(overflowed.load(Ordering::SeqCst));
    }

    /// Every event of `chunks` parsed with `limit`, or where it stopped with an error.
    fn parse_all(chunks: Vec<Vec<u8>>, limit: usize) -> (Vec<Sse>, bool) {
        let body = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, reqwest::Error>(Bytes::from(c))),
        );
        futures::executor::block_on(async {
            let mut stream = events(body, limit, None);
            let mut got = Vec::new();
            while let Some(item) = stream.next().await {
                match item {
                    Ok(event) => got.push(event),
                    Err(_) => return (got, true),
                }
            }
            (got, false)
        })
    }

    /// Event-stream text: fields, line endings of every style, blank lines, random bytes.
    fn sse_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop::collection::vec(
            prop_oneof![
                prop::sample::select(vec![
                    "data: ",
                    "data:",
                    "event: ",
                    "id: ",
                    "retry: ",
                    ": comment",
                    "\n",
                    "\r",
                    "\r\n",
                    "\n\n",
                    "data",
                    ":",
                    " ",
                    "{\"jsonrpc\":\"2.0\"}",
                    "\u{feff}",
                    "é",
                    "\0",
                ])
                .prop_map(|s| s.as_bytes().to_vec()),
                prop::collection::vec(any::<u8>(), 0..8),
                (0usize..200).prop_map(|n| vec![b'x'; n]),
            ],
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 1000,
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any bytes in any chunking: no panic, no event larger than the limit, and the same
        /// events whatever the chunk boundaries (up to an error).
        #[test]
        fn any_event_stream_parses_alike_in_any_chunking(
            bytes in sse_bytes(),
            cuts in proptest::collection::vec(0usize..400, 0..6),
            limit in 16usize..300,
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                chunks.push(bytes[from..cut].to_vec());
                from = cut;
            }
            let (whole, whole_failed) = parse_all(vec![bytes.clone()], limit);
            let (split, split_failed) = parse_all(chunks, limit);
            for event in whole.iter().chain(&split) {
                let size = event.data.as_ref().map_or(0, String::len);
                proptest::prop_assert!(size <= limit, "{size} > {limit}");
            }
            if !whole_failed && !split_failed {
                proptest::prop_assert_eq!(whole.len(), split.len());
                for (a, b) in whole.iter().zip(&split) {
                    proptest::prop_assert_eq!(&a.data, &b.data);
                    proptest::prop_assert_eq!(&a.event, &b.event);
                    proptest::prop_assert_eq!(&a.id, &b.id);
                }
            }
        }
    }
}
