//! The stdio transport: newline-delimited JSON-RPC over a server's stdin and stdout.
//!
//! It replaces rmcp's `AsyncRwTransport` for our client so that each received line is parsed
//! once, by the [`Decoder`] that knows what every request in flight expects, and so that a
//! connection holds little memory while idle: one read buffer that starts small, grows for a
//! long line and shrinks back once the line is consumed. Everything else follows rmcp's
//! transport: a line is at most [`MAX_LINE`] bytes (a longer one is dropped and the connection
//! goes on), a byte order mark and a carriage return are ignored, text that is not JSON is
//! skipped, and well-formed JSON of the wrong shape is answered with "Invalid request".
//! Answers to the client's direct requests are taken out first (see [`Direct`]). rmcp reads it
//! during the opening; the connection's own reader afterwards (see `own`).

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ErrorData};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

use super::decode::{Decoded, Decoder};
use super::direct::{Direct, SharedWriter};
use super::raw::RawResults;

/// The longest line accepted (rmcp's bound for stdio and for an SSE event alike).
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

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
        }
    }

    /// The direct request path over this transport's pipes.
    pub(crate) fn direct(&self) -> Arc<Direct> {
        self.direct.clone()
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
                Ok(Line::TooLong) => {
                    tracing::error!(
                        max_line_length = MAX_LINE,
                        "a message from the server exceeded the longest line accepted; dropped"
                    );
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

/// A message as one line of JSON.
pub(crate) fn to_line(message: &ClientJsonRpcMessage) -> Result<Vec<u8>, std::io::Error> {
    let mut line = Vec::with_capacity(256);
    serde_json::to_writer(&mut line, message)?;
    line.push(b'\n');
    Ok(line)
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed")
}

/// What [`LineReader::next_line`] found.
enum Line<'a> {
    /// One line, without its `\n`; call [`LineReader::consume`] when done with it.
    Whole(&'a [u8]),
    /// A line longer than [`MAX_LINE`], dropped.
    TooLong,
    /// The stream ended (a last line without `\n` is dropped, as rmcp drops it).
    End,
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
    discarding: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(read: R) -> Self {
        LineReader {
            read,
            buf: Vec::new(),
            start: 0,
            searched: 0,
            returned: 0,
            discarding: false,
        }
    }

    /// The next line. Cancellation-safe: bytes are only appended to the buffer by completed
    /// reads, and a line is only dropped from it by [`consume`](Self::consume).
    async fn next_line(&mut self) -> std::io::Result<Line<'_>> {
        self.consume();
        loop {
            let unsearched = &self.buf[self.start + self.searched..];
            if let Some(at) = memchr::memchr(b'\n', unsearched) {
                let end = self.start + self.searched + at;
                if self.discarding {
                    self.discarding = false;
                    self.start = end + 1;
                    self.searched = 0;
                    continue;
                }
                if end - self.start > MAX_LINE {
                    self.start = end + 1;
                    self.searched = 0;
                    return Ok(Line::TooLong);
                }
                self.returned = end + 1 - self.start;
                return Ok(Line::Whole(&self.buf[self.start..end]));
            }
            self.searched = self.buf.len() - self.start;
            if self.searched > MAX_LINE {
                // Drop what is buffered and the rest of the line as it comes.
                self.buf.clear();
                self.start = 0;
                self.searched = 0;
                if !self.discarding {
                    self.discarding = true;
                    return Ok(Line::TooLong);
                }
            } else if self.discarding && self.searched > 0 {
                self.buf.clear();
                self.start = 0;
                self.searched = 0;
            }
            if self.start > 0 && self.start == self.buf.len() {
                self.buf.clear();
                self.start = 0;
            } else if self.start > 0 && self.buf.capacity() - self.buf.len() < READ_CHUNK {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            self.buf.reserve(READ_CHUNK);
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
