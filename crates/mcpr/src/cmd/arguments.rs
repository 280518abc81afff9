//! Tool and prompt arguments typed as `key=value` words (`mcpr call S T n=5 tags=a,b`), made
//! into the JSON object a tool's input schema asks for, and a schema's parameters shown as
//! text (in `mcpr tools --long` and in the error for a bad argument).
//!
//! Each value is converted to the type the schema gives its property: a property typed
//! `string` gets the text as is, even `5`; `integer`, `number` and `boolean` are parsed;
//! an `array` takes JSON or comma-separated items; `key:=JSON` sets raw JSON. Without a type
//! (or a schema), JSON literals (`5`, `true`, `null`, `[1]`) are taken as such, anything else
//! as a string.

use serde_json::{Map, Value};

/// One parameter of a schema, as shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parameter {
    /// The property name.
    pub name: String,
    /// Its type(s) as written in the schema (`string`, `integer|null`, `array of string`), or
    /// `any`.
    pub kind: String,
    /// Listed in the schema's `required`.
    pub required: bool,
    /// The first line of its description.
    pub description: Option<String>,
}

/// The parameters of an input schema, required ones first, in schema order otherwise.
pub(crate) fn parameters(schema: &Value) -> Vec<Parameter> {
    let required = required(schema);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut list: Vec<Parameter> = properties
        .iter()
        .map(|(name, property)| Parameter {
            name: name.clone(),
            kind: kind_label(property),
            required: required.contains(&name.as_str()),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .and_then(|d| d.lines().next())
                .filter(|d| !d.is_empty())
                .map(str::to_owned),
        })
        .collect();
    list.sort_by_key(|p| !p.required);
    list
}

/// The parameters as aligned lines (`name  type, required  description`), or a line saying
/// there are none. Each line is indented by `indent`.
pub(crate) fn parameter_lines(schema: &Value, indent: &str) -> Vec<String> {
    let list = parameters(schema);
    if list.is_empty() {
        return vec![format!("{indent}(no parameters)")];
    }
    let labels: Vec<String> = list
        .iter()
        .map(|p| {
            if p.required {
                format!("{}, required", p.kind)
            } else {
                p.kind.clone()
            }
        })
        .collect();
    let name_width = list
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0);
    let label_width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    list.iter()
        .zip(&labels)
        .map(|(p, label)| {
            let line = format!(
                "{indent}{:name_width$}  {label:label_width$}  {}",
                p.name,
                p.description.as_deref().unwrap_or("")
            );
            line.trim_end().to_owned()
        })
        .collect()
}

/// Whether `word` is a `key=value` or `key:=JSON` argument (not JSON, `@FILE` or `-`).
pub(crate) fn is_pair(word: &str) -> bool {
    !word.starts_with('{') && !word.starts_with('@') && word != "-" && word.contains('=')
}

/// Build the arguments object from `key=value` / `key:=JSON` words, typed by `schema` (a
/// tool's input schema or a prompt's; `None`: untyped). The error names the word at fault.
/// Required parameters are left to the server to insist on: some schemas are stricter on
/// paper than the server behind them.
pub(crate) fn from_pairs(
    words: &[String],
    schema: Option<&Value>,
) -> Result<Map<String, Value>, String> {
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let open = schema.is_none_or(|s| {
        properties.is_none_or(Map::is_empty)
            || s.get("additionalProperties")
                .is_some_and(|a| a.as_bool() != Some(false))
    });
    let mut out = Map::new();
    for word in words {
        let (key, value, raw) = split_pair(word)?;
        let property = properties.and_then(|p| p.get(key));
        if property.is_none() && !open {
            return Err(format!("`{word}`: there is no parameter `{key}`"));
        }
        let value = if raw {
            serde_json::from_str(value)
                .map_err(|e| format!("`{word}`: the value after `:=` is not valid JSON: {e}"))?
        } else {
            convert(value, property).map_err(|e| format!("`{word}`: {e}"))?
        };
        match out.get_mut(key) {
            None => {
                out.insert(key.to_owned(), value);
            }
            // `tags=a tags=b`: repeated words of an array property add items.
            Some(Value::Array(items)) if accepts(property, "array") => match value {
                Value::Array(more) => items.extend(more),
                one => items.push(one),
            },
            Some(_) => return Err(format!("`{key}` is given twice")),
        }
    }
    Ok(out)
}

/// `key=value` → (key, value, false); `key:=json` → (key, json, true).
fn split_pair(word: &str) -> Result<(&str, &str, bool), String> {
    let Some((key, value)) = word.split_once('=') else {
        return Err(format!(
            "`{word}`: expected key=value, key:=JSON, a JSON object, @FILE or -"
        ));
    };
    let (key, raw) = match key.strip_suffix(':') {
        Some(key) => (key, true),
        None => (key, false),
    };
    if key.is_empty() {
        return Err(format!(
            "`{word}`: the parameter name is missing before `=`"
        ));
    }
    Ok((key, value, raw))
}

/// The JSON types a property accepts (`type` as a string or a list, or the types of its
/// `anyOf`/`oneOf` branches); empty when it does not say.
fn types(property: Option<&Value>) -> Vec<&str> {
    let Some(property) = property else {
        return Vec::new();
    };
    match property.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| property.get(*k).and_then(Value::as_array))
            .flatten()
            .flat_map(|branch| types(Some(branch)))
            .collect(),
    }
}

fn accepts(property: Option<&Value>, kind: &str) -> bool {
    types(property).contains(&kind)
}

/// `value` as the type `property` asks for.
fn convert(value: &str, property: Option<&Value>) -> Result<Value, String> {
    let kinds = types(property);
    if kinds.is_empty() {
        // Untyped: a JSON literal as such, anything else as text.
        return Ok(serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into())));
    }
    // A string is never converted, whatever it looks like.
    if kinds == ["string"] {
        return Ok(Value::String(value.into()));
    }
    for kind in &kinds {
        let converted = match *kind {
            "integer" => value.parse::<i64>().ok().map(Value::from),
            "number" => value
                .parse::<i64>()
                .map(Value::from)
                .ok()
                .or_else(|| value.parse::<f64>().ok().and_then(number)),
            "boolean" => match value {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            "null" => (value == "null").then_some(Value::Null),
            "array" => Some(array(value, property.and_then(|p| p.get("items")))?),
            "object" => serde_json::from_str::<Value>(value)
                .ok()
                .filter(Value::is_object),
            _ => None,
        };
        if let Some(converted) = converted {
            return Ok(converted);
        }
    }
    if kinds.contains(&"string") {
        return Ok(Value::String(value.into()));
    }
    Err(format!("expected {}, not `{value}`", kinds.join(" or ")))
}

fn number(f: f64) -> Option<Value> {
    serde_json::Number::from_f64(f).map(Value::Number)
}

/// An array value: JSON (`[1, 2]`), or comma-separated items converted to the items' type.
fn array(value: &str, items: Option<&Value>) -> Result<Value, String> {
    if value.trim_start().starts_with('[') {
        return serde_json::from_str(value).map_err(|e| format!("not a valid JSON array: {e}"));
    }
    if value.is_empty() {
        return Ok(Value::Array(Vec::new()));
    }
    value
        .split(',')
        .map(|item| convert(item, items))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// The names listed in `required`.
fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `string`, `integer|null`, `array of string`, `one of a, b` (enum), or `any`.
fn kind_label(property: &Value) -> String {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values
            .iter()
            .take(6)
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let more = if values.len() > 6 { ", …" } else { "" };
        return format!("one of {}{more}", shown.join(", "));
    }
    let kinds = types(Some(property));
    if kinds.is_empty() {
        return "any".into();
    }
    if kinds == ["array"] {
        let items = property.get("items").map(kind_label);
        if let Some(items) = items.filter(|i| i != "any") {
            return format!("array of {items}");
        }
    }
    kinds.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "What to say\nmore"},
                "n": {"type": "integer"},
                "ratio": {"type": "number"},
                "loud": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "maybe": {"type": ["integer", "null"]},
                "mode": {"enum": ["a", "b"]},
            },
            "required": ["text"],
            "additionalProperties": false,
        })
    }

    #[test]
    fn values_take_the_schema_type() {
        let schema = schema();
        let args = from_pairs(
            &words(&[
                "text=5",
                "n=5",
                "ratio=0.5",
                "loud=true",
                "tags=a,b",
                "ids=1,2",
                "maybe=null",
                "mode=a",
            ]),
            Some(&schema),
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"text": "5", "n": 5, "ratio": 0.5, "loud": true, "tags": ["a", "b"],
                   "ids": [1, 2], "maybe": null, "mode": "a"})
        );
    }

    #[test]
    fn raw_json_repeats_and_untyped_values() {
        let schema = schema();
        let args = from_pairs(
            &words(&["text:=\"x\"", "tags=a", "tags=b", "ids:=[3]"]),
            Some(&schema),
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"text": "x", "tags": ["a", "b"], "ids": [3]})
        );
        let args = from_pairs(&words(&["a=5", "b=hi", "c=true"]), None).unwrap();
        assert_eq!(Value::Object(args), json!({"a": 5, "b": "hi", "c": true}));
    }

    #[test]
    fn mistakes_are_named() {
        let schema = schema();
        let err = |list: &[&str]| from_pairs(&words(list), Some(&schema)).unwrap_err();
        assert!(err(&["text=a", "n=five"]).contains("expected integer, not `five`"));
        assert!(err(&["text=a", "nope=1"]).contains("no parameter `nope`"));
        assert!(err(&["text"]).contains("expected key=value"));
        assert!(err(&["text=a", "text=b"]).contains("given twice"));
        assert!(err(&["text:={"]).contains("not valid JSON"));
    }

    #[test]
    fn parameters_are_listed_required_first() {
        let lines = parameter_lines(&schema(), "  ");
        assert!(lines[0].starts_with("  text "), "{lines:?}");
        assert!(lines[0].contains("string, required") && lines[0].ends_with("What to say"));
        assert!(lines.iter().any(|l| l.contains("array of string")));
        assert!(lines.iter().any(|l| l.contains("one of a, b")));
        assert_eq!(parameter_lines(&json!({}), ""), vec!["(no parameters)"]);
    }
}
