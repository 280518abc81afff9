//! Tasks on one connection: a tool called as a task, its state polled or pushed, its result
//! fetched, the task cancelled or listed, and a task taken up again by id on a new connection
//! (a task outlives the connection that made it).
//!
//! The two revisions differ on the wire and nowhere else (see [`TaskProtocol`]): 2025-11-25
//! asks for a task with a `task` parameter, fetches the result with `tasks/result` (which
//! blocks, and during which the server asks its questions as requests) and lists tasks;
//! 2026-07-28 declares the extension in every request's capabilities, lets the server decide,
//! carries the result inline in `tasks/get`, and asks its questions in `inputRequests`
//! answered with `tasks/update`. Callers see one API.
//!
//! Waiting is bounded: by the call's timeout (then the task is cancelled), between polls by
//! the server's `pollInterval` capped at [`MAX_POLL_INTERVAL`] (a backoff when it names none),
//! and a status notification ends a wait early.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, CustomRequest, NumberOrString, ProgressToken, ServerResult};
use serde_json::{Map, Value, json};

use super::model::era::Era;
use super::model::task::{TaskOutcome, check_id};
use super::{CallOptions, ClientError, McpClient, ToolOutput, mrtr};

pub use super::model::task::{
    MAX_TASK_ID_BYTES, TASKS_EXTENSION, TaskProblem, TaskProtocol, TaskState, TaskStatus,
};

/// The longest wait between two polls, whatever the server asks: a huge `pollInterval` must
/// not make a call deaf to its task for hours.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);

/// The shortest wait between two polls, so that a server asking for none is not asked in a loop.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(20);

/// The first wait when the server names no interval; doubled after each poll, up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The 2025-11-25 revision's version string: the only one before 2026-07-28 with tasks.
const CORE_TASKS_VERSION: &str = "2025-11-25";

/// What starting a tool as a task gave.
#[derive(Debug)]
#[non_exhaustive]
pub enum TaskStart {
    /// The server made a task; follow it by its id.
    Started(TaskState),
    /// The server answered at once, without a task (2026-07-28 servers may).
    Finished(ToolOutput),
}

/// One page of `tasks/list`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskPage {
    /// The tasks on this page.
    pub tasks: Vec<TaskState>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

impl McpClient {
    /// The form of tasks this server speaks: the extension when a 2026-07-28 server declares
    /// it, the core form on a 2025-11-25 connection (rmcp does not keep that revision's
    /// `tasks` capability, so a server without tasks answers their requests with an error),
    /// or `None`.
    pub fn task_protocol(&self) -> Option<TaskProtocol> {
        let info = self.peer.peer_info()?;
        match self.opening.era {
            Era::Modern => info
                .capabilities
                .extensions
                .as_ref()
                .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION))
                .then_some(TaskProtocol::Extension),
            Era::Legacy => {
                (info.protocol_version.as_str() == CORE_TASKS_VERSION).then_some(TaskProtocol::Core)
            }
        }
    }

    /// Call `tool` as a task and return at once with the task (or with the result, when a
    /// 2026-07-28 server answers without one). Over 2025-11-25 the request asks for a task;
    /// over 2026-07-28 the server decides. The call's progress (2025-11-25) is not followed
    /// here: [`wait_task`](Self::wait_task) follows the task.
    pub async fn start_tool_task(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<TaskStart, ClientError> {
        self.start_task(tool, arguments, options, None).await
    }

    /// Call `tool` as a task and wait for its result: [`start_tool_task`](Self::start_tool_task)
    /// and then [`wait_task`](Self::wait_task), within the call's one timeout.
    pub async fn call_tool_as_task(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<ToolOutput, ClientError> {
        let started = Instant::now();
        let timeout = options.timeout.or(self.tool_timeout);
        let deadline = timeout.map(|t| started + t);
        // Core tasks keep the request's progress token; its route lives as long as the wait.
        let token = ProgressToken(NumberOrString::String(
            format!("mcpr-task-{}", next_token()).into(),
        ));
        let _progress = options
            .progress
            .as_ref()
            .map(|sender| self.progress.register(token.clone(), sender.clone()));
        let method = format!("tools/call `{tool}`");
        let start = self.start_task(tool, arguments, &options, Some(token));
        let start = match within(deadline, start).await {
            Some(start) => start?,
            None => return Err(self.timed_out(&method, timeout)),
        };
        match start {
            TaskStart::Finished(output) => Ok(output),
            TaskStart::Started(state) => self.follow(state, &options, deadline, &method).await,
        }
    }

    /// Wait for task `id` to finish and return its result: poll `tasks/get` (at the server's
    /// `pollInterval`, capped at [`MAX_POLL_INTERVAL`]), take status notifications as they
    /// come, answer the server's questions, and fetch the result. Works on any connection to
    /// the server, so a task started before a reconnect is taken up again by its id.
    ///
    /// Bounded by `options.timeout` (else the server's tool timeout): past it, or when
    /// `options.cancel` fires, the task is cancelled and the wait fails.
    /// `options.task_status` receives every state seen.
    pub async fn wait_task(
        &self,
        id: &str,
        options: CallOptions,
    ) -> Result<ToolOutput, ClientError> {
        self.check_task_id(id)?;
        let timeout = options.timeout.or(self.tool_timeout);
        let deadline = timeout.map(|t| Instant::now() + t);
        let method = "tasks/get";
        let state = match within(deadline, self.get_task(id)).await {
            Some(state) => state?,
            None => return Err(self.timed_out(method, timeout)),
        };
        self.follow(state, &options, deadline, method).await
    }

    /// The task's current state (`tasks/get`).
    pub async fn get_task(&self, id: &str) -> Result<TaskState, ClientError> {
        self.check_task_id(id)?;
        let result = self.task_request("tasks/get", id, json!({})).await?;
        let state = TaskState::from_wire(&result).map_err(|p| self.task_error(id, p))?;
        if state.id != id {
            return Err(self.task_error(
                id,
                TaskProblem::InvalidState("the server answered about another task".into()),
            ));
        }
        Ok(state)
    }

    /// The result of a finished task. A task still running is an error
    /// ([`TaskProblem::NotFinished`]), except over 2025-11-25, whose `tasks/result` waits for
    /// it within the request timeout.
    pub async fn task_result(&self, id: &str) -> Result<ToolOutput, ClientError> {
        self.check_task_id(id)?;
        match self.task_protocol() {
            Some(TaskProtocol::Core) => self.core_result(id, self.config.request_timeout()).await,
            _ => {
                let state = self.get_task(id).await?;
                if !state.status.is_terminal() {
                    return Err(self.task_error(id, TaskProblem::NotFinished(state.status)));
                }
                self.finish(state, None).await
            }
        }
    }

    /// Ask the server to cancel task `id` (`tasks/cancel`). Over 2025-11-25 the server answers
    /// with the task's state; over 2026-07-28 only with an acknowledgement (`None`).
    pub async fn cancel_task(&self, id: &str) -> Result<Option<TaskState>, ClientError> {
        self.check_task_id(id)?;
        let result = self.task_request("tasks/cancel", id, json!({})).await?;
        if !result.contains_key("taskId") {
            return Ok(None);
        }
        TaskState::from_wire(&result)
            .map(Some)
            .map_err(|p| self.task_error(id, p))
    }

    /// One page of the server's tasks (`tasks/list`, 2025-11-25). Revision 2026-07-28 has no
    /// list: asking for one there is [`TaskProblem::Unsupported`].
    pub async fn list_tasks(&self, cursor: Option<&str>) -> Result<TaskPage, ClientError> {
        if self.task_protocol() == Some(TaskProtocol::Extension) {
            return Err(self.task_error(
                "*",
                TaskProblem::Unsupported(
                    "the tasks extension of protocol 2026-07-28 has no tasks/list".into(),
                ),
            ));
        }
        let method = "tasks/list";
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let result = self
            .task_call(method, params, self.config.request_timeout())
            .await?;
        let tasks = match result.get("tasks") {
            Some(Value::Array(tasks)) => tasks,
            _ => return Err(self.protocol_error(method, "invalid result: no `tasks` array")),
        };
        let tasks = tasks
            .iter()
            .map(|task| match task {
                Value::Object(task) => TaskState::from_wire(task),
                _ => Err(TaskProblem::InvalidState(
                    "a task that is not an object".into(),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|p| self.task_error("*", p))?;
        let next_cursor = result
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        Ok(TaskPage { tasks, next_cursor })
    }

    /// Send the task-augmented `tools/call`.
    async fn start_task(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
        progress: Option<ProgressToken>,
    ) -> Result<TaskStart, ClientError> {
        let method = format!("tools/call `{tool}`");
        let mut params = Map::new();
        params.insert("name".into(), tool.into());
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        let mut meta = Map::new();
        options.trace.write_into(&mut meta);
        if let Some(token) = &progress {
            meta.insert("progressToken".into(), json!(token.0));
        }
        if self.task_protocol() != Some(TaskProtocol::Extension) {
            // 2025-11-25 asks per request; 2026-07-28 declares the extension in every
            // request's capabilities (see the handler) and leaves the choice to the server.
            params.insert("task".into(), json!({}));
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        let timeout = options.timeout.or(self.tool_timeout);
        let result = self
            .task_call(&method, Value::Object(params), timeout)
            .await?;
        match TaskState::created(&result) {
            Some(Ok(state)) => Ok(TaskStart::Started(state)),
            Some(Err(problem)) => Err(self.task_error("?", problem)),
            None => ToolOutput::from_wire(result)
                .map(TaskStart::Finished)
                .map_err(|e| self.protocol_error(&method, format!("invalid result: {e}"))),
        }
    }

    /// Follow the task a `tools/call` answer created, within what is `left` of the call.
    pub(super) async fn follow_created(
        &self,
        created: &Map<String, Value>,
        options: &CallOptions,
        left: Option<Duration>,
        method: &(impl std::fmt::Display + ?Sized),
    ) -> Result<ToolOutput, ClientError> {
        let state = TaskState::from_wire(created).map_err(|p| self.task_error("?", p))?;
        let deadline = left.map(|left| Instant::now() + left);
        self.follow(state, options, deadline, &method.to_string())
            .await
    }

    /// Follow a task from `state` until it finishes, and return its result.
    pub(super) async fn follow(
        &self,
        mut state: TaskState,
        options: &CallOptions,
        deadline: Option<Instant>,
        method: &str,
    ) -> Result<ToolOutput, ClientError> {
        let id = state.id.clone();
        let (_watch, mut pushed) = self.handler.tasks.watch(&id);
        let mut backoff = FIRST_BACKOFF;
        let mut answered: HashSet<String> = HashSet::new();
        let mut rounds = 0;
        loop {
            if let Some(status) = &options.task_status {
                let _ = status.try_send(state.clone());
            }
            if state.status.is_terminal() {
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                return self.finish(state, left).await;
            }
            if state.status == TaskStatus::InputRequired {
                if self.task_protocol() == Some(TaskProtocol::Core) {
                    // The server asks its questions as requests while `tasks/result` waits.
                    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    let result = self.core_result(&id, left);
                    return self.guarded(&id, options, deadline, method, result).await?;
                }
                rounds += 1;
                if rounds > mrtr::MAX_INPUT_ROUNDS {
                    return Err(self.task_error(&id, TaskProblem::NeedsInput));
                }
                let answer = self.answer_task_input(&id, &mut answered, options, deadline);
                self.guarded(&id, options, deadline, method, answer)
                    .await??;
            } else {
                let pause = match state.poll_interval {
                    Some(asked) => asked.clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL),
                    None => backoff,
                };
                backoff = (backoff * 2).min(MAX_BACKOFF);
                let slept = async {
                    tokio::select! {
                        () = tokio::time::sleep(pause) => None,
                        Some(pushed) = pushed.recv() => Some(pushed),
                    }
                };
                if let Some(newer) = self.guarded(&id, options, deadline, method, slept).await? {
                    state = newer;
                    continue;
                }
            }
            state = self
                .guarded(&id, options, deadline, method, self.get_task(&id))
                .await??;
        }
    }

    /// Run `step` of a wait unless the deadline passes or the caller cancels first; then the
    /// task is cancelled (best effort) and the wait fails.
    async fn guarded<T>(
        &self,
        id: &str,
        options: &CallOptions,
        deadline: Option<Instant>,
        method: &str,
        step: impl Future<Output = T>,
    ) -> Result<T, ClientError> {
        let cancelled = async {
            match &options.cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            done = within(deadline, step) => done,
            () = cancelled => {
                self.cancel_quietly(id).await;
                return Err(ClientError::Cancelled {
                    server: self.server.clone(),
                    method: method.to_owned(),
                });
            }
        };
        match outcome {
            Some(done) => Ok(done),
            None => {
                self.cancel_quietly(id).await;
                let timeout = deadline.map(|_| options.timeout.or(self.tool_timeout));
                Err(self.timed_out(method, timeout.flatten()))
            }
        }
    }

    /// `tasks/cancel`, its outcome ignored: the caller has given up on the task already.
    async fn cancel_quietly(&self, id: &str) {
        let bound = Duration::from_secs(2);
        if let Ok(Err(e)) = tokio::time::timeout(bound, self.cancel_task(id)).await {
            tracing::debug!(server = %self.server, "tasks/cancel of an abandoned task failed: {e}");
        }
    }

    /// A 2026-07-28 task waits for answers: answer its `inputRequests` not answered yet
    /// through the host's handlers, and send them with `tasks/update`.
    async fn answer_task_input(
        &self,
        id: &str,
        answered: &mut HashSet<String>,
        options: &CallOptions,
        deadline: Option<Instant>,
    ) -> Result<(), ClientError> {
        let result = self.task_request("tasks/get", id, json!({})).await?;
        let mut requests = match result.get("inputRequests") {
            Some(Value::Object(requests)) => requests.clone(),
            _ => Map::new(),
        };
        requests.retain(|key, _| !answered.contains(key));
        if requests.is_empty() {
            // Nothing new to answer: the server has not taken the last answers in yet.
            tokio::time::sleep(FIRST_BACKOFF).await;
            return Ok(());
        }
        let asked = json!({"resultType": "input_required", "inputRequests": requests});
        let asked = serde_json::from_value(asked).map_err(|e| {
            self.task_error(id, TaskProblem::InvalidState(format!("inputRequests: {e}")))
        })?;
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let asker = options.input.as_ref().map(|input| (input, left));
        let retry = Box::pin(mrtr::next_round(&self.handler, asked, "tasks/get", asker)).await?;
        answered.extend(requests.keys().cloned());
        let responses = serde_json::to_value(retry.input_responses.unwrap_or_default())
            .unwrap_or_else(|_| json!({}));
        self.task_request("tasks/update", id, json!({ "inputResponses": responses }))
            .await
            .map(|_| ())
    }

    /// The result of a task that finished in `state`.
    async fn finish(
        &self,
        state: TaskState,
        left: Option<Duration>,
    ) -> Result<ToolOutput, ClientError> {
        let id = state.id.clone();
        match (state.status, state.outcome) {
            (TaskStatus::Cancelled, _) => Err(self.task_error(&id, TaskProblem::Cancelled)),
            (_, Some(TaskOutcome::Result(result))) => ToolOutput::from_wire(result)
                .map_err(|e| self.protocol_error("tasks/get", format!("invalid result: {e}"))),
            (_, Some(TaskOutcome::Error(error))) => Err(ClientError::Rpc {
                server: self.server.clone(),
                method: format!("task `{}`", escaped(&id)),
                code: error
                    .get("code")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok())
                    .unwrap_or(-32603),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the task failed")
                    .to_owned(),
                data: error.get("data").cloned().map(Box::new),
            }),
            _ if self.task_protocol() != Some(TaskProtocol::Extension) => {
                let bound = left.or(self.config.request_timeout());
                self.core_result(&id, bound).await
            }
            (TaskStatus::Failed, None) => {
                Err(self.task_error(&id, TaskProblem::Failed(state.status_message)))
            }
            _ => Err(self.task_error(
                &id,
                TaskProblem::InvalidState("completed without a result".into()),
            )),
        }
    }

    /// `tasks/result` (2025-11-25): the result, or the error the request failed with.
    async fn core_result(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<ToolOutput, ClientError> {
        let method = "tasks/result";
        let result = self
            .task_call(method, json!({ "taskId": id }), timeout)
            .await?;
        ToolOutput::from_wire(result)
            .map_err(|e| self.protocol_error(method, format!("invalid result: {e}")))
    }

    /// A request about task `id`, bounded by the request timeout.
    async fn task_request(
        &self,
        method: &str,
        id: &str,
        mut params: Value,
    ) -> Result<Map<String, Value>, ClientError> {
        if let Value::Object(params) = &mut params {
            params.insert("taskId".into(), id.into());
        }
        self.task_call(method, params, self.config.request_timeout())
            .await
    }

    /// A request of a method rmcp does not model, its result as sent.
    pub(crate) async fn task_call(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Map<String, Value>, ClientError> {
        let wire_method = method.split(' ').next().unwrap_or(method).to_owned();
        let request = ClientRequest::CustomRequest(CustomRequest::new(wire_method, Some(params)));
        let result = self.request(request, method, timeout, None).await?;
        let value = match result {
            ServerResult::CustomResult(result) => result.0,
            other => serde_json::to_value(&other)
                .map_err(|e| self.protocol_error(method, format!("invalid result: {e}")))?,
        };
        match value {
            Value::Object(object) => Ok(object),
            _ => Err(self.protocol_error(method, "invalid result: not an object")),
        }
    }

    /// The bound on one request to this server (its request timeout).
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn request_timeout(&self) -> Option<Duration> {
        self.config.request_timeout()
    }

    fn check_task_id(&self, id: &str) -> Result<(), ClientError> {
        check_id(id).map_err(|p| self.task_error(id, p))
    }

    fn task_error(&self, id: &str, problem: TaskProblem) -> ClientError {
        ClientError::Task {
            server: self.server.clone(),
            task: escaped(id),
            problem,
        }
    }

    fn timed_out(&self, method: &str, timeout: Option<Duration>) -> ClientError {
        ClientError::Timeout {
            server: self.server.clone(),
            phase: method.to_owned(),
            after: timeout.unwrap_or_default(),
            stderr: self.stderr_tail(super::STDERR_TAIL_LINES),
        }
    }
}

/// A task handle as a tool's output, for a caller that passes tasks on (see
/// `CallOptions::pass_tasks`): the handle whole in `extra`, `resultType` included.
pub(crate) fn handed_back(created: Map<String, Value>) -> ToolOutput {
    ToolOutput {
        extra: created,
        ..ToolOutput::default()
    }
}

/// The task handle [`handed_back`] made of an output, if it is one.
#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
pub(crate) fn handle_of(output: &ToolOutput) -> Option<&Map<String, Value>> {
    (output.extra.get("resultType").and_then(Value::as_str) == Some("task"))
        .then_some(&output.extra)
}

/// `step`, or `None` when `deadline` passes first.
async fn within<T>(deadline: Option<Instant>, step: impl Future<Output = T>) -> Option<T> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline.into(), step).await.ok(),
        None => Some(step.await),
    }
}

/// A task id fit for a message: at most 80 characters, control characters escaped.
fn escaped(id: &str) -> String {
    let mut shown: String = id.chars().take(80).flat_map(char::escape_debug).collect();
    if id.chars().count() > 80 {
        shown.push('…');
    }
    shown
}

/// A number for this process's task progress tokens, never the same twice.
fn next_token() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
