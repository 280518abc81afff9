//! From the manager's per-server tool lists to the tools a host registers, and back from a
//! tool call to the right server.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::naming::{NamingStyle, assign_names};
use crate::client::{CallOptions, Content, ToolDefinition, ToolOutput};
use crate::manager::{McpManager, ServerTools};

/// One MCP tool, ready to register in a host's tool registry.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The name the model sees: `mcp_<server>_<tool>`, unique, ≤ 64 characters.
    pub name: String,
    /// The server, as configured (raw name, used for routing).
    pub server: String,
    /// The tool's own name on its server (raw, used for routing).
    pub tool: String,
    /// Description, schemas and annotations as the server sent them (read through `Deref`;
    /// shared with the manager's list, not a copy).
    pub definition: SharedDefinition,
    /// `mcp:<server> via <provider>` (or `mcp:<server>` when the provider is unknown).
    pub label: String,
    /// `true` for a tool from the cache whose server is still connecting: calling it waits
    /// for the connection.
    pub deferred: bool,
}

/// One tool definition of a server's list, shared with that list: the manager's list, the
/// tools built from it, a gateway's views and search index all hold the same definition
/// instead of a copy each. Reads as the [`ToolDefinition`] it points to.
///
/// ```
/// use mcp_runtime::client::ToolDefinition;
/// use mcp_runtime::tools::SharedDefinition;
///
/// let echo: ToolDefinition = serde_json::from_value(serde_json::json!({"name": "echo"})).unwrap();
/// let shared = SharedDefinition::from(echo);
/// assert_eq!(shared.name, "echo");
/// ```
#[derive(Clone)]
pub struct SharedDefinition {
    list: Arc<[ToolDefinition]>,
    index: usize,
}

impl SharedDefinition {
    /// The definition at `index` of `list`, or `None` past its end.
    pub fn new(list: Arc<[ToolDefinition]>, index: usize) -> Option<Self> {
        (index < list.len()).then_some(SharedDefinition { list, index })
    }
}

impl Deref for SharedDefinition {
    type Target = ToolDefinition;

    fn deref(&self) -> &ToolDefinition {
        &self.list[self.index]
    }
}

impl From<ToolDefinition> for SharedDefinition {
    /// A definition on its own (a list of one).
    fn from(definition: ToolDefinition) -> Self {
        SharedDefinition {
            list: Arc::from(vec![definition]),
            index: 0,
        }
    }
}

impl PartialEq for SharedDefinition {
    fn eq(&self, other: &Self) -> bool {
        (Arc::ptr_eq(&self.list, &other.list) && self.index == other.index) || **self == **other
    }
}

impl std::fmt::Debug for SharedDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        ToolDefinition::fmt(self, f)
    }
}

impl Serialize for SharedDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ToolDefinition::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for SharedDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ToolDefinition::deserialize(deserializer).map(SharedDefinition::from)
    }
}

/// Build the tool list from the manager's view: names assigned over the whole set (so they are
/// injective), sorted by name (stable prompts, better prompt caching).
///
/// ```
/// use std::sync::Arc;
/// use mcp_runtime::client::ToolDefinition;
/// use mcp_runtime::manager::ServerTools;
/// use mcp_runtime::tools::{NamingStyle, mcp_tools};
///
/// let echo: ToolDefinition = serde_json::from_value(serde_json::json!({"name": "echo"})).unwrap();
/// let servers = [ServerTools { server: "my.server".into(), source: None, tools: Arc::from(vec![echo]), deferred: false }];
/// let tools = mcp_tools(&servers, NamingStyle::Mcpr);
/// assert_eq!(tools[0].name, "mcp_my_server_echo");
/// assert_eq!(tools[0].label, "mcp:my.server");
/// ```
pub fn mcp_tools(servers: &[ServerTools], style: NamingStyle) -> Vec<McpTool> {
    let pairs: Vec<(&str, &str)> = servers
        .iter()
        .flat_map(|s| {
            s.tools
                .iter()
                .map(move |t| (s.server.as_str(), t.name.as_str()))
        })
        .collect();
    let names = assign_names(style, pairs.iter().copied());
    let mut names = names.into_iter();
    let mut tools = Vec::with_capacity(pairs.len());
    for server in servers {
        let label = match &server.source {
            Some(source) => format!("mcp:{} via {}", server.server, source.provider_name),
            None => format!("mcp:{}", server.server),
        };
        for (index, definition) in server.tools.iter().enumerate() {
            let Some(name) = names.next() else { break };
            tools.push(McpTool {
                name,
                server: server.server.clone(),
                tool: definition.name.clone(),
                definition: SharedDefinition {
                    list: server.tools.clone(),
                    index,
                },
                label: label.clone(),
                deferred: server.deferred,
            });
        }
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

/// The caller stopped the call (`notifications/cancelled` was sent to the server). Unlike
/// other failures this is not turned into a tool result: an abort stays an abort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("tool call aborted")]
pub struct Aborted;

impl McpTool {
    /// Call the tool through `manager`. A deferred tool first waits for its server. Every
    /// failure — transport, timeout, JSON-RPC error, a server that is down, the call's
    /// [`cap`](CallOptions::cap) — comes back as an error result whose text is
    /// `MCP error: <message>`; only an abort is an `Err`.
    pub async fn call(
        &self,
        manager: &McpManager,
        arguments: Option<Map<String, Value>>,
        mut options: CallOptions,
    ) -> Result<ToolOutput, Aborted> {
        let output_cap = options.output_cap.take();
        let output = match options.cap.take() {
            Some(cap) => self.call_capped(manager, arguments, options, cap).await?,
            None => self.call_uncapped(manager, arguments, options).await?,
        };
        Ok(match &output_cap {
            Some(cap) => cap.apply(&self.name, output),
            None => output,
        })
    }

    async fn call_uncapped(
        &self,
        manager: &McpManager,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<ToolOutput, Aborted> {
        match manager
            .call_tool(&self.server, &self.tool, arguments, options)
            .await
        {
            Ok(output) => Ok(output),
            Err(error) if error.is_cancelled() => Err(Aborted),
            Err(error) => Ok(error_output(format!("MCP error: {error}"))),
        }
    }

    /// A call bounded by `cap`, waiting for a connecting server included.
    async fn call_capped(
        &self,
        manager: &McpManager,
        arguments: Option<Map<String, Value>>,
        mut options: CallOptions,
        cap: Duration,
    ) -> Result<ToolOutput, Aborted> {
        // A child: the cap cancels this call only, never the caller's token.
        let cancel = options.cancel.take().unwrap_or_default().child_token();
        options.cancel = Some(cancel.clone());
        let call = self.call_uncapped(manager, arguments, options);
        tokio::pin!(call);
        tokio::select! {
            output = &mut call => output,
            () = tokio::time::sleep(cap) => {
                // Cancel rather than drop the call, so the server hears about it
                // (`notifications/cancelled`) and stops working.
                cancel.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(1), &mut call).await;
                Ok(error_output(format!(
                    "MCP error: tool call `{}` exceeded the time cap of {} ms and was cancelled",
                    self.name,
                    cap.as_millis()
                )))
            }
        }
    }
}

/// An error result with one text block.
pub(crate) fn error_output(text: String) -> ToolOutput {
    ToolOutput {
        content: vec![Content::text(text)],
        is_error: true,
        ..ToolOutput::default()
    }
}
