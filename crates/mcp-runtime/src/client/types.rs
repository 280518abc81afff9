//! The data a client hands to its caller: tool definitions and tool results.
//!
//! These mirror the MCP wire format field for field (camelCase JSON), and are converted from
//! rmcp's types through that format. That keeps rmcp out of our public API: its Rust types change
//! between releases, the protocol's JSON does not.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool as a server describes it in `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The server's own name for the tool (used to call it).
    pub name: String,
    /// Human-readable title, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints (`readOnlyHint`, `destructiveHint`, ...), kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// The result of a tool call, with every content kind kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// Unstructured content blocks, in order.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Structured result, when the tool returns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `true` when the tool reports a failure (the call itself succeeded).
    #[serde(default)]
    pub is_error: bool,
}

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Image {
        /// Base64 data.
        data: String,
        /// e.g. `image/png`.
        mime_type: String,
    },
    /// Audio, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Audio {
        /// Base64 data.
        data: String,
        /// e.g. `audio/wav`.
        mime_type: String,
    },
    /// An embedded resource (`{uri, mimeType?, text | blob}`).
    Resource {
        /// The resource contents as sent.
        resource: Value,
    },
    /// A link to a resource the client may read.
    ResourceLink(Map<String, Value>),
}

impl ToolOutput {
    /// All text blocks joined by newlines (a convenient summary for humans and models).
    ///
    /// ```
    /// use mcp_runtime::client::{Content, ToolOutput};
    /// let out = ToolOutput { content: vec![Content::Text { text: "hi".into() }], ..Default::default() };
    /// assert_eq!(out.text(), "hi");
    /// ```
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// Who the server says it is, and what it agreed to speak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// The protocol version the server chose.
    pub protocol_version: String,
    /// Usage instructions the server offers the model, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// A resource as a server lists it in `resources/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDefinition {
    /// Where the resource lives (`file:///...`, `https://...`, a custom scheme).
    pub uri: String,
    /// Short name.
    pub name: String,
    /// What it contains, for humans and models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// e.g. `text/plain`, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A resource template as a server lists it in `resources/templates/list`: the URIs it can
/// read beyond its listed resources, as an RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplateDefinition {
    /// The template, e.g. `file:///{path}`.
    pub uri_template: String,
    /// Short name.
    pub name: String,
    /// What it gives, for humans and models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// e.g. `text/plain`, when every match has the same type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A prompt template as a server lists it in `prompts/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptDefinition {
    /// The name used to get the prompt.
    pub name: String,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes, in order.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a [`PromptDefinition`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// What to pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    #[serde(default)]
    pub required: bool,
}
