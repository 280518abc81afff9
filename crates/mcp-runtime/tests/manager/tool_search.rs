//! A host's tool search following the manager: the search index changes as real servers'
//! tools change (a reconnect with a new tool list, a reload that adds and removes servers, a
//! server disconnected), searched before and after each change.

use super::*;
use mcp_runtime::session::HostToolSearch;

/// A tool file for the mock: `(name, description)` pairs, each tool echoing its arguments.
fn tool_file(dir: &Path, file: &str, tools: &[(&str, &str)]) -> std::path::PathBuf {
    let path = dir.join(file);
    let tools: Vec<_> = tools
        .iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect();
    std::fs::write(&path, serde_json::to_string(&tools).unwrap()).unwrap();
    path
}

/// The mock serving the tools of `file` (built-ins included).
fn serving(file: &Path) -> ServerConfig {
    mock(&["--tool-file", &file.to_string_lossy()])
}

/// The best match's `server/tool`, or "" when nothing matches.
fn top(search: &HostToolSearch, query: &str) -> String {
    matches(search, query)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// Every match's `server/tool`, best first.
fn matches(search: &HostToolSearch, query: &str) -> Vec<String> {
    search
        .search(query, HostToolSearch::MAX_LIMIT)
        .iter()
        .map(|hit| format!("{}/{}", hit.tool.server, hit.tool.tool))
        .collect()
}

/// Wait (at most 30 s) until the followed manager's tools change.
async fn next_change(search: &mut HostToolSearch) {
    let changed = tokio::time::timeout(Duration::from_secs(30), search.changed())
        .await
        .expect("a change of tools within 30 s");
    assert!(changed, "the manager is still there");
}

#[tokio::test]
async fn the_index_follows_reconnects_reloads_and_removed_servers() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let notes = tool_file(
        dir.path(),
        "notes.json",
        &[("archive_note", "Move a note to the archive")],
    );
    manager
        .connect_servers(servers(&[("notes", serving(&notes))]), IndexMap::new())
        .await;
    let mut search = HostToolSearch::new();
    search.follow(&manager, NamingStyle::Mcpr);
    assert_eq!(top(&search, "archive an old note"), "notes/archive_note");
    let before = matches(&search, "translate a note to french");
    assert!(!before.contains(&"notes/translate_note".to_owned()));

    // The server comes back with other tools: the old one is gone, the new one is found.
    tool_file(
        dir.path(),
        "notes.json",
        &[("translate_note", "Translate a note into another language")],
    );
    manager.reconnect_server("notes").await.unwrap();
    next_change(&mut search).await;
    assert_eq!(
        top(&search, "translate a note to french"),
        "notes/translate_note"
    );
    let after = matches(&search, "archive an old note");
    assert!(
        !after.contains(&"notes/archive_note".to_owned()),
        "{after:?}"
    );

    // A search activates what it finds; a reload adds a server and its tools are found.
    let found = search
        .call_search(json!({"query": "translate a note"}).as_object().unwrap())
        .unwrap();
    assert_eq!(found.activated[0].name, "mcp_notes_translate_note");
    let weather = tool_file(
        dir.path(),
        "weather.json",
        &[("forecast", "Weather forecast for a city")],
    );
    manager
        .reload(
            servers(&[("notes", serving(&notes)), ("weather", serving(&weather))]),
            IndexMap::new(),
        )
        .await;
    // A search applies the pending changes itself (no need to await `changed`).
    let found = search
        .call_search(
            json!({"query": "weather forecast for Paris"})
                .as_object()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(found.activated[0].name, "mcp_weather_forecast");
    assert!(search.is_loaded("mcp_notes_translate_note"));

    // A reload that removes a server: its tools can no longer be found, and what the model had
    // activated from it is no longer loaded.
    manager
        .reload(servers(&[("weather", serving(&weather))]), IndexMap::new())
        .await;
    search.refresh();
    let after = matches(&search, "translate a note to french");
    assert!(
        after.iter().all(|hit| hit.starts_with("weather/")),
        "{after:?}"
    );
    assert!(!search.is_loaded("mcp_notes_translate_note"));
    assert!(
        search
            .loaded_tools()
            .iter()
            .all(|tool| tool.server == "weather")
    );

    // A server disconnected on request.
    manager.disconnect_server("weather").await;
    search.refresh();
    assert!(search.is_empty(), "{} tools left", search.len());
    manager.disconnect_all().await;
}

#[tokio::test]
async fn list_changed_with_the_same_tools_changes_nothing() {
    let dir = temp_dir();
    let manager = manager(dir.path());
    let mut events = manager.subscribe();
    manager
        .connect_servers(
            servers(&[("steady", mock(&["--list-changed-ms", "50"]))]),
            IndexMap::new(),
        )
        .await;
    let mut search = HostToolSearch::new();
    search.follow(&manager, NamingStyle::Mcpr);
    let before = search.len();
    assert!(before > 0);
    // Re-listed after a list_changed, with the same tools.
    for _ in 0..2 {
        wait_event(&mut events, |e| {
            matches!(e, ManagerEvent::ToolsChanged { .. })
        })
        .await;
    }
    assert!(!search.refresh(), "the same tools are not a change");
    assert_eq!(search.len(), before);
    assert_eq!(top(&search, "add two numbers"), "steady/add");
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a_search_that_follows_nothing_never_waits() {
    let mut search = HostToolSearch::new();
    assert!(!search.refresh());
    assert!(!search.changed().await);
}
