//! `--app URI` and `--echo-meta`: an MCP App (`io.modelcontextprotocol/ui`) and a tool that
//! shows what a request's `_meta` carried, so that gateways can be tested on both.
//!
//! - `--app URI`: the tool `app`, whose `_meta` names its UI (`ui.resourceUri` = URI) beside a
//!   per-tool hint (`anthropic/alwaysLoad`) and a key of the mock's own; the resource URI is
//!   listed and read as `text/html;profile=mcp-app`, an HTML page naming the server (`--name`),
//!   so that two mocks serving the same URI are told apart by what they return. The same URI
//!   with `{?theme}` is listed as a resource template, whose `theme` completes to values
//!   naming the server (`<name>-light`, `<name>-dark`).
//! - `--echo-meta`: the tool `meta`, which returns the `_meta` of its `tools/call` (trace
//!   context, progress token, ...) as JSON text and as `structuredContent`.

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, CompleteRequestParams, CompleteResult, CompletionInfo, ReadResourceResult,
    Reference, Resource, ResourceContents, ResourceTemplate, Tool,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::tools::{Behaviour, Catalog, text_result};

/// The MIME type of an MCP App's HTML.
pub(crate) const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The name of the `--app` tool.
const APP_TOOL: &str = "app";

/// The name of the `--echo-meta` tool.
const META_TOOL: &str = "meta";

/// Add the tools of `--app` and `--echo-meta` to `catalog`.
pub(crate) fn add_tools(
    catalog: &mut Catalog,
    app: Option<&str>,
    echo_meta: bool,
) -> anyhow::Result<()> {
    if let Some(uri) = app {
        let tool = serde_json::from_value::<Tool>(json!({
            "name": APP_TOOL,
            "description": "Shows the mock's app (an MCP App); returns \"app shown\".",
            "inputSchema": {"type": "object", "properties": {}},
            "_meta": {
                "ui": {"resourceUri": uri, "visibility": ["model", "app"]},
                "anthropic/alwaysLoad": true,
                "mcpr-mock/kept": {"nested": [1, 2]}
            }
        }))?;
        catalog.add(tool, Behaviour::Server);
    }
    if echo_meta {
        let tool = serde_json::from_value::<Tool>(json!({
            "name": META_TOOL,
            "description": "Returns the _meta of this tools/call as JSON.",
            "inputSchema": {"type": "object", "properties": {}}
        }))?;
        catalog.add(tool, Behaviour::Server);
    }
    Ok(())
}

/// The result of `app` or `meta`, when `name` is one of them.
pub(crate) fn call(name: &str, context: &RequestContext<RoleServer>) -> Option<CallToolResult> {
    match name {
        APP_TOOL => Some(text_result("app shown")),
        META_TOOL => {
            let meta = serde_json::to_value(&context.meta).unwrap_or(Value::Null);
            let mut result = text_result(meta.to_string());
            result.structured_content = Some(meta);
            Some(result)
        }
        _ => None,
    }
}

/// The app's resource as listed.
pub(crate) fn resource(uri: &str, server: &str) -> Resource {
    Resource::new(uri, "app")
        .with_description(format!("the app of {server}"))
        .with_mime_type(APP_MIME_TYPE)
}

/// The app's HTML: a page naming `server`, with a character outside ASCII and a CRLF, so that
/// a test comparing bytes notices any re-encoding on the way.
pub(crate) fn html(server: &str) -> String {
    format!(
        "<!doctype html>\r\n<html><head><meta charset=\"utf-8\"><title>{server}</title></head>\
         <body><p>app of {server} — ünïcode</p></body></html>\n"
    )
}

/// The app's resource template: its URI with a `theme` query parameter.
pub(crate) fn template(uri: &str, server: &str) -> ResourceTemplate {
    ResourceTemplate::new(format!("{uri}{{?theme}}"), "app-themed")
        .with_description(format!("the app of {server} in a theme"))
        .with_mime_type(APP_MIME_TYPE)
}

/// The completion of the template's `theme`, when `request` asks for it: the themes starting
/// with what was typed, each naming `server`.
pub(crate) fn complete(
    uri: &str,
    server: &str,
    request: &CompleteRequestParams,
) -> Option<CompleteResult> {
    let Reference::Resource(reference) = &request.r#ref else {
        return None;
    };
    if reference.uri != template(uri, server).uri_template || request.argument.name != "theme" {
        return None;
    }
    let values = ["light", "dark"]
        .iter()
        .map(|theme| format!("{server}-{theme}"))
        .filter(|value| value.starts_with(&request.argument.value))
        .collect();
    CompletionInfo::with_all_values(values)
        .ok()
        .map(CompleteResult::new)
}

/// A read of the app's URI.
pub(crate) fn read(uri: &str, server: &str) -> ReadResourceResult {
    ReadResourceResult::new(vec![
        ResourceContents::text(html(server), uri).with_mime_type(APP_MIME_TYPE),
    ])
}
