//! Tasks passed through the gateway (the `io.modelcontextprotocol/tasks` extension, 2026-07-28).
//!
//! A client that declares the extension and calls a tool whose server makes a task of the
//! call gets that task back under an id of the gateway's own: 128 random bits, never the
//! server's id, so that two servers' ids cannot collide and no client can reach a task by
//! guessing a server's (often sequential) ids. `tasks/get`, `tasks/update` and `tasks/cancel`
//! are routed by that id to the task's server, under its own id there, and the answer is
//! given back under the gateway's. Where the gateway can tell its clients apart (the HTTP
//! session of a client that has one, the credentials it presents) a task answers only the
//! client that started it; a stateless client holds its task by the unguessable id alone, as
//! the extension intends.
//!
//! Clients of the revisions with sessions (2025-11-25) cannot be handed a task through rmcp,
//! which drops their `task` parameter: the gateway follows their calls' tasks itself and
//! answers with the result. The routes are bounded ([`MAX_ROUTES`]): the oldest go first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, CreateTaskResult, GetTaskParams,
    GetTaskResult, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value};

use super::Gateway;
use super::answer::Answered;
use super::input::Asker;
use crate::client::tasks::TASKS_EXTENSION;
use crate::client::{ClientError, McpClient};

/// Most tasks the gateway keeps a route for; past it the oldest route is dropped (its task
/// is then unknown to the gateway's clients).
pub(crate) const MAX_ROUTES: usize = 4096;

/// Where one of the gateway's task ids leads.
#[derive(Debug, Clone)]
struct Route {
    server: String,
    /// The task's id on its server.
    task: String,
    /// Who may use it: the client's session or credentials, when it has any.
    owner: Option<String>,
}

/// The gateway's task ids and where they lead.
#[derive(Debug, Default)]
pub(crate) struct TaskRoutes {
    inner: Mutex<Routes>,
}

#[derive(Debug, Default)]
struct Routes {
    by_id: HashMap<String, Route>,
    order: VecDeque<String>,
}

/// Whether a client's capabilities declare the tasks extension.
pub(crate) fn declares_tasks(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION))
}

/// Offer the tasks extension in the gateway's capabilities when `offered`: when a server in
/// scope offers it, and during start-up (as logging is, since a client asking then would
/// never learn it).
pub(crate) fn offer(capabilities: &mut rmcp::model::ServerCapabilities, offered: bool) {
    if offered {
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION.to_owned(), Default::default());
    }
}

/// For a call of `asker`'s: whether a backend's task is passed to it (a 2026-07-28 client
/// that declares tasks), and the capabilities the backend is told. A client of a revision
/// with sessions cannot be handed a task, so the gateway declares tasks for it and follows
/// them itself; a stateless client is told as it declared.
pub(crate) fn for_call(asker: &Asker) -> (bool, Arc<ClientCapabilities>) {
    if asker.stateless {
        return (declares_tasks(&asker.declared), asker.declared.clone());
    }
    let mut declared = (*asker.declared).clone();
    declared
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION.to_owned(), Default::default());
    (false, Arc::new(declared))
}

/// Who the client of `context` is, as far as the gateway can tell: its HTTP session, else a
/// digest of the credentials it presents; `None` when nothing tells clients apart (stdio has
/// one client; a stateless client without credentials holds its tasks by their ids alone).
pub(crate) fn owner_of(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    if let Some(session) = parts.headers.get("mcp-session-id") {
        return Some(format!(
            "session:{}",
            String::from_utf8_lossy(session.as_bytes())
        ));
    }
    let credentials = parts.headers.get(axum::http::header::AUTHORIZATION)?;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(credentials.as_bytes());
    Some(format!("credentials:{}", crate::fsutil::hex(&digest)))
}

impl TaskRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A task `server` made of a client's call (its handle as sent), handed to the client
    /// under a new id of the gateway's.
    pub(crate) fn hand_over(
        &self,
        server: &str,
        handle: &Map<String, Value>,
        owner: Option<String>,
    ) -> Result<CreateTaskResult, McpError> {
        let task = handle
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::internal_error("the server's task has no id", None))?;
        let id = new_id().ok_or_else(|| McpError::internal_error("no randomness", None))?;
        let mut handle = handle.clone();
        handle.insert("taskId".into(), Value::String(id.clone()));
        let created: CreateTaskResult = serde_json::from_value(Value::Object(handle))
            .map_err(|e| McpError::internal_error(format!("the server's task: {e}"), None))?;
        let mut routes = self.lock();
        if routes.order.len() >= MAX_ROUTES
            && let Some(oldest) = routes.order.pop_front()
        {
            routes.by_id.remove(&oldest);
        }
        let route = Route {
            server: server.to_owned(),
            task: task.to_owned(),
            owner,
        };
        routes.by_id.insert(id.clone(), route);
        routes.order.push_back(id);
        Ok(created)
    }

    /// The server and its task id behind the gateway's `id`, for the client `owner`. Unknown
    /// and foreign ids get the same error, so that a client learns nothing of the others'.
    fn route(&self, id: &str, owner: Option<&str>) -> Result<Route, McpError> {
        let routes = self.lock();
        match routes.by_id.get(id) {
            Some(route) if route.owner.is_none() || route.owner.as_deref() == owner => {
                Ok(route.clone())
            }
            _ => Err(McpError::invalid_params(
                format!("unknown task: {}", id.escape_debug()),
                None,
            )),
        }
    }

    /// `method` (`tasks/get`, `tasks/update`, `tasks/cancel`) for the gateway's task `id`,
    /// sent to its server by `client_of` as the server's id; the answer as sent, under the
    /// gateway's id.
    pub(crate) async fn forward<F>(
        &self,
        method: &str,
        id: &str,
        mut params: Map<String, Value>,
        owner: Option<&str>,
        client_of: F,
    ) -> Result<Map<String, Value>, McpError>
    where
        F: FnOnce(&str) -> Option<std::sync::Arc<McpClient>>,
    {
        let route = self.route(id, owner)?;
        let client = client_of(&route.server).ok_or_else(|| {
            McpError::internal_error(format!("server `{}` is not connected", route.server), None)
        })?;
        params.insert("taskId".into(), Value::String(route.task.clone()));
        let mut answer = client
            .task_call(method, Value::Object(params), client.request_timeout())
            .await
            .map_err(relayed_error)?;
        if answer.contains_key("taskId") {
            answer.insert("taskId".into(), Value::String(id.to_owned()));
        }
        Ok(answer)
    }
}

impl Gateway {
    /// A call's answer, with the task its server made of it handed to the client under the
    /// gateway's id when the client takes tasks (`pass`).
    pub(super) fn hand_over_task(
        &self,
        answered: Answered,
        pass: bool,
        server: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Answered, McpError> {
        let Answered::Output(output, modern) = answered else {
            return Ok(answered);
        };
        match crate::client::tasks::handle_of(&output).filter(|_| pass) {
            Some(handle) => {
                let created = self
                    .inner
                    .tasks
                    .hand_over(server, handle, owner_of(context))?;
                Ok(Answered::Response(CallToolResponse::Task(created)))
            }
            None => Ok(Answered::Output(output, modern)),
        }
    }

    /// `tasks/get` of a task the gateway handed out.
    pub(super) async fn get_passed_task(
        &self,
        request: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let answer = self
            .forward_task("tasks/get", &request.task_id, Map::new(), context)
            .await?;
        serde_json::from_value(Value::Object(answer))
            .map_err(|e| McpError::internal_error(format!("the server's task: {e}"), None))
    }

    /// `tasks/update` of a task the gateway handed out: the client's answers to its server.
    pub(super) async fn update_passed_task(
        &self,
        request: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let mut params = Map::new();
        let responses = serde_json::to_value(&request.input_responses)
            .map_err(|e| McpError::invalid_params(format!("inputResponses: {e}"), None))?;
        params.insert("inputResponses".into(), responses);
        self.forward_task("tasks/update", &request.task_id, params, context)
            .await
            .map(|_| ())
    }

    /// `tasks/cancel` of a task the gateway handed out.
    pub(super) async fn cancel_passed_task(
        &self,
        request: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.forward_task("tasks/cancel", &request.task_id, Map::new(), context)
            .await
            .map(|_| ())
    }

    /// `method` for the gateway's task `id`, at the task's server (see `tasks`).
    async fn forward_task(
        &self,
        method: &str,
        id: &str,
        params: Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Map<String, Value>, McpError> {
        let owner = owner_of(context);
        let manager = &self.inner.scope.manager;
        self.inner
            .tasks
            .forward(method, id, params, owner.as_deref(), |server| {
                manager.client(server)
            })
            .await
    }
}

/// A server's error as the gateway's client gets it: its code and message, as sent.
fn relayed_error(error: ClientError) -> McpError {
    match error {
        ClientError::Rpc {
            code,
            message,
            data,
            ..
        } => McpError::new(rmcp::model::ErrorCode(code), message, data.map(|d| *d)),
        other => McpError::internal_error(other.to_string(), None),
    }
}

/// A new task id: 128 random bits in hex.
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(crate::fsutil::hex(&bytes))
}
