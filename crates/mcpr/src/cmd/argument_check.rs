//! Checking a call's arguments against the tool's input schema before anything is sent: its
//! `required` parameters, `enum`s, types and other rules (by the `jsonschema` crate), and keys
//! the schema does not name. Each error names the parameter and the rule it breaks.
//!
//! A key the schema does not list is refused unless the schema allows more properties
//! (`additionalProperties` other than `false`, or `patternProperties`): the same rule as for
//! `key=value` words (see [`super::arguments`]). A schema the validator cannot compile (one
//! with a `$ref` to another document, say: nothing is fetched) is not checked at all; the
//! server then judges the arguments itself.

use serde_json::{Map, Value};

/// The most problems listed at once; the parameter table after them shows the rest.
const MAX_PROBLEMS: usize = 8;

/// Check `arguments` against `schema`; the error is one line per problem.
pub(crate) fn check(schema: &Value, arguments: &Map<String, Value>) -> Result<(), String> {
    let mut problems = unknown_keys(schema, arguments);
    match jsonschema::validator_for(schema) {
        Ok(validator) => {
            let instance = Value::Object(arguments.clone());
            for error in validator.iter_errors(&instance) {
                if let Some(problem) = describe(&error) {
                    problems.push(problem);
                }
                if problems.len() >= MAX_PROBLEMS {
                    break;
                }
            }
        }
        Err(e) => tracing::debug!("input schema not checked, it does not compile: {e}"),
    }
    problems.dedup();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// [`check`], with the tool's parameter table after the problems.
pub(crate) fn check_shown(schema: &Value, arguments: &Map<String, Value>) -> Result<(), String> {
    check(schema, arguments).map_err(|problems| with_parameters(problems, schema))
}

/// `arguments` when `tool` (a shell's registered tool) is an MCP tool whose input schema
/// takes them, or a host's own tool; else the problems and the tool's parameters.
pub(crate) fn check_tool(
    tool: Option<&mcp_runtime::session::RegisteredTool>,
    arguments: Option<Map<String, Value>>,
) -> Result<Option<Map<String, Value>>, String> {
    let Some(mcp_runtime::session::RegisteredTool::Mcp(tool)) = tool else {
        return Ok(arguments);
    };
    let schema = tool.definition.input_schema.to_value();
    let empty = Map::new();
    check_shown(&schema, arguments.as_ref().unwrap_or(&empty)).map(|()| arguments)
}

/// `message`, then the parameter table of `schema`.
pub(crate) fn with_parameters(mut message: String, schema: &Value) -> String {
    message.push_str("\nthe tool's parameters:\n");
    message.push_str(&super::arguments::parameter_lines(schema, "  ").join("\n"));
    message
}

/// The keys of `arguments` that a closed schema does not list, each with its closest
/// parameter.
fn unknown_keys(schema: &Value, arguments: &Map<String, Value>) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let open = properties.is_empty()
        || schema.get("patternProperties").is_some()
        || schema
            .get("additionalProperties")
            .is_some_and(|a| a.as_bool() != Some(false));
    if open {
        return Vec::new();
    }
    arguments
        .keys()
        .filter(|key| !properties.contains_key(*key))
        .map(|key| {
            format!(
                "there is no parameter `{}`{}",
                crate::term::line(key),
                crate::suggest::did_you_mean(key, properties.keys().map(String::as_str))
            )
        })
        .collect()
}

/// One validation error as a line naming the parameter, or `None` for an unknown key (told by
/// [`unknown_keys`] already, with a suggestion).
fn describe(error: &jsonschema::ValidationError<'_>) -> Option<String> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let path = parameter_path(error.instance_path().as_str());
    let text = match error.kind() {
        Kind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            return Some(match path {
                Some(path) => format!("`{path}`: `{}` is required", crate::term::line(&name)),
                None => format!("`{}` is required", crate::term::line(&name)),
            });
        }
        Kind::AdditionalProperties { .. } if path.is_none() => return None,
        Kind::Enum { options } => format!("must be one of {}", one_line(options)),
        Kind::Type { kind } => {
            let expected: Vec<String> = match kind {
                jsonschema::error::TypeKind::Single(one) => vec![one.to_string()],
                jsonschema::error::TypeKind::Multiple(set) => {
                    set.iter().map(|t| t.to_string()).collect()
                }
            };
            format!(
                "expected {}, not {}",
                expected.join(" or "),
                one_line(error.instance())
            )
        }
        _ => error.to_string(),
    };
    let text = crate::term::line(&text).into_owned();
    Some(match path {
        Some(path) => format!("`{}`: {text}", crate::term::line(&path)),
        None => text,
    })
}

/// The parameter a JSON pointer (`/tags/0`) points into, as `tags/0`; `None` for the root.
fn parameter_path(pointer: &str) -> Option<String> {
    let path = pointer.strip_prefix('/')?;
    let segments: Vec<String> = path
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    Some(segments.join("/"))
}

/// A value on one line, shortened: errors quote what the user gave.
fn one_line(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "number"},
                "mode": {"enum": ["fast", "slow"]},
            },
            "required": ["a", "b"],
        })
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn each_rule_names_its_parameter() {
        let schema = schema();
        assert!(check(&schema, &args(json!({"a": 1, "b": 2}))).is_ok());
        let missing = check(&schema, &args(json!({"a": 2}))).unwrap_err();
        assert_eq!(missing, "`b` is required");
        let typed = check(&schema, &args(json!({"a": "2", "b": 1}))).unwrap_err();
        assert!(
            typed.starts_with("`a`: ") && typed.contains("number"),
            "{typed}"
        );
        let choice = check(&schema, &args(json!({"a": 1, "b": 1, "mode": "quick"}))).unwrap_err();
        assert!(choice.contains("`mode`: must be one of"), "{choice}");
        let unknown = check(&schema, &args(json!({"a": 1, "b": 1, "mdoe": "fast"}))).unwrap_err();
        assert_eq!(
            unknown,
            "there is no parameter `mdoe`; did you mean `mode`?"
        );
    }

    #[test]
    fn open_and_uncompilable_schemas_let_more_through() {
        let open = json!({"properties": {"a": {}}, "additionalProperties": true});
        assert!(check(&open, &args(json!({"z": 1}))).is_ok());
        let remote = json!({"$ref": "https://example.com/schema.json"});
        assert!(check(&remote, &args(json!({"z": 1}))).is_ok());
    }
}
