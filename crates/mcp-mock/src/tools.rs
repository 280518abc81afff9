//! The mock's tools: their definitions (built-in, generated, from a file) and what a call does.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam, Tool};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

/// A 1x1 RGBA PNG, for the `image` and `mixed` tools.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A WAV file with eight samples of 8-bit silence, for the `mixed` tool.
const WAV_BASE64: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The largest `huge` result we build, so that a typo cannot exhaust memory.
const HUGE_MAX_BYTES: u64 = 512 * 1024 * 1024;

/// How long the `roots` tool waits for the client's `roots/list` answer.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(10);

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

/// What a call to a tool does.
pub(crate) enum Behaviour {
    Builtin(Builtin),
    /// Generated tools: echo `text`, or the arguments as JSON when there is no `text`.
    EchoText,
    /// File tools with a `result`.
    Fixed(CallToolResult),
    /// File tools without a `result`: the arguments as JSON text.
    EchoArguments,
    /// `--flood-tool`: a burst of notifications, then a result.
    Flood,
    /// `--rich-tool`: [`rich_result`], every optional field set.
    Rich,
    /// `--notify-tools`: run by the server, which holds the log level and subscriptions.
    Server,
    /// `--elicit-tool`: asks the client for a name.
    Elicit,
    /// `--sample-tool`: asks the client's model for a completion.
    Sample,
}

/// The built-in tools.
#[derive(Clone, Copy)]
pub(crate) enum Builtin {
    Echo,
    Add,
    Sleep,
    Fail,
    Image,
    Structured,
    Mixed,
    Progress,
    Huge,
    Roots,
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
        match &entry.behaviour {
            Behaviour::Builtin(builtin) => call_builtin(*builtin, &arguments, context).await,
            Behaviour::EchoText => match arguments.get("text") {
                Some(Value::String(text)) => text_result(text.clone()),
                _ => text_result(Value::Object(arguments).to_string()),
            },
            Behaviour::Fixed(result) => result.clone(),
            Behaviour::EchoArguments => text_result(Value::Object(arguments).to_string()),
            Behaviour::Flood => flood(&arguments, context).await.unwrap_or_else(tool_error),
            Behaviour::Rich => rich(),
            Behaviour::Server => tool_error(format!("`{name}` is run by the server")),
            Behaviour::Elicit => elicit(&arguments, context).await.unwrap_or_else(tool_error),
            Behaviour::Sample => sample(&arguments, context).await.unwrap_or_else(tool_error),
        }
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

/// A successful result with one text block.
pub(crate) fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A tool error (`isError: true`) with one text block: bad arguments are reported this way, so
/// that a model can read and fix them.
pub(crate) fn tool_error(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The result of a call cancelled by the client (rmcp does not send it; it only ends the task).
fn cancelled() -> CallToolResult {
    tool_error("cancelled")
}

/// Reads a non-negative integer argument, or `default` when absent.
fn integer_arg(arguments: &JsonObject, name: &str, default: Option<u64>) -> Result<u64, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => default.ok_or_else(|| format!("missing argument `{name}`")),
        Some(value) => value.as_u64().ok_or_else(|| {
            format!("argument `{name}` must be a non-negative integer, got {value}")
        }),
    }
}

async fn call_builtin(
    builtin: Builtin,
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    let result = match builtin {
        Builtin::Echo => echo(arguments),
        Builtin::Add => add(arguments),
        Builtin::Sleep => sleep(arguments, context).await,
        Builtin::Fail => Ok(tool_error("failure requested")),
        Builtin::Image => Ok(CallToolResult::success(vec![ContentBlock::image(
            PNG_BASE64,
            "image/png",
        )])),
        Builtin::Structured => Ok(structured()),
        Builtin::Mixed => mixed(),
        Builtin::Progress => progress(arguments, context).await,
        Builtin::Huge => huge(arguments),
        Builtin::Roots => roots(context).await,
    };
    result.unwrap_or_else(tool_error)
}

fn echo(arguments: &JsonObject) -> Result<CallToolResult, String> {
    match arguments.get("text").or_else(|| arguments.get("message")) {
        Some(Value::String(text)) => Ok(text_result(text.clone())),
        Some(other) => Err(format!("argument `text` must be a string, got {other}")),
        None => Err("missing argument `text`".to_string()),
    }
}

fn add(arguments: &JsonObject) -> Result<CallToolResult, String> {
    let number = |name: &str| match arguments.get(name) {
        Some(Value::Number(n)) => Ok(n.clone()),
        Some(other) => Err(format!("argument `{name}` must be a number, got {other}")),
        None => Err(format!("missing argument `{name}`")),
    };
    let (a, b) = (number("a")?, number("b")?);
    // Integers stay integers (`2 + 3` gives `5`, not `5.0`).
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => Value::from(a + b),
        _ => {
            let sum = a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN);
            serde_json::Number::from_f64(sum)
                .map(Value::Number)
                .ok_or_else(|| format!("the sum of {a} and {b} is not a finite number"))?
        }
    };
    let mut result = text_result(sum.to_string());
    result.structured_content = Some(json!({"sum": sum}));
    Ok(result)
}

async fn sleep(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let ms = integer_arg(arguments, "ms", None)?;
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(text_result(format!("slept {ms} ms"))),
        () = context.ct.clone().cancelled_owned() => Ok(cancelled()),
    }
}

fn structured() -> CallToolResult {
    let value = json!({"temperature": 21.5, "unit": "C"});
    let mut result = text_result(value.to_string());
    result.structured_content = Some(value);
    result
}

fn mixed() -> Result<CallToolResult, String> {
    // Built from JSON so that every block has exactly its wire shape.
    let result = json!({
        "content": [
            {"type": "text", "text": "mixed content"},
            {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
            {"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"},
            {"type": "resource", "resource": {
                "uri": "mock://resource", "mimeType": "text/plain", "text": "embedded resource text"
            }},
            {"type": "resource_link", "uri": "mock://link", "name": "link",
             "description": "A linked resource", "mimeType": "text/plain"}
        ],
        "structuredContent": {"kinds": ["text", "image", "audio", "resource", "resource_link"]},
        "isError": false
    });
    serde_json::from_value::<CallToolResult>(result).map_err(|e| format!("internal: {e}"))
}

/// The result of the `rich` tool (`--rich-tool`) in the wire format: every content type, each
/// with `annotations`, `_meta` and a field no protocol revision defines (`x-mock-future`);
/// `structuredContent`; a result `_meta`; and an unknown result field. Over stdio and legacy
/// SSE (which go through the mock's transport wrapper) it is sent exactly as this JSON; over
/// streamable HTTP the client gets rmcp's typed result, without the unknown fields and with
/// this JSON under `_meta["mcp-mock/wire"]`.
pub fn rich_result() -> Value {
    let annotations = |audience: Value, priority: f64| json!({"audience": audience, "priority": priority, "lastModified": "2025-05-01T12:00:00Z"});
    json!({
        "content": [
            {"type": "text", "text": "rich text: ünïcödé ✓",
             "annotations": annotations(json!(["user", "assistant"]), 0.9),
             "_meta": {"mock/block": "text"}, "x-mock-future": {"kept": true}},
            {"type": "image", "data": PNG_BASE64, "mimeType": "image/png",
             "annotations": annotations(json!(["user"]), 0.2),
             "_meta": {"mock/block": "image"}, "x-mock-future": 1},
            {"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav",
             "annotations": annotations(json!(["assistant"]), 0.3),
             "_meta": {"mock/block": "audio"}, "x-mock-future": [1, 2]},
            {"type": "resource",
             "resource": {"uri": "mock://rich", "mimeType": "text/plain", "text": "embedded",
                          "_meta": {"mock/resource": true}},
             "annotations": annotations(json!(["user"]), 0.4),
             "_meta": {"mock/block": "resource"}, "x-mock-future": "resource"},
            {"type": "resource_link", "uri": "mock://rich-link", "name": "rich-link",
             "title": "Rich link", "description": "A linked resource", "mimeType": "text/plain",
             "size": 42,
             "annotations": annotations(json!(["assistant"]), 0.5),
             "_meta": {"mock/block": "resource_link"}, "x-mock-future": null}
        ],
        "structuredContent": {"kinds": ["text", "image", "audio", "resource", "resource_link"]},
        "isError": false,
        "_meta": {"mock/result": {"trace": "rich-1"}},
        "x-mock-future-result": {"nested": [1, 2, 3]}
    })
}

/// The `_meta` key under which a result travels whole to [`crate::transport::MockTransport`],
/// which sends it instead of rmcp's typed result (rmcp's types drop unknown fields).
pub(crate) const WIRE_MARKER: &str = "mcp-mock/wire";

fn rich() -> CallToolResult {
    let wire = rich_result();
    let mut result = match serde_json::from_value::<CallToolResult>(wire.clone()) {
        Ok(result) => result,
        Err(e) => return tool_error(format!("internal: {e}")),
    };
    let meta = result.meta.get_or_insert_with(Default::default);
    meta.0.insert(WIRE_MARKER.into(), wire);
    result
}

async fn progress(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let steps = integer_arg(arguments, "steps", Some(3))?;
    let interval = Duration::from_millis(integer_arg(arguments, "interval_ms", Some(10))?);
    let token = context.meta.get_progress_token();
    for step in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = context.ct.clone().cancelled_owned() => return Ok(cancelled()),
        }
        if let Some(token) = &token {
            let param = ProgressNotificationParam::new(token.clone(), step as f64)
                .with_total(steps as f64)
                .with_message(format!("step {step} of {steps}"));
            if context.peer.notify_progress(param).await.is_err() {
                // The connection is gone; nobody will read the result either.
                return Ok(cancelled());
            }
        }
    }
    Ok(text_result("done"))
}

/// Sends `count` notifications without pausing, to test that clients bound what they queue.
#[allow(deprecated)] // logging is current in the protocol versions the mock speaks
async fn flood(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
    let count = integer_arg(arguments, "count", None)?;
    let token = context.meta.get_progress_token();
    for n in 1..=count {
        let sent = if n % 16 == 0 {
            context.peer.notify_tool_list_changed().await.is_ok()
        } else if let (Some(token), 1) = (&token, n % 2) {
            let param = ProgressNotificationParam::new(token.clone(), n as f64)
                .with_message(format!("flood {n}"));
            context.peer.notify_progress(param).await.is_ok()
        } else {
            let param = LoggingMessageNotificationParam::new(
                LoggingLevel::Info,
                json!(format!("flood {n}")),
            );
            context.peer.notify_logging_message(param).await.is_ok()
        };
        if !sent {
            return Ok(cancelled());
        }
    }
    Ok(text_result(format!("sent {count} notifications")))
}

fn huge(arguments: &JsonObject) -> Result<CallToolResult, String> {
    let bytes = integer_arg(arguments, "bytes", None)?;
    if bytes > HUGE_MAX_BYTES {
        return Err(format!(
            "`bytes` must be at most {HUGE_MAX_BYTES}, got {bytes}"
        ));
    }
    let len = usize::try_from(bytes).map_err(|_| format!("`bytes` is too large: {bytes}"))?;
    Ok(text_result("x".repeat(len)))
}

// Roots are deprecated by SEP-2577 but still part of the protocol versions we serve, and
// clients must answer them; this tool exists to test exactly that.
#[allow(deprecated)]
async fn roots(context: &RequestContext<RoleServer>) -> Result<CallToolResult, String> {
    let request = context.peer.list_roots();
    let listed = tokio::select! {
        listed = tokio::time::timeout(ROOTS_TIMEOUT, request) => listed,
        () = context.ct.clone().cancelled_owned() => return Ok(cancelled()),
    };
    match listed {
        Ok(Ok(result)) => Ok(text_result(
            result
                .roots
                .iter()
                .map(|root| root.uri.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )),
        Ok(Err(e)) => Err(format!("roots/list failed: {e}")),
        Err(_) => Err(format!(
            "roots/list got no answer within {} s",
            ROOTS_TIMEOUT.as_secs()
        )),
    }
}

/// Ask the client for a name and return its answer as text. Bounded by the client's own
/// call: a cancelled call stops waiting.
async fn elicit(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let message = arguments
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("What is your name?");
    let params = serde_json::from_value::<rmcp::model::ElicitRequestParams>(json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    }))
    .map_err(|e| format!("cannot build the request: {e}"))?;
    let request =
        rmcp::model::ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
    let asked = tokio::select! {
        asked = context.peer.send_request(request) => asked,
        () = context.ct.clone().cancelled_owned() => return Ok(cancelled()),
    };
    let answer = match asked.map_err(|e| format!("elicitation/create failed: {e}"))? {
        rmcp::model::ClientResult::ElicitResult(answer) => answer,
        other => return Err(format!("elicitation/create got a wrong answer: {other:?}")),
    };
    Ok(text_result(match answer.action {
        rmcp::model::ElicitationAction::Accept => {
            format!("accept {}", answer.content.unwrap_or(Value::Null))
        }
        rmcp::model::ElicitationAction::Decline => "decline".to_owned(),
        _ => "cancel".to_owned(),
    }))
}

/// Ask the client's model to answer a prompt and return the text it sent back. Bounded by the
/// client's own call: a cancelled call stops waiting.
// Sampling is deprecated by the 2026-07-28 revision, but still asked by older servers.
#[allow(deprecated)]
async fn sample(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let prompt = arguments
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or("Say hello.");
    let params = serde_json::from_value::<rmcp::model::CreateMessageRequestParams>(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100,
    }))
    .map_err(|e| format!("cannot build the request: {e}"))?;
    let request = rmcp::model::ServerRequest::CreateMessageRequest(
        rmcp::model::CreateMessageRequest::new(params),
    );
    let asked = tokio::select! {
        asked = context.peer.send_request(request) => asked,
        () = context.ct.clone().cancelled_owned() => return Ok(cancelled()),
    };
    let answer = match asked.map_err(|e| format!("sampling/createMessage failed: {e}"))? {
        rmcp::model::ClientResult::CreateMessageResult(answer) => answer,
        other => {
            return Err(format!(
                "sampling/createMessage got a wrong answer: {other:?}"
            ));
        }
    };
    let answer = serde_json::to_value(&answer).unwrap_or_default();
    let text = answer
        .pointer("/content/text")
        .or_else(|| answer.pointer("/content/0/text"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(text_result(format!("sampled {text}")))
}
