//! A tool call's result as the server sent it, not decoded: for relaying a result to another
//! client unchanged (a gateway writes the text on as its own answer's `result`).
//!
//! [`McpClient::call_tool_raw`] makes the same call as [`McpClient::call_tool`] (timeout,
//! cancellation, progress, the server's `input_required` questions answered and the call
//! retried) and hands back the final result's JSON text. Over stdio that is the text of the
//! answer's `result` exactly as it came off the pipe: only its top-level `resultType` is
//! looked at, to tell a question from a result, and nothing is checked against
//! [`ToolOutput`]'s shape, so a result of a later protocol revision passes whole. Over HTTP,
//! and whenever only a decoded result is at hand (rmcp's parse), the text is that result
//! written again in the wire format, with every field the server sent.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::requests::{Outgoing, ToolAnswer, ToolResultForm};
use super::{CallOptions, ClientError, McpClient, ToolOutput};

/// The JSON text of a tool call's `result` (always one JSON object).
#[derive(Debug)]
pub(crate) struct RawToolResult(Box<RawValue>);

// For the gateway's relay, which does not use it yet.
#[cfg_attr(not(test), allow(dead_code))]
impl RawToolResult {
    /// The text, as sent.
    pub(crate) fn json(&self) -> &str {
        self.0.get()
    }

    /// The text, for embedding in a message (`RawValue` serializes as the JSON it holds).
    pub(crate) fn into_raw_value(self) -> Box<RawValue> {
        self.0
    }

    /// The result decoded, as [`McpClient::call_tool`] would have returned it.
    pub(crate) fn decode(&self) -> Result<ToolOutput, serde_json::Error> {
        ToolOutput::from_answer(ToolAnswer::Raw(self.0.clone()))
    }

    /// The text of a result object as sent.
    fn from_wire(result: &Map<String, Value>) -> Result<RawToolResult, serde_json::Error> {
        serde_json::value::to_raw_value(result).map(RawToolResult)
    }
}

impl ToolResultForm for RawToolResult {
    fn outgoing(params: &rmcp::model::CallToolRequestParams) -> Outgoing<'_> {
        Outgoing::ToolRaw(params)
    }

    fn from_answer(answer: ToolAnswer) -> Result<RawToolResult, serde_json::Error> {
        match answer {
            ToolAnswer::Raw(raw) => Ok(RawToolResult(raw)),
            ToolAnswer::Wire(sent) => RawToolResult::from_wire(&sent),
            ToolAnswer::Output(output) => RawToolResult::from_output(output),
        }
    }

    fn from_output(output: ToolOutput) -> Result<RawToolResult, serde_json::Error> {
        serde_json::value::to_raw_value(&output).map(RawToolResult)
    }
}

impl McpClient {
    /// [`call_tool`](Self::call_tool), the result handed back as the server sent it (see the
    /// module's documentation). Every error is `call_tool`'s, but for a result object that does
    /// not fit [`ToolOutput`]: it is passed on as it is.
    #[cfg_attr(not(test), allow(dead_code))] // For the gateway's relay, not wired yet.
    pub(crate) async fn call_tool_raw(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<RawToolResult, ClientError> {
        self.call_tool_as(tool, arguments, options).await
    }
}

#[cfg(test)]
#[path = "raw_result_tests.rs"]
mod tests;
