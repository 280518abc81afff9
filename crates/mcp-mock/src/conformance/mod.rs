//! `--conformance`: the mock as the reference server of the official MCP conformance suite,
//! in both eras of the protocol.
//!
//! The rest of the mock is built on rmcp and speaks one era at a time; this mode answers
//! JSON-RPC by hand so that every byte the suite checks is ours to decide:
//! - a client that sends `initialize` gets the session lifecycle of 2025-11-25 (over HTTP an
//!   `Mcp-Session-Id`, requests from the server on the call's own stream, a standalone GET
//!   stream, DELETE to end the session);
//! - any other request is a 2026-07-28 request: stateless, validated on its own (`_meta`,
//!   `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), answered with
//!   `resultType` and caching hints, with `server/discover`, `subscriptions/listen` and the
//!   input-required (MRTR) flows instead of requests from the server.
//!
//! Modules: [`catalog`] (the fixed tools, resources and prompts), [`dispatch`] (one request,
//! either era), [`exchange`] (the context it runs in), [`tools`] (tools that talk while they run), [`mrtr`] (the input-required
//! tools and prompt), [`modern`] (2026-07-28 validation and result decoration), [`session`]
//! (the 2025-11-25 session), [`resume`] (its resumable event streams), [`tasks`] (task state,
//! bounded per session or server) and [`task_tools`] (the tools that run as tasks and the
//! `tasks/*` methods, in both eras), [`http`] and [`stdio`] (the transports).

mod catalog;
mod dispatch;
mod exchange;
mod http;
mod modern;
mod mrtr;
mod resume;
mod session;
mod stdio;
mod task_tools;
pub(crate) mod tasks;
mod tools;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::mpsc;

pub(crate) use self::http::serve as serve_http;
pub(crate) use self::stdio::serve as serve_stdio;

use self::session::Session;

/// The protocol revision of the stateless era.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";

/// Most sessions open at once: a client that keeps opening sessions (and never ends them)
/// is refused rather than allowed to grow the process without bound.
const MAX_SESSIONS: usize = 4096;

/// The revisions a client may open a session with, newest first.
pub(crate) const SESSION_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A JSON-RPC error, with the HTTP status it travels with.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
    /// 200 for errors of the `initialize` era; 400 or 404 where 2026-07-28 asks for them.
    pub status: u16,
}

impl Failure {
    /// An error with status 200.
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
            data: None,
            status: 200,
        }
    }

    /// The same error with `data`.
    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The same error with HTTP `status`.
    pub(crate) fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// The failure a JSON-RPC `error` object names: its code (`-32603` when it has none) and
    /// its message (`fallback` when it has none).
    pub(crate) fn from_error(error: &Value, fallback: &str) -> Self {
        Failure::new(
            error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or(fallback),
        )
    }

    /// `-32602 Invalid params`.
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Failure::new(-32602, message)
    }

    /// `-32601 Method not found`.
    pub(crate) fn method_not_found(method: &str) -> Self {
        Failure::new(-32601, format!("Method not found: {method}"))
    }

    /// The error member of a JSON-RPC error response.
    pub(crate) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Some(data), Some(object)) = (&self.data, error.as_object_mut()) {
            object.insert("data".into(), data.clone());
        }
        error
    }
}

/// A JSON-RPC response to `id` carrying `reply`.
pub(crate) fn response(id: &Value, reply: &Result<Value, Failure>) -> Value {
    match reply {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(failure) => json!({"jsonrpc": "2.0", "id": id, "error": failure.to_json()}),
    }
}

/// A result with one text block.
pub(crate) fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// A JSON-RPC notification.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// One open `subscriptions/listen` stream.
struct Listener {
    subscription_id: Value,
    tools: bool,
    prompts: bool,
    out: mpsc::UnboundedSender<Value>,
}

/// What every request of one conformance server shares.
pub(crate) struct Server {
    /// `serverInfo.name`.
    name: String,
    /// The key that signs `requestState` (random per process).
    secret: [u8; 32],
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    listeners: Mutex<Vec<Listener>>,
    /// The tasks of 2026-07-28 requests (which have no session).
    tasks: tasks::TaskStore,
}

impl Server {
    /// A server named `name` with a fresh signing key.
    pub(crate) fn new(name: String) -> anyhow::Result<Arc<Self>> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
        Ok(Arc::new(Server {
            name,
            secret,
            sessions: Mutex::new(HashMap::new()),
            listeners: Mutex::new(Vec::new()),
            tasks: tasks::TaskStore::default(),
        }))
    }

    /// `serverInfo`.
    fn info(&self) -> Value {
        json!({"name": self.name, "version": env!("CARGO_PKG_VERSION")})
    }

    /// The session with `id`, if it is open.
    fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Opens a new session.
    fn open_session(&self) -> anyhow::Result<Arc<Session>> {
        let session = Arc::new(Session::new(random_id()?));
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= MAX_SESSIONS {
            anyhow::bail!("too many open sessions ({MAX_SESSIONS}); end one with DELETE first");
        }
        sessions.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// Ends session `id`; false if there was none.
    fn close_session(&self, id: &str) -> bool {
        let removed = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        if let Some(session) = &removed {
            session.close();
        }
        removed.is_some()
    }

    /// Registers a `subscriptions/listen` stream.
    fn listen(
        &self,
        subscription_id: Value,
        tools: bool,
        prompts: bool,
    ) -> mpsc::UnboundedReceiver<Value> {
        let (out, rx) = mpsc::unbounded_channel();
        let mut listeners = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        listeners.retain(|l| !l.out.is_closed());
        listeners.push(Listener {
            subscription_id,
            tools,
            prompts,
            out,
        });
        rx
    }

    /// Tells every open listen stream (and session stream) that asked for it that the tool or
    /// prompt list changed.
    fn announce(&self, tools: bool) {
        let method = if tools {
            "notifications/tools/list_changed"
        } else {
            "notifications/prompts/list_changed"
        };
        let mut listeners = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        listeners.retain(|l| !l.out.is_closed());
        for listener in listeners.iter() {
            if (tools && listener.tools) || (!tools && listener.prompts) {
                let meta = json!({"_meta": {
                    "io.modelcontextprotocol/subscriptionId": listener.subscription_id,
                }});
                let _ = listener.out.send(notification(method, meta));
            }
        }
    }
}

/// 128 random bits as hex: session ids and nonces.
fn random_id() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Where `--conformance` serves.
pub(crate) enum Endpoint {
    Stdio,
    Http(SocketAddr),
}

/// Runs the conformance server until stdin closes (stdio) or a signal arrives (HTTP).
pub(crate) async fn run(name: String, endpoint: Endpoint) -> anyhow::Result<()> {
    let server = Server::new(name)?;
    match endpoint {
        Endpoint::Stdio => serve_stdio(server).await,
        Endpoint::Http(addr) => serve_http(server, addr).await,
    }
}
