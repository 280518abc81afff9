//! Reload by difference against real mock processes: a call in flight on an unchanged server
//! survives, the changed server gets a new process and the unchanged one keeps its own, a
//! removed server's process is gone, and a reload that changes nothing announces nothing.

use super::*;

/// The pid of `server`'s process, as the manager reports it.
fn pid_of(manager: &McpManager, server: &str) -> u32 {
    manager
        .reports()
        .iter()
        .find(|r| r.name == server)
        .and_then(|r| r.pid)
        .unwrap_or_else(|| panic!("no pid for {server}"))
}

#[tokio::test]
async fn reload_restarts_only_what_changed_and_keeps_calls_in_flight() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let gone_pid_file = dir.path().join("gone.pid");
    let gone_flags = ["--pid-file", gone_pid_file.to_str().unwrap()];
    let first = servers(&[
        ("keep", mock(&[])),
        ("change", mock(&[])),
        ("gone", mock(&gone_flags)),
    ]);
    let report = manager.connect_servers(first, IndexMap::new()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let keep_pid = pid_of(&manager, "keep");
    let change_pid = pid_of(&manager, "change");
    let gone_pid = read_pid(&gone_pid_file);

    // A slow call on the server that stays as it is.
    let slow = {
        let manager = manager.clone();
        tokio::spawn(async move {
            let arguments = args(json!({"ms": 1500}));
            manager
                .call_tool("keep", "sleep", arguments, CallOptions::default())
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut events = manager.subscribe();
    let second = servers(&[
        ("keep", mock(&[])),
        ("change", mock(&["--tools", "2"])),
        ("fresh", mock(&[])),
    ]);
    let plan = manager.plan_reload(&second, &IndexMap::new());
    assert_eq!(plan.to_string(), "+fresh, ~change, -gone, 1 unchanged");
    let summary = manager.reload(second, IndexMap::new()).await;
    assert_eq!(summary.added, ["fresh"]);
    assert_eq!(summary.restarted, ["change"]);
    assert_eq!(summary.removed, ["gone"]);
    assert_eq!(summary.unchanged, ["keep"]);
    assert!(
        summary.startup.errors.is_empty(),
        "{:?}",
        summary.startup.errors
    );
    assert_eq!(summary.to_string(), "+fresh, ~change, -gone, 1 unchanged");

    let output = slow
        .await
        .expect("call task")
        .expect("the call in flight survives");
    assert_eq!(output.text(), "slept 1500 ms");
    assert_eq!(
        pid_of(&manager, "keep"),
        keep_pid,
        "unchanged server restarted"
    );
    let new_change_pid = pid_of(&manager, "change");
    assert_ne!(
        new_change_pid, change_pid,
        "changed server kept its process"
    );
    assert!(
        wait_dead(change_pid, Duration::from_secs(10)),
        "the changed server's old process lives on"
    );
    assert!(
        wait_dead(gone_pid, Duration::from_secs(10)),
        "removed server still running"
    );
    assert_eq!(manager.server_names(), ["keep", "change", "fresh"]);
    let tools = mcp_tools(&manager.server_tools(), NamingStyle::Mcpr);
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["mcp_change_tool_1", "mcp_fresh_echo", "mcp_keep_echo"] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with("mcp_gone_")),
        "{names:?}"
    );

    // The removed and the changed server were announced; the unchanged one was not.
    let mut changed = std::collections::BTreeSet::new();
    while let Ok(event) = events.try_recv() {
        if let ManagerEvent::ToolsChanged { server } = event {
            changed.insert(server);
        }
    }
    assert!(
        changed.contains("gone") && changed.contains("change"),
        "{changed:?}"
    );
    assert!(!changed.contains("keep"), "{changed:?}");

    // The same configuration again: nothing to do, nothing announced.
    let mut events = manager.subscribe();
    let again = servers(&[
        ("keep", mock(&[])),
        ("change", mock(&["--tools", "2"])),
        ("fresh", mock(&[])),
    ]);
    let summary = manager.reload(again, IndexMap::new()).await;
    assert!(summary.is_noop(), "{summary}");
    assert_eq!(summary.to_string(), "3 unchanged");
    assert!(events.try_recv().is_err(), "a no-op reload sent events");
    assert_eq!(pid_of(&manager, "change"), new_change_pid);

    manager.disconnect_all().await;
    for pid in [keep_pid, new_change_pid] {
        assert!(wait_dead(pid, Duration::from_secs(10)), "{pid} survived");
    }
}

#[tokio::test]
async fn reload_retries_a_failed_server_and_applies_tool_filters_in_place() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let report = manager
        .connect_servers(
            servers(&[("ok", mock(&[])), ("broken", mock(&["--fail-init"]))]),
            IndexMap::new(),
        )
        .await;
    assert!(report.errors.contains_key("broken"));
    let ok_pid = pid_of(&manager, "ok");

    let mut filtered = mock(&[]);
    filtered.disabled_tools = vec!["echo".into()];
    let summary = manager
        .reload(
            servers(&[("ok", filtered), ("broken", mock(&["--fail-init"]))]),
            IndexMap::new(),
        )
        .await;
    assert_eq!(summary.retried, ["broken"]);
    assert_eq!(summary.unchanged, ["ok"]);
    // Its retry fails again: by the gate, or after it (then the gate did not wait for it, as
    // its last start failed, and reports that failure instead).
    let startup = &summary.startup;
    assert!(
        startup.errors.contains_key("broken") || startup.failed_before.contains_key("broken"),
        "{startup:?}"
    );
    // The filter applies without a new process.
    assert_eq!(pid_of(&manager, "ok"), ok_pid);
    let tools = mcp_tools(&manager.server_tools(), NamingStyle::Mcpr);
    assert!(!tools.iter().any(|t| t.name == "mcp_ok_echo"));
    assert!(tools.iter().any(|t| t.name == "mcp_ok_add"));
    manager.disconnect_all().await;
    assert!(wait_dead(ok_pid, Duration::from_secs(10)));
}

#[tokio::test]
async fn disconnect_all_within_a_short_grace_kills_a_server_still_booting() {
    let dir = temp_dir();
    let pid_file = dir.path().join("hang.pid");
    let manager = McpManager::new(ManagerOptions::default().with_wait_for_uncached(false));
    let hang = mock(&["--hang-init", "--pid-file", pid_file.to_str().unwrap()]);
    let report = manager
        .connect_servers(servers(&[("hang", hang)]), IndexMap::new())
        .await;
    assert_eq!(report.pending, ["hang"]);
    let pid = read_pid(&pid_file);
    manager
        .disconnect_all_within(Duration::from_millis(50))
        .await;
    // Killed by the time the call returns, not some time later.
    assert!(
        wait_dead(pid, Duration::from_secs(2)),
        "booting server survived"
    );
}
