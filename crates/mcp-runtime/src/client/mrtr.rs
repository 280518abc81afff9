//! Multi round-trip requests (protocol 2026-07-28): a server that needs something from the
//! user or the host before it can finish a call answers with `input_required` instead of
//! sending requests of its own. The embedded requests (elicitation, roots) are answered by the
//! same host handlers that answer them as server requests in the older revisions, and the
//! call is sent again with `inputResponses` and the server's `requestState` echoed unchanged.
//! The number of rounds is bounded, so a server that keeps asking cannot hold a call forever.
//! A call with its own asker (see `ask`) sends it the requests it declared it can answer, in
//! one batch, within what is left of the call's time, once the host handlers have answered
//! the others: the batch carries those answers and the server's state, so that a gateway can
//! have the call sent again from scratch (see the gateway's `resume`).

use std::time::Duration;

use rmcp::model::{InputRequest, InputRequests, InputRequiredResult, InputResponses};

use super::ClientError;
use super::ask::{CallInput, Round};
use super::handler::Handler;
use super::model::tool_request::Retry;

/// Most `input_required` rounds one call may take before it fails.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// Answer the requests of `input`, for the next round.
pub(crate) async fn next_round(
    handler: &Handler,
    input: InputRequiredResult,
    method: &str,
    asker: Option<(&CallInput, Option<Duration>)>,
) -> Result<Retry, ClientError> {
    let protocol = |message: String| ClientError::Protocol {
        server: handler.server.clone(),
        method: method.to_owned(),
        message,
    };
    let requests = input.input_requests.unwrap_or_default();
    if requests.is_empty() && input.request_state.is_none() {
        return Err(protocol(
            "the server asked for input but sent no request and no state".into(),
        ));
    }
    let mut responses = InputResponses::new();
    let (relayed, requests): (InputRequests, InputRequests) = requests
        .into_iter()
        .partition(|(_, request)| asker.is_some_and(|(asker, _)| asker.can(request)));
    for (key, request) in requests {
        let answer = match request {
            InputRequest::Elicitation(request) => {
                serde_json::to_value(handler.elicit(request.params).await)
            }
            InputRequest::ListRoots(_) => serde_json::to_value(handler.roots()),
            InputRequest::CreateMessage(_) => {
                return Err(protocol(
                    "the server asked for sampling, which this client does not offer".into(),
                ));
            }
            _ => {
                return Err(protocol(format!(
                    "the server asked for input of a kind this client does not know (`{key}`)"
                )));
            }
        };
        let answer =
            answer.map_err(|e| protocol(format!("cannot encode an input response: {e}")))?;
        responses.insert(key, answer);
    }
    if let (Some((asker, left)), false) = (asker, relayed.is_empty()) {
        let round = Round {
            request_state: input.request_state.clone(),
            answered: responses.clone(),
        };
        let asked = asker.ask_in(relayed, Some(round));
        let answers = match left {
            Some(left) => tokio::time::timeout(left, asked)
                .await
                .unwrap_or_else(|_| Err("the client did not answer within the call's time".into())),
            None => asked.await,
        };
        let answers =
            answers.map_err(|e| protocol(format!("the client was asked for input: {e}")))?;
        responses.extend(answers);
    }
    Ok(Retry {
        input_responses: (!responses.is_empty()).then_some(responses),
        request_state: input.request_state,
    })
}
