//! `--resources`: sample resources, a resource template and prompts, so that clients and
//! gateways can be tested on more than tools.
//!
//! `resources/read` answers for any URI, listed or not, as a careless server would (think of a
//! file server that reads whatever path it is given): whoever sits in front of the mock must
//! decide what may reach it.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, Prompt,
    PromptArgument, PromptMessage, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, Role,
};
use serde_json::{Map, Value};

/// The resources listed by the mock `server`: `mock://<server>/public` and
/// `mock://<server>/private`.
pub(crate) fn resources(server: &str) -> ListResourcesResult {
    let listed = ["public", "private"].map(|name| {
        Resource::new(format!("mock://{server}/{name}"), name)
            .with_description(format!("the {name} notes of {server}"))
            .with_mime_type("text/plain")
    });
    ListResourcesResult::with_all_items(listed.to_vec())
}

/// The resource template of the mock `server`: `mock://<server>/items/{id}`.
pub(crate) fn templates(server: &str) -> ListResourceTemplatesResult {
    let template = ResourceTemplate::new(format!("mock://{server}/items/{{id}}"), "item")
        .with_description(format!("one item of {server}"))
        .with_mime_type("text/plain");
    ListResourceTemplatesResult::with_all_items(vec![template])
}

/// Any URI: `contents of <uri>`.
pub(crate) fn read(uri: &str) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::text(
        format!("contents of {uri}"),
        uri,
    )])
}

/// The prompts: `greet {name}` and `secret`.
pub(crate) fn prompts() -> ListPromptsResult {
    ListPromptsResult::with_all_items(vec![
        Prompt::new(
            "greet",
            Some("a greeting"),
            Some(vec![
                PromptArgument::new("name")
                    .with_description("who to greet")
                    .with_required(true),
            ]),
        ),
        Prompt::new("secret", Some("a prompt with a secret"), None),
    ])
}

/// One prompt filled with `arguments`.
pub(crate) fn prompt(
    name: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<GetPromptResult, McpError> {
    let text = match name {
        "greet" => {
            let who = arguments
                .as_ref()
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("world");
            format!("Hello, {who}!")
        }
        "secret" => "the secret prompt".to_owned(),
        other => {
            return Err(McpError::invalid_params(
                format!("unknown prompt: {other}"),
                None,
            ));
        }
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}
