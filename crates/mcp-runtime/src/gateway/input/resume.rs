//! Calls of 2026-07-28 backends that any gateway replica can resume.
//!
//! A 2026-07-28 backend that needs the client's input answers `input_required` and keeps
//! nothing: its own `requestState` says what it needs to go on. So when such a backend asks a
//! 2026-07-28 client something, the gateway parks nothing either. It seals into its own
//! `requestState` (see `request_state`) everything the retry needs — the tool as the client
//! called it and where it goes (server, and the tool's name there), the backend's state, the
//! backend's requests the client was asked, and the answers the gateway gave itself to the
//! others (what the client did not declare) — and ends the call. The client's retry, on this
//! gateway or any replica that holds the same state key, is checked (same tool, answers only
//! to requests that were asked, each an object) and sent to the backend as a fresh call: the
//! retry's arguments, every answer, and the backend's state echoed unchanged.
//!
//! A retry that leaves a request unanswered is asked again under the same state, without
//! reaching the backend. One that answers everything spends the state on the gateway that
//! takes it: that gateway refuses it afterwards, for as long as the state is valid (it
//! remembers up to [`MAX_SPENT`] states). Another replica cannot know it was spent and takes
//! it once more: across replicas a state is single-use only as far as the backend's own
//! state makes it so.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::{CallToolRequestParams, InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::request_state::{Carried, Resumes};
use super::{Flight, Inputs, Resumed, Subject, answers_to};
use crate::client::Retry;
use crate::client::ask::Question;
use crate::client::model::tool_request::Arguments;
use crate::gateway::Gateway;
use crate::gateway::answer::Answered;
use crate::gateway::search_mode::{INVOKE_TOOL, invoke_arguments};

/// The most spent states one gateway remembers at once.
pub const MAX_SPENT: usize = 65_536;

/// A retry that answers a carried call: it goes to the backend as a fresh call.
pub(crate) struct Fresh {
    /// The tool as the client called it, and where it goes.
    pub(crate) tool: String,
    server: String,
    server_tool: String,
    /// Every answer, and the backend's state.
    pub(crate) retry: Retry,
}

/// The carried states a gateway has resumed, until they expire.
#[derive(Default)]
pub(crate) struct Spent {
    /// Each state's name, and when it expires (seconds since the Unix epoch).
    seen: Mutex<HashMap<String, u64>>,
}

impl Spent {
    /// Note `once` as spent until `expires`: `false` if it was already.
    fn spend(&self, once: &str, expires: u64) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.contains_key(once) {
            return false;
        }
        if seen.len() >= MAX_SPENT {
            let now = unix_now();
            seen.retain(|_, until| *until >= now);
            // Still full of live states: forget an eighth of them (which, does not matter),
            // rather than refuse answers; those can then be taken once more.
            let excess = seen.len().saturating_sub(MAX_SPENT - MAX_SPENT / 8);
            let forgotten: Vec<String> = seen.keys().take(excess).cloned().collect();
            for key in forgotten {
                seen.remove(&key);
            }
        }
        seen.insert(once.to_owned(), expires);
        true
    }
}

impl Inputs {
    /// The `input_required` result that carries `flight` whole, for a 2026-07-28 client asked
    /// `question` by a 2026-07-28 backend; `None` when the call must be parked instead (an
    /// older backend's request waits for its answer, or the state would be too long).
    pub(super) fn carry(
        &self,
        flight: &Flight,
        question: &Question,
    ) -> Option<InputRequiredResult> {
        let round = question.round.as_ref()?;
        let (Subject::Tool(name), Some(tool)) = (&flight.subject, &flight.backend) else {
            return None;
        };
        let carried = Carried {
            tool: name.clone(),
            server: tool.server.clone(),
            server_tool: tool.tool.clone(),
            backend_state: round.request_state.clone(),
            asked: question.requests.clone(),
            answered: round.answered.clone(),
            once: crate::fsutil::hex(&crate::gateway::state_key::random_bytes()[..16]),
        };
        let expires = SystemTime::now() + self.park_for;
        let state = self.sealer.seal(&Resumes::Carried(carried), expires)?;
        Some(InputRequiredResult::new(
            Some(question.requests.clone()),
            Some(state),
        ))
    }

    /// Take `carried` (sealed as `state`, valid until `expires`) back for `subject`, its
    /// requests answered by `responses`.
    pub(super) fn resume_carried(
        &self,
        subject: &Subject,
        state: &str,
        (carried, expires): (Carried, u64),
        responses: Option<InputResponses>,
    ) -> Result<Resumed, McpError> {
        let called = Subject::Tool(carried.tool.clone());
        if called != *subject {
            return Err(McpError::invalid_params(
                format!("requestState belongs to {called}, not to {subject}"),
                None,
            ));
        }
        let Some(mut responses) = answers_to(&carried.asked, responses)? else {
            // Asked again, under the same state: nothing was spent.
            return Ok(Resumed::Again(InputRequiredResult::new(
                Some(carried.asked),
                Some(state.to_owned()),
            )));
        };
        if !self.spent.spend(&carried.once, expires) {
            return Err(McpError::invalid_params(
                "requestState names no call waiting for input (answered already on this \
                 gateway; call the tool again)",
                None,
            ));
        }
        // The client's answers are to the requests it was asked, the gateway's to the others.
        responses.extend(carried.answered);
        Ok(Resumed::Fresh(Fresh {
            tool: carried.tool,
            server: carried.server,
            server_tool: carried.server_tool,
            retry: Retry {
                input_responses: Some(responses),
                request_state: carried.backend_state,
            },
        }))
    }
}

impl Gateway {
    /// A 2026-07-28 client's retry with its answers: the parked call goes on, or the carried
    /// one is sent to its backend afresh.
    pub(in crate::gateway) async fn resume_call(
        &self,
        request: CallToolRequestParams,
        state: &str,
        context: &RequestContext<RoleServer>,
        asker: super::Asker,
    ) -> Result<Answered, McpError> {
        let CallToolRequestParams {
            name,
            arguments,
            input_responses,
            ..
        } = request;
        let (name, arguments) = match name.as_ref() {
            INVOKE_TOOL => invoke_arguments(arguments.as_ref()).unwrap_or_default(),
            name => (name.to_owned(), arguments),
        };
        match self.inner.inputs.resume(&name, state, input_responses)? {
            Resumed::Flight(flight) => {
                let server = self
                    .inner
                    .scope
                    .route(flight.tool())
                    .map(|t| t.server.clone());
                let logs = match server {
                    Some(server) => self.watch_logs(context, &asker, &server).await,
                    None => None,
                };
                self.drive(flight, context, asker, logs).await
            }
            Resumed::Again(asked) => Ok(Answered::Response(asked.into())),
            Resumed::Fresh(fresh) => {
                let scope = &self.inner.scope;
                let same = |tool: &Arc<crate::tools::McpTool>| {
                    tool.server == fresh.server && tool.tool == fresh.server_tool
                };
                let mut tool = scope.route(&fresh.tool);
                if tool.is_none() {
                    // A replica that just started may not know the tool yet.
                    self.wait_started().await;
                    tool = scope.route(&fresh.tool);
                }
                let tool = tool.filter(same).ok_or_else(|| {
                    McpError::invalid_params(
                        format!(
                            "requestState belongs to a call of `{}` on `{}`, which this \
                             gateway does not serve under that name",
                            fresh.tool, fresh.server
                        ),
                        None,
                    )
                })?;
                tracing::info!(tool = %fresh.tool, "gateway: resuming a call from the state its client carried");
                let arguments = Arguments::Object(arguments);
                self.call_tool(tool, arguments, context, asker, Some(fresh.retry))
                    .await
            }
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{answers, shared_key, waiting_flight};
    use super::*;
    use crate::client::ask::Round;

    #[test]
    fn a_spent_state_is_refused_until_forgotten() {
        let spent = Spent::default();
        let later = unix_now() + 60;
        assert!(spent.spend("a", later));
        assert!(!spent.spend("a", later), "twice");
        assert!(spent.spend("b", later));
    }

    #[test]
    fn a_full_memory_forgets_expired_states_first() {
        let spent = Spent::default();
        let (past, later) = (unix_now() - 10, unix_now() + 60);
        for i in 0..MAX_SPENT - 1 {
            assert!(spent.spend(&format!("old{i}"), past));
        }
        assert!(spent.spend("live", later));
        // Full: the expired ones go, the live one stays.
        assert!(spent.spend("new", later));
        assert!(!spent.spend("live", later));
        assert_eq!(spent.seen.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_carried_call_resumes_on_any_gateway_of_the_key_once_on_each() {
        let dir = tempfile::tempdir().unwrap();
        let key = shared_key(&dir);
        let (one, two) = (Inputs::new(None, Some(&key)), Inputs::new(None, Some(&key)));
        let (flight, mut question) = waiting_flight(&one);
        question.round = Some(Round {
            request_state: Some("the backend's".into()),
            answered: [("host".to_owned(), json!({"action": "decline"}))].into(),
        });
        let asked = one.carry(&flight, &question).expect("carried");
        drop(flight);
        let state = asked.request_state.unwrap();
        assert!(
            !state.contains("backend"),
            "sealed, not only signed: {state}"
        );
        assert_eq!(one.parked_calls(), 0, "nothing parked");
        let subject = Subject::Tool("mcp_s_t".into());
        // Unanswered: asked again under the same state.
        match two.resume_for(&subject, &state, None) {
            Ok(Resumed::Again(again)) => assert_eq!(again.request_state, Some(state.clone())),
            _ => panic!("not asked again"),
        }
        let stolen = two.resume_for(&Subject::Tool("other".into()), &state, answers());
        assert!(stolen.is_err());
        let bogus = Some([("bogus".to_owned(), json!({}))].into());
        assert!(two.resume_for(&subject, &state, bogus).is_err());
        match two.resume_for(&subject, &state, answers()) {
            Ok(Resumed::Fresh(fresh)) => {
                assert_eq!(fresh.tool, "mcp_s_t");
                let retry = fresh.retry;
                assert_eq!(retry.request_state.as_deref(), Some("the backend's"));
                let responses = retry.input_responses.unwrap();
                assert_eq!(responses.keys().collect::<Vec<_>>(), ["host", "roots"]);
            }
            _ => panic!("not resumed"),
        }
        // Spent on the gateway that took it; another cannot know.
        let replayed = two.resume_for(&subject, &state, answers()).err().unwrap();
        assert!(
            replayed.message.contains("answered already"),
            "{replayed:?}"
        );
        assert!(matches!(
            one.resume_for(&subject, &state, answers()),
            Ok(Resumed::Fresh(_))
        ));
        // A gateway with a key of its own cannot open it.
        let alone = Inputs::new(None, None);
        let refused = alone.resume_for(&subject, &state, answers()).err().unwrap();
        assert!(
            refused.message.contains("integrity check failed"),
            "{refused:?}"
        );
    }
}
