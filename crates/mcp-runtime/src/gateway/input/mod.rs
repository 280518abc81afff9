//! The questions a backend asks during a call (elicitation, sampling, roots), passed to the
//! gateway client that made the call, in that client's era:
//!
//! - a 2025-11-25 client (a session) is sent each request over its session, from the call's
//!   own request handler so that it travels with the call, and the answers go back to the
//!   backend;
//! - a 2026-07-28 client gets an `input_required` result carrying the backend's requests and
//!   a `requestState`; the call meanwhile stays parked here. When the client retries with its
//!   `inputResponses` and that state, the answers go to the backend and the call goes on.
//!
//! A `prompts/get` whose backend asks goes the same way (see `prompt`), parked and resumed
//! under its prompt's name; only a 2026-07-28 client of a 2026-07-28 backend gets the
//! backend's own `input_required` result, as sent (its `requestState` is the backend's).
//!
//! The backend sees the answers in its own era: a 2026-07-28 backend as its `inputResponses`
//! (see `client::mrtr`), an older one as the answer to its waiting request (see
//! `client::ask`). Only what the client declared is asked of it (the connection's fallback
//! answers the rest), and a 2026-07-28 backend is told the client's capabilities.
//!
//! A 2026-07-28 backend keeps nothing while its client answers, and neither does the gateway:
//! the call is carried whole in the client's `requestState`, so that any replica sharing the
//! state key can resume it (see `resume`). Only a call whose backend waits for its answer (a
//! backend of an older revision) is parked in this gateway's memory.
//!
//! A `requestState` names a parked call, the gateway instance that parked it and when it
//! expires, sealed under the gateway's state key (see `request_state`), so a state the client
//! forged or altered is refused; it is spent by the retry that answers, so a replay finds
//! nothing. A parked call's state that reaches another instance is refused with a word on
//! affinity. At most [`MAX_PARKED`] calls wait at once, each at most the call's timeout (else
//! [`DEFAULT_PARK`]); an expired call is cancelled at its backend.
//!
//! Its rooms: `resume` (a 2026-07-28 backend's call carried whole in its client's state, which
//! any replica resumes), `request_state` (the sealed `requestState`) and `channels` (the
//! channels of ended calls, kept for the next calls).

mod channels;
pub(super) mod request_state;
pub(super) mod resume;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use futures::FutureExt as _;
#[allow(deprecated)] // logging levels: current in the revisions with sessions
use rmcp::model::LoggingLevel;
use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ProgressToken, ProtocolVersion, ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use channels::{Pool, Pooled};
use request_state::{Resumes, Sealer};
use resume::{Fresh, Spent};

use super::progress::Forwarder;
use super::state_key::{Keyring, StateKeyFile, random_bytes};
use crate::client::ClientError;
use crate::client::ask::{CallInput, QUESTIONS_QUEUED, Question};
use crate::client::model::tool_request::Arguments;
use crate::client::{CallOptions, ProgressUpdate, ToolOutput};
use crate::fsutil::hex;
use crate::manager::{ManagerError, McpManager};
use crate::tools::{McpTool, error_output};

/// The error a 2026-07-28 server answers when a request needs a capability the client did not
/// declare (`MissingRequiredClientCapabilityError`).
const MISSING_CAPABILITY: i32 = -32021;

/// Most calls parked for their client's answers at once.
pub const MAX_PARKED: usize = 256;

/// How long a parked call waits for its client when the gateway sets no call timeout.
pub const DEFAULT_PARK: Duration = Duration::from_secs(300);

/// What a parked request is for, as the client named it: a `requestState` only resumes a
/// request for the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Subject {
    /// A `tools/call` of this tool.
    Tool(String),
    /// A `prompts/get` of this prompt.
    Prompt(String),
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Tool(name) => write!(f, "a call of `{name}`"),
            Subject::Prompt(name) => write!(f, "a get of the prompt `{name}`"),
        }
    }
}

/// What a backend request in flight brings back.
pub(crate) enum Landed {
    /// A tool's output.
    Tool(ToolOutput),
    /// A prompt, in the wire format.
    Prompt(Value),
}

/// One backend call on its way, with the questions it may ask.
pub(crate) struct Flight {
    /// First: a call still running when the flight drops keeps its channels' senders, so
    /// that they are not reused (see `channels`).
    call: BackendCall,
    questions: Pooled<Box<Question>>,
    /// The backend's progress, when the client asked for progress.
    progress: Option<Pooled<ProgressUpdate>>,
    /// The question the client was asked and has not answered yet (2026-07-28 clients).
    waiting: Option<Question>,
    /// What the call is for, as the client named it.
    pub(super) subject: Subject,
    /// The tool called, for a tool call.
    pub(super) backend: Option<Arc<McpTool>>,
    /// Dropping the flight cancels the backend call.
    _stop: DropGuard,
}

impl Flight {
    /// Cancel the backend call, and drop `keep` once the call has ended (its cancellation
    /// sent), on a task of its own.
    fn cancel_keeping<T: Send + 'static>(mut self, keep: T) {
        let call = self.call.0.take();
        // Fires the stop token.
        drop(self);
        if let Some(call) = call
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = call.await;
                drop(keep);
            });
        }
    }

    /// The tool or prompt the call is for, as the client named it.
    pub(crate) fn tool(&self) -> &str {
        match &self.subject {
            Subject::Tool(name) | Subject::Prompt(name) => name,
        }
    }
}

/// A backend call, polled from the task of the client's request while the client waits for
/// it: a task of its own per call would cost a spawn, a wake-up across threads and copies of
/// the call's large future. Dropped unfinished (the client cancelled or left, or its parked
/// call expired), it finishes on a task of its own, so that the backend is still told the
/// call was cancelled (the flight's cancel token fires as it drops).
struct BackendCall(Option<futures::future::BoxFuture<'static, Result<Landed, Stopped>>>);

impl Future for BackendCall {
    type Output = Result<Landed, Stopped>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(call) = self.0.as_mut() else {
            return Poll::Ready(Err(Stopped::Aborted));
        };
        let result = std::task::ready!(call.as_mut().poll(cx));
        self.0 = None;
        Poll::Ready(result)
    }
}

impl Drop for BackendCall {
    fn drop(&mut self) {
        if let Some(call) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(call);
        }
    }
}

/// How a stretch of a call ended.
pub(crate) enum Outcome<T = ToolOutput> {
    /// The backend answered (or the call stopped).
    Done(Result<T, Stopped>),
    /// The client must answer first (2026-07-28).
    Asked(InputRequiredResult),
}

/// What a retry with a `requestState` brings back.
pub(crate) enum Resumed {
    /// The call, its question answered.
    Flight(Flight),
    /// Not every question was answered: they are asked again.
    Again(InputRequiredResult),
    /// A carried call, its questions answered: it goes to its backend afresh (see `resume`).
    Fresh(Fresh),
}

/// A call parked until its client answers.
struct Parked {
    flight: Flight,
    state: String,
    expiry: tokio::task::AbortHandle,
}

/// The parked calls of one gateway, and the keys its states are sealed with.
pub(crate) struct Inputs {
    pub(super) sealer: Sealer,
    /// Names this gateway instance in the states of the calls it parks.
    instance: String,
    parked: Mutex<HashMap<String, Parked>>,
    /// The carried states resumed here (see `resume`).
    pub(super) spent: Spent,
    pub(super) park_for: Duration,
    /// The channels of ended calls, for their backends' questions and progress.
    question_channels: Arc<Pool<Box<Question>>>,
    progress_channels: Arc<Pool<ProgressUpdate>>,
}

impl Inputs {
    /// The parked calls of a gateway whose calls time out after `call_timeout`, its states
    /// sealed under the keys of `state_key` (else a key of this process).
    pub(crate) fn new(
        call_timeout: Option<Duration>,
        state_key: Option<&StateKeyFile>,
    ) -> Arc<Inputs> {
        let park_for = call_timeout.unwrap_or(DEFAULT_PARK);
        Arc::new(Inputs {
            // A rotated-out key still opens the states it sealed while they may wait.
            sealer: Sealer::new(Keyring::new(state_key, park_for)),
            instance: hex(&random_bytes()[..8]),
            parked: Mutex::default(),
            spent: Spent::default(),
            park_for,
            question_channels: Pool::new(QUESTIONS_QUEUED),
            progress_channels: Pool::new(crate::client::EVENT_BUFFER),
        })
    }

    /// Set up `call` (which calls the backend with the settings it is given) with a route
    /// for its questions to the client that declared `declared`, and for the backend's
    /// progress when the client asked for progress (`progress`). It runs while the flight is
    /// driven (see [`drive`](Self::drive)); parked, it waits for the client's answers.
    pub(crate) fn start<F, Fut>(
        &self,
        tool: Arc<McpTool>,
        declared: Arc<ClientCapabilities>,
        progress: bool,
        settings: CallOptions,
        call: F,
    ) -> Flight
    where
        F: FnOnce(CallOptions) -> Fut,
        Fut: std::future::Future<Output = Result<ToolOutput, Stopped>> + Send + 'static,
    {
        let mut flight = self.start_for(
            Subject::Tool(tool.name.clone()),
            declared,
            progress,
            settings,
            move |settings| {
                // Boxed where made: kilobytes, which each wrapper below would move again.
                let call = Box::pin(call(settings));
                async move { call.await.map(Landed::Tool) }
            },
        );
        flight.backend = Some(tool);
        flight
    }

    /// [`start`](Self::start) for any `subject`.
    pub(crate) fn start_for<F, Fut>(
        &self,
        subject: Subject,
        declared: Arc<ClientCapabilities>,
        progress: bool,
        mut settings: CallOptions,
        call: F,
    ) -> Flight
    where
        F: FnOnce(CallOptions) -> Fut,
        Fut: std::future::Future<Output = Result<Landed, Stopped>> + Send + 'static,
    {
        let questions = self.question_channels.take();
        let input = CallInput::with_route(declared, questions.sender());
        // Only for a client that asked: without it the call sets up no channel nor route, and
        // whatever the backend reports is dropped as it arrives.
        let progress = progress.then(|| {
            let channel = self.progress_channels.take();
            settings.progress = Some(channel.sender());
            channel
        });
        let stop = CancellationToken::new();
        settings.input = Some(input);
        settings.cancel = Some(stop.clone());
        // A panic in the call ends it as aborted, as a task's would, not the client's request.
        let call = std::panic::AssertUnwindSafe(call(settings))
            .catch_unwind()
            .map(|ended| ended.unwrap_or(Err(Stopped::Aborted)));
        Flight {
            call: BackendCall(Some(Box::pin(call))),
            questions,
            progress,
            waiting: None,
            subject,
            backend: None,
            _stop: stop.drop_guard(),
        }
    }

    /// Run `flight` for the request of `context` until the backend answers or the client must
    /// (a 2026-07-28 client: the call is parked and the client gets an `input_required`
    /// result). The backend's progress goes to `progress`, under the request's own token. The
    /// client's cancellation (or departure) drops the flight, which cancels the backend call.
    /// `stateless`: the client speaks a revision without `initialize` (see [`Asker`]).
    pub(crate) async fn drive(
        self: &Arc<Self>,
        flight: Flight,
        context: &RequestContext<RoleServer>,
        stateless: bool,
        progress: Option<&mut Forwarder>,
    ) -> Result<Outcome, McpError> {
        Ok(
            match self.drive_any(flight, context, stateless, progress).await? {
                Outcome::Asked(asked) => Outcome::Asked(asked),
                Outcome::Done(Ok(Landed::Tool(output))) => Outcome::Done(Ok(output)),
                Outcome::Done(Ok(Landed::Prompt(_))) => Outcome::Done(Err(Stopped::Refused(
                    McpError::internal_error("a prompt came back for a tool call", None),
                ))),
                Outcome::Done(Err(stopped)) => Outcome::Done(Err(stopped)),
            },
        )
    }

    /// [`drive`](Self::drive) for a flight of any subject.
    pub(crate) async fn drive_any(
        self: &Arc<Self>,
        mut flight: Flight,
        context: &RequestContext<RoleServer>,
        stateless: bool,
        mut progress: Option<&mut Forwarder>,
    ) -> Result<Outcome<Landed>, McpError> {
        // Asked from this task, so that the request goes out with the call's own (the
        // streamable HTTP transport sends it on the call's response stream).
        let mut answering: Option<futures::future::BoxFuture<'static, ()>> = None;
        let result = loop {
            tokio::select! {
                result = &mut flight.call => break result,
                Some(update) = next_progress(&mut flight.progress) => {
                    if let Some(progress) = &mut progress {
                        progress.send(update).await;
                    }
                }
                Some(question) = flight.questions.receiver().recv(), if answering.is_none() => {
                    let question = *question;
                    if stateless {
                        if let Some(asked) = self.carry(&flight, &question) {
                            // The backend holds nothing open for the call: ending it here
                            // cancels nothing there.
                            return Ok(Outcome::Asked(asked));
                        }
                        return self.park(flight, question);
                    }
                    answering = Some(Box::pin(ask_session(context.peer.clone(), question)));
                }
                () = until_done(&mut answering) => answering = None,
                () = context.ct.cancelled() => {
                    // The question is given up only once the backend has been told the call
                    // is cancelled: given up first, the backend would get its refusal, could
                    // answer the call before the cancellation reached it, and would never see
                    // one.
                    flight.cancel_keeping(answering);
                    return Err(McpError::internal_error("request cancelled", None));
                }
            }
        };
        // Progress handled before the result still belongs before it.
        if let (Some(progress), Some(updates)) = (&mut progress, &mut flight.progress) {
            while let Ok(update) = updates.receiver().try_recv() {
                progress.send(update).await;
            }
        }
        Ok(Outcome::Done(result))
    }

    /// Take the call `state` names back for `tool`, its questions answered by `responses`.
    pub(crate) fn resume(
        &self,
        tool: &str,
        state: &str,
        responses: Option<InputResponses>,
    ) -> Result<Resumed, McpError> {
        self.resume_for(&Subject::Tool(tool.to_owned()), state, responses)
    }

    /// [`resume`](Self::resume) for any `subject`.
    pub(crate) fn resume_for(
        &self,
        subject: &Subject,
        state: &str,
        responses: Option<InputResponses>,
    ) -> Result<Resumed, McpError> {
        let (resumes, expires) = self
            .sealer
            .open(state)
            .map_err(|refused| McpError::invalid_params(refused.message(), None))?;
        let (id, instance) = match resumes {
            Resumes::Parked { call, gateway } => (call, gateway),
            Resumes::Carried(carried) => {
                return self.resume_carried(subject, state, (carried, expires), responses);
            }
        };
        let mut parked = self.lock();
        let Some(entry) = parked.get(&id) else {
            if instance != self.instance {
                return Err(McpError::invalid_params(
                    "requestState names a call waiting on another gateway instance: its \
                     backend keeps the call open, so the client's retry must reach the \
                     instance that asked (affinity at the load balancer)",
                    None,
                ));
            }
            return Err(McpError::invalid_params(
                "requestState names no call waiting for input (answered already, or expired)",
                None,
            ));
        };
        if entry.flight.subject != *subject {
            return Err(McpError::invalid_params(
                format!(
                    "requestState belongs to {}, not to {subject}",
                    entry.flight.subject
                ),
                None,
            ));
        }
        let asked = entry
            .flight
            .waiting
            .as_ref()
            .map(|q| q.requests.clone())
            .unwrap_or_default();
        let Some(responses) = answers_to(&asked, responses)? else {
            // Asked again, under the same state: nothing was spent.
            return Ok(Resumed::Again(InputRequiredResult::new(
                Some(asked),
                Some(entry.state.clone()),
            )));
        };
        let Some(entry) = parked.remove(&id) else {
            return Err(McpError::internal_error("the parked call vanished", None));
        };
        drop(parked);
        entry.expiry.abort();
        let mut flight = entry.flight;
        if let Some(question) = flight.waiting.take() {
            // A backend that gave up meanwhile finds out when the flight is driven.
            let _ = question.answer.send(Ok(responses));
        }
        Ok(Resumed::Flight(flight))
    }

    /// Park `flight` until its client answers `question`.
    fn park<T>(
        self: &Arc<Self>,
        mut flight: Flight,
        question: Question,
    ) -> Result<Outcome<T>, McpError> {
        let requests = question.requests.clone();
        let mut parked = self.lock();
        if parked.len() >= MAX_PARKED {
            // Dropping the flight cancels the backend call, and the question with it.
            return Err(McpError::internal_error(
                format!(
                    "too many calls ({MAX_PARKED}) wait for their clients' input; try again later"
                ),
                None,
            ));
        }
        let id = hex(&random_bytes()[..16]);
        let expires = SystemTime::now() + self.park_for;
        let sealed = Resumes::Parked {
            call: id.clone(),
            gateway: self.instance.clone(),
        };
        let Some(state) = self.sealer.seal(&sealed, expires) else {
            return Err(McpError::internal_error(
                "the call's requestState could not be sealed",
                None,
            ));
        };
        flight.waiting = Some(question);
        let inputs: Weak<Inputs> = Arc::downgrade(self);
        let expired = id.clone();
        let park_for = self.park_for;
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(park_for).await;
            if let Some(inputs) = inputs.upgrade() {
                let gone = inputs.lock().remove(&expired);
                if gone.is_some() {
                    tracing::info!(
                        "gateway: a call waited too long for its client's input and was cancelled"
                    );
                }
            }
        })
        .abort_handle();
        parked.insert(
            id,
            Parked {
                flight,
                state: state.clone(),
                expiry,
            },
        );
        Ok(Outcome::Asked(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many calls are parked.
    #[cfg(test)]
    pub(super) fn parked_calls(&self) -> usize {
        self.lock().len()
    }
}

/// A retry's `responses`, each checked to answer one of the requests `asked` with an object;
/// `None` when a request is left unanswered (it is asked again).
pub(super) fn answers_to(
    asked: &InputRequests,
    responses: Option<InputResponses>,
) -> Result<Option<InputResponses>, McpError> {
    let responses = responses.unwrap_or_default();
    if let Some(key) = responses.keys().find(|key| !asked.contains_key(*key)) {
        return Err(McpError::invalid_params(
            format!("inputResponses.{key} answers no request of this call"),
            None,
        ));
    }
    if let Some((key, _)) = responses.iter().find(|(_, answer)| !answer.is_object()) {
        return Err(McpError::invalid_params(
            format!("inputResponses.{key} must be an object"),
            None,
        ));
    }
    Ok(asked
        .keys()
        .all(|key| responses.contains_key(key))
        .then_some(responses))
}

/// Why a call ended without a result.
pub(crate) enum Stopped {
    /// The client cancelled it, or left.
    Aborted,
    /// The backend refused it in a way the client must see as the error it is.
    Refused(McpError),
}

/// Call `tool`'s backend as the tool bridge does (a failure becomes an error result), except
/// that a refusal for want of a client capability reaches the client as that error: it is the
/// client, not the gateway, that did not declare it.
pub(crate) async fn call_backend(
    manager: McpManager,
    tool: Arc<McpTool>,
    arguments: Arguments,
    mut settings: CallOptions,
) -> Result<ToolOutput, Stopped> {
    let cap = settings.output_cap.take();
    match manager
        .call_tool_with(&tool.server, &tool.tool, arguments, settings)
        .await
    {
        Ok(output) => Ok(match &cap {
            Some(cap) => cap.apply(&tool.name, output),
            None => output,
        }),
        Err(error) if error.is_cancelled() => Err(Stopped::Aborted),
        Err(ManagerError::Client(ClientError::Rpc {
            code: MISSING_CAPABILITY,
            message,
            data,
            ..
        })) => Err(Stopped::Refused(McpError::new(
            rmcp::model::ErrorCode(MISSING_CAPABILITY),
            message,
            data.map(|data| *data),
        ))),
        Err(error) => Ok(error_output(format!("MCP error: {error}"))),
    }
}

/// Ask a session client each request of `question` in turn, and hand the answers back.
async fn ask_session(peer: Peer<RoleServer>, question: Question) {
    let mut answers = InputResponses::new();
    for (key, request) in question.requests {
        let request = match request {
            InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
            InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
            InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
            _ => {
                let _ = question
                    .answer
                    .send(Err(format!("`{key}` asks for input of an unknown kind")));
                return;
            }
        };
        let answer = match peer.send_request(request).await {
            Ok(result) => serde_json::to_value(result).map_err(|e| e.to_string()),
            Err(e) => Err(format!("the client answered with an error: {e}")),
        };
        match answer {
            Ok(answer) => {
                answers.insert(key, answer);
            }
            Err(e) => {
                let _ = question.answer.send(Err(e));
                return;
            }
        }
    }
    let _ = question.answer.send(Ok(answers));
}

/// The backend's next progress update; never, when the client asked for none.
async fn next_progress(progress: &mut Option<Pooled<ProgressUpdate>>) -> Option<ProgressUpdate> {
    match progress {
        Some(progress) => progress.receiver().recv().await,
        None => std::future::pending().await,
    }
}

/// Resolves when `work` is done; never when there is none.
async fn until_done(work: &mut Option<futures::future::BoxFuture<'static, ()>>) {
    match work {
        Some(work) => work.await,
        None => std::future::pending().await,
    }
}

/// What a call's request says of its client, read once per call: the revision it speaks,
/// what it declared it can be asked, its progress token and the log level it asked for.
#[allow(deprecated)] // logging levels: current in the revisions with sessions
pub(crate) struct Asker {
    /// It speaks a revision without `initialize` (2026-07-28): its calls are parked while it
    /// answers, and its results say what they are.
    pub(crate) stateless: bool,
    /// What it declared it can be asked (per request in 2026-07-28, the session's before).
    pub(crate) declared: Arc<ClientCapabilities>,
    pub(crate) progress: Option<ProgressToken>,
    pub(crate) log_level: Option<LoggingLevel>,
    /// The trace context its request carries, passed on to the backend unchanged (the gateway
    /// makes no span of its own).
    pub(crate) trace: crate::client::TraceContext,
}

#[allow(deprecated)] // logging levels: current in the revisions with sessions
impl Asker {
    /// As rmcp's accessors read it from the request of `context`.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Asker {
        let meta = &context.meta;
        let mut asker = Asker::from_parts(
            meta.protocol_version(),
            meta.client_capabilities().map(Arc::new),
            meta.get_progress_token(),
            meta.log_level(),
            context,
        );
        asker.trace = crate::client::TraceContext::from_meta(&meta.0.0);
        asker
    }

    /// From what a request's `_meta` says, read beforehand, with what rmcp's accessors fall
    /// back on where it says nothing: the revision and capabilities of `context`'s session.
    /// (`context`'s own `_meta` says nothing that the other arguments do not.)
    pub(crate) fn from_parts(
        version: Option<ProtocolVersion>,
        declared: Option<Arc<ClientCapabilities>>,
        progress: Option<ProgressToken>,
        log_level: Option<LoggingLevel>,
        context: &RequestContext<RoleServer>,
    ) -> Asker {
        let version = version.or_else(|| context.protocol_version());
        Asker {
            stateless: version.is_some_and(|v| !v.has_initialize()),
            declared: declared
                .unwrap_or_else(|| Arc::new(context.client_capabilities().unwrap_or_default())),
            progress,
            log_level,
            trace: crate::client::TraceContext::default(),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use serde_json::json;

    use super::*;

    pub(crate) fn tool() -> Arc<McpTool> {
        Arc::new(McpTool {
            name: "mcp_s_t".into(),
            server: "s".into(),
            tool: "t".into(),
            definition: serde_json::from_value(json!({"name": "t", "inputSchema": {}})).unwrap(),
            label: "mcp:s".into(),
            deferred: false,
        })
    }

    /// A flight whose backend call never ends, and a question it asked.
    // Roots are deprecated by the 2026-07-28 revision, but still asked by older servers.
    #[allow(deprecated)]
    pub(crate) fn waiting_flight(inputs: &Inputs) -> (Flight, Question) {
        let flight = inputs.start(
            tool(),
            Arc::default(),
            false,
            CallOptions::default(),
            |_| std::future::pending(),
        );
        let mut requests = rmcp::model::InputRequests::new();
        requests.insert(
            "roots".into(),
            InputRequest::ListRoots(rmcp::model::ListRootsRequest::default()),
        );
        let (answer, _) = tokio::sync::oneshot::channel();
        let question = Question {
            requests,
            answer,
            round: None,
        };
        (flight, question)
    }

    pub(crate) fn answers() -> Option<InputResponses> {
        Some([("roots".to_owned(), json!({"roots": []}))].into())
    }

    pub(crate) fn shared_key(dir: &tempfile::TempDir) -> StateKeyFile {
        StateKeyFile::generate(dir.path().join("state.key")).unwrap()
    }

    #[tokio::test]
    async fn parked_calls_are_bounded_in_number_and_time() {
        let inputs = Inputs::new(Some(Duration::from_millis(200)), None);
        let mut states = Vec::new();
        for _ in 0..MAX_PARKED {
            let (flight, question) = waiting_flight(&inputs);
            match inputs.park::<ToolOutput>(flight, question) {
                Ok(Outcome::Asked(asked)) => states.push(asked.request_state.unwrap()),
                _ => panic!("not parked"),
            }
        }
        let (flight, question) = waiting_flight(&inputs);
        assert!(
            inputs.park::<ToolOutput>(flight, question).is_err(),
            "one too many"
        );
        // Another tool's call cannot take the state; a retry without answers is asked again.
        assert!(inputs.resume("other", &states[0], None).is_err());
        assert!(matches!(
            inputs.resume("mcp_s_t", &states[0], None),
            Ok(Resumed::Again(_))
        ));
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(inputs.lock().len(), 0, "expired calls are dropped");
        assert!(inputs.resume("mcp_s_t", &states[1], None).is_err());
    }

    #[tokio::test]
    async fn a_parked_calls_state_reaching_another_instance_asks_for_affinity() {
        let dir = tempfile::tempdir().unwrap();
        let key = shared_key(&dir);
        let (one, two) = (Inputs::new(None, Some(&key)), Inputs::new(None, Some(&key)));
        let (flight, question) = waiting_flight(&one);
        let Ok(Outcome::Asked(asked)) = one.park::<ToolOutput>(flight, question) else {
            panic!("not parked");
        };
        let state = asked.request_state.unwrap();
        let refused = two.resume("mcp_s_t", &state, answers()).err().unwrap();
        assert!(
            refused.message.contains("another gateway instance"),
            "{refused:?}"
        );
        assert!(matches!(
            one.resume("mcp_s_t", &state, answers()),
            Ok(Resumed::Flight(_))
        ));
    }
}
