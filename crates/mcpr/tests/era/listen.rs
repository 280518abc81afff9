//! The subscription to tool list changes (`subscriptions/listen`, 2026-07-28) is opened in the
//! background: a server that never acknowledges it costs the start-up gate and `tools/list`
//! nothing, and one that acknowledges late still delivers (the host lists once more, since a
//! list it got before the acknowledgement may have missed a change).

use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::client::{ClientEvent, EVENT_BUFFER, McpClient};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};

use super::options;
use super::support::mock;

#[tokio::test]
async fn a_server_that_never_acknowledges_the_subscription_costs_the_gate_nothing() {
    // The gate is far longer than the mock needs to start and far shorter than anything
    // waiting for an acknowledgement that never comes.
    let manager = McpManager::new(
        ManagerOptions::default()
            .with_gate(Duration::from_millis(1500))
            .with_wait_for_uncached(false),
    );
    let server = mock(&["--era", "2026-07-28", "--no-listen-ack"]);
    let configs: IndexMap<String, ServerConfig> = [("deaf".to_owned(), server)].into();
    let report = manager.connect_servers(configs, IndexMap::new()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.pending.is_empty(), "pending at the gate: {report:?}");
    let tools = manager.server_tools();
    assert!(tools[0].tools.iter().any(|t| t.name == "echo"));
    let client = manager.client("deaf").expect("connected");
    assert!(!client.listening());
    let again = client.list_tools().await.expect("tools/list");
    assert!(again.iter().any(|t| t.name == "echo"));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a_late_acknowledgement_still_delivers_and_has_the_host_list_again() {
    let (events, mut notices) = tokio::sync::mpsc::channel(EVENT_BUFFER);
    let listening = options(None).with_events(Some(events));
    let server = mock(&["--era", "2026-07-28", "--listen-ack-delay", "1500"]);
    let client = McpClient::connect("slow-ack", &server, &listening)
        .await
        .expect("connect");
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"));
    let changed = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = notices.recv().await {
            if event == ClientEvent::ToolsChanged {
                return true;
            }
        }
        false
    })
    .await
    .expect("no ToolsChanged within 30 s");
    assert!(changed);
    assert!(client.listening(), "acknowledged by now");
    client.close().await;
}
