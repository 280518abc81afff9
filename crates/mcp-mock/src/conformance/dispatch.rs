//! One request, in either era: the methods, what each answers, and the context a request
//! runs in ([`Exchange`]).

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::catalog::{self, PromptError};
use super::session::{Session, level_rank};
use super::{Failure, MODERN_VERSION, SESSION_VERSIONS, Server, mrtr, notification, tools};

/// Which era a request belongs to, and what that era knows about the client.
pub enum Era {
    /// The `initialize` era: a session, which can also carry requests to the client.
    Session(Arc<Session>),
    /// 2026-07-28: everything is in the request's own `_meta`.
    Stateless(Meta),
}

/// The client context a 2026-07-28 request carries in `_meta`.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub capabilities: Value,
    /// `io.modelcontextprotocol/logLevel`, as a rank: without it the server sends no logs.
    pub log_level: Option<usize>,
}

/// The context one request runs in.
pub struct Exchange {
    /// The request's own response stream: notifications, and in a session requests to the
    /// client.
    pub out: mpsc::UnboundedSender<Value>,
    pub era: Era,
    /// `_meta.progressToken` of the request.
    pub progress_token: Option<Value>,
    /// Closes the connection carrying `out` (a session's request over HTTP; the client
    /// resumes the stream, see `resume`); `None` elsewhere.
    pub closer: Option<mpsc::UnboundedSender<()>>,
}

impl Exchange {
    /// Whether the client declared capability `name`.
    pub fn client_has(&self, name: &str) -> bool {
        match &self.era {
            Era::Session(session) => session.has_capability(name),
            Era::Stateless(meta) => meta.capabilities.get(name).is_some_and(|v| !v.is_null()),
        }
    }

    /// Sends a log message, if the client asked for messages at `level`.
    pub fn log(&self, level: &str, data: Value) {
        let wanted = match &self.era {
            Era::Session(session) => session.logs(level),
            Era::Stateless(meta) => meta
                .log_level
                .zip(level_rank(level))
                .is_some_and(|(floor, rank)| rank >= floor),
        };
        if wanted {
            let params = json!({"level": level, "logger": "conformance", "data": data});
            let _ = self.out.send(notification("notifications/message", params));
        }
    }

    /// Sends a progress notification, if the request carried a progress token.
    pub fn progress(&self, progress: u64, total: u64, message: &str) {
        if let Some(token) = &self.progress_token {
            let params = json!({
                "progressToken": token,
                "progress": progress,
                "total": total,
                "message": message,
            });
            let _ = self
                .out
                .send(notification("notifications/progress", params));
        }
    }

    /// Closes the connection that carries the request's stream before the answer, where
    /// there is one to close: the client resumes the stream with `Last-Event-ID` to get the
    /// rest (SSE polling).
    pub fn close_stream(&self) {
        if let Some(closer) = &self.closer {
            let _ = closer.send(());
        }
    }

    fn modern(&self) -> bool {
        matches!(self.era, Era::Stateless(_))
    }
}

/// The capabilities the server declares.
pub fn capabilities(modern: bool) -> Value {
    if modern {
        json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true},
            "completions": {},
            "logging": {},
        })
    } else {
        json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "completions": {},
            "logging": {},
        })
    }
}

/// The `initialize` answer for a client asking for `requested`.
pub fn initialize(server: &Server, session: &Session, params: &Value) -> Value {
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = SESSION_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .copied()
        .unwrap_or(SESSION_VERSIONS[0]);
    session.set_capabilities(
        params
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
    );
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(false),
        "serverInfo": server.info(),
    })
}

/// Answers `method` with `params` (everything but `initialize`, `subscriptions/listen` and
/// the checks of 2026-07-28 requests, which the transports do first).
pub async fn handle(
    server: &Server,
    method: &str,
    params: &Value,
    x: &Exchange,
) -> Result<Value, Failure> {
    let modern = x.modern();
    match method {
        "server/discover" => Ok(json!({
            "supportedVersions": [MODERN_VERSION],
            "capabilities": capabilities(true),
            "serverInfo": server.info(),
            "_meta": {"io.modelcontextprotocol/serverInfo": server.info()},
        })),
        "ping" if !modern => Ok(json!({})),
        "logging/setLevel" if !modern => {
            let Era::Session(session) = &x.era else {
                return Err(Failure::method_not_found(method));
            };
            let level = params.get("level").and_then(Value::as_str).unwrap_or("");
            let rank = level_rank(level)
                .ok_or_else(|| Failure::invalid_params(format!("unknown log level `{level}`")))?;
            session.set_log_level(rank);
            Ok(json!({}))
        }
        "tools/list" => Ok(json!({
            "tools": if modern { catalog::modern_tools() } else { catalog::legacy_tools() },
        })),
        "tools/call" => {
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| Failure::invalid_params("tools/call needs params.name"))?;
            let args = params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            if !args.is_object() {
                return Err(Failure::invalid_params(
                    "params.arguments must be an object",
                ));
            }
            tools::call(server, name, &args, params, x).await
        }
        "resources/list" => Ok(json!({"resources": catalog::resources(modern)})),
        "resources/templates/list" => Ok(json!({"resourceTemplates": catalog::templates()})),
        "resources/read" => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| Failure::invalid_params("resources/read needs params.uri"))?;
            catalog::read(uri).ok_or_else(|| {
                Failure::invalid_params(format!("Resource not found: {uri}"))
                    .with_data(json!({"uri": uri}))
            })
        }
        "resources/subscribe" | "resources/unsubscribe" if !modern => {
            let Era::Session(session) = &x.era else {
                return Err(Failure::method_not_found(method));
            };
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| Failure::invalid_params(format!("{method} needs params.uri")))?;
            session.subscribe(uri, method == "resources/subscribe");
            Ok(json!({}))
        }
        "prompts/list" => Ok(json!({"prompts": catalog::prompts(modern)})),
        "prompts/get" => {
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| Failure::invalid_params("prompts/get needs params.name"))?;
            if modern && let Some(result) = mrtr::prompt(server, name, params) {
                return result;
            }
            let args = params.get("arguments").cloned().unwrap_or(Value::Null);
            catalog::get_prompt(name, &args).map_err(|e| match e {
                PromptError::Unknown => Failure::invalid_params(format!("Unknown prompt: {name}")),
                PromptError::Missing(arg) => {
                    Failure::invalid_params(format!("Prompt {name} needs argument `{arg}`"))
                }
            })
        }
        "completion/complete" => Ok(json!({
            "completion": {"values": [], "total": 0, "hasMore": false},
        })),
        _ => Err(Failure::method_not_found(method)),
    }
}
