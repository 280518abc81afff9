//! The arguments of a tool call typed in the shell: nothing, inline JSON, `@FILE`, or the
//! `key=value` words `mcpr call` takes (its parser, typed by the tool's input schema).

use serde_json::{Map, Value};

/// Tool arguments: nothing, inline JSON, `@FILE`, or `key=value` / `key:=JSON` words typed by
/// the tool's input `schema`, as `mcpr call` takes them (quotes group a value with spaces:
/// `message="hello world"`).
pub(super) fn parse_arguments(
    raw: &str,
    schema: Option<&Value>,
) -> Result<Option<Map<String, Value>>, String> {
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.starts_with('{') || raw.starts_with('@') {
        return crate::cmd::call_arguments::read_arguments(raw, "the line", false).map(Some);
    }
    let words = shell_words::split(raw).map_err(|e| format!("cannot split `{raw}`: {e}"))?;
    if let Some(word) = words.iter().find(|w| !crate::cmd::arguments::is_pair(w)) {
        return Err(format!(
            "`{word}`: expected key=value, key:=JSON, a JSON object or @FILE"
        ));
    }
    crate::cmd::arguments::from_pairs(&words, schema).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_optional_json_objects() {
        assert_eq!(parse_arguments("", None), Ok(None));
        assert_eq!(
            parse_arguments(r#"{"a": 1}"#, None).map(|a| a.map(|m| m["a"].clone())),
            Ok(Some(Value::from(1)))
        );
        assert!(
            parse_arguments("[1]", None)
                .unwrap_err()
                .contains("JSON object")
        );
        assert!(
            parse_arguments("{oops", None)
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert!(
            parse_arguments("@/definitely/missing", None)
                .unwrap_err()
                .contains("cannot read")
        );
    }

    #[test]
    fn key_value_words_are_typed_by_the_schema() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "message": {"type": "string"}, "n": {"type": "integer"}}});
        let parsed = parse_arguments(r#"message="hello world" n=5"#, Some(&schema))
            .unwrap()
            .unwrap();
        assert_eq!(parsed["message"], "hello world");
        assert_eq!(parsed["n"], 5);
        let err = parse_arguments("n=five", Some(&schema)).unwrap_err();
        assert!(err.contains("n=five"), "{err}");
        let err = parse_arguments("message=hi stray", Some(&schema)).unwrap_err();
        assert!(err.contains("`stray`"), "{err}");
    }
}
