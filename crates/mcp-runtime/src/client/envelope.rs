//! What one request sends and what it gets back, as both roads (rmcp's service, and the
//! direct paths of `stdio` and `http`) carry them; `requests` sends them.

use std::time::Duration;

use rmcp::model::{ClientRequest, ServerResult};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::model::tool_request::ToolRequest;
use super::{ProgressUpdate, ToolOutput};

/// A request to send. A tool call is borrowed: the direct path writes it without a copy (the
/// arguments may be large, and a call keeps them for its next `input_required` round).
pub(super) enum Outgoing<'a> {
    /// Boxed: held unboxed, its ~460 bytes are carried (twice) by every request's future, a
    /// tool call's included, and copied with it on each move.
    Request(Box<ClientRequest>),
    /// A tool call whose result is wanted as a [`ToolOutput`].
    Tool(&'a ToolRequest),
}

/// What a request got back.
pub(super) enum Answer {
    /// The result, in rmcp's type for it. Boxed: unboxed, its ~470 bytes would sit in every
    /// request's future, a tool call's included (whose answer is [`Answer::Tool`]).
    Typed(Box<ServerResult>),
    /// A `tools/call` result that is the tool's (not an `input_required` question).
    Tool(ToolAnswer),
}

/// A tool's result, in the form the path that received it had at hand.
// Moved once per call; boxing would cost an allocation per call.
#[allow(clippy::large_enum_variant)]
pub(super) enum ToolAnswer {
    /// Read straight from the answer (the direct path).
    Output(ToolOutput),
    /// The result object as sent (rmcp's path: see `raw`).
    Wire(Map<String, Value>),
}

/// What the caller set for one request, as either path (direct or rmcp's service) takes it.
pub(super) struct RequestSettings<'a, M: ?Sized> {
    /// As errors name the request.
    pub(super) method: &'a M,
    pub(super) timeout: Option<Duration>,
    pub(super) cancel: Option<&'a CancellationToken>,
    pub(super) progress: Option<&'a mpsc::Sender<ProgressUpdate>>,
}

/// A tool's result as a [`ToolOutput`], from what the request got back.
pub(super) fn tool_output(answer: ToolAnswer) -> Result<ToolOutput, serde_json::Error> {
    match answer {
        ToolAnswer::Output(output) => Ok(output),
        // Built from the result as sent, so that fields rmcp does not know (a later
        // revision's) reach the caller.
        ToolAnswer::Wire(sent) => ToolOutput::from_wire(sent),
    }
}
