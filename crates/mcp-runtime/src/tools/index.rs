//! The tool index over mcpr's tools: the `tool-search` engine reading an [`McpTool`] (its own
//! name, title, description, server and input schema), and ordering equal scores by the name the
//! model sees, which is unique.

use std::borrow::Cow;
use std::cmp::Ordering;

use tool_search::{Searchable, SearchableTool};

use super::McpTool;

/// Search over many tools, so a host can defer their definitions and let the model find the
/// few it needs (see the `tool-search` crate for the ranking).
///
/// ```
/// use mcp_runtime::tools::{McpTool, ToolIndex};
///
/// let tool = |name: &str, description: &str| McpTool {
///     name: format!("mcp_git_{name}"),
///     server: "git".into(),
///     tool: name.into(),
///     definition: serde_json::from_value(
///         serde_json::json!({"name": name, "description": description}),
///     )
///     .unwrap(),
///     label: "mcp:git".into(),
///     deferred: false,
/// };
/// let mut index = ToolIndex::new();
/// index.set_server("git", &[
///     tool("git_status", "Shows the working tree status"),
///     tool("git_diff_unstaged", "Shows changes in the working directory that are not yet staged"),
/// ]);
/// let hits = index.search("unstaged changes", 5);
/// assert_eq!(hits[0].tool.tool, "git_diff_unstaged");
/// ```
pub type ToolIndex = tool_search::ToolIndex<McpTool>;

/// A ranked match: the [`McpTool`] and its score.
pub type SearchHit = tool_search::SearchHit<McpTool>;

impl Searchable for McpTool {
    fn searchable(&self) -> Cow<'_, SearchableTool> {
        let definition = &self.definition;
        let mut text = SearchableTool::new(&self.server, &self.tool)
            .with_input_schema(definition.input_schema.to_value());
        text.title = definition.title.clone();
        text.description = definition.description.clone();
        Cow::Owned(text)
    }

    fn tie_order(&self, other: &Self) -> Ordering {
        self.name.cmp(&other.name)
    }

    /// The name the model sees (`mcp_git_git_log`): typed as the query, it finds the tool first.
    fn other_names(&self) -> Vec<String> {
        vec![self.name.clone()]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(server: &str, name: &str, definition: serde_json::Value) -> McpTool {
        McpTool {
            name: name.into(),
            server: server.into(),
            tool: definition["name"].as_str().unwrap_or_default().into(),
            definition: serde_json::from_value(definition).unwrap(),
            label: format!("mcp:{server}"),
            deferred: false,
        }
    }

    #[test]
    fn a_tool_is_read_by_its_own_name_title_description_and_schema() {
        let tool = tool(
            "git",
            "mcp_git_log",
            json!({"name": "git_log", "title": "Commit history",
                   "description": "Shows the commit logs",
                   "inputSchema": {"type": "object", "properties": {"max_count": {}}}}),
        );
        let text = tool.searchable();
        assert_eq!(
            (text.server.as_str(), text.name.as_str()),
            ("git", "git_log")
        );
        assert_eq!(text.title.as_deref(), Some("Commit history"));
        assert_eq!(text.description.as_deref(), Some("Shows the commit logs"));
        assert!(text.input_schema["properties"]["max_count"].is_object());
        let mut index = ToolIndex::new();
        index.set_server("git", std::slice::from_ref(&tool));
        assert_eq!(
            index.search("history", 1)[0].tool,
            tool,
            "the title is read"
        );
    }

    #[test]
    fn the_name_the_model_sees_as_the_query_finds_the_tool_first() {
        let mut index = ToolIndex::new();
        index.set_server(
            "s",
            &[
                tool(
                    "s",
                    "mcp_s_get_env",
                    json!({"name": "get_env", "description": "Returns all environment variables"}),
                ),
                tool(
                    "s",
                    "mcp_s_print_env",
                    json!({"name": "print_env",
                           "description": "Get the environment: get env vars and env values"}),
                ),
            ],
        );
        // Its words alone rank the other tool first.
        assert_eq!(index.search("get env", 1)[0].tool.name, "mcp_s_print_env");
        for query in ["mcp_s_get_env", "get_env"] {
            assert_eq!(
                index.search(query, 2)[0].tool.name,
                "mcp_s_get_env",
                "{query}"
            );
        }
    }

    #[test]
    fn equal_scores_go_by_the_name_the_model_sees() {
        // The same tool on two servers: only the names the model sees tell them apart.
        let echo = json!({"name": "echo", "description": "Echo the message back"});
        let mut index = ToolIndex::new();
        index.set_server("a", &[tool("a", "mcp_z_echo", echo.clone())]);
        index.set_server("b", &[tool("b", "mcp_y_echo", echo)]);
        let hits = index.search("echo the message", 5);
        let names: Vec<&str> = hits.iter().map(|hit| hit.tool.name.as_str()).collect();
        assert_eq!(names, ["mcp_y_echo", "mcp_z_echo"]);
        assert_eq!(hits[0].score, hits[1].score);
    }
}
