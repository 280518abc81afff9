//! What the mock's tools do when called: the behaviour behind each entry of the catalogue
//! (`tools`), the built-ins' results, and the helpers that build results and read arguments.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

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

/// A 1x1 RGBA PNG, for the `image` and `mixed` tools.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A WAV file with eight samples of 8-bit silence, for the `mixed` tool.
const WAV_BASE64: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The largest `huge` result we build, so that a typo cannot exhaust memory.
pub(crate) const HUGE_MAX_BYTES: u64 = 512 * 1024 * 1024;

/// How long the `roots` tool waits for the client's `roots/list` answer.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a call of tool `name`, which behaves as `behaviour`, with `arguments`.
pub(crate) async fn run(
    behaviour: &Behaviour,
    name: &str,
    arguments: JsonObject,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    match behaviour {
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

/// The `elicit` tool's result: the client's answer, or its error as an error result.
pub(crate) async fn elicit_result(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    elicit(arguments, context).await.unwrap_or_else(tool_error)
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
