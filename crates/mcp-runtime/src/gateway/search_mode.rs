//! Discovery mode: a client's `tools/list` shows a search tool, an invoke tool, the tools of the
//! servers marked `alwaysLoad` and the tools this client has found, instead of every tool of
//! every server — so that thousands of tools do not fill a model's context window.
//!
//! - The search tool ranks the view's tools against a query, answers with compact matches
//!   (name, one-line description, parameters) and activates them for this client only; the
//!   client is then sent `notifications/tools/list_changed`, and its next `tools/list` carries
//!   their full definitions.
//! - The invoke tool calls any tool of the view by name, for clients that never refresh their
//!   list.
//! - The index holds only the view's tools, so a scoped view (`--servers`, `--tools`) bounds what
//!   can be found and called: discovery never widens a view.

use std::collections::{BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::Tool;
use serde_json::{Map, Value, json};

use super::filter::ToolFilter;
use super::view::View;
pub use crate::tools::{DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS};
use crate::tools::{
    InvokeRequest, McpTool, SearchHit, SearchRequest, ToolIndex, compact_match,
    invoke_tool_definition, search_tool_definition,
};

/// The name of the search tool in discovery mode.
pub const SEARCH_TOOL: &str = "mcpr_search_tools";
/// The name of the invoke tool in discovery mode.
pub const INVOKE_TOOL: &str = "mcpr_invoke_tool";

/// When a gateway serves in discovery mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolSearchMode {
    /// Every tool is listed (the default).
    #[default]
    Off,
    /// Always in discovery mode.
    On,
    /// In discovery mode while the full tool list would take more than this many tokens,
    /// estimated as the characters of the list's JSON divided by 4 (see [`estimate_tokens`]).
    Auto(usize),
}

impl FromStr for ToolSearchMode {
    type Err = String;

    /// `on`, `off` or `auto:N` (N a positive number of estimated tokens).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = "expected `on`, `off` or `auto:N` (N: a positive number of estimated \
                     tokens, characters of the tool list's JSON / 4)";
        match text.trim() {
            "on" => Ok(ToolSearchMode::On),
            "off" => Ok(ToolSearchMode::Off),
            other => match other.strip_prefix("auto:").map(str::parse::<usize>) {
                Some(Ok(n)) if n > 0 => Ok(ToolSearchMode::Auto(n)),
                _ => Err(format!("invalid discovery mode `{text}`: {usage}")),
            },
        }
    }
}

/// Estimated tokens of `text`: its characters divided by 4, rounded up — the usual rule of
/// thumb for English text and JSON, which needs no tokenizer.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Discovery settings and the search index shared by every client of one gateway.
pub(crate) struct ToolSearch {
    pub mode: ToolSearchMode,
    /// Servers whose tools are always listed.
    pub always_load: BTreeSet<String>,
    index: Mutex<Indexed>,
}

/// The index of one view, updated per server when the view changes.
#[derive(Default)]
struct Indexed {
    /// The view indexed (kept alive, so its address identifies it).
    view: Option<Arc<View>>,
    index: ToolIndex,
    /// The view's tools per server, as indexed (shared with the view).
    per_server: HashMap<String, Vec<Arc<McpTool>>>,
    /// Estimated tokens of the view's full tool list.
    full_tokens: usize,
}

/// What one client of a gateway has activated (each client has its own).
#[derive(Default)]
pub(crate) struct ActivatedTools {
    activated: Mutex<BTreeSet<String>>,
}

impl ActivatedTools {
    fn lock(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.activated.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the tool exposed as `name` was activated by this client.
    pub(super) fn is_active(&self, name: &str) -> bool {
        self.lock().contains(name)
    }

    /// Activate `names`; `true` when any of them was not active yet.
    pub(super) fn activate<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let mut activated = self.lock();
        let mut added = false;
        for name in names {
            added |= activated.insert(name.to_owned());
        }
        added
    }
}

impl ToolSearch {
    pub(super) fn new(mode: ToolSearchMode, always_load: BTreeSet<String>) -> Self {
        ToolSearch {
            mode,
            always_load,
            index: Mutex::new(Indexed::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Indexed> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bring the index up to `view` (only servers whose tools changed are indexed again).
    fn sync<'a>(&'a self, view: &Arc<View>, listed: &[Tool]) -> MutexGuard<'a, Indexed> {
        let mut indexed = self.lock();
        if indexed.view.as_ref().is_some_and(|v| Arc::ptr_eq(v, view)) {
            return indexed;
        }
        let mut per_server: HashMap<String, Vec<Arc<McpTool>>> = HashMap::new();
        for tool in &view.tools {
            match per_server.get_mut(&tool.server) {
                Some(tools) => tools.push(tool.clone()),
                None => {
                    per_server.insert(tool.server.clone(), vec![tool.clone()]);
                }
            }
        }
        let gone: Vec<String> = indexed
            .per_server
            .keys()
            .filter(|server| !per_server.contains_key(*server))
            .cloned()
            .collect();
        for server in gone {
            indexed.index.remove_server(&server);
        }
        for (server, tools) in &per_server {
            if indexed.per_server.get(server) != Some(tools) {
                let tools: Vec<McpTool> = tools.iter().map(|t| McpTool::clone(t)).collect();
                indexed.index.set_server(server, &tools);
            }
        }
        indexed.per_server = per_server;
        indexed.full_tokens = serde_json::to_string(listed)
            .map(|text| estimate_tokens(&text))
            .unwrap_or(0);
        indexed.view = Some(view.clone());
        indexed
    }

    /// Whether `view` (listed as `listed`) is served in discovery mode.
    pub(super) fn active(&self, view: &Arc<View>, listed: &[Tool]) -> bool {
        match self.mode {
            ToolSearchMode::Off => false,
            ToolSearchMode::On => true,
            ToolSearchMode::Auto(threshold) => self.sync(view, listed).full_tokens > threshold,
        }
    }

    /// What `tools/list` shows this client: the two discovery tools, then the tools of
    /// `alwaysLoad` servers and the client's activated ones, in the view's order.
    pub(super) fn listed(
        &self,
        view: &View,
        listed: &[Tool],
        activated: &ActivatedTools,
    ) -> Vec<Tool> {
        let mut tools = meta_tools();
        tools.extend(
            listed
                .iter()
                .filter(|tool| {
                    let name = tool.name.as_ref();
                    activated.is_active(name)
                        || view
                            .get(name)
                            .is_some_and(|t| self.always_load.contains(&t.server))
                })
                .cloned(),
        );
        tools
    }

    /// The tools of `view` that best match `query`, best first, at most `limit`.
    pub(super) fn find(
        &self,
        view: &Arc<View>,
        listed: &[Tool],
        filter: &ToolFilter,
        query: &str,
        limit: usize,
    ) -> Vec<SearchHit> {
        let indexed = self.sync(view, listed);
        // The index holds the view's tools only; the filter is checked again so that nothing
        // outside the view can ever be returned, whatever the index holds.
        let allow = |tool: &McpTool| filter.allows_tool(tool) && view.get(&tool.name).is_some();
        indexed.index.search_filtered(query, limit, &allow)
    }

    /// Run the search tool: the compact matches as a tool result, and the names found (to
    /// activate). Bad arguments give an error result naming the field.
    pub(super) fn search(
        &self,
        view: &Arc<View>,
        listed: &[Tool],
        filter: &ToolFilter,
        arguments: Option<&Map<String, Value>>,
    ) -> (Value, Vec<String>) {
        let SearchRequest { query, limit } = match SearchRequest::parse(SEARCH_TOOL, arguments) {
            Ok(parsed) => parsed,
            Err(refused) => return (error_result(&refused.to_string()), Vec::new()),
        };
        let hits = self.find(view, listed, filter, &query, limit);
        let names: Vec<String> = hits.iter().map(|hit| hit.tool.name.clone()).collect();
        let matches: Vec<Value> = hits
            .iter()
            .map(|hit| compact(&hit.tool, hit.score))
            .collect();
        let note = if matches.is_empty() {
            format!("No tool matches `{query}`. Try other words.")
        } else {
            format!(
                "These tools are now in your tool list: call them by name, or through \
                 {INVOKE_TOOL} with {{\"name\", \"arguments\"}}."
            )
        };
        let structured = json!({ "matches": matches, "note": note });
        let text = serde_json::to_string(&structured).unwrap_or_default();
        (
            json!({
                "content": [{ "type": "text", "text": text }],
                "structuredContent": structured,
                "isError": false,
            }),
            names,
        )
    }
}

/// The invoke tool's arguments: the tool's exposed name and its arguments, or an error result
/// naming the field.
pub(crate) fn invoke_arguments(
    arguments: Option<&Map<String, Value>>,
) -> Result<(String, Option<Map<String, Value>>), Value> {
    InvokeRequest::parse(INVOKE_TOOL, SEARCH_TOOL, arguments)
        .map(|request| (request.name, request.arguments))
        .map_err(|refused| error_result(&refused.to_string()))
}

/// An error result telling that no tool of this view has that name.
pub(crate) fn unknown_tool(name: &str) -> Value {
    error_result(&format!(
        "{INVOKE_TOOL}: unknown tool `{name}` (no tool of this view has that name); find one \
         with {SEARCH_TOOL}"
    ))
}

fn error_result(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

/// One match as the search tool returns it: enough to choose and call, far less than the full
/// definition.
fn compact(tool: &McpTool, score: f32) -> Value {
    let (description, parameters) = compact_match(tool);
    json!({
        "name": tool.name,
        "server": tool.server,
        "description": description,
        "parameters": parameters,
        "score": (f64::from(score) * 1000.0).round() / 1000.0,
    })
}

/// The search and invoke tools as listed.
fn meta_tools() -> Vec<Tool> {
    [
        search_tool_definition(SEARCH_TOOL),
        invoke_tool_definition(INVOKE_TOOL, SEARCH_TOOL),
    ]
    .iter()
    .filter_map(|definition| serde_json::to_value(definition).ok())
    .filter_map(|tool| serde_json::from_value(tool).ok())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!("on".parse(), Ok(ToolSearchMode::On));
        assert_eq!("off".parse(), Ok(ToolSearchMode::Off));
        assert_eq!("auto:5000".parse(), Ok(ToolSearchMode::Auto(5000)));
        for bad in ["auto:", "auto:0", "auto:-3", "auto:x", "sometimes", ""] {
            let error = bad.parse::<ToolSearchMode>().unwrap_err();
            assert!(error.contains("auto:N"), "{bad}: {error}");
        }
    }

    #[test]
    fn the_meta_tools_list_with_the_shared_definitions() {
        let tools = meta_tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, [SEARCH_TOOL, INVOKE_TOOL]);
        let schema = serde_json::to_value(&tools[0].input_schema).unwrap();
        assert_eq!(schema["properties"]["limit"]["maximum"], json!(MAX_LIMIT));
        let refused = invoke_arguments(json!({"name": 3}).as_object()).unwrap_err();
        assert_eq!(refused["isError"], true);
        assert!(
            refused["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("`name`")
        );
    }

    #[test]
    fn token_estimate_is_characters_over_four() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }
}
