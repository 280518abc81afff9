//! [`HostToolSearch`]: a host's tool search (its discovery mode), on the `tool-search` index,
//! following the manager's events.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::client::ToolDefinition;
use crate::manager::{ManagerEvent, McpManager};
/// Why a call of the search tool was refused: the rules shared with the gateway's tool search.
pub use crate::tools::MetaToolError as ToolSearchError;
use crate::tools::{
    McpTool, NamingStyle, SearchHit, SearchRequest, ToolIndex, compact_match, mcp_tools,
    search_tool_definition,
};

/// Tool search for a host (its discovery mode): instead of every MCP tool, the model sees one
/// search tool (plus the tools of servers marked `alwaysLoad`); the tools a search finds are
/// activated for the session and their full definitions handed over for the host to register.
///
/// ```
/// use mcp_runtime::session::HostToolSearch;
/// use mcp_runtime::tools::McpTool;
///
/// let tool = |server: &str, name: &str, description: &str| McpTool {
///     name: format!("mcp_{server}_{name}"),
///     server: server.into(),
///     tool: name.into(),
///     definition: serde_json::from_value(
///         serde_json::json!({"name": name, "description": description}),
///     )
///     .unwrap(),
///     label: format!("mcp:{server}"),
///     deferred: false,
/// };
/// let mut search = HostToolSearch::new();
/// search.set_always_load(["time"]);
/// search.set_tools(vec![
///     tool("git", "git_log", "Shows the commit logs"),
///     tool("git", "git_status", "Shows the working tree status"),
///     tool("time", "get_current_time", "Current time in a time zone"),
/// ]);
/// // Before any search: the search tool, and the alwaysLoad server's tools.
/// assert_eq!(HostToolSearch::search_tool_definition().name, HostToolSearch::SEARCH_TOOL);
/// let loaded: Vec<_> = search.loaded_tools().iter().map(|t| t.tool.clone()).collect();
/// assert_eq!(loaded, ["get_current_time"]);
///
/// // The model calls the search tool; what it finds is activated.
/// let arguments = serde_json::json!({"query": "recent commits", "limit": 3});
/// let found = search.call_search(arguments.as_object().unwrap()).unwrap();
/// assert_eq!(found.activated[0].tool, "git_log");
/// assert!(found.text.contains("mcp_git_git_log"));
/// assert!(search.is_loaded("mcp_git_git_log"));
/// // The host registers the loaded tools, e.g. `session.refresh_mcp_tools(search.loaded_tools())`.
/// ```
#[derive(Debug, Default)]
pub struct HostToolSearch {
    index: ToolIndex,
    tools: BTreeMap<String, McpTool>,
    always_load: BTreeSet<String>,
    active: BTreeSet<String>,
    /// The manager followed, if any (see [`HostToolSearch::follow`]).
    following: Option<Following>,
}

/// A manager whose events keep a [`HostToolSearch`] index up to date.
#[derive(Debug)]
struct Following {
    manager: McpManager,
    naming: NamingStyle,
    events: broadcast::Receiver<ManagerEvent>,
}

/// What a call of the search tool returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSearchResult {
    /// The text for the model: one compact entry per match (name, one-line description,
    /// parameters), best first.
    pub text: String,
    /// The full definitions of the matches, now activated (to register with the host).
    pub activated: Vec<McpTool>,
}

impl HostToolSearch {
    /// The name of the search tool the model sees.
    pub const SEARCH_TOOL: &'static str = "search_tools";
    /// Matches returned when the model gives no `limit` (the gateway's too).
    pub const DEFAULT_LIMIT: usize = crate::tools::DEFAULT_LIMIT;
    /// The most matches one search returns (and activates); the gateway's too.
    pub const MAX_LIMIT: usize = crate::tools::MAX_LIMIT;

    /// An empty search state with the default ranking.
    pub fn new() -> Self {
        HostToolSearch {
            index: ToolIndex::new(),
            ..Default::default()
        }
    }

    /// The servers whose tools are always loaded (their `alwaysLoad` config key; see
    /// [`crate::config::ServerConfig::always_load`]).
    pub fn set_always_load<I, S>(&mut self, servers: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.always_load = servers.into_iter().map(Into::into).collect();
    }

    /// Replace the known MCP tools (live and cached), e.g. after `list_changed`, a reconnect or
    /// a reload. Only the servers whose tools changed are re-indexed; activated tools that no
    /// longer exist are dropped. A host that follows its manager ([`HostToolSearch::follow`]) need
    /// not call this.
    pub fn set_tools(&mut self, tools: Vec<McpTool>) {
        let mut by_server: BTreeMap<String, Vec<McpTool>> = BTreeMap::new();
        for tool in tools {
            by_server.entry(tool.server.clone()).or_default().push(tool);
        }
        let old_servers: BTreeSet<String> = self.tools.values().map(|t| t.server.clone()).collect();
        for server in old_servers.iter().filter(|s| !by_server.contains_key(*s)) {
            self.index.remove_server(server);
        }
        for (server, tools) in &by_server {
            let unchanged = {
                let mut old: Vec<&McpTool> = self
                    .tools
                    .values()
                    .filter(|t| &t.server == server)
                    .collect();
                old.sort_by(|a, b| a.name.cmp(&b.name));
                let mut new: Vec<&McpTool> = tools.iter().collect();
                new.sort_by(|a, b| a.name.cmp(&b.name));
                old == new
            };
            if !unchanged {
                self.index.set_server(server, tools);
            }
        }
        self.tools = by_server
            .into_values()
            .flatten()
            .map(|tool| (tool.name.clone(), tool))
            .collect();
        let tools = &self.tools;
        self.active.retain(|name| tools.contains_key(name));
    }

    /// Index `manager`'s tools now (named with `naming`, as the host registers them), then keep
    /// the index in step with the manager's events: a server's `tools/list_changed`, reconnect,
    /// late connection or failure, a `reload` and a removed server each re-index only the
    /// servers whose tools changed. The changes are applied by [`refresh`](Self::refresh),
    /// which every search runs first, or by awaiting [`changed`](Self::changed).
    pub fn follow(&mut self, manager: &McpManager, naming: NamingStyle) {
        // Subscribe before reading, so that no change between the two is missed.
        let events = manager.subscribe();
        self.following = Some(Following {
            manager: manager.clone(),
            naming,
            events,
        });
        self.resync();
    }

    /// Apply the changes the followed manager announced since the last refresh; `true` when
    /// any tool was added, removed or changed (the host then registers
    /// [`loaded_tools`](Self::loaded_tools) again). Does nothing without [`follow`](Self::follow).
    pub fn refresh(&mut self) -> bool {
        self.drain_events() && self.resync()
    }

    /// Take every pending event of the followed manager; `true` when any may change tools.
    fn drain_events(&mut self) -> bool {
        let Some(following) = &mut self.following else {
            return false;
        };
        let mut announced = false;
        loop {
            match following.events.try_recv() {
                Ok(event) => announced |= changes_tools(&event),
                // Events were dropped: read everything again (still re-indexing only the
                // servers that differ).
                Err(broadcast::error::TryRecvError::Lagged(_)) => announced = true,
                Err(_) => break,
            }
        }
        announced
    }

    /// Wait until the followed manager announces a change of tools, then apply it (with any
    /// other pending change); `true` when the tools changed. For a host's event loop: re-register
    /// [`loaded_tools`](Self::loaded_tools) when it returns `true`. Returns `false` at once
    /// without [`follow`](Self::follow), and when the manager is gone.
    pub async fn changed(&mut self) -> bool {
        loop {
            let Some(following) = &mut self.following else {
                return false;
            };
            match following.events.recv().await {
                Ok(event) if !changes_tools(&event) => continue,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Take the rest of a burst (a reload announces many servers) in one go.
                    self.drain_events();
                    if self.resync() {
                        return true;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return false,
            }
        }
    }

    /// Read the followed manager's tools and apply the difference; `true` when any changed.
    fn resync(&mut self) -> bool {
        let Some(following) = &self.following else {
            return false;
        };
        let tools = mcp_tools(&following.manager.server_tools(), following.naming);
        let changed = tools.len() != self.tools.len()
            || tools
                .iter()
                .any(|tool| self.tools.get(&tool.name) != Some(tool));
        if changed {
            self.set_tools(tools);
        }
        changed
    }

    /// The search tool's definition, to show the model in place of the deferred tools (the
    /// gateway's, named [`Self::SEARCH_TOOL`]).
    pub fn search_tool_definition() -> ToolDefinition {
        search_tool_definition(Self::SEARCH_TOOL)
    }

    /// Search without activating anything.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.index.search(query, limit.min(Self::MAX_LIMIT))
    }

    /// Handle a call of the search tool: apply the followed manager's changes, search, activate
    /// the matches, describe them. The arguments are checked as the gateway checks them.
    pub fn call_search(
        &mut self,
        arguments: &Map<String, Value>,
    ) -> Result<ToolSearchResult, ToolSearchError> {
        let SearchRequest { query, limit } =
            SearchRequest::parse(Self::SEARCH_TOOL, Some(arguments))?;
        self.refresh();
        let hits = self.search(&query, limit);
        let mut lines = Vec::new();
        let mut activated = Vec::new();
        for hit in hits {
            lines.push(compact(&hit.tool));
            self.active.insert(hit.tool.name.clone());
            activated.push(hit.tool);
        }
        let text = if lines.is_empty() {
            format!("No tool matches {query:?}. Try other words.")
        } else {
            format!(
                "Loaded {} tool(s); call them by name:\n{}",
                lines.len(),
                lines.join("\n")
            )
        };
        Ok(ToolSearchResult { text, activated })
    }

    /// Whether the tool named `name` is loaded: its server is `alwaysLoad` or a search found it.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.active.contains(name)
            || self
                .tools
                .get(name)
                .is_some_and(|tool| self.always_load.contains(&tool.server))
    }

    /// The tools to register now: the `alwaysLoad` servers' and those activated, by name.
    pub fn loaded_tools(&self) -> Vec<McpTool> {
        self.tools
            .values()
            .filter(|tool| self.is_loaded(&tool.name))
            .cloned()
            .collect()
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

/// `name — first line of the description (param: type, param?: type)`.
fn compact(tool: &McpTool) -> String {
    let (description, params) = compact_match(tool);
    format!("- {} — {} ({})", tool.name, description, params.join(", "))
}

/// Whether `event` can change the tools a manager offers (connection attempts and back-off
/// alone do not: a reconnecting server keeps its tools until it fails or lists again).
fn changes_tools(event: &ManagerEvent) -> bool {
    !matches!(
        event,
        ManagerEvent::Connecting { .. } | ManagerEvent::Reconnecting { .. }
    )
}

/// The former name of [`HostToolSearch`], kept so that hosts keep compiling.
#[deprecated(note = "renamed `HostToolSearch`: `Discovery` is the result of reading configs")]
pub type Discovery = HostToolSearch;

/// The former name of [`ToolSearchResult`], kept so that hosts keep compiling.
#[deprecated(note = "renamed `ToolSearchResult`")]
pub type DiscoveryResult = ToolSearchResult;

/// The former name of [`ToolSearchError`], kept so that hosts keep compiling.
#[deprecated(note = "renamed `ToolSearchError`")]
pub type DiscoveryError = ToolSearchError;
