//! Tasks as the client sees them, whichever revision carries them: a task's state
//! ([`TaskState`]), its status, a tool's `execution.taskSupport`, and the two wire forms read
//! into one shape.
//!
//! Revision 2025-11-25 has tasks in its core (`tools/call` with a `task` parameter answered by
//! `{"task": {...}}`, `ttl` and `pollInterval`, `tasks/result` and `tasks/list`); revision
//! 2026-07-28 has them as the `io.modelcontextprotocol/tasks` extension (a `tools/call` answered
//! by `resultType: "task"`, `ttlMs` and `pollIntervalMs`, the result inline in `tasks/get`, no
//! `tasks/list`). Everything a server sends here is read as untrusted: a missing or malformed
//! field is a [`TaskProblem`], never a panic.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

/// The extension that carries tasks in revision 2026-07-28.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The longest task id accepted from a server or a caller, in bytes.
pub const MAX_TASK_ID_BYTES: usize = 512;

/// Which form of tasks a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskProtocol {
    /// Revision 2025-11-25: tasks in the core protocol, asked for per request.
    Core,
    /// Revision 2026-07-28: the `io.modelcontextprotocol/tasks` extension, created at the
    /// server's discretion.
    Extension,
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for an answer from the client.
    InputRequired,
    /// Finished with a result (which may be a tool error, `isError: true`).
    Completed,
    /// Finished with a JSON-RPC error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// The status as the protocol spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the task will not change any more (`completed`, `failed`, `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    fn parse(text: &str) -> Option<TaskStatus> {
        Some(match text {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => return None,
        })
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task's state as the server last reported it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskState {
    /// The server's id for the task.
    pub id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What the server says about it, for people (progress, a reason), if anything.
    pub status_message: Option<String>,
    /// When it was created (ISO 8601, as sent).
    pub created_at: Option<String>,
    /// When it last changed (ISO 8601, as sent).
    pub last_updated_at: Option<String>,
    /// How long the server keeps it after its creation; `None` when unlimited or not said.
    pub ttl: Option<Duration>,
    /// How often the server would like to be asked; `None` when it did not say.
    pub poll_interval: Option<Duration>,
    /// Revision 2026-07-28 carries a finished task's result or error with its state.
    pub(crate) outcome: Option<TaskOutcome>,
}

/// What a finished task carried inline (revision 2026-07-28).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskOutcome {
    /// The request's result (a `tools/call` result).
    Result(Map<String, Value>),
    /// The JSON-RPC error it failed with.
    Error(Map<String, Value>),
}

/// What was wrong with a task, as [`ClientError::Task`](super::error::ClientError::Task) says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskProblem {
    /// A task id that is empty, too long or holds control characters.
    #[error("invalid task id ({0})")]
    InvalidId(String),
    /// The server's description of a task is not one.
    #[error("invalid task state from the server: {0}")]
    InvalidState(String),
    /// The task ended without a result.
    #[error("the task was cancelled")]
    Cancelled,
    /// The task failed, and the server did not say with which error.
    #[error("the task failed{}", .0.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Failed(Option<String>),
    /// A result was asked for before the task finished.
    #[error("the task is still {0}")]
    NotFinished(TaskStatus),
    /// The task waits for an answer this client cannot give.
    #[error("the task needs input this client cannot give")]
    NeedsInput,
    /// The server or its revision does not offer this.
    #[error("{0}")]
    Unsupported(String),
}

/// Check a task id given by a caller or a server.
pub(crate) fn check_id(id: &str) -> Result<(), TaskProblem> {
    if id.is_empty() {
        return Err(TaskProblem::InvalidId("empty".into()));
    }
    if id.len() > MAX_TASK_ID_BYTES {
        return Err(TaskProblem::InvalidId(format!(
            "longer than {MAX_TASK_ID_BYTES} bytes"
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(TaskProblem::InvalidId("holds control characters".into()));
    }
    Ok(())
}

impl TaskState {
    /// A task in `status`, with nothing else known (for hosts that show or test states).
    pub fn new(id: impl Into<String>, status: TaskStatus) -> TaskState {
        TaskState {
            id: id.into(),
            status,
            status_message: None,
            created_at: None,
            last_updated_at: None,
            ttl: None,
            poll_interval: None,
            outcome: None,
        }
    }

    /// The same state with `message` as its status message.
    pub fn with_status_message(mut self, message: impl Into<String>) -> TaskState {
        self.status_message = Some(message.into());
        self
    }

    /// Read a task as either revision sends it (`tasks/get`, a status notification, a
    /// `tasks/list` entry, the inside of a 2025-11-25 `CreateTaskResult`, or a 2026-07-28
    /// `CreateTaskResult`).
    pub(crate) fn from_wire(object: &Map<String, Value>) -> Result<TaskState, TaskProblem> {
        let invalid = |why: &str| TaskProblem::InvalidState(why.to_owned());
        let id = object
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("no `taskId` string"))?;
        check_id(id).map_err(|e| invalid(&e.to_string()))?;
        let status = match object.get("status") {
            Some(Value::String(text)) => TaskStatus::parse(text)
                .ok_or_else(|| invalid(&format!("unknown status `{}`", shown(text))))?,
            _ => return Err(invalid("no `status` string")),
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let millis = |keys: [&str; 2]| {
            keys.iter()
                .find_map(|key| object.get(*key))
                .and_then(Value::as_u64)
                .map(Duration::from_millis)
        };
        let outcome = match status {
            TaskStatus::Completed => object
                .get("result")
                .and_then(Value::as_object)
                .map(|r| TaskOutcome::Result(r.clone())),
            TaskStatus::Failed => object
                .get("error")
                .and_then(Value::as_object)
                .map(|e| TaskOutcome::Error(e.clone())),
            _ => None,
        };
        Ok(TaskState {
            id: id.to_owned(),
            status,
            status_message: text("statusMessage"),
            created_at: text("createdAt"),
            last_updated_at: text("lastUpdatedAt"),
            ttl: millis(["ttlMs", "ttl"]),
            poll_interval: millis(["pollIntervalMs", "pollInterval"]),
            outcome,
        })
    }

    /// The task a `tools/call` answer created, if it is one: 2025-11-25's `{"task": {...}}`
    /// or 2026-07-28's `resultType: "task"`. `None` for any other result.
    pub(crate) fn created(result: &Map<String, Value>) -> Option<Result<TaskState, TaskProblem>> {
        if result.get("resultType").and_then(Value::as_str) == Some("task") {
            return Some(TaskState::from_wire(result));
        }
        match result.get("task") {
            Some(Value::Object(task)) if !result.contains_key("content") => {
                Some(TaskState::from_wire(task))
            }
            _ => None,
        }
    }

    /// The state as JSON, in revision 2026-07-28's field names (for printing).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("taskId".into(), self.id.clone().into());
        object.insert("status".into(), self.status.as_str().into());
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                object.insert(key.into(), value);
            }
        };
        put(
            "statusMessage",
            self.status_message.clone().map(Value::from),
        );
        put("createdAt", self.created_at.clone().map(Value::from));
        put(
            "lastUpdatedAt",
            self.last_updated_at.clone().map(Value::from),
        );
        put("ttlMs", self.ttl.map(|d| (d.as_millis() as u64).into()));
        put(
            "pollIntervalMs",
            self.poll_interval.map(|d| (d.as_millis() as u64).into()),
        );
        Value::Object(object)
    }
}

/// At most 64 characters of a server's text, for an error message.
fn shown(text: &str) -> String {
    let mut shown: String = text.chars().take(64).filter(|c| !c.is_control()).collect();
    if text.chars().count() > 64 {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(object) => object,
            _ => unreachable!(),
        }
    }

    #[test]
    fn both_revisions_read_into_one_state() {
        let core = object(json!({"taskId": "t1", "status": "working", "ttl": 60000,
            "pollInterval": 250, "createdAt": "2025-11-25T10:30:00Z"}));
        let state = TaskState::from_wire(&core).unwrap();
        assert_eq!(state.poll_interval, Some(Duration::from_millis(250)));
        assert_eq!(state.ttl, Some(Duration::from_secs(60)));
        let modern = object(
            json!({"resultType": "task", "taskId": "t2", "status": "completed",
            "ttlMs": null, "pollIntervalMs": 5, "result": {"content": []}}),
        );
        let state = TaskState::created(&modern).unwrap().unwrap();
        assert_eq!(state.status, TaskStatus::Completed);
        assert_eq!(state.ttl, None);
        assert!(matches!(state.outcome, Some(TaskOutcome::Result(_))));
        let wrapped = object(json!({"task": {"taskId": "t3", "status": "working"}}));
        assert_eq!(TaskState::created(&wrapped).unwrap().unwrap().id, "t3");
        let output = object(json!({"content": [], "task": {"taskId": "t3"}}));
        assert!(TaskState::created(&output).is_none());
    }

    #[test]
    fn hostile_states_are_typed_errors() {
        for bad in [
            json!({"status": "working"}),
            json!({"taskId": 7, "status": "working"}),
            json!({"taskId": "", "status": "working"}),
            json!({"taskId": "a\nb", "status": "working"}),
            json!({"taskId": "x".repeat(MAX_TASK_ID_BYTES + 1), "status": "working"}),
            json!({"taskId": "t", "status": "sleeping"}),
            json!({"taskId": "t", "status": 1}),
            json!({"taskId": "t"}),
        ] {
            let error = TaskState::from_wire(&object(bad.clone())).unwrap_err();
            assert!(matches!(error, TaskProblem::InvalidState(_)), "{bad}");
        }
        let long = "z".repeat(10_000);
        let error =
            TaskState::from_wire(&object(json!({"taskId": "t", "status": long}))).unwrap_err();
        assert!(error.to_string().len() < 200, "{error}");
    }
}
