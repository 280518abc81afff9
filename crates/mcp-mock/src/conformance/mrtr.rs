//! The input-required (MRTR) flows of 2026-07-28: tools and a prompt that answer with
//! `resultType: "input_required"`, naming what they need from the client (elicitation,
//! sampling, roots) in `inputRequests`, and finish when the client retries with
//! `inputResponses`.
//!
//! Every `requestState` the server hands out is signed (HMAC-SHA256 with a per-process key),
//! so a state the client altered or invented is refused with `-32602`, never trusted.
//! Malformed `inputResponses` (not an object, or an answer that is not an object) are refused
//! the same way; a missing answer gets the question again.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::exchange::Exchange;
use super::{Failure, Server, random_id, text};

/// The MRTR tools: `None` if `name` is not one of them.
pub(super) fn call(
    server: &Server,
    name: &str,
    params: &Value,
    x: &Exchange,
) -> Option<Result<Value, Failure>> {
    if !name.starts_with("test_input_required_result_") {
        return None;
    }
    Some(run(server, name, params, x))
}

/// `prompts/get` of the input-required prompt: `None` for any other prompt.
pub(super) fn prompt(
    server: &Server,
    name: &str,
    params: &Value,
) -> Option<Result<Value, Failure>> {
    if name != "test_input_required_result_prompt" {
        return None;
    }
    Some((|| {
        let retry = Retry::read(server, params)?;
        if let Some(answer) = retry.answer("user_context") {
            let context = field(answer, "context");
            return Ok(json!({"messages": [{
                "role": "user",
                "content": {"type": "text", "text": format!("Prompt with context: {context}")},
            }]}));
        }
        Ok(ask(
            &[(
                "user_context",
                elicit("What context should the prompt use?", "context", "string"),
            )],
            None,
        ))
    })())
}

/// What a retry brings: the answers and the verified state.
struct Retry {
    answers: Map<String, Value>,
    state: Option<Value>,
}

impl Retry {
    /// Validates `inputResponses` and `requestState` of `params`.
    fn read(server: &Server, params: &Value) -> Result<Self, Failure> {
        let answers = match params.get("inputResponses") {
            None => Map::new(),
            Some(Value::Object(answers)) => answers.clone(),
            Some(_) => return Err(Failure::invalid_params("inputResponses must be an object")),
        };
        if let Some((key, _)) = answers.iter().find(|(_, answer)| !answer.is_object()) {
            return Err(Failure::invalid_params(format!(
                "inputResponses.{key} must be an object"
            )));
        }
        let state =
            match params.get("requestState") {
                None | Some(Value::Null) => None,
                Some(Value::String(state)) => Some(verify(server, state).ok_or_else(|| {
                    Failure::invalid_params("requestState integrity check failed")
                })?),
                Some(_) => return Err(Failure::invalid_params("requestState must be a string")),
            };
        Ok(Retry { answers, state })
    }

    fn answer(&self, key: &str) -> Option<&Value> {
        self.answers.get(key)
    }

    /// The state's `kind`, if it has one.
    fn kind(&self) -> Option<&str> {
        self.state.as_ref()?.get("kind")?.as_str()
    }
}

fn run(server: &Server, name: &str, params: &Value, x: &Exchange) -> Result<Value, Failure> {
    let retry = Retry::read(server, params)?;
    let signed = |kind: &str, extra: Value| sign(server, kind, extra);
    match name.trim_start_matches("test_input_required_result_") {
        "elicitation" => match retry.answer("user_name") {
            Some(answer) => Ok(text(&format!("Hello, {}!", field(answer, "name")))),
            None => Ok(ask(
                &[("user_name", elicit("What is your name?", "name", "string"))],
                None,
            )),
        },
        "sampling" => match retry.answer("sample_request") {
            Some(answer) => {
                let reply = answer
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("no response");
                Ok(text(&format!("Sampling result: {reply}")))
            }
            None => Ok(ask(
                &[(
                    "sample_request",
                    sample("What is the capital of France?", 100),
                )],
                None,
            )),
        },
        "list_roots" => match retry.answer("roots_request") {
            Some(answer) => Ok(text(&format!("Found {} root(s)", roots(answer)))),
            None => Ok(ask(&[("roots_request", list_roots())], None)),
        },
        "request_state" => {
            let confirmed = retry
                .answer("confirm")
                .and_then(|a| a.pointer("/content/ok"))
                == Some(&Value::Bool(true));
            if retry.kind() == Some("request-state") && confirmed {
                return Ok(text("state-ok: requestState validated"));
            }
            Ok(ask(
                &[("confirm", elicit("Please confirm", "ok", "boolean"))],
                Some(signed("request-state", json!({}))?),
            ))
        }
        "multiple_inputs" => {
            let all = ["user_name", "greeting", "client_roots"].map(|key| retry.answer(key));
            if let (Some("multiple-inputs"), [Some(name), Some(greeting), Some(listed)]) =
                (retry.kind(), all)
            {
                let greeting = greeting
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("Hello there!");
                return Ok(text(&format!(
                    "Name: {}; Greeting: {greeting}; Roots: {}",
                    field(name, "name"),
                    roots(listed)
                )));
            }
            Ok(ask(
                &[
                    ("user_name", elicit("What is your name?", "name", "string")),
                    ("greeting", sample("Generate a greeting", 50)),
                    ("client_roots", list_roots()),
                ],
                Some(signed("multiple-inputs", json!({}))?),
            ))
        }
        "multi_round" => {
            let round = retry
                .state
                .as_ref()
                .filter(|_| retry.kind() == Some("multi-round"))
                .and_then(|s| s.get("round"))
                .and_then(Value::as_u64);
            match (round, retry.answer("step1"), retry.answer("step2")) {
                (Some(1), Some(step1), _) => {
                    let name = field(step1, "name");
                    Ok(ask(
                        &[(
                            "step2",
                            elicit("Step 2: What is your favorite color?", "color", "string"),
                        )],
                        Some(signed("multi-round", json!({"round": 2, "name": name}))?),
                    ))
                }
                (Some(2), _, Some(step2)) => {
                    let state = retry.state.as_ref();
                    let name = state
                        .and_then(|s| s.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("friend");
                    Ok(text(&format!(
                        "Multi-round complete for {name} who likes {}",
                        field(step2, "color")
                    )))
                }
                _ => Ok(ask(
                    &[(
                        "step1",
                        elicit("Step 1: What is your name?", "name", "string"),
                    )],
                    Some(signed("multi-round", json!({"round": 1}))?),
                )),
            }
        }
        "tampered_state" => {
            if retry.kind() == Some("tamper-test") && retry.answer("confirm").is_some() {
                return Ok(text("integrity-ok: state verified"));
            }
            Ok(ask(
                &[("confirm", elicit("Please confirm", "ok", "boolean"))],
                Some(signed("tamper-test", json!({}))?),
            ))
        }
        "capabilities" => {
            if !retry.answers.is_empty() {
                let keys: Vec<&str> = retry.answers.keys().map(String::as_str).collect();
                return Ok(text(&format!(
                    "capabilities-ok: received {}",
                    keys.join(",")
                )));
            }
            let mut wanted = Vec::new();
            if x.client_has("elicitation") {
                wanted.push((
                    "elicit_input",
                    elicit("Elicitation input", "value", "string"),
                ));
            }
            if x.client_has("sampling") {
                wanted.push(("sample_input", sample("Sample request", 50)));
            }
            if wanted.is_empty() {
                return Ok(text("No supported capabilities declared"));
            }
            Ok(ask(&wanted, Some(signed("capabilities-test", json!({}))?)))
        }
        _ => Err(Failure::invalid_params(format!("Unknown tool: {name}"))),
    }
}

/// An `InputRequiredResult`.
fn ask(requests: &[(&str, Value)], state: Option<String>) -> Value {
    let requests: Map<String, Value> = requests
        .iter()
        .map(|(key, request)| ((*key).to_owned(), request.clone()))
        .collect();
    let mut result = json!({"resultType": "input_required", "inputRequests": requests});
    if let (Some(state), Some(object)) = (state, result.as_object_mut()) {
        object.insert("requestState".into(), Value::String(state));
    }
    result
}

/// An `InputRequiredResult` asking `requests` (key, request), without state.
pub(super) fn ask_owned(requests: &[(String, Value)]) -> Value {
    let requests: Vec<(&str, Value)> = requests
        .iter()
        .map(|(key, request)| (key.as_str(), request.clone()))
        .collect();
    ask(&requests, None)
}

/// An elicitation asking for one field.
pub(super) fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    })
}

/// A sampling request.
fn sample(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": max_tokens,
        },
    })
}

/// A roots request.
fn list_roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

/// `content.<name>` of an elicitation answer, as text.
pub(super) fn field(answer: &Value, name: &str) -> String {
    match answer.get("content").and_then(|c| c.get(name)) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "unknown".to_owned(),
    }
}

/// How many roots a `roots/list` answer holds.
fn roots(answer: &Value) -> usize {
    answer
        .get("roots")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// A signed state of `kind` with `extra` fields and a nonce: `base64url(json).hex(hmac)`.
fn sign(server: &Server, kind: &str, extra: Value) -> Result<String, Failure> {
    let mut payload = json!({"kind": kind});
    if let (Some(payload), Some(extra)) = (payload.as_object_mut(), extra.as_object()) {
        payload.extend(extra.clone());
        let nonce = random_id().map_err(|e| Failure::new(-32603, e.to_string()))?;
        payload.insert("nonce".into(), Value::String(nonce));
    }
    let data = URL_SAFE_NO_PAD.encode(payload.to_string());
    let mac = hex(&hmac(&server.secret, data.as_bytes()));
    Ok(format!("{data}.{mac}"))
}

/// The payload of a state this server signed, or `None`.
fn verify(server: &Server, state: &str) -> Option<Value> {
    let (data, mac) = state.split_once('.')?;
    let expected = hex(&hmac(&server.secret, data.as_bytes()));
    // Same length (hex of 32 bytes); compare without an early exit.
    if mac.len() != expected.len()
        || mac
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            != 0
    {
        return None;
    }
    let json = URL_SAFE_NO_PAD.decode(data).ok()?;
    serde_json::from_slice(&json).ok()
}

/// HMAC-SHA256 (RFC 2104) of `message` under a key of at most one block.
fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_a_reference_implementation() {
        // Python: hmac.new(b"\x0b" * 32, b"Hi There", hashlib.sha256).hexdigest()
        let key = [0x0bu8; 32];
        let mac = hex(&hmac(&key, b"Hi There"));
        assert_eq!(
            mac,
            "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7"
        );
    }

    #[test]
    fn states_round_trip_and_tampering_is_caught() {
        let server = Server::new("t".into()).expect("server");
        let state = sign(&server, "tamper-test", json!({"round": 1})).expect("sign");
        let payload = verify(&server, &state).expect("verifies");
        assert_eq!(payload["kind"], "tamper-test");
        assert_eq!(payload["round"], 1);
        let mut tampered = state.clone();
        tampered.insert(0, 'x');
        assert!(verify(&server, &tampered).is_none());
        assert!(verify(&server, "{\"kind\":\"tamper-test\"}").is_none());
    }
}
