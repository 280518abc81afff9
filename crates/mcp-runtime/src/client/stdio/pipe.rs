//! The stdio transport: newline-delimited JSON-RPC over a server's stdin and stdout.
//!
//! It replaces rmcp's `AsyncRwTransport` for our client so that each received line is parsed
//! once, by the [`Decoder`] that knows what every request in flight expects, and so that a
//! connection holds little memory while idle: one read buffer that starts small, grows for a
//! long line and shrinks back once the line is consumed. Everything else follows rmcp's
//! transport: a line is at most [`MAX_LINE`] bytes, a byte order mark and a carriage return are
//! ignored, text that is not JSON is skipped, and well-formed JSON of the wrong shape is
//! answered with "Invalid request".
//!
//! A longer line is dropped as it comes, and the connection goes on after it; but the request
//! it answers fails at once, with an error naming the limit, rather than waiting for its
//! timeout (see `overlong`: a direct request through [`Direct::fail`], one of rmcp's during the
//! opening through an error answer made up for it). A line that runs on past
//! [`ENDLESS_LINE`] ends the connection, failing every request waiting on it.
//! Answers to the client's direct requests are taken out first (see [`Direct`]). rmcp reads it
//! during the opening; the connection's own reader afterwards (see `own`).

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

use super::answer::FIRST_ID;
use super::decode::{Decoded, Decoder};
use super::direct::{Direct, SharedWriter, to_line};
use super::overlong::{self, ENDLESS_LINE, Head, MAX_LINE, TAIL};
use crate::client::raw::RawResults;

/// Free space the read buffer offers each read; also its size while idle.
const READ_CHUNK: usize = 4 * 1024;

/// A read buffer grown past this by a long line is given back once the line is consumed.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Our client's end of a stdio server's pipes.
pub(crate) struct PipeTransport<R> {
    lines: LineReader<R>,
    /// Taken (and so closed: stdin EOF) by `close`.
    write: SharedWriter,
    /// The client's direct requests: their answers are taken out of the stream here.
    direct: Arc<Direct>,
    decoder: Decoder,
    /// An "Invalid request" answer still to be written (kept across a cancelled receive).
    invalid_pending: bool,
    /// The line being dropped is an answer whose id its start did not show: look at its end.
    id_at_end: bool,
    /// rmcp's requests whose answers a line that never ended took with it: each is answered
    /// with an error before the stream ends.
    unanswered: Vec<RequestId>,
}

impl<R> PipeTransport<R>
where
    R: AsyncRead + Unpin + Send,
{
    /// Talk over `read` (the server's stdout) and `write` (its stdin); `tools/call` results
    /// are kept as sent in `raw`.
    pub(crate) fn new<W>(read: R, write: W, raw: RawResults) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let write: SharedWriter = Arc::new(Mutex::new(Some(Box::new(write))));
        PipeTransport {
            lines: LineReader::new(read),
            direct: Arc::new(Direct::new(write.clone())),
            write,
            decoder: Decoder::new(raw),
            invalid_pending: false,
            id_at_end: false,
            unanswered: Vec::new(),
        }
    }

    /// The direct request path over this transport's pipes.
    pub(crate) fn direct(&self) -> Arc<Direct> {
        self.direct.clone()
    }

    /// Fail request `id`, whose answer was a line past the limit: a direct request through the
    /// direct path; one of rmcp's (the opening) by the error returned here for rmcp to read.
    fn unreadable_answer(
        &mut self,
        id: RequestId,
        why: &str,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        if let RequestId::Number(number) = &id
            && let Ok(number) = u64::try_from(*number)
            && number >= FIRST_ID
        {
            self.direct.fail(number, why);
            return None;
        }
        // Only for a request rmcp is waiting for: an answer to nothing would only be dropped.
        self.decoder.forget(&id).then(|| unreadable(id, why))
    }

    /// Write "Invalid request" (no id: the message had none we could read).
    async fn answer_invalid(&mut self) -> Result<(), std::io::Error> {
        let answer =
            ClientJsonRpcMessage::error(ErrorData::invalid_request("Invalid request", None), None);
        let line = to_line(&answer)?;
        let mut write = self.write.lock().await;
        let Some(write) = write.as_mut() else {
            return Err(closed());
        };
        write.write_all(&line).await?;
        write.flush().await
    }
}

impl<R> Transport<RoleClient> for PipeTransport<R>
where
    R: AsyncRead + Unpin + Send,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Registered now, before a byte is written: the answer cannot beat it.
        self.decoder.sent(&item);
        let line = to_line(&item);
        let write = self.write.clone();
        async move {
            let line = line?;
            let mut write = write.lock().await;
            let Some(write) = write.as_mut() else {
                return Err(closed());
            };
            write.write_all(&line).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if self.direct.is_closed() && self.lines.endless {
                // Ended by a line that never ended: rmcp's requests get their errors, then
                // the stream ends.
                let id = self.unanswered.pop()?;
                return Some(unreadable(id, &overlong::endless()));
            }
            if self.invalid_pending {
                if let Err(e) = self.answer_invalid().await {
                    tracing::debug!("cannot answer an invalid message: {e}");
                    return None;
                }
                self.invalid_pending = false;
            }
            // Cancellation-safe: a line read only partly stays in the buffer for the next call.
            let line = match self.lines.next_line().await {
                Ok(Line::Whole(line)) => line,
                Ok(Line::TooLong(head)) => {
                    tracing::error!(
                        max_line_length = MAX_LINE,
                        "a message from the server exceeded the longest line accepted; dropped"
                    );
                    match overlong::read_head(head) {
                        Head::Answer(Some(id)) => {
                            if let Some(answer) = self.unreadable_answer(id, &overlong::too_long())
                            {
                                return Some(answer);
                            }
                        }
                        Head::Answer(None) => self.id_at_end = true,
                        Head::Other => {}
                    }
                    continue;
                }
                Ok(Line::TooLongEnded(tail)) => {
                    if std::mem::take(&mut self.id_at_end)
                        && let Some(id) = overlong::id_at_end(tail.bytes())
                        && let Some(answer) = self.unreadable_answer(id, &overlong::too_long())
                    {
                        return Some(answer);
                    }
                    continue;
                }
                Ok(Line::Endless) => {
                    tracing::error!(
                        max_line_length = MAX_LINE,
                        "the server wrote a line of more than {ENDLESS_LINE} bytes without \
                         ending it; the connection is closed"
                    );
                    self.direct.fail_all(&overlong::endless());
                    self.unanswered = self.decoder.take_pending();
                    continue;
                }
                Ok(Line::End) => {
                    self.direct.close();
                    return None;
                }
                Err(e) => {
                    tracing::error!("error reading from the server: {e}");
                    self.direct.close();
                    return None;
                }
            };
            if self.direct.deliver(line) {
                self.lines.consume();
                continue;
            }
            let decoded = self.decoder.decode(line);
            self.lines.consume();
            match decoded {
                Decoded::Message(message) => return Some(message),
                Decoded::Skip => {}
                Decoded::Invalid => self.invalid_pending = true,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.direct.close();
        drop(self.write.lock().await.take());
        Ok(())
    }
}

impl<R> Drop for PipeTransport<R> {
    /// Nothing reads the server's answers any more: direct requests waiting for one end now,
    /// and the server's stdin is closed, as dropping the transport always did (the client's
    /// direct path shares the writer, and must not keep it open: a server that waits for EOF
    /// would never see it).
    fn drop(&mut self) {
        self.direct.close();
        match self.write.try_lock() {
            Ok(mut write) => drop(write.take()),
            // A line is being written: close once it is out.
            Err(_) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let write = self.write.clone();
                    runtime.spawn(async move { drop(write.lock().await.take()) });
                }
            }
        }
    }
}

/// The error answer, made up for rmcp, of its request `id` whose answer could not be read.
fn unreadable(id: RequestId, why: &str) -> RxJsonRpcMessage<RoleClient> {
    JsonRpcMessage::error(
        ErrorData::new(ErrorCode::PARSE_ERROR, why.to_owned(), None),
        Some(id),
    )
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed")
}

/// What [`LineReader::next_line`] found.
enum Line<'a> {
    /// One line, without its `\n`; call [`LineReader::consume`] when done with it.
    Whole(&'a [u8]),
    /// The start of a line longer than [`MAX_LINE`] (at least that much of it); the line is
    /// dropped, its rest as it comes.
    TooLong(&'a [u8]),
    /// The line last reported [`Line::TooLong`] has ended; its last bytes.
    TooLongEnded(Tail),
    /// The line last reported [`Line::TooLong`] ran on past [`ENDLESS_LINE`] without ending:
    /// where the next message starts cannot be known. Nothing more is read.
    Endless,
    /// The stream ended (a last line without `\n` is dropped, as rmcp drops it).
    End,
}

/// The last bytes (at most [`TAIL`]) of a line being dropped, without its line break.
#[derive(Clone, Copy)]
struct Tail {
    bytes: [u8; TAIL],
    len: usize,
}

impl Tail {
    const EMPTY: Tail = Tail {
        bytes: [0; TAIL],
        len: 0,
    };

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Keep the last bytes of what was kept and `more`.
    fn push(&mut self, more: &[u8]) {
        if more.len() >= TAIL {
            self.bytes.copy_from_slice(&more[more.len() - TAIL..]);
            self.len = TAIL;
            return;
        }
        let keep = self.len.min(TAIL - more.len());
        self.bytes.copy_within(self.len - keep..self.len, 0);
        self.bytes[keep..keep + more.len()].copy_from_slice(more);
        self.len = keep + more.len();
    }
}

/// A line past [`MAX_LINE`], being dropped.
struct Dropping {
    /// Bytes of it seen so far.
    seen: usize,
    tail: Tail,
}

/// Lines from a byte stream through one buffer, bounded by [`MAX_LINE`].
struct LineReader<R> {
    read: R,
    buf: Vec<u8>,
    /// Start of the current line in `buf`.
    start: usize,
    /// How far past `start` has been searched for `\n` already.
    searched: usize,
    /// Length (with its `\n`) of the line last returned, consumed by `consume`.
    returned: usize,
    /// Dropping the rest of a line that was too long.
    dropping: Option<Dropping>,
    /// A line ran on past [`ENDLESS_LINE`]: nothing more is read.
    endless: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(read: R) -> Self {
        LineReader {
            read,
            buf: Vec::new(),
            start: 0,
            searched: 0,
            returned: 0,
            dropping: None,
            endless: false,
        }
    }

    /// The next line. Cancellation-safe: bytes are only appended to the buffer by completed
    /// reads, and a line is only dropped from it by [`consume`](Self::consume) or once it has
    /// been reported too long.
    async fn next_line(&mut self) -> std::io::Result<Line<'_>> {
        self.consume();
        if self.endless {
            return Ok(Line::Endless);
        }
        loop {
            if let Some(dropping) = &mut self.dropping {
                let unseen = &self.buf[self.start..];
                if let Some(at) = memchr::memchr(b'\n', unseen) {
                    dropping.tail.push(&unseen[..at]);
                    let tail = dropping.tail;
                    self.dropping = None;
                    self.start += at + 1;
                    self.searched = 0;
                    return Ok(Line::TooLongEnded(tail));
                }
                dropping.seen += unseen.len();
                dropping.tail.push(unseen);
                let endless = dropping.seen > ENDLESS_LINE;
                self.buf.clear();
                self.start = 0;
                self.searched = 0;
                if self.buf.capacity() > KEEP_CAPACITY {
                    self.buf = Vec::new();
                }
                if endless {
                    self.endless = true;
                    self.dropping = None;
                    return Ok(Line::Endless);
                }
            } else {
                let unsearched = &self.buf[self.start + self.searched..];
                if let Some(at) = memchr::memchr(b'\n', unsearched) {
                    let end = self.start + self.searched + at;
                    if end - self.start > MAX_LINE {
                        // Whole in the buffer, and still too long: dropped like one that is
                        // not, whose end the next call finds.
                        self.searched = 0;
                        self.dropping = Some(Dropping {
                            seen: 0,
                            tail: Tail::EMPTY,
                        });
                        return Ok(Line::TooLong(&self.buf[self.start..end]));
                    }
                    self.returned = end + 1 - self.start;
                    return Ok(Line::Whole(&self.buf[self.start..end]));
                }
                self.searched = self.buf.len() - self.start;
                if self.searched > MAX_LINE {
                    // Reported with what is buffered, which the next call drops.
                    self.searched = 0;
                    self.dropping = Some(Dropping {
                        seen: 0,
                        tail: Tail::EMPTY,
                    });
                    return Ok(Line::TooLong(&self.buf[self.start..]));
                }
                if self.start > 0 && self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                } else if self.start > 0 && self.buf.capacity() - self.buf.len() < READ_CHUNK {
                    self.buf.drain(..self.start);
                    self.start = 0;
                }
            }
            // A line being dropped is read in larger pieces: nothing of it is kept.
            let chunk = if self.dropping.is_some() {
                KEEP_CAPACITY
            } else {
                READ_CHUNK
            };
            self.buf.reserve(chunk);
            if self.read.read_buf(&mut self.buf).await? == 0 {
                return Ok(Line::End);
            }
        }
    }

    /// Drop the line last returned from the buffer; give back the memory of a long one.
    fn consume(&mut self) {
        if self.returned == 0 {
            return;
        }
        self.start += self.returned;
        self.searched = 0;
        self.returned = 0;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > KEEP_CAPACITY {
                self.buf = Vec::new();
            }
        }
    }
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
