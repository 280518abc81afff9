//! A tool that runs as a task behind `mcpr serve` (the conformance mock, stdio, twice): a
//! 2026-07-28 client that declares the tasks extension gets the backend's task passed
//! through under an id of the gateway's own, and follows it with `tasks/get`, `tasks/update`
//! and `tasks/cancel` routed to the right backend; ids of the backends' own are unknown to
//! the gateway's clients. A client of the `initialize` era gets the result, the gateway
//! following the task for it.

mod support;

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{
    CallOptions, ClientError, ConnectOptions, Era, McpClient, TaskProtocol, TaskStart, TaskStatus,
};
use mcp_runtime::config::{ServerConfig, server_from_json};
use serde_json::json;
use support::{MCPR, temp_dir};

/// `mcpr serve` over stdio in front of two conformance mocks (`jobs`, `more`), in a home of
/// its own.
fn gateway(dir: &std::path::Path) -> ServerConfig {
    let config = dir.join("mcp.json");
    let backend = |name: &str| {
        // Different names: two servers, not one configured twice. Their tools share names,
        // which pinning would hold as shadowing: off for this test.
        json!({"command": MCPR, "args": ["mock", "--conformance", "--name", name], "pinTools": false})
    };
    let servers = json!({"mcpServers": {"jobs": backend("jobs"), "more": backend("more")}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let entry = json!({
        "command": MCPR,
        "args": ["--strict-config", "--config", config, "serve"],
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
async fn a_task_tool_called_as_usual_gives_its_result_to_clients_of_both_eras() {
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
            assert_eq!(client.task_protocol(), Some(TaskProtocol::Extension));
        }
        let arguments = json!({"seconds": 0.3, "label": "through"});
        let call = client.call_tool(
            "mcp_jobs_slow_compute",
            arguments.as_object().cloned(),
            CallOptions::default(),
        );
        let output = tokio::time::timeout(std::time::Duration::from_secs(60), call)
            .await
            .expect("bounded")
            .unwrap();
        assert_eq!(output.text(), "Computed through in 0.3s", "{era:?}");
        let call = client.call_tool("mcp_jobs_failing_job", None, CallOptions::default());
        let output = tokio::time::timeout(std::time::Duration::from_secs(60), call)
            .await
            .expect("bounded")
            .unwrap();
        assert!(output.is_error, "{era:?}: {output:?}");
        client.close().await;
    }
}

/// `work`, which must not hang.
async fn within<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(60), work)
        .await
        .expect("bounded")
}

async fn modern_client(dir: &std::path::Path) -> McpClient {
    let config = gateway(dir);
    let cache = ToolCache::in_dir(dir);
    cache.put_era("gateway", &config, Era::Modern);
    let answers: mcp_runtime::client::ElicitationHandler = std::sync::Arc::new(|_request| {
        Box::pin(async move {
            let yes = json!({"confirm": true});
            mcp_runtime::client::ElicitationResponse::accept(yes.as_object().cloned().unwrap())
        })
    });
    let options = ConnectOptions::default()
        .with_cache(Some(std::sync::Arc::new(cache)))
        .with_elicitation(Some(answers));
    McpClient::connect("gateway", &config, &options)
        .await
        .unwrap()
}

async fn start(client: &McpClient, tool: &str, arguments: serde_json::Value) -> String {
    let started = client
        .start_tool_task(
            tool,
            arguments.as_object().cloned(),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    match started {
        TaskStart::Started(state) => state.id,
        other => panic!("no task: {other:?}"),
    }
}

#[tokio::test]
async fn a_backends_task_is_passed_through_under_the_gateways_id_and_routed_back() {
    let dir = temp_dir();
    let client = modern_client(dir.path()).await;
    // Both backends up (the gateway answers before the slower one has connected).
    within(async {
        loop {
            let tools = client.list_tools().await.unwrap();
            if tools.iter().any(|t| t.name == "mcp_more_slow_compute") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    // One task on each backend: ids of the gateway's own, 128 bits, never the same.
    let first = start(
        &client,
        "mcp_jobs_slow_compute",
        json!({"seconds": 0.3, "label": "a"}),
    )
    .await;
    let second = start(
        &client,
        "mcp_more_slow_compute",
        json!({"seconds": 0.3, "label": "b"}),
    )
    .await;
    for id in [&first, &second] {
        assert_eq!(id.len(), 32, "{id}");
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    }
    assert_ne!(first, second);
    let output = within(client.wait_task(&first, CallOptions::default()))
        .await
        .unwrap();
    assert_eq!(output.text(), "Computed a in 0.3s");
    let output = within(client.wait_task(&second, CallOptions::default()))
        .await
        .unwrap();
    assert_eq!(output.text(), "Computed b in 0.3s");
    // A task's question reaches the client in `tasks/get`; its answer goes back with
    // `tasks/update`, to the backend that asked.
    let asking = start(
        &client,
        "mcp_jobs_confirm_delete",
        json!({"filename": "x.txt"}),
    )
    .await;
    let output = within(client.wait_task(&asking, CallOptions::default()))
        .await
        .unwrap();
    assert_eq!(output.text(), "Deleted x.txt");
    // Cancelled through the gateway, at the backend.
    let long = start(
        &client,
        "mcp_more_slow_compute",
        json!({"seconds": 300, "label": "c"}),
    )
    .await;
    client.cancel_task(&long).await.unwrap();
    let state = within(async {
        loop {
            let state = client.get_task(&long).await.unwrap();
            if state.status.is_terminal() {
                return state;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(state.status, TaskStatus::Cancelled);
    client.close().await;
}

#[tokio::test]
async fn a_task_id_the_gateway_did_not_hand_out_reaches_no_backend() {
    let dir = temp_dir();
    let client = modern_client(dir.path()).await;
    let id = start(
        &client,
        "mcp_jobs_slow_compute",
        json!({"seconds": 300, "label": "mine"}),
    )
    .await;
    // Guessed ids (a neighbour of a real one, a backend-style id) and a tampered one are
    // all unknown: nothing reaches a backend.
    let mut tampered = id.clone();
    tampered.replace_range(0..1, if id.starts_with('0') { "1" } else { "0" });
    for guess in [
        tampered.as_str(),
        "task-1",
        "1",
        "00000000000000000000000000000000",
    ] {
        for error in [
            client.get_task(guess).await.unwrap_err(),
            client.cancel_task(guess).await.unwrap_err(),
        ] {
            assert!(
                matches!(&error, ClientError::Rpc { message, .. } if message.contains("unknown task")),
                "{guess}: {error}"
            );
        }
    }
    assert_eq!(
        client.get_task(&id).await.unwrap().status,
        TaskStatus::Working
    );
    client.cancel_task(&id).await.unwrap();
    client.close().await;
}
