//! The rmcp `ServerHandler` of the mock: handshake, tool listing and calls, with the
//! protocol-level fault knobs (delays, hangs, crashes, pagination, `list_changed` timer).
//!
//! It knows nothing about stdio, so the same handler can be served over another transport.

// rmcp marks logging and `resources/subscribe` deprecated because protocol 2026-07-28 drops
// them; the mock speaks the revisions that have them (`--notify-tools`).
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CompleteRequestParams, CompleteResult, DiscoverResult, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::conformance::tasks::TaskStore;
use super::tools::{Catalog, LOG_LEVELS, served_by_server, text_result, tool_error};
use super::{apps, content, task_tools};

/// Prefix of the opaque `tools/list` cursors (followed by the index of the page's first tool).
const CURSOR_PREFIX: &str = "mcpr-mock-page-";

/// A delay before answering one kind of request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Delay {
    /// Answer at once.
    None,
    /// Wait this long first.
    For(Duration),
    /// Never answer (until the request is cancelled or the connection ends).
    Forever,
}

impl Delay {
    /// Waits as configured; `Err` if the request was cancelled meanwhile (its answer would be
    /// dropped by rmcp anyway).
    async fn wait(self, ct: CancellationToken) -> Result<(), McpError> {
        let waited = match self {
            Delay::None => return Ok(()),
            Delay::For(duration) => tokio::select! {
                () = tokio::time::sleep(duration) => true,
                () = ct.cancelled_owned() => false,
            },
            Delay::Forever => {
                ct.cancelled_owned().await;
                false
            }
        };
        if waited {
            Ok(())
        } else {
            Err(McpError::internal_error("request cancelled", None))
        }
    }
}

/// The handler's fault knobs.
#[derive(Debug, Clone)]
pub(crate) struct Knobs {
    /// Before answering `initialize`.
    pub init: Delay,
    /// Before answering `tools/list`.
    pub list: Delay,
    /// Before running a `tools/call`.
    pub call: Delay,
    /// Exit with status 1 on `notifications/initialized`.
    pub exit_after_init: bool,
    /// Exit with status 101 on receiving call number N+1.
    pub crash_after: Option<usize>,
    /// Tools per `tools/list` page (`None`: one page).
    pub page_size: Option<usize>,
    /// Every page returns the same `nextCursor`.
    pub repeat_cursor: bool,
    /// Send `notifications/tools/list_changed` this often after `initialized`.
    pub list_changed_every: Option<Duration>,
    /// Also serve the sample resources, resource template and prompts (see `content`).
    pub content: bool,
    /// The URI of the MCP App (`--app`), listed and read beside any `content`.
    pub app: Option<String>,
    /// `--task-tools`: tools that run as tasks, and the tasks extension.
    pub task_tools: bool,
    /// Serve `log` and `touch`, logging and resource subscriptions (`--notify-tools`).
    pub notify_tools: bool,
    /// Serve the prompt `ask`, which asks the client first (`--elicit-prompt`).
    pub elicit_prompt: bool,
    /// Caching hints on `server/discover` and `tools/list` results.
    pub cache_hints: CacheHints,
}

/// `--ttl-ms` and `--cache-scope`: the caching hints (2026-07-28) the mock puts on its
/// `server/discover` and `tools/list` results. Unset parts keep rmcp's defaults (discover:
/// `0` and `private`; lists: no hints).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CacheHints {
    pub ttl_ms: Option<u64>,
    pub scope: Option<Scope>,
}

/// The `--cache-scope` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// Anyone may cache the result.
    Public,
    /// Only the same authorization context may reuse it.
    Private,
}

impl From<Scope> for CacheScope {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::Public => CacheScope::Public,
            Scope::Private => CacheScope::Private,
        }
    }
}

/// The mock MCP server: cheap to clone, all clones share one state.
#[derive(Clone)]
pub(crate) struct MockServer {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    catalog: Catalog,
    knobs: Knobs,
    /// `tools/call` requests received so far, for `--crash-after`.
    calls: AtomicUsize,
    /// Whether the `list_changed` timer runs already (a client may repeat `initialized`).
    timer_started: AtomicBool,
    /// The level set with `logging/setLevel`, as an index in [`LOG_LEVELS`] (0: everything).
    log_level: AtomicUsize,
    /// URIs subscribed with `resources/subscribe`.
    subscribed: Mutex<HashSet<String>>,
    /// The tasks of `--task-tools`.
    tasks: TaskStore,
}

impl MockServer {
    /// A server called `name` offering `catalog`, misbehaving as `knobs` say.
    pub(crate) fn new(name: String, catalog: Catalog, knobs: Knobs) -> Self {
        MockServer {
            inner: Arc::new(Inner {
                name,
                catalog,
                knobs,
                calls: AtomicUsize::new(0),
                timer_started: AtomicBool::new(false),
                log_level: AtomicUsize::new(0),
                subscribed: Mutex::default(),
                tasks: TaskStore::default(),
            }),
        }
    }

    /// One page of tools for `cursor`, following the pagination knobs.
    fn page(&self, cursor: Option<&str>) -> Result<ListToolsResult, McpError> {
        let catalog = &self.inner.catalog;
        let Some(size) = self.inner.knobs.page_size else {
            return Ok(ListToolsResult::with_all_items(
                catalog.definitions(0, catalog.len()),
            ));
        };
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor
                .strip_prefix(CURSOR_PREFIX)
                .and_then(|index| index.parse::<usize>().ok())
                .filter(|index| *index <= catalog.len())
                .ok_or_else(|| {
                    McpError::invalid_params(format!("invalid cursor `{cursor}`"), None)
                })?,
        };
        let end = start.saturating_add(size);
        let mut result = ListToolsResult::with_all_items(catalog.definitions(start, end));
        result.next_cursor = if self.inner.knobs.repeat_cursor {
            // Always "the second page", whatever was asked: a client that follows cursors
            // blindly never stops.
            Some(format!("{CURSOR_PREFIX}{}", size.min(catalog.len())))
        } else if end < catalog.len() {
            Some(format!("{CURSOR_PREFIX}{end}"))
        } else {
            None
        };
        Ok(result)
    }
}

impl ServerHandler for MockServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.inner.knobs.content {
            let with_content = ServerCapabilities::builder()
                .enable_resources()
                .enable_prompts()
                .build();
            capabilities.resources = with_content.resources;
            capabilities.prompts = with_content.prompts;
        }
        if self.inner.knobs.app.is_some() {
            if capabilities.resources.is_none() {
                capabilities.resources = ServerCapabilities::builder()
                    .enable_resources()
                    .build()
                    .resources;
            }
            capabilities.completions = Some(Default::default());
        }
        if self.inner.knobs.elicit_prompt {
            capabilities.prompts = ServerCapabilities::builder()
                .enable_prompts()
                .build()
                .prompts;
        }
        if self.inner.knobs.notify_tools {
            capabilities.logging = Some(Default::default());
            if let Some(resources) = &mut capabilities.resources {
                resources.subscribe = Some(true);
            }
        }
        if self.inner.knobs.task_tools {
            capabilities.extensions = ServerCapabilities::builder()
                .enable_tasks()
                .build()
                .extensions;
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.inner.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_instructions(
                "mcpr mock server: test tools (echo, add, sleep, fail, image, structured, mixed, \
                 progress, huge, roots) for exercising MCP clients.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.inner.knobs.init.wait(context.ct.clone()).await?;
        // What the default `initialize` does; `--protocol-version` is applied by the transport.
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.inner.knobs.exit_after_init {
            std::process::exit(1);
        }
        let Some(every) = self.inner.knobs.list_changed_every else {
            return;
        };
        if self.inner.timer_started.swap(true, Ordering::SeqCst) {
            return;
        }
        let peer = context.peer;
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                ticks.tick().await;
                // Sending fails once the connection is closed: the timer ends with it.
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    /// 2026-07-28 clients subscribe to tool list changes with `subscriptions/listen`: accept
    /// what they ask (rmcp narrows it to the capabilities above and acknowledges it).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        let mut result = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        let hints = self.inner.knobs.cache_hints;
        if let Some(ttl_ms) = hints.ttl_ms {
            result.ttl_ms = ttl_ms;
        }
        if let Some(scope) = hints.scope {
            result.cache_scope = scope.into();
        }
        Ok(result)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.inner.knobs.list.wait(context.ct.clone()).await?;
        let mut page = self.page(request.as_ref().and_then(|params| params.cursor.as_deref()))?;
        let hints = self.inner.knobs.cache_hints;
        if hints.ttl_ms.is_some() {
            page.ttl_ms = hints.ttl_ms;
        }
        if let Some(scope) = hints.scope {
            page.cache_scope = Some(scope.into());
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let received_before = self.inner.calls.fetch_add(1, Ordering::SeqCst);
        if self
            .inner
            .knobs
            .crash_after
            .is_some_and(|limit| received_before >= limit)
        {
            std::process::exit(101);
        }
        self.inner.knobs.call.wait(context.ct.clone()).await?;
        // An unknown tool is a protocol error (-32602), as the MCP specification says.
        if !self.inner.catalog.contains(&request.name) {
            return Err(McpError::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        if self.inner.knobs.task_tools
            && let Some(response) = task_tools::call(
                &self.inner.tasks,
                &request.name,
                arguments.clone(),
                &context,
            )
            .await
        {
            return response;
        }
        if let Some(result) = apps::call(&request.name, &context) {
            return Ok(result.into());
        }
        if served_by_server(&self.inner.catalog, &request.name) {
            return Ok(self
                .notify_tool(&request.name, &arguments, &context)
                .await
                .into());
        }
        Ok(self
            .inner
            .catalog
            .call(&request.name, arguments, &context)
            .await
            .into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        task_tools::get(&self.inner.tasks, &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let answers = serde_json::to_value(&request.input_responses)
            .map_err(|e| McpError::invalid_params(format!("inputResponses: {e}"), None))?;
        task_tools::update(&self.inner.tasks, &request.task_id, answers)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        task_tools::cancel(&self.inner.tasks, &request.task_id)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let listed = self.with_app(apps::resource, |name| content::resources(name).resources)?;
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let listed = self.with_app(apps::template, |name| {
            content::templates(name).resource_templates
        })?;
        Ok(ListResourceTemplatesResult::with_all_items(listed))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let completed = self
            .inner
            .knobs
            .app
            .as_deref()
            .and_then(|uri| apps::complete(uri, &self.inner.name, &request));
        Ok(completed.unwrap_or_default())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if self.inner.knobs.app.as_deref() == Some(request.uri.as_str()) {
            return Ok(apps::read(&request.uri, &self.inner.name).into());
        }
        self.content()?;
        Ok(content::read(&request.uri).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut listed = match self.content() {
            Ok(()) => content::prompts(),
            Err(_) if self.inner.knobs.elicit_prompt => ListPromptsResult::default(),
            Err(e) => return Err(e),
        };
        if self.inner.knobs.elicit_prompt {
            listed.prompts.push(crate::ask_prompt::listed());
        }
        Ok(listed)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if !self.inner.knobs.notify_tools {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "method not found (start the mock with --notify-tools)",
                None,
            ));
        }
        let level = serde_json::to_value(request.level).unwrap_or_default();
        let rank = LOG_LEVELS
            .iter()
            .position(|l| Some(*l) == level.as_str())
            .unwrap_or(0);
        self.inner.log_level.store(rank, Ordering::SeqCst);
        Ok(())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_to(request.uri, true)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_to(request.uri, false)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if self.inner.knobs.elicit_prompt && request.name == crate::ask_prompt::NAME {
            return Ok(crate::ask_prompt::get(&context).await?.into());
        }
        self.content()?;
        Ok(content::prompt(&request.name, request.arguments)?.into())
    }
}

impl MockServer {
    /// `log` and `touch` (`--notify-tools`).
    async fn notify_tool(
        &self,
        name: &str,
        arguments: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let text = |key: &str| arguments.get(key).and_then(|v| v.as_str());
        match name {
            "log" => {
                let level = text("level").unwrap_or("info");
                let Some(rank) = LOG_LEVELS.iter().position(|l| *l == level) else {
                    return tool_error(format!("unknown level `{level}`"));
                };
                if rank < self.inner.log_level.load(Ordering::SeqCst) {
                    return text_result("below the log level");
                }
                let Ok(level) = serde_json::from_value::<LoggingLevel>(level.into()) else {
                    return tool_error(format!("unknown level `{level}`"));
                };
                let data = serde_json::Value::String(text("text").unwrap_or_default().to_owned());
                let mut param = LoggingMessageNotificationParam::new(level, data);
                param.logger = Some("mock".to_owned());
                match context.peer.notify_logging_message(param).await {
                    Ok(()) => text_result("logged"),
                    Err(e) => tool_error(format!("not sent: {e}")),
                }
            }
            _ => {
                let uri = text("uri").unwrap_or_default().to_owned();
                let subscribed = self
                    .inner
                    .subscribed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains(&uri);
                if !subscribed {
                    return text_result(format!("not subscribed: {uri}"));
                }
                let param = ResourceUpdatedNotificationParam::new(uri.clone());
                match context.peer.notify_resource_updated(param).await {
                    Ok(()) => text_result(format!("updated {uri}")),
                    Err(e) => tool_error(format!("not sent: {e}")),
                }
            }
        }
    }

    /// `resources/subscribe` (`on`) or `unsubscribe`, with `--notify-tools`.
    fn subscribe_to(&self, uri: String, on: bool) -> Result<(), McpError> {
        if !self.inner.knobs.notify_tools {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "method not found (start the mock with --notify-tools)",
                None,
            ));
        }
        let mut subscribed = self
            .inner
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if on {
            subscribed.insert(uri);
        } else {
            subscribed.remove(&uri);
        }
        Ok(())
    }

    /// A listing: the `--resources` items (`content`, given the server's name), then the
    /// `--app` one (`app`, given its URI and the name). With `--app` alone the app's item is
    /// listed by itself; with neither, `method not found`.
    fn with_app<T>(
        &self,
        app: impl FnOnce(&str, &str) -> T,
        content: impl FnOnce(&str) -> Vec<T>,
    ) -> Result<Vec<T>, McpError> {
        let name = &self.inner.name;
        let app = self.inner.knobs.app.as_deref().map(|uri| app(uri, name));
        let mut listed = match self.content() {
            Ok(()) => content(name),
            Err(_) if app.is_some() => Vec::new(),
            Err(e) => return Err(e),
        };
        listed.extend(app);
        Ok(listed)
    }

    /// `method not found` unless `--resources` is on, as for a server without them.
    fn content(&self) -> Result<(), McpError> {
        if self.inner.knobs.content {
            Ok(())
        } else {
            Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "method not found (start the mock with --resources)",
                None,
            ))
        }
    }
}
