//! The byte-stream front end's fast path for `tools/call`.
//!
//! rmcp's service reads every client line into its message enum (which tries each request
//! type in turn), runs the request on a task of its own and hands the answer back to its
//! service loop over a channel, which sends it from yet another task. For the request a
//! gateway mostly serves, that is most of what it adds to a call. So the client's stream is
//! read here first ([`FrontReader`]): a `tools/call` is recognised in one pass over the line
//! (`client_line`), run on a task of its own through the same handler rmcp would call (views,
//! discovery, questions, progress and log lines all behave the same; straight into it when the
//! request passes the checks rmcp's dispatch makes first, through that dispatch otherwise),
//! and its answer is written straight to the client's stream. A `notifications/cancelled`
//! naming such a call cancels it here. Every other line, and any line this parse does not
//! accept (malformed, oversized, of the wrong types), goes on to rmcp unchanged, in order, and
//! gets the answer or error it always got.
//!
//! Both write to the client's stream through one [`Output`], a whole line at a time, so rmcp's
//! messages and the fast answers never interleave and keep the order they were written in: a
//! log line or a progress notification the handler sent before its answer goes out before it.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, ServerHandler, Service as _};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::client_line::{Call, FastLine, LineReader};
use crate::client::ToolOutput;
use crate::client::model::tool_request::ToolRequest;
use crate::gateway::Gateway;
use crate::gateway::answer::Answered;
use crate::gateway::input::Asker;

/// Longest line the fast path looks at; a longer one goes to rmcp as it comes in (rmcp has
/// its own bound, past which it drops the line).
const FAST_LINE_MAX: usize = 1024 * 1024;

/// Bytes waiting for the client to read before writers wait: a client that stops reading
/// holds up its own answers, not the gateway's memory.
const HIGH_WATER: usize = 4 * 1024 * 1024;

/// How long fast calls still running when the client closes its stream may take to answer,
/// as rmcp allows its own handlers.
const DRAIN_BOUND: Duration = Duration::from_secs(5);

/// How long the answers written last may take to reach the client once serving is over.
const FLUSH_BOUND: Duration = Duration::from_secs(5);

type InFlight = HashMap<RequestId, (u64, CancellationToken), foldhash::fast::RandomState>;

/// The fast path of one client's session.
pub(crate) struct Front<W> {
    /// The session's handler (the same one rmcp serves).
    gateway: Gateway,
    /// The session, once rmcp has opened it; until then every line goes to rmcp.
    peer: OnceLock<Peer<RoleServer>>,
    output: Arc<Output<W>>,
    /// Fast calls in flight, by request id, with their cancel tokens. Hashed with a seeded
    /// fast hasher: the ids are the client's, but a client that made them collide would only
    /// slow its own session.
    in_flight: Mutex<InFlight>,
    next: AtomicU64,
    /// Fast calls running, and who waits for them to end.
    running: AtomicUsize,
    idle: Notify,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Front<W> {
    /// The fast path of `gateway`'s session with a client that reads from `writer`.
    pub(crate) fn new(gateway: Gateway, writer: W) -> Arc<Self> {
        Arc::new(Front {
            gateway,
            peer: OnceLock::new(),
            output: Output::new(writer),
            in_flight: Mutex::default(),
            next: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            idle: Notify::new(),
        })
    }

    /// The client's stream as rmcp is to read it (fast calls taken out), and the writer rmcp
    /// is to write with.
    pub(crate) fn split<R>(self: &Arc<Self>, reader: R) -> (FrontReader<R, W>, SharedWriter<W>) {
        let reader = FrontReader {
            inner: reader,
            front: self.clone(),
            buf: BytesMut::new(),
            scanned: 0,
            pass: 0,
            lines: LineReader::default(),
            long_line: false,
            eof: false,
        };
        let writer = SharedWriter {
            output: self.output.clone(),
            partial: Vec::new(),
        };
        (reader, writer)
    }

    /// The session is open: calls may take the fast path from now on.
    pub(crate) fn open(&self, peer: Peer<RoleServer>) {
        let _ = self.peer.set(peer);
    }

    /// The session is over: let the fast calls still running answer (bounded), cancel the
    /// rest (which tells their servers), and let what was written reach the client.
    pub(crate) async fn finish(&self) {
        if tokio::time::timeout(DRAIN_BOUND, self.calls_ended())
            .await
            .is_err()
        {
            tracing::debug!("gateway: calls still running as the client left are cancelled");
            for (_, token) in self.lock().values() {
                token.cancel();
            }
            self.calls_ended().await;
        }
        if tokio::time::timeout(FLUSH_BOUND, self.output.flush())
            .await
            .is_err()
        {
            tracing::debug!("gateway: the client did not read its last answers");
        }
    }

    /// Until no fast call runs (none starts once the client's stream has ended).
    async fn calls_ended(&self) {
        loop {
            let idle = self.idle.notified();
            if self.running.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }

    fn lock(&self) -> MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take `line` on the fast path if it is a call (started on a task of its own) or the
    /// cancellation of one; `false` leaves it to rmcp.
    fn take(self: &Arc<Self>, lines: &mut LineReader, line: &[u8]) -> bool {
        let Some(peer) = self.peer.get() else {
            return false;
        };
        match lines.read(line) {
            Some(FastLine::Call(call)) => self.start_call(call, peer),
            Some(FastLine::Cancel(cancel)) => self.cancel(cancel),
            None => false,
        }
    }

    /// Start `call`, if it is one rmcp would accept as it is.
    fn start_call(self: &Arc<Self>, call: Call<'_>, peer: &Peer<RoleServer>) -> bool {
        let said = &call.said;
        let initialized = peer.peer_info().is_some();
        // A request of a session opened without `initialize` that names an older revision may
        // ask its client over the session; rmcp allows that only from its own request tasks.
        if !initialized
            && said
                .version
                .as_ref()
                .is_some_and(|version| *version < ProtocolVersion::V_2026_07_28)
        {
            return false;
        }
        let id = call.id.clone();
        let mut context = RequestContext::new(id.clone(), peer.clone());
        // A request that passes what rmcp's dispatch checks before it calls the handler goes
        // to the handler directly, which is told what its `_meta` says; one that fails goes
        // through rmcp, for its error, with its `_meta` as rmcp reads it.
        let direct = passes_dispatch(
            &self.gateway,
            initialized,
            said.version.as_ref(),
            said.has_required_meta,
        );
        let route = if direct {
            let mut asker = Asker::from_parts(
                said.version.clone(),
                said.declared.clone(),
                call.progress.clone(),
                said.log_level,
                &context,
            );
            asker.trace = said.trace.clone();
            Route::Direct(asker, call.request)
        } else {
            context.meta = call.meta();
            // rmcp's dispatch takes the arguments parsed (they were read as an object).
            let Ok(params) = call.request.into_params() else {
                return false;
            };
            Route::Dispatch(params)
        };
        // The context's own token: cancelled by the client's notice (see `cancel`).
        let token = context.ct.clone();
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id.clone(), (number, token.clone()));
        let front = self.clone();
        self.running.fetch_add(1, Ordering::AcqRel);
        let running = Running(self.clone());
        tokio::spawn(async move {
            let _running = running;
            let reply = match route {
                Route::Direct(asker, request) => {
                    Box::pin(front.gateway.answer_call(request, &context, asker))
                        .await
                        .map(|answered| match answered {
                            Answered::Output(output, modern) => Reply::Output(output, modern),
                            Answered::Response(response) => {
                                Reply::Result(Box::new(response.into()))
                            }
                        })
                }
                Route::Dispatch(params) => {
                    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                    // Boxed: rmcp's dispatch holds the largest of every request type's futures
                    // (~4 KB), which would otherwise be copied into the task and around it.
                    Box::pin(front.gateway.handle_request(request, context))
                        .await
                        .map(|result| Reply::Result(Box::new(result)))
                }
            };
            {
                let mut in_flight = front.lock();
                if in_flight.get(&id).is_some_and(|(n, _)| *n == number) {
                    in_flight.remove(&id);
                }
            }
            // As rmcp does, a cancelled request gets no answer.
            if token.is_cancelled() {
                return;
            }
            match reply_line(id, reply) {
                Ok(line) => {
                    // Other calls running may answer in the same turn: leave the line to the
                    // draining task, which writes every answer ready by then at once.
                    let together = front.running.load(Ordering::Acquire) > 1;
                    if let Err(e) = front.output.write(&line, together).await {
                        tracing::debug!("gateway: an answer was not delivered: {e}");
                    }
                }
                Err(e) => tracing::warn!("gateway: an answer could not be written: {e}"),
            }
        });
        true
    }

    /// Cancel the fast call `cancel` names, if there is one.
    fn cancel(&self, cancel: CancelledNotificationParam) -> bool {
        let Some(request_id) = cancel.request_id else {
            return false;
        };
        match self.lock().remove(&request_id) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// Whether rmcp's dispatch would let a `tools/call` through to the handler: a revision the
/// request names (`version`) must be one the gateway speaks, and a request of a session opened
/// without `initialize`, or one naming 2026-07-28 or later, must carry the metadata that
/// revision requires (`has_required_meta`). (Of a session opened with `initialize`, a request
/// that names no revision is not checked at all. The other check of its dispatch, that a task
/// is answered only to a client that declared tasks, does not arise: the gateway answers with
/// none.)
fn passes_dispatch(
    gateway: &Gateway,
    initialized: bool,
    version: Option<&ProtocolVersion>,
    has_required_meta: bool,
) -> bool {
    let Some(version) = version else {
        return initialized;
    };
    let spoken = ServerHandler::supported_protocol_versions(gateway).contains(version);
    let checked = !initialized || *version >= ProtocolVersion::V_2026_07_28;
    spoken && (!checked || has_required_meta)
}

/// Which way a fast call goes to the handler.
enum Route {
    /// Straight to it, told what the call's `_meta` says.
    Direct(Asker, ToolRequest),
    /// Through rmcp's dispatch, for the checks it makes (or its error).
    Dispatch(CallToolRequestParams),
}

/// A fast call's answer.
enum Reply {
    /// A tool's output (and whether the client speaks a revision without `initialize`), for
    /// the answer's line as it is: serialized once, with no `Value` copy of it on the way.
    Output(ToolOutput, bool),
    /// A result as rmcp's dispatch makes it (boxed: a large type, for the rarer answers).
    Result(Box<ServerResult>),
}

/// The line that answers request `id` with `reply`.
fn reply_line(id: RequestId, reply: Result<Reply, McpError>) -> serde_json::Result<Vec<u8>> {
    let message = match reply {
        Ok(Reply::Output(output, modern)) => {
            return super::relay::answer_line(&id, &output, modern);
        }
        Ok(Reply::Result(result)) => ServerJsonRpcMessage::response(*result, id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    };
    let mut line = serde_json::to_vec(&super::relay::unwrap(message))?;
    line.push(b'\n');
    Ok(line)
}

/// Counts a fast call as running until dropped.
struct Running<W>(Arc<Front<W>>);

impl<W> Drop for Running<W> {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The client's stream as rmcp reads it: the lines the fast path takes are left out, the
/// others passed on byte for byte. A line is looked at only once rmcp has read every line
/// before it, so requests start in the order the client sent them.
pub(crate) struct FrontReader<R, W> {
    inner: R,
    front: Arc<Front<W>>,
    /// Read from the client, not yet taken or passed on.
    buf: BytesMut,
    /// How much of `buf` is known to hold no newline.
    scanned: usize,
    /// How much of `buf` is rmcp's to read.
    pass: usize,
    /// Reads the lines the fast path looks at.
    lines: LineReader,
    /// Passing on a line too long for the fast path, up to its newline.
    long_line: bool,
    eof: bool,
}

impl<R, W> AsyncRead for FrontReader<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.pass > 0 {
                let n = this.pass.min(out.remaining());
                out.put_slice(&this.buf[..n]);
                this.buf.advance(n);
                this.pass -= n;
                this.scanned = this.scanned.saturating_sub(n);
                return Poll::Ready(Ok(()));
            }
            let newline =
                memchr::memchr(b'\n', &this.buf[this.scanned..]).map(|at| this.scanned + at);
            match newline {
                Some(end) if this.long_line => {
                    this.long_line = false;
                    this.pass = end + 1;
                    continue;
                }
                Some(end) => {
                    this.scanned = 0;
                    if this.front.take(&mut this.lines, &this.buf[..end]) {
                        this.buf.advance(end + 1);
                    } else {
                        this.pass = end + 1;
                    }
                    continue;
                }
                None if this.long_line || this.buf.len() > FAST_LINE_MAX => {
                    // rmcp reads it as it comes, and bounds it itself.
                    this.long_line = true;
                    this.pass = this.buf.len();
                    if this.pass > 0 {
                        continue;
                    }
                }
                None => this.scanned = this.buf.len(),
            }
            if this.eof {
                // Bytes after the last newline are rmcp's to drop, as it always did.
                this.pass = this.buf.len();
                if this.pass > 0 {
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            this.buf.reserve(8 * 1024);
            match tokio_util::io::poll_read_buf(Pin::new(&mut this.inner), cx, &mut this.buf) {
                Poll::Ready(Ok(0)) => this.eof = true,
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The client's end of the stream, shared by rmcp and the fast calls: each line goes out
/// whole, in the order it was written, straight from the writer's task while the client keeps
/// up (its stream is non-blocking) and from a task of its own meanwhile when it does not.
pub(crate) struct Output<W> {
    state: Mutex<OutputState<W>>,
    /// Wakes the task writing what is queued.
    queued: Notify,
}

struct OutputState<W> {
    writer: W,
    /// Written, not yet accepted by the stream.
    queue: BytesMut,
    /// The stream failed; nothing more goes out.
    failed: Option<io::ErrorKind>,
    /// Writers waiting for the queue to shrink below [`HIGH_WATER`].
    waiting: Vec<Waker>,
    /// A task is writing the queue.
    draining: bool,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Output<W> {
    fn new(writer: W) -> Arc<Self> {
        Arc::new(Output {
            state: Mutex::new(OutputState {
                writer,
                queue: BytesMut::new(),
                failed: None,
                waiting: Vec::new(),
                draining: false,
            }),
            queued: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, OutputState<W>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write whole lines, once the queue has room; `later`: leave them to the draining task
    /// even if the stream would take them now, so that lines written in the same turn of the
    /// runtime go out in one write.
    async fn write(self: &Arc<Self>, lines: &[u8], later: bool) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_room(cx)).await?;
        self.push(lines, later)
    }

    /// Ready when the queue has room for more.
    fn poll_room(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = self.lock();
        if let Some(kind) = state.failed {
            return Poll::Ready(Err(kind.into()));
        }
        if state.queue.len() < HIGH_WATER {
            return Poll::Ready(Ok(()));
        }
        state.waiting.push(cx.waker().clone());
        Poll::Pending
    }

    /// Write whole lines now (unless `later`), as far as the stream takes them without
    /// waiting; the rest is queued for the draining task.
    fn push(self: &Arc<Self>, lines: &[u8], later: bool) -> io::Result<()> {
        let mut state = self.lock();
        if let Some(kind) = state.failed {
            return Err(kind.into());
        }
        let mut written = 0;
        if state.queue.is_empty() && !later {
            // Not woken by this context: whatever does not go now is the draining task's, which
            // polls the stream with its own.
            let mut cx = Context::from_waker(Waker::noop());
            while written < lines.len() {
                match Pin::new(&mut state.writer).poll_write(&mut cx, &lines[written..]) {
                    Poll::Ready(Ok(0)) => {
                        state.failed = Some(io::ErrorKind::WriteZero);
                        return Err(io::ErrorKind::WriteZero.into());
                    }
                    Poll::Ready(Ok(n)) => written += n,
                    Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                    Poll::Ready(Err(e)) => {
                        state.failed = Some(e.kind());
                        return Err(e);
                    }
                    Poll::Pending => break,
                }
            }
        }
        if written < lines.len() {
            state.queue.extend_from_slice(&lines[written..]);
            if !state.draining {
                state.draining = true;
                let output = self.clone();
                tokio::spawn(async move {
                    // Once round the runtime first: a yield lets the runtime poll for I/O
                    // before the task resumes, so answers the servers wrote meanwhile are read
                    // and their lines join this write. Fewer, fuller writes let the client,
                    // and through it the servers, take more calls per wake-up; 64 calls in
                    // flight gain about a tenth in calls/s (BENCHMARKS.md).
                    tokio::task::yield_now().await;
                    std::future::poll_fn(|cx| output.poll_drain(cx)).await
                });
            }
        }
        Ok(())
    }

    /// Write the queue out; ready once it is empty (or the stream failed).
    fn poll_drain(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.lock();
        let state = &mut *state;
        while !state.queue.is_empty() && state.failed.is_none() {
            match Pin::new(&mut state.writer).poll_write(cx, &state.queue) {
                Poll::Ready(Ok(0)) => state.failed = Some(io::ErrorKind::WriteZero),
                Poll::Ready(Ok(n)) => {
                    state.queue.advance(n);
                    if state.queue.len() < HIGH_WATER {
                        state.waiting.drain(..).for_each(Waker::wake);
                    }
                }
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => state.failed = Some(e.kind()),
                Poll::Pending => return Poll::Pending,
            }
        }
        if state.failed.is_some() {
            state.queue.clear();
        }
        state.draining = false;
        state.waiting.drain(..).for_each(Waker::wake);
        self.queued.notify_waiters();
        Poll::Ready(())
    }

    /// Wait until everything written has been accepted by the stream, and flush it.
    async fn flush(&self) {
        loop {
            let drained = self.queued.notified();
            {
                let state = self.lock();
                if state.queue.is_empty() || state.failed.is_some() {
                    break;
                }
            }
            drained.await;
        }
        let _ = std::future::poll_fn(|cx| {
            let mut state = self.lock();
            if state.failed.is_some() {
                return Poll::Ready(Ok(()));
            }
            Pin::new(&mut state.writer).poll_flush(cx)
        })
        .await;
    }
}

/// rmcp's writer: its messages go through the shared [`Output`] a whole line at a time.
pub(crate) struct SharedWriter<W> {
    output: Arc<Output<W>>,
    /// The start of a line whose end has not been written yet.
    partial: Vec<u8>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> AsyncWrite for SharedWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        std::task::ready!(this.output.poll_room(cx))?;
        let Some(last) = memchr::memrchr(b'\n', buf) else {
            this.partial.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        };
        if this.partial.is_empty() {
            this.output.push(&buf[..=last], false)?;
        } else {
            this.partial.extend_from_slice(&buf[..=last]);
            let lines = std::mem::take(&mut this.partial);
            this.output.push(&lines, false)?;
        }
        this.partial.extend_from_slice(&buf[last + 1..]);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Handed to the output, in order: the draining task takes it from there.
        match self.output.lock().failed {
            Some(kind) => Poll::Ready(Err(kind.into())),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The stream stays open for the fast calls' answers; it closes with the session.
        self.poll_flush(cx)
    }
}
