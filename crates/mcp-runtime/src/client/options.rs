//! What a host sets on a connection ([`ConnectOptions`]) and on one tool call
//! ([`CallOptions`], the one call-options type of the client, the manager, the tool bridge,
//! the session and the gateway), and the cap on a tool result's text ([`OutputCap`]).

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ClientEvent, Content, ElicitationHandler, ProgressUpdate, ToolOutput};

/// Settings of a connection that do not come from the server's config.
#[derive(Clone)]
pub struct ConnectOptions {
    /// Directories offered to the server in `roots/list` (default: the current directory).
    pub roots: Vec<PathBuf>,
    /// Where to send server notifications (tool list changes, logs, progress). The channel is
    /// bounded so that a flooding server cannot grow the host's memory: when it is full, log
    /// and progress events are dropped, while a tool-list change waits for room (merged with
    /// later ones), so it is never lost. [`EVENT_BUFFER`] is a fitting capacity.
    pub events: Option<mpsc::Sender<ClientEvent>>,
    /// Answers the server's `elicitation/create` requests. Servers are told the client
    /// supports elicitation only when this is set.
    pub elicitation: Option<ElicitationHandler>,
    /// OAuth for remote servers: stored credentials, and whether a 401 may start a login.
    /// `None` (the default) sends no token; [`ConnectOptions::with_user_state`] uses the
    /// per-user credential store without ever starting a login.
    pub auth: Option<crate::auth::AuthContext>,
    /// Sent as `clientInfo` in the handshake (default: mcpr's).
    pub identity: crate::ClientIdentity,
    /// The HTTP client of remote servers (streamable HTTP and legacy SSE). The default is the
    /// process's shared one; a host passes its own for a proxy, certificates or headers.
    pub http: crate::net::HttpClient,
    /// Where the era each server speaks is remembered, so that a later connection opens the
    /// right way at once; `None` probes every time.
    pub cache: Option<std::sync::Arc<crate::cache::ToolCache>>,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("roots", &self.roots)
            .field("events", &self.events.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("auth", &self.auth)
            .field("identity", &self.identity)
            .field("http", &self.http)
            .field("cache", &self.cache.is_some())
            .finish()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            roots: std::env::current_dir().into_iter().collect(),
            events: None,
            elicitation: None,
            auth: None,
            identity: crate::ClientIdentity::default(),
            http: crate::net::HttpClient::shared(),
            cache: None,
        }
    }
}

impl ConnectOptions {
    /// Use the per-user credential store for remote servers (never starting a login). The
    /// default opens nothing in the user's home.
    pub fn with_user_state(mut self) -> Self {
        self.auth = crate::auth::AuthContext::user_for(&self.identity);
        self
    }
}

/// Settings of one tool call, wherever it is made: [`McpClient::call_tool`],
/// [`McpManager::call_tool`], [`McpTool::call`], a session, or a sub-agent handle.
///
/// A connection honours `timeout`, `cancel` and `progress`; the tool bridge (and so the
/// session and the gateway) also applies `cap` and `output_cap`.
///
/// ```
/// use std::time::Duration;
/// use mcp_runtime::client::CallOptions;
///
/// let options = CallOptions::default().with_timeout(Duration::from_secs(30));
/// assert_eq!(options.timeout, Some(Duration::from_secs(30)));
/// ```
///
/// [`McpClient::call_tool`]: super::McpClient::call_tool
/// [`McpManager::call_tool`]: crate::manager::McpManager::call_tool
/// [`McpTool::call`]: crate::tools::McpTool::call
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Overrides the server's tool timeout for this call.
    pub timeout: Option<Duration>,
    /// A cap on the whole call, waiting for a connecting server included: when it is reached
    /// the call is cancelled and the caller gets an error result.
    pub cap: Option<Duration>,
    /// Cancels the call; the server is sent `notifications/cancelled`.
    pub cancel: Option<CancellationToken>,
    /// Receives the `notifications/progress` the server sends about this call, in the order
    /// they are handled (a gateway forwards them to its own client). Bounded: while it is full,
    /// further updates are dropped (progress is advisory; a later update supersedes them), so a
    /// flooding server cannot grow memory. [`EVENT_BUFFER`](super::EVENT_BUFFER) is a fitting
    /// capacity.
    pub progress: Option<mpsc::Sender<ProgressUpdate>>,
    /// Truncate large outputs.
    pub output_cap: Option<OutputCap>,
}

impl CallOptions {
    /// Override the server's tool timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Cap the whole call.
    pub fn with_cap(mut self, cap: Duration) -> Self {
        self.cap = Some(cap);
        self
    }

    /// Cancel the call when `cancel` is cancelled.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Send the server's progress about this call to `progress`.
    pub fn with_progress(mut self, progress: mpsc::Sender<ProgressUpdate>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Truncate large outputs.
    pub fn with_output_cap(mut self, cap: OutputCap) -> Self {
        self.output_cap = Some(cap);
        self
    }
}

/// Cap on the text a tool result may carry into the conversation.
#[derive(Debug, Clone)]
pub struct OutputCap {
    /// Most bytes of text kept.
    pub max_bytes: usize,
    /// Where the whole output is written when it is cut.
    pub spill_dir: PathBuf,
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
