//! From the manager's per-server tool lists to the tools a host registers, and back from a
//! tool call to the right server.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::naming::{NamingStyle, assign_names};
use crate::client::{CallOptions, Content, ProgressUpdate, ToolDefinition, ToolOutput};
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
    /// Description, schemas and annotations as the server sent them.
    pub definition: ToolDefinition,
    /// `mcp:<server> via <provider>` (or `mcp:<server>` when the provider is unknown).
    pub label: String,
    /// `true` for a tool from the cache whose server is still connecting: calling it waits
    /// for the connection.
    pub deferred: bool,
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
        for definition in server.tools.iter() {
            let Some(name) = names.next() else { break };
            tools.push(McpTool {
                name,
                server: server.server.clone(),
                tool: definition.name.clone(),
                definition: definition.clone(),
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

/// Cap on the text a tool result may carry into the conversation.
#[derive(Debug, Clone)]
pub struct OutputCap {
    /// Most bytes of text kept.
    pub max_bytes: usize,
    /// Where the whole output is written when it is cut.
    pub spill_dir: PathBuf,
}

/// Per-call settings of [`McpTool::call`].
#[derive(Debug, Clone, Default)]
pub struct ToolCallOptions {
    /// Overrides the server's tool timeout.
    pub timeout: Option<Duration>,
    /// Aborts the call.
    pub cancel: Option<CancellationToken>,
    /// Truncate large outputs.
    pub output_cap: Option<OutputCap>,
    /// Receives the server's progress notifications about the call.
    pub progress: Option<tokio::sync::mpsc::Sender<ProgressUpdate>>,
}

impl McpTool {
    /// Call the tool through `manager`. A deferred tool first waits for its server. Every
    /// failure — transport, timeout, JSON-RPC error, a server that is down — comes back as an
    /// error result whose text is `MCP error: <message>`; only an abort is an `Err`.
    pub async fn call(
        &self,
        manager: &McpManager,
        arguments: Option<Map<String, Value>>,
        options: ToolCallOptions,
    ) -> Result<ToolOutput, Aborted> {
        let call_options = CallOptions {
            timeout: options.timeout,
            cancel: options.cancel.clone(),
            progress: options.progress.clone(),
        };
        let output = match manager
            .call_tool(&self.server, &self.tool, arguments, call_options)
            .await
        {
            Ok(output) => output,
            Err(error) if error.is_cancelled() => return Err(Aborted),
            Err(error) => ToolOutput {
                content: vec![Content::Text {
                    text: format!("MCP error: {error}"),
                }],
                structured_content: None,
                is_error: true,
            },
        };
        Ok(match &options.output_cap {
            Some(cap) => cap.apply(&self.name, output),
            None => output,
        })
    }
}

impl OutputCap {
    /// Cut the text of `output` to `max_bytes`, writing the whole output to a file and saying
    /// where at the end of the text. Outputs within the cap are returned unchanged.
    pub fn apply(&self, tool: &str, mut output: ToolOutput) -> ToolOutput {
        let total: usize = output.content.iter().map(block_size).sum();
        if total <= self.max_bytes {
            return output;
        }
        let spilled = self.spill(tool, &output);
        let mut budget = self.max_bytes;
        let mut kept = Vec::new();
        for block in output.content.drain(..) {
            let size = block_size(&block);
            if size <= budget {
                budget -= size;
                kept.push(block);
            } else if let Content::Text { text } = block {
                let cut = floor_char_boundary(&text, budget);
                kept.push(Content::Text {
                    text: text[..cut].to_owned(),
                });
                budget = 0;
            } else {
                budget = 0;
            }
            if budget == 0 {
                break;
            }
        }
        let shown: usize = kept.iter().map(block_size).sum();
        let marker = match spilled {
            Ok(path) => format!(
                "\n[output truncated: {shown} of {total} bytes shown; full output in {}]",
                path.display()
            ),
            Err(e) => format!(
                "\n[output truncated: {shown} of {total} bytes shown; could not save the rest: {e}]"
            ),
        };
        kept.push(Content::Text { text: marker });
        output.content = kept;
        output
    }

    fn spill(&self, tool: &str, output: &ToolOutput) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.spill_dir)?;
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path = self.spill_dir.join(format!("{tool}-{stamp}.json"));
        let json = serde_json::to_vec_pretty(output).map_err(std::io::Error::other)?;
        std::fs::write(&path, json)?;
        Ok(path)
    }
}

/// Bytes a block contributes to the conversation (text, or the base64 of media).
fn block_size(block: &Content) -> usize {
    match block {
        Content::Text { text } => text.len(),
        Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
        Content::Resource { resource } => resource.to_string().len(),
        Content::ResourceLink(link) => Value::Object(link.clone()).to_string().len(),
    }
}

fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_outputs_are_cut_and_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let cap = OutputCap {
            max_bytes: 10,
            spill_dir: dir.path().to_owned(),
        };
        let output = ToolOutput {
            content: vec![Content::Text {
                text: "é".repeat(20),
            }],
            ..ToolOutput::default()
        };
        let cut = cap.apply("mcp_x_big", output.clone());
        let text = cut.text();
        assert!(text.starts_with(&"é".repeat(5)), "{text}");
        assert!(text.contains("10 of 40 bytes shown"), "{text}");
        let path = text
            .rsplit("full output in ")
            .next()
            .unwrap()
            .trim_end_matches(']');
        let saved: ToolOutput = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(saved, output);

        let small = ToolOutput {
            content: vec![Content::Text { text: "ok".into() }],
            ..Default::default()
        };
        assert_eq!(cap.apply("t", small.clone()), small);
    }
}
