//! Tool search (discovery mode), a host's search tool over its MCP tools: what a search
//! activates, the servers always loaded, and the arguments it refuses. (The ranking itself is the `tool-search`
//! crate's, tested there.)

use mcp_runtime::session::{HostToolSearch, ToolSearchError};
use mcp_runtime::tools::McpTool;
use serde_json::{Value, json};

fn tool(server: &str, name: &str, description: &str, params: Value) -> McpTool {
    McpTool {
        name: format!("mcp_{server}_{name}"),
        server: server.into(),
        tool: name.into(),
        definition: serde_json::from_value(json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": params},
        }))
        .unwrap(),
        label: format!("mcp:{server}"),
        deferred: false,
    }
}

fn git() -> Vec<McpTool> {
    vec![
        tool(
            "git",
            "git_status",
            "Shows the working tree status",
            json!({"repo_path": {"type": "string"}}),
        ),
        tool(
            "git",
            "git_diff_unstaged",
            "Shows changes in the working directory that are not yet staged",
            json!({}),
        ),
        tool(
            "git",
            "git_diff_staged",
            "Shows changes that are staged for commit",
            json!({}),
        ),
        tool(
            "git",
            "git_diff",
            "Shows differences between branches or commits",
            json!({"target": {"type": "string", "description": "Target branch or commit to compare with"}}),
        ),
        tool(
            "git",
            "git_log",
            "Shows the commit logs",
            json!({"max_count": {"type": "integer"}}),
        ),
    ]
}

fn fs() -> Vec<McpTool> {
    vec![
        tool(
            "fs",
            "read_file",
            "Read the complete contents of a file from the file system",
            json!({"path": {"type": "string"}}),
        ),
        tool(
            "fs",
            "read_multiple_files",
            "Read the contents of multiple files simultaneously",
            json!({"paths": {"type": "array"}}),
        ),
        tool(
            "fs",
            "list_directory",
            "Get a detailed listing of all files and directories in a specified path",
            json!({"path": {"type": "string"}}),
        ),
    ]
}

fn browser() -> Vec<McpTool> {
    vec![
        tool(
            "web",
            "browser_click",
            "Perform click on a web page",
            json!({"element": {"type": "string"}}),
        ),
        tool(
            "web",
            "browser_hover",
            "Hover over element on page",
            json!({"element": {"type": "string"}}),
        ),
        tool(
            "web",
            "browserTakeScreenshot",
            "Take a screenshot of the current page",
            json!({}),
        ),
    ]
}

#[test]
fn tool_search_activates_what_it_finds_and_keeps_always_load_servers() {
    let mut search = HostToolSearch::new();
    search.set_always_load(["fs"]);
    let mut all = git();
    all.extend(fs());
    all.extend(browser());
    search.set_tools(all.clone());
    assert_eq!(search.len(), 11);
    let loaded: Vec<String> = search.loaded_tools().into_iter().map(|t| t.tool).collect();
    assert_eq!(loaded.len(), 3, "only the alwaysLoad server: {loaded:?}");
    assert!(loaded.iter().all(|t| fs().iter().any(|f| &f.tool == t)));

    let args = json!({"query": "unstaged changes", "limit": 1});
    let found = search.call_search(args.as_object().unwrap()).unwrap();
    assert_eq!(found.activated.len(), 1);
    assert_eq!(found.activated[0].tool, "git_diff_unstaged");
    assert!(
        found.activated[0].definition.input_schema.is_object(),
        "full definition handed over"
    );
    assert!(
        found.text.contains("mcp_git_git_diff_unstaged"),
        "{}",
        found.text
    );
    assert!(search.is_loaded("mcp_git_git_diff_unstaged"));
    assert_eq!(search.loaded_tools().len(), 4);

    // The server's tools change and the activated one disappears: it is no longer loaded.
    let mut changed: Vec<McpTool> = all
        .into_iter()
        .filter(|t| t.tool != "git_diff_unstaged")
        .collect();
    search.set_tools(changed.clone());
    assert!(!search.is_loaded("mcp_git_git_diff_unstaged"));
    assert_eq!(search.loaded_tools().len(), 3);
    changed.retain(|t| t.server != "web");
    search.set_tools(changed);
    assert!(search.search("click", 5).is_empty());

    // Nothing found: a helpful text, nothing activated.
    let args = json!({"query": "zzz qqq"});
    let found = search.call_search(args.as_object().unwrap()).unwrap();
    assert!(found.activated.is_empty() && found.text.contains("No tool matches"));
}

#[test]
fn tool_search_refuses_bad_arguments_clearly() {
    let mut search = HostToolSearch::new();
    search.set_tools(git());
    for bad in [json!({}), json!({"query": 3}), json!({"query": "  "})] {
        let err = search.call_search(bad.as_object().unwrap()).unwrap_err();
        assert!(matches!(err, ToolSearchError::MissingQuery { .. }));
        assert!(err.to_string().contains("`query`"), "{err}");
    }
    for bad in [
        json!({"query": "diff", "limit": 0}),
        json!({"query": "diff", "limit": "5"}),
        json!({"query": "diff", "limit": -1}),
    ] {
        let err = search.call_search(bad.as_object().unwrap()).unwrap_err();
        assert!(err.to_string().contains("`limit`"), "{err}");
    }
    // A huge limit is capped, not an error.
    let args = json!({"query": "diff", "limit": 1_000_000});
    let found = search.call_search(args.as_object().unwrap()).unwrap();
    assert!(found.activated.len() <= HostToolSearch::MAX_LIMIT);
    let definition = HostToolSearch::search_tool_definition();
    assert_eq!(
        definition.input_schema.to_value()["required"],
        json!(["query"])
    );
}
