//! The data a client hands to its caller: tool definitions and tool results.
//!
//! These mirror the MCP wire format field for field (camelCase JSON), and are converted from
//! rmcp's types through that format. That keeps rmcp out of our public API: its Rust types change
//! between releases, the protocol's JSON does not.

use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::JsonText;

/// A tool as a server describes it in `tools/list`. Its schemas are kept as compact JSON text
/// ([`JsonText`]): definitions are kept as long as their server is connected, and parsed
/// schemas weigh about twenty times their text.
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
    pub input_schema: JsonText,
    /// JSON Schema of `structuredContent`, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonText>,
    /// Behaviour hints (`readOnlyHint`, `destructiveHint`, ...), kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Every other field of the definition as the server sent it: `_meta` (an MCP App's
    /// `ui.resourceUri`, per-tool hints such as `anthropic/alwaysLoad`), `icons`, and fields
    /// of protocol revisions this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `_meta` key of the MCP Apps extension (`io.modelcontextprotocol/ui`) that names a
/// tool's UI: `_meta.ui.resourceUri`.
pub const UI_META_KEY: &str = "ui";

/// The flat key earlier drafts of MCP Apps used for the same URI: `_meta["ui/resourceUri"]`.
pub const UI_RESOURCE_URI_LEGACY_KEY: &str = "ui/resourceUri";

impl ToolDefinition {
    /// The definition's `_meta`, if the server set it.
    pub fn meta(&self) -> Option<&Value> {
        self.extra.get("_meta")
    }

    /// The `ui://` resource of the tool's MCP App, if it has one: `_meta.ui.resourceUri`, or
    /// the earlier drafts' `_meta["ui/resourceUri"]`.
    ///
    /// ```
    /// use mcp_runtime::client::ToolDefinition;
    /// let tool: ToolDefinition = serde_json::from_value(serde_json::json!({
    ///     "name": "weather", "inputSchema": {"type": "object"},
    ///     "_meta": {"ui": {"resourceUri": "ui://weather/app.html"}}
    /// })).unwrap();
    /// assert_eq!(tool.ui_resource_uri(), Some("ui://weather/app.html"));
    /// ```
    pub fn ui_resource_uri(&self) -> Option<&str> {
        let meta = self.meta()?;
        meta.get(UI_META_KEY)
            .and_then(|ui| ui.get("resourceUri"))
            .or_else(|| meta.get(UI_RESOURCE_URI_LEGACY_KEY))
            .and_then(Value::as_str)
    }
}

fn empty_object_schema() -> JsonText {
    JsonText::from(serde_json::json!({"type": "object"}))
}

/// The result of a tool call, with everything the server sent kept.
///
/// Serialized, it is the result in the wire format: every field the server sent (`_meta`,
/// each block's `annotations` and `_meta`, fields of later protocol revisions) is there
/// unchanged, and `isError` is always present (`false` when the server left it out).
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
    /// Every other field of the result as the server sent it: `_meta`, and fields of protocol
    /// revisions this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One content block of a tool result.
///
/// Each variant keeps the fields it does not model in `extra`, as the server sent them
/// (`annotations`, `_meta`, later additions), and serializes back to the same JSON. A block of
/// a type this version does not know is kept whole as [`Content::Other`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// The block's other fields (`annotations`, `_meta`, ...).
        extra: Map<String, Value>,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// e.g. `image/png`.
        mime_type: String,
        /// The block's other fields (`annotations`, `_meta`, ...).
        extra: Map<String, Value>,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// e.g. `audio/wav`.
        mime_type: String,
        /// The block's other fields (`annotations`, `_meta`, ...).
        extra: Map<String, Value>,
    },
    /// An embedded resource (`{uri, mimeType?, text | blob}`).
    Resource {
        /// The resource contents as sent.
        resource: Value,
        /// The block's other fields (`annotations`, `_meta`, ...).
        extra: Map<String, Value>,
    },
    /// A link to a resource the client may read: the whole block but its `type`.
    ResourceLink(Map<String, Value>),
    /// A block of a type this version does not know: the whole block, `type` included.
    Other(Map<String, Value>),
}

impl Content {
    /// A text block with no other fields.
    ///
    /// ```
    /// use mcp_runtime::client::Content;
    /// let block = Content::text("hi");
    /// assert_eq!(serde_json::to_value(&block).unwrap(), serde_json::json!({"type": "text", "text": "hi"}));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }

    /// The block's `annotations` (audience, priority, lastModified), if the server set them.
    pub fn annotations(&self) -> Option<&Value> {
        self.field("annotations")
    }

    /// The block's `_meta`, if the server set it.
    pub fn meta(&self) -> Option<&Value> {
        self.field("_meta")
    }

    /// A field of the block that has no variant field of its own.
    fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Content::Text { extra, .. }
            | Content::Image { extra, .. }
            | Content::Audio { extra, .. }
            | Content::Resource { extra, .. }
            | Content::ResourceLink(extra)
            | Content::Other(extra) => extra.get(name),
        }
    }

    /// A block from the wire format. A known type whose fields do not fit is kept as
    /// [`Content::Other`], so that nothing the server sent is lost or refused here.
    fn from_wire(mut block: Map<String, Value>) -> Content {
        let is_string =
            |block: &Map<String, Value>, name: &str| block.get(name).is_some_and(Value::is_string);
        let kind = match block.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => return Content::Other(block),
        };
        let fits = match kind.as_str() {
            "text" => is_string(&block, "text"),
            "image" | "audio" => is_string(&block, "data") && is_string(&block, "mimeType"),
            "resource" => block.get("resource").is_some_and(Value::is_object),
            "resource_link" => true,
            _ => false,
        };
        if !fits {
            return Content::Other(block);
        }
        block.shift_remove("type");
        let mut take = |name: &str| match block.shift_remove(name) {
            Some(Value::String(text)) => text,
            _ => String::new(),
        };
        match kind.as_str() {
            "text" => {
                let text = take("text");
                Content::Text { text, extra: block }
            }
            "image" | "audio" => {
                let data = take("data");
                let mime_type = take("mimeType");
                if kind == "image" {
                    Content::Image {
                        data,
                        mime_type,
                        extra: block,
                    }
                } else {
                    Content::Audio {
                        data,
                        mime_type,
                        extra: block,
                    }
                }
            }
            "resource" => {
                let resource = block.shift_remove("resource").unwrap_or_default();
                Content::Resource {
                    resource,
                    extra: block,
                }
            }
            _ => Content::ResourceLink(block),
        }
    }
}

/// Serialized as the block in the wire format: `type` first, then the variant's fields, then
/// the other fields in their order (a field of `extra` named like a variant field takes its
/// place, and `type` in `extra` is left out). Written field by field, with no map built.
impl Serialize for Content {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (kind, fields, extra): (&str, &[(&str, Field<'_>)], _) = match self {
            Content::Text { text, extra } => ("text", &[("text", Field::Text(text))], extra),
            Content::Image {
                data,
                mime_type,
                extra,
            }
            | Content::Audio {
                data,
                mime_type,
                extra,
            } => (
                if matches!(self, Content::Image { .. }) {
                    "image"
                } else {
                    "audio"
                },
                &[
                    ("data", Field::Text(data)),
                    ("mimeType", Field::Text(mime_type)),
                ],
                extra,
            ),
            Content::Resource { resource, extra } => {
                ("resource", &[("resource", Field::Json(resource))], extra)
            }
            Content::ResourceLink(link) => ("resource_link", &[], link),
            Content::Other(block) => return block.serialize(serializer),
        };
        let named = |name: &str| name == "type" || fields.iter().any(|(field, _)| *field == name);
        let others = extra.keys().filter(|name| !named(name)).count();
        let mut map = serializer.serialize_map(Some(1 + fields.len() + others))?;
        map.serialize_entry("type", kind)?;
        for (name, value) in fields {
            match extra.get(*name) {
                Some(replaced) => map.serialize_entry(name, replaced)?,
                None => map.serialize_entry(name, value)?,
            }
        }
        for (name, value) in extra {
            if !named(name) {
                map.serialize_entry(name, value)?;
            }
        }
        map.end()
    }
}

/// A variant field of a [`Content`] block, borrowed for serializing.
enum Field<'a> {
    Text(&'a str),
    Json(&'a Value),
}

impl Serialize for Field<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Text(text) => serializer.serialize_str(text),
            Field::Json(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let block = Map::<String, Value>::deserialize(deserializer)?;
        Ok(Content::from_wire(block))
    }
}

impl ToolOutput {
    /// A result read from the wire format (a `tools/call` result object as sent).
    pub fn from_wire(mut result: Map<String, Value>) -> Result<ToolOutput, serde_json::Error> {
        // `resultType` (2026-07-28) frames the answer for the protocol, as a JSON-RPC `id`
        // does; the client has acted on it by now, and it is not the tool's. Removed in
        // place, so the fields after it keep their order.
        result.shift_remove("resultType");
        let fits = result.get("content").is_none_or(|content| {
            content
                .as_array()
                .is_some_and(|blocks| blocks.iter().all(Value::is_object))
        }) && result.get("isError").is_none_or(Value::is_boolean);
        if !fits {
            // Serde's own error says what is wrong.
            return serde_json::from_value(Value::Object(result));
        }
        // Taken apart by hand: the derived `Deserialize` buffers every field of the result
        // for the flattened `extra`, which cost more than the rest of reading the answer.
        let content = match result.shift_remove("content") {
            Some(Value::Array(blocks)) => blocks
                .into_iter()
                .filter_map(|block| match block {
                    Value::Object(block) => Some(Content::from_wire(block)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let structured_content = result
            .shift_remove("structuredContent")
            .filter(|value| !value.is_null());
        let is_error = matches!(result.shift_remove("isError"), Some(Value::Bool(true)));
        Ok(ToolOutput {
            content,
            structured_content,
            is_error,
            extra: result,
        })
    }

    /// The result's `_meta`, if the server set it.
    pub fn meta(&self) -> Option<&Value> {
        self.extra.get("_meta")
    }

    /// All text blocks joined by newlines (a convenient summary for humans and models).
    ///
    /// ```
    /// use mcp_runtime::client::{Content, ToolOutput};
    /// let out = ToolOutput { content: vec![Content::text("hi")], ..Default::default() };
    /// assert_eq!(out.text(), "hi");
    /// ```
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                Content::Text { text, .. } => Some(text.as_str()),
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
    /// Every other field as the server sent it (`title`, `size`, `annotations`, `_meta` such
    /// as an MCP App's `ui.csp`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `from_wire` takes a result apart by hand; it must read every result as the derived
    /// `Deserialize` does (which it replaces on the hot path), errors included.
    #[test]
    fn from_wire_reads_results_as_the_derived_deserialize_does() {
        let results = [
            json!({}),
            json!({"content": []}),
            json!({"content": [{"type": "text", "text": "a", "annotations": {"priority": 1}}],
                   "isError": true, "x-later": [1], "_meta": {"k": "v"}}),
            json!({"x-first": 1, "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"},
                   {"type": "unknown", "v": 2}, {"type": "text"}], "structuredContent": {"n": 1},
                   "x-last": null}),
            json!({"structuredContent": null, "isError": false}),
            json!({"structuredContent": [1, 2], "content": [{"type": "resource_link", "uri": "u"}]}),
            json!({"content": null}),
            json!({"content": {"type": "text"}}),
            json!({"content": ["text"]}),
            json!({"isError": null}),
            json!({"isError": "yes"}),
        ];
        for result in results {
            let Value::Object(map) = result.clone() else {
                unreachable!()
            };
            let derived = serde_json::from_value::<ToolOutput>(result.clone());
            let by_hand = ToolOutput::from_wire(map);
            match (derived, by_hand) {
                (Ok(derived), Ok(by_hand)) => {
                    assert_eq!(by_hand, derived, "{result}");
                    assert_eq!(
                        serde_json::to_string(&by_hand).unwrap(),
                        serde_json::to_string(&derived).unwrap(),
                        "field order: {result}"
                    );
                }
                (Err(derived), Err(by_hand)) => {
                    assert_eq!(by_hand.to_string(), derived.to_string(), "{result}")
                }
                (derived, by_hand) => panic!("{result}: {derived:?} vs {by_hand:?}"),
            }
        }
    }

    /// Blocks serialize to the wire format field by field, in order, byte for byte.
    #[test]
    fn blocks_serialize_in_the_wire_format_in_order() {
        let map = |value: Value| match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        };
        let cases = [
            (Content::text("hi"), r#"{"type":"text","text":"hi"}"#),
            (
                Content::Image {
                    data: "AA==".into(),
                    mime_type: "image/png".into(),
                    extra: map(json!({"annotations": {"priority": 1}, "_meta": {"k": "v"}})),
                },
                r#"{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"priority":1},"_meta":{"k":"v"}}"#,
            ),
            (
                Content::Audio {
                    data: "BB==".into(),
                    mime_type: "audio/wav".into(),
                    extra: Map::new(),
                },
                r#"{"type":"audio","data":"BB==","mimeType":"audio/wav"}"#,
            ),
            (
                Content::Resource {
                    resource: json!({"uri": "file:///a", "text": "x"}),
                    extra: map(json!({"x-later": [1]})),
                },
                r#"{"type":"resource","resource":{"uri":"file:///a","text":"x"},"x-later":[1]}"#,
            ),
            (
                Content::ResourceLink(map(json!({"uri": "u", "name": "n"}))),
                r#"{"type":"resource_link","uri":"u","name":"n"}"#,
            ),
            (
                Content::Other(map(json!({"x": 1, "type": "later", "y": 2}))),
                r#"{"x":1,"type":"later","y":2}"#,
            ),
            // Built by hand: `extra` names a variant field (its value takes that place) and
            // `type` (left out: the variant says what the block is).
            (
                Content::Text {
                    text: "mine".into(),
                    extra: map(json!({"a": 1, "text": "theirs", "type": "image", "b": 2})),
                },
                r#"{"type":"text","text":"theirs","a":1,"b":2}"#,
            ),
        ];
        for (block, wire) in cases {
            assert_eq!(serde_json::to_string(&block).unwrap(), wire);
        }
    }
}
