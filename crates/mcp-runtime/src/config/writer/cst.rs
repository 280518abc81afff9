//! Editing a JSON(C) text in place through its syntax tree, so that a change to mcpr's file
//! keeps the comments, key order and formatting around it.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstRootNode};
use serde_json::{Map, Value};

use super::super::formats::{self, Format};

/// `text` changed so that it reads as `want`, keeping comments and formatting around the
/// changes. Checked by reading the result back.
pub(super) fn edit_in_place(text: &str, want: &Map<String, Value>) -> Result<String, String> {
    let cannot = |why: String| format!("cannot keep its comments and formatting: {why}");
    let root =
        CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| cannot(e.to_string()))?;
    let object = match root.value() {
        None => root.object_value_or_set(),
        Some(_) => root
            .object_value()
            .ok_or_else(|| cannot("the file is not a JSON object".into()))?,
    };
    edit_object(&object, want);
    let edited = root.to_string();
    match formats::parse(&edited, Format::Json) {
        Ok(Value::Object(got)) if &got == want => Ok(edited),
        _ => Err(cannot(
            "the edited text would not read back as intended".into(),
        )),
    }
}

/// Make `object` hold exactly `want`: drop, recurse into or replace what differs, append what
/// is new (in `want`'s order, as a map insert would).
fn edit_object(object: &CstObject, want: &Map<String, Value>) {
    let mut present = std::collections::HashSet::new();
    for prop in object.properties() {
        let Some(name) = prop.name().and_then(|n| n.decoded_value().ok()) else {
            continue;
        };
        let Some(value) = want.get(&name) else {
            prop.remove();
            continue;
        };
        present.insert(name);
        let node = prop.value();
        if node.as_ref().and_then(|n| n.to_serde_value()).as_ref() == Some(value) {
            continue;
        }
        let inner_object = node.as_ref().and_then(|n| n.as_object());
        let inner_array = node.as_ref().and_then(|n| n.as_array());
        match (value, inner_object, inner_array) {
            (Value::Object(map), Some(inner), _) => edit_object(&inner, map),
            (Value::Array(items), _, Some(inner)) => edit_array(&inner, items),
            _ => prop.set_value(input(value)),
        }
    }
    for (name, value) in want {
        if !present.contains(name) {
            object.append(name, input(value));
        }
    }
}

/// Make `array` hold exactly `want`, keeping the elements that stay in order (a list that
/// gained or lost a name keeps the comments next to the others).
fn edit_array(array: &CstArray, want: &[Value]) {
    let mut next = 0;
    for element in array.elements() {
        if next < want.len() && element.to_serde_value().as_ref() == Some(&want[next]) {
            next += 1;
        } else {
            element.remove();
        }
    }
    for value in &want[next..] {
        array.append(input(value));
    }
}

/// A JSON value as the syntax tree's input.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}
