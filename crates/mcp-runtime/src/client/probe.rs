//! The bounded `server/discover` probe that finds out which era a server speaks, during the
//! opening of a connection.
//!
//! A first contact probes with `server/discover` and falls back to `initialize` on the same
//! connection when the answer is not a modern one. rmcp drives both openings; this module
//! bounds the probe and remembers the outcome:
//!
//! - [`Probe`] wraps the transport. Some old servers never answer a method they do not know,
//!   so once the server has *taken* the probe (its stdin pipe drained, or its HTTP response
//!   arrived) and still not answered within [`PROBE_BOUND`], the wrapper answers for it with
//!   "method not found". rmcp then falls back to `initialize` at once, instead of after its
//!   own fixed ten seconds. (Over HTTP the wrapper ends the connection instead, and the caller
//!   opens a fresh one with `initialize`: rmcp's HTTP worker sends nothing before its first
//!   POST is answered.) Waiting for the server to take the probe first means a server that
//!   is merely slow to start is not mistaken for one that ignores the probe.
//! - A late answer to a probe the wrapper gave up on is dropped; if it was a modern one, the
//!   connection is retried with `server/discover` alone when `initialize` is refused, and the
//!   era cached is the modern one.
//! - A `server/discover` result that came with a positive `ttlMs` (and is not private) is
//!   cached with the era; while it is fresh, [`Probe`] answers the opening's
//!   `server/discover` with it instead of sending it, so such a start-up costs no round trip.
//!
//! Being the one wrapper every transport goes through, [`Probe`] also takes the
//! `_meta.progressToken` that rmcp puts on every request off all but `tools/call`: only tool
//! calls have progress anyone reads, and the token on a `tools/list` told servers otherwise.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, GetMeta as _, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::Transport;

use super::model::era::{Era, PROBE_BOUND};

/// The `_meta` key of a request's progress token.
const PROGRESS_TOKEN: &str = "progressToken";

/// How often a stdio probe checks whether the server has read it yet.
const DRAIN_POLL: Duration = Duration::from_millis(2);

/// The opening to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Probe with `server/discover` (bounded), fall back to `initialize`.
    Probe,
    /// `server/discover` only, unbounded but for the start-up timeout (a server that was
    /// slow to answer the probe).
    Discover,
    /// `server/discover` only, bounded like a probe: the cache says the server is modern, but
    /// it may have been replaced by one that ignores the request.
    Recall,
    /// `initialize` only.
    Initialize,
}

impl Plan {
    /// The opening for a cached era.
    pub(crate) fn for_era(era: Option<Era>) -> Plan {
        match era {
            None => Plan::Probe,
            Some(Era::Modern) => Plan::Recall,
            Some(Era::Legacy) => Plan::Initialize,
        }
    }

    /// What rmcp should do for this plan.
    pub(crate) fn lifecycle(self) -> ClientLifecycleMode {
        let modern = vec![ProtocolVersion::V_2026_07_28];
        match self {
            Plan::Probe => ClientLifecycleMode::Auto {
                preferred_versions: modern,
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            Plan::Discover | Plan::Recall => ClientLifecycleMode::Discover {
                preferred_versions: modern,
            },
            Plan::Initialize => ClientLifecycleMode::Initialize,
        }
    }

    /// Whether the probe of this plan is bounded by [`PROBE_BOUND`].
    fn bounded(self) -> bool {
        matches!(self, Plan::Probe | Plan::Recall)
    }
}

/// What the probe of one connection saw; shared between the [`Probe`] wrapper, the HTTP
/// client (which knows when the server's answer to the probe arrived) and the caller.
#[derive(Debug, Default)]
pub(crate) struct ProbeState {
    probes: AtomicU32,
    timed_out: AtomicBool,
    /// A probe the wrapper gave up on was answered with a modern result after all.
    late_modern: AtomicBool,
    /// The server has taken the pending probe (HTTP: its response arrived).
    taken: AtomicBool,
    taken_signal: tokio::sync::Notify,
    /// A cached `server/discover` result to answer the opening with, instead of sending it.
    replay: std::sync::Mutex<Option<rmcp::model::DiscoverResult>>,
    /// The cached result was used.
    replayed: AtomicBool,
    /// The server's own answer to `server/discover`, as received, to be cached.
    discovered: std::sync::Mutex<Option<rmcp::model::DiscoverResult>>,
    /// The connection ended with the probe unanswered: some servers of the older revisions
    /// exit on a method they do not know (the Python SDK before 1.7 does, once its stdin
    /// brings the next request).
    closed_on_probe: AtomicBool,
    /// The server answered a probe (in time or late).
    probe_answered: AtomicBool,
}

impl ProbeState {
    /// `server/discover` requests sent.
    pub(crate) fn probes(&self) -> u32 {
        self.probes.load(Ordering::SeqCst)
    }

    /// The wrapper answered a probe for the server.
    pub(crate) fn timed_out(&self) -> bool {
        self.timed_out.load(Ordering::SeqCst)
    }

    /// The connection ended with the probe unanswered.
    pub(crate) fn closed_on_probe(&self) -> bool {
        self.closed_on_probe.load(Ordering::SeqCst)
    }

    /// The server process exited during the opening: if no probe was answered, the probe is
    /// what it died of (the exit can be seen before the end of its output).
    pub(crate) fn exited(&self) {
        if self.probes() > 0 && !self.probe_answered.load(Ordering::SeqCst) {
            self.closed_on_probe.store(true, Ordering::SeqCst);
        }
    }

    /// A probe given up on turned out to be answered by a modern server.
    pub(crate) fn late_modern(&self) -> bool {
        self.late_modern.load(Ordering::SeqCst)
    }

    /// Answer the opening's `server/discover` with `result` (a fresh cached one).
    pub(crate) fn replay(&self, result: rmcp::model::DiscoverResult) {
        *self.replay.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    }

    /// Whether the opening was answered from the cache.
    pub(crate) fn replayed(&self) -> bool {
        self.replayed.load(Ordering::SeqCst)
    }

    /// The server's own `server/discover` result, if it sent one.
    pub(crate) fn discovered(&self) -> Option<rmcp::model::DiscoverResult> {
        self.discovered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Called by the HTTP client when the server answered a `server/discover` POST.
    pub(crate) fn mark_taken(&self) {
        self.taken.store(true, Ordering::SeqCst);
        self.taken_signal.notify_waiters();
    }

    async fn wait_taken(&self) {
        loop {
            let notified = self.taken_signal.notified();
            if self.taken.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// How the wrapper learns that the server took the probe.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Taken {
    /// A stdio server: the write end of its stdin pipe, which is empty once it has read.
    #[cfg(unix)]
    Pipe(std::os::fd::RawFd),
    /// A remote server: [`ProbeState::mark_taken`] is called by the HTTP client.
    Signalled,
}

/// A transport that bounds the `server/discover` probe (see the module documentation).
pub(crate) struct Probe<T> {
    inner: T,
    state: Arc<ProbeState>,
    taken: Taken,
    bounded: bool,
    /// The probe awaiting its answer.
    pending: Option<RequestId>,
    /// Probes answered by the wrapper: their late answers are dropped.
    given_up: HashSet<RequestId>,
    /// The answer to a replayed `server/discover`, handed out by the next `receive`.
    replayed: Option<ServerJsonRpcMessage>,
}

impl<T> Probe<T> {
    pub(crate) fn new(inner: T, plan: Plan, taken: Taken, state: Arc<ProbeState>) -> Self {
        Probe {
            inner,
            state,
            taken,
            bounded: plan.bounded(),
            pending: None,
            given_up: HashSet::new(),
            replayed: None,
        }
    }

    /// The wrapped transport, once the opening is over (a stdio connection's reader takes
    /// it back, see `own`).
    pub(crate) fn into_inner(self) -> T {
        self.inner
    }
}

/// Resolves [`PROBE_BOUND`] after the server took the probe.
async fn probe_deadline(taken: Taken, state: &ProbeState) {
    match taken {
        #[cfg(unix)]
        Taken::Pipe(fd) => {
            while pipe_unread(fd).is_some_and(|unread| unread > 0) {
                tokio::time::sleep(DRAIN_POLL).await;
            }
        }
        Taken::Signalled => state.wait_taken().await,
    }
    tokio::time::sleep(PROBE_BOUND).await;
}

/// Bytes written to a pipe and not yet read by the other end; `None` if it cannot be told
/// (then the probe counts as taken).
#[cfg(unix)]
fn pipe_unread(fd: std::os::fd::RawFd) -> Option<usize> {
    let mut unread: libc::c_int = 0;
    // SAFETY: FIONREAD stores one int through the pointer; `fd` is the pipe's write end, kept
    // open by the transport for as long as the probe is pending.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD as _, &mut unread) };
    (rc == 0).then(|| usize::try_from(unread).unwrap_or(0))
}

/// An "unsupported protocol version" refusal whose supported versions all predate
/// [`MODERN_PROTOCOL`].
fn only_initialize_era(error: &ErrorData) -> bool {
    if error.code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
        return false;
    }
    let supported = error
        .data
        .as_ref()
        .and_then(|data| data.get("supported"))
        .and_then(|supported| supported.as_array());
    supported.is_some_and(|versions| {
        versions
            .iter()
            .filter_map(|v| v.as_str())
            .all(|v| Era::of(v) == Era::Legacy)
    })
}

fn answers(message: &ServerJsonRpcMessage, id: &RequestId) -> bool {
    match message {
        ServerJsonRpcMessage::Response(response) => &response.id == id,
        ServerJsonRpcMessage::Error(error) => error.id.as_ref().is_none_or(|e| e == id),
        _ => false,
    }
}

impl<T> Transport<RoleClient> for Probe<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(request) = &item
            && matches!(request.request, ClientRequest::DiscoverRequest(_))
            && let Some(result) = self
                .state
                .replay
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
        {
            // Fresh in the cache: answered here, nothing goes to the server.
            self.state.replayed.store(true, Ordering::SeqCst);
            self.replayed = Some(ServerJsonRpcMessage::response(
                ServerResult::DiscoverResult(result),
                request.id.clone(),
            ));
            return futures::future::Either::Left(std::future::ready(Ok(())));
        }
        if let ClientJsonRpcMessage::Request(request) = &mut item
            && !matches!(request.request, ClientRequest::CallToolRequest(_))
        {
            request.request.get_meta_mut().remove(PROGRESS_TOKEN);
        }
        if let ClientJsonRpcMessage::Request(request) = &item
            && matches!(request.request, ClientRequest::DiscoverRequest(_))
        {
            self.state.probes.fetch_add(1, Ordering::SeqCst);
            self.state.taken.store(false, Ordering::SeqCst);
            self.pending = Some(request.id.clone());
        }
        if let ClientJsonRpcMessage::Request(request) = &item
            && matches!(request.request, ClientRequest::InitializeRequest(_))
            && let Some(id) = self.pending.take()
        {
            // rmcp gave up on the probe by itself (its own timeout, when a server busy starting
            // had not even read it): its late answer must be dropped like any other given up,
            // not taken as an answer to `initialize`.
            self.given_up.insert(id);
        }
        futures::future::Either::Right(self.inner.send(item))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        if let Some(answer) = self.replayed.take() {
            return Some(answer);
        }
        loop {
            let message = match (&self.pending, self.bounded) {
                (Some(id), true) => {
                    let id = id.clone();
                    tokio::select! {
                        message = self.inner.receive() => message,
                        () = probe_deadline(self.taken, &self.state) => {
                            tracing::debug!("server took `server/discover` and did not answer; falling back to `initialize`");
                            self.state.timed_out.store(true, Ordering::SeqCst);
                            self.pending = None;
                            self.given_up.insert(id.clone());
                            if matches!(self.taken, Taken::Signalled) {
                                // rmcp's HTTP worker waits for the answer to its first POST
                                // before it sends anything else: end this connection, and the
                                // caller opens a fresh one with `initialize`. Dropping it
                                // closes the probe's response stream.
                                return None;
                            }
                            let error = ErrorData::new(
                                ErrorCode::METHOD_NOT_FOUND,
                                "no answer to server/discover",
                                None,
                            );
                            return Some(ServerJsonRpcMessage::error(error, Some(id)));
                        }
                    }
                }
                _ => self.inner.receive().await,
            };
            let Some(mut message) = message else {
                // Ended with the probe unanswered, waiting or given up on: some servers die of
                // it only when the next request arrives.
                if self.pending.is_some() || !self.given_up.is_empty() {
                    self.state.closed_on_probe.store(true, Ordering::SeqCst);
                }
                return None;
            };
            if let Some(id) = self.pending.clone() {
                if let ServerJsonRpcMessage::Error(error) = &mut message
                    && error.id.as_ref() != Some(&id)
                    && !self.given_up.contains(error.id.as_ref().unwrap_or(&id))
                {
                    // Before any lifecycle exists, an error can only be about the probe, even
                    // when the server could not say so (some answer with an id of their own):
                    // it is the refusal that sends us to `initialize`.
                    error.id = Some(id.clone());
                }
                if let ServerJsonRpcMessage::Response(response) = &message
                    && response.id == id
                    && !matches!(response.result, ServerResult::DiscoverResult(_))
                {
                    // Any answer that is not a discovery result (some old servers answer an
                    // unknown method with `{}`) is not a modern server's: fall back.
                    let error = ErrorData::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        "server/discover was answered with something other than a discovery result",
                        None,
                    );
                    message = ServerJsonRpcMessage::error(error, Some(id.clone()));
                }
                if let ServerJsonRpcMessage::Error(error) = &mut message
                    && only_initialize_era(&error.error)
                {
                    // rmcp retries "unsupported protocol version" only with versions we
                    // prefer; a server that names none but `initialize`-era ones is of that
                    // era, and the refusal must send us to `initialize` like any other.
                    error.error.code = ErrorCode::METHOD_NOT_FOUND;
                }
                if let ServerJsonRpcMessage::Response(response) = &message
                    && response.id == id
                    && let ServerResult::DiscoverResult(result) = &response.result
                {
                    *self
                        .state
                        .discovered
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = Some(result.clone());
                }
                if answers(&message, &id) {
                    self.pending = None;
                    self.state.probe_answered.store(true, Ordering::SeqCst);
                }
            }
            if let ServerJsonRpcMessage::Response(response) = &message
                && self.given_up.remove(&response.id)
            {
                self.state.probe_answered.store(true, Ordering::SeqCst);
                if matches!(response.result, ServerResult::DiscoverResult(_)) {
                    self.state.late_modern.store(true, Ordering::SeqCst);
                }
                continue;
            }
            if let ServerJsonRpcMessage::Error(error) = &message
                && let Some(id) = &error.id
                && self.given_up.remove(id)
            {
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Whether a failed opening is worth another try with a different plan, and which: a server
/// that exited on the probe is started again and spoken to with `initialize`; a probe given up
/// on whose server turned out modern (or was refused `initialize`) is retried with
/// `server/discover` alone; a cached opening the server no longer accepts is retried with a
/// fresh probe.
pub(crate) fn retry_plan(plan: Plan, state: &ProbeState, cached: bool) -> Option<Plan> {
    match plan {
        // A fresh process, spoken to in its own revision.
        Plan::Probe | Plan::Recall if state.closed_on_probe() => Some(Plan::Initialize),
        Plan::Probe if state.timed_out() || state.late_modern() => Some(Plan::Discover),
        Plan::Recall | Plan::Initialize if cached => Some(Plan::Probe),
        _ => None,
    }
}

/// An rmcp opening failure in words: both halves of a failed fallback.
pub(crate) fn describe(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => format!(
            "server/discover was refused ({discover}) and initialize failed too ({fallback})"
        ),
        ClientInitializeError::JsonRpcError(data) => {
            format!("{} (code {})", data.message, data.code.0)
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_naming_only_old_versions_is_of_the_initialize_era() {
        let refusal = |supported: serde_json::Value| {
            ErrorData::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                Some(serde_json::json!({ "supported": supported })),
            )
        };
        assert!(only_initialize_era(&refusal(serde_json::json!([
            "2025-11-25"
        ]))));
        assert!(!only_initialize_era(&refusal(serde_json::json!([
            "2025-11-25",
            "2026-07-28"
        ]))));
        let other = ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "nope", None);
        assert!(!only_initialize_era(&other));
    }

    #[test]
    fn plans_for_cached_eras_and_retries() {
        assert_eq!(Plan::for_era(None), Plan::Probe);
        assert_eq!(Plan::for_era(Some(Era::Modern)), Plan::Recall);
        assert_eq!(Plan::for_era(Some(Era::Legacy)), Plan::Initialize);
        let quiet = ProbeState::default();
        assert_eq!(retry_plan(Plan::Probe, &quiet, false), None);
        quiet.timed_out.store(true, Ordering::SeqCst);
        assert_eq!(retry_plan(Plan::Probe, &quiet, false), Some(Plan::Discover));
        let fresh = ProbeState::default();
        assert_eq!(
            retry_plan(Plan::Initialize, &fresh, true),
            Some(Plan::Probe)
        );
        assert_eq!(retry_plan(Plan::Initialize, &fresh, false), None);
    }
}
