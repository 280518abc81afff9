//! Health and the tool view: reconnects, the crash-storm breaker, `list_changed`, the cache,
//! load, and process hygiene at shutdown.

use super::*;

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
async fn disconnect_all_leaves_no_process_of_servers_still_starting() {
    let dir = temp_dir();
    let manager = McpManager::new(
        ManagerOptions::default()
            .with_cache(Some(Arc::new(ToolCache::in_dir(dir.path()))))
            .with_project(dir.path().to_owned())
            .with_gate(Duration::from_millis(50))
            .with_wait_for_uncached(false),
    );
    let mut list = Vec::new();
    let mut files = Vec::new();
    for i in 0..4 {
        let (server, grandchild) = (
            dir.path().join(format!("s{i}.pid")),
            dir.path().join(format!("gc{i}.pid")),
        );
        list.push((
            format!("s{i}"),
            mock(&[
                "--hang-init",
                "--pid-file",
                &server.to_string_lossy(),
                "--grandchild",
                &grandchild.to_string_lossy(),
            ]),
        ));
        files.extend([server, grandchild]);
    }
    manager
        .connect_servers(list.into_iter().collect(), IndexMap::new())
        .await;
    let pids: Vec<u32> = files.iter().map(|file| read_pid(file)).collect();
    // Never initialized: still starting, so killed at once rather than closed.
    manager.disconnect_all_within(Duration::ZERO).await;
    // disconnect_all waits for them itself; the bound here only keeps a rare straggler (seen
    // once in a clean CI run, cause not found) from failing the run.
    let alive: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|pid| !wait_dead(*pid, Duration::from_secs(5)))
        .collect();
    for pid in &alive {
        // SAFETY: the test's own stray process; do not leave it behind.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(
        alive.is_empty(),
        "still alive after disconnect_all: {alive:?} of {pids:?}"
    );
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
