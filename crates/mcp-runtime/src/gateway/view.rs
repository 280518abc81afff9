//! The live, scoped tool view shared by the gateway and sub-agent handles: the manager's
//! current tools, named, filtered, and routed back to their server on a call.
//!
//! The view is rebuilt only when the manager's tool lists change. Each server's list is an
//! `Arc` that the manager replaces on every change, so comparing those pointers tells whether
//! a cached view is still current, without events and without a race against them. The cache
//! keeps those `Arc`s alive, so an address cannot be reused by a newer list meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde_json::{Map, Value};

use super::filter::ToolFilter;
use crate::client::{CallOptions, ToolDefinition, ToolOutput};
use crate::manager::{McpManager, ServerTools};
use crate::tools::{Aborted, McpTool, NamingStyle, mcp_tools};

/// One state of the manager's tool lists: per server, its name, list and whether it is cached.
struct Fingerprint(Vec<(String, Arc<[ToolDefinition]>, bool)>);

impl Fingerprint {
    fn of(servers: &[ServerTools]) -> Self {
        Fingerprint(
            servers
                .iter()
                .map(|s| (s.server.clone(), s.tools.clone(), s.deferred))
                .collect(),
        )
    }

    /// Whether the manager's lists of the servers `filter` allows are still the ones this
    /// fingerprint was taken of. Read under the manager's lock without copying anything: it
    /// runs on every call.
    fn matches(&self, manager: &McpManager, filter: &ToolFilter) -> bool {
        let mut expected = self.0.iter();
        let same = manager.visit_offered(|server, tools, deferred| {
            if !filter.allows_server(server) {
                return true;
            }
            expected.next().is_some_and(|(name, kept, was_deferred)| {
                name == server && Arc::ptr_eq(kept, tools) && *was_deferred == deferred
            })
        });
        same && expected.next().is_none()
    }
}

/// One built view.
pub(crate) struct View {
    /// The tools offered, sorted by name (names are unique: a lookup is a binary search).
    pub tools: Vec<Arc<McpTool>>,
    /// The tools in the protocol's shape, converted once per view by the gateway.
    pub listed: OnceLock<Arc<[rmcp::model::Tool]>>,
    /// The digest of the full list a client is shown, taken once per view by the gateway.
    pub digest: OnceLock<u64>,
}

impl View {
    fn build(servers: &[ServerTools], filter: &ToolFilter, naming: NamingStyle) -> View {
        let tools: Vec<Arc<McpTool>> = mcp_tools(servers, naming)
            .into_iter()
            .filter(|tool| filter.allows_tool(tool))
            .map(Arc::new)
            .collect();
        View {
            tools,
            listed: OnceLock::new(),
            digest: OnceLock::new(),
        }
    }

    /// The tool exposed as `name`.
    pub(super) fn get(&self, name: &str) -> Option<&Arc<McpTool>> {
        self.tools
            .binary_search_by(|tool| tool.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.tools[i])
    }

    /// Owned copies of the tools, for callers outside the gateway.
    pub(super) fn to_vec(&self) -> Vec<McpTool> {
        self.tools.iter().map(|t| McpTool::clone(t)).collect()
    }
}

/// The manager's tools as one scope sees them.
pub(crate) struct ScopedTools {
    pub manager: McpManager,
    pub filter: ToolFilter,
    pub naming: NamingStyle,
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    current: Option<Arc<(Fingerprint, Arc<View>)>>,
    /// Every tool this scope offered earlier and the current view does not, by exposed name
    /// (the last one offered under it). A client may call a tool it listed before its server
    /// failed or left; routing the call to the manager anyway gives the client a clear error
    /// ("server `x` is not connected: ...") instead of "unknown tool". The tools of the
    /// current view are not repeated here: a lookup tries the view first.
    offered_before: HashMap<String, Arc<McpTool>>,
}

impl ScopedTools {
    pub(super) fn new(manager: McpManager, filter: ToolFilter, naming: NamingStyle) -> Self {
        ScopedTools {
            manager,
            filter,
            naming,
            state: Mutex::new(CacheState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current view (rebuilt only if the manager's tools changed).
    pub(super) fn view(&self) -> Arc<View> {
        // Compared outside this scope's lock: the manager's lock is taken on its own.
        let current = self.lock().current.clone();
        if let Some(current) = current
            && current.0.matches(&self.manager, &self.filter)
        {
            return current.1.clone();
        }
        let mut servers = self.manager.server_tools();
        servers.retain(|s| self.filter.allows_server(&s.server));
        // Built outside the lock: naming hashes every name.
        let view = Arc::new(View::build(&servers, &self.filter, self.naming));
        let mut state = self.lock();
        // Every view handed out was current once, so what left the view is kept here.
        if let Some(previous) = state.current.take() {
            for tool in &previous.1.tools {
                if view.get(&tool.name).is_none() {
                    state.offered_before.insert(tool.name.clone(), tool.clone());
                }
            }
        }
        state
            .offered_before
            .retain(|name, _| view.get(name).is_none());
        state.current = Some(Arc::new((Fingerprint::of(&servers), view.clone())));
        view
    }

    /// The tool to call for `name`: in the current view, or offered earlier.
    pub(super) fn route(&self, name: &str) -> Option<Arc<McpTool>> {
        if let Some(tool) = self.view().get(name) {
            return Some(tool.clone());
        }
        self.lock().offered_before.get(name).cloned()
    }

    /// Call the tool exposed as `name`. `Ok(None)` when no such tool was ever offered.
    pub(super) async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<Option<ToolOutput>, Aborted> {
        match self.route(name) {
            Some(tool) => self.call_tool(&tool, arguments, options).await.map(Some),
            None => Ok(None),
        }
    }

    /// Call `tool` (from [`route`](Self::route)).
    pub(super) async fn call_tool(
        &self,
        tool: &McpTool,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<ToolOutput, Aborted> {
        tool.call(&self.manager, arguments, options).await
    }
}
