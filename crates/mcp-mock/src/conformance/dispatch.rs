//! One request, in either era: the methods and what each answers, in the context the request
//! runs in (see `exchange`).

use serde_json::{Value, json};

use super::catalog::{self, PromptError};
use super::exchange::{Era, Exchange};
use super::session::{Session, level_rank};
use super::{Failure, MODERN_VERSION, SESSION_VERSIONS, Server, mrtr, task_tools, tasks, tools};

/// The capabilities the server declares.
pub(super) fn capabilities(modern: bool) -> Value {
    if modern {
        json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true},
            "completions": {},
            "logging": {},
            "extensions": {(tasks::EXTENSION): {}},
        })
    } else {
        json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "completions": {},
            "logging": {},
            "tasks": task_tools::session_capability(),
        })
    }
}

/// The `initialize` answer for a client asking for `requested`.
pub(super) fn initialize(server: &Server, session: &Session, params: &Value) -> Value {
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
pub(super) async fn handle(
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
        "tools/list" => {
            let mut tools = if modern {
                catalog::modern_tools()
            } else {
                catalog::legacy_tools()
            };
            tools.extend(task_tools::definitions());
            Ok(json!({"tools": tools}))
        }
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
            if let Some(result) = task_tools::call(server, name, &args, params, x).await {
                return result;
            }
            if !modern && params.get("task").is_some() {
                return Err(Failure::new(
                    -32601,
                    format!("Tool {name} cannot run as a task"),
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
        _ if method.starts_with("tasks/") => task_tools::method(server, method, params, x)
            .await
            .unwrap_or_else(|| Err(Failure::method_not_found(method))),
        "completion/complete" => Ok(json!({
            "completion": {"values": [], "total": 0, "hasMore": false},
        })),
        _ => Err(Failure::method_not_found(method)),
    }
}
