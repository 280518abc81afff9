//! The protocol model of a connection: what a client hands its callers and what they hand it,
//! whichever road reaches the server. Nothing here knows a transport, so the tool cache (which
//! keeps eras and tool definitions) and the gateway use it without the rest of the client.
//!
//! - `era`: which era of MCP a server speaks ([`Era`](era::Era)), how a connection was opened
//!   ([`Opening`](era::Opening)), the protocol versions accepted.
//! - `types`: tool, resource and prompt definitions, and tool results (`ToolOutput`, `Content`).
//! - `tool_result`: a tool result read from its JSON text straight into a `ToolOutput`.
//! - `tool_request`: a `tools/call` request's parameters, lent to each attempt, and what a round
//!   of the server's questions adds to the next one.
//! - `task`: tasks in either revision read into one shape (`TaskState`), and what can be
//!   wrong with them.
//! - `error`: `ClientError`, every way a connection fails, each naming the server.

pub mod era;
pub(crate) mod error;
pub(crate) mod task;
pub(crate) mod tool_request;
pub(crate) mod tool_result;
pub(crate) mod types;
