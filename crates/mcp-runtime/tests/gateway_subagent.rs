//! The in-process sub-agent handle against real servers (`mcp-mock` over real
//! pipes): the parent's live tools, scoped; calls over the parent's connections; the per-call
//! time cap and the abort both reach the server as `notifications/cancelled`; progress passes
//! through; failures are error results.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use mcp_runtime::cache::ToolCache;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::gateway::{
    CallOptions, CatalogError, SubAgentHandle, SubAgentOptions, ToolFilter,
};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use serde_json::json;
use support::{args, mock, temp_dir};
use tokio_util::sync::CancellationToken;

fn manager(dir: &Path) -> McpManager {
    McpManager::new(
        ManagerOptions::default()
            .with_cache(Some(Arc::new(ToolCache::in_dir(dir))))
            .with_project(dir.to_owned()),
    )
}

async fn connect(manager: &McpManager, servers: &[(&str, ServerConfig)]) {
    let configs: IndexMap<String, ServerConfig> = servers
        .iter()
        .map(|(n, c)| (n.to_string(), c.clone()))
        .collect();
    manager.connect_servers(configs, IndexMap::new()).await;
}

fn names(handle: &SubAgentHandle) -> Vec<String> {
    handle.tools().into_iter().map(|t| t.name).collect()
}

/// Wait (bounded) until the mock's record shows a `notifications/cancelled`.
async fn wait_cancel_recorded(record: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(record).unwrap_or_default();
        if text.contains("notifications/cancelled") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server never heard of the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn sub_agent_sees_the_parents_live_tools_scoped() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    connect(&manager, &[("a", mock(&[])), ("b", mock(&[]))]).await;
    let scoped = SubAgentHandle::new(
        manager.clone(),
        SubAgentOptions::default().with_filter(
            ToolFilter::default()
                .with_servers(["a"])
                .with_pattern("!*sleep*"),
        ),
    );
    let seen = names(&scoped);
    assert!(seen.contains(&"mcp_a_echo".to_owned()), "{seen:?}");
    assert!(!seen.iter().any(|n| n.starts_with("mcp_b_")), "{seen:?}");
    assert!(!seen.contains(&"mcp_a_sleep".to_owned()), "{seen:?}");

    // A tool outside the scope cannot be called through it.
    let outside = scoped
        .call(
            "mcp_b_echo",
            args(json!({"text": "x"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        outside.is_error && outside.text().contains("unknown tool"),
        "{outside:?}"
    );

    // Live, not a snapshot: the parent disconnecting a server takes its tools away.
    let everything = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    assert!(names(&everything).contains(&"mcp_b_echo".to_owned()));
    manager.disconnect_server("b").await;
    assert!(!names(&everything).iter().any(|n| n.starts_with("mcp_b_")));
    manager.disconnect_all().await;
}

/// A sub-agent's patterns match without regard to case: `!*delete*` hides a server's
/// `Delete_File` and `DELETE-ALL`, which cannot be called through the handle either, while
/// `read_file` can.
#[tokio::test]
async fn sub_agent_patterns_match_without_regard_to_case() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    let defined = json!([{"name": "Delete_File"}, {"name": "DELETE-ALL"}, {"name": "read_file"}]);
    std::fs::write(&tools, defined.to_string()).unwrap();
    let record = dir.path().join("a.record");
    let config = mock(&[
        "--tool-file",
        &tools.to_string_lossy(),
        "--record",
        &record.to_string_lossy(),
    ]);
    let manager = manager(dir.path());
    connect(&manager, &[("a", config)]).await;
    let scoped = SubAgentHandle::new(
        manager.clone(),
        SubAgentOptions::default().with_filter(ToolFilter::default().with_pattern("!*delete*")),
    );
    let seen = names(&scoped);
    assert!(seen.contains(&"mcp_a_read_file".to_owned()), "{seen:?}");
    assert!(
        seen.iter().all(|n| !n.to_lowercase().contains("delete")),
        "{seen:?}"
    );
    for name in ["mcp_a_Delete_File", "mcp_a_DELETE-ALL"] {
        let output = scoped
            .call(name, args(json!({})), CallOptions::default())
            .await
            .unwrap();
        assert!(output.is_error, "{name} was called: {output:?}");
    }
    let read = scoped
        .call("mcp_a_read_file", args(json!({})), CallOptions::default())
        .await
        .unwrap();
    assert!(!read.is_error, "{read:?}");
    let recorded = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(!recorded.to_lowercase().contains("\"delete"), "{recorded}");
    manager.disconnect_all().await;
}

/// `mcp-mock --resources` named `name` (URIs `mock://<name>/...`), recording into `dir`.
fn content_mock(dir: &Path, name: &str) -> ServerConfig {
    let record = dir.join(format!("{name}.record"));
    mock(&[
        "--resources",
        "--name",
        name,
        "--record",
        &record.to_string_lossy(),
    ])
}

/// The `resources/read` URIs the mock `name` received.
fn reads(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(format!("{name}.record")))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["method"] == "resources/read")
        .map(|message| message["params"]["uri"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn handle(manager: &McpManager, filter: ToolFilter) -> SubAgentHandle {
    SubAgentHandle::new(
        manager.clone(),
        SubAgentOptions::default().with_filter(filter),
    )
}

fn not_offered(result: Result<serde_json::Value, CatalogError>, what: &str) {
    match result {
        Err(CatalogError::Unknown(message)) => assert!(message.contains(what), "{message}"),
        other => panic!("{what} was served: {other:?}"),
    }
}

#[tokio::test]
async fn sub_agent_resources_and_prompts_follow_its_scope() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    connect(
        &manager,
        &[
            ("a", content_mock(dir.path(), "a")),
            ("b", content_mock(dir.path(), "b")),
        ],
    )
    .await;

    // A narrow tool view: only the prompt its patterns name, no resource at all.
    let narrow = handle(
        &manager,
        ToolFilter::default()
            .with_servers(["a"])
            .allow("a/echo")
            .allow("a/greet"),
    );
    let prompts: Vec<String> = narrow.prompts().await.into_iter().map(|p| p.name).collect();
    assert_eq!(prompts, ["mcp_a_greet"]);
    assert!(narrow.resources().await.is_empty());
    assert!(narrow.resource_templates().await.is_empty());
    for uri in ["mock://a/public", "mock://a/items/1", "mock://b/public"] {
        not_offered(narrow.read_resource(uri).await, uri);
    }
    for name in ["mcp_a_secret", "mcp_b_greet"] {
        not_offered(narrow.get_prompt(name, None).await, name);
    }
    let greet = narrow
        .get_prompt("mcp_a_greet", args(json!({"name": "agent"})))
        .await
        .unwrap();
    assert_eq!(greet["messages"][0]["content"]["text"], "Hello, agent!");

    // Resource patterns: what they name, through listings and templates.
    let docs = handle(
        &manager,
        ToolFilter::default()
            .with_resource_pattern("a/mock://a/public")
            .with_resource_pattern("a/mock://a/items/*")
            .with_resource_pattern("!a/mock://a/items/secret*"),
    );
    let uris: Vec<String> = docs.resources().await.into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["mock://a/public"]);
    assert!(docs.tools().is_empty());
    assert!(docs.prompts().await.is_empty());
    let item = docs.read_resource("mock://a/items/9").await.unwrap();
    assert_eq!(item["contents"][0]["text"], "contents of mock://a/items/9");
    for uri in [
        "mock://a/private",
        "mock://a/items/secret-2",
        "mock://b/items/9",
    ] {
        not_offered(docs.read_resource(uri).await, uri);
    }

    // The widest view still reads only what a server listed or templates.
    let everything = handle(&manager, ToolFilter::default());
    for uri in ["file:///etc/passwd", "mock://a/items/..", "mock://a/other"] {
        not_offered(everything.read_resource(uri).await, uri);
    }
    let public = everything.read_resource("mock://b/public").await.unwrap();
    assert_eq!(public["contents"][0]["text"], "contents of mock://b/public");

    assert_eq!(reads(dir.path(), "a"), ["mock://a/items/9"]);
    assert_eq!(reads(dir.path(), "b"), ["mock://b/public"]);

    // An aborted handle reads nothing more.
    everything.abort();
    assert_eq!(
        everything.read_resource("mock://b/public").await,
        Err(CatalogError::Aborted)
    );
    manager.disconnect_all().await;
}

#[tokio::test]
async fn sub_agent_calls_use_the_parents_connection() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    connect(&manager, &[("a", mock(&[]))]).await;
    let pid = manager.client("a").and_then(|c| c.pid()).expect("pid");
    let handles: Vec<SubAgentHandle> = (0..5)
        .map(|_| SubAgentHandle::new(manager.clone(), SubAgentOptions::default()))
        .collect();
    let calls = handles.iter().enumerate().map(|(i, handle)| async move {
        handle
            .call(
                "mcp_a_echo",
                args(json!({"text": format!("agent {i}")})),
                CallOptions::default(),
            )
            .await
            .unwrap()
            .text()
    });
    let said = futures::future::join_all(calls).await;
    assert_eq!(
        said,
        (0..5).map(|i| format!("agent {i}")).collect::<Vec<_>>()
    );
    // Still the parent's one process.
    assert_eq!(manager.client("a").and_then(|c| c.pid()), Some(pid));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn call_cap_cancels_the_call_on_the_server() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let manager = manager(dir.path());
    connect(
        &manager,
        &[("a", mock(&["--record", &record.to_string_lossy()]))],
    )
    .await;
    let handle = SubAgentHandle::new(
        manager.clone(),
        SubAgentOptions::default().with_call_cap(Some(Duration::from_millis(300))),
    );
    let started = Instant::now();
    let output = handle
        .call(
            "mcp_a_sleep",
            args(json!({"ms": 20_000})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(output.is_error, "{output:?}");
    assert!(
        output.text().starts_with("MCP error:") && output.text().contains("time cap"),
        "{output:?}"
    );
    wait_cancel_recorded(&record).await;
    // The handle is still usable.
    let echoed = handle
        .call(
            "mcp_a_echo",
            args(json!({"text": "ok"})),
            CallOptions::default(),
        )
        .await;
    assert_eq!(echoed.unwrap().text(), "ok");
    manager.disconnect_all().await;
}

#[tokio::test]
async fn abort_reaches_the_server_and_refuses_new_calls() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let manager = manager(dir.path());
    connect(
        &manager,
        &[("a", mock(&["--record", &record.to_string_lossy()]))],
    )
    .await;
    let handle = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    let running = {
        let handle = handle.clone();
        tokio::spawn(async move {
            handle
                .call(
                    "mcp_a_sleep",
                    args(json!({"ms": 20_000})),
                    CallOptions::default(),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle.abort();
    let result = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap();
    assert!(result.is_err(), "an abort stays an abort: {result:?}");
    wait_cancel_recorded(&record).await;
    assert!(handle.is_aborted());
    let refused = handle
        .call(
            "mcp_a_echo",
            args(json!({"text": "x"})),
            CallOptions::default(),
        )
        .await;
    assert!(refused.is_err());

    // One call's own token cancels that call only.
    let other = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    let cancel = CancellationToken::new();
    let call = other.call(
        "mcp_a_sleep",
        args(json!({"ms": 20_000})),
        CallOptions::default().with_cancel(cancel.clone()),
    );
    let (result, ()) = tokio::join!(call, async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    assert!(result.is_err());
    assert!(!other.is_aborted());
    let echoed = other
        .call(
            "mcp_a_echo",
            args(json!({"text": "on"})),
            CallOptions::default(),
        )
        .await;
    assert_eq!(echoed.unwrap().text(), "on");
    manager.disconnect_all().await;
}

#[tokio::test]
async fn progress_passes_through_and_failures_are_error_results() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    connect(&manager, &[("a", mock(&[]))]).await;
    let handle = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());

    let (sender, mut updates) = tokio::sync::mpsc::channel(64);
    let output = handle
        .call(
            "mcp_a_progress",
            args(json!({"steps": 4, "interval_ms": 10})),
            CallOptions::default().with_progress(sender),
        )
        .await
        .unwrap();
    assert_eq!(output.text(), "done");
    let mut seen = Vec::new();
    while let Ok(update) = updates.try_recv() {
        seen.push(update.progress);
    }
    // rmcp handles each notification on a task of its own: the last may come after the
    // result, and their order is not guaranteed.
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(seen.iter().all(|p| (1.0..=4.0).contains(p)), "{seen:?}");

    let failing = handle
        .call("mcp_a_fail", None, CallOptions::default())
        .await
        .unwrap();
    assert!(failing.is_error);
    let unknown = handle
        .call("mcp_nope_x", None, CallOptions::default())
        .await
        .unwrap();
    assert!(
        unknown.is_error && unknown.text().starts_with("MCP error:"),
        "{unknown:?}"
    );
    manager.disconnect_all().await;
}

/// A call's trace context (`_meta.traceparent`, `tracestate`, `baggage`) reaches the server
/// through the handle unchanged; the mock's `meta` tool returns the `_meta` it received.
#[tokio::test]
async fn a_calls_trace_context_reaches_the_server() {
    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let dir = temp_dir();
    let manager = manager(dir.path());
    connect(&manager, &[("a", mock(&["--echo-meta"]))]).await;
    let handle = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    let trace = mcp_runtime::client::TraceContext::default()
        .with_traceparent(TRACEPARENT)
        .and_then(|t| t.with_tracestate("congo=t61rcWkgMzE"))
        .and_then(|t| t.with_baggage("userId=alice"))
        .unwrap();
    let output = handle
        .call("mcp_a_meta", None, CallOptions::default().with_trace(trace))
        .await
        .unwrap();
    let meta: serde_json::Value = serde_json::from_str(&output.text()).unwrap();
    assert_eq!(meta["traceparent"], TRACEPARENT, "{meta}");
    assert_eq!(meta["tracestate"], "congo=t61rcWkgMzE", "{meta}");
    assert_eq!(meta["baggage"], "userId=alice", "{meta}");
    manager.disconnect_all().await;
}

/// Two servers with the same MCP App URI: the handle's tools name each app by its presented
/// URI, and reading it returns that server's own page.
#[tokio::test]
async fn each_servers_app_is_read_from_that_server() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let app = "ui://widgets/app.html";
    connect(
        &manager,
        &[
            ("a", mock(&["--name", "a", "--app", app])),
            ("b", mock(&["--name", "b", "--app", app])),
        ],
    )
    .await;
    let handle = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    let tools = handle.tools();
    for server in ["a", "b"] {
        let tool = tools
            .iter()
            .find(|t| t.name == format!("mcp_{server}_app"))
            .unwrap();
        let uri = tool.definition.ui_resource_uri().unwrap();
        assert_eq!(uri, format!("ui://mcpr/{server}/widgets/app.html"));
        let read = handle.read_resource(uri).await.unwrap();
        let html = read["contents"][0]["text"].as_str().unwrap();
        assert!(html.contains(&format!("app of {server} ")), "{html}");
    }
    manager.disconnect_all().await;
}
