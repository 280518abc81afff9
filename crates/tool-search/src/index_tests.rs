//! Unit tests of the tool index (ranking and updates).
use super::*;

fn tool(server: &str, name: &str, description: &str) -> SearchableTool {
    tool_taking(
        server,
        name,
        description,
        serde_json::json!({"type": "object"}),
    )
}

fn tool_taking(
    server: &str,
    name: &str,
    description: &str,
    schema: serde_json::Value,
) -> SearchableTool {
    SearchableTool::new(server, name)
        .with_description(description)
        .with_input_schema(schema)
}

#[test]
fn default_is_the_tuned_ranking_and_shareable() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ToolIndex>();
    let mut index = ToolIndex::default();
    assert_eq!(index.ranking(), Ranking::Tuned);
    index.set_server("fs", &[tool("fs", "list_files", "Lists files")]);
    assert_eq!(index.search("listing", 5).len(), 1, "stemmed");
}

#[test]
fn plain_bm25_ranks_and_updates() {
    let mut index = ToolIndex::with_ranking(Ranking::Bm25);
    index.set_server(
        "fs",
        &[
            tool("fs", "read_file", "Read a file"),
            tool("fs", "write_file", "Write a file"),
        ],
    );
    index.set_server("web", &[tool("web", "fetch", "Fetch a URL")]);
    assert_eq!(index.len(), 3);
    assert_eq!(index.search("write", 5)[0].tool.name, "write_file");
    assert!(index.search("nothing matches this", 5).is_empty());
    index.set_server("fs", &[tool("fs", "delete_file", "Delete a file")]);
    assert_eq!(index.len(), 2);
    assert!(index.search("write", 5).is_empty());
    index.remove_server("web");
    assert_eq!(index.len(), 1);
    assert!(index.search("url", 5).is_empty());
    let hits = index.search_filtered("file", 5, &|tool| tool.server != "fs");
    assert!(hits.is_empty());
}

#[test]
fn a_tool_pointing_elsewhere_loses_the_tie() {
    let mut index = ToolIndex::new();
    index.set_server(
        "fs",
        &[
            tool(
                "fs",
                "read_file",
                "Read a file. DEPRECATED: use read_text instead.",
            ),
            tool("fs", "read_text", "Read a file."),
        ],
    );
    assert_eq!(index.search("read a file", 5)[0].tool.name, "read_text");
}

#[test]
fn two_words_find_what_a_tool_spells_as_one() {
    let mut index = ToolIndex::new();
    index.set_server(
        "git",
        &[
            tool("git", "git_checkout", "Switches branches"),
            tool("git", "git_log", "Shows the commit logs"),
        ],
    );
    assert_eq!(
        index.search("check out the tag", 5)[0].tool.name,
        "git_checkout"
    );
}

#[test]
fn the_request_verb_and_open_as_a_verb_decide_between_siblings() {
    let mut index = ToolIndex::new();
    index.set_server(
        "forge",
        &[
            tool("forge", "create_issue", "Create a new issue"),
            tool("forge", "list_issues", "List issues with filters"),
        ],
    );
    assert_eq!(
        index.search("open an issue", 5)[0].tool.name,
        "create_issue"
    );
    assert_eq!(
        index.search("list the open issues", 5)[0].tool.name,
        "list_issues"
    );
}

#[test]
fn removing_a_server_unlinks_its_phrases_and_weights() {
    let mut index = ToolIndex::new();
    index.set_server("a", &[tool("a", "pull_request", "Open a pull request")]);
    assert_eq!(index.search("pull request", 5).len(), 1);
    index.remove_server("a");
    assert!(index.search("pull request", 5).is_empty());
    index.set_server("b", &[tool("b", "merge", "Merge a pull request")]);
    assert_eq!(index.search("pull request", 5)[0].tool.name, "merge");
}

#[test]
fn a_request_to_read_prefers_a_tool_that_reads() {
    let mut index = ToolIndex::new();
    index.set_server(
        "chat",
        &[
            tool("chat", "post_message", "Post a message to a channel"),
            tool("chat", "get_channel_history", "Messages of a channel"),
        ],
    );
    let hits = index.search("what has been posted in the channel", 2);
    assert_eq!(hits[0].tool.name, "get_channel_history");
    let hits = index.search("post a message in the channel", 2);
    assert_eq!(hits[0].tool.name, "post_message");
}

#[test]
fn a_value_the_request_carries_finds_the_tool_that_takes_it() {
    let mut index = ToolIndex::new();
    let takes = |param: &str| serde_json::json!({"type": "object", "properties": {param: {"type": "string"}}});
    index.set_server(
        "viewer",
        &[
            tool_taking("viewer", "open_page", "Open it", takes("url")),
            tool_taking("viewer", "open_file", "Open it", takes("path")),
        ],
    );
    assert_eq!(
        index.search("open ~/notes/todo.md", 2)[0].tool.name,
        "open_file"
    );
    assert_eq!(
        index.search("open https://example.org/todo", 2)[0]
            .tool
            .name,
        "open_page"
    );
}

#[test]
fn a_tool_matching_one_word_of_the_request_loses_ground_to_one_matching_it_all() {
    let tools = [
        tool("files", "read_file", "Lines of a file on disk"),
        tool("files", "write_file", "Write a file to disk"),
        tool("places", "local_search", "Search for local businesses"),
    ];
    // How far ahead the full match is: its score over the one-word match's.
    let lead = |query_coverage: f32| {
        let mut index = ToolIndex::with_params(RankingParams {
            query_coverage,
            ..RankingParams::default()
        });
        index.set_server("files", &tools[..2]);
        index.set_server("places", &tools[2..]);
        let hits = index.search("lines of a file on the local disk", 3);
        let score = |name: &str| hits.iter().find(|h| h.tool.name == name).unwrap().score;
        score("read_file") / score("local_search")
    };
    let (with, without) = (lead(RankingParams::default().query_coverage), lead(0.0));
    assert!(with > without * 1.1, "{with} against {without}");
}

#[test]
fn a_query_that_is_exactly_a_tool_name_ranks_that_tool_first() {
    let mut index = ToolIndex::new();
    index.set_server(
        "s",
        &[
            tool("s", "get_env", "Returns all environment variables"),
            tool(
                "s",
                "print_env",
                "Get the environment: get env vars and env values",
            ),
            tool("s", "search", "Look things up"),
            tool(
                "s",
                "search_repositories",
                "Search GitHub repositories; search by name",
            ),
        ],
    );
    for name in ["get_env", "  SEARCH "] {
        let hits = index.search(name, 2);
        assert_eq!(hits[0].tool.name, name.trim().to_lowercase(), "{hits:?}");
        assert!(hits[0].score > hits[1].score, "{hits:?}");
    }
    // Other words still rank by what they say.
    assert_eq!(index.search("get env", 1)[0].tool.name, "print_env");
    // Gone with its server.
    index.remove_server("s");
    assert!(index.search("get_env", 2).is_empty());
}
