//! Answers lost with their stream (protocol 2026-07-28 over HTTP). That revision has no
//! sessions and no resumption: when the response stream of a request breaks before the
//! answer, the answer is gone. A request that is safe to repeat is sent again, once: lists,
//! reads, gets, completions, pings, and calls of tools the server annotated `readOnlyHint` or
//! `idempotentHint`. Anything else fails with [`ClientError::AnswerLost`], which says the
//! request may or may not have run.

use std::collections::HashSet;

use rmcp::model::ClientRequest;

use crate::client::{ClientError, ToolDefinition};

/// Whether `request` may be sent again after its answer was lost, whatever it is about:
/// asking it twice changes nothing on the server.
pub(crate) fn repeatable(request: &ClientRequest) -> bool {
    matches!(
        request,
        ClientRequest::ListToolsRequest(_)
            | ClientRequest::ListResourcesRequest(_)
            | ClientRequest::ListResourceTemplatesRequest(_)
            | ClientRequest::ListPromptsRequest(_)
            | ClientRequest::ReadResourceRequest(_)
            | ClientRequest::GetPromptRequest(_)
            | ClientRequest::CompleteRequest(_)
            | ClientRequest::PingRequest(_)
            | ClientRequest::DiscoverRequest(_)
    )
}

/// The tools of a listing that may be called twice: annotated read-only or idempotent.
pub(crate) fn repeatable_tools(tools: &[ToolDefinition]) -> HashSet<String> {
    let hint = |tool: &ToolDefinition, name: &str| {
        tool.annotations
            .as_ref()
            .and_then(|a| a.get(name))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
    };
    tools
        .iter()
        .filter(|tool| hint(tool, "readOnlyHint") || hint(tool, "idempotentHint"))
        .map(|tool| tool.name.clone())
        .collect()
}

/// The error of a request sent again whose answer was lost again.
pub(crate) fn lost_again(error: ClientError) -> ClientError {
    match error {
        ClientError::AnswerLost { server, method, .. } => ClientError::AnswerLost {
            server,
            method,
            repeated: true,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_annotated_tools_are_repeatable() {
        let tools: Vec<ToolDefinition> = serde_json::from_value(serde_json::json!([
            {"name": "read", "annotations": {"readOnlyHint": true}},
            {"name": "put", "annotations": {"idempotentHint": true}},
            {"name": "charge", "annotations": {"readOnlyHint": false}},
            {"name": "plain"},
            {"name": "odd", "annotations": {"readOnlyHint": "yes"}},
        ]))
        .unwrap();
        let safe = repeatable_tools(&tools);
        assert!(safe.contains("read") && safe.contains("put"));
        assert_eq!(safe.len(), 2);
        assert!(repeatable(&ClientRequest::PingRequest(Default::default())));
    }
}
