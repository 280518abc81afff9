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
use std::sync::Mutex;

use rmcp::model::{CreateTaskResult, GetTaskResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value};

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
pub(crate) fn declares_tasks(capabilities: &rmcp::model::ClientCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION))
}

/// What a client of a revision with sessions is taken to declare towards a backend: tasks
/// too, which the gateway follows for it (such a client cannot be handed one).
pub(crate) fn following(
    declared: &rmcp::model::ClientCapabilities,
) -> rmcp::model::ClientCapabilities {
    let mut declared = declared.clone();
    declared
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION.to_owned(), Default::default());
    declared
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

/// A `tasks/get` answer as rmcp's result.
pub(crate) fn get_result(answer: Map<String, Value>) -> Result<GetTaskResult, McpError> {
    serde_json::from_value(Value::Object(answer))
        .map_err(|e| McpError::internal_error(format!("the server's task: {e}"), None))
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
