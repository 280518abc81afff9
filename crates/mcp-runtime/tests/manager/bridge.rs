//! The tool bridge and the session: error results, aborts, late servers, duplicates and
//! notification floods.

use super::*;

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
    // `fast` must be done at the gate and `late` not: a gate of 2 s leaves room for a loaded
    // machine, and `late` boots in 3 s.
    let mut options = ManagerOptions::default()
        .with_cache(Some(Arc::new(ToolCache::in_dir(dir.path()))))
        .with_project(dir.path().to_owned())
        .with_wait_for_uncached(false);
    options.gate = Duration::from_secs(2);
    let manager = McpManager::new(options);
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
                ("late", mock(&["--init-delay", "3000"])),
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
    assert_eq!(out.content, vec![Content::text("bound")]);

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
