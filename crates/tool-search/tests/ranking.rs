//! The tool index against a fixed set of tools, through the crate's public API: ranking with
//! near-miss distractors, identifier splitting, incremental updates, scoped search, and a
//! program's own tool type indexed through `Searchable`.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_search::{Ranking, Searchable, SearchableTool, ToolIndex};

fn tool(server: &str, name: &str, description: &str, params: Value) -> SearchableTool {
    SearchableTool::new(server, name)
        .with_description(description)
        .with_input_schema(json!({"type": "object", "properties": params}))
}

fn git() -> Vec<SearchableTool> {
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

fn fs() -> Vec<SearchableTool> {
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

fn browser() -> Vec<SearchableTool> {
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

fn index(ranking: Ranking) -> ToolIndex {
    let mut index = ToolIndex::with_ranking(ranking);
    index.set_server("git", &git());
    index.set_server("fs", &fs());
    index.set_server("web", &browser());
    index
}

fn top(index: &ToolIndex, query: &str) -> String {
    index
        .search(query, 5)
        .first()
        .map(|hit| hit.tool.name.clone())
        .unwrap_or_default()
}

#[test]
fn near_misses_rank_the_meant_tool_first() {
    let index = index(Ranking::Tuned);
    assert_eq!(
        top(&index, "what did I change that is not staged yet"),
        "git_diff_unstaged"
    );
    assert_eq!(top(&index, "show the staged changes"), "git_diff_staged");
    assert_eq!(top(&index, "is the working tree clean"), "git_status");
    assert_eq!(top(&index, "read the file src/main.rs"), "read_file");
    assert_eq!(
        top(&index, "read several files at once"),
        "read_multiple_files"
    );
    assert_eq!(top(&index, "click the submit button"), "browser_click");
    assert_eq!(top(&index, "hover over the menu"), "browser_hover");
}

/// Two forges with the same tools, as the GitHub and GitLab servers have.
fn forges() -> ToolIndex {
    let mut index = ToolIndex::new();
    for (server, brand) in [("github", "GitHub"), ("gitlab", "GitLab")] {
        index.set_server(
            server,
            &[
                tool(
                    server,
                    "create_issue",
                    &format!("Create a new issue in a {brand} repository"),
                    json!({}),
                ),
                tool(
                    server,
                    "list_issues",
                    &format!("List issues in a {brand} repository"),
                    json!({}),
                ),
            ],
        );
    }
    index
}

fn top_id(index: &ToolIndex, query: &str) -> String {
    index
        .search(query, 5)
        .first()
        .map(|hit| format!("{}/{}", hit.tool.server, hit.tool.name))
        .unwrap_or_default()
}

#[test]
fn the_server_a_query_names_wins_among_equal_tools() {
    let index = forges();
    assert_eq!(
        top_id(&index, "open an issue on GitHub"),
        "github/create_issue"
    );
    assert_eq!(
        top_id(&index, "open an issue in gitlab"),
        "gitlab/create_issue"
    );
    // Two words that make a server's name ("google maps" for google-maps) name it too.
    let mut index = forges();
    index.set_server(
        "google-maps",
        &[tool(
            "google-maps",
            "search_places",
            "Search for places",
            json!({}),
        )],
    );
    index.set_server(
        "brave-search",
        &[tool(
            "brave-search",
            "local_search",
            "Search for places and businesses",
            json!({}),
        )],
    );
    assert_eq!(
        top_id(&index, "search places with google maps"),
        "google-maps/search_places"
    );
}

#[test]
fn a_camel_case_brand_matches_its_lower_case_spelling() {
    let mut index = ToolIndex::new();
    index.set_server(
        "docs",
        &[
            tool(
                "docs",
                "lookup",
                "Find JavaScript API documentation",
                json!({}),
            ),
            tool(
                "docs",
                "lookup_java",
                "Find Java API documentation",
                json!({}),
            ),
        ],
    );
    assert_eq!(top(&index, "javascript api docs"), "lookup");
}

#[test]
fn the_first_sentence_says_more_than_the_details() {
    let mut index = ToolIndex::new();
    index.set_server(
        "web",
        &[
            tool(
                "web",
                "export_page",
                "Export the current page as a PDF document.",
                json!({}),
            ),
            tool(
                "web",
                "print_page",
                "Print the current page on a printer. Not for a PDF export: a PDF comes from \
                 export_page, and a PDF file is never written here.",
                json!({}),
            ),
        ],
    );
    assert_eq!(top(&index, "pdf of the current page"), "export_page");
}

#[test]
fn a_question_asks_to_read_not_to_change() {
    let mut index = ToolIndex::new();
    index.set_server(
        "db",
        &[
            tool(
                "db",
                "create_table",
                "Create a new table in the database",
                json!({}),
            ),
            tool(
                "db",
                "list_tables",
                "List all tables in the database",
                json!({}),
            ),
        ],
    );
    assert_eq!(
        top(&index, "what tables does the database have"),
        "list_tables"
    );
    assert_eq!(
        top(&index, "a new table for invoices in the database"),
        "create_table"
    );
}

#[test]
fn a_phrase_means_its_verb_not_its_words() {
    let mut index = ToolIndex::new();
    index.set_server(
        "cluster",
        &[
            tool(
                "cluster",
                "delete_job",
                "Delete a job from the cluster",
                json!({"name": {"type": "string"}}),
            ),
            tool(
                "cluster",
                "get_job",
                "Get a job's details and status, such as why it is stuck",
                json!({"name": {"type": "string"}}),
            ),
            tool(
                "cluster",
                "pull_image",
                "Pull a container image to every node",
                json!({"image": {"type": "string"}}),
            ),
        ],
    );
    // "tear down" says neither delete nor any word of the tool; "pull up" is no pull.
    assert_eq!(top(&index, "tear down the stuck job"), "delete_job");
    assert_eq!(top(&index, "pull up the nightly job"), "get_job");
    assert_eq!(top(&index, "pull the nightly image"), "pull_image");
}

#[test]
fn hits_are_ranked_bounded_and_positive() {
    let index = index(Ranking::Tuned);
    let hits = index.search("diff changes", 2);
    assert_eq!(hits.len(), 2);
    assert!(hits[0].score >= hits[1].score && hits[1].score > 0.0);
    assert!(index.search("diff changes", 0).is_empty());
    assert!(index.search("", 5).is_empty());
    assert!(
        index.search("the a of to", 5).is_empty(),
        "filler words alone match nothing"
    );
    assert!(index.search("kubernetes", 5).is_empty());
}

#[test]
fn identifiers_are_split_and_stemmed() {
    let index = index(Ranking::Tuned);
    // camelCase
    assert_eq!(top(&index, "screenshot"), "browserTakeScreenshot");
    // snake_case in a parameter name, and stemming (commits → commit, logs → log)
    assert_eq!(top(&index, "max count of commits in the logs"), "git_log");
    let plain = index_plain_top("screenshot");
    assert_eq!(
        plain, "browserTakeScreenshot",
        "plain BM25 splits identifiers too"
    );
}

fn index_plain_top(query: &str) -> String {
    top(&index(Ranking::Bm25), query)
}

#[test]
fn updates_replace_one_server_and_leave_the_others() {
    let mut index = index(Ranking::Tuned);
    assert_eq!(index.len(), 11);
    // The git server's tools change (list_changed): git_log goes, git_blame comes.
    let mut changed = git();
    changed.retain(|t| t.name != "git_log");
    changed.push(tool(
        "git",
        "git_blame",
        "Show who last changed each line of a file",
        json!({}),
    ));
    index.set_server("git", &changed);
    assert_eq!(index.len(), 11);
    assert!(
        index
            .search("commit logs", 5)
            .iter()
            .all(|h| h.tool.name != "git_log")
    );
    assert_eq!(top(&index, "who changed this line last"), "git_blame");
    assert_eq!(
        top(&index, "click the button"),
        "browser_click",
        "other servers untouched"
    );
    // The server goes away (reload): none of its tools are found.
    index.remove_server("git");
    assert_eq!(index.len(), 6);
    assert!(
        index
            .search("git diff staged blame", 10)
            .iter()
            .all(|h| h.tool.server != "git")
    );
    // And comes back.
    index.set_server("git", &git());
    assert_eq!(top(&index, "show the staged changes"), "git_diff_staged");
    index.set_server("git", &[]);
    assert_eq!(index.len(), 6);
}

#[test]
fn filtered_search_never_finds_outside_its_scope() {
    let index = index(Ranking::Tuned);
    let only_fs = |tool: &SearchableTool| tool.server == "fs";
    let hits = index.search_filtered("git diff staged changes", 5, &only_fs);
    assert!(hits.iter().all(|h| h.tool.server == "fs"), "{hits:?}");
    let hits = index.search_filtered("read file", 1, &only_fs);
    assert_eq!(hits[0].tool.name, "read_file");
    let hits = index.search_filtered("read file", 5, &|_| false);
    assert!(hits.is_empty());
    // k counts allowed hits only.
    let no_read_file = |tool: &SearchableTool| tool.name != "read_file";
    let hits = index.search_filtered("read file", 1, &no_read_file);
    assert_eq!(hits.len(), 1);
    assert_ne!(hits[0].tool.name, "read_file");
}

/// A program's own tool type, indexed through `Searchable`: ties in its own order.
#[derive(Debug, Clone, PartialEq)]
struct Command {
    id: u32,
    verb: &'static str,
    help: &'static str,
}

impl Searchable for Command {
    fn searchable(&self) -> Cow<'_, SearchableTool> {
        Cow::Owned(SearchableTool::new("shell", self.verb).with_description(self.help))
    }

    /// Newest first.
    fn tie_order(&self, other: &Self) -> Ordering {
        other.id.cmp(&self.id)
    }
}

#[test]
fn a_program_s_own_tool_type_comes_back_in_the_hits() {
    let old = Command {
        id: 1,
        verb: "archive",
        help: "Pack a directory into a tarball",
    };
    let new = Command {
        id: 2,
        ..old.clone()
    };
    let other = Command {
        id: 3,
        verb: "ping",
        help: "Check that a host answers",
    };
    let mut index = ToolIndex::new();
    index.set_server("shell", &[old.clone(), other.clone(), new.clone()]);
    let hits = index.search("pack this directory", 5);
    let found: Vec<&Command> = hits.iter().map(|hit| &hit.tool).collect();
    assert_eq!(found, [&new, &old], "equal scores in the type's own order");
    assert_eq!(hits[0].score, hits[1].score);
    assert_eq!(index.search("is the host up, ping it", 1)[0].tool, other);
}

#[test]
fn shared_tools_come_back_shared() {
    let tool = Arc::new(tool(
        "fs",
        "read_file",
        "Read a file",
        json!({"path": {"type": "string"}}),
    ));
    let mut index: ToolIndex<Arc<SearchableTool>> = ToolIndex::new();
    index.set_server("fs", std::slice::from_ref(&tool));
    let hits = index.search("read the file", 1);
    assert!(Arc::ptr_eq(&hits[0].tool, &tool));
}
