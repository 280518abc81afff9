//! The gateway as an rmcp `ServerHandler`: the handshake, `tools/list` from the live view,
//! `tools/call` routed to the right server with the client's cancellation and progress token
//! (the backend's questions meanwhile go to the client: see `input`), the servers' resources
//! and prompts (see `catalog`), and the clients' log levels and resource subscriptions (see
//! `subscriptions`).

// rmcp marks logging and `resources/subscribe` deprecated because protocol 2026-07-28 drops
// them; the revisions with sessions, which the gateway serves too, still have them.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    DiscoverResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ResultType, ServerCapabilities, ServerConfig as InitializeInfo,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use super::Gateway;
use super::answer::Answered;
use super::catalog::CatalogError;
use super::input::{Asker, Outcome, Stopped};
use super::progress::Forwarder;
use super::search_mode::{
    ActivatedTools, INVOKE_TOOL, SEARCH_TOOL, invoke_arguments, unknown_tool,
};
use super::subscriptions::{self, Target};
use super::view::View;
use crate::client::ToolOutput;
use crate::client::model::tool_request::{Arguments, ToolRequest};
use crate::client::{CallOptions, Retry};
use crate::tools::error_output;
use crate::tools::{McpTool, NamingStyle};

/// The newest protocol with the `initialize` handshake: what `initialize` agrees to (one
/// session per client).
const NEWEST_SESSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The newest protocol we serve: 2026-07-28 clients get `server/discover` and stateless
/// requests (rmcp checks their per-request `_meta` and, over HTTP, their headers).
const NEWEST: ProtocolVersion = ProtocolVersion::V_2026_07_28;

impl ServerHandler for Gateway {
    fn get_info(&self) -> InitializeInfo {
        let mut capabilities = ServerCapabilities::builder()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        // What the servers behind offer (see `subscriptions`). During start-up that is not
        // known yet, and a client asking then (as a host starting the gateway does) would
        // never learn it: both are offered, and a server without them refuses later.
        let relay = &self.inner.relay;
        let starting = !*self.inner.started.borrow();
        if starting || relay.offers_logging() {
            capabilities.logging = Some(Default::default());
        }
        super::tasks::offer(&mut capabilities, starting || relay.offers_tasks());
        if (starting || relay.offers_subscriptions())
            && let Some(resources) = &mut capabilities.resources
        {
            resources.subscribe = Some(true);
        }
        InitializeInfo::new(capabilities)
            .with_server_info(Implementation::new(
                self.inner.options.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_protocol_version(NEWEST_SESSION)
            .with_instructions(match self.inner.options.naming {
                NamingStyle::Raw => {
                    "The tools, prompts and resources of one MCP server behind a gateway, under \
                 their own names."
                }
                _ => {
                    "Tools of several MCP servers behind one gateway. Each tool is named \
                 mcp_<server>_<tool>; its description starts with the server it comes from."
                }
            })
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST))
    }

    /// rmcp's answer, with the servers' own caching hints (see `hints`); none while they
    /// start, as what the gateway offers may still change.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        let mut result = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        if *self.inner.started.borrow() {
            super::hints::on_discover(&mut result, super::hints::discovery(&self.inner.scope));
        }
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.inner
            .clients
            .add(context.peer, self.activated.clone(), self.listing.clone());
    }

    /// 2026-07-28 clients listen for tool list changes and for updates of resources.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder().tools_list_changed();
        if let Some(uris) = &requested.resource_subscriptions {
            accepted = accepted.resource_subscriptions(uris.iter().cloned());
        }
        Some(accepted.build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        boxed(async move {
            // Told of changes from the list as it is when the stream opens.
            let listing = Arc::new(super::notify::Listing::default());
            listing.listed(self.inner.list_digest(&self.activated));
            self.inner
                .clients
                .listen(context.sink().clone(), self.activated.clone(), listing);
            let subscriber = self.inner.relay.next_id();
            let uris = context
                .accepted()
                .resource_subscriptions
                .clone()
                .unwrap_or_default();
            for uri in uris {
                let target = Target::Listen(context.sink().clone());
                if let Err(e) = self.subscribe_to(&uri, subscriber, target).await {
                    tracing::debug!(
                        "gateway: a listen stream's `{uri}` is not served: {}",
                        e.message
                    );
                }
            }
            context.cancelled().await;
            self.inner.relay.release(subscriber).await;
            Ok(())
        })
        .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        boxed(async move {
            let level = serde_json::to_value(request.level)
                .ok()
                .and_then(|level| level.as_str().and_then(subscriptions::rank));
            let Some(level) = level else {
                return Err(McpError::invalid_params("unknown log level", None));
            };
            self.inner
                .relay
                .set_level(self.client, context.peer, level)
                .await;
            Ok(())
        })
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        boxed(async move {
            let target = Target::Session(context.peer);
            self.subscribe_to(&request.uri, self.client, target).await
        })
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        boxed(async move {
            let (server, uri) = self.owner(&request.uri).await?;
            self.inner
                .relay
                .unsubscribe(&server, &uri, self.client)
                .await;
            Ok(())
        })
        .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        boxed(async move {
            self.wait_started().await;
            let listed = self.inner.catalog.resources(&self.inner.scope).await;
            let result = ListResourcesResult::with_all_items(from_wire_list(listed));
            Ok(self.hinted(result, "resources/list", &context))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        boxed(async move {
            self.wait_started().await;
            let listed = self.inner.catalog.templates(&self.inner.scope).await;
            let result = ListResourceTemplatesResult::with_all_items(from_wire_list(listed));
            Ok(self.hinted(result, "resources/templates/list", &context))
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        // Of the client's `_meta`, only its trace context goes on, as with a tool call.
        let trace = crate::client::TraceContext::from_meta(&context.meta.0.0);
        boxed(async move {
            self.wait_started().await;
            let contents = self
                .inner
                .catalog
                .read(&self.inner.scope, &request.uri, &trace)
                .await
                .map_err(|e| match e {
                    CatalogError::Unknown(message) => McpError::resource_not_found(message, None),
                    other => McpError::internal_error(other.to_string(), None),
                })?;
            let result: ReadResourceResult = serde_json::from_value(contents).map_err(|e| {
                McpError::internal_error(format!("MCP error: invalid result: {e}"), None)
            })?;
            Ok(result.into())
        })
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        boxed(async move {
            self.wait_started().await;
            let listed = self.inner.catalog.prompts(&self.inner.scope).await;
            let result = ListPromptsResult::with_all_items(from_wire_list(listed));
            Ok(self.hinted(result, "prompts/list", &context))
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        // Its backend may ask the client first (see `prompt`).
        boxed(self.relay_prompt(request, context)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        boxed(async move {
            self.wait_started().await;
            let params = serde_json::to_value(&request)
                .map_err(|e| McpError::internal_error(format!("cannot relay: {e}"), None))?;
            let result = self
                .inner
                .catalog
                .complete(&self.inner.scope, params)
                .await
                .map_err(|e| match e {
                    CatalogError::Unknown(message) => McpError::invalid_params(message, None),
                    other => McpError::internal_error(other.to_string(), None),
                })?;
            serde_json::from_value(result).map_err(|e| {
                McpError::internal_error(format!("MCP error: invalid result: {e}"), None)
            })
        })
        .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.wait_started().await;
        let view = self.inner.scope.view();
        let all = self.inner.listed(&view);
        let tool_search = &self.inner.tool_search;
        if tool_search.active(&view, &all) {
            let listed = tool_search.listed(&view, &all, &self.activated);
            self.listing.listed(digest(&listed));
            return Ok(ListToolsResult::with_all_items(listed));
        }
        self.listing
            .listed(*view.digest.get_or_init(|| digest(&all)));
        let result = ListToolsResult::with_all_items(all.to_vec());
        // Caching hints are a 2026-07-28 matter: the servers' own, as they set them.
        if context
            .protocol_version()
            .is_some_and(|v| !v.has_initialize())
        {
            return Ok(super::hints::on_list(
                result,
                super::hints::tools(&self.inner.scope),
            ));
        }
        Ok(result)
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        self.get_passed_task(request, &context).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.update_passed_task(request, &context).await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.cancel_passed_task(request, &context).await
    }

    /// Only tools that ask for `Mcp-Param-*` headers: rmcp checks a call's headers against
    /// it (see `param_headers`).
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool_with_param_headers(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        boxed(async move {
            let asker = Asker::of(&context);
            let request = ToolRequest::from_params(request);
            Ok(match self.answer_call(request, &context, asker).await? {
                Answered::Output(output, modern) => self.output_response(output, modern),
                Answered::Response(response) => response,
            })
        })
        .await
    }
}

/// `future` on the heap. rmcp runs each request on a task of its own whose future holds the
/// largest of the handler's futures, and a task's future is copied several times on its way
/// in and out: boxed, each copy is a pointer.
fn boxed<'a, T>(
    future: impl std::future::Future<Output = T> + Send + 'a,
) -> futures::future::BoxFuture<'a, T> {
    Box::pin(future)
}

impl Gateway {
    /// `tools/call`: a retry with answers, a discovery tool, or a tool of a server. What
    /// rmcp's dispatch runs for every `tools/call`, and what the stream's fast path runs for
    /// one that dispatch would not check (see `front`). What the request's `_meta` says is
    /// read from `asker`, never from `context`'s (which the fast path leaves empty).
    pub(crate) async fn answer_call(
        &self,
        request: ToolRequest,
        context: &RequestContext<RoleServer>,
        asker: Asker,
    ) -> Result<Answered, McpError> {
        let plain = request.params.request_state.is_none()
            && request.params.name != SEARCH_TOOL
            && request.params.name != INVOKE_TOOL;
        if plain {
            // Its arguments go to the server as they came.
            let (params, arguments) = request.into_parts();
            return self
                .call_named(params.name.into_owned(), arguments, context, asker)
                .await;
        }
        let request = request
            .into_params()
            .map_err(|e| McpError::invalid_params(format!("arguments: {e}"), None))?;
        if let Some(state) = request.request_state.clone() {
            return self.resume_call(request, &state, context, asker).await;
        }
        if request.name == SEARCH_TOOL || request.name == INVOKE_TOOL {
            self.wait_started().await;
            let view = self.inner.scope.view();
            let all = self.inner.listed(&view);
            if self.inner.tool_search.active(&view, &all) {
                let name = request.name.to_string();
                return self
                    .search_tool_call(&name, &view, &all, request, context, asker)
                    .await;
            }
        }
        self.call_named(
            request.name.into_owned(),
            Arguments::Object(request.arguments),
            context,
            asker,
        )
        .await
    }

    /// A list of the servers' resources, templates or prompts (`method`), with their caching
    /// hints for a 2026-07-28 client (see `hints`).
    fn hinted<T: super::hints::Cacheable>(
        &self,
        result: T,
        method: &str,
        context: &RequestContext<RoleServer>,
    ) -> T {
        // Caching hints are a 2026-07-28 matter.
        if context
            .protocol_version()
            .is_none_or(|v| v.has_initialize())
        {
            return result;
        }
        super::hints::on_list(result, super::hints::listing(&self.inner.scope, method))
    }

    /// The server that offers `uri`, and the URI that server knows it by.
    async fn owner(&self, uri: &str) -> Result<(String, String), McpError> {
        self.wait_started().await;
        self.inner
            .catalog
            .owner(&self.inner.scope, uri)
            .await
            .map_err(|e| match e {
                CatalogError::Unknown(message) => McpError::resource_not_found(message, None),
                other => McpError::internal_error(other.to_string(), None),
            })
    }

    /// Subscribe `target` to `uri` on the server that offers it.
    async fn subscribe_to(
        &self,
        uri: &str,
        subscriber: u64,
        target: Target,
    ) -> Result<(), McpError> {
        let (server, uri) = self.owner(uri).await?;
        self.inner
            .relay
            .subscribe(&server, &uri, subscriber, target)
            .await
            .map_err(|message| McpError::invalid_params(message, None))
    }

    /// The search or the invoke tool of discovery mode.
    async fn search_tool_call(
        &self,
        name: &str,
        view: &Arc<View>,
        all: &[Tool],
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        asker: Asker,
    ) -> Result<Answered, McpError> {
        let arguments = request.arguments.as_ref();
        if name == SEARCH_TOOL {
            let filter = &self.inner.scope.filter;
            let (result, found) = self.inner.tool_search.search(view, all, filter, arguments);
            if self.activated.activate(found.iter().map(String::as_str)) {
                self.listing.told();
                // Only this client's list changed. Sent from a task of its own so the answer
                // is not held up by a slow client; the send itself is bounded.
                let peer = context.peer.clone();
                tokio::spawn(async move {
                    let sent = tokio::time::timeout(
                        std::time::Duration::from_secs(2),
                        peer.notify_tool_list_changed(),
                    );
                    if !matches!(sent.await, Ok(Ok(()))) {
                        tracing::debug!("gateway: list_changed not delivered after a search");
                    }
                });
            }
            return Ok(Answered::Response(wire_result(result).into()));
        }
        let (target, arguments) = match invoke_arguments(arguments) {
            Ok(parsed) => parsed,
            Err(result) => return Ok(Answered::Response(wire_result(result).into())),
        };
        if self.inner.scope.route(&target).is_none() {
            return Ok(Answered::Response(
                wire_result(unknown_tool(&target)).into(),
            ));
        }
        self.call_named(target, Arguments::Object(arguments), context, asker)
            .await
    }

    /// Call the tool exposed as `name` on its server.
    async fn call_named(
        &self,
        name: String,
        arguments: Arguments,
        context: &RequestContext<RoleServer>,
        asker: Asker,
    ) -> Result<Answered, McpError> {
        let scope = &self.inner.scope;
        let tool = match scope.route(&name) {
            Some(tool) => tool,
            None => {
                // A client that connected during start-up may already know the name.
                self.wait_started().await;
                scope.route(&name).ok_or_else(|| {
                    McpError::invalid_params(format!("unknown tool: {name}"), None)
                })?
            }
        };
        self.call_tool(tool, arguments, context, asker, None).await
    }

    /// Call `tool` on its server (`resumed`: its first request's answers, see `resume`).
    pub(super) async fn call_tool(
        &self,
        tool: Arc<McpTool>,
        arguments: Arguments,
        context: &RequestContext<RoleServer>,
        asker: Asker,
        resumed: Option<Retry>,
    ) -> Result<Answered, McpError> {
        // Cancelled by rmcp on the client's `notifications/cancelled`, and when the client
        // disconnects: either way the backend is told to stop (see `input`).
        // Whether the client takes a backend's task, and what the backend is told (see `tasks`).
        let (pass_tasks, declared) = super::tasks::for_call(&asker);
        let settings = CallOptions {
            timeout: self.inner.options.call_timeout,
            output_cap: self.inner.options.output_cap.clone(),
            resumed: resumed.map(Arc::new),
            trace: asker.trace.clone(),
            pass_tasks,
            ..CallOptions::default()
        };
        // Before the call starts: the backend must have the level when it runs.
        let logs = self.watch_logs(context, &asker, &tool.server).await;
        let manager = self.inner.scope.manager.clone();
        let server = tool.server.clone();
        let flight = self.inner.inputs.start(
            tool.clone(),
            declared,
            asker.progress.is_some(),
            settings,
            move |settings| super::input::call_backend(manager, tool, arguments, settings),
        );
        let answered = self.drive(flight, context, asker, logs).await?;
        self.hand_over_task(answered, pass_tasks, &server, context)
    }

    /// A 2026-07-28 request that names a log level gets `server`'s lines meanwhile.
    pub(super) async fn watch_logs(
        &self,
        context: &RequestContext<RoleServer>,
        asker: &Asker,
        server: &str,
    ) -> Option<subscriptions::RequestLogs> {
        let level = asker.log_level.and_then(subscriptions::wire_rank)?;
        Some(
            self.inner
                .relay
                .watch_request(context.peer.clone(), level, server)
                .await,
        )
    }

    /// Run a call until its backend answers, or its client must first (see `input`).
    pub(super) async fn drive(
        &self,
        flight: super::input::Flight,
        context: &RequestContext<RoleServer>,
        asker: Asker,
        logs: Option<subscriptions::RequestLogs>,
    ) -> Result<Answered, McpError> {
        let mut forwarder = asker.progress.map(|token| Forwarder::new(token, context));
        // 2026-07-28 results say what they are (the server's own does not survive the relay).
        let modern = asker.stateless;
        let result = match self
            .inner
            .inputs
            .drive(flight, context, modern, forwarder.as_mut())
            .await?
        {
            Outcome::Done(result) => result,
            Outcome::Asked(asked) => return Ok(Answered::Response(asked.into())),
        };
        // Log lines the server sent before its answer belong before it: the stream ends with
        // the answer.
        if let Some(logs) = &logs {
            logs.settle().await;
        }
        match result {
            Ok(output) => Ok(Answered::Output(output, modern)),
            Err(Stopped::Refused(error)) => Err(error),
            // The client cancelled (or left): rmcp drops the answer; say so anyway.
            Err(Stopped::Aborted) => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                "request cancelled",
                None,
            )),
        }
    }

    /// A tool's output as rmcp's response: for a client the gateway serves itself, a
    /// placeholder its transport turns back into the output as sent (see `relay`).
    fn output_response(&self, output: ToolOutput, modern: bool) -> CallToolResponse {
        let placeholder = self
            .relaying
            .then(|| super::answer::relayed(&output, modern));
        match placeholder.flatten() {
            Some(placeholder) => placeholder,
            None => {
                let mut result = call_result(output);
                if modern {
                    result.result_type.get_or_insert(ResultType::COMPLETE);
                }
                result
            }
        }
        .into()
    }
}

/// Entries in the wire format as rmcp values; an entry rmcp rejects is left out with a warning.
fn from_wire_list<T: serde::de::DeserializeOwned>(entries: Vec<Value>) -> Vec<T> {
    entries
        .into_iter()
        .filter_map(|entry| match serde_json::from_value(entry) {
            Ok(item) => Some(item),
            Err(e) => {
                tracing::warn!("gateway: an entry was left out: {e}");
                None
            }
        })
        .collect()
}

impl super::Inner {
    /// The view's tools as the client sees them. Discovery mode consults them on every search
    /// and list, so they are kept with the view; otherwise they are built for each
    /// `tools/list`, and the gateway holds no third copy of every definition (the manager's
    /// list and the view's tools are the other two).
    fn listed(&self, view: &View) -> Arc<[Tool]> {
        if self.options.tool_search == super::ToolSearchMode::Off {
            return listed_tools(view);
        }
        view.listed.get_or_init(|| listed_tools(view)).clone()
    }

    /// The digest of what `tools/list` shows the client of `session` now, to tell it of a
    /// change only when its own list changed (see `notify`).
    pub(super) fn list_digest(&self, activated: &ActivatedTools) -> u64 {
        let view = self.scope.view();
        let all = self.listed(&view);
        if self.tool_search.active(&view, &all) {
            return digest(&self.tool_search.listed(&view, &all, activated));
        }
        *view.digest.get_or_init(|| digest(&all))
    }
}

/// A digest of a tool list as a client receives it (within this process only).
fn digest(tools: &[Tool]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    // A tool that cannot be written as JSON is not listed either.
    serde_json::to_vec(tools)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// The view's tools in the protocol's shape; a tool rmcp cannot represent is left out.
fn listed_tools(view: &View) -> Arc<[Tool]> {
    view.tools
        .iter()
        .filter_map(|tool| match listed_tool(tool) {
            Ok(listed) => Some(listed),
            Err(e) => {
                tracing::warn!(
                    "gateway: tool `{}` of server `{}` left out: invalid definition: {e}",
                    tool.tool,
                    tool.server
                );
                None
            }
        })
        .collect()
}

/// One tool as the client sees it: the exposed name, and a description that says where it
/// comes from.
pub(super) fn listed_tool(tool: &McpTool) -> Result<Tool, String> {
    let definition = &tool.definition;
    let origin = format!("[{}]", tool.label);
    let description = match definition.description.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => format!("{origin} {text}"),
        _ => origin,
    };
    let object = |schema: &crate::json::JsonText, field: &str| match schema
        .parse::<serde_json::Map<String, Value>>()
    {
        Ok(fields) => Ok(Arc::new(fields)),
        Err(_) => Err(format!("{field} is not an object")),
    };
    let mut listed = Tool::new(
        tool.name.clone(),
        description,
        object(&definition.input_schema, "inputSchema")?,
    );
    listed.title = definition.title.clone();
    if let Some(schema) = &definition.output_schema {
        listed.output_schema = Some(object(schema, "outputSchema")?);
    }
    if let Some(annotations) = &definition.annotations {
        listed.annotations = Some(
            serde_json::from_value(annotations.clone()).map_err(|e| format!("annotations: {e}"))?,
        );
    }
    if let Some(icons) = definition.extra.get("icons") {
        listed.icons =
            Some(serde_json::from_value(icons.clone()).map_err(|e| format!("icons: {e}"))?);
    }
    if let Some(Value::Object(meta)) = definition.meta() {
        // Kept whole, but an MCP App's `ui://` URI names this server's own resource.
        let mut meta = meta.clone();
        super::apps::rewrite_tool_meta(&tool.server, &mut meta);
        listed.meta = Some(rmcp::model::MetaObject(meta));
    }
    Ok(listed)
}

/// A result written in the wire format as an rmcp result.
fn wire_result(result: Value) -> CallToolResult {
    serde_json::from_value(result).unwrap_or_else(|e| {
        tracing::warn!("gateway: a discovery result could not be built: {e}");
        CallToolResult::error(Vec::new())
    })
}

/// Our tool output as an rmcp result, through the wire format both follow.
fn call_result(output: ToolOutput) -> CallToolResult {
    let converted = serde_json::to_value(&output).and_then(serde_json::from_value);
    match converted {
        Ok(result) => result,
        Err(e) => {
            let fallback = error_output(format!(
                "MCP error: the server's result cannot be relayed: {e}"
            ));
            match serde_json::to_value(&fallback).and_then(serde_json::from_value) {
                Ok(result) => result,
                Err(_) => CallToolResult::error(Vec::new()),
            }
        }
    }
}
