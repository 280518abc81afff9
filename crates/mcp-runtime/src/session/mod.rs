//! A minimal tool registry for a host or the shell: the host's own tools plus the
//! MCP tools, which can be replaced as a whole without restarting the session; and, with the
//! `search` feature, [`HostToolSearch`] (`search.rs`), which lets the model search for MCP tools
//! instead of seeing them all, with an index that follows the manager's events.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use indexmap::IndexMap;

use crate::client::{OutputCap, ToolOutput};
use crate::config::{ServerConfig, ServerSource};
use crate::manager::{ManagerError, McpManager, ReloadSummary};
use crate::tools::{Aborted, McpTool, NamingStyle, mcp_tools};

#[cfg(feature = "search")]
mod search;
#[cfg(feature = "search")]
#[cfg_attr(docsrs, doc(cfg(feature = "search")))]
#[allow(deprecated)]
pub use search::{Discovery, DiscoveryError, DiscoveryResult};
#[cfg(feature = "search")]
#[cfg_attr(docsrs, doc(cfg(feature = "search")))]
pub use search::{HostToolSearch, ToolSearchError, ToolSearchResult};

/// A tool the host implements itself (shown next to MCP tools; the host runs it).
#[derive(Debug, Clone, PartialEq)]
pub struct HostTool {
    /// Name the model sees.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A registered tool.
#[derive(Debug, Clone, PartialEq)]
pub enum RegisteredTool {
    /// One of the host's own.
    Host(HostTool),
    /// An MCP server's (boxed: it carries schemas and is much larger than a host tool).
    Mcp(Box<McpTool>),
}

impl RegisteredTool {
    /// The name the model sees.
    pub fn name(&self) -> &str {
        match self {
            RegisteredTool::Host(tool) => &tool.name,
            RegisteredTool::Mcp(tool) => &tool.name,
        }
    }
}

/// Why a session call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No tool of that name is registered.
    #[error("no tool named `{0}`")]
    UnknownTool(String),
    /// Host tools are run by the host, not by the session.
    #[error("`{0}` is a host tool; the host runs it")]
    HostTool(String),
    /// The call was aborted.
    #[error(transparent)]
    Aborted(#[from] Aborted),
}

/// The tools of one agent session.
///
/// ```
/// use mcp_runtime::manager::{ManagerOptions, McpManager};
/// use mcp_runtime::session::Session;
/// use mcp_runtime::tools::NamingStyle;
///
/// let manager = McpManager::new(ManagerOptions::default().with_cache(None));
/// let mut session = Session::new(manager, NamingStyle::Mcpr);
/// session.refresh_mcp_tools(Vec::new());
/// assert_eq!(session.tools().count(), 0);
/// ```
#[derive(Debug)]
pub struct Session {
    manager: McpManager,
    naming: NamingStyle,
    tools: BTreeMap<String, RegisteredTool>,
    output_cap: Option<OutputCap>,
}

impl Session {
    /// A session over `manager`'s servers, with no tools registered yet. Tool results are
    /// capped by [`OutputCap::for_agents`] (about 100 KB, or `MCPR_MAX_OUTPUT` bytes; see
    /// [`set_output_cap`](Self::set_output_cap)).
    pub fn new(manager: McpManager, naming: NamingStyle) -> Self {
        Session {
            manager,
            naming,
            tools: BTreeMap::new(),
            output_cap: OutputCap::for_agents(),
        }
    }

    /// Cap every tool result at `cap` (a call's own [`CallOptions::output_cap`] wins); `None`
    /// returns results whole.
    ///
    /// [`CallOptions::output_cap`]: crate::client::CallOptions::output_cap
    pub fn set_output_cap(&mut self, cap: Option<OutputCap>) {
        self.output_cap = cap;
    }

    /// The cap on tool results (see [`set_output_cap`](Self::set_output_cap)).
    pub fn output_cap(&self) -> Option<&OutputCap> {
        self.output_cap.as_ref()
    }

    /// The manager behind the MCP tools.
    pub fn manager(&self) -> &McpManager {
        &self.manager
    }

    /// Register (or replace) one of the host's own tools.
    pub fn register_host_tool(&mut self, tool: HostTool) {
        self.tools
            .insert(tool.name.clone(), RegisteredTool::Host(tool));
    }

    /// Replace every MCP tool with `tools` (host tools stay), so a reload or a late server
    /// applies without restarting the session.
    pub fn refresh_mcp_tools(&mut self, tools: Vec<McpTool>) {
        self.tools
            .retain(|_, tool| matches!(tool, RegisteredTool::Host(_)));
        for tool in tools {
            // A host tool keeps its name: the host's own tools win a clash.
            if !self.tools.contains_key(&tool.name) {
                self.tools
                    .insert(tool.name.clone(), RegisteredTool::Mcp(Box::new(tool)));
            }
        }
    }

    /// Re-read the manager's current tools into the session.
    pub fn refresh_from_manager(&mut self) {
        let tools = mcp_tools(&self.manager.server_tools(), self.naming);
        self.refresh_mcp_tools(tools);
    }

    /// Apply a new configuration by difference ([`McpManager::reload`]: added servers start,
    /// removed ones stop, changed ones restart, the rest keep running with their calls in
    /// flight), then re-read the MCP tools. Host tools stay.
    pub async fn reload(
        &mut self,
        configs: IndexMap<String, ServerConfig>,
        sources: IndexMap<String, ServerSource>,
    ) -> ReloadSummary {
        let summary = self.manager.reload(configs, sources).await;
        self.refresh_from_manager();
        summary
    }

    /// Wait for a server that was still connecting and bind its live tools.
    pub async fn wait_and_bind(&mut self, server: &str) -> Result<(), ManagerError> {
        self.manager.wait_for_connection(server).await?;
        self.refresh_from_manager();
        Ok(())
    }

    /// Every registered tool, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.values()
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    /// Call an MCP tool by its registered name. Failures come back as error results
    /// (`MCP error: ...`); an abort stays an error. The result is capped (see
    /// [`set_output_cap`](Self::set_output_cap)).
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        mut options: crate::client::CallOptions,
    ) -> Result<ToolOutput, SessionError> {
        if options.output_cap.is_none() {
            options.output_cap = self.output_cap.clone();
        }
        match self.tools.get(name) {
            Some(RegisteredTool::Mcp(tool)) => {
                Ok(tool.call(&self.manager, arguments, options).await?)
            }
            Some(RegisteredTool::Host(_)) => Err(SessionError::HostTool(name.to_owned())),
            None => Err(SessionError::UnknownTool(name.to_owned())),
        }
    }
}
