//! A tool that runs as a task behind `mcpr serve`: the gateway follows the backend's task
//! (the conformance mock, stdio) to its result, so a client of either era gets the tool's
//! result as from any other tool. The gateway does not advertise tasks itself.

mod support;

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{CallOptions, ConnectOptions, Era, McpClient};
use mcp_runtime::config::{ServerConfig, server_from_json};
use serde_json::json;
use support::{MCPR, temp_dir};

/// `mcpr serve --raw-names` over stdio in front of the conformance mock, in a home of its own.
fn gateway(dir: &std::path::Path) -> ServerConfig {
    let config = dir.join("mcp.json");
    let servers =
        json!({"mcpServers": {"jobs": {"command": MCPR, "args": ["mock", "--conformance"]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let entry = json!({
        "command": MCPR,
        "args": ["--strict-config", "--config", config, "serve", "--raw-names"],
        "env": {
            "HOME": home,
            "XDG_CONFIG_HOME": home.join(".config"),
            "XDG_CACHE_HOME": home.join(".cache"),
            "XDG_DATA_HOME": home.join(".local/share"),
            "XDG_STATE_HOME": home.join(".local/state"),
        },
    });
    server_from_json("gateway", &entry).expect("a valid entry")
}

#[tokio::test]
async fn a_backends_task_is_followed_to_its_result_for_clients_of_both_eras() {
    for era in [Era::Modern, Era::Legacy] {
        let dir = temp_dir();
        let config = gateway(dir.path());
        let cache = ToolCache::in_dir(dir.path());
        cache.put_era("gateway", &config, era);
        let options = ConnectOptions::default().with_cache(Some(std::sync::Arc::new(cache)));
        let client = McpClient::connect("gateway", &config, &options)
            .await
            .unwrap();
        if era == Era::Modern {
            assert_eq!(
                client.task_protocol(),
                None,
                "the gateway advertises no tasks"
            );
        }
        let arguments = json!({"seconds": 0.3, "label": "through"});
        let call = client.call_tool(
            "slow_compute",
            arguments.as_object().cloned(),
            CallOptions::default(),
        );
        let output = tokio::time::timeout(std::time::Duration::from_secs(60), call)
            .await
            .expect("bounded")
            .unwrap();
        assert_eq!(output.text(), "Computed through in 0.3s", "{era:?}");
        let call = client.call_tool("failing_job", None, CallOptions::default());
        let output = tokio::time::timeout(std::time::Duration::from_secs(60), call)
            .await
            .expect("bounded")
            .unwrap();
        assert!(output.is_error, "{era:?}: {output:?}");
        client.close().await;
    }
}
