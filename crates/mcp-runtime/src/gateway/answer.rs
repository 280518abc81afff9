//! What a `tools/call` through the gateway comes to ([`Answered`]), and the placeholder in which
//! rmcp's handler path carries a tool's output as its backend sent it.
//!
//! rmcp's `ServerHandler::call_tool` answers with its own `CallToolResult`, which serializes
//! only the fields rmcp knows: a field of a later protocol revision would be lost on the way
//! to the client. So when the gateway serves a client itself (stdio and HTTP), the handler
//! answers with a placeholder that carries the result in the wire format ([`relayed`]), and
//! the client's transport (`wire::relay`) sends that JSON instead of the placeholder.

use rmcp::model::{CallToolResponse, CallToolResult, MetaObject};
use serde_json::{Map, Value};

use crate::client::ToolOutput;

/// What a `tools/call` came to.
pub(crate) enum Answered {
    /// A tool's output as its server sent it, and whether the client speaks a revision
    /// without `initialize` (its answer then says what kind of result it is). Whoever answers
    /// the client writes it: the stream's fast path straight into the answer's line (see
    /// `wire::front`), rmcp's handler as a response (the handler's `output_response`, through
    /// [`relayed`]).
    Output(ToolOutput, bool),
    /// Any other answer: a question for the client, a discovery result.
    Response(CallToolResponse),
}

/// The placeholder's `_meta` key holding the result in the wire format. Only ever seen
/// between the handler and the transport of the same process.
pub(crate) const MARKER: &str = "io.mcpr/relayed";

/// `output` as the handler's placeholder answer, for the client's transport to send as is. A
/// client of a revision without `initialize` (2026-07-28 on) is told what kind of result it
/// is (`resultType`), as that revision asks.
pub(crate) fn relayed(output: &ToolOutput, modern_client: bool) -> Option<CallToolResult> {
    let mut wire = serde_json::to_value(output).ok()?;
    if says_complete(output, modern_client)
        && let Some(object) = wire.as_object_mut()
    {
        object.insert("resultType".into(), Value::String("complete".into()));
    }
    let mut meta = Map::new();
    meta.insert(MARKER.into(), wire);
    let mut placeholder = CallToolResult::success(Vec::new());
    placeholder.meta = Some(MetaObject(meta));
    Some(placeholder)
}

/// Whether a relayed result gets `resultType: complete`: a 2026-07-28 client's results say
/// what they are, unless the output carries a `resultType` of its own.
pub(crate) fn says_complete(output: &ToolOutput, modern_client: bool) -> bool {
    modern_client && !output.extra.contains_key("resultType")
}
