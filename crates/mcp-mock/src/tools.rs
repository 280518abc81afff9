//! The mock's tool catalogue: the definitions of its tools (built-in, generated, from a file)
//! and the behaviour each one has; the behaviours, and what each does, are `tool_calls`.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context as _;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject, Tool};

use crate::tool_calls;
pub(crate) use crate::tool_calls::{
    Behaviour, Builtin, HUGE_MAX_BYTES, WIRE_MARKER, text_result, tool_error,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

/// The tools the server offers, in listing order.
pub(crate) struct Catalog {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
}

/// One tool: its definition and its behaviour.
struct Entry {
    tool: Tool,
    behaviour: Behaviour,
}

impl Catalog {
    /// Built-ins, then `generated` tools `tool_0..`, then the tools of `tool_file`. A file tool
    /// with the name of a built-in or generated one replaces it in place; a name repeated within
    /// the file is listed twice (to test how clients cope), and calls reach the first.
    pub(crate) fn build(
        generated: usize,
        tool_file: Option<&Path>,
        flood_tool: bool,
        rich_tool: bool,
        notify_tools: bool,
        elicit_tool: bool,
        sample_tool: bool,
    ) -> anyhow::Result<Catalog> {
        let mut catalog = Catalog {
            entries: Vec::new(),
            by_name: HashMap::new(),
        };
        for (builtin, definition) in builtin_definitions() {
            let tool = serde_json::from_value::<Tool>(definition)
                .context("a built-in tool definition is invalid")?;
            catalog.add(tool, Behaviour::Builtin(builtin));
        }
        for i in 0..generated {
            let tool = serde_json::from_value::<Tool>(json!({
                "name": format!("tool_{i}"),
                "description": format!(
                    "Generated test tool number {i}: returns its `text` argument unchanged."
                ),
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Text to return."}}
                }
            }))
            .context("a generated tool definition is invalid")?;
            catalog.add(tool, Behaviour::EchoText);
        }
        if flood_tool {
            let tool = serde_json::from_value::<Tool>(json!({
                "name": "flood",
                "description": "Sends `count` notifications as fast as it can (log messages, with a tools/list_changed every 16th and progress when the call has a token), then returns \"sent <count> notifications\".",
                "inputSchema": {
                    "type": "object",
                    "properties": {"count": {"type": "integer", "minimum": 0, "description": "Number of notifications."}},
                    "required": ["count"]
                }
            }))
            .context("the flood tool definition is invalid")?;
            catalog.add(tool, Behaviour::Flood);
        }
        if rich_tool {
            let tool = serde_json::from_value::<Tool>(json!({
                "name": "rich",
                "description": "Returns one block of every content type, each with annotations, _meta and a field no protocol revision defines, plus structuredContent, a result _meta and an unknown result field.",
                "inputSchema": {"type": "object", "properties": {}}
            }))
            .context("the rich tool definition is invalid")?;
            catalog.add(tool, Behaviour::Rich);
        }
        if notify_tools {
            for definition in notify_definitions() {
                let tool = serde_json::from_value::<Tool>(definition)
                    .context("a notify tool definition is invalid")?;
                catalog.add(tool, Behaviour::Server);
            }
        }
        if elicit_tool {
            let tool = serde_json::from_value::<Tool>(json!({
                "name": "elicit",
                "description": "Asks the client for a name (elicitation/create) and returns its answer: \"accept <content>\", \"decline\" or \"cancel\".",
                "inputSchema": {
                    "type": "object",
                    "properties": {"message": {"type": "string", "description": "What to ask."}}
                }
            }))
            .context("the elicit tool definition is invalid")?;
            catalog.add(tool, Behaviour::Elicit);
        }
        if sample_tool {
            let tool = serde_json::from_value::<Tool>(json!({
                "name": "sample",
                "description": "Asks the client's model to answer `prompt` (sampling/createMessage) and returns \"sampled <text>\", or the client's error as an error result.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"prompt": {"type": "string", "description": "What to ask."}}
                }
            }))
            .context("the sample tool definition is invalid")?;
            catalog.add(tool, Behaviour::Sample);
        }
        if let Some(path) = tool_file {
            let mut in_file = std::collections::HashSet::new();
            for (tool, behaviour) in load_tool_file(path)? {
                if in_file.insert(tool.name.to_string()) {
                    catalog.add(tool, behaviour);
                } else {
                    // Listed again, as a broken server would; calls still reach the first.
                    catalog.entries.push(Entry { tool, behaviour });
                }
            }
        }
        Ok(catalog)
    }

    pub(crate) fn add(&mut self, tool: Tool, behaviour: Behaviour) {
        let entry = Entry { tool, behaviour };
        match self.by_name.get(entry.tool.name.as_ref()) {
            Some(&index) => self.entries[index] = entry,
            None => {
                self.by_name
                    .insert(entry.tool.name.to_string(), self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// Number of tools.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The definitions of tools `start..end` (clamped to the catalogue).
    pub(crate) fn definitions(&self, start: usize, end: usize) -> Vec<Tool> {
        let end = end.min(self.entries.len());
        let start = start.min(end);
        self.entries[start..end]
            .iter()
            .map(|entry| entry.tool.clone())
            .collect()
    }

    /// True if a tool has this name.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Runs tool `name` (which must exist: see [`Catalog::contains`]) with `arguments`.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(entry) = self.by_name.get(name).and_then(|&i| self.entries.get(i)) else {
            return tool_error(format!("unknown tool `{name}`"));
        };
        tool_calls::run(&entry.behaviour, name, arguments, context).await
    }
}

/// Whether tool `name` is run by the server rather than the catalogue (`--notify-tools`).
pub(crate) fn served_by_server(catalog: &Catalog, name: &str) -> bool {
    catalog
        .by_name
        .get(name)
        .and_then(|&i| catalog.entries.get(i))
        .is_some_and(|entry| matches!(entry.behaviour, Behaviour::Server))
}

/// The `--notify-tools` definitions.
fn notify_definitions() -> [Value; 2] {
    [
        json!({
            "name": "log",
            "description": "Sends `text` as a log message (notifications/message, logger `mock`) at `level` (default info), unless that is below the level set with logging/setLevel; returns \"logged\" or \"below the log level\".",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The log line."},
                    "level": {"type": "string", "enum": LOG_LEVELS, "description": "Its level."}
                },
                "required": ["text"]
            }
        }),
        json!({
            "name": "touch",
            "description": "Sends notifications/resources/updated for `uri` if the client subscribed to it; returns \"updated <uri>\" or \"not subscribed: <uri>\".",
            "inputSchema": {
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                "required": ["uri"]
            }
        }),
    ]
}

/// The levels of `logging/setLevel`, least severe first.
pub(crate) const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The built-in tool definitions, in listing order.
fn builtin_definitions() -> Vec<(Builtin, Value)> {
    let no_arguments = json!({"type": "object", "properties": {}});
    vec![
        (
            Builtin::Echo,
            json!({
                "name": "echo",
                "description": "Returns `text` unchanged, as one text content block.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "Text to return."},
                        "message": {"type": "string", "description": "Alias of `text`, used when `text` is absent."}
                    },
                    "required": ["text"]
                }
            }),
        ),
        (
            Builtin::Add,
            json!({
                "name": "add",
                "description": "Adds two numbers; returns the sum as text and as structured content.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "number", "description": "First addend."},
                        "b": {"type": "number", "description": "Second addend."}
                    },
                    "required": ["a", "b"]
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"sum": {"type": "number"}},
                    "required": ["sum"]
                }
            }),
        ),
        (
            Builtin::Sleep,
            json!({
                "name": "sleep",
                "description": "Sleeps `ms` milliseconds, then returns \"slept <ms> ms\". Stops early when cancelled.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "ms": {"type": "integer", "minimum": 0, "description": "Milliseconds to sleep."}
                    },
                    "required": ["ms"]
                }
            }),
        ),
        (
            Builtin::Fail,
            json!({
                "name": "fail",
                "description": "Always fails: returns a result with isError: true.",
                "inputSchema": no_arguments.clone()
            }),
        ),
        (
            Builtin::Image,
            json!({
                "name": "image",
                "description": "Returns a 1x1 PNG image.",
                "inputSchema": no_arguments.clone()
            }),
        ),
        (
            Builtin::Structured,
            json!({
                "name": "structured",
                "description": "Returns a weather reading as structured content (and as JSON text).",
                "inputSchema": no_arguments.clone(),
                "outputSchema": structured_output_schema()
            }),
        ),
        (
            Builtin::Mixed,
            json!({
                "name": "mixed",
                "description": "Returns one content block of each kind (text, image, audio, embedded resource, resource link) plus structured content.",
                "inputSchema": no_arguments.clone(),
                "outputSchema": {
                    "type": "object",
                    "properties": {"kinds": {"type": "array", "items": {"type": "string"}}},
                    "required": ["kinds"]
                }
            }),
        ),
        (
            Builtin::Progress,
            json!({
                "name": "progress",
                "description": "Sends `steps` progress notifications, `interval_ms` apart (when the call has a progress token), then returns \"done\".",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "steps": {"type": "integer", "minimum": 0, "default": 3, "description": "Number of notifications."},
                        "interval_ms": {"type": "integer", "minimum": 0, "default": 10, "description": "Milliseconds between notifications."}
                    }
                }
            }),
        ),
        (
            Builtin::Huge,
            json!({
                "name": "huge",
                "description": "Returns one text content block of exactly `bytes` bytes.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "bytes": {"type": "integer", "minimum": 0, "maximum": HUGE_MAX_BYTES, "description": "Size of the text in bytes."}
                    },
                    "required": ["bytes"]
                }
            }),
        ),
        (
            Builtin::Roots,
            json!({
                "name": "roots",
                "description": "Asks the client for its roots (roots/list) and returns their URIs, one per line.",
                "inputSchema": no_arguments
            }),
        ),
    ]
}

/// The output schema of the `structured` tool.
fn structured_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"temperature": {"type": "number"}, "unit": {"type": "string"}},
        "required": ["temperature", "unit"]
    })
}

/// Reads a `--tool-file`: a JSON array of tool definitions, each with an optional `result`.
fn load_tool_file(path: &Path) -> anyhow::Result<Vec<(Tool, Behaviour)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the --tool-file {}", path.display()))?;
    let items: Vec<JsonObject> = serde_json::from_str(&text)
        .with_context(|| format!("{}: expected a JSON array of tool objects", path.display()))?;
    let mut tools = Vec::with_capacity(items.len());
    for (index, mut item) in items.into_iter().enumerate() {
        let name = match item.get("name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => anyhow::bail!(
                "{}: tool #{index} needs a non-empty string `name`",
                path.display()
            ),
        };
        let result = item.remove("result");
        item.entry("inputSchema")
            .or_insert_with(|| json!({"type": "object"}));
        let tool = serde_json::from_value::<Tool>(Value::Object(item))
            .with_context(|| format!("{}: tool `{name}` is not a valid tool", path.display()))?;
        let behaviour = match result {
            Some(result) => Behaviour::Fixed(
                serde_json::from_value::<CallToolResult>(result).with_context(|| {
                    format!(
                        "{}: the `result` of tool `{name}` is not a CallToolResult",
                        path.display()
                    )
                })?,
            ),
            None => Behaviour::EchoArguments,
        };
        tools.push((tool, behaviour));
    }
    Ok(tools)
}
