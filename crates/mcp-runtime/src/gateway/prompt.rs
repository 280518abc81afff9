//! `prompts/get` through the gateway, when the backend asks the client something first.
//!
//! - A 2026-07-28 client of a 2026-07-28 backend gets the backend's `input_required` result
//!   as sent, and its retry (`inputResponses`, the backend's `requestState`) goes back as sent:
//!   the backend keeps no state, so neither does the gateway.
//! - Every other pair runs the `prompts/get` as a parked call does (see `input`): a 2025-11-25
//!   client is asked over its session; a 2026-07-28 client of an older backend, whose request
//!   waits for its answer, gets an `input_required` result with a `requestState` the gateway
//!   sealed for that prompt, and its retry answers the backend's waiting request.
//!
//! Either way the client's cancellation, its departure or an expired parked request cancels
//! the backend's `prompts/get` (`notifications/cancelled`).

use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult, ResultType,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;

use super::Gateway;
use super::catalog::CatalogError;
use super::input::{Asker, Landed, Outcome, Resumed, Stopped, Subject};
use crate::client::{CallOptions, ClientError, Era};

impl Gateway {
    /// Get the prompt `request` names from its backend for the client of `context`.
    pub(super) async fn relay_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.wait_started().await;
        let asker = Asker::of(&context);
        let stateless = asker.stateless;
        let name = request.name.to_string();
        let retry = request.request_state.clone();
        let responses = request.input_responses.clone();
        let (client, mut request) = self
            .inner
            .catalog
            .prompt_route(&self.inner.scope, request)
            .await
            .map_err(|e| match e {
                CatalogError::Unknown(message) => McpError::invalid_params(message, None),
                other => McpError::internal_error(other.to_string(), None),
            })?;
        // Of the client's `_meta`, only its trace context goes on, as with a tool call.
        if !asker.trace.is_empty() {
            let meta = request.meta.get_or_insert_with(Default::default);
            asker.trace.write_into(&mut meta.0.0);
        }
        let subject = Subject::Prompt(name);
        let flight = if stateless && client.opening().era == Era::Modern {
            // The backend's `input_required` result goes to the client, and its retry back.
            let prompt = client
                .get_prompt_relayed(request, (*asker.declared).clone())
                .await
                .map_err(|e| McpError::internal_error(format!("MCP error: {e}"), None))?;
            return answer(prompt);
        } else if let Some(state) = retry.filter(|_| stateless) {
            match self.inner.inputs.resume_for(&subject, &state, responses)? {
                Resumed::Flight(flight) => flight,
                Resumed::Again(asked) => return Ok(asked.into()),
                // Only tool calls are carried, and a tool's state is refused for a prompt.
                Resumed::Fresh(_) => {
                    return Err(McpError::invalid_params(
                        "requestState belongs to a tool call",
                        None,
                    ));
                }
            }
        } else {
            let call = move |settings: CallOptions| async move {
                let Some(asker) = settings.input else {
                    return Err(Stopped::Aborted);
                };
                match client
                    .get_prompt_asking(request, &asker, settings.cancel.as_ref())
                    .await
                {
                    Ok(prompt) => Ok(Landed::Prompt(prompt)),
                    Err(ClientError::Cancelled { .. }) => Err(Stopped::Aborted),
                    Err(e) => Err(Stopped::Refused(McpError::internal_error(
                        format!("MCP error: {e}"),
                        None,
                    ))),
                }
            };
            let settings = CallOptions::default();
            self.inner
                .inputs
                .start_for(subject, asker.declared.clone(), false, settings, call)
        };
        match self
            .inner
            .inputs
            .drive_any(flight, &context, stateless, None)
            .await?
        {
            Outcome::Asked(asked) => Ok(asked.into()),
            Outcome::Done(Ok(Landed::Prompt(prompt))) => answer(prompt),
            Outcome::Done(Ok(Landed::Tool(_))) => Err(McpError::internal_error(
                "a tool's output came back for a prompt",
                None,
            )),
            Outcome::Done(Err(Stopped::Refused(error))) => Err(error),
            Outcome::Done(Err(Stopped::Aborted)) => {
                Err(McpError::internal_error("request cancelled", None))
            }
        }
    }
}

/// The client's answer: the prompt, or (relayed from a 2026-07-28 backend) its request for
/// input.
fn answer(prompt: Value) -> Result<GetPromptResponse, McpError> {
    let invalid = |e: serde_json::Error| {
        McpError::internal_error(format!("MCP error: invalid result: {e}"), None)
    };
    if prompt.get("resultType").and_then(Value::as_str) == Some("input_required") {
        let asked: InputRequiredResult = serde_json::from_value(prompt).map_err(invalid)?;
        return Ok(asked.into());
    }
    let mut result: GetPromptResult = serde_json::from_value(prompt).map_err(invalid)?;
    // A 2026-07-28 client needs the result to say what it is, and an older backend's does
    // not (rmcp drops the field again for clients of older revisions).
    result.result_type.get_or_insert(ResultType::COMPLETE);
    Ok(result.into())
}
