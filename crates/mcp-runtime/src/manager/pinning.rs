//! Tool pins in the manager: every tool list a server sends passes its pins before it becomes
//! the server's live tools, so the tool view, `mcpr tools`, the gateway, sub-agents and
//! sessions (which all draw from the live tools) never see a held tool, and a call to one fails
//! with [`ManagerError::ToolHeld`].

use std::sync::Arc;

use super::connection::Connector;
use super::state::Inner;
use super::{ManagerError, McpManager};
use crate::client::ToolDefinition;
use crate::config::ServerConfig;
use crate::pins::{HeldTool, pin_key};

impl<C: Connector> Inner<C> {
    /// `tools` of `name` after its pins: those offered, and those held. Unchanged without a
    /// pin store or with `pinTools: false`.
    pub(crate) fn pinned(
        &self,
        name: &str,
        config: &ServerConfig,
        tools: Arc<[ToolDefinition]>,
    ) -> (Arc<[ToolDefinition]>, Vec<HeldTool>) {
        let Some(pins) = self.options.pins.as_ref().filter(|_| config.pin_tools) else {
            return (tools, Vec::new());
        };
        // The names other servers offer now: a tool new to this server under one of them is
        // a shadowing attempt.
        let others: std::collections::HashSet<String> = {
            let state = self.lock();
            state
                .servers
                .iter()
                .filter(|(other, _)| other.as_str() != name)
                .filter_map(|(_, entry)| entry.live_tools.clone())
                .flat_map(|tools| tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>())
                .collect()
        };
        let key = pin_key(name, &self.options.project, config);
        let checked = pins.check(&key, &tools, |tool| others.contains(tool));
        if checked.held.is_empty() {
            return (tools, Vec::new());
        }
        for held in &checked.held {
            tracing::warn!(
                server = name,
                tool = held.name,
                "tool held: {}; accept it with `mcpr trust {name}`",
                held.reason
            );
        }
        (checked.offered(&tools).into(), checked.held)
    }
}

impl McpManager {
    /// The tools held by their pins, per server, in config order (servers without any left
    /// out): what `mcpr tools` and `mcpr status` name.
    pub fn held_tools(&self) -> Vec<(String, Vec<HeldTool>)> {
        let state = self.inner.lock();
        state
            .servers
            .iter()
            .filter(|(_, entry)| !entry.held_tools.is_empty())
            .map(|(name, entry)| (name.clone(), entry.held_tools.clone()))
            .collect()
    }

    /// The error a call to `tool` of `server` gets while the tool is held.
    pub(crate) fn held_error(&self, server: &str, tool: &str) -> Option<ManagerError> {
        let state = self.inner.lock();
        let held = state
            .servers
            .get(server)?
            .held_tools
            .iter()
            .find(|h| h.name == tool)?;
        Some(ManagerError::ToolHeld {
            server: server.to_owned(),
            tool: tool.to_owned(),
            reason: held.reason,
        })
    }
}
