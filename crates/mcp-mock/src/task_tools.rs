//! `--task-tools`: tools that run as tasks (the `io.modelcontextprotocol/tasks` extension),
//! served through rmcp's task support, for testing clients.
//!
//! - `task_sleep {ms, steps?}` may run as a task: it works `ms` milliseconds in `steps` steps
//!   (default 5), saying `step <i> of <n>` in its status message and, when the call carries a
//!   progress token, in `notifications/progress`; then answers `slept <ms> ms`. Cancelling
//!   the task stops it.
//! - `task_ask {message?}` may run as a task: it asks the client for a `name` (an
//!   `elicitation/create` input request, key `name`, answered with `tasks/update`), then
//!   answers `accept <content>`, `decline` or `cancel`. Called without a task it asks with an
//!   ordinary request, as `--elicit-tool` does.
//! - `task_required {text}` must run as a task (else `-32021`); it answers `text`.
//!
//! A client gets a task when its request declares the extension (in `_meta` for 2026-07-28,
//! at `initialize` for a session); the server advertises it in its capabilities. Tasks live
//! as long as the conformance mode's (see `conformance::tasks`): bounded in number, expiring
//! after their TTL. The 2025-11-25 form of tasks (`params.task`, `tasks/result`,
//! `tasks/list`) is served by `--conformance`.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult, GetTaskResult,
    JsonObject, ProgressNotificationParam, ProgressToken, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer};
use serde_json::{Map, Value, json};

use crate::conformance::Failure;
use crate::conformance::tasks::{Task, TaskStore};
use crate::tool_calls::{self, text_result, tool_error};

/// The tool names.
const SLEEP: &str = "task_sleep";
const ASK: &str = "task_ask";
const REQUIRED: &str = "task_required";

/// The longest `task_sleep` works.
const MAX_SLEEP_MS: u64 = 600_000;

/// The `--task-tools` definitions.
pub(crate) fn definitions() -> anyhow::Result<Vec<Tool>> {
    let tools = [
        json!({
            "name": SLEEP,
            "description": "Works `ms` milliseconds in `steps` steps (default 5), reporting each as status and progress, then returns \"slept <ms> ms\". Runs as a task for clients that support them.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLEEP_MS},
                    "steps": {"type": "integer", "minimum": 1, "maximum": 100}
                },
                "required": ["ms"]
            },
            "execution": {"taskSupport": "optional"}
        }),
        json!({
            "name": ASK,
            "description": "Asks the client for a name (elicitation) and returns its answer: \"accept <content>\", \"decline\" or \"cancel\". Runs as a task for clients that support them.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
            "execution": {"taskSupport": "optional"}
        }),
        json!({
            "name": REQUIRED,
            "description": "Returns `text`; must run as a task.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            },
            "execution": {"taskSupport": "required"}
        }),
    ];
    tools
        .into_iter()
        .map(|tool| serde_json::from_value::<Tool>(tool).map_err(anyhow::Error::from))
        .collect()
}

/// A call of one of the task tools; `None` for any other tool.
pub(crate) async fn call(
    tasks: &TaskStore,
    name: &str,
    arguments: JsonObject,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, McpError>> {
    if ![SLEEP, ASK, REQUIRED].contains(&name) {
        return None;
    }
    let declared = context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks());
    Some(match (name, declared) {
        (REQUIRED, false) => Err(McpError::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        )),
        (SLEEP, false) => {
            let token = context.meta.get_progress_token();
            let work = sleep_steps(&arguments, None, token, &context.peer);
            Ok(tokio::select! {
                result = work => result,
                () = context.ct.clone().cancelled_owned() => tool_error("cancelled"),
            }
            .into())
        }
        (ASK, false) => Ok(tool_calls::elicit_result(&arguments, context).await.into()),
        (_, true) => start(tasks, name, arguments, context),
        _ => return None,
    })
}

/// Creates the task of a call and starts its work.
fn start(
    tasks: &TaskStore,
    name: &str,
    arguments: JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let task = tasks.create(None).map_err(to_mcp)?;
    let work = task.clone();
    let peer = context.peer.clone();
    let token = context.meta.get_progress_token();
    let name = name.to_owned();
    tokio::spawn(async move {
        let stop = work.stop.clone();
        let run = async {
            let result = match name.as_str() {
                SLEEP => sleep_steps(&arguments, Some(&work), token, &peer).await,
                ASK => ask_in(&work, &arguments).await?,
                _ => text_result(
                    arguments
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
            };
            Some(serde_json::to_value(result).map_err(|e| Failure::new(-32603, e.to_string())))
        };
        tokio::select! {
            outcome = run => if let Some(outcome) = outcome {
                work.finish(outcome);
            },
            () = stop.cancelled() => {}
        }
    });
    let mut created = task.modern(false);
    if let Some(object) = created.as_object_mut() {
        object.insert("resultType".into(), json!("task"));
    }
    let created = serde_json::from_value::<CreateTaskResult>(created)
        .map_err(|e| McpError::internal_error(format!("cannot build the task: {e}"), None))?;
    Ok(CallToolResponse::Task(created))
}

/// The work of `task_sleep`: step by step, each step reported as progress (when the call
/// carries a progress `token`) and, in a task, as its status message.
async fn sleep_steps(
    arguments: &JsonObject,
    task: Option<&Task>,
    token: Option<ProgressToken>,
    peer: &Peer<RoleServer>,
) -> CallToolResult {
    let (ms, steps) = match sleep_arguments(arguments) {
        Ok(parsed) => parsed,
        Err(e) => return tool_error(e),
    };
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(ms / steps)).await;
        let message = format!("step {step} of {steps}");
        if let Some(task) = task {
            task.set_message(message.clone());
        }
        if let Some(token) = &token {
            let param = ProgressNotificationParam::new(token.clone(), step as f64)
                .with_total(steps as f64)
                .with_message(message);
            // The client may be gone; the work goes on regardless.
            let _ = peer.notify_progress(param).await;
        }
    }
    text_result(format!("slept {ms} ms"))
}

/// `ms` and `steps` of `task_sleep`.
fn sleep_arguments(arguments: &JsonObject) -> Result<(u64, u64), String> {
    let ms = arguments
        .get("ms")
        .and_then(Value::as_u64)
        .filter(|ms| *ms <= MAX_SLEEP_MS)
        .ok_or_else(|| format!("argument `ms` must be an integer from 0 to {MAX_SLEEP_MS}"))?;
    let steps = match arguments.get("steps") {
        None | Some(Value::Null) => 5,
        Some(steps) => steps
            .as_u64()
            .filter(|s| (1..=100).contains(s))
            .ok_or_else(|| "argument `steps` must be an integer from 1 to 100".to_owned())?,
    };
    Ok((ms, steps))
}

/// `task_ask` run as `task`: the question as an input request; `None` if the task ended.
async fn ask_in(task: &Task, arguments: &JsonObject) -> Option<CallToolResult> {
    let message = arguments
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("What is your name?");
    let question = json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    });
    let answers = task.ask(vec![("name".to_owned(), question)]).await?;
    let answer = answers.get("name").cloned().unwrap_or(Value::Null);
    Some(text_result(
        match answer.get("action").and_then(Value::as_str) {
            Some("accept") => format!(
                "accept {}",
                answer.get("content").cloned().unwrap_or(Value::Null)
            ),
            Some("decline") => "decline".to_owned(),
            _ => "cancel".to_owned(),
        },
    ))
}

/// `tasks/get`.
pub(crate) fn get(tasks: &TaskStore, id: &str) -> Result<GetTaskResult, McpError> {
    let task = tasks.get(id).map_err(to_mcp)?;
    let mut detailed = task.modern(true);
    if let Some(object) = detailed.as_object_mut() {
        object.insert("resultType".into(), json!("complete"));
    }
    serde_json::from_value(detailed)
        .map_err(|e| McpError::internal_error(format!("cannot describe the task: {e}"), None))
}

/// `tasks/update`: answers to the task's open questions.
pub(crate) fn update(tasks: &TaskStore, id: &str, answers: Value) -> Result<(), McpError> {
    let task = tasks.get(id).map_err(to_mcp)?;
    let answers: Map<String, Value> = match answers {
        Value::Object(answers) => answers,
        _ => {
            return Err(McpError::invalid_params(
                "inputResponses must be an object",
                None,
            ));
        }
    };
    task.answer(&answers);
    Ok(())
}

/// `tasks/cancel`: acknowledged whether or not the task was still at work.
pub(crate) fn cancel(tasks: &TaskStore, id: &str) -> Result<(), McpError> {
    tasks.get(id).map_err(to_mcp)?.cancel();
    Ok(())
}

/// A task store's error as an MCP error.
fn to_mcp(failure: Failure) -> McpError {
    McpError::new(
        rmcp::model::ErrorCode(failure.code as i32),
        failure.message,
        failure.data,
    )
}
