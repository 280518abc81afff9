//! `tools/call` in conformance mode: the fixed answers of [`super::catalog`], and the tools
//! that talk while they run (log messages, progress, and in the `initialize` era requests to
//! the client: sampling and elicitation).

use std::time::Duration;

use serde_json::{Value, json};

use super::exchange::{Era, Exchange};
use super::{Failure, Server, catalog, mrtr, text};

/// The pause between the messages of a talking tool, so that they arrive as a stream.
const STEP: Duration = Duration::from_millis(50);

/// How long `test_reconnection` runs after closing its stream's connection.
const RECONNECTION_PAUSE: Duration = Duration::from_millis(200);

/// Runs tool `name` with `args` (the request's `params` are there for the input-required
/// tools, which read `inputResponses` and `requestState`).
pub(super) async fn call(
    server: &Server,
    name: &str,
    args: &Value,
    params: &Value,
    x: &Exchange,
) -> Result<Value, Failure> {
    if let Some(result) = catalog::fixed_call(name) {
        return Ok(result);
    }
    if let Some(result) = mrtr::call(server, name, params, x) {
        return result;
    }
    match name {
        "test_tool_with_logging" => {
            for (i, text) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(STEP).await;
                }
                x.log("info", json!(text));
            }
            Ok(text("Tool with logging executed successfully"))
        }
        "test_tool_with_progress" => {
            for (i, step) in [0, 50, 100].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(STEP).await;
                }
                x.progress(step, 100, &format!("Completed step {step} of 100"));
            }
            let token = match &x.progress_token {
                Some(Value::String(token)) => token.clone(),
                Some(token) => token.to_string(),
                None => "no progress token".to_owned(),
            };
            Ok(text(&token))
        }
        "json_schema_2020_12_tool" => Ok(text(&format!(
            "JSON Schema 2020-12 tool called with: {args}"
        ))),
        "test_header_param" => {
            let region = args.get("region").and_then(Value::as_str).unwrap_or("");
            Ok(text(&format!("region: {region}")))
        }
        "test_sampling"
        | "test_elicitation"
        | "test_elicitation_sep1034_defaults"
        | "test_elicitation_sep1330_enums" => ask_client(name, args, params, x).await,
        "test_missing_capability" => {
            if !x.client_has("sampling") {
                return Err(Failure::new(-32021, "MissingRequiredClientCapabilityError")
                    .with_data(json!({"requiredCapabilities": {"sampling": {}}}))
                    .with_status(400));
            }
            Ok(text("Success"))
        }
        "test_streaming_elicitation" => {
            x.progress(50, 100, "Halfway");
            Ok(text("Streaming complete"))
        }
        "test_reconnection" => {
            // The connection closes first; the answer follows a moment later, on the stream
            // the client resumes (over stdio, simply after the pause).
            x.close_stream();
            tokio::time::sleep(RECONNECTION_PAUSE).await;
            Ok(text(
                "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
            ))
        }
        "test_logging_tool" => {
            x.log("info", json!("Diagnostic trace logging activated"));
            Ok(text("Logging evaluated"))
        }
        "test_trigger_tool_change" | "test_trigger_prompt_change" => {
            server.announce(name == "test_trigger_tool_change");
            Ok(text("Mutation triggered"))
        }
        _ => Err(Failure::invalid_params(format!("Unknown tool: {name}"))),
    }
}

/// The tools that ask the client something in the middle of the call: a session client gets
/// the request, a stateless one an `input_required` result naming it (key `input`), and its
/// retry's `inputResponses.input` is the answer.
async fn ask_client(
    name: &str,
    args: &Value,
    call: &Value,
    x: &Exchange,
) -> Result<Value, Failure> {
    let arg = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (method, params) = match name {
        "test_sampling" => (
            "sampling/createMessage",
            json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": arg("prompt")}}],
                "maxTokens": 100,
            }),
        ),
        "test_elicitation" => (
            "elicitation/create",
            json!({
                "message": arg("message"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {"response": {"type": "string", "description": "User's response"}},
                    "required": ["response"],
                },
            }),
        ),
        "test_elicitation_sep1034_defaults" => ("elicitation/create", defaults_form()),
        _ => ("elicitation/create", enums_form()),
    };
    let answer = match &x.era {
        Era::Session(session) => match session.request(&x.out, method, params).await {
            Ok(answer) => answer,
            Err(failure) => {
                return Ok(text(&format!(
                    "Request to the client failed: {}",
                    failure.message
                )));
            }
        },
        Era::Stateless(_) => match call.pointer("/inputResponses/input") {
            Some(answer) => answer.clone(),
            None => {
                return Ok(json!({
                    "resultType": "input_required",
                    "inputRequests": {"input": {"method": method, "params": params}},
                }));
            }
        },
    };
    let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
    let action = answer.get("action").and_then(Value::as_str).unwrap_or("");
    Ok(text(&match name {
        "test_sampling" => {
            let reply = content
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("No response");
            format!("LLM response: {reply}")
        }
        "test_elicitation" => format!("User response: action={action}, content={content}"),
        _ => format!("Elicitation completed: action={action}, content={content}"),
    }))
}

/// The elicitation form with a default for every primitive type.
fn defaults_form() -> Value {
    json!({
        "message": "Please review and update the form fields with defaults",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": true},
            },
            "required": [],
        },
    })
}

/// The elicitation form with every enum variant.
fn enums_form() -> Value {
    json!({
        "message": "Please select options from the enum fields",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ],
                    },
                },
            },
            "required": [],
        },
    })
}
