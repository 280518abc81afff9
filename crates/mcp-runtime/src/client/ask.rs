//! A call's own way to answer the server's questions. A call that carries a [`CallInput`]
//! (a gateway relaying them to the client that made the call) has the server's
//! `elicitation/create`, `sampling/createMessage` and `roots/list` about it handed over as one
//! batch of keyed input requests, whether they came as server requests (2025-11-25 and older)
//! or embedded in an `input_required` result (2026-07-28). The connection's host handlers
//! answer whatever the call's asker did not declare, and every call without one.
//!
//! A server request carries nothing that names the call it is about, so one that comes while
//! exactly one asking call runs on the connection goes to that call; with several, the host
//! handlers answer it (there is no telling whose it is).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, InputRequest, InputRequests, InputResponses};
use tokio::sync::{mpsc, oneshot};

/// Questions one call may have on their way at once.
const QUEUE: usize = 4;

/// The server's questions of one batch, and where their answers go (keyed like the requests).
pub(crate) struct Question {
    pub requests: InputRequests,
    pub answer: oneshot::Sender<Result<InputResponses, String>>,
}

/// Where the questions of one call go, and what the one answering them declared.
#[derive(Clone)]
pub(crate) struct CallInput {
    questions: mpsc::Sender<Question>,
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
    pub(crate) fn new(declared: ClientCapabilities) -> (CallInput, mpsc::Receiver<Question>) {
        let (questions, receiver) = mpsc::channel(QUEUE);
        let input = CallInput {
            questions,
            declared: Arc::new(declared),
        };
        (input, receiver)
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
        base
    }

    /// Ask the batch and wait for the answers.
    pub(crate) async fn ask(&self, requests: InputRequests) -> Result<InputResponses, String> {
        let (answer, answered) = oneshot::channel();
        let question = Question { requests, answer };
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
    calls: Arc<Mutex<Vec<(u64, CallInput)>>>,
    next: Arc<AtomicU64>,
}

impl AskingCalls {
    /// Register `input` for as long as the returned guard lives.
    pub(crate) fn register(&self, input: CallInput) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push((id, input));
        Registered {
            calls: self.clone(),
            id,
        }
    }

    /// The one asking call in flight, if there is exactly one.
    pub(crate) fn only(&self) -> Option<CallInput> {
        match self.lock().as_slice() {
            [(_, input)] => Some(input.clone()),
            _ => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, CallInput)>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An asking call's registration; dropping it ends it.
pub(crate) struct Registered {
    calls: AskingCalls,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.calls.lock().retain(|(id, _)| *id != self.id);
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
