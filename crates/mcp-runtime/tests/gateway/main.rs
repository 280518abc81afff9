//! The gateway as a host embeds it: the library's `Gateway` in this test process, served over
//! a real loopback socket in front of real `mcp-mock` processes, and reached by real clients
//! (mcp-runtime's own, an SDK's). What needs the `mcpr` binary (its flags, exit codes,
//! signals, its own stdio) is tested in `crates/mcpr/tests`.

mod caching;
#[path = "../support/mod.rs"]
mod support;

use std::net::SocketAddr;

use indexmap::IndexMap;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::gateway::http::{self, HttpOptions};
use mcp_runtime::gateway::{Gateway, GatewayOptions};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A gateway serving streamable HTTP on a loopback port, its servers connecting in the
/// background as `mcpr serve` connects them: `initialize` is answered at once, `tools/list`
/// waits for the start-up gate.
#[derive(Debug)]
pub struct HttpGateway {
    /// The endpoint, e.g. `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    manager: McpManager,
    stop: CancellationToken,
    served: JoinHandle<()>,
}

impl HttpGateway {
    /// Serve `servers` with `options` on `127.0.0.1`, port chosen by the system.
    pub async fn start(servers: IndexMap<String, ServerConfig>, options: GatewayOptions) -> Self {
        let manager = McpManager::new(ManagerOptions::default());
        let gateway = Gateway::new(manager.clone(), options);
        let starting = gateway.starting();
        let connecting = manager.clone();
        tokio::spawn(async move {
            connecting.connect_servers(servers, IndexMap::new()).await;
            drop(starting);
        });
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let server = http::bind(gateway, HttpOptions::new(loopback))
            .await
            .expect("bind the gateway to a loopback port");
        let url = server.url();
        let stop = CancellationToken::new();
        let serving = stop.clone();
        let served = tokio::spawn(async move {
            server.serve(serving).await.expect("serve the gateway");
        });
        HttpGateway {
            url,
            manager,
            stop,
            served,
        }
    }

    /// Stop serving, then disconnect every server (their processes end with it).
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.served.await;
        self.manager.disconnect_all().await;
    }
}
