//! The direct request path of a stdio connection: the requests the client makes itself are
//! written straight to the server's stdin by the calling task, and their answers are handed
//! from the transport's read loop to the waiting call, never entering rmcp's service loop.
//!
//! rmcp's loop costs every request a channel hop into the loop, a task spawned to write it, a
//! responder map keyed with SipHash, a oneshot back, and several moves of its large message
//! enums and futures: most of what a call cost once decoding was ours. Here a call costs one
//! registration in a small map, one write and one oneshot.
//!
//! rmcp opens the connection; after that its service is gone, and the connection's own reader
//! (see `own`) takes the server's requests and notifications (progress included: a tool call
//! carries a progress token, and its progress reaches the caller and the host's events).
//! Remote servers (HTTP) keep rmcp's path, a 2026-07-28 tool call aside (`http::direct`,
//! which writes the call and reads its answer with this road's functions).
//!
//! The two id spaces are disjoint: rmcp's opening counts from 0 in 32 bits, direct requests
//! are numbered from [`FIRST_ID`] (below 2^53, so JavaScript servers read them exactly). An
//! answer with an id in our range is ours: handed to its call, or dropped when that call is
//! gone (timed out, cancelled, answered already). Anything else the transport reads takes the
//! decoder.
//!
//! When the connection ends (the server's stdout closes, the transport is closed or dropped),
//! every waiting call is woken with the connection's end, and no new call can register. An
//! answer the transport could not read (a line past the longest accepted) fails its call at
//! once with what happened, rather than leaving it to its timeout; so does a line that never
//! ends, which ends the connection.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use std::fmt::Display;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta as _, NumberOrString, ProgressToken, RequestId,
    RequestMetaObject,
};
use rmcp::service::ServiceError;
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::answer::{Delivered, FIRST_ID, NoResult, Reply, Wants, parse_answer};
use super::decode::{self, Expected};
use crate::client::envelope::{Answer, Outgoing, RequestSettings, ToolAnswer};
use crate::client::model::tool_request::ToolRequest;
use crate::client::model::tool_result::{self, ToolRead};
use crate::client::{ClientError, McpClient};

/// Bytes a [`Batch`] takes before writers wait for the server to read instead: a server that
/// stops reading holds its callers back rather than growing the batch.
const BATCH_MAX: usize = 1024 * 1024;

/// The server's stdin, shared by rmcp's writes and ours; `None` once closed.
pub(crate) type SharedWriter = Arc<tokio::sync::Mutex<Option<Writer>>>;

/// A writer of any kind (a child's stdin, or a test's pipe).
pub(crate) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// The direct path of one connection. Shared by the transport (which delivers answers) and
/// the client (which sends requests).
pub(crate) struct Direct {
    write: SharedWriter,
    state: Mutex<State>,
    next: AtomicU64,
    /// Cancelled when the connection ends.
    ended: CancellationToken,
}

/// Lines on their way to the server together.
///
/// While one request waits (subscriptions aside), the next line is written at once. While
/// several do, lines usually come in bursts (a host that starts calls together, a gateway
/// relaying a client's batch, answers read together waking their callers together), and a
/// write per line costs a system call and a wake-up of the server per line. So a line written
/// while others wait joins a batch instead, and a task spawned for the batch writes it once the
/// tasks already woken have added theirs: one write for the burst. Everything written after a
/// batch has begun goes through it, so lines keep their order.
#[derive(Default)]
struct Batch {
    lines: Vec<u8>,
    /// A task is writing the batch; a line written meanwhile joins it.
    writing: bool,
}

impl fmt::Debug for Direct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Direct").finish_non_exhaustive()
    }
}

/// A registered request: where its answer goes, and how it wants it.
struct Waiting {
    answer: oneshot::Sender<Reply>,
    wants: Wants,
    /// Open for as long as the connection may be (a subscription), not answered soon.
    standing: bool,
}

#[derive(Default)]
struct State {
    waiting: HashMap<u64, Waiting, BuildHasherDefault<IdHasher>>,
    /// How many of `waiting` are standing (counted, so a write need not walk `waiting`).
    standing: usize,
    closed: bool,
    /// Lines written while other requests were waiting, for one write by a task of their own.
    batch: Batch,
}

impl State {
    fn remove(&mut self, id: u64) -> Option<Waiting> {
        let waiting = self.waiting.remove(&id)?;
        self.standing -= usize::from(waiting.standing);
        Some(waiting)
    }
}

/// Hashes the sequential ids of this connection: a multiply spreads them over the table's
/// buckets and control bytes, at a fraction of SipHash's cost (the ids are ours, not the
/// server's, so nobody can choose them to collide).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl Direct {
    /// The direct path over `write`.
    pub(crate) fn new(write: SharedWriter) -> Direct {
        Direct {
            write,
            state: Mutex::default(),
            next: AtomicU64::new(FIRST_ID),
            ended: CancellationToken::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new request id and the receiver of its answer; `None` once the connection has ended.
    /// Registered before anything is written, so the answer cannot come first.
    pub(crate) fn register(&self, wants: Wants) -> Option<(u64, oneshot::Receiver<Reply>)> {
        self.register_as(wants, false)
    }

    /// [`register`](Self::register) a request that stays open (a subscription): it does not
    /// count as a request about to be answered when lines are [batched](Batch).
    pub(crate) fn register_standing(&self) -> Option<(u64, oneshot::Receiver<Reply>)> {
        self.register_as(Wants::Text, true)
    }

    fn register_as(&self, wants: Wants, standing: bool) -> Option<(u64, oneshot::Receiver<Reply>)> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, receiver) = oneshot::channel();
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        state.standing += usize::from(standing);
        state.waiting.insert(
            id,
            Waiting {
                answer,
                wants,
                standing,
            },
        );
        Some((id, receiver))
    }

    /// Stop waiting for request `id`; whether it was still waiting (not answered, not ended).
    pub(crate) fn forget(&self, id: u64) -> bool {
        let mut state = self.lock();
        let was = state.remove(id).is_some();
        if state.waiting.is_empty() && state.waiting.capacity() > 64 {
            // A burst of concurrent calls is over: give its memory back.
            state.waiting.shrink_to(16);
        }
        was
    }

    /// Write one line (with its `\n`) to the server. A line whose writing has begun is
    /// always finished, even when the caller gives up half-way (by a task of its own, still
    /// holding the writer), so the server never reads half a message glued to the next.
    ///
    /// While other requests wait for their answers, the line joins a [`Batch`] and `Ok` means
    /// it will be written; a write that then fails ends the connection, which wakes every
    /// waiting call.
    pub(crate) async fn write_line(self: &Arc<Self>, line: Vec<u8>) -> std::io::Result<()> {
        if self.batched(&line) {
            return Ok(());
        }
        let writer = self.write.clone().lock_owned().await;
        let mut line = LineWrite {
            writer: Some(writer),
            line,
            written: 0,
        };
        line.run().await
    }

    /// Add `line` to the batch if one is being written or other requests wait; `false`: write
    /// it now, or once the batch is written if it is full.
    fn batched(self: &Arc<Self>, line: &[u8]) -> bool {
        let mut state = self.lock();
        if state.batch.lines.len() >= BATCH_MAX {
            // The batch's task holds the writer until the batch is out: waiting for the writer
            // keeps this line after it.
            return false;
        }
        if !state.batch.writing {
            if state.closed || state.waiting.len() - state.standing <= 1 {
                return false;
            }
            state.batch.writing = true;
            tokio::spawn(self.clone().write_batch());
        }
        state.batch.lines.extend_from_slice(line);
        true
    }

    /// Write the batch, and what joins it meanwhile, until it is empty.
    async fn write_batch(self: Arc<Self>) {
        let mut writer = self.write.clone().lock_owned().await;
        loop {
            let lines = {
                let mut state = self.lock();
                if state.batch.lines.is_empty() {
                    state.batch.writing = false;
                    return;
                }
                std::mem::take(&mut state.batch.lines)
            };
            let written = match writer.as_mut() {
                Some(write) => match write.write_all(&lines).await {
                    Ok(()) => write.flush().await,
                    Err(e) => Err(e),
                },
                None => Err(std::io::ErrorKind::NotConnected.into()),
            };
            if let Err(e) = written {
                // The lines' callers were told they would be written; ending the connection
                // wakes them with its end rather than leaving them to their timeouts.
                tracing::debug!("cannot write to the server: {e}");
                self.lock().batch = Batch::default();
                self.close();
                return;
            }
        }
    }

    /// The connection has ended: wake every waiting call (its receiver sees the sender gone)
    /// and refuse new ones.
    pub(crate) fn close(&self) {
        self.close_with(None);
    }

    /// The connection has ended because the server's output cannot be read on: every waiting
    /// call gets `why` (see [`NoResult::Unreadable`]); new ones are refused.
    pub(crate) fn fail_all(&self, why: &str) {
        self.close_with(Some(why));
    }

    fn close_with(&self, why: Option<&str>) {
        let waiting = {
            let mut state = self.lock();
            state.closed = true;
            state.standing = 0;
            std::mem::take(&mut state.waiting)
        };
        self.ended.cancel();
        if let Some(why) = why {
            for waiting in waiting.into_values() {
                let _ = waiting
                    .answer
                    .send(Err(NoResult::Unreadable(why.to_owned())));
            }
        }
    }

    /// Whether the connection has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Resolves once the connection has ended.
    pub(crate) async fn ended(&self) {
        self.ended.cancelled().await;
    }

    /// Answer request `id` with `why` instead of a result: its answer could not be read (see
    /// [`NoResult::Unreadable`]). `false` when nobody waits for it.
    pub(crate) fn fail(&self, id: u64, why: &str) -> bool {
        let waiting = self.lock().remove(id);
        match waiting {
            Some(waiting) => {
                let _ = waiting
                    .answer
                    .send(Err(NoResult::Unreadable(why.to_owned())));
                true
            }
            None => false,
        }
    }

    /// Requests waiting for an answer.
    pub(crate) fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Take one received line (without its line break) if it answers a direct request: hand
    /// it to its call, or drop it when the call is gone. `false`: not ours, for the decoder.
    pub(crate) fn deliver(&self, line: &[u8]) -> bool {
        let wants = |id| {
            let state = self.lock();
            state
                .waiting
                .get(&id)
                .map_or(Wants::Text, |waiting| waiting.wants)
        };
        let Some((id, answer)) = parse_answer(line, &wants) else {
            return false;
        };
        let waiting = self.lock().remove(id);
        match waiting {
            // The call may have just given up; then nobody wants the answer.
            Some(waiting) => drop(waiting.answer.send(answer)),
            None => tracing::debug!(id, "dropping an answer to a request nobody waits for"),
        }
        true
    }
}

/// One line on its way to the server, finished by a task of its own if dropped half-way.
struct LineWrite {
    writer: Option<tokio::sync::OwnedMutexGuard<Option<Writer>>>,
    line: Vec<u8>,
    written: usize,
}

impl LineWrite {
    async fn run(&mut self) -> std::io::Result<()> {
        let LineWrite {
            writer,
            line,
            written,
        } = self;
        let Some(write) = writer.as_mut().and_then(|w| w.as_mut()) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the transport is closed",
            ));
        };
        while *written < line.len() {
            match write.write(&line[*written..]).await {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => *written += n,
                Err(e) => {
                    // Nothing more will go out: there is no half line to finish.
                    *written = line.len();
                    return Err(e);
                }
            }
        }
        write.flush().await
    }
}

impl Drop for LineWrite {
    fn drop(&mut self) {
        if self.written == 0 || self.written >= self.line.len() {
            return;
        }
        let (Some(writer), Ok(runtime)) =
            (self.writer.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let rest = LineWrite {
            writer: Some(writer),
            line: self.line.split_off(self.written),
            written: 0,
        };
        runtime.spawn(async move {
            let mut rest = rest;
            let _ = rest.run().await;
        });
    }
}

/// The `_meta` rmcp adds to every request on a connection without `initialize` (2026-07-28):
/// the negotiated version and our identity and capabilities.
#[derive(Debug, Clone)]
pub(crate) struct EraMeta {
    pub(crate) protocol_version: rmcp::model::ProtocolVersion,
    pub(crate) client_info: rmcp::model::Implementation,
    pub(crate) capabilities: rmcp::model::ClientCapabilities,
    /// The same entries as JSON (`"key":value`), in the order rmcp adds them: written as they
    /// are into every tool call, which would otherwise build and serialize them each time.
    written: Arc<[(String, Vec<u8>)]>,
}

impl EraMeta {
    pub(crate) fn new(
        protocol_version: rmcp::model::ProtocolVersion,
        client_info: rmcp::model::Implementation,
        capabilities: rmcp::model::ClientCapabilities,
    ) -> Self {
        let mut era = EraMeta {
            protocol_version,
            client_info,
            capabilities,
            written: Arc::new([]),
        };
        let mut meta = RequestMetaObject::default();
        era.add_to(&mut meta);
        era.written = meta
            .iter()
            .filter_map(|(key, value)| {
                let mut entry = serde_json::to_vec(key).ok()?;
                entry.push(b':');
                serde_json::to_writer(&mut entry, value).ok()?;
                Some((key.clone(), entry))
            })
            .collect();
        era
    }

    /// Add the entries to `meta`, as rmcp does (each replaces one of the same key).
    pub(crate) fn add_to(&self, meta: &mut RequestMetaObject) {
        meta.set_protocol_version(self.protocol_version.clone());
        meta.set_client_info(self.client_info.clone());
        meta.set_client_capabilities(self.capabilities.clone());
    }
}

/// A registered request. Dropped before its answer came (the caller gave up), it is
/// forgotten and the server told with `notifications/cancelled`.
struct Pending<'a> {
    direct: &'a Arc<Direct>,
    id: u64,
    done: bool,
}

impl Pending<'_> {
    /// Stop waiting and, if the request was still waiting, tell the server why.
    async fn cancel(&mut self, reason: &str) {
        self.done = true;
        if self.direct.forget(self.id) {
            let _ = self.direct.write_line(cancel_line(self.id, reason)).await;
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.done || !self.direct.forget(self.id) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (direct, line) = (
                self.direct.clone(),
                cancel_line(self.id, "cancelled by the client"),
            );
            runtime.spawn(async move { direct.write_line(line).await });
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

/// `notifications/cancelled` for request `id`, as a line.
pub(crate) fn cancel_line(id: impl Serialize, reason: &str) -> Vec<u8> {
    let notice = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": reason},
    });
    let mut line = notice.to_string().into_bytes();
    line.push(b'\n');
    line
}

impl McpClient {
    /// Send one request on the direct path and wait for its answer, its timeout, its
    /// cancellation or the connection's end, whichever comes first.
    pub(in crate::client) async fn request_direct<M: Display + ?Sized>(
        &self,
        request: Outgoing<'_>,
        meta: Option<RequestMetaObject>,
        direct: &Arc<Direct>,
        settings: RequestSettings<'_, M>,
    ) -> Result<Answer, ClientError> {
        let RequestSettings {
            method,
            timeout,
            cancel,
            progress,
        } = settings;
        let not_sent = || ClientError::NotSent {
            server: self.server.clone(),
            method: method.to_string(),
        };
        if self.is_closed() {
            return Err(not_sent());
        }
        let (expected, wants) = match &request {
            Outgoing::Tool(_) => (Expected::CallTool, Wants::ToolOutput),
            Outgoing::Request(request) => (Expected::of(request), Wants::Text),
        };
        let Some((id, receiver)) = direct.register(wants) else {
            return Err(not_sent());
        };
        let mut pending = Pending {
            direct,
            id,
            done: false,
        };
        // Ids start at 2^32 and count up: they stay far below i64::MAX.
        let wire_id = i64::try_from(id).unwrap_or(i64::MAX);
        // Registered for as long as this function runs; notifications that beat the
        // registration are handed over by the router.
        let progress_route = progress.map(|sender| {
            let token = ProgressToken(NumberOrString::Number(wire_id));
            self.progress.register(token, sender.clone())
        });
        let line = match request {
            Outgoing::Tool(call) => self.tool_call_line(wire_id, call, meta),
            Outgoing::Request(request) => self.request_line(wire_id, *request, meta),
        };
        let line = line
            .map_err(|e| self.protocol_error(method, format!("cannot write the request: {e}")))?;
        if let Err(e) = direct.write_line(line).await {
            pending.done = true;
            direct.forget(id);
            if e.kind() == std::io::ErrorKind::NotConnected {
                return Err(not_sent());
            }
            tracing::debug!(server = %self.server, "{method}: cannot write the request: {e}");
            return Err(self.lost_after_send(method).await);
        }
        let wait = async move {
            match timeout {
                Some(timeout) => tokio::time::timeout(timeout, receiver).await.ok(),
                None => Some(receiver.await),
            }
        };
        let outcome = match cancel {
            None => wait.await,
            Some(cancel) => tokio::select! {
                outcome = wait => outcome,
                () = cancel.cancelled() => {
                    // Boxed, as below: awaited beside the select's own futures, the notice's
                    // write would otherwise widen every request's future.
                    Box::pin(pending.cancel("cancelled by the client")).await;
                    return Err(ClientError::Cancelled {
                        server: self.server.clone(),
                        method: method.to_string(),
                    });
                }
            },
        };
        let answer = match outcome {
            None => {
                Box::pin(pending.cancel("request timeout")).await;
                let timeout = timeout.unwrap_or_default();
                return Err(self.service_error(method, ServiceError::Timeout { timeout }));
            }
            Some(Err(_ended)) => {
                pending.done = true;
                return Err(self.lost_after_send(method).await);
            }
            Some(Ok(answer)) => {
                pending.done = true;
                answer
            }
        };
        // The reader hands a progress notification to its route before it reads the next
        // line: whatever the server sent before the answer has reached the caller already.
        drop(progress_route);
        match answer {
            Ok(Delivered::Tool(output)) => Ok(Answer::Tool(ToolAnswer::Output(*output))),
            Ok(Delivered::Text(result)) => self.direct_result(expected, &result, method),
            Err(NoResult::Server(error)) => {
                let error = self.service_error(method, ServiceError::McpError(error));
                self.forget_refuted_discovery(&error);
                Err(error)
            }
            Err(NoResult::Unreadable(why)) => Err(self.protocol_error(method, why)),
        }
    }

    /// The error for a request whose connection ended after it was sent. Boxed, as the
    /// wait for the exit status would otherwise grow every request's future.
    async fn lost_after_send<M: Display + ?Sized>(&self, method: &M) -> ClientError {
        Box::pin(self.service_error_after_send(method, ServiceError::TransportClosed)).await
    }

    /// A request other than a tool call as a line, with the `_meta` rmcp gives it (in the
    /// same order: the era's, then the caller's; no progress token).
    fn request_line(
        &self,
        id: i64,
        mut request: ClientRequest,
        meta: Option<RequestMetaObject>,
    ) -> Result<Vec<u8>, std::io::Error> {
        let request_meta = request.get_meta_mut();
        if let Some(era) = &self.era_meta {
            era.add_to(request_meta);
        }
        if let Some(meta) = meta {
            request_meta.extend(meta);
        }
        to_line(&ClientJsonRpcMessage::request(
            request,
            RequestId::Number(id),
        ))
    }

    /// A `tools/call` request as a line, written from the borrowed parameters. The same JSON
    /// rmcp writes (its `_meta`: the parameters' own, then the era's, the caller's and the
    /// progress token), without its detour through a `Value` copy of the arguments.
    pub(in crate::client) fn tool_call_line(
        &self,
        id: i64,
        call: &ToolRequest,
        meta: Option<RequestMetaObject>,
    ) -> Result<Vec<u8>, std::io::Error> {
        let params = &call.params;
        // Written piece by piece: the constant parts as they are, only the name and what
        // the caller passed through the serializer (a derived `Serialize` escapes every key
        // and constant string on every call).
        let mut line = Vec::with_capacity(256);
        line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut line, &id)?;
        line.extend_from_slice(br#","method":"tools/call","params":{"_meta":"#);
        match (&self.era_meta, &params.meta, meta) {
            // Without metadata of the call's own (as the gateway and most callers send it),
            // the era's entries are written as kept; only the caller's are serialized.
            (Some(era), None, meta) => {
                line.extend_from_slice(&write_meta(&era.written, meta.as_ref(), id)?);
            }
            (None, None, None) => {
                line.extend_from_slice(br#"{"progressToken":"#);
                serde_json::to_writer(&mut line, &id)?;
                line.push(b'}');
            }
            (era, own, meta) => {
                let mut all = own.clone().unwrap_or_default();
                if let Some(era) = era {
                    era.add_to(&mut all);
                }
                if let Some(meta) = meta {
                    all.extend(meta);
                }
                all.set_progress_token(ProgressToken(NumberOrString::Number(id)));
                serde_json::to_writer(&mut line, &all)?;
            }
        }
        line.extend_from_slice(br#","name":"#);
        serde_json::to_writer(&mut line, &*params.name)?;
        if let Some(text) = &call.arguments_text {
            line.extend_from_slice(br#","arguments":"#);
            line.extend_from_slice(text.get().as_bytes());
        } else if let Some(arguments) = &params.arguments {
            line.extend_from_slice(br#","arguments":"#);
            serde_json::to_writer(&mut line, arguments)?;
        }
        if let Some(responses) = &params.input_responses {
            line.extend_from_slice(br#","inputResponses":"#);
            serde_json::to_writer(&mut line, responses)?;
        }
        if let Some(state) = &params.request_state {
            line.extend_from_slice(br#","requestState":"#);
            serde_json::to_writer(&mut line, state)?;
        }
        line.extend_from_slice(b"}}\n");
        Ok(line)
    }

    /// A `result` as the caller takes it, decoded from its text in the caller's task: a
    /// tool's result read straight into a [`ToolOutput`](crate::client::ToolOutput), anything else (an `input_required` question included) in rmcp's type
    /// for its method.
    pub(in crate::client) fn direct_result<M: Display + ?Sized>(
        &self,
        expected: Expected,
        result: &RawValue,
        method: &M,
    ) -> Result<Answer, ClientError> {
        let invalid =
            |e: serde_json::Error| self.protocol_error(method, format!("invalid result: {e}"));
        if expected == Expected::CallTool {
            match tool_result::read(result.get()) {
                ToolRead::Output(output) => return Ok(Answer::Tool(ToolAnswer::Output(output))),
                ToolRead::Invalid(e) => return Err(invalid(e)),
                ToolRead::Other => {}
            }
        }
        decode::result_from_str(expected, result.get())
            .map(|result| Answer::Typed(Box::new(result)))
            .map_err(invalid)
    }
}

/// A tool call's `_meta` when the call has none of its own: the era's entries as written
/// (each replaced by the caller's value when the caller has the same key), the caller's other
/// entries, and the progress token in the caller's place for it, or last. The JSON of the map
/// rmcp would build from the same parts.
fn write_meta(
    era: &[(String, Vec<u8>)],
    caller: Option<&RequestMetaObject>,
    id: i64,
) -> Result<Vec<u8>, std::io::Error> {
    const PROGRESS_TOKEN: &str = "progressToken";
    /// Past the opening brace, an entry is preceded by a comma.
    fn comma(out: &mut Vec<u8>) {
        if out.len() > 1 {
            out.push(b',');
        }
    }
    fn entry(out: &mut Vec<u8>, key: &str) -> Result<(), std::io::Error> {
        comma(out);
        serde_json::to_writer(&mut *out, key)?;
        out.push(b':');
        Ok(())
    }
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    for (key, written) in era {
        match caller.and_then(|caller| caller.get(key)) {
            Some(value) => {
                entry(&mut out, key)?;
                serde_json::to_writer(&mut out, value)?;
            }
            None => {
                comma(&mut out);
                out.extend_from_slice(written);
            }
        }
    }
    let mut token_written = false;
    for (key, value) in caller.into_iter().flat_map(|caller| caller.iter()) {
        if era.iter().any(|(era_key, _)| era_key == key) {
            continue;
        }
        entry(&mut out, key)?;
        if key == PROGRESS_TOKEN {
            serde_json::to_writer(&mut out, &id)?;
            token_written = true;
        } else {
            serde_json::to_writer(&mut out, value)?;
        }
    }
    if !token_written {
        entry(&mut out, PROGRESS_TOKEN)?;
        serde_json::to_writer(&mut out, &id)?;
    }
    out.push(b'}');
    Ok(out)
}

#[cfg(test)]
#[path = "direct_tests.rs"]
mod tests;
