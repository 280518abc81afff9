//! The manager against real servers (`mcpr mock` over real pipes): every documented failure mode, the
//! fast-start gate with the tool cache, health (reconnect, storm breaker, no replay),
//! `list_changed`, partial operations, the tool bridge and the session, and process hygiene.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::client::{CallOptions, Content, ToolDefinition};
use mcp_runtime::config::{DiscoveryOptions, EnvSource, ServerConfig};
use mcp_runtime::loader::{LoadOptions, discover_and_load_mcp_tools};
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
    McpManager::new(ManagerOptions {
        cache: Some(Arc::new(ToolCache::in_dir(cache_dir))),
        project: cache_dir.to_owned(),
        ..ManagerOptions::default()
    })
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
    DiscoveryOptions {
        home: Some(home.to_owned()),
        env: EnvSource::Map(Default::default()),
        explicit_files: files.iter().map(|p| p.to_path_buf()).collect(),
        strict: true,
        trust_store: Some(home.join("trust.json")),
        ..DiscoveryOptions::default()
    }
}

// ---- failure modes --------------------------------------------------------------------------

#[tokio::test]
async fn a10_discovery_throws_gives_empty_tools_and_a_synthetic_error() {
    let dir = temp_dir();
    let file = dir.path().join("mcp.json");
    let config = json!({"mcpServers": {"m": {"command": support::MCPR, "args": ["mock", "--name", "${WHO}"]}}});
    std::fs::write(&file, config.to_string()).unwrap();
    // A bug deep inside discovery (here: the environment lookup panics) must not take the
    // session down.
    let mut discovery = discovery_options(dir.path(), &[&file]);
    discovery.env = EnvSource::Fn(Arc::new(|name: &str| -> Option<String> {
        panic!("environment lookup exploded on {name}")
    }));
    let options = LoadOptions {
        discovery,
        manager: ManagerOptions {
            cache: None,
            ..ManagerOptions::default()
        },
        ..LoadOptions::default()
    };
    let loaded = discover_and_load_mcp_tools(dir.path(), options).await;
    assert!(loaded.tools.is_empty());
    assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
    assert_eq!(loaded.errors[0].path, Path::new(".mcp.json"));
    assert!(
        loaded.errors[0].error.contains("exploded"),
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
        "good": {"command": support::MCPR, "args": ["mock"]},
        "broken": {"command": support::MCPR, "url": "http://127.0.0.1:9/mcp"},
    }});
    std::fs::write(&file, config.to_string()).unwrap();
    let options = LoadOptions {
        discovery: discovery_options(dir.path(), &[&file]),
        manager: ManagerOptions {
            cache: None,
            ..ManagerOptions::default()
        },
        ..LoadOptions::default()
    };
    let loaded = discover_and_load_mcp_tools(dir.path(), options).await;
    assert!(loaded.tools.iter().any(|t| t.name == "mcp_good_echo"));
    let error = loaded
        .errors
        .iter()
        .find(|e| e.server.as_deref() == Some("broken"))
        .expect("error for broken");
    assert!(
        error.error.contains("broken") && error.error.contains("command"),
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
    assert!(error.contains("tools/list timed out"), "{error}");
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

// ---- Health and the tool view ---------------------------------------------------------------

#[tokio::test]
async fn calls_wait_for_a_reconnecting_server_and_tools_stay_registered() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let mut events = manager.subscribe();
    manager
        .connect_servers(
            servers(&[("flaky", mock(&["--crash-after", "0"]))]),
            IndexMap::new(),
        )
        .await;
    let _ = manager
        .call_tool(
            "flaky",
            "echo",
            args(json!({"text": "boom"})),
            CallOptions::default(),
        )
        .await;
    wait_event(&mut events, |e| {
        matches!(e, ManagerEvent::Reconnecting { .. })
    })
    .await;
    // While reconnecting the tools are still offered.
    assert!(
        manager
            .server_tools()
            .iter()
            .any(|s| s.server == "flaky" && !s.tools.is_empty())
    );
    // `add` does not crash it... but any call does (crash-after 0); the point is the wait: a
    // ping-like check through wait_for_connection succeeds once reconnected.
    manager.wait_for_connection("flaky").await.unwrap();
    assert_eq!(manager.status("flaky"), ServerStatus::Connected);
    manager.disconnect_all().await;
}

#[tokio::test]
async fn crash_storm_suspends_automatic_reconnects_and_manual_reconnect_resets() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let mut events = manager.subscribe();
    // Exits right after every handshake: each reconnect "works" and dies at once.
    manager
        .connect_servers(
            servers(&[("storm", mock(&["--exit-after-init"]))]),
            IndexMap::new(),
        )
        .await;
    let suspended = wait_event(&mut events, |e| matches!(e, ManagerEvent::Suspended { .. })).await;
    let ManagerEvent::Suspended { reason, .. } = suspended else {
        unreachable!()
    };
    assert!(reason.contains("crash storm"), "{reason}");
    assert_eq!(manager.status("storm"), ServerStatus::Disconnected);
    let error = manager
        .call_tool("storm", "echo", None, CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, ManagerError::Unavailable { .. }), "{error}");

    // A manual reconnect resets the breaker and tries again (and fails the same way).
    let mut events = manager.subscribe();
    let _ = manager.reconnect_server("storm").await;
    wait_event(&mut events, |e| {
        matches!(e, ManagerEvent::Reconnecting { attempt: 1, .. })
    })
    .await;
    manager.disconnect_all().await;
}

#[tokio::test]
async fn list_changed_relists_rewrites_the_cache_and_emits_tools_changed() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let manager = manager(dir.path());
    let config = mock(&[
        "--list-changed-ms",
        "100",
        "--record",
        &record.to_string_lossy(),
    ]);
    let mut events = manager.subscribe();
    manager
        .connect_servers(servers(&[("changing", config.clone())]), IndexMap::new())
        .await;
    wait_event(&mut events, |e| matches!(e, ManagerEvent::Connected { .. })).await;
    wait_event(&mut events, |e| {
        matches!(e, ManagerEvent::ToolsChanged { .. })
    })
    .await;
    wait_event(&mut events, |e| {
        matches!(e, ManagerEvent::ToolsChanged { .. })
    })
    .await;
    let lists = std::fs::read_to_string(&record)
        .unwrap()
        .matches("\"tools/list\"")
        .count();
    assert!(lists >= 2, "re-listed after list_changed ({lists} lists)");
    manager.disconnect_all().await;
    let cached = ToolCache::in_dir(dir.path()).get(&CacheKey::new("changing", dir.path(), &config));
    assert!(cached.is_some_and(|tools| tools.iter().any(|t| t.name == "echo")));
}

#[tokio::test]
async fn connecting_another_server_never_drops_the_tools_of_the_others() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    manager
        .connect_servers(servers(&[("a", mock(&[]))]), IndexMap::new())
        .await;
    let pid_a = manager.client("a").unwrap().pid();
    manager
        .connect_servers(servers(&[("b", mock(&[]))]), IndexMap::new())
        .await;
    // Connecting `a` again is a no-op: same process, tools kept.
    manager
        .connect_servers(servers(&[("a", mock(&[]))]), IndexMap::new())
        .await;
    let offered: Vec<String> = manager
        .server_tools()
        .iter()
        .map(|s| s.server.clone())
        .collect();
    assert_eq!(offered, ["a", "b"]);
    assert_eq!(manager.client("a").unwrap().pid(), pid_a);

    manager.disconnect_server("a").await;
    let offered: Vec<String> = manager
        .server_tools()
        .iter()
        .map(|s| s.server.clone())
        .collect();
    assert_eq!(offered, ["b"]);
    assert!(wait_dead(pid_a.unwrap(), Duration::from_secs(5)));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a_corrupt_cache_is_a_miss_and_start_up_still_works() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("tools.sqlite"), b"not a database").unwrap();
    let manager = manager(dir.path());
    let report = manager
        .connect_servers(
            servers(&[("m", mock(&["--init-delay", "400"]))]),
            IndexMap::new(),
        )
        .await;
    assert!(tool_names(&report, "m").contains(&"echo".to_owned()));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn ten_servers_by_a_thousand_concurrent_calls_lose_nothing() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let list: Vec<(String, ServerConfig)> = (0..10).map(|i| (format!("s{i}"), mock(&[]))).collect();
    manager
        .connect_servers(list.into_iter().collect(), IndexMap::new())
        .await;
    let calls = (0..10_000).map(|i| {
        let manager = manager.clone();
        async move {
            let server = format!("s{}", i % 10);
            let text = format!("{server}:{i}");
            let out = manager
                .call_tool(
                    &server,
                    "echo",
                    args(json!({"text": text})),
                    CallOptions::default(),
                )
                .await
                .unwrap();
            assert_eq!(out.text(), text);
        }
    });
    futures::future::join_all(calls).await;
    manager.disconnect_all().await;
}

#[tokio::test]
async fn disconnect_all_leaves_no_process_grandchildren_included() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let mut list = Vec::new();
    for i in 0..3 {
        let file = dir.path().join(format!("gc{i}.pid"));
        list.push((
            format!("s{i}"),
            mock(&["--grandchild", &file.to_string_lossy()]),
        ));
    }
    list.push(("stubborn".to_owned(), mock(&["--ignore-sigterm"])));
    manager
        .connect_servers(list.into_iter().collect(), IndexMap::new())
        .await;
    let mut pids: Vec<u32> = manager
        .server_names()
        .iter()
        .filter_map(|n| manager.client(n)?.pid())
        .collect();
    for i in 0..3 {
        pids.push(read_pid(&dir.path().join(format!("gc{i}.pid"))));
    }
    assert_eq!(pids.len(), 7);
    manager.disconnect_all().await;
    for pid in pids {
        assert!(
            wait_dead(pid, Duration::from_secs(5)),
            "pid {pid} survived disconnect_all"
        );
    }
    assert!(manager.server_tools().is_empty());
}

// ---- The tool bridge and the session ---------------------------------------------------------

#[tokio::test]
async fn tool_errors_become_mcp_error_results_and_abort_stays_an_abort() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let manager = manager(dir.path());
    let report = manager
        .connect_servers(
            servers(&[("m", mock(&["--record", &record.to_string_lossy()]))]),
            IndexMap::new(),
        )
        .await;
    let tools = mcp_tools(&report.servers, NamingStyle::Mcpr);
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name");
    let sleep = tools.iter().find(|t| t.name == "mcp_m_sleep").unwrap();
    assert_eq!(sleep.label, "mcp:m");

    // A timeout is an error result, not a crash.
    let out = sleep
        .call(
            &manager,
            args(json!({"ms": 5000})),
            CallOptions::default().with_timeout(Duration::from_millis(100)),
        )
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(out.text().starts_with("MCP error: "), "{}", out.text());

    // An abort stays an abort, and the server hears about it.
    let cancel = CancellationToken::new();
    let call = sleep.call(
        &manager,
        args(json!({"ms": 5000})),
        CallOptions::default().with_cancel(cancel.clone()),
    );
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert!(result.is_err(), "aborted");
    // A ping answered means the server has read everything sent before it.
    manager.client("m").unwrap().ping().await.unwrap();
    let cancels = std::fs::read_to_string(&record)
        .unwrap()
        .matches("notifications/cancelled")
        .count();
    assert_eq!(
        cancels, 2,
        "timeout and abort both sent notifications/cancelled"
    );
    manager.disconnect_all().await;
}

#[tokio::test]
async fn session_refresh_replaces_mcp_tools_and_binds_late_servers() {
    let dir = temp_dir();
    let manager = McpManager::new(ManagerOptions {
        cache: Some(Arc::new(ToolCache::in_dir(dir.path()))),
        project: dir.path().to_owned(),
        wait_for_uncached: false,
        ..ManagerOptions::default()
    });
    let mut session = Session::new(manager.clone(), NamingStyle::Mcpr);
    session.register_host_tool(HostTool {
        name: "read_file".into(),
        description: "host tool".into(),
        input_schema: json!({"type": "object"}),
    });
    let report = manager
        .connect_servers(
            servers(&[
                ("fast", mock(&[])),
                ("late", mock(&["--init-delay", "700"])),
            ]),
            IndexMap::new(),
        )
        .await;
    assert_eq!(report.pending, ["late"]);
    session.refresh_mcp_tools(mcp_tools(&report.servers, NamingStyle::Mcpr));
    assert!(session.get("mcp_fast_echo").is_some());
    assert!(
        session.get("mcp_late_echo").is_none(),
        "no cache, not connected yet"
    );

    session.wait_and_bind("late").await.unwrap();
    assert!(
        session.get("mcp_late_echo").is_some(),
        "late tools bound without a restart"
    );
    assert!(
        matches!(session.get("read_file"), Some(RegisteredTool::Host(_))),
        "host tools kept"
    );
    let out = session
        .call(
            "mcp_late_echo",
            args(json!({"text": "bound"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        vec![Content::Text {
            text: "bound".into()
        }]
    );

    // Reload: disconnect all, connect again, refresh.
    manager.disconnect_all().await;
    session.refresh_from_manager();
    assert!(session.get("mcp_fast_echo").is_none());
    assert_eq!(session.tools().count(), 1);
}

#[tokio::test]
async fn disconnect_all_right_after_start_up_still_leaves_the_tools_in_the_cache() {
    let dir = temp_dir();
    let config = mock(&[]);
    let manager = manager(dir.path());
    manager
        .connect_servers(servers(&[("quick", config.clone())]), IndexMap::new())
        .await;
    manager.disconnect_all().await;
    let cached = ToolCache::in_dir(dir.path()).get(&CacheKey::new("quick", dir.path(), &config));
    assert!(cached.is_some_and(|tools| tools.iter().any(|t| t.name == "echo")));
}

#[tokio::test]
async fn a_tool_listed_twice_is_offered_once_by_the_manager() {
    let dir = temp_dir();
    let file = dir.path().join("tools.json");
    std::fs::write(
        &file,
        json!([
            {"name": "twice", "description": "first"},
            {"name": "twice", "description": "second"}
        ])
        .to_string(),
    )
    .unwrap();
    let manager = manager(dir.path());
    let config = mock(&["--tool-file", file.to_str().unwrap()]);
    let report = manager
        .connect_servers(servers(&[("dup", config)]), IndexMap::new())
        .await;
    let names = tool_names(&report, "dup");
    assert_eq!(
        names.iter().filter(|n| *n == "twice").count(),
        1,
        "{names:?}"
    );
    let exposed = mcp_tools(&manager.server_tools(), NamingStyle::Mcpr);
    let twice: Vec<_> = exposed.iter().filter(|t| t.tool == "twice").collect();
    assert_eq!(twice.len(), 1);
    assert_eq!(twice[0].definition.description.as_deref(), Some("first"));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a_notification_flood_leaves_the_manager_responsive() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let manager = manager(dir.path());
    let config = mock(&["--flood-tool", "--record", &record.to_string_lossy()]);
    manager
        .connect_servers(servers(&[("noisy", config)]), IndexMap::new())
        .await;
    let flooded = manager
        .call_tool(
            "noisy",
            "flood",
            args(json!({"count": 20000})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(flooded.text(), "sent 20000 notifications");
    let echoed = manager
        .call_tool(
            "noisy",
            "echo",
            args(json!({"text": "still here"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(echoed.text(), "still here");
    // The list_changed notifications in the flood still lead to a re-list.
    let relisted = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let text = std::fs::read_to_string(&record).unwrap_or_default();
            if text.matches("\"tools/list\"").count() >= 2 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        relisted.is_ok(),
        "no re-list after the flood's list_changed"
    );
    assert_eq!(manager.status("noisy"), ServerStatus::Connected);
    manager.disconnect_all().await;
}
