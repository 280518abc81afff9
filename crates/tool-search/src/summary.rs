//! A hit as a model reads it: a tool's description cut to one line, and its parameters as
//! `name: type`. The index does not use these; a program showing hits does.

use std::collections::BTreeSet;

use serde_json::Value;

/// The first non-empty line of `text`, cut to `max_chars` characters (with `…`): a tool
/// description as a search result shows it.
pub fn one_line_summary(text: &str, max_chars: usize) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    if line.chars().count() <= max_chars {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A tool's parameters as `name: type` (`name?: type` when optional; a type list as
/// `a|b`), from its input schema: what a model needs to call a tool found by a search.
pub fn parameter_summary(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let kind = match property.get("type") {
                Some(Value::String(kind)) => kind.clone(),
                Some(Value::Array(kinds)) => kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => "any".to_owned(),
            };
            let optional = if required.contains(name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{name}{optional}: {kind}")
        })
        .collect()
}
