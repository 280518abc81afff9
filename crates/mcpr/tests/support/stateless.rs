//! A 2026-07-28 client written by hand (or a 2025-11-25 session): `mcpr serve` over stdio,
//! one JSON-RPC line each way, for what no SDK sends (forged, replayed or expired states,
//! answers to keys nobody asked) and to look inside each answer.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::sdk::ServeWorld;
use super::{ChildGuard, MCPR, line_channel};

/// Bound on any one answer.
pub(crate) const BOUND: Duration = Duration::from_secs(60);

/// A 2026-07-28 client written by hand: `mcpr serve` over stdio, one JSON-RPC line each way.
pub(crate) struct Stateless {
    pub child: ChildGuard,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    /// The capabilities it declares on every request; `None` for a 2025-11-25 session.
    pub capabilities: Option<Value>,
    /// An `elicitation/create` came (a session client leaves it unanswered).
    pub asked_elicitation: bool,
}

impl Stateless {
    pub(crate) fn start(world: &ServeWorld, extra: &[&str], capabilities: Value) -> Stateless {
        let mut client = Stateless::spawn(world, extra, Some(capabilities));
        let discovered = client.request("server/discover", json!({}));
        assert!(discovered.get("result").is_some(), "{discovered}");
        client
    }

    /// A 2025-11-25 session that declares elicitation (and never answers it).
    pub(crate) fn start_session(world: &ServeWorld, extra: &[&str]) -> Stateless {
        let mut client = Stateless::spawn(world, extra, None);
        let initialized = client.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                   "clientInfo": {"name": "raw", "version": "1"}}),
        );
        assert!(initialized.get("result").is_some(), "{initialized}");
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    pub(crate) fn spawn(
        world: &ServeWorld,
        extra: &[&str],
        capabilities: Option<Value>,
    ) -> Stateless {
        let mut command = Command::new(MCPR);
        command
            .args(world.serve_args(extra))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        world.isolate(&mut command);
        let mut child = ChildGuard::spawn(&mut command);
        let lines = line_channel(child.0.stdout.take().expect("stdout"));
        Stateless {
            child,
            lines,
            next_id: 0,
            capabilities,
            asked_elicitation: false,
        }
    }

    pub(crate) fn send(&mut self, message: Value) {
        let stdin = self.child.0.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Send `method` with `params` (and the per-request `_meta`); the response.
    pub(crate) fn request(&mut self, method: &str, mut params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        if let Some(capabilities) = &self.capabilities {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            });
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["method"] == "elicitation/create" {
                self.asked_elicitation = true;
            } else if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// `prompts/get` of `name`, with a retry's `extra` fields.
    pub(crate) fn prompt(&mut self, name: &str, extra: Value) -> Value {
        let mut params = json!({"name": name});
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        self.request("prompts/get", params)
    }

    /// Wait for a request from the gateway (a session client is asked over its session).
    pub(crate) fn asked_request(&mut self, method: &str) -> Value {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("never asked {method}: {e}"));
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["method"] == method {
                return message;
            }
        }
    }

    /// `tools/call` of `name`, with a retry's `extra` fields (`inputResponses`,
    /// `requestState`).
    pub(crate) fn call(&mut self, name: &str, extra: Value) -> Value {
        let mut params = json!({"name": name, "arguments": {}});
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        self.request("tools/call", params)
    }
}

/// The `requestState` and the keys of an `input_required` answer.
pub(crate) fn asked(answer: &Value) -> (String, Vec<String>) {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let state = result["requestState"].as_str().expect("a requestState");
    let keys = result["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    (state.to_owned(), keys)
}

/// The text of a final answer.
pub(crate) fn text(answer: &Value) -> String {
    super::sdk::text(&answer["result"])
}

/// `answer` is a JSON-RPC "invalid params" error (-32602) whose message says `needle`.
pub(crate) fn assert_invalid_params(answer: &Value, needle: &str) {
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{answer}");
}

pub(crate) fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}
