//! `mcpr serve --discovery` driven by MCP clients written by others: the TypeScript SDK and the
//! Python SDK, over stdio and streamable HTTP, in front of `mcpr mock` backends serving
//! realistic tool sets (`--tool-file`) and many generated tools (`--tools N`).
//!
//! The flow of discovery mode: the list shows the search and invoke tools and the `alwaysLoad`
//! server's tools; a search answers compact matches and activates them, the client is told
//! with `notifications/tools/list_changed` and lists them; they can be called, or invoked by
//! name without refreshing; a scoped view can neither find nor call outside itself.
//!
//! The client drivers are the shared ones of `tests/support/sdk.rs`: one JSON step per stdin line, one
//! JSON answer per line. Every wait is bounded; every address is loopback.

mod support;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::sdk::{Sdk, SdkClient, ServeWorld, Target, text};
use support::{MCPR, temp_dir};

/// The search and invoke tools of discovery mode.
const SEARCH: &str = "mcpr_search_tools";
const INVOKE: &str = "mcpr_invoke_tool";

/// A code-hosting server's tools, as a realistic set with near misses.
const FORGE_TOOLS: &str = r#"[
  {"name": "create_issue", "description": "Create a new issue in a repository.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string", "description": "Issue title"}, "body": {"type": "string"}}, "required": ["owner", "repo", "title"]}},
  {"name": "list_issues", "description": "List the issues of a repository, filtered by state and labels.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "state": {"type": "string"}}, "required": ["owner", "repo"]}},
  {"name": "create_pull_request", "description": "Open a pull request from one branch into another.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "head": {"type": "string"}, "base": {"type": "string"}}, "required": ["owner", "repo", "head", "base"]}},
  {"name": "merge_pull_request", "description": "Merge a pull request.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "number": {"type": "integer"}}, "required": ["owner", "repo", "number"]}},
  {"name": "search_code", "description": "Search source code across repositories.",
   "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
  {"name": "delete_repository", "description": "Delete a repository for good.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}, "required": ["owner", "repo"]}}
]"#;

/// A file server's tools.
const FILES_TOOLS: &str = r#"[
  {"name": "read_file", "description": "Read the complete contents of one file.",
   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
  {"name": "read_multiple_files", "description": "Read the contents of several files at once.",
   "inputSchema": {"type": "object", "properties": {"paths": {"type": "array"}}, "required": ["paths"]}},
  {"name": "write_file", "description": "Create a file or overwrite it with new content.",
   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}},
  {"name": "move_file", "description": "Move or rename a file.",
   "inputSchema": {"type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}}, "required": ["source", "destination"]}}
]"#;

type World = ServeWorld;

impl ServeWorld {
    /// Backends `forge` and `files` (tool files), `bulk` (`bulk` generated tools) and `pinned`
    /// (the mock's built-ins, marked `alwaysLoad`).
    fn new(bulk: usize) -> World {
        let dir = temp_dir();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        std::fs::write(path("forge.json"), FORGE_TOOLS).unwrap();
        std::fs::write(path("files.json"), FILES_TOOLS).unwrap();
        let mock = |flags: Vec<String>| {
            let mut args = vec!["mock".to_owned()];
            args.extend(flags);
            json!({ "command": MCPR, "args": args })
        };
        let mut pinned = mock(Vec::new());
        pinned["alwaysLoad"] = json!(true);
        let servers = json!({
            "forge": mock(vec!["--tool-file".into(), path("forge.json")]),
            "files": mock(vec!["--tool-file".into(), path("files.json")]),
            "bulk": mock(vec!["--tools".into(), bulk.to_string()]),
            "pinned": pinned,
        });
        ServeWorld::with_servers(dir, servers)
    }
}

/// The steps of discovery mode, on top of the shared client.
trait DiscoveryClient {
    /// Search; returns the whole result and the names matched, best first.
    fn search(&mut self, query: &str) -> (Value, Vec<String>);
    /// A call the gateway must refuse as an unknown tool (a protocol error).
    fn refused_call(&mut self, name: &str, args: Value);
}

impl DiscoveryClient for SdkClient {
    fn search(&mut self, query: &str) -> (Value, Vec<String>) {
        let result = self.call(SEARCH, json!({"query": query}));
        assert_ne!(result["isError"], true, "{result}");
        let found = serde_json::from_str::<Value>(&text(&result)).expect("matches as JSON");
        let names = found["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .map(|m| m["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        (result, names)
    }

    fn refused_call(&mut self, name: &str, args: Value) {
        let answer = self.try_step(json!({"op": "call", "name": name, "args": args}));
        assert_eq!(
            answer["ok"], false,
            "{:?}: {name} was called: {answer}",
            self.sdk
        );
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains("unknown tool"), "{error}");
    }
}

/// The whole flow for one SDK and transport.
fn discovery_flow(sdk: Sdk, http: bool) {
    let world = World::new(300);
    let gateway = http.then(|| world.http_gateway(&["--discovery"], &[]));
    let mut client = match &gateway {
        Some((_, url)) => world.connect(sdk, Target::Http(url, None)),
        None => world.connect(sdk, Target::Stdio(&["--discovery"])),
    };

    // The list: the two discovery tools and the alwaysLoad server's tools, nothing else.
    let names = client.tool_names();
    assert_eq!(&names[..2], [SEARCH, INVOKE], "{names:?}");
    assert!(names.contains(&"mcp_pinned_echo".to_owned()), "{names:?}");
    assert!(
        names[2..].iter().all(|n| n.starts_with("mcp_pinned_")),
        "only alwaysLoad tools besides the discovery tools: {names:?}"
    );
    // Forget whatever start-up announced.
    client.step(json!({"op": "wait_list_changed", "timeout_ms": 200}));

    // A search answers compact matches, best first, and activates them.
    let (result, found) = client.search("create issue");
    assert_eq!(
        found.first().map(String::as_str),
        Some("mcp_forge_create_issue"),
        "{result}"
    );
    let best = &serde_json::from_str::<Value>(&text(&result)).unwrap()["matches"][0];
    assert_eq!(best["description"], "Create a new issue in a repository.");
    let parameters: Vec<&str> = best["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(parameters.contains(&"title: string"), "{best}");
    assert!(parameters.contains(&"body?: string"), "{best}");
    assert!(
        best.get("inputSchema").is_none(),
        "compact, not the definition"
    );
    assert!(
        client.wait_list_changed() >= 1,
        "{sdk:?}: no list_changed after a search"
    );

    // The next list carries the full definitions of what was found.
    let tools = client.tools();
    let issue = tools
        .iter()
        .find(|t| t["name"] == "mcp_forge_create_issue")
        .unwrap_or_else(|| panic!("not activated: {tools:?}"));
    assert_eq!(
        issue["inputSchema"]["required"],
        json!(["owner", "repo", "title"])
    );
    for name in &found {
        assert!(tools.iter().any(|t| t["name"] == name.as_str()), "{name}");
    }
    assert!(
        !tools.iter().any(|t| t["name"] == "mcp_files_read_file"),
        "not found, not listed"
    );

    // An activated tool is called like any other.
    let created = client.call(
        "mcp_forge_create_issue",
        json!({"owner": "o", "repo": "r", "title": "found by search"}),
    );
    assert!(text(&created).contains("found by search"), "{created}");

    // The invoke tool calls by name a tool that was never listed.
    let invoked = client.call(
        INVOKE,
        json!({"name": "mcp_files_read_file", "arguments": {"path": "/srv/notes.txt"}}),
    );
    assert_ne!(invoked["isError"], true, "{invoked}");
    assert!(text(&invoked).contains("/srv/notes.txt"), "{invoked}");

    // Bad arguments and unknown names are errors the model can read, naming the field.
    let unknown = client.call(INVOKE, json!({"name": "mcp_nowhere_nothing"}));
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert!(text(&unknown).contains("unknown tool `mcp_nowhere_nothing`"));
    let bad = client.call(SEARCH, json!({"query": ""}));
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(text(&bad).contains("`query`"), "{bad}");
    let bad = client.call(
        INVOKE,
        json!({"name": "mcp_forge_create_issue", "arguments": 7}),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(text(&bad).contains("`arguments`"), "{bad}");

    client.close();
    if let Some((gateway, _)) = gateway {
        drop(gateway);
    }
}

#[test]
fn typescript_client_over_stdio_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::TypeScript, false);
}

#[test]
fn python_client_over_stdio_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::Python, false);
}

#[test]
fn typescript_client_over_http_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::TypeScript, true);
}

#[test]
fn python_client_over_http_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::Python, true);
}

#[test]
fn each_http_client_has_its_own_activated_tools() {
    let world = World::new(0);
    let (gateway, url) = world.http_gateway(&["--discovery"], &[]);
    let mut finder = world.connect(Sdk::TypeScript, Target::Http(&url, None));
    let mut other = world.connect(Sdk::Python, Target::Http(&url, None));
    let (_, found) = finder.search("merge pull request");
    assert!(
        found.contains(&"mcp_forge_merge_pull_request".to_owned()),
        "{found:?}"
    );
    assert!(finder.wait_list_changed() >= 1);
    assert!(
        finder
            .tool_names()
            .contains(&"mcp_forge_merge_pull_request".to_owned())
    );
    let names = other.tool_names();
    assert!(
        !names.contains(&"mcp_forge_merge_pull_request".to_owned()),
        "another client's search changed this client's list: {names:?}"
    );
    finder.close();
    other.close();
    drop(gateway);
}

#[test]
fn scoped_view_cannot_find_or_call_outside_itself() {
    let world = World::new(0);
    let scope = [
        "--discovery",
        "--servers",
        "forge,pinned",
        "--tools",
        "forge/*",
        "--deny-tools",
        "*delete*",
    ];
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let mut client = world.connect(sdk, Target::Stdio(&scope));
        // Out of scope: a server not in --servers, a tool not in --tools, a denied tool.
        for (query, outside) in [
            ("read file contents", "mcp_files_read_file"),
            ("echo text", "mcp_pinned_echo"),
            ("delete repository", "mcp_forge_delete_repository"),
        ] {
            let (result, found) = client.search(query);
            assert!(
                !found.contains(&outside.to_owned()),
                "{sdk:?}: `{query}` found {outside} outside the view: {result}"
            );
            assert!(
                found.iter().all(|n| n.starts_with("mcp_forge_")),
                "{sdk:?}: {found:?}"
            );
            let invoked = client.call(INVOKE, json!({"name": outside, "arguments": {"text": "x"}}));
            assert_eq!(
                invoked["isError"], true,
                "{sdk:?}: invoked {outside}: {invoked}"
            );
            assert!(text(&invoked).contains("unknown tool"), "{invoked}");
        }
        // Nothing outside was activated either, and a direct call is refused too.
        let names = client.tool_names();
        assert!(
            names[2..]
                .iter()
                .all(|n| n.starts_with("mcp_forge_") && !n.contains("delete")),
            "{sdk:?}: {names:?}"
        );
        client.refused_call("mcp_forge_delete_repository", json!({}));
        client.refused_call("mcp_files_read_file", json!({"path": "/etc/passwd"}));
        // Inside the view, all works.
        let (_, found) = client.search("open pull request");
        assert!(
            found.contains(&"mcp_forge_create_pull_request".to_owned()),
            "{found:?}"
        );
        client.close();
    }
}

#[test]
fn auto_mode_switches_on_only_past_the_threshold() {
    // A small list (the mock's built-ins and two tool files) stays whole ...
    let small = World::new(0);
    let mut client = small.connect(Sdk::Python, Target::Stdio(&["--discovery=auto:20000"]));
    let names = client.tool_names();
    assert!(!names.contains(&SEARCH.to_owned()), "{names:?}");
    assert!(
        names.contains(&"mcp_files_read_file".to_owned()),
        "{names:?}"
    );
    client.refused_call(SEARCH, json!({"query": "x"}));
    client.close();

    // ... 400 more tools pass it: discovery switches on by itself.
    let large = World::new(400);
    let mut client = large.connect(Sdk::TypeScript, Target::Stdio(&["--discovery=auto:20000"]));
    let names = client.tool_names();
    assert_eq!(&names[..2], [SEARCH, INVOKE], "{names:?}");
    assert!(
        !names.contains(&"mcp_files_read_file".to_owned()),
        "{names:?}"
    );
    let (_, found) = client.search("read several files at once");
    assert!(
        found.contains(&"mcp_files_read_multiple_files".to_owned()),
        "{found:?}"
    );
    client.close();
}

#[test]
fn bad_discovery_modes_are_refused_with_what_is_expected() {
    let world = World::new(0);
    for bad in [
        "--discovery=auto:",
        "--discovery=auto:0",
        "--discovery=sometimes",
    ] {
        let mut command = Command::new(MCPR);
        command.args(world.serve_args(&[bad])).stdin(Stdio::null());
        world.isolate(&mut command);
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("auto:N"), "{bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "{bad}: {stderr}");
    }
}

#[tokio::test]
async fn sub_agent_handle_finds_only_inside_its_scope() {
    use indexmap::IndexMap;
    use mcp_runtime::gateway::{SubAgentHandle, SubAgentOptions, ToolFilter};
    use mcp_runtime::manager::{ManagerOptions, McpManager};

    let world = World::new(0);
    let manager = McpManager::new(
        ManagerOptions::default()
            .with_cache(None)
            .with_project(world.path("")),
    );
    let file = |name: &str| world.path(name).to_string_lossy().into_owned();
    let mut configs = IndexMap::new();
    configs.insert(
        "forge".to_owned(),
        support::mock(&["--tool-file", &file("forge.json")]),
    );
    configs.insert(
        "files".to_owned(),
        support::mock(&["--tool-file", &file("files.json")]),
    );
    manager.connect_servers(configs, IndexMap::new()).await;

    let whole = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    let found: Vec<String> = whole
        .search_tools("read several files at once", 3)
        .into_iter()
        .map(|hit| hit.tool.name)
        .collect();
    assert_eq!(
        found.first().map(String::as_str),
        Some("mcp_files_read_multiple_files"),
        "{found:?}"
    );

    let scoped = SubAgentHandle::new(
        manager.clone(),
        SubAgentOptions::default().with_filter(ToolFilter::default().with_servers(["forge"])),
    );
    let hits = scoped.search_tools("read several files at once", 10);
    assert!(
        hits.iter().all(|hit| hit.tool.server == "forge"),
        "found outside the scope: {hits:?}"
    );
    let hits = scoped.search_tools("merge pull request", 1);
    assert_eq!(hits[0].tool.name, "mcp_forge_merge_pull_request");
    manager.disconnect_all().await;
}

#[test]
fn discovery_list_is_a_small_fraction_of_the_full_list() {
    // 1,000 generated tools and the realistic sets; the alwaysLoad server stays listed.
    let world = World::new(1000);
    let size = |extra: &[&str]| {
        let mut client = world.connect(Sdk::Python, Target::Stdio(extra));
        let tools = client.tools();
        client.close();
        (
            tools.len(),
            serde_json::to_string(&tools).unwrap().chars().count(),
        )
    };
    let (full_tools, full_chars) = size(&[]);
    let (listed_tools, listed_chars) = size(&["--discovery"]);
    eprintln!(
        "full list: {full_tools} tools, ~{} tokens; discovery list: {listed_tools} tools, ~{} \
         tokens (characters / 4)",
        full_chars / 4,
        listed_chars / 4
    );
    assert!(full_tools > 1000, "{full_tools}");
    assert!(
        listed_chars * 20 <= full_chars,
        "discovery list is {listed_chars} characters, over 5% of {full_chars}"
    );
}
