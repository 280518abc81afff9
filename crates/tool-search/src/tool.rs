//! What the index is given: a tool's text ([`SearchableTool`]), and the [`Searchable`] trait
//! through which a program indexes its own tool type and gets it back in the hits.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::Value;

/// A tool as the index reads it: its name, server, title, description and input schema.
///
/// ```
/// use tool_search::SearchableTool;
///
/// let tool = SearchableTool::new("git", "git_log")
///     .with_description("Shows the commit logs")
///     .with_input_schema(serde_json::json!({
///         "type": "object",
///         "properties": {"max_count": {"type": "integer"}},
///     }));
/// assert_eq!(tool.server, "git");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchableTool {
    /// The tool's own name (`git_status`, `readFile`): split into words and weighed most.
    pub name: String,
    /// The server (or any group) the tool belongs to: a query that names it prefers its tools.
    pub server: String,
    /// A human-readable title, if any.
    pub title: Option<String>,
    /// What the tool does. Its first sentence weighs more than the rest.
    pub description: Option<String>,
    /// The JSON Schema of the tool's input (`null` for none): the names and descriptions of its
    /// `properties` are indexed, and the kinds of value they take (a path, a URL, a date…).
    pub input_schema: Value,
}

impl SearchableTool {
    /// A tool of `server` named `name`, with no title, description or input schema yet.
    pub fn new(server: impl Into<String>, name: impl Into<String>) -> Self {
        SearchableTool {
            name: name.into(),
            server: server.into(),
            title: None,
            description: None,
            input_schema: Value::Null,
        }
    }

    /// The tool with `title`.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The tool with `description`.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The tool with `schema` as its input schema.
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }
}

/// A tool the index can hold: the index reads its text once, when it is added, keeps the tool
/// itself, and hands it back (cloned) in the hits. Implement it for a program's own tool type;
/// [`SearchableTool`] is one.
pub trait Searchable: Clone {
    /// The tool's text, as the index reads it (borrowed when the tool holds it as is).
    fn searchable(&self) -> Cow<'_, SearchableTool>;

    /// How two tools with the same score are ordered in the results, so that equal scores
    /// always come out in the same order. Best made a total order over the indexed tools.
    fn tie_order(&self, other: &Self) -> Ordering;

    /// Names the tool answers to besides its own [`SearchableTool::name`], such as the name a
    /// host shows the model for it. A query that is exactly the tool's own name or one of these
    /// (ignoring case and surrounding blanks) ranks the tool first. None by default.
    fn other_names(&self) -> Vec<String> {
        Vec::new()
    }
}

impl Searchable for SearchableTool {
    fn searchable(&self) -> Cow<'_, SearchableTool> {
        Cow::Borrowed(self)
    }

    /// By server, then name.
    fn tie_order(&self, other: &Self) -> Ordering {
        (&self.server, &self.name).cmp(&(&other.server, &other.name))
    }
}

/// A shared tool is indexed as the tool (and a hit costs a reference count, not a copy).
impl<T: Searchable> Searchable for Arc<T> {
    fn searchable(&self) -> Cow<'_, SearchableTool> {
        T::searchable(self)
    }

    fn tie_order(&self, other: &Self) -> Ordering {
        T::tie_order(self, other)
    }

    fn other_names(&self) -> Vec<String> {
        T::other_names(self)
    }
}
