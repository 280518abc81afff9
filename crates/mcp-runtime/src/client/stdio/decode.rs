//! Received messages, each parsed once, and answers decoded by the request they answer.
//!
//! rmcp parses a message into its `ServerResult`, an untagged union: it tries one result type
//! after another until one fits, and every failed try builds an error with a formatted
//! message. For a `tools/call` answer that is a dozen failed tries per call, half of a call's
//! cost. The client knows better: it remembers the method of every request it sends
//! ([`Decoder::sent`]), so an answer is decoded straight into the result type of that method
//! ([`Decoder::decode`]). The `result` of a `tools/call` answer is read once as a whole object,
//! kept for the caller in [`RawResults`] (fields rmcp does not know survive) and turned into
//! rmcp's `CallToolResult` from there.
//!
//! Whatever this path does not handle (server requests, notifications, an answer to a request
//! it does not know, a result that does not fit its type, malformed input) takes rmcp's own
//! parse, with rmcp's rules for what to skip and what to refuse: the outcome is then the same
//! as without this module.

use std::collections::HashMap;
use std::fmt;

use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientNotification, ClientRequest, CompleteResult,
    CustomResult, DiscoverResult, ErrorData, GetPromptResult, InitializeResult, JsonRpcMessage,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    ReadResourceResult, RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::client::raw::RawResults;

/// Requests in flight whose method one connection remembers at most; past it the memory is
/// cleared (answers to the forgotten requests then take rmcp's parse, with the same outcome).
const MAX_PENDING: usize = 4096;

/// UTF-8 byte order mark; a JSON parser may ignore it (RFC 8259 §8.1), as rmcp does.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What one received line turned out to be.
// Moved once per message; boxing the large variant would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A message for rmcp's service loop.
    Message(ServerJsonRpcMessage),
    /// Nothing to deliver: an empty line, text that is not JSON, or a notification outside
    /// MCP (ignored, as rmcp ignores them).
    Skip,
    /// Well-formed JSON that is no JSON-RPC message we accept: answered with "Invalid
    /// request", as rmcp answers it.
    Invalid,
}

/// The result type an answer is decoded into, by the method of its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    CallTool,
    ListTools,
    Initialize,
    Discover,
    ListPrompts,
    GetPrompt,
    ListResources,
    ListResourceTemplates,
    ReadResource,
    Complete,
    /// A method rmcp does not model (a custom request, such as `tasks/get`): its result as
    /// sent, since rmcp's untagged parse may read it as a type that drops fields.
    Custom,
    /// Any other method: rmcp's parse decides.
    Other,
}

impl Expected {
    pub(crate) fn of(request: &ClientRequest) -> Expected {
        match request {
            ClientRequest::CallToolRequest(_) => Expected::CallTool,
            ClientRequest::ListToolsRequest(_) => Expected::ListTools,
            ClientRequest::InitializeRequest(_) => Expected::Initialize,
            ClientRequest::DiscoverRequest(_) => Expected::Discover,
            ClientRequest::ListPromptsRequest(_) => Expected::ListPrompts,
            ClientRequest::GetPromptRequest(_) => Expected::GetPrompt,
            ClientRequest::ListResourcesRequest(_) => Expected::ListResources,
            ClientRequest::ListResourceTemplatesRequest(_) => Expected::ListResourceTemplates,
            ClientRequest::ReadResourceRequest(_) => Expected::ReadResource,
            ClientRequest::CompleteRequest(_) => Expected::Complete,
            ClientRequest::CustomRequest(_) => Expected::Custom,
            _ => Expected::Other,
        }
    }
}

/// The decoding state of one connection: the methods of the requests in flight.
pub(crate) struct Decoder {
    pending: HashMap<RequestId, Expected>,
    raw: RawResults,
}

impl Decoder {
    /// A decoder that keeps `tools/call` results as sent in `raw`.
    pub(crate) fn new(raw: RawResults) -> Decoder {
        Decoder {
            pending: HashMap::new(),
            raw,
        }
    }

    /// Note a message as it is sent: a request's answer is expected, a cancelled request's
    /// answer is not any more.
    pub(crate) fn sent(&mut self, message: &ClientJsonRpcMessage) {
        match message {
            JsonRpcMessage::Request(request) => {
                if self.pending.len() >= MAX_PENDING {
                    self.pending.clear();
                }
                let expected = Expected::of(&request.request);
                if expected == Expected::CallTool {
                    self.raw.expect(&request.id);
                }
                self.pending.insert(request.id.clone(), expected);
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.pending.remove(id);
                }
            }
            _ => {}
        }
        if self.pending.is_empty() && self.pending.capacity() > 64 {
            // A burst of concurrent calls is over: give its memory back.
            self.pending.shrink_to(16);
        }
    }

    /// Forget request `id`, whose answer could not be read; whether it was in flight.
    pub(crate) fn forget(&mut self, id: &RequestId) -> bool {
        self.pending.remove(id).is_some()
    }

    /// Forget every request in flight (their answers will never be read), returning their ids.
    pub(crate) fn take_pending(&mut self) -> Vec<RequestId> {
        self.pending.drain().map(|(id, _)| id).collect()
    }

    /// Decode one received line (without its line break).
    pub(crate) fn decode(&mut self, line: &[u8]) -> Decoded {
        let line = trim(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Decoded::Skip;
        }
        let decoded = match self.fast(line) {
            Some(message) => Decoded::Message(message),
            None => generic(line),
        };
        if let Decoded::Message(message) = &decoded {
            let answered = match message {
                JsonRpcMessage::Response(response) => Some(&response.id),
                JsonRpcMessage::Error(error) => error.id.as_ref(),
                _ => None,
            };
            if let Some(id) = answered {
                self.pending.remove(id);
            }
        }
        decoded
    }

    /// The answer to a request in flight, decoded by its method; `None` for anything else.
    fn fast(&mut self, line: &[u8]) -> Option<ServerJsonRpcMessage> {
        let mut deserializer = serde_json::Deserializer::from_slice(line);
        let shape = deserializer
            .deserialize_map(Envelope {
                pending: &self.pending,
            })
            .ok()?;
        deserializer.end().ok()?;
        match shape {
            Shape::Error { id, error } => Some(JsonRpcMessage::error(error, id)),
            Shape::Response { id, result } => {
                let result = match result {
                    Payload::Typed(result) => result,
                    Payload::Whole(result) => self.tool_result(&id, result)?,
                    Payload::Late(result) => {
                        let expected = *self.pending.get(&id)?;
                        match typed_from_value(expected, result)? {
                            Payload::Typed(result) => result,
                            Payload::Whole(result) => self.tool_result(&id, result)?,
                            Payload::Late(_) => return None,
                        }
                    }
                };
                Some(JsonRpcMessage::response(result, id))
            }
            Shape::Other => None,
        }
    }

    /// rmcp's `CallToolResult` built from the result as sent, which is kept for the caller.
    fn tool_result(&self, id: &RequestId, result: Map<String, Value>) -> Option<ServerResult> {
        let whole = Value::Object(result);
        let typed = CallToolResult::deserialize(&whole).ok()?;
        if let Value::Object(result) = whole {
            self.raw.arrived(id, result);
        }
        Some(ServerResult::CallToolResult(typed))
    }
}

/// A line without the byte order mark and carriage return a server may add.
pub(crate) fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The text of a `result` (read on its own, as the direct path reads it) as the
/// [`ServerResult`] of the request's method, or what rmcp's parse makes of it when it does not
/// fit that type.
pub(crate) fn result_from_str(
    expected: Expected,
    result: &str,
) -> Result<ServerResult, serde_json::Error> {
    use ServerResult as R;
    let typed = match expected {
        Expected::ListTools => serde_json::from_str(result).map(R::ListToolsResult),
        Expected::ListPrompts => serde_json::from_str(result).map(R::ListPromptsResult),
        Expected::GetPrompt => serde_json::from_str(result).map(R::GetPromptResult),
        Expected::ListResources => serde_json::from_str(result).map(R::ListResourcesResult),
        Expected::ListResourceTemplates => {
            serde_json::from_str(result).map(R::ListResourceTemplatesResult)
        }
        Expected::ReadResource => serde_json::from_str(result).map(R::ReadResourceResult),
        Expected::Complete => serde_json::from_str(result).map(R::CompleteResult),
        Expected::Custom => {
            return serde_json::from_str(result).map(|v| R::CustomResult(CustomResult(v)));
        }
        // Opening requests never take the direct path; a tool's result is read by the caller,
        // and what is left (an `input_required` result, `{}`) is rmcp's to tell apart.
        Expected::CallTool | Expected::Initialize | Expected::Discover | Expected::Other => {
            return serde_json::from_str(result);
        }
    };
    typed.or_else(|_| serde_json::from_str(result))
}

/// rmcp's own parse of a line, with its rules for what is skipped and what is refused.
fn generic(line: &[u8]) -> Decoded {
    let error = match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
        Ok(message) => return Decoded::Message(message),
        Err(error) => error,
    };
    if let Ok(value) = serde_json::from_slice::<Value>(line)
        && let Some(method) = value.get("method").and_then(Value::as_str)
        && ignored_notification(value.get("id").is_none(), method)
    {
        tracing::trace!(method, "ignoring a notification outside MCP");
        return Decoded::Skip;
    }
    match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            // Not JSON: there is no id to answer, and answering could start an error storm
            // with a peer that echoes what it cannot read.
            tracing::debug!("ignoring an unparsable message: {error}");
            Decoded::Skip
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            tracing::debug!("refusing a message of the wrong shape: {error}");
            Decoded::Invalid
        }
    }
}

/// rmcp's rule: a notification of a method outside MCP (an LSP message, say), and a
/// `notifications/...` method MCP does not define, are ignored rather than refused.
fn ignored_notification(is_notification: bool, method: &str) -> bool {
    let standard_notification = matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    );
    let standard = standard_notification
        || matches!(
            method,
            "initialize"
                | "ping"
                | "server/discover"
                | "prompts/get"
                | "prompts/list"
                | "resources/list"
                | "resources/read"
                | "resources/subscribe"
                | "resources/unsubscribe"
                | "resources/templates/list"
                | "subscriptions/listen"
                | "tools/call"
                | "tools/list"
                | "completion/complete"
                | "elicitation/create"
                | "logging/setLevel"
                | "roots/list"
                | "sampling/createMessage"
        );
    (is_notification && !standard)
        || (method.starts_with("notifications/") && !standard_notification)
}

/// A result as read from the line.
// Moved once per message; boxing the large variant would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
enum Payload {
    /// Decoded into the result type of its method.
    Typed(ServerResult),
    /// A `tools/call` result, whole.
    Whole(Map<String, Value>),
    /// Read before the `id` that says what it is (a server that writes `result` first).
    Late(Value),
}

/// What the fast path found.
// Moved once per message; boxing the large variant would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
enum Shape {
    Response {
        id: RequestId,
        result: Payload,
    },
    Error {
        id: Option<RequestId>,
        error: ErrorData,
    },
    /// Anything else: a request, a notification, an answer to an unknown request, a
    /// malformed message. rmcp's parse decides.
    Other,
}

/// The top-level fields of a message that the fast paths look at (here and in `direct`).
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
pub(super) enum Key {
    Jsonrpc,
    Id,
    Result,
    Error,
    Method,
    #[serde(other)]
    Unknown,
}

/// Reads the top level of one message, and an answer's `result` by its method.
struct Envelope<'a> {
    pending: &'a HashMap<RequestId, Expected>,
}

impl<'de> Visitor<'de> for Envelope<'_> {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut version = None::<bool>;
        let mut id = None::<Option<RequestId>>;
        let mut result = None::<Option<Payload>>;
        let mut error = None::<ErrorData>;
        // Duplicate fields, `method`, or a result nobody waits for: leave it to rmcp.
        let mut other = false;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Jsonrpc if version.is_none() => {
                    // A borrowed string: "2.0" has no escapes (one that does is left to rmcp).
                    version = Some(map.next_value::<&'de str>()? == "2.0");
                }
                Key::Id if id.is_none() => id = Some(map.next_value::<Option<RequestId>>()?),
                Key::Result if result.is_none() => {
                    let expected = match &id {
                        Some(Some(id)) => self.pending.get(id).copied(),
                        _ => None,
                    };
                    result = Some(match (&id, expected) {
                        (None, _) => Some(Payload::Late(map.next_value()?)),
                        (Some(_), Some(expected)) if expected != Expected::Other => {
                            Some(map.next_value_seed(TypedResult(expected))?)
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            None
                        }
                    });
                }
                Key::Error if error.is_none() => error = Some(map.next_value()?),
                Key::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    other = true;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if other || version != Some(true) {
            return Ok(Shape::Other);
        }
        Ok(match (id, result, error) {
            (Some(Some(id)), Some(Some(result)), None) => Shape::Response { id, result },
            (id, None, Some(error)) => Shape::Error {
                id: id.flatten(),
                error,
            },
            _ => Shape::Other,
        })
    }
}

/// Decodes a `result` into the type of its method.
struct TypedResult(Expected);

impl<'de> DeserializeSeed<'de> for TypedResult {
    type Value = Payload;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Payload, D::Error> {
        typed(self.0, deserializer)
    }
}

fn typed<'de, D: Deserializer<'de>>(expected: Expected, d: D) -> Result<Payload, D::Error> {
    use ServerResult as R;
    let result = match expected {
        Expected::CallTool => return Map::deserialize(d).map(Payload::Whole),
        Expected::ListTools => R::ListToolsResult(ListToolsResult::deserialize(d)?),
        Expected::Initialize => R::InitializeResult(InitializeResult::deserialize(d)?),
        Expected::Discover => R::DiscoverResult(DiscoverResult::deserialize(d)?),
        Expected::ListPrompts => R::ListPromptsResult(ListPromptsResult::deserialize(d)?),
        Expected::GetPrompt => R::GetPromptResult(GetPromptResult::deserialize(d)?),
        Expected::ListResources => R::ListResourcesResult(ListResourcesResult::deserialize(d)?),
        Expected::ListResourceTemplates => {
            R::ListResourceTemplatesResult(ListResourceTemplatesResult::deserialize(d)?)
        }
        Expected::ReadResource => R::ReadResourceResult(ReadResourceResult::deserialize(d)?),
        Expected::Complete => R::CompleteResult(CompleteResult::deserialize(d)?),
        Expected::Other | Expected::Custom => {
            return Err(de::Error::custom("no result type for this method"));
        }
    };
    Ok(Payload::Typed(result))
}

/// [`typed`] for a result that was read before its `id`.
fn typed_from_value(expected: Expected, result: Value) -> Option<Payload> {
    match (expected, result) {
        (Expected::Other | Expected::Custom, _) => None,
        (Expected::CallTool, Value::Object(result)) => Some(Payload::Whole(result)),
        (expected, result) => typed(expected, result).ok(),
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
