//! `mcpr-bench --rmcp-proxy-target CMD ARGS...`: a stdio MCP proxy built the way Rust proxies
//! such as the rmcp-proxy crate build one: rmcp on both sides. An rmcp client is connected
//! to the server over its stdin/stdout, and an rmcp server on this process's own stdio answers
//! `initialize` with the server's tool capability and forwards `tools/list` and `tools/call`
//! to the client, returning what comes back. Section 4 puts it where `mcpr serve` sits: what
//! it adds per call is what a peer's proxy costs on this machine, beside the byte relay (the
//! floor, see `relay`) and the gateway.

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleClient, RoleServer, ServerHandler};

/// The server side: every request goes on to the server through the client's `peer`.
struct Proxy {
    peer: Peer<RoleClient>,
    info: ServerConfig,
}

/// The server's error as it sent it, anything else as an internal error.
fn upstream(error: ServiceError) -> McpError {
    match error {
        ServiceError::McpError(error) => error,
        other => McpError::internal_error(other.to_string(), None),
    }
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.peer.list_tools(request).await.map_err(upstream)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.peer
            .call_tool(request)
            .await
            .map(Into::into)
            .map_err(upstream)
    }
}

/// Connect to `program`, serve our stdio until the client goes, then close the server.
async fn proxy(program: &str, args: &[String]) -> Result<(), String> {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let (Some(server_in), Some(server_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("no pipes to the server".into());
    };
    let client = rmcp::serve_client((), (server_out, server_in))
        .await
        .map_err(|e| format!("connect to the server: {e}"))?;
    let upstream_info = client
        .peer_info()
        .ok_or("the server sent no initialize result")?;
    let mut capabilities = ServerCapabilities::default();
    capabilities.tools = upstream_info.capabilities.tools.clone();
    let info = ServerConfig::new(capabilities)
        .with_server_info(Implementation::new("rmcp-proxy", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(upstream_info.protocol_version.clone());
    let handler = Proxy {
        peer: client.peer().clone(),
        info,
    };
    // rmcp's stdio for pipes: non-blocking on the IO reactor (its plain `stdio()` hands every
    // read and write to the blocking thread pool).
    let served = match rmcp::serve_server(handler, rmcp::transport::stdio_pipes()).await {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .map_err(|e| format!("the proxy's service: {e}")),
        Err(e) => Err(format!("serve: {e}")),
    };
    // Closing the client closes the server's stdin, as a proxy's would (and a server that
    // stays is killed when `child` is dropped).
    let _ = client.cancel().await;
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    served
}

pub(crate) fn rmcp_proxy_target(args: &[String]) -> ExitCode {
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: mcpr-bench --rmcp-proxy-target CMD [ARGS...]");
        return ExitCode::from(2);
    };
    // What `#[tokio::main]` builds, as the peers' proxies run.
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("rmcp proxy: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(proxy(program, rest)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp proxy: {e}");
            ExitCode::FAILURE
        }
    }
}
