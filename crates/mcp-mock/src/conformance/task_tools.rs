//! The tools that can run as tasks, and the `tasks/*` methods, in both eras.
//!
//! The tools (listed in both eras, each with its `execution.taskSupport`):
//! - `greet {name}`: never a task; answers `Hello, <name>!`;
//! - `slow_compute {seconds, label}`: may be a task; sleeps `seconds` (at most 600), then
//!   answers `Computed <label> in <seconds>s`;
//! - `failing_job`: must be a task; after half a second it completes with a tool error
//!   (`isError: true`);
//! - `protocol_error_job`: may be a task; fails with a JSON-RPC error (status `failed`);
//! - `confirm_delete {filename}`: may be a task; asks the client to confirm (elicitation,
//!   key `confirm`), then answers `Deleted <filename>` or `Kept <filename>`;
//! - `multi_input`: may be a task; asks two questions at once (keys `name`, `confirm`);
//! - `test_tool_with_task`: must be a task; asks `user_name` first, then works as a task and
//!   answers `Hello, <name>!`.
//!
//! 2025-11-25 (sessions): a `tools/call` with `params.task` creates a task and answers
//! `{task}`; a task's questions go to the client as requests on the stream of its
//! `tasks/result`, which waits for the end and answers the tool's result; `tasks/get`,
//! `tasks/list` and `tasks/cancel` as that revision defines them, and status changes as
//! `notifications/tasks/status` (on the session's standalone stream, or stdout).
//! A tool that must be a task called without `task`, or one that cannot with it, is
//! `-32601`.
//!
//! 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): the server creates a task
//! for every task tool called by a client that declares the extension in the request's
//! capabilities (`resultType: "task"`); other clients get the answer at once (questions as
//! an input-required result), or `-32021` for a tool that must be a task. `tasks/get`
//! inlines the result, the error or the open questions (`inputRequests`); `tasks/update`
//! answers them; `tasks/cancel` acknowledges. Those three need the extension (`-32021`);
//! `tasks/result` and `tasks/list` do not exist there.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::exchange::{Era, Exchange};
use super::session::Session;
use super::tasks::{EXTENSION, Status, Task};
use super::{Failure, Server, mrtr, text};

/// The longest `slow_compute` sleeps.
const MAX_SECONDS: f64 = 600.0;

/// The `_meta` key tying a message to its task (2025-11-25).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Whether a tool runs as a task (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Support {
    Forbidden,
    Optional,
    Required,
}

/// What a call of a task tool does.
struct Job {
    /// What it asks the client before it works, by key.
    questions: Vec<(String, Value)>,
    /// Whether the questions are asked before a task exists (an input-required result),
    /// rather than by the task.
    ask_first: bool,
    /// How long it works.
    work: Duration,
    /// Its outcome, from the arguments and the answers.
    finish: fn(&Value, &Map<String, Value>) -> Result<Value, Failure>,
}

/// The definitions of the task tools.
pub(super) fn definitions() -> Vec<Value> {
    let tool = |name: &str, description: &str, support: Support, properties: Value| {
        let mut tool = json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": properties},
        });
        let support = match support {
            Support::Forbidden => return tool,
            Support::Optional => "optional",
            Support::Required => "required",
        };
        if let Some(object) = tool.as_object_mut() {
            object.insert("execution".into(), json!({"taskSupport": support}));
        }
        tool
    };
    let string = json!({"type": "string"});
    vec![
        tool(
            "greet",
            "Answers Hello, <name>! at once (never a task)",
            Support::Forbidden,
            json!({"name": string}),
        ),
        tool(
            "slow_compute",
            "Sleeps `seconds`, then answers (may run as a task)",
            Support::Optional,
            json!({"seconds": {"type": "number", "minimum": 0}, "label": string}),
        ),
        tool(
            "failing_job",
            "Completes with a tool error after half a second (must run as a task)",
            Support::Required,
            json!({}),
        ),
        tool(
            "protocol_error_job",
            "Fails with a JSON-RPC error (may run as a task)",
            Support::Optional,
            json!({}),
        ),
        tool(
            "confirm_delete",
            "Asks the client to confirm, then answers (may run as a task)",
            Support::Optional,
            json!({"filename": string}),
        ),
        tool(
            "multi_input",
            "Asks the client two questions at once (may run as a task)",
            Support::Optional,
            json!({}),
        ),
        tool(
            "test_tool_with_task",
            "Asks the client's name, then greets it from a task (must run as a task)",
            Support::Required,
            json!({}),
        ),
    ]
}

/// The job of task tool `name`, or `None` for any other tool.
fn job(name: &str, args: &Value) -> Option<(Support, Job)> {
    let confirm = || mrtr::elicit("Are you sure?", "confirm", "boolean");
    let plain = |work: u64, finish| Job {
        questions: Vec::new(),
        ask_first: false,
        work: Duration::from_millis(work),
        finish,
    };
    Some(match name {
        "greet" => (
            Support::Forbidden,
            plain(0, |args, _| {
                Ok(text(&format!("Hello, {}!", arg(args, "name"))))
            }),
        ),
        "slow_compute" => {
            let seconds = args
                .get("seconds")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                .clamp(0.0, MAX_SECONDS);
            let mut job = plain(0, |args, _| {
                let seconds = args.get("seconds").cloned().unwrap_or(json!(0));
                Ok(text(&format!(
                    "Computed {} in {seconds}s",
                    arg(args, "label")
                )))
            });
            job.work = Duration::from_secs_f64(seconds);
            (Support::Optional, job)
        }
        "failing_job" => (
            Support::Required,
            plain(500, |_, _| {
                Ok(json!({
                    "content": [{"type": "text", "text": "failing_job failed on purpose"}],
                    "isError": true,
                }))
            }),
        ),
        "protocol_error_job" => (
            Support::Optional,
            plain(100, |_, _| {
                Err(Failure::new(
                    -32603,
                    "Internal error: protocol_error_job failed on purpose",
                ))
            }),
        ),
        "confirm_delete" => {
            let mut job = plain(0, |args, answers| {
                let file = arg(args, "filename");
                let yes = answers.get("confirm").is_some_and(|a| {
                    a.get("action").and_then(Value::as_str) == Some("accept")
                        && a.pointer("/content/confirm") == Some(&json!(true))
                });
                Ok(text(&format!(
                    "{} {file}",
                    if yes { "Deleted" } else { "Kept" }
                )))
            });
            let question = mrtr::elicit(
                &format!("Delete {}?", arg(args, "filename")),
                "confirm",
                "boolean",
            );
            job.questions = vec![("confirm".into(), question)];
            (Support::Optional, job)
        }
        "multi_input" => {
            let mut job = plain(0, |_, answers| {
                let answer = |key: &str| answers.get(key).cloned().unwrap_or(Value::Null);
                Ok(text(&format!(
                    "Got name={}, confirm={}",
                    mrtr::field(&answer("name"), "name"),
                    mrtr::field(&answer("confirm"), "confirm"),
                )))
            });
            job.questions = vec![
                (
                    "name".into(),
                    mrtr::elicit("What is your name?", "name", "string"),
                ),
                ("confirm".into(), confirm()),
            ];
            (Support::Optional, job)
        }
        "test_tool_with_task" => {
            let mut job = plain(200, |_, answers| {
                let name = answers.get("user_name").cloned().unwrap_or(Value::Null);
                Ok(text(&format!("Hello, {}!", mrtr::field(&name, "name"))))
            });
            job.questions = vec![(
                "user_name".into(),
                mrtr::elicit("What is your name?", "name", "string"),
            )];
            job.ask_first = true;
            (Support::Required, job)
        }
        _ => return None,
    })
}

/// String argument `key`, or an empty string.
fn arg(args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `-32021`: the request needs the tasks extension.
fn missing_extension(what: &str) -> Failure {
    Failure::new(
        -32021,
        format!("MissingRequiredClientCapabilityError: {what} needs the {EXTENSION} extension"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}))
    .with_status(400)
}

/// Whether a 2026-07-28 request declared the tasks extension.
fn declares_tasks(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(|v| !v.is_null())
}

/// `inputResponses` of a request (empty when absent); `-32602` unless an object of objects.
fn input_responses(params: &Value) -> Result<Map<String, Value>, Failure> {
    let answers = match params.get("inputResponses") {
        None => return Ok(Map::new()),
        Some(Value::Object(answers)) => answers.clone(),
        Some(_) => return Err(Failure::invalid_params("inputResponses must be an object")),
    };
    match answers.iter().find(|(_, answer)| !answer.is_object()) {
        Some((key, _)) => Err(Failure::invalid_params(format!(
            "inputResponses.{key} must be an object"
        ))),
        None => Ok(answers),
    }
}

/// Runs a call of task tool `name`; `None` if `name` is not one.
pub(super) async fn call(
    server: &Server,
    name: &str,
    args: &Value,
    params: &Value,
    x: &Exchange,
) -> Option<Result<Value, Failure>> {
    let (support, job) = job(name, args)?;
    Some(match &x.era {
        Era::Stateless(meta) => {
            modern_call(server, name, support, job, args, params, &meta.capabilities).await
        }
        Era::Session(session) => session_call(session, name, support, job, args, params, x).await,
    })
}

/// A 2026-07-28 call.
async fn modern_call(
    server: &Server,
    name: &str,
    support: Support,
    job: Job,
    args: &Value,
    params: &Value,
    capabilities: &Value,
) -> Result<Value, Failure> {
    let given = input_responses(params)?;
    let unanswered = job
        .questions
        .iter()
        .any(|(key, _)| !given.contains_key(key));
    let declared = declares_tasks(capabilities) && support != Support::Forbidden;
    if !declared && support == Support::Required {
        return Err(missing_extension(&format!("tool {name}")));
    }
    if unanswered && (!declared || job.ask_first) {
        return Ok(mrtr::ask_owned(&job.questions));
    }
    if !declared {
        tokio::time::sleep(job.work).await;
        return (job.finish)(args, &given);
    }
    let task = server.tasks.create(None)?;
    let known = if job.ask_first { given } else { Map::new() };
    run(task.clone(), job, args.clone(), known);
    let mut created = task.modern(false);
    if let Some(object) = created.as_object_mut() {
        object.insert("resultType".into(), json!("task"));
    }
    Ok(created)
}

/// A 2025-11-25 call.
async fn session_call(
    session: &Arc<Session>,
    name: &str,
    support: Support,
    job: Job,
    args: &Value,
    params: &Value,
    x: &Exchange,
) -> Result<Value, Failure> {
    match (params.get("task"), support) {
        (Some(_), Support::Forbidden) => Err(Failure::new(
            -32601,
            format!("Tool {name} cannot run as a task"),
        )),
        (None, Support::Required) => Err(Failure::new(
            -32601,
            format!("Tool {name} must be called as a task (params.task)"),
        )),
        (Some(request), _) => {
            if !request.is_object() {
                return Err(Failure::invalid_params("params.task must be an object"));
            }
            let announce = session.announcer(x.out.clone());
            let task = session.tasks.create(announce)?;
            run(task.clone(), job, args.clone(), Map::new());
            Ok(json!({"task": task.legacy()}))
        }
        (None, _) => {
            let mut answers = Map::new();
            for (key, question) in &job.questions {
                let answer = ask_session(session, x, question, None).await?;
                answers.insert(key.clone(), answer);
            }
            tokio::time::sleep(job.work).await;
            (job.finish)(args, &answers)
        }
    }
}

/// Sends `question` (`{method, params}`) to a session's client on the request's stream; its
/// answer. `task` ties it to a task.
async fn ask_session(
    session: &Session,
    x: &Exchange,
    question: &Value,
    task: Option<&str>,
) -> Result<Value, Failure> {
    let method = question
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("elicitation/create");
    let mut params = question.get("params").cloned().unwrap_or_else(|| json!({}));
    if let (Some(task), Some(object)) = (task, params.as_object_mut()) {
        object.insert("_meta".into(), json!({RELATED_TASK: {"taskId": task}}));
    }
    session.request(&x.out, method, params).await
}

/// Runs `job` as `task`, with the answers it already has.
fn run(task: Arc<Task>, job: Job, args: Value, known: Map<String, Value>) {
    tokio::spawn(async move {
        let stop = task.stop.clone();
        let work = async {
            let mut answers = known;
            if !job.questions.is_empty() && !job.ask_first {
                answers.extend(task.ask(job.questions).await?);
            }
            tokio::time::sleep(job.work).await;
            Some((job.finish)(&args, &answers))
        };
        tokio::select! {
            outcome = work => if let Some(outcome) = outcome {
                task.finish(outcome);
            },
            () = stop.cancelled() => {}
        }
    });
}

/// The `tasks/*` methods; `None` for a method this era does not have.
pub(super) async fn method(
    server: &Server,
    method: &str,
    params: &Value,
    x: &Exchange,
) -> Option<Result<Value, Failure>> {
    let id = || {
        params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure::invalid_params(format!("{method} needs params.taskId")))
    };
    match &x.era {
        Era::Stateless(meta) => {
            if !matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel") {
                return None;
            }
            if !declares_tasks(&meta.capabilities) {
                return Some(Err(missing_extension(method)));
            }
            Some((|| {
                let task = server.tasks.get(id()?)?;
                match method {
                    "tasks/get" => Ok(task.modern(true)),
                    "tasks/update" => {
                        if !params.get("inputResponses").is_some_and(Value::is_object) {
                            return Err(Failure::invalid_params(
                                "tasks/update needs params.inputResponses (an object)",
                            ));
                        }
                        task.answer(&input_responses(params)?);
                        Ok(json!({}))
                    }
                    _ => {
                        task.cancel();
                        Ok(json!({}))
                    }
                }
            })())
        }
        Era::Session(session) => {
            let result = match method {
                "tasks/list" => Ok(json!({
                    "tasks": session.tasks.list().iter().map(|t| t.legacy()).collect::<Vec<_>>(),
                })),
                "tasks/get" => id()
                    .and_then(|id| session.tasks.get(id))
                    .map(|t| t.legacy()),
                "tasks/cancel" => id().and_then(|id| session.tasks.get(id)).and_then(|t| {
                    if t.cancel() {
                        Ok(t.legacy())
                    } else {
                        Err(Failure::invalid_params(format!(
                            "Task {} has already ended",
                            t.id
                        )))
                    }
                }),
                "tasks/result" => match id().and_then(|id| session.tasks.get(id)) {
                    Ok(task) => result(session, &task, x).await,
                    Err(failure) => Err(failure),
                },
                _ => return None,
            };
            Some(result)
        }
    }
}

/// `tasks/result` (2025-11-25): waits for the task to end, passing its questions to the
/// client on the way; the tool's result, tied to the task, or its error.
async fn result(session: &Session, task: &Task, x: &Exchange) -> Result<Value, Failure> {
    while task.settled().await == Status::InputRequired {
        for (key, question) in task.questions() {
            let answer = ask_session(session, x, &question, Some(&task.id))
                .await
                .unwrap_or_else(|_| json!({"action": "cancel"}));
            task.answer(&Map::from_iter([(key, answer)]));
        }
    }
    let mut result = task.outcome()?;
    if let Some(object) = result.as_object_mut() {
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.into(), json!({"taskId": task.id}));
        }
    }
    Ok(result)
}

/// The task capability of a session (2025-11-25).
pub(super) fn session_capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}
