//! The manager against real servers (`mcp-mock` over real pipes): every documented failure mode, the
//! fast-start gate with the tool cache, health (reconnect, storm breaker, no replay),
//! `list_changed`, partial operations, the tool bridge and the session, and process hygiene.

mod bridge;
mod health;
mod reload;
#[path = "../support/mod.rs"]
mod support;
mod tool_search;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::client::{CallOptions, ClientError, Content, ToolDefinition};
use mcp_runtime::config::{ConfigError, DiscoveryOptions, EnvSource, ServerConfig};
use mcp_runtime::loader::{LoadFailure, LoadOptions, discover_and_load_mcp_tools};
use mcp_runtime::manager::{
    ManagerError, ManagerEvent, ManagerOptions, McpManager, ServerStatus, StartupReport,
};
use mcp_runtime::session::{HostTool, RegisteredTool, Session};
use mcp_runtime::tools::{NamingStyle, mcp_tools};
use serde_json::json;
use support::{args, mock, read_pid, temp_dir, wait_dead};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// A manager with its own cache directory (never the user's).
fn manager(cache_dir: &Path) -> McpManager {
    McpManager::new(
        ManagerOptions::default()
            .with_cache(Some(Arc::new(ToolCache::in_dir(cache_dir))))
            .with_project(cache_dir.to_owned()),
    )
}

fn servers(list: &[(&str, ServerConfig)]) -> IndexMap<String, ServerConfig> {
    list.iter()
        .map(|(n, c)| (n.to_string(), c.clone()))
        .collect()
}

fn with_startup_timeout(mut config: ServerConfig, ms: u64) -> ServerConfig {
    config.startup_timeout_ms = Some(ms);
    config
}

fn tool_names(report: &StartupReport, server: &str) -> Vec<String> {
    report
        .servers
        .iter()
        .filter(|s| s.server == server)
        .flat_map(|s| s.tools.iter().map(|t| t.name.clone()))
        .collect()
}

/// Wait (at most 30 s) for an event matching `pred`.
async fn wait_event(
    events: &mut broadcast::Receiver<ManagerEvent>,
    pred: impl Fn(&ManagerEvent) -> bool,
) -> ManagerEvent {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await {
                Ok(event) if pred(&event) => return event,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event stream ended: {e}"),
            }
        }
    })
    .await
    .expect("event within 30 s")
}

fn discovery_options(home: &Path, files: &[&Path]) -> DiscoveryOptions {
    DiscoveryOptions::default()
        .with_home(Some(home.to_owned()))
        .with_env(EnvSource::Map(Default::default()))
        .with_explicit_files(files.iter().map(|p| p.to_path_buf()).collect())
        .with_strict(true)
        .with_trust_store(Some(home.join("trust.json")))
}

// ---- failure modes --------------------------------------------------------------------------

#[tokio::test]
async fn a10_discovery_throws_gives_empty_tools_and_a_synthetic_error() {
    let dir = temp_dir();
    let file = dir.path().join("mcp.json");
    let config = json!({"mcpServers": {"m": {"command": support::mock_bin(), "args": ["--name", "${WHO}"]}}});
    std::fs::write(&file, config.to_string()).unwrap();
    // A bug deep inside discovery (here: the environment lookup panics) must not take the
    // session down.
    let mut discovery = discovery_options(dir.path(), &[&file]);
    discovery.env = EnvSource::Fn(Arc::new(|name: &str| -> Option<String> {
        panic!("environment lookup exploded on {name}")
    }));
    let options = LoadOptions::default()
        .with_discovery(discovery)
        .with_manager(ManagerOptions::default().with_cache(None));
    let loaded = discover_and_load_mcp_tools(dir.path(), options).await;
    assert!(loaded.tools.is_empty());
    assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
    assert_eq!(loaded.errors[0].path, Path::new(".mcp.json"));
    assert!(
        loaded.errors[0].error.to_string().contains("exploded"),
        "{:?}",
        loaded.errors
    );
    // The session still starts.
    let session = Session::new(loaded.manager, NamingStyle::Mcpr);
    assert_eq!(session.tools().count(), 0);
}

#[tokio::test]
async fn a10_invalid_server_config_is_skipped_with_an_error_naming_server_and_field() {
    let dir = temp_dir();
    let file = dir.path().join("mcp.json");
    let config = json!({"mcpServers": {
        "good": {"command": support::mock_bin(), "args": []},
        "broken": {"command": support::mock_bin(), "url": "http://127.0.0.1:9/mcp"},
    }});
    std::fs::write(&file, config.to_string()).unwrap();
    let options = LoadOptions::default()
        .with_discovery(discovery_options(dir.path(), &[&file]))
        .with_manager(ManagerOptions::default().with_cache(None));
    let loaded = discover_and_load_mcp_tools(dir.path(), options).await;
    assert!(loaded.tools.iter().any(|t| t.name == "mcp_good_echo"));
    let error = loaded
        .errors
        .iter()
        .find(|e| e.server.as_deref() == Some("broken"))
        .expect("error for broken");
    assert!(
        matches!(
            &error.error,
            LoadFailure::Config(ConfigError::Invalid { server, field, .. })
                if server == "broken" && field == "command"
        ),
        "{error:?}"
    );
    assert_eq!(error.path, file);
    loaded.manager.disconnect_all().await;
}

#[tokio::test]
async fn a10_connect_timeout_and_init_failure_are_recorded_and_others_continue() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let report = manager
        .connect_servers(
            servers(&[
                ("hangs", with_startup_timeout(mock(&["--hang-init"]), 300)),
                ("dies", mock(&["--fail-init", "cannot bind port"])),
                ("works", mock(&[])),
            ]),
            IndexMap::new(),
        )
        .await;
    assert!(
        report.errors["hangs"].to_string().contains("timed out"),
        "{:?}",
        report.errors
    );
    assert!(
        report.errors["dies"]
            .to_string()
            .contains("cannot bind port"),
        "{:?}",
        report.errors
    );
    assert!(tool_names(&report, "works").contains(&"echo".to_owned()));
    assert_eq!(manager.status("works"), ServerStatus::Connected);
    assert_eq!(manager.status("hangs"), ServerStatus::Disconnected);
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a10_pending_at_the_gate_with_a_cache_hit_returns_deferred_tools_at_once() {
    let dir = temp_dir();
    let cache = ToolCache::in_dir(dir.path());
    let slow = mock(&["--init-delay", "1500"]);
    let cached: Vec<ToolDefinition> = vec![
        serde_json::from_value(json!({"name": "echo", "description": "cached echo"})).unwrap(),
    ];
    cache.put(&CacheKey::new("slow", dir.path(), &slow), &cached);

    let manager = manager(dir.path());
    let mut events = manager.subscribe();
    let report = manager
        .connect_servers(servers(&[("slow", slow)]), IndexMap::new())
        .await;
    // Returned at the gate: the server is still connecting, its cached tools are offered.
    assert_eq!(report.pending, ["slow"]);
    assert_eq!(report.servers.len(), 1);
    assert!(report.servers[0].deferred);
    assert_eq!(
        report.servers[0].tools[0].description.as_deref(),
        Some("cached echo")
    );
    assert_eq!(manager.status("slow"), ServerStatus::Connecting);

    // A deferred tool waits for its server, then works.
    let tools = mcp_tools(&report.servers, NamingStyle::Mcpr);
    assert!(tools[0].deferred);
    let out = tools[0]
        .call(
            &manager,
            args(json!({"text": "late"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "late");
    wait_event(&mut events, |e| matches!(e, ManagerEvent::Connected { .. })).await;
    // The live list replaced the cached one.
    let live = manager.server_tools();
    assert!(!live[0].deferred && live[0].tools.len() > 1);
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a10_a_server_whose_last_start_failed_is_not_waited_for_at_the_gate() {
    let dir = temp_dir();
    let hangs = with_startup_timeout(mock(&["--hang-init"]), 400);
    // First start-up: no cached tools, so it is waited for, and fails; the cache remembers.
    let first = manager(dir.path());
    let report = first
        .connect_servers(servers(&[("hangs", hangs.clone())]), IndexMap::new())
        .await;
    assert!(report.errors.contains_key("hangs"), "{report:?}");
    first.disconnect_all().await;

    // Next start-up: still no cached tools, but the gate answers without waiting for it.
    let second = manager(dir.path());
    let report = second
        .connect_servers(servers(&[("hangs", hangs)]), IndexMap::new())
        .await;
    assert_eq!(report.pending, ["hangs"]);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let remembered = &report.failed_before["hangs"];
    assert!(remembered.contains("`hangs`"), "{remembered}");
    assert_eq!(second.status("hangs"), ServerStatus::Connecting);
    second.disconnect_all().await;
}

#[tokio::test]
async fn a10_pending_at_the_gate_without_cache_waits_for_that_server() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let report = manager
        .connect_servers(
            servers(&[("slow", mock(&["--init-delay", "600"]))]),
            IndexMap::new(),
        )
        .await;
    assert!(report.pending.is_empty(), "waited for the uncached server");
    assert!(!report.servers[0].deferred);
    assert!(tool_names(&report, "slow").contains(&"echo".to_owned()));

    // Bounded by the server's own timeout.
    let report = manager
        .connect_servers(
            servers(&[("stuck", with_startup_timeout(mock(&["--hang-list"]), 500))]),
            IndexMap::new(),
        )
        .await;
    assert!(
        report.errors["stuck"]
            .to_string()
            .contains("tools/list timed out"),
        "{:?}",
        report.errors
    );
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a10_late_background_tool_load_failure_is_reported_after_the_gate_and_not_fatal() {
    let dir = temp_dir();
    let cache = ToolCache::in_dir(dir.path());
    let doomed = with_startup_timeout(mock(&["--hang-list"]), 800);
    let cached: Vec<ToolDefinition> =
        vec![serde_json::from_value(json!({"name": "echo"})).unwrap()];
    cache.put(&CacheKey::new("doomed", dir.path(), &doomed), &cached);

    let manager = manager(dir.path());
    let mut events = manager.subscribe();
    let report = manager
        .connect_servers(
            servers(&[("doomed", doomed), ("fine", mock(&[]))]),
            IndexMap::new(),
        )
        .await;
    assert!(report.errors.is_empty());
    assert_eq!(report.pending, ["doomed"]);

    let failed = wait_event(
        &mut events,
        |e| matches!(e, ManagerEvent::Failed { server, .. } if server == "doomed"),
    )
    .await;
    let ManagerEvent::Failed { error, .. } = failed else {
        unreachable!()
    };
    assert!(
        matches!(error.client_error(), Some(ClientError::Timeout { .. })),
        "{error}"
    );
    assert!(
        error.to_string().contains("tools/list timed out"),
        "{error}"
    );
    assert_eq!(manager.status("doomed"), ServerStatus::Disconnected);
    // Its deferred tools are withdrawn; the other server is untouched.
    let offered: Vec<String> = manager
        .server_tools()
        .iter()
        .map(|s| s.server.clone())
        .collect();
    assert_eq!(offered, ["fine"]);
    let out = manager
        .call_tool(
            "fine",
            "echo",
            args(json!({"text": "still here"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "still here");
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a10_transport_drop_fails_the_call_clearly_then_reconnects_without_replay() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let manager = manager(dir.path());
    let mut events = manager.subscribe();
    let config = mock(&["--crash-after", "1", "--record", &record.to_string_lossy()]);
    manager
        .connect_servers(servers(&[("flaky", config)]), IndexMap::new())
        .await;

    let first = manager
        .call_tool(
            "flaky",
            "echo",
            args(json!({"text": "one"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(first.text(), "one");
    // This call reaches the server, which dies on it: it may have run, so it is not replayed.
    let error = manager
        .call_tool(
            "flaky",
            "echo",
            args(json!({"text": "two"})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("server exited"), "{error}");

    wait_event(&mut events, |e| {
        matches!(e, ManagerEvent::Reconnecting { .. })
    })
    .await;
    wait_event(&mut events, |e| matches!(e, ManagerEvent::Connected { .. })).await;
    let third = manager
        .call_tool(
            "flaky",
            "echo",
            args(json!({"text": "three"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(third.text(), "three");

    let recorded = std::fs::read_to_string(&record).unwrap();
    assert_eq!(
        recorded.matches(r#""text":"two""#).count(),
        1,
        "the crashed call was not replayed"
    );
    manager.disconnect_all().await;
}
