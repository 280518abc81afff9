//! JSON kept as text (a leaf: imports nothing of ours).
//!
//! A server's tool definitions are kept for as long as it is connected, and most of their
//! weight is their JSON Schemas. Parsed, a schema is a map per object (an index and a hash
//! table each) and an allocation per key and string: about 2 KB for a schema of one string
//! parameter, against about 100 bytes of text. [`JsonText`] keeps the compact text, shared
//! between clones, and parses it when a schema is read.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A JSON value kept as its compact text; cloning shares the text.
///
/// Made from a [`Value`] (or deserialized from any JSON), it holds that value written without
/// whitespace, keys in their order. Two `JsonText`s are equal when their texts are: the same
/// object with its keys in another order is another text. It serializes as the value itself.
///
/// ```
/// use mcp_runtime::json::JsonText;
///
/// let schema = JsonText::from(serde_json::json!({"type": "object", "properties": {}}));
/// assert_eq!(schema.as_str(), r#"{"type":"object","properties":{}}"#);
/// assert!(schema.is_object());
/// assert_eq!(schema.to_value()["type"], "object");
/// assert_eq!(schema, serde_json::json!({"type": "object", "properties": {}}));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JsonText(Arc<str>);

impl JsonText {
    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value, parsed. The text is valid JSON by construction; a value nested deeper than
    /// `serde_json`'s limit of 128 levels (only a `Value` built in code can be) reads back as
    /// `null`.
    pub fn to_value(&self) -> Value {
        self.parse().unwrap_or(Value::Null)
    }

    /// The value parsed as `T` (e.g. a `serde_json::Map` for an object).
    pub fn parse<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(&self.0)
    }

    /// Whether the value is a JSON object (as a tool's schemas must be).
    pub fn is_object(&self) -> bool {
        self.0.starts_with('{')
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> Self {
        // Writing a `Value` to a string cannot fail: its keys are strings.
        JsonText(Arc::from(value.to_string()))
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        JsonText::from(&value)
    }
}

impl PartialEq<Value> for JsonText {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Parsed again to be written: the text cannot be spliced into an arbitrary serializer.
        // Schemas are written rarely (the tool cache, `mcpr tools --json`).
        self.parse::<Value>()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(JsonText::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn it_keeps_the_value_and_its_key_order_as_compact_text() {
        let value = json!({"b": [1, 2.5, null], "a": {"s": "é\"\n"}});
        let text = JsonText::from(&value);
        assert_eq!(text.as_str(), r#"{"b":[1,2.5,null],"a":{"s":"é\"\n"}}"#);
        assert_eq!(text.to_value(), value);
        assert_eq!(serde_json::to_value(&text).unwrap(), value);
        let back: JsonText =
            serde_json::from_str(" { \"b\" : [1, 2.5, null], \"a\": {\"s\": \"é\\\"\\n\"} } ")
                .unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn clones_share_the_text() {
        let text = JsonText::from(json!({"type": "object"}));
        let clone = text.clone();
        assert!(std::ptr::eq(text.as_str(), clone.as_str()));
    }

    #[test]
    fn only_an_object_is_an_object() {
        assert!(!JsonText::from(json!([{}])).is_object());
        assert!(!JsonText::from(json!("{")).is_object());
        assert!(JsonText::from(json!({})).is_object());
    }
}
