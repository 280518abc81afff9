//! MCP tools as a host registers them: named for the model, labelled with their
//! origin, and callable through the manager with errors turned into tool results.
//! With the `search` feature, [`ToolIndex`] searches them (the `tool-search` crate's index over
//! [`McpTool`]s, `index.rs`), so a host can defer most definitions; the search and invoke tools
//! of discovery mode and the checks of their arguments are defined once (`meta.rs`).

mod bridge;
#[cfg(feature = "search")]
mod index;
#[cfg(feature = "search")]
mod meta;
mod naming;

pub use crate::client::{CallOptions, OutputCap};
#[cfg(feature = "gateway")]
pub(crate) use bridge::error_output;
pub use bridge::{Aborted, McpTool, SharedDefinition, mcp_tools};
#[cfg(feature = "search")]
#[cfg_attr(docsrs, doc(cfg(feature = "search")))]
pub use index::{SearchHit, ToolIndex};
#[cfg(feature = "search")]
#[cfg_attr(docsrs, doc(cfg(feature = "search")))]
pub use meta::{
    DEFAULT_LIMIT, InvokeRequest, MAX_LIMIT, MAX_QUERY_CHARS, MetaToolError, SUMMARY_CHARS,
    SearchRequest, compact_match, invoke_tool_definition, search_tool_definition,
};
pub use naming::{
    MAX_TOOL_NAME, NamingStyle, assign_names, is_valid_tool_name, sanitize, servers_for_name,
};
#[cfg(feature = "search")]
#[cfg_attr(docsrs, doc(cfg(feature = "search")))]
pub use tool_search::{Ranking, RankingParams, one_line_summary, parameter_summary, split_words};
