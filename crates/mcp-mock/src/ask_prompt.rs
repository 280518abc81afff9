//! `--elicit-prompt`: the prompt `ask`, whose `prompts/get` asks the client a question
//! (`elicitation/create`, as a 2025-11-25 server asks) before it is filled, so that clients and
//! gateways can be tested on a prompt that needs input.

use rmcp::model::{GetPromptResult, Prompt, PromptMessage, Role};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

/// The prompt's name.
pub(crate) const NAME: &str = "ask";

/// How `ask` is listed.
pub(crate) fn listed() -> Prompt {
    Prompt::new(
        NAME,
        Some("asks the client for a name (elicitation/create), then greets it"),
        None,
    )
}

/// Fill `ask`: ask the client for a `name` and answer `Prompt for <what came back>`
/// (`accept <content>`, `decline` or `cancel`). A cancelled request stops waiting.
pub(crate) async fn get(context: &RequestContext<RoleServer>) -> Result<GetPromptResult, McpError> {
    let params = serde_json::from_value::<rmcp::model::ElicitRequestParams>(json!({
        "message": "Who is the prompt for?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    }))
    .map_err(|e| McpError::internal_error(format!("cannot build the request: {e}"), None))?;
    let request =
        rmcp::model::ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
    let asked = tokio::select! {
        asked = context.peer.send_request(request) => asked,
        () = context.ct.clone().cancelled_owned() => {
            return Err(McpError::internal_error("request cancelled", None));
        }
    };
    let answer = match asked {
        Ok(rmcp::model::ClientResult::ElicitResult(answer)) => answer,
        Ok(other) => {
            return Err(McpError::internal_error(
                format!("elicitation/create got a wrong answer: {other:?}"),
                None,
            ));
        }
        Err(e) => {
            return Err(McpError::internal_error(
                format!("elicitation/create failed: {e}"),
                None,
            ));
        }
    };
    let said = match answer.action {
        rmcp::model::ElicitationAction::Accept => {
            format!("accept {}", answer.content.unwrap_or(Value::Null))
        }
        rmcp::model::ElicitationAction::Decline => "decline".to_owned(),
        _ => "cancel".to_owned(),
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        format!("Prompt for {said}"),
    )]))
}
