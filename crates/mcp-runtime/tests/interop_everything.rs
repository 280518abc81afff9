//! Interop with the reference server `@modelcontextprotocol/server-everything` over stdio,
//! installed from npm (pinned) into `target/peers` by the test itself.

mod support;

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use serde_json::json;

#[tokio::test]
async fn server_everything_lists_calls_and_gets_its_roots_answered() {
    let entry = support::server_everything();
    let config = ServerConfig::stdio(
        "node",
        [entry.to_string_lossy().into_owned(), "stdio".into()],
    );
    let root = support::temp_dir();
    let options = ConnectOptions::default().with_roots(vec![root.path().to_owned()]);
    let client = McpClient::connect("everything", &config, &options)
        .await
        .unwrap();
    assert_eq!(client.info().protocol_version, "2025-11-25");

    let tools = client.list_tools().await.unwrap();
    assert!(
        tools.len() >= 13,
        "{} tools: {:?}",
        tools.len(),
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );

    let out = client
        .call_tool(
            "echo",
            json!({"message": "hi"}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "Echo: hi");

    // server-everything asks for our roots (roots/list) after the handshake and reports them
    // through this tool; our root must be there, so the request was answered.
    let expected = format!("file://{}", root.path().display());
    let mut seen = String::new();
    for _ in 0..50 {
        let tools = client.list_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "get-roots-list") {
            let out = client
                .call_tool("get-roots-list", None, CallOptions::default())
                .await
                .unwrap();
            seen = out.text();
            if seen.contains(&expected) {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        seen.contains(&expected),
        "roots reported by the server: {seen}"
    );

    let pid = client.pid().expect("stdio pid");
    client.close().await;
    assert!(support::wait_dead(pid, std::time::Duration::from_secs(5)));
}

#[tokio::test]
async fn server_everything_lists_its_resources_and_prompts() {
    let entry = support::server_everything();
    let config = ServerConfig::stdio(
        "node",
        [entry.to_string_lossy().into_owned(), "stdio".into()],
    );
    let client = McpClient::connect("everything", &config, &ConnectOptions::default())
        .await
        .unwrap();

    let resources = client.list_resources().await.unwrap();
    assert!(!resources.is_empty(), "no resources");
    assert!(
        resources
            .iter()
            .all(|r| !r.uri.is_empty() && !r.name.is_empty()),
        "{resources:?}"
    );

    let prompts = client.list_prompts().await.unwrap();
    let with_args = prompts
        .iter()
        .find(|p| p.name == "args-prompt")
        .unwrap_or_else(|| panic!("args-prompt missing: {prompts:?}"));
    assert!(
        with_args
            .arguments
            .iter()
            .any(|a| a.name == "city" && a.required),
        "{with_args:?}"
    );

    client.close().await;
}
