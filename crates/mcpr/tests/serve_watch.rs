//! `mcpr serve --watch` as a client sees it, over real pipes to real processes: a server added
//! to the config file is started and the client is sent `notifications/tools/list_changed`,
//! a call in flight on a server that did not change completes, a file saved half-written
//! stops nothing, a removed server's process is gone, and a gateway started before any config
//! exists waits for one. The client is mcp-runtime's own `McpClient`. Every wait is bounded.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::client::{
    CallOptions, ClientEvent, ConnectOptions, EVENT_BUFFER, McpClient, ToolDefinition,
};
use mcp_runtime::config::{ServerConfig, Transport};
use serde_json::json;
use support::{MCPR, alive, args, read_pid, temp_dir, wait_dead};
use tokio::sync::mpsc;

/// Bound on every wait.
const WAIT: Duration = Duration::from_secs(30);

/// Write `{"mcpServers": ...}`: each server runs `mcpr mock` writing its pid to
/// `dir/<name>.pid`.
fn write_config(dir: &Path, names: &[&str]) {
    let mut servers = serde_json::Map::new();
    for name in names {
        let pid_file = dir.join(format!("{name}.pid"));
        servers.insert(
            name.to_string(),
            json!({"command": MCPR, "args": ["mock", "--pid-file", pid_file]}),
        );
    }
    let text = serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap();
    // Written whole, then renamed: the watcher never sees half a file.
    let partial = dir.join("mcp.json.partial");
    std::fs::write(&partial, text).unwrap();
    std::fs::rename(&partial, dir.join("mcp.json")).unwrap();
}

/// `mcpr serve --watch` over exactly `dir/mcp.json`, in a home of its own under `dir`.
fn gateway(dir: &Path) -> ServerConfig {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let config = dir.join("mcp.json");
    let mut server = ServerConfig::stdio(
        MCPR,
        [
            "--strict-config".to_owned(),
            "--config".to_owned(),
            config.display().to_string(),
            "serve".to_owned(),
            "--watch".to_owned(),
        ],
    );
    if let Transport::Stdio(stdio) = &mut server.transport {
        for (name, value) in [
            ("HOME", home.clone()),
            ("XDG_CONFIG_HOME", home.join(".config")),
            ("XDG_CACHE_HOME", home.join(".cache")),
            ("XDG_DATA_HOME", home.join(".local/share")),
        ] {
            stdio.env.insert(name.into(), value.display().to_string());
        }
        stdio.cwd = Some(home.join("project"));
    }
    server
}

fn names(tools: &[ToolDefinition]) -> Vec<String> {
    tools.iter().map(|tool| tool.name.clone()).collect()
}

/// Wait for `notifications/tools/list_changed` until the tool list satisfies `done`.
async fn wait_for_tools(
    client: &McpClient,
    events: &mut mpsc::Receiver<ClientEvent>,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let listed = names(&client.list_tools().await.expect("tools/list"));
        if done(&listed) {
            return listed;
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        loop {
            match tokio::time::timeout(remaining, events.recv()).await {
                Ok(Some(ClientEvent::ToolsChanged)) => break,
                Ok(Some(_)) => {}
                Ok(None) => panic!("the gateway went away while waiting for {what}"),
                Err(_) => panic!("no list_changed bringing {what}; tools: {listed:?}"),
            }
        }
    }
}

#[tokio::test]
async fn serve_watch_starts_an_added_server_and_tells_the_client() {
    let dir = temp_dir();
    write_config(dir.path(), &["keep"]);
    let (sender, mut events) = mpsc::channel(EVENT_BUFFER);
    let options = ConnectOptions::default().with_events(Some(sender));
    let client = McpClient::connect("gateway", &gateway(dir.path()), &options)
        .await
        .expect("connect to mcpr serve --watch");
    let client = Arc::new(client);
    let tools = names(&client.list_tools().await.expect("tools/list"));
    assert!(tools.contains(&"mcp_keep_echo".to_owned()), "{tools:?}");
    let keep = read_pid(&dir.path().join("keep.pid"));

    // A call in flight on the server that stays.
    let slow = {
        let client = client.clone();
        tokio::spawn(async move {
            let arguments = args(json!({"ms": 4000}));
            client
                .call_tool("mcp_keep_sleep", arguments, CallOptions::default())
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;

    write_config(dir.path(), &["keep", "fresh"]);
    let tools = wait_for_tools(&client, &mut events, "mcp_fresh_echo", |tools| {
        tools.contains(&"mcp_fresh_echo".to_owned())
    })
    .await;
    assert!(tools.contains(&"mcp_keep_echo".to_owned()), "{tools:?}");
    let fresh = read_pid(&dir.path().join("fresh.pid"));
    let output = slow
        .await
        .expect("call task")
        .expect("the call in flight survives the reload");
    assert_eq!(output.text(), "slept 4000 ms");
    assert_eq!(read_pid(&dir.path().join("keep.pid")), keep);
    assert!(alive(keep), "the unchanged server was stopped");
    let said = client.stderr_tail(50).join("\n");
    assert!(said.contains("reloaded: +fresh, 1 unchanged"), "{said}");
    let text = client
        .call_tool(
            "mcp_fresh_echo",
            args(json!({"text": "added"})),
            CallOptions::default(),
        )
        .await
        .expect("call the added server");
    assert_eq!(text.text(), "added");

    // A save that breaks the file stops nothing: the servers stay until it parses again.
    std::fs::write(dir.path().join("mcp.json"), "{\"mcpServers\": {").unwrap();
    let deadline = Instant::now() + WAIT;
    while !client.stderr_tail(50).join("\n").contains("cannot be read") {
        assert!(Instant::now() < deadline, "the broken file went unnoticed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tools = names(&client.list_tools().await.expect("tools/list"));
    assert!(tools.contains(&"mcp_fresh_echo".to_owned()), "{tools:?}");
    assert!(alive(keep) && alive(fresh), "a broken file stopped servers");

    write_config(dir.path(), &["keep"]);
    wait_for_tools(&client, &mut events, "the removal of fresh", |tools| {
        !tools.iter().any(|t| t.starts_with("mcp_fresh_"))
    })
    .await;
    assert!(wait_dead(fresh, WAIT), "removed server still running");
    assert!(alive(keep), "the unchanged server was stopped");
    // A tool listed before its server left is still routed: the client hears why it cannot
    // be called, not that no such tool exists.
    let gone = client
        .call_tool(
            "mcp_fresh_echo",
            args(json!({"text": "late"})),
            CallOptions::default(),
        )
        .await
        .expect("a call to a tool whose server left is answered with a tool error");
    assert!(gone.is_error, "{}", gone.text());
    assert!(gone.text().contains("`fresh`"), "{}", gone.text());

    client.close().await;
    assert!(wait_dead(keep, WAIT), "a backend outlived the gateway");
}

#[tokio::test]
async fn serve_watch_without_servers_waits_for_a_config_and_then_serves_it() {
    let dir = temp_dir();
    let (sender, mut events) = mpsc::channel(EVENT_BUFFER);
    let options = ConnectOptions::default().with_events(Some(sender));
    // No config file at all yet: the gateway starts anyway, says so once, and serves nothing.
    let client = McpClient::connect("gateway", &gateway(dir.path()), &options)
        .await
        .expect("mcpr serve --watch without servers stays up");
    let tools = names(&client.list_tools().await.expect("tools/list"));
    assert!(
        tools.iter().all(|t| !t.starts_with("mcp_late_")),
        "{tools:?}"
    );
    let said = client.stderr_tail(50).join("\n");
    assert_eq!(said.matches("waiting for a config").count(), 1, "{said}");

    write_config(dir.path(), &["late"]);
    wait_for_tools(&client, &mut events, "mcp_late_echo", |tools| {
        tools.contains(&"mcp_late_echo".to_owned())
    })
    .await;
    let output = client
        .call_tool(
            "mcp_late_echo",
            args(json!({"text": "arrived"})),
            CallOptions::default(),
        )
        .await
        .expect("call the server of the config that appeared");
    assert_eq!(output.text(), "arrived");
    let late = read_pid(&dir.path().join("late.pid"));
    client.close().await;
    assert!(wait_dead(late, WAIT), "a backend outlived the gateway");
}
