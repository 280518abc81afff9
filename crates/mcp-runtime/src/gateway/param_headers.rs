//! Custom request headers (`Mcp-Param-*`): which tools ask for them.
//!
//! A tool's input schema may mark an argument with `x-mcp-header: NAME`; a 2026-07-28 client
//! then sends the argument's value as the `Mcp-Param-NAME` header too, so that what routes
//! HTTP requests can see it without reading the body. The server must refuse a call whose
//! header is missing, malformed or differs from the body (`-32020`, HTTP 400), or a proxy
//! could be told one thing and the server another. The servers behind the gateway cannot
//! check (they get no HTTP headers from it), so the gateway checks for them: rmcp validates a
//! call's headers against the tool `ServerHandler::get_tool` returns, and the HTTP fast path
//! leaves such calls to rmcp.

use rmcp::model::Tool;

use super::Gateway;

/// The annotation that asks for a header.
const ANNOTATION: &str = "x-mcp-header";

impl Gateway {
    /// The tool exposed as `name`, as listed, if its input schema asks for custom headers;
    /// `None` for any other tool (nothing to check) or an unknown name.
    pub(crate) fn tool_with_param_headers(&self, name: &str) -> Option<Tool> {
        let tool = self.inner.scope.route(name)?;
        // Most schemas have none: a look at the text spares building the listed tool.
        if !tool.definition.input_schema.as_str().contains(ANNOTATION) {
            return None;
        }
        match super::handler::listed_tool(&tool) {
            Ok(listed) => Some(listed),
            Err(e) => {
                tracing::warn!(
                    "gateway: tool `{}` of server `{}` has an invalid definition: {e}",
                    tool.tool,
                    tool.server
                );
                None
            }
        }
    }
}
