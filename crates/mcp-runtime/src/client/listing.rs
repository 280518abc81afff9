//! Listing a server's tools, resources, resource templates and prompts: paging through
//! `nextCursor` with bounds on pages, entries and bytes, so a broken or hostile server gets an
//! error instead of an endless loop or unbounded memory.

use std::collections::HashSet;
use std::sync::Mutex;

use rmcp::model::{
    CacheScope, ClientRequest, ErrorCode, ListPromptsRequest, ListResourcesRequest,
    ListToolsRequest, PaginatedRequestParams, ServerCapabilities, ServerResult,
};
use serde_json::Value;

use crate::cache::CacheHints;

use super::{
    ClientError, McpClient, PromptDefinition, ResourceDefinition, ResourceTemplateDefinition,
    ToolDefinition,
};

/// A list (`tools/list`, ...) that pages more than this many times is treated as broken.
const MAX_LIST_PAGES: usize = 10_000;

/// Most entries accepted in one list of one server (tools, resources or prompts, across all
/// pages). A server listing more is refused with an error rather than truncated: a partial list
/// would silently hide tools, and no model can choose among this many anyway.
pub const MAX_LISTED_ITEMS: usize = 10_000;

/// Most bytes (as JSON) accepted in one list of one server, across all pages: each page is
/// bounded by the transport, but thousands of pages are not.
pub const MAX_LISTED_BYTES: usize = 64 * 1024 * 1024;

impl McpClient {
    /// List every tool, following `nextCursor` until the last page. A server that repeats a
    /// cursor, or whose list grows past [`MAX_LISTED_ITEMS`] entries or [`MAX_LISTED_BYTES`],
    /// gets a protocol error rather than an endless loop or unbounded memory. A name listed
    /// twice is offered once (the first definition wins, with a warning): model APIs reject a
    /// tool list with duplicate names as a whole.
    ///
    /// The caching hints of the list (2026-07-28: `ttlMs`, `cacheScope`, over all pages) are
    /// kept for [`tools_cache_hints`](Self::tools_cache_hints).
    pub async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ClientError> {
        let hints = PageHints::default();
        let tools: Vec<ToolDefinition> = self
            .list_all(
                "tools/list",
                |params| ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params)),
                |result| match result {
                    ServerResult::ListToolsResult(page) => {
                        hints.add(page.ttl_ms, page.cache_scope);
                        Some((page.tools, page.next_cursor))
                    }
                    _ => None,
                },
            )
            .await?;
        *self.tools_hints.lock().unwrap_or_else(|e| e.into_inner()) = hints.total();
        if let Some(listener) = &self.listening.lock().await.listener {
            listener.tools_listed();
        }
        let tools = first_of_each_name(&self.server, tools);
        self.adopt_cached_tools(&tools);
        Ok(tools)
    }

    /// Take `tools` (a list the server gave earlier, still fresh in the cache) as this
    /// connection's tool list where it matters without asking again: which tools may be
    /// called a second time when an answer is lost, and which need rmcp's road for their
    /// `Mcp-Param-*` headers.
    pub fn adopt_cached_tools(&self, tools: &[ToolDefinition]) {
        *self
            .repeatable_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = super::http::lost::repeatable_tools(tools);
        if let Some(direct) = &self.http_direct {
            direct.listed(tools);
        }
    }

    /// The caching hints of the last complete [`list_tools`](Self::list_tools): how long the
    /// list may be taken as fresh, and whether it is private to this authorization context.
    /// Servers before 2026-07-28 send none (never fresh, shareable).
    pub fn tools_cache_hints(&self) -> CacheHints {
        *self.tools_hints.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The caching hints of the `server/discover` result this connection opened with (as the
    /// server sent it, or replayed from the cache); `None` for a connection opened with
    /// `initialize`.
    pub fn discovery_cache_hints(&self) -> Option<CacheHints> {
        self.discovery_hints
    }

    /// List every resource (`resources/list`, following `nextCursor`). A server that does not
    /// offer resources has none: it is not asked, and "method not found" is an empty list.
    pub async fn list_resources(&self) -> Result<Vec<ResourceDefinition>, ClientError> {
        if !self.offers(|c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        let hints = PageHints::default();
        let listing = self
            .list_all(
                "resources/list",
                |params| {
                    ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params))
                },
                |result| match result {
                    ServerResult::ListResourcesResult(page) => {
                        hints.add(page.ttl_ms, page.cache_scope);
                        Some((page.resources, page.next_cursor))
                    }
                    _ => None,
                },
            )
            .await;
        self.keep_list_hints("resources/list", &listing, hints);
        empty_if_method_not_found(listing)
    }

    /// List every resource template (`resources/templates/list`, following `nextCursor`). A
    /// server that does not offer resources has none: it is not asked, and "method not found"
    /// is an empty list.
    pub async fn list_resource_templates(
        &self,
    ) -> Result<Vec<ResourceTemplateDefinition>, ClientError> {
        if !self.offers(|c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        let hints = PageHints::default();
        let listing = self
            .list_all(
                "resources/templates/list",
                |params| {
                    ClientRequest::ListResourceTemplatesRequest(
                        rmcp::model::ListResourceTemplatesRequest::with_param(params),
                    )
                },
                |result| match result {
                    ServerResult::ListResourceTemplatesResult(page) => {
                        hints.add(page.ttl_ms, page.cache_scope);
                        Some((page.resource_templates, page.next_cursor))
                    }
                    _ => None,
                },
            )
            .await;
        self.keep_list_hints("resources/templates/list", &listing, hints);
        empty_if_method_not_found(listing)
    }

    /// List every prompt (`prompts/list`, following `nextCursor`). A server that does not
    /// offer prompts has none: it is not asked, and "method not found" is an empty list.
    pub async fn list_prompts(&self) -> Result<Vec<PromptDefinition>, ClientError> {
        if !self.offers(|c| c.prompts.is_some()) {
            return Ok(Vec::new());
        }
        let hints = PageHints::default();
        let listing = self
            .list_all(
                "prompts/list",
                |params| ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(params)),
                |result| match result {
                    ServerResult::ListPromptsResult(page) => {
                        hints.add(page.ttl_ms, page.cache_scope);
                        Some((page.prompts, page.next_cursor))
                    }
                    _ => None,
                },
            )
            .await;
        self.keep_list_hints("prompts/list", &listing, hints);
        empty_if_method_not_found(listing)
    }

    /// The caching hints of the last listing of `method` (`resources/list`,
    /// `resources/templates/list` or `prompts/list`; see [`tools_cache_hints`] for tools):
    /// `None` when it was never asked (the server does not offer it). A listing that failed
    /// counts as never fresh.
    ///
    /// [`tools_cache_hints`]: Self::tools_cache_hints
    pub fn list_cache_hints(&self, method: &str) -> Option<CacheHints> {
        self.list_hints
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(method)
            .copied()
    }

    fn keep_list_hints<T>(
        &self,
        method: &'static str,
        listing: &Result<Vec<T>, ClientError>,
        hints: PageHints,
    ) {
        let hints = match listing {
            Ok(_) => hints.total(),
            Err(_) => CacheHints::default(),
        };
        self.list_hints
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(method, hints);
    }

    /// Whether the capabilities the server declared in `initialize` pass `test`.
    fn offers(&self, test: impl Fn(&ServerCapabilities) -> bool) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| test(&info.capabilities))
    }

    /// Page through a paginated list request: `request` builds one page's request, `page`
    /// takes the items and next cursor out of its result. Each page is bounded by the request
    /// timeout, and a repeated cursor is a protocol error rather than an endless loop.
    async fn list_all<Raw, Item>(
        &self,
        method: &str,
        request: impl Fn(PaginatedRequestParams) -> ClientRequest,
        page: impl Fn(ServerResult) -> Option<(Vec<Raw>, Option<String>)>,
    ) -> Result<Vec<Item>, ClientError>
    where
        Raw: serde::Serialize,
        Item: serde::de::DeserializeOwned,
    {
        let mut items = Vec::new();
        let mut bytes = 0usize;
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let result = self
                .request(request(params), method, self.config.request_timeout(), None)
                .await?;
            let Some((raw, next)) = page(result) else {
                return Err(self.protocol_error(method, "unexpected response type"));
            };
            if items.len().saturating_add(raw.len()) > MAX_LISTED_ITEMS {
                return Err(self.protocol_error(
                    method,
                    format!("the server listed more than {MAX_LISTED_ITEMS} entries; refused"),
                ));
            }
            for item in &raw {
                let value = serde_json::to_value(item)
                    .map_err(|e| self.protocol_error(method, format!("invalid list entry: {e}")))?;
                bytes = bytes.saturating_add(json_size(&value));
                if bytes > MAX_LISTED_BYTES {
                    return Err(self.protocol_error(
                        method,
                        format!(
                            "the server listed more than {} MiB of entries; refused",
                            MAX_LISTED_BYTES >> 20
                        ),
                    ));
                }
                items.push(serde_json::from_value(value).map_err(|e| {
                    self.protocol_error(method, format!("invalid list entry: {e}"))
                })?);
            }
            match next {
                None => return Ok(items),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(self.protocol_error(
                        method,
                        format!("server repeated the cursor `{next}`; stopping"),
                    ));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(self.protocol_error(method, format!("more than {MAX_LIST_PAGES} pages")))
    }
}

/// The caching hints of a list made of pages: fresh only as long as every page is, private
/// if any page is. Filled by the page callback of [`McpClient::list_all`].
#[derive(Default)]
struct PageHints(Mutex<Option<CacheHints>>);

impl PageHints {
    fn add(&self, ttl_ms: Option<u64>, scope: Option<CacheScope>) {
        let page = CacheHints::new(ttl_ms, scope == Some(CacheScope::Private));
        let mut hints = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *hints = Some(match *hints {
            Some(before) => before.and(page),
            None => page,
        });
    }

    /// The list's hints; none for a list without pages (which cannot happen once listed).
    fn total(self) -> CacheHints {
        self.0
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or_default()
    }
}

/// Keep the first tool of each name, warning about the others (naming server and tool).
fn first_of_each_name(server: &str, tools: Vec<ToolDefinition>) -> Vec<ToolDefinition> {
    let mut names = HashSet::new();
    tools
        .into_iter()
        .filter(|tool| {
            let first = names.insert(tool.name.clone());
            if !first {
                tracing::warn!(
                    "server `{server}` lists the tool `{}` more than once; only the first is offered",
                    tool.name
                );
            }
            first
        })
        .collect()
}

/// The length of `value` as compact JSON, without building the text.
fn json_size(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// A server that declares a capability but answers "method not found" for its list has
/// nothing to list.
fn empty_if_method_not_found<T>(
    listing: Result<Vec<T>, ClientError>,
) -> Result<Vec<T>, ClientError> {
    match listing {
        Err(ClientError::Rpc { code, .. }) if code == ErrorCode::METHOD_NOT_FOUND.0 => {
            Ok(Vec::new())
        }
        other => other,
    }
}
