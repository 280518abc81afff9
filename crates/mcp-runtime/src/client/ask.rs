//! A call's own way to answer the server's questions. A call that carries a [`CallInput`]
//! (a gateway relaying them to the client that made the call) has the server's
//! `elicitation/create`, `sampling/createMessage` and `roots/list` about it handed over as one
//! batch of keyed input requests, whether they came as server requests (2025-11-25 and older)
//! or embedded in an `input_required` result (2026-07-28). The connection's host handlers
//! answer whatever the call's asker did not declare, and every call without one.
//!
//! Which call a server request is about:
//!
//! - over streamable HTTP, a request the server sends on the response stream of one of our
//!   POSTs belongs to the request that opened that stream (rmcp marks it with that request's
//!   id), so it goes to the call that sent that request, however many asking calls run; one
//!   on the response stream of a request that has no asker is answered by the host handlers;
//! - everywhere else (stdio, the legacy SSE transport, the standalone GET stream) a server
//!   request carries nothing that names its call, so one that comes while exactly one asking
//!   call runs on the connection goes to that call; with several, the host handlers answer it
//!   (there is no telling whose it is).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, InputRequest, InputRequests, InputResponses, RequestId};
use rmcp::service::InboundStreamOrigin;
use tokio::sync::{Notify, mpsc, oneshot};

/// Questions one call may have on their way at once.
#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
pub(crate) const QUESTIONS_QUEUED: usize = 4;

/// How long a server request that came on the response stream of a request being sent waits
/// for that request's asker to be recorded (rmcp numbers a request only as it sends it, so
/// a quick server can ask before the sender has taken note of the number).
const SENDING_GRACE: Duration = Duration::from_secs(5);

/// The server's questions of one batch, and where their answers go (keyed like the requests).
#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
pub(crate) struct Question {
    pub requests: InputRequests,
    pub answer: oneshot::Sender<Result<InputResponses, String>>,
    /// Set when they come in a 2026-07-28 server's `input_required` result: the server then
    /// keeps nothing, and its call can be sent again from scratch with the answers.
    pub round: Option<Round>,
}

/// A 2026-07-28 server's round of questions, as what is needed to send its call again: the
/// server's `requestState` and the answers the host handlers gave to the requests the asker
/// was not asked.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // read by the gateway only
pub(crate) struct Round {
    pub request_state: Option<String>,
    pub answered: InputResponses,
}

/// Where the questions of one call go, and what the one answering them declared.
#[derive(Clone)]
pub(crate) struct CallInput {
    /// Boxed: the channel allocates a block of slots up front, for every call, and most calls
    /// ask nothing; a pointer's slots keep that block small.
    questions: mpsc::Sender<Box<Question>>,
    declared: Arc<ClientCapabilities>,
}

impl std::fmt::Debug for CallInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallInput")
            .field("declared", &self.declared)
            .finish_non_exhaustive()
    }
}

impl CallInput {
    /// A route for questions answered by someone who declared `declared`; the receiver gets
    /// them. Dropping the receiver (or a question's answer) fails the question.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn new(
        declared: Arc<ClientCapabilities>,
    ) -> (CallInput, mpsc::Receiver<Box<Question>>) {
        let (questions, receiver) = mpsc::channel(QUESTIONS_QUEUED);
        (CallInput::with_route(declared, questions), receiver)
    }

    /// [`new`](Self::new) with the channel's sender given, a channel of
    /// [`QUESTIONS_QUEUED`] questions.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn with_route(
        declared: Arc<ClientCapabilities>,
        questions: mpsc::Sender<Box<Question>>,
    ) -> CallInput {
        CallInput {
            questions,
            declared,
        }
    }

    /// Whether the asker declared what `request` needs.
    pub(crate) fn can(&self, request: &InputRequest) -> bool {
        match request {
            InputRequest::Elicitation(_) => self.declared.elicitation.is_some(),
            InputRequest::CreateMessage(_) => self.declared.sampling.is_some(),
            InputRequest::ListRoots(_) => self.declared.roots.is_some(),
            _ => false,
        }
    }

    /// The capabilities a 2026-07-28 server is told for this call: the connection's own
    /// (`base`) for roots, which the host answers itself when the asker cannot, and the
    /// asker's for elicitation and sampling, so that a server never asks what nobody answers.
    pub(crate) fn capabilities(&self, mut base: ClientCapabilities) -> ClientCapabilities {
        base.elicitation = self.declared.elicitation.clone();
        base.sampling = self.declared.sampling.clone();
        // Tasks too: a server makes a task only for an asker that can follow one (a
        // gateway passes it through), and refuses a task-only tool to the others.
        let tasks = super::model::task::TASKS_EXTENSION;
        let asker_follows = self
            .declared
            .extensions
            .as_ref()
            .is_some_and(|extensions| extensions.contains_key(tasks));
        if !asker_follows && let Some(extensions) = &mut base.extensions {
            extensions.remove(tasks);
        }
        base
    }

    /// Ask the batch and wait for the answers.
    pub(crate) async fn ask(&self, requests: InputRequests) -> Result<InputResponses, String> {
        self.ask_in(requests, None).await
    }

    /// [`ask`](Self::ask) the batch of a 2026-07-28 server's `round`.
    pub(crate) async fn ask_in(
        &self,
        requests: InputRequests,
        round: Option<Round>,
    ) -> Result<InputResponses, String> {
        let (answer, answered) = oneshot::channel();
        let question = Box::new(Question {
            requests,
            answer,
            round,
        });
        if self.questions.send(question).await.is_err() {
            return Err("the call that asked is over".into());
        }
        answered.await.map_err(|_| {
            "the question was given up (the call ended or its client left)".to_owned()
        })?
    }
}

/// The asking calls in flight on one connection.
#[derive(Clone, Default)]
pub(crate) struct AskingCalls {
    inner: Arc<Inflight>,
}

#[derive(Default)]
struct Inflight {
    state: Mutex<Calls>,
    /// Told whenever a request of an asking call is recorded as sent.
    recorded: Notify,
    next: AtomicU64,
}

#[derive(Default)]
struct Calls {
    /// Every asking call, under its registration number.
    calls: Vec<(u64, CallInput)>,
    /// The asker of each request in flight that an asking call sent.
    requests: HashMap<RequestId, CallInput>,
    /// Requests of asking calls handed to rmcp whose numbers are not recorded yet.
    sending: usize,
}

/// Which asker a server request goes to.
#[derive(Debug)]
pub(crate) enum Route {
    /// The asking call it belongs to.
    Call(CallInput),
    /// Nobody's: the host handlers answer.
    Host,
}

impl AskingCalls {
    /// Register `input` for as long as the returned guard lives.
    pub(crate) fn register(&self, input: CallInput) -> Registered {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.lock().calls.push((id, input));
        Registered {
            calls: self.clone(),
            id,
        }
    }

    /// A request of an asking call is about to be handed to rmcp; call
    /// [`Sending::sent`] with the number rmcp gave it.
    pub(crate) fn sending(&self) -> Sending {
        self.lock().sending += 1;
        Sending {
            calls: self.clone(),
            done: false,
        }
    }

    /// Where a server request goes that came from `origin` (the stream rmcp saw it on).
    pub(crate) async fn route(&self, origin: Option<&InboundStreamOrigin>) -> Route {
        let Some(InboundStreamOrigin::OutboundRequest(id)) = origin else {
            return self.only();
        };
        let deadline = tokio::time::Instant::now() + SENDING_GRACE;
        loop {
            let recorded = self.inner.recorded.notified();
            {
                let calls = self.lock();
                if let Some(input) = calls.requests.get(id) {
                    return Route::Call(input.clone());
                }
                if calls.sending == 0 {
                    // The stream is a request's that has no asker.
                    return Route::Host;
                }
            }
            if tokio::time::timeout_at(deadline, recorded).await.is_err() {
                return Route::Host;
            }
        }
    }

    /// The one asking call in flight, if there is exactly one.
    fn only(&self) -> Route {
        match self.lock().calls.as_slice() {
            [(_, input)] => Route::Call(input.clone()),
            _ => Route::Host,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An asking call's registration; dropping it ends it.
pub(crate) struct Registered {
    calls: AskingCalls,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.calls.lock().calls.retain(|(id, _)| *id != self.id);
    }
}

/// A request of an asking call on its way to rmcp (see [`AskingCalls::sending`]).
pub(crate) struct Sending {
    calls: AskingCalls,
    done: bool,
}

impl Sending {
    /// rmcp sent the request as `id`: the server's requests on its response stream go to
    /// `input` until the returned guard is dropped.
    pub(crate) fn sent(mut self, id: RequestId, input: CallInput) -> Sent {
        {
            let mut calls = self.calls.lock();
            calls.sending = calls.sending.saturating_sub(1);
            calls.requests.insert(id.clone(), input);
        }
        self.done = true;
        self.calls.inner.recorded.notify_waiters();
        Sent {
            calls: self.calls.clone(),
            id,
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if !self.done {
            // Never sent: nobody waits for its number any more.
            let mut calls = self.calls.lock();
            calls.sending = calls.sending.saturating_sub(1);
            drop(calls);
            self.calls.inner.recorded.notify_waiters();
        }
    }
}

/// A request of an asking call in flight; dropping it forgets the request.
pub(crate) struct Sent {
    calls: AskingCalls,
    id: RequestId,
}

impl Drop for Sent {
    fn drop(&mut self) {
        self.calls.lock().requests.remove(&self.id);
    }
}

/// Ask one request of `input` under `key` and decode its answer.
pub(crate) async fn ask_one<T: serde::de::DeserializeOwned>(
    input: &CallInput,
    key: &str,
    request: InputRequest,
) -> Result<T, String> {
    let mut requests = InputRequests::new();
    requests.insert(key.to_owned(), request);
    let mut answers = input.ask(requests).await?;
    let answer = answers
        .remove(key)
        .ok_or_else(|| format!("the client sent no answer for `{key}`"))?;
    serde_json::from_value(answer).map_err(|e| format!("the client's answer is invalid: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asker() -> CallInput {
        CallInput::new(Arc::new(ClientCapabilities::default())).0
    }

    fn same(route: Route, input: &CallInput) -> bool {
        matches!(route, Route::Call(routed) if Arc::ptr_eq(&routed.declared, &input.declared))
    }

    fn on_stream_of(id: i64) -> InboundStreamOrigin {
        InboundStreamOrigin::OutboundRequest(RequestId::Number(id))
    }

    #[tokio::test]
    async fn a_request_without_a_stream_goes_to_the_only_asking_call() {
        let calls = AskingCalls::default();
        let (first, second) = (asker(), asker());
        let _first = calls.register(first.clone());
        assert!(same(calls.route(None).await, &first));
        let unassociated = InboundStreamOrigin::Unassociated;
        assert!(same(calls.route(Some(&unassociated)).await, &first));
        let second = calls.register(second);
        assert!(matches!(calls.route(None).await, Route::Host), "whose?");
        drop(second);
        assert!(same(calls.route(None).await, &first));
    }

    #[tokio::test]
    async fn a_request_on_a_response_stream_goes_to_the_call_that_sent_it() {
        let calls = AskingCalls::default();
        let (first, second) = (asker(), asker());
        let _registered = (
            calls.register(first.clone()),
            calls.register(second.clone()),
        );
        let _one = calls.sending().sent(RequestId::Number(1), first.clone());
        let two = calls.sending().sent(RequestId::Number(2), second.clone());
        assert!(same(calls.route(Some(&on_stream_of(1))).await, &first));
        assert!(same(calls.route(Some(&on_stream_of(2))).await, &second));
        // A request that has no asker, or is over.
        assert!(matches!(
            calls.route(Some(&on_stream_of(3))).await,
            Route::Host
        ));
        drop(two);
        assert!(matches!(
            calls.route(Some(&on_stream_of(2))).await,
            Route::Host
        ));
    }

    #[tokio::test]
    async fn a_request_that_beats_its_senders_note_waits_for_it() {
        let calls = AskingCalls::default();
        let input = asker();
        let sending = calls.sending();
        let route = tokio::spawn({
            let calls = calls.clone();
            async move { calls.route(Some(&on_stream_of(7))).await }
        });
        tokio::task::yield_now().await;
        let _sent = sending.sent(RequestId::Number(7), input.clone());
        assert!(same(route.await.unwrap(), &input));
        // A send that failed leaves nobody waiting.
        drop(calls.sending());
        assert!(matches!(
            calls.route(Some(&on_stream_of(8))).await,
            Route::Host
        ));
    }
}
