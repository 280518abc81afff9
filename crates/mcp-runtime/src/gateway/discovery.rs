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
use crate::tools::{McpTool, SearchHit, ToolIndex, one_line_summary, parameter_summary};

/// The name of the search tool in discovery mode.
pub const SEARCH_TOOL: &str = "mcpr_search_tools";
/// The name of the invoke tool in discovery mode.
pub const INVOKE_TOOL: &str = "mcpr_invoke_tool";
/// Matches returned by a search without `limit`.
pub const DEFAULT_LIMIT: usize = 5;
/// Most matches one search returns.
pub const MAX_LIMIT: usize = 20;
/// Longest query accepted, in characters (a search stays cheap whatever a client sends).
pub const MAX_QUERY_CHARS: usize = 1000;
/// Longest description in a compact match, in characters.
const DESCRIPTION_CHARS: usize = 160;

/// When a gateway serves in discovery mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DiscoveryMode {
    /// Every tool is listed (the default).
    #[default]
    Off,
    /// Always in discovery mode.
    On,
    /// In discovery mode while the full tool list would take more than this many tokens,
    /// estimated as the characters of the list's JSON divided by 4 (see [`estimate_tokens`]).
    Auto(usize),
}

impl FromStr for DiscoveryMode {
    type Err = String;

    /// `on`, `off` or `auto:N` (N a positive number of estimated tokens).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = "expected `on`, `off` or `auto:N` (N: a positive number of estimated \
                     tokens, characters of the tool list's JSON / 4)";
        match text.trim() {
            "on" => Ok(DiscoveryMode::On),
            "off" => Ok(DiscoveryMode::Off),
            other => match other.strip_prefix("auto:").map(str::parse::<usize>) {
                Some(Ok(n)) if n > 0 => Ok(DiscoveryMode::Auto(n)),
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
pub(crate) struct Discovery {
    pub mode: DiscoveryMode,
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
    per_server: HashMap<String, Vec<McpTool>>,
    /// Estimated tokens of the view's full tool list.
    full_tokens: usize,
}

/// What one client of a gateway has activated (each client has its own).
#[derive(Default)]
pub(crate) struct Session {
    activated: Mutex<BTreeSet<String>>,
}

impl Session {
    fn lock(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.activated.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the tool exposed as `name` was activated by this client.
    pub fn is_active(&self, name: &str) -> bool {
        self.lock().contains(name)
    }

    /// Activate `names`; `true` when any of them was not active yet.
    pub fn activate<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let mut activated = self.lock();
        let mut added = false;
        for name in names {
            added |= activated.insert(name.to_owned());
        }
        added
    }
}

impl Discovery {
    pub fn new(mode: DiscoveryMode, always_load: BTreeSet<String>) -> Self {
        Discovery {
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
        let mut per_server: HashMap<String, Vec<McpTool>> = HashMap::new();
        for tool in &view.tools {
            per_server
                .entry(tool.server.clone())
                .or_default()
                .push(McpTool::clone(tool));
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
                indexed.index.set_server(server, tools);
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
    pub fn active(&self, view: &Arc<View>, listed: &[Tool]) -> bool {
        match self.mode {
            DiscoveryMode::Off => false,
            DiscoveryMode::On => true,
            DiscoveryMode::Auto(threshold) => self.sync(view, listed).full_tokens > threshold,
        }
    }

    /// What `tools/list` shows this client: the two discovery tools, then the tools of
    /// `alwaysLoad` servers and the client's activated ones, in the view's order.
    pub fn listed(&self, view: &View, listed: &[Tool], session: &Session) -> Vec<Tool> {
        let mut tools = meta_tools();
        tools.extend(
            listed
                .iter()
                .filter(|tool| {
                    let name = tool.name.as_ref();
                    session.is_active(name)
                        || view
                            .get(name)
                            .is_some_and(|t| self.always_load.contains(&t.server))
                })
                .cloned(),
        );
        tools
    }

    /// The tools of `view` that best match `query`, best first, at most `limit`.
    pub fn find(
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
    pub fn search(
        &self,
        view: &Arc<View>,
        listed: &[Tool],
        filter: &ToolFilter,
        arguments: Option<&Map<String, Value>>,
    ) -> (Value, Vec<String>) {
        let (query, limit) = match search_arguments(arguments) {
            Ok(parsed) => parsed,
            Err(message) => return (error_result(&message), Vec::new()),
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

/// The invoke tool's arguments: the tool's exposed name and its arguments.
pub(crate) fn invoke_arguments(
    arguments: Option<&Map<String, Value>>,
) -> Result<(String, Option<Map<String, Value>>), Value> {
    let arguments = arguments.cloned().unwrap_or_default();
    let name = match arguments.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        _ => {
            return Err(error_result(&format!(
                "{INVOKE_TOOL}: `name` must be the name of a tool (a non-empty string); find \
                 one with {SEARCH_TOOL}"
            )));
        }
    };
    let inner = match arguments.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(inner)) => Some(inner.clone()),
        Some(_) => {
            return Err(error_result(&format!(
                "{INVOKE_TOOL}: `arguments` must be an object"
            )));
        }
    };
    Ok((name, inner))
}

/// An error result telling that no tool of this view has that name.
pub(crate) fn unknown_tool(name: &str) -> Value {
    error_result(&format!(
        "{INVOKE_TOOL}: unknown tool `{name}` (no tool of this view has that name); find one \
         with {SEARCH_TOOL}"
    ))
}

fn search_arguments(arguments: Option<&Map<String, Value>>) -> Result<(String, usize), String> {
    let empty = Map::new();
    let arguments = arguments.unwrap_or(&empty);
    let query = match arguments.get("query") {
        Some(Value::String(query)) if !query.trim().is_empty() => query.trim(),
        _ => {
            return Err(format!(
                "{SEARCH_TOOL}: `query` must be a non-empty string saying what the tool should do"
            ));
        }
    };
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(format!(
            "{SEARCH_TOOL}: `query` is too long ({chars} characters; at most {MAX_QUERY_CHARS})"
        ));
    }
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(value) => match value.as_u64() {
            Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
            _ => {
                return Err(format!(
                    "{SEARCH_TOOL}: `limit` must be an integer from 1 to {MAX_LIMIT}"
                ));
            }
        },
    };
    Ok((query.to_owned(), limit))
}

fn error_result(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

/// One match as the search tool returns it: enough to choose and call, far less than the full
/// definition.
fn compact(tool: &McpTool, score: f32) -> Value {
    json!({
        "name": tool.name,
        "server": tool.server,
        "description": one_line_summary(tool.definition.description.as_deref().unwrap_or(""), DESCRIPTION_CHARS),
        "parameters": parameter_summary(&tool.definition.input_schema),
        "score": (f64::from(score) * 1000.0).round() / 1000.0,
    })
}

/// The search and invoke tools as listed.
fn meta_tools() -> Vec<Tool> {
    let search = json!({
        "name": SEARCH_TOOL,
        "description": "Find tools for a task among every tool behind this gateway. Returns the \
            best matches (name, one-line description, parameters) and adds them to your tool \
            list. Describe what you need to do, e.g. \"create a GitHub issue\".",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do."},
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": format!("Most matches to return (default {DEFAULT_LIMIT}).")
                }
            },
            "required": ["query"]
        }
    });
    let invoke = json!({
        "name": INVOKE_TOOL,
        "description": format!("Call a tool found with {SEARCH_TOOL} by its name, when it is not \
            in your tool list."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as the search returned it."},
                "arguments": {"type": "object", "description": "The tool's arguments."}
            },
            "required": ["name"]
        }
    });
    [search, invoke]
        .into_iter()
        .filter_map(|tool| serde_json::from_value(tool).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!("on".parse(), Ok(DiscoveryMode::On));
        assert_eq!("off".parse(), Ok(DiscoveryMode::Off));
        assert_eq!("auto:5000".parse(), Ok(DiscoveryMode::Auto(5000)));
        for bad in ["auto:", "auto:0", "auto:-3", "auto:x", "sometimes", ""] {
            let error = bad.parse::<DiscoveryMode>().unwrap_err();
            assert!(error.contains("auto:N"), "{bad}: {error}");
        }
    }

    #[test]
    fn compact_parameters_mark_optional_ones() {
        let schema = json!({
            "type": "object",
            "properties": {"owner": {"type": "string"}, "limit": {"type": ["integer", "null"]}, "x": {}},
            "required": ["owner"]
        });
        let mut listed = parameter_summary(&schema);
        listed.sort();
        assert_eq!(listed, ["limit?: integer|null", "owner: string", "x?: any"]);
        assert_eq!(
            parameter_summary(&json!({"type": "object"})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn descriptions_are_cut_to_one_short_line() {
        assert_eq!(
            one_line_summary("  First line.\nSecond line.", DESCRIPTION_CHARS),
            "First line."
        );
        let long = "é".repeat(500);
        let cut = one_line_summary(&long, DESCRIPTION_CHARS);
        assert_eq!(cut.chars().count(), DESCRIPTION_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn search_arguments_are_checked_by_field() {
        let args = |v: Value| v.as_object().cloned();
        assert!(search_arguments(None).unwrap_err().contains("`query`"));
        let long = "a".repeat(MAX_QUERY_CHARS + 1);
        assert!(
            search_arguments(args(json!({"query": long})).as_ref())
                .unwrap_err()
                .contains("too long")
        );
        assert!(
            search_arguments(args(json!({"query": "x", "limit": 0})).as_ref())
                .unwrap_err()
                .contains("`limit`")
        );
        assert_eq!(
            search_arguments(args(json!({"query": " diff ", "limit": 3})).as_ref()),
            Ok(("diff".to_owned(), 3))
        );
        assert!(invoke_arguments(args(json!({"name": 3})).as_ref()).is_err());
        assert!(invoke_arguments(args(json!({"name": "t", "arguments": []})).as_ref()).is_err());
    }

    #[test]
    fn token_estimate_is_characters_over_four() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }
}
