//! The CLI's answer when a server asks the user for input (`elicitation/create`, or the same
//! question embedded in a 2026-07-28 `input_required` result). On a terminal the question is
//! put to the user on stderr, one field at a time; without one (scripts, pipes, CI) it is
//! declined, and stderr says what the server asked, so nothing waits for an answer that
//! cannot come.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use mcp_runtime::client::{ElicitationHandler, ElicitationRequest, ElicitationResponse};
use serde_json::{Map, Value};

use crate::term;

/// The handler the CLI's commands connect with.
pub(crate) fn handler() -> ElicitationHandler {
    Arc::new(|request: ElicitationRequest| {
        Box::pin(async move {
            let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            if !interactive {
                eprintln!(
                    "mcpr: server `{}` asked: {} (fields: {}); declined, as there is no terminal to answer on",
                    term::line(&request.server),
                    term::line(&request.message),
                    term::line(&fields(&request.requested_schema).join(", ")),
                );
                return ElicitationResponse::decline();
            }
            // Reading the terminal blocks: keep it off the async threads.
            tokio::task::spawn_blocking(move || ask(&request))
                .await
                .unwrap_or_else(|_| ElicitationResponse::decline())
        })
    })
}

/// The names of the requested fields, in schema order.
fn fields(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// Put the question on the terminal. An empty answer keeps the field's default (or leaves an
/// optional field out); end of input declines.
fn ask(request: &ElicitationRequest) -> ElicitationResponse {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "server `{}` asks: {}",
        term::line(&request.server),
        term::line(&request.message)
    );
    let empty = Map::new();
    let properties = request
        .requested_schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let defaults = request.defaults();
    let mut content = Map::new();
    let mut lines = std::io::stdin().lock();
    for (name, property) in properties {
        let kind = property
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string");
        let default = defaults.get(name);
        let hint = match default {
            Some(default) => format!(" [{default}]"),
            None => String::new(),
        };
        let _ = write!(err, "  {} ({kind}){hint}: ", term::line(name));
        let _ = err.flush();
        let mut line = String::new();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => return ElicitationResponse::decline(),
            Ok(_) => {}
        }
        let answer = line.trim();
        if answer.is_empty() {
            if let Some(default) = default {
                content.insert(name.clone(), default.clone());
            }
            continue;
        }
        content.insert(name.clone(), typed(kind, answer));
    }
    ElicitationResponse::accept(content)
}

/// An answer as the JSON type the schema asks for (as text when it does not parse).
fn typed(kind: &str, answer: &str) -> Value {
    let parsed = match kind {
        "number" => answer.parse::<f64>().ok().map(Value::from),
        "integer" => answer.parse::<i64>().ok().map(Value::from),
        "boolean" => match answer.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::String(answer.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_take_the_type_the_schema_asks_for() {
        assert_eq!(typed("integer", "42"), Value::from(42));
        assert_eq!(typed("number", "1.5"), Value::from(1.5));
        assert_eq!(typed("boolean", "yes"), Value::Bool(true));
        assert_eq!(typed("string", "42"), Value::from("42"));
        assert_eq!(typed("integer", "many"), Value::from("many"));
        let schema = serde_json::json!({"properties": {"b": {}, "a": {}}});
        assert_eq!(fields(&schema), ["b", "a"]);
    }
}
