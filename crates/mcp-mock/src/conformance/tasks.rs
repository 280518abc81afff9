//! Tasks: the state of tool calls that run on after their `tools/call` was answered, in the
//! wire shapes of both eras (the `tasks` utility of 2025-11-25 and the
//! `io.modelcontextprotocol/tasks` extension of 2026-07-28).
//!
//! A [`TaskStore`] holds the tasks of one session (2025-11-25) or of the stateless server
//! (2026-07-28); the rmcp-based mock keeps one for its `--task-tools` too. It is bounded: expired tasks are dropped when a task is created, then the
//! oldest finished ones; a store full of live tasks refuses new ones, so a client that keeps
//! creating tasks cannot grow the process without limit. A [`Task`] moves `working` →
//! (`input_required` → `working`)* → `completed` | `failed` | `cancelled`, and never leaves a
//! terminal status.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::{Failure, notification, random_id};

/// The extension's identifier (2026-07-28), in capabilities and error data.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How long a task stays readable after it was created.
pub(crate) const TTL_MS: u64 = 300_000;

/// The polling interval the server suggests.
pub(crate) const POLL_INTERVAL_MS: u64 = 100;

/// Most tasks one store keeps.
pub(crate) const MAX_TASKS: usize = 256;

/// Where a task's status changes are announced (2025-11-25 `notifications/tasks/status`);
/// `None` sends nothing.
pub(crate) type Announcer = Option<Arc<dyn Fn(Value) + Send + Sync>>;

/// The status of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// Whether the task is over.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// What changes while a task runs.
struct State {
    status: Status,
    message: Option<String>,
    updated: String,
    /// The tool's result, once `completed`.
    result: Option<Value>,
    /// The JSON-RPC error, once `failed`.
    error: Option<Value>,
    /// Questions to the client not answered yet, by key.
    questions: Map<String, Value>,
    /// Answers delivered for the current questions, by key.
    answers: Map<String, Value>,
}

/// One task.
pub(crate) struct Task {
    pub id: String,
    created: String,
    born: Instant,
    state: Mutex<State>,
    /// Bumped on every change, so that waiters wake up.
    changed: watch::Sender<u64>,
    /// Stops the work when the task is cancelled or dropped from its store.
    pub stop: CancellationToken,
    announce: Announcer,
}

/// An RFC 3339 timestamp of now, in UTC.
fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl Task {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current status.
    pub(crate) fn status(&self) -> Status {
        self.lock().status
    }

    /// Whether the task outlived its TTL.
    fn expired(&self) -> bool {
        self.born.elapsed() > Duration::from_millis(TTL_MS)
    }

    /// Applies `change` unless the task is already over; announces and wakes waiters if it
    /// applied.
    fn update(&self, change: impl FnOnce(&mut State)) -> bool {
        {
            let mut state = self.lock();
            if state.status.is_terminal() {
                return false;
            }
            change(&mut state);
            state.updated = now();
        }
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        if let Some(announce) = &self.announce {
            announce(notification("notifications/tasks/status", self.legacy()));
        }
        true
    }

    /// Ends the task with the outcome of its work (a tool result, or a protocol error).
    pub(crate) fn finish(&self, outcome: Result<Value, Failure>) {
        self.update(|state| {
            state.questions.clear();
            match outcome {
                Ok(result) => {
                    state.status = Status::Completed;
                    state.result = Some(result);
                }
                Err(failure) => {
                    state.status = Status::Failed;
                    state.message = Some(failure.message.clone());
                    state.error = Some(failure.to_json());
                }
            }
        });
    }

    /// Sets the status message of a task still at work.
    pub(crate) fn set_message(&self, message: String) {
        self.update(|state| state.message = Some(message));
    }

    /// Cancels the task; false if it was already over.
    pub(crate) fn cancel(&self) -> bool {
        let cancelled = self.update(|state| {
            state.status = Status::Cancelled;
            state.message = Some("The task was cancelled by request.".into());
            state.questions.clear();
        });
        self.stop.cancel();
        cancelled
    }

    /// Asks the client `questions` (key → `{method, params}`) and waits until every one is
    /// answered: the answers by key, or `None` if the task ended meanwhile.
    pub(crate) async fn ask(&self, questions: Vec<(String, Value)>) -> Option<Map<String, Value>> {
        let mut changes = self.changed.subscribe();
        let asked = self.update(|state| {
            state.status = Status::InputRequired;
            state.message = Some("Waiting for input from the client.".into());
            state.answers.clear();
            state.questions = questions.into_iter().collect();
        });
        if !asked {
            return None;
        }
        loop {
            {
                let mut state = self.lock();
                if state.status.is_terminal() {
                    return None;
                }
                // The last answer set the task back to work (see `answer`).
                if state.questions.is_empty() {
                    return Some(std::mem::take(&mut state.answers));
                }
            }
            if changes.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Hands over answers to open questions (`tasks/update`); answers to keys that are not
    /// open are ignored. The last one sets the task back to `working` at once, so that
    /// whoever looks next never sees a task waiting for nothing.
    pub(crate) fn answer(&self, answers: &Map<String, Value>) {
        self.update(|state| {
            for (key, answer) in answers {
                if state.questions.remove(key).is_some() {
                    state.answers.insert(key.clone(), answer.clone());
                }
            }
            if state.status == Status::InputRequired && state.questions.is_empty() {
                state.status = Status::Working;
                state.message = None;
            }
        });
    }

    /// The open questions, by key.
    pub(crate) fn questions(&self) -> Map<String, Value> {
        self.lock().questions.clone()
    }

    /// Waits until the task is over or needs input; its status then.
    pub(crate) async fn settled(&self) -> Status {
        let mut changes = self.changed.subscribe();
        loop {
            let status = self.status();
            if status != Status::Working {
                return status;
            }
            if changes.changed().await.is_err() {
                return self.status();
            }
        }
    }

    /// The tool result (`completed`) or the error (`failed`, `cancelled`).
    pub(crate) fn outcome(&self) -> Result<Value, Failure> {
        let state = self.lock();
        match (&state.result, &state.error) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(Failure::from_error(error, "the task failed")),
            (None, None) => Err(Failure::new(
                -32603,
                format!("Task {} was {}", self.id, state.status.as_str()),
            )),
        }
    }

    /// The task in the 2025-11-25 shape (`Task`: `ttl`, `pollInterval`).
    pub(crate) fn legacy(&self) -> Value {
        let state = self.lock();
        let mut task = json!({
            "taskId": self.id,
            "status": state.status.as_str(),
            "createdAt": self.created,
            "lastUpdatedAt": state.updated,
            "ttl": TTL_MS,
            "pollInterval": POLL_INTERVAL_MS,
        });
        if let (Some(message), Some(object)) = (&state.message, task.as_object_mut()) {
            object.insert("statusMessage".into(), json!(message));
        }
        task
    }

    /// The task in the 2026-07-28 shape (`ttlMs`, `pollIntervalMs`); `detailed` adds what
    /// `tasks/get` inlines: the result, the error or the open questions.
    pub(crate) fn modern(&self, detailed: bool) -> Value {
        let state = self.lock();
        let mut task = Map::new();
        task.insert("taskId".into(), json!(self.id));
        task.insert("status".into(), json!(state.status.as_str()));
        if let Some(message) = &state.message {
            task.insert("statusMessage".into(), json!(message));
        }
        task.insert("createdAt".into(), json!(self.created));
        task.insert("lastUpdatedAt".into(), json!(state.updated));
        task.insert("ttlMs".into(), json!(TTL_MS));
        task.insert("pollIntervalMs".into(), json!(POLL_INTERVAL_MS));
        if detailed {
            match state.status {
                Status::Completed => {
                    if let Some(result) = &state.result {
                        task.insert("result".into(), result.clone());
                    }
                }
                Status::Failed => {
                    if let Some(error) = &state.error {
                        task.insert("error".into(), error.clone());
                    }
                }
                Status::InputRequired => {
                    task.insert(
                        "inputRequests".into(),
                        Value::Object(state.questions.clone()),
                    );
                }
                Status::Working | Status::Cancelled => {}
            }
        }
        Value::Object(task)
    }
}

/// The tasks of one session, or of the stateless server.
#[derive(Default)]
pub(crate) struct TaskStore {
    /// Oldest first.
    tasks: Mutex<VecDeque<Arc<Task>>>,
}

impl TaskStore {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Arc<Task>>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates a task in `working` status, announcing its changes through `announce`; refused
    /// when the store is full of live tasks.
    pub(crate) fn create(&self, announce: Announcer) -> Result<Arc<Task>, Failure> {
        let id = random_id().map_err(|e| Failure::new(-32603, e.to_string()))?;
        let created = now();
        let (changed, _) = watch::channel(0);
        let task = Arc::new(Task {
            id,
            created: created.clone(),
            born: Instant::now(),
            state: Mutex::new(State {
                status: Status::Working,
                message: None,
                updated: created,
                result: None,
                error: None,
                questions: Map::new(),
                answers: Map::new(),
            }),
            changed,
            stop: CancellationToken::new(),
            announce,
        });
        let mut tasks = self.lock();
        drop_where(&mut tasks, |t| t.expired());
        if tasks.len() >= MAX_TASKS
            && let Some(oldest) = tasks.iter().position(|t| t.status().is_terminal())
            && let Some(dropped) = tasks.remove(oldest)
        {
            dropped.stop.cancel();
        }
        if tasks.len() >= MAX_TASKS {
            return Err(Failure::new(
                -32603,
                format!("too many tasks ({MAX_TASKS}); wait for some to finish or cancel them"),
            ));
        }
        tasks.push_back(task.clone());
        Ok(task)
    }

    /// The task with id `id`, unless it expired; `-32602` otherwise.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Task>, Failure> {
        let mut tasks = self.lock();
        drop_where(&mut tasks, |t| t.expired());
        tasks
            .iter()
            .find(|t| t.id == id)
            .cloned()
            .ok_or_else(|| Failure::invalid_params(format!("Unknown task: {id}")))
    }

    /// Every live task, newest first.
    pub(crate) fn list(&self) -> Vec<Arc<Task>> {
        let mut tasks = self.lock();
        drop_where(&mut tasks, |t| t.expired());
        tasks.iter().rev().cloned().collect()
    }

    /// Stops every task (the session ended).
    pub(crate) fn stop_all(&self) {
        for task in self.lock().drain(..) {
            task.stop.cancel();
        }
    }
}

/// Drops (and stops) the tasks `doomed` picks.
fn drop_where(tasks: &mut VecDeque<Arc<Task>>, doomed: impl Fn(&Task) -> bool) {
    tasks.retain(|task| {
        let drop = doomed(task);
        if drop {
            task.stop.cancel();
        }
        !drop
    });
}

/// An announcer that sends on `out` (the connection a session's notifications travel on).
pub(crate) fn announce_on(out: mpsc::UnboundedSender<Value>) -> Announcer {
    Some(Arc::new(move |message| {
        let _ = out.send(message);
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_store_refuses_new_tasks_and_keeps_what_it_has() {
        let store = TaskStore::default();
        for _ in 0..MAX_TASKS {
            store.create(None).expect("room for a task");
        }
        let refused = store.create(None).err().expect("the store is full");
        assert!(refused.message.contains("too many tasks"), "{refused:?}");
        assert_eq!(store.list().len(), MAX_TASKS);
    }

    #[test]
    fn finished_tasks_make_room_for_new_ones() {
        let store = TaskStore::default();
        let first = store.create(None).expect("a task");
        first.finish(Ok(json!({"content": []})));
        for _ in 1..MAX_TASKS {
            store.create(None).expect("room for a task");
        }
        store.create(None).expect("the finished task makes room");
        assert!(store.get(&first.id).is_err());
    }

    #[tokio::test]
    async fn the_last_answer_sets_the_task_back_to_work() {
        let store = TaskStore::default();
        let task = store.create(None).expect("a task");
        let asking = task.clone();
        let questions = vec![("a".to_owned(), json!({})), ("b".to_owned(), json!({}))];
        let asked = tokio::spawn(async move { asking.ask(questions).await });
        while task.status() != Status::InputRequired {
            tokio::task::yield_now().await;
        }
        task.answer(&Map::from_iter([("a".to_owned(), json!({"x": 1}))]));
        assert_eq!(task.status(), Status::InputRequired);
        assert_eq!(task.questions().len(), 1);
        task.answer(&Map::from_iter([("b".to_owned(), json!({"x": 2}))]));
        assert_eq!(task.status(), Status::Working);
        let answers = asked.await.expect("the asker ends").expect("answers");
        assert_eq!(answers.len(), 2);
    }

    #[test]
    fn a_terminal_status_never_changes() {
        let store = TaskStore::default();
        let task = store.create(None).expect("a task");
        assert!(task.cancel());
        task.finish(Ok(json!({"content": []})));
        assert_eq!(task.status(), Status::Cancelled);
        assert!(!task.cancel());
        assert!(task.modern(true).get("result").is_none());
    }
}
