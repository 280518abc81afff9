//! MCP tools as a host registers them: named for the model, labelled with their
//! origin, and callable through the manager with errors turned into tool results.
//! [`ToolIndex`] searches them, so a host can defer most definitions.

mod bridge;
mod naming;
mod search;

pub use crate::client::{CallOptions, OutputCap};
#[cfg(feature = "gateway")]
pub(crate) use bridge::error_output;
pub use bridge::{Aborted, McpTool, mcp_tools};
pub use naming::{MAX_TOOL_NAME, NamingStyle, assign_names, is_valid_tool_name, sanitize};
pub use search::{Ranking, SearchHit, ToolIndex, one_line_summary, parameter_summary, split_words};
