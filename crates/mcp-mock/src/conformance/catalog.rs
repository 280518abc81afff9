//! The fixed content `--conformance` serves: the reference tools, resources, templates and
//! prompts the official conformance suite calls by name, and their answers.
//!
//! Everything here is data; what needs the exchange (progress, logging, sampling, the
//! input-required flows) lives in [`super::tools`] and [`super::mrtr`].

use serde_json::{Value, json};

/// A 1x1 red PNG.
pub(super) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A minimal WAV file.
pub(super) const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// How long list and read results may be cached (`ttlMs`).
pub(super) const TTL_MS: u64 = 300_000;

/// A tool declaration taking no arguments.
fn no_args(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {}},
    })
}

/// A tool declaration with one required string argument.
fn one_string(name: &str, description: &str, arg: &str, arg_description: &str) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {arg: {"type": "string", "description": arg_description}},
            "required": [arg],
        },
    })
}

/// The JSON Schema 2020-12 tool: its schema must reach clients unchanged.
fn json_schema_tool() -> Value {
    json!({
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features for conformance testing",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                },
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {
                "properties": {"contactMethod": {"const": "phone"}},
                "required": ["contactMethod"],
            },
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false,
        },
    })
}

/// A tool whose `region` argument travels in a custom header (`Mcp-Param-Region`).
fn header_tool() -> Value {
    json!({
        "name": "test_header_param",
        "description": "Echoes its region argument, which clients also send as the Mcp-Param-Region header",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region", "description": "Where to run"},
            },
            "required": ["region"],
        },
    })
}

/// Tools of both eras.
fn common_tools() -> Vec<Value> {
    vec![
        no_args("test_simple_text", "Tests simple text content response"),
        no_args("test_image_content", "Tests image content response"),
        no_args("test_audio_content", "Tests audio content response"),
        no_args(
            "test_embedded_resource",
            "Tests embedded resource content response",
        ),
        no_args(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
        ),
        no_args(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
        ),
        no_args(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
        ),
        no_args("test_error_handling", "Tests error response handling"),
        json_schema_tool(),
        // They ask the client in the middle of the call: over a session with a request, a
        // stateless client with an `input_required` result.
        one_string(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            "prompt",
            "The prompt to send to the LLM",
        ),
        one_string(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            "message",
            "The message to show the user",
        ),
        no_args(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values",
        ),
        no_args(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements",
        ),
        // Listed in both eras: a gateway of the 2026-07-28 era in front of the mock serves
        // it to its own session clients. Only a session over HTTP has a stream to close.
        no_args(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection",
        ),
    ]
}

/// The tools a client of the `initialize` era sees.
pub(super) fn legacy_tools() -> Vec<Value> {
    common_tools()
}

/// The tools a 2026-07-28 client sees: the common ones plus the input-required (MRTR) and
/// stateless diagnostics.
pub(super) fn modern_tools() -> Vec<Value> {
    let mut tools = common_tools();
    tools.extend([
        no_args("test_missing_capability", "Test tool requiring sampling"),
        no_args(
            "test_input_required_result_elicitation",
            "MRTR: returns InputRequiredResult with elicitation request",
        ),
        no_args(
            "test_input_required_result_sampling",
            "MRTR: returns InputRequiredResult with sampling request",
        ),
        no_args(
            "test_input_required_result_list_roots",
            "MRTR: returns InputRequiredResult with roots/list request",
        ),
        no_args(
            "test_input_required_result_request_state",
            "MRTR: returns InputRequiredResult with requestState",
        ),
        no_args(
            "test_input_required_result_multiple_inputs",
            "MRTR: returns InputRequiredResult with multiple input requests",
        ),
        no_args(
            "test_input_required_result_multi_round",
            "MRTR: multi-round InputRequiredResult workflow",
        ),
        no_args(
            "test_input_required_result_tampered_state",
            "MRTR: signed requestState integrity test",
        ),
        no_args(
            "test_input_required_result_capabilities",
            "MRTR: respects client capabilities in inputRequests",
        ),
        no_args(
            "test_streaming_elicitation",
            "Diagnostic tool validating response progress streams",
        ),
        no_args("test_logging_tool", "Diagnostic logging validator tool"),
        no_args(
            "test_trigger_tool_change",
            "Announces a tools/list_changed to open subscriptions",
        ),
        no_args(
            "test_trigger_prompt_change",
            "Announces a prompts/list_changed to open subscriptions",
        ),
        header_tool(),
    ]);
    tools
}

/// The answer of a tool that needs nothing but its name, or `None`.
pub(super) fn fixed_call(name: &str) -> Option<Value> {
    let content = match name {
        "test_simple_text" => json!([
            {"type": "text", "text": "This is a simple text response for testing."}
        ]),
        "test_image_content" => json!([{"type": "image", "data": PNG, "mimeType": "image/png"}]),
        "test_audio_content" => json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]),
        "test_embedded_resource" => json!([{
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }]),
        "test_multiple_content_types" => json!([
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {
                "type": "resource",
                "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}",
                },
            },
        ]),
        "test_error_handling" => {
            return Some(json!({
                "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}],
                "isError": true,
            }));
        }
        _ => return None,
    };
    Some(json!({ "content": content }))
}

/// The static resources; the draft-only one is listed to 2026-07-28 clients only.
pub(super) fn resources(modern: bool) -> Vec<Value> {
    let mut list = vec![
        json!({
            "uri": "test://static-text",
            "name": "static-text",
            "title": "Static Text Resource",
            "description": "A static text resource for testing",
            "mimeType": "text/plain",
        }),
        json!({
            "uri": "test://static-binary",
            "name": "static-binary",
            "title": "Static Binary Resource",
            "description": "A static binary resource (image) for testing",
            "mimeType": "image/png",
        }),
        json!({
            "uri": "test://watched-resource",
            "name": "watched-resource",
            "title": "Watched Resource",
            "description": "A resource clients can subscribe to",
            "mimeType": "text/plain",
        }),
    ];
    if modern {
        list.push(json!({
            "uri": "test://stateless-static-text",
            "name": "Stateless Static Text",
            "description": "A static text resource served to 2026-07-28 clients",
            "mimeType": "text/plain",
        }));
    }
    list
}

/// The resource templates.
pub(super) fn templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "test://template/{id}/data",
        "name": "template",
        "title": "Resource Template",
        "description": "A resource template with parameter substitution",
        "mimeType": "application/json",
    })]
}

/// The contents of `uri`, or `None` when there is no such resource.
pub(super) fn read(uri: &str) -> Option<Value> {
    let (mime, body) = match uri {
        "test://static-text" => (
            "text/plain",
            json!({"text": "This is the content of the static text resource."}),
        ),
        "test://static-binary" => ("image/png", json!({"blob": PNG})),
        "test://watched-resource" => ("text/plain", json!({"text": "Watched resource content"})),
        "test://stateless-static-text" => (
            "text/plain",
            json!({"text": "Static text content from the stateless draft path."}),
        ),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            ("application/json", json!({"text": text.to_string()}))
        }
    };
    let mut content = json!({"uri": uri, "mimeType": mime});
    if let (Some(content), Some(body)) = (content.as_object_mut(), body.as_object()) {
        content.extend(body.clone());
    }
    Some(json!({ "contents": [content] }))
}

/// The prompts; the input-required one is listed to 2026-07-28 clients only.
pub(super) fn prompts(modern: bool) -> Vec<Value> {
    let mut list = vec![
        json!({
            "name": "test_simple_prompt",
            "title": "Simple Test Prompt",
            "description": "A simple prompt without arguments",
        }),
        json!({
            "name": "test_prompt_with_arguments",
            "title": "Prompt With Arguments",
            "description": "A prompt with required arguments",
            "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true},
            ],
        }),
        json!({
            "name": "test_prompt_with_embedded_resource",
            "title": "Prompt With Embedded Resource",
            "description": "A prompt that includes an embedded resource",
            "arguments": [
                {"name": "resourceUri", "description": "URI of the resource to embed", "required": true},
            ],
        }),
        json!({
            "name": "test_prompt_with_image",
            "title": "Prompt With Image",
            "description": "A prompt that includes image content",
        }),
    ];
    if modern {
        list.push(json!({
            "name": "test_input_required_result_prompt",
            "description": "MRTR: prompt that requires elicitation input",
        }));
    }
    list
}

/// Why a prompt could not be rendered.
pub(super) enum PromptError {
    /// No prompt by that name.
    Unknown,
    /// A required argument is missing.
    Missing(&'static str),
}

/// The messages of prompt `name` with `args` (a JSON object or null).
pub(super) fn get_prompt(name: &str, args: &Value) -> Result<Value, PromptError> {
    let arg = |key: &'static str| {
        args.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(PromptError::Missing(key))
    };
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match name {
        "test_simple_prompt" => vec![user(
            json!({"type": "text", "text": "This is a simple prompt for testing."}),
        )],
        "test_prompt_with_arguments" => {
            let (arg1, arg2) = (arg("arg1")?, arg("arg2")?);
            vec![user(json!({
                "type": "text",
                "text": format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
            }))]
        }
        "test_prompt_with_embedded_resource" => {
            let uri = arg("resourceUri")?;
            vec![
                user(json!({
                    "type": "resource",
                    "resource": {
                        "uri": uri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                })),
                user(
                    json!({"type": "text", "text": "Please process the embedded resource above."}),
                ),
            ]
        }
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            user(json!({"type": "text", "text": "Please analyze the image above."})),
        ],
        _ => return Err(PromptError::Unknown),
    };
    Ok(json!({ "messages": messages }))
}
