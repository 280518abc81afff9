//! The in-process face of the gateway: what a host hands to a sub-agent it runs itself. The
//! sub-agent sees the parent's live tools (optionally scoped) and calls them over the parent's
//! connections — no second process per server, no protocol hop — with a time cap per call and
//! an abort that reaches the servers. Its resources and prompts follow the same scope as the
//! gateway's: what the filter does not offer cannot be listed, read or got.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::catalog::{Catalog, CatalogError};
use super::filter::ToolFilter;
use super::search_mode::{ToolSearch, ToolSearchMode};
use super::view::ScopedTools;
use crate::client::{
    CallOptions, OutputCap, PromptDefinition, ResourceDefinition, ResourceTemplateDefinition,
    ToolOutput,
};
use crate::manager::{ManagerEvent, McpManager};
use crate::tools::error_output;
use crate::tools::{Aborted, McpTool, NamingStyle, SearchHit};

/// The default cap on one sub-agent tool call, waiting for a connecting server included.
pub const DEFAULT_CALL_CAP: Duration = Duration::from_secs(60);

/// Settings of a [`SubAgentHandle`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SubAgentOptions {
    /// Which of the parent's servers and tools the sub-agent gets (default: all).
    pub filter: ToolFilter,
    /// How tools are named (default `mcp_<server>_<tool>`, as the parent names them).
    pub naming: NamingStyle,
    /// Cap on each call (default [`DEFAULT_CALL_CAP`]); `None` leaves only the servers' own
    /// tool timeouts.
    pub call_cap: Option<Duration>,
    /// Cap on each tool result (default [`OutputCap::for_agents`]: about 100 KB, or
    /// `MCPR_MAX_OUTPUT` bytes); a call's own [`CallOptions::output_cap`] wins. `None` returns
    /// results whole.
    pub output_cap: Option<OutputCap>,
}

impl Default for SubAgentOptions {
    fn default() -> Self {
        SubAgentOptions {
            filter: ToolFilter::default(),
            naming: NamingStyle::Mcpr,
            call_cap: Some(DEFAULT_CALL_CAP),
            output_cap: OutputCap::for_agents(),
        }
    }
}

/// A sub-agent's view of its parent's MCP tools. Cheap to clone; clones share the abort.
///
/// ```no_run
/// # async fn demo(manager: mcp_runtime::McpManager) {
/// use std::time::Duration;
/// use mcp_runtime::gateway::{CallOptions, SubAgentHandle, SubAgentOptions, ToolFilter};
///
/// let options = SubAgentOptions::default()
///     .with_filter(ToolFilter::default().with_servers(["github"]))
///     .with_call_cap(Some(Duration::from_secs(20)));
/// let handle = SubAgentHandle::new(manager, options);
/// for tool in handle.tools() {
///     println!("{}: {}", tool.name, tool.definition.description.as_deref().unwrap_or(""));
/// }
/// let args = serde_json::json!({"query": "mcp"}).as_object().cloned();
/// match handle.call("mcp_github_search", args, CallOptions::default()).await {
///     Ok(output) => println!("{}", output.text()),
///     Err(_aborted) => println!("the parent stopped the sub-agent"),
/// }
/// // When the sub-agent is stopped: every call still running is cancelled on its server.
/// handle.abort();
/// # }
/// ```
#[derive(Clone)]
pub struct SubAgentHandle {
    scope: Arc<ScopedTools>,
    catalog: Arc<Catalog>,
    /// The search index over the handle's view (see [`SubAgentHandle::search_tools`]).
    tool_search: Arc<ToolSearch>,
    cap: Option<Duration>,
    output_cap: Option<OutputCap>,
    abort: CancellationToken,
}

impl std::fmt::Debug for SubAgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgentHandle")
            .field("filter", &self.scope.filter)
            .field("cap", &self.cap)
            .field("aborted", &self.abort.is_cancelled())
            .finish()
    }
}

impl SubAgentHandle {
    /// A handle over `manager`'s servers (the parent's manager: its connections are shared).
    pub fn new(manager: McpManager, options: SubAgentOptions) -> Self {
        SubAgentHandle {
            scope: Arc::new(ScopedTools::new(manager, options.filter, options.naming)),
            catalog: Arc::new(Catalog::default()),
            tool_search: Arc::new(ToolSearch::new(ToolSearchMode::On, Default::default())),
            cap: options.call_cap,
            output_cap: options.output_cap,
            abort: CancellationToken::new(),
        }
    }

    /// The tools the sub-agent may call, right now (live and cached, filtered, sorted by name).
    /// An MCP App's `ui://` URI in a tool's `_meta` is the one
    /// [`read_resource`](Self::read_resource) takes: namespaced by its server, as the gateway
    /// presents it.
    pub fn tools(&self) -> Vec<McpTool> {
        self.scope
            .view()
            .to_vec()
            .into_iter()
            .map(super::apps::presented_tool)
            .collect()
    }

    /// The tools of this handle's view that best match `query` (what the tool should do), best
    /// first, at most `limit`: a host can hand a sub-agent only these instead of every tool.
    /// Nothing outside the handle's scope is ever found.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        let view = self.scope.view();
        self.tool_search
            .find(&view, &[], &self.scope.filter, query, limit)
    }

    /// The parent's server events; a [`ManagerEvent::ToolsChanged`] means [`tools`](Self::tools)
    /// may have changed.
    pub fn changes(&self) -> broadcast::Receiver<ManagerEvent> {
        self.scope.manager.subscribe()
    }

    /// Call the tool named `name` (as in [`tools`](Self::tools)). Failures — an unknown tool, a
    /// server that is down, a timeout, the cap — are error results (`MCP error: ...`); only an
    /// abort (the call's token, or [`abort`](Self::abort)) is an `Err`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        mut call: CallOptions,
    ) -> Result<ToolOutput, Aborted> {
        if self.abort.is_cancelled() {
            return Err(Aborted);
        }
        let token = self.abort.child_token();
        // The caller's token is watched here; the call gets a child of the handle's abort.
        let cancel = call.cancel.take();
        call.cap = call.cap.or(self.cap);
        if call.output_cap.is_none() {
            call.output_cap = self.output_cap.clone();
        }
        let settings = call.with_cancel(token.clone());
        let running = self.scope.call(name, arguments, settings);
        tokio::pin!(running);
        let output = match &cancel {
            Some(cancel) => tokio::select! {
                output = &mut running => output,
                () = cancel.cancelled() => {
                    // Let the call tell its server before it returns.
                    token.cancel();
                    (&mut running).await
                }
            },
            None => running.await,
        }?;
        Ok(output.unwrap_or_else(|| error_output(format!("MCP error: unknown tool `{name}`"))))
    }

    /// The resources the sub-agent may read (named `<server>/<name>`), asked of the servers in
    /// scope now.
    pub async fn resources(&self) -> Vec<ResourceDefinition> {
        self.catalog.resource_definitions(&self.scope).await
    }

    /// The resource templates the sub-agent is offered (named `<server>/<name>`).
    pub async fn resource_templates(&self) -> Vec<ResourceTemplateDefinition> {
        self.catalog.template_definitions(&self.scope).await
    }

    /// Read `uri` (the result in the wire format, `{"contents": [...]}`). Only a URI that a
    /// server in scope listed, or that one of its resource templates produces, and that the
    /// filter offers, reaches a server; anything else is [`CatalogError::Unknown`].
    pub async fn read_resource(&self, uri: &str) -> Result<Value, CatalogError> {
        self.unless_aborted(self.catalog.read(&self.scope, uri, &Default::default()))
            .await
    }

    /// The prompts the sub-agent may get (named `mcp_<server>_<prompt>`, scoped like tools).
    pub async fn prompts(&self) -> Vec<PromptDefinition> {
        self.catalog.prompt_definitions(&self.scope).await
    }

    /// Get the prompt named `name` (as in [`prompts`](Self::prompts)), in the wire format
    /// (`{"messages": [...]}`); a prompt the filter does not offer is
    /// [`CatalogError::Unknown`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, CatalogError> {
        self.unless_aborted(self.catalog.get_prompt(&self.scope, name, arguments))
            .await
    }

    /// Run `work` unless or until the handle is aborted.
    async fn unless_aborted<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, CatalogError>>,
    ) -> Result<T, CatalogError> {
        if self.abort.is_cancelled() {
            return Err(CatalogError::Aborted);
        }
        tokio::select! {
            result = work => result,
            () = self.abort.cancelled() => Err(CatalogError::Aborted),
        }
    }

    /// Stop the sub-agent: cancel every call of this handle still running (their servers are
    /// sent `notifications/cancelled`) and refuse new ones.
    pub fn abort(&self) {
        self.abort.cancel();
    }

    /// Whether [`abort`](Self::abort) was called.
    pub fn is_aborted(&self) -> bool {
        self.abort.is_cancelled()
    }
}

crate::setters!(SubAgentOptions {
    with_filter => filter: ToolFilter,
    with_naming => naming: NamingStyle,
    with_call_cap => call_cap: Option<Duration>,
    with_output_cap => output_cap: Option<OutputCap>,
});
