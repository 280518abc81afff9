//! The search and invoke tools of discovery mode as the model sees them, and the checks of their
//! arguments: one definition, one set of limits and one set of errors for a host's discovery mode
//! (`session::HostToolSearch`) and for the gateway's (`mcpr serve --discovery`).

use serde_json::{Map, Value, json};

use tool_search::{one_line_summary, parameter_summary};

use super::McpTool;
use crate::client::ToolDefinition;

/// Matches returned by a search without `limit`.
pub const DEFAULT_LIMIT: usize = 5;
/// Most matches one search returns (and activates); a larger `limit` is cut to this.
pub const MAX_LIMIT: usize = 20;
/// Longest query accepted, in characters (a search stays cheap whatever a client sends).
pub const MAX_QUERY_CHARS: usize = 1000;
/// Longest description in a compact match, in characters.
pub const SUMMARY_CHARS: usize = 160;

/// Why the arguments of a search or invoke tool call were refused. The message names the tool
/// and the field, and says what would be accepted, so the model can correct its call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaToolError {
    /// `query` is missing, not a string, or blank.
    #[error("`{tool}`: `query` must be a non-empty string saying what the tool should do")]
    MissingQuery {
        /// The search tool's name.
        tool: String,
    },
    /// `query` is longer than [`MAX_QUERY_CHARS`].
    #[error("`{tool}`: `query` is too long ({chars} characters; at most {MAX_QUERY_CHARS})")]
    QueryTooLong {
        /// The search tool's name.
        tool: String,
        /// The query's length in characters.
        chars: usize,
    },
    /// `limit` is not a positive integer.
    #[error(
        "`{tool}`: `limit` must be a positive integer (at most {MAX_LIMIT} matches are returned)"
    )]
    BadLimit {
        /// The search tool's name.
        tool: String,
    },
    /// The invoke tool's `name` is missing, not a string, or blank.
    #[error(
        "`{tool}`: `name` must be the name of a tool (a non-empty string); find one with \
         `{search_tool}`"
    )]
    MissingName {
        /// The invoke tool's name.
        tool: String,
        /// The search tool's name, to point the model at it.
        search_tool: String,
    },
    /// The invoke tool's `arguments` is not an object.
    #[error("`{tool}`: `arguments` must be an object (the called tool's arguments)")]
    BadArguments {
        /// The invoke tool's name.
        tool: String,
    },
}

impl MetaToolError {
    /// The argument that was refused: `query`, `limit`, `name` or `arguments`.
    pub fn field(&self) -> &'static str {
        match self {
            MetaToolError::MissingQuery { .. } | MetaToolError::QueryTooLong { .. } => "query",
            MetaToolError::BadLimit { .. } => "limit",
            MetaToolError::MissingName { .. } => "name",
            MetaToolError::BadArguments { .. } => "arguments",
        }
    }
}

/// A checked call of the search tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// What the tool should do, trimmed, at most [`MAX_QUERY_CHARS`] characters.
    pub query: String,
    /// How many matches to return: 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when not given.
    pub limit: usize,
}

impl SearchRequest {
    /// Check the arguments of a call of the search tool named `tool`. A `limit` above
    /// [`MAX_LIMIT`] is cut to it (the model gets the most there are, not an error); zero, a
    /// negative number or a non-integer is refused.
    pub fn parse(
        tool: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<Self, MetaToolError> {
        let field = |name: &str| arguments.and_then(|a| a.get(name));
        let query = match field("query") {
            Some(Value::String(query)) if !query.trim().is_empty() => query.trim(),
            _ => {
                return Err(MetaToolError::MissingQuery {
                    tool: tool.to_owned(),
                });
            }
        };
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(MetaToolError::QueryTooLong {
                tool: tool.to_owned(),
                chars,
            });
        }
        let limit = match field("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(value) => match value.as_u64() {
                Some(n) if n > 0 => usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
                _ => {
                    return Err(MetaToolError::BadLimit {
                        tool: tool.to_owned(),
                    });
                }
            },
        };
        Ok(SearchRequest {
            query: query.to_owned(),
            limit,
        })
    }
}

/// A checked call of the invoke tool.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeRequest {
    /// The name of the tool to call, trimmed.
    pub name: String,
    /// Its arguments (`None` when not given or `null`).
    pub arguments: Option<Map<String, Value>>,
}

impl InvokeRequest {
    /// Check the arguments of a call of the invoke tool named `tool` (`search_tool` is named in
    /// the error that asks for a tool name).
    pub fn parse(
        tool: &str,
        search_tool: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<Self, MetaToolError> {
        let field = |name: &str| arguments.and_then(|a| a.get(name));
        let name = match field("name") {
            Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
            _ => {
                return Err(MetaToolError::MissingName {
                    tool: tool.to_owned(),
                    search_tool: search_tool.to_owned(),
                });
            }
        };
        let arguments = match field("arguments") {
            None | Some(Value::Null) => None,
            Some(Value::Object(inner)) => Some(inner.clone()),
            Some(_) => {
                return Err(MetaToolError::BadArguments {
                    tool: tool.to_owned(),
                });
            }
        };
        Ok(InvokeRequest { name, arguments })
    }
}

/// The search tool's definition, named `name`: what the model sees in place of the deferred
/// tools. Its schema states the limits [`SearchRequest::parse`] checks.
pub fn search_tool_definition(name: &str) -> ToolDefinition {
    definition(json!({
        "name": name,
        "description": "Find tools for a task among the available MCP tools. Returns the best \
            matches (name, one-line description, parameters) and loads them, so you can call \
            them by name from your next step. Describe what you need to do, e.g. \"create a \
            GitHub issue\".",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "maxLength": MAX_QUERY_CHARS,
                    "description": "What the tool should do, in a few words."
                },
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": format!("Most matches to return (default {DEFAULT_LIMIT}).")
                }
            },
            "required": ["query"]
        }
    }))
}

/// The invoke tool's definition, named `name`: calls a tool found with the search tool
/// (`search_tool`) by its name, for clients that never refresh their tool list.
pub fn invoke_tool_definition(name: &str, search_tool: &str) -> ToolDefinition {
    definition(json!({
        "name": name,
        "description": format!("Call a tool found with {search_tool} by its name, when it is \
            not in your tool list."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as the search returned it."},
                "arguments": {"type": "object", "description": "The tool's arguments."}
            },
            "required": ["name"]
        }
    }))
}

fn definition(value: Value) -> ToolDefinition {
    // Built from literals above, so it always has a name and an object schema.
    serde_json::from_value(value).expect("a valid tool definition")
}

/// One match as a search shows it: enough to choose and call the tool, far less than its full
/// definition (name, first line of the description, `name: type` parameters).
pub fn compact_match(tool: &McpTool) -> (String, Vec<String>) {
    (
        one_line_summary(
            tool.definition.description.as_deref().unwrap_or(""),
            SUMMARY_CHARS,
        ),
        parameter_summary(&tool.definition.input_schema.to_value()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Option<Map<String, Value>> {
        value.as_object().cloned()
    }

    fn search(value: Value) -> Result<SearchRequest, MetaToolError> {
        SearchRequest::parse("find", args(value).as_ref())
    }

    fn invoke(value: Value) -> Result<InvokeRequest, MetaToolError> {
        InvokeRequest::parse("call", "find", args(value).as_ref())
    }

    /// The error names the tool and the field, and `field()` says which.
    fn refused(result: Result<impl std::fmt::Debug, MetaToolError>, field: &str) {
        let error = result.expect_err("refused");
        assert_eq!(error.field(), field, "{error}");
        let message = error.to_string();
        assert!(message.contains(&format!("`{field}`")), "{message}");
        assert!(message.starts_with('`'), "names the tool: {message}");
    }

    #[test]
    fn a_search_without_a_usable_query_names_query() {
        assert!(matches!(
            SearchRequest::parse("find", None),
            Err(MetaToolError::MissingQuery { .. })
        ));
        for bad in [
            json!({}),
            json!({"query": 3}),
            json!({"query": "  "}),
            json!({"query": null}),
        ] {
            refused(search(bad), "query");
        }
        let long = "a".repeat(MAX_QUERY_CHARS + 1);
        let error = search(json!({"query": long})).unwrap_err();
        assert!(error.to_string().contains("too long"), "{error}");
        refused(
            search(json!({"query": "a".repeat(MAX_QUERY_CHARS + 1)})),
            "query",
        );
        // Exactly at the limit is fine (counted in characters, not bytes).
        assert!(search(json!({"query": "é".repeat(MAX_QUERY_CHARS)})).is_ok());
    }

    #[test]
    fn a_bad_limit_names_limit_and_a_large_one_is_cut() {
        for bad in [
            json!({"query": "diff", "limit": 0}),
            json!({"query": "diff", "limit": -1}),
            json!({"query": "diff", "limit": "5"}),
            json!({"query": "diff", "limit": 2.5}),
        ] {
            refused(search(bad), "limit");
        }
        assert_eq!(
            search(json!({"query": " diff ", "limit": 3})),
            Ok(SearchRequest {
                query: "diff".into(),
                limit: 3
            })
        );
        assert_eq!(
            search(json!({"query": "diff"})).unwrap().limit,
            DEFAULT_LIMIT
        );
        assert_eq!(
            search(json!({"query": "diff", "limit": null}))
                .unwrap()
                .limit,
            DEFAULT_LIMIT
        );
        assert_eq!(
            search(json!({"query": "diff", "limit": u64::MAX}))
                .unwrap()
                .limit,
            MAX_LIMIT
        );
    }

    #[test]
    fn an_invoke_without_a_name_or_with_bad_arguments_names_the_field() {
        for bad in [json!({}), json!({"name": 3}), json!({"name": " "})] {
            refused(invoke(bad), "name");
        }
        assert!(
            invoke(json!({}))
                .unwrap_err()
                .to_string()
                .contains("`find`")
        );
        for bad in [json!([]), json!("x"), json!(7)] {
            refused(invoke(json!({"name": "t", "arguments": bad})), "arguments");
        }
        let ok = invoke(json!({"name": " t ", "arguments": {"a": 1}})).unwrap();
        assert_eq!(ok.name, "t");
        assert_eq!(ok.arguments, args(json!({"a": 1})));
        assert_eq!(
            invoke(json!({"name": "t", "arguments": null}))
                .unwrap()
                .arguments,
            None
        );
    }

    #[test]
    fn the_definitions_state_the_limits_that_are_checked() {
        let search = search_tool_definition("find");
        assert_eq!(search.name, "find");
        let schema = &search.input_schema.to_value();
        assert_eq!(schema["required"], json!(["query"]));
        assert_eq!(schema["properties"]["limit"]["maximum"], json!(MAX_LIMIT));
        assert_eq!(
            schema["properties"]["query"]["maxLength"],
            json!(MAX_QUERY_CHARS)
        );
        let invoke = invoke_tool_definition("call", "find");
        assert_eq!(invoke.input_schema.to_value()["required"], json!(["name"]));
        assert!(invoke.description.unwrap_or_default().contains("find"));
    }

    #[test]
    fn a_compact_match_is_one_short_line_and_typed_parameters() {
        let tool = McpTool {
            name: "mcp_s_t".into(),
            server: "s".into(),
            tool: "t".into(),
            definition: serde_json::from_value(json!({
                "name": "t",
                "description": format!("  {}\nSecond line.", "é".repeat(500)),
                "inputSchema": {
                    "type": "object",
                    "properties": {"owner": {"type": "string"}, "limit": {"type": ["integer", "null"]}, "x": {}},
                    "required": ["owner"]
                }
            }))
            .unwrap(),
            label: "mcp:s".into(),
            deferred: false,
        };
        let (description, mut parameters) = compact_match(&tool);
        assert_eq!(description.chars().count(), SUMMARY_CHARS);
        assert!(description.ends_with('…') && !description.contains("Second"));
        parameters.sort();
        assert_eq!(
            parameters,
            ["limit?: integer|null", "owner: string", "x?: any"]
        );
        assert_eq!(
            one_line_summary("  First line.\nSecond line.", SUMMARY_CHARS),
            "First line."
        );
        assert!(parameter_summary(&json!({"type": "object"})).is_empty());
    }
}
