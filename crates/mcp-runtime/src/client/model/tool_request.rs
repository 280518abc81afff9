//! A `tools/call` request's parameters, as a caller lends them to each attempt, and what a
//! round of a server's questions adds to the next attempt ([`Retry`]).

use std::borrow::Cow;

use rmcp::model::{CallToolRequestParams, InputResponses, JsonObject};
use serde_json::value::RawValue;

/// What the next round sends along with the request.
#[derive(Debug, Clone)]
pub(crate) struct Retry {
    /// The answers, keyed like the requests.
    pub input_responses: Option<InputResponses>,
    /// The server's state, echoed exactly as received (it is opaque).
    pub request_state: Option<String>,
}

/// A tool call's arguments, as the caller has them.
#[derive(Debug, Clone)]
pub(crate) enum Arguments {
    /// Parsed, or none.
    Object(Option<JsonObject>),
    /// A JSON object's text, written on as it is: a relay that never looks inside the
    /// arguments neither parses them nor writes them again. (A key sent twice reaches the
    /// server twice, as sent.)
    Text(Box<RawValue>),
}

impl Arguments {
    /// `text` as arguments, if it is a JSON object.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn text(text: &RawValue) -> Option<Arguments> {
        // A `RawValue` is valid JSON, its text the value alone: an object starts with `{`.
        text.get()
            .starts_with('{')
            .then(|| Arguments::Text(text.to_owned()))
    }

    /// The arguments parsed: a text, once more.
    pub(crate) fn into_object(self) -> serde_json::Result<Option<JsonObject>> {
        match self {
            Arguments::Object(object) => Ok(object),
            Arguments::Text(text) => serde_json::from_str(text.get()).map(Some),
        }
    }
}

/// The parameters of a tool call: rmcp's, with the arguments kept apart when they are text.
#[derive(Debug)]
pub(crate) struct ToolRequest {
    /// Their `arguments` are `None` when [`arguments_text`](Self::arguments_text) holds them.
    pub(crate) params: CallToolRequestParams,
    pub(crate) arguments_text: Option<Box<RawValue>>,
}

impl ToolRequest {
    /// A call of `tool` with `arguments`.
    pub(crate) fn new(tool: impl Into<Cow<'static, str>>, arguments: Arguments) -> ToolRequest {
        let mut params = CallToolRequestParams::new(tool);
        let arguments_text = match arguments {
            Arguments::Object(object) => {
                params.arguments = object;
                None
            }
            Arguments::Text(text) => Some(text),
        };
        ToolRequest {
            params,
            arguments_text,
        }
    }

    /// Set what the first request carries after a server's questions: `resumed`'s answers and
    /// state, or none.
    pub(crate) fn resume(&mut self, resumed: Option<&Retry>) {
        self.params.input_responses = resumed.and_then(|r| r.input_responses.clone());
        self.params.request_state = resumed.and_then(|r| r.request_state.clone());
    }

    /// A call of rmcp's parameters, as they are.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) fn from_params(params: CallToolRequestParams) -> ToolRequest {
        ToolRequest {
            params,
            arguments_text: None,
        }
    }

    /// rmcp's parameters with the arguments parsed, for a request written through rmcp.
    pub(crate) fn to_params(&self) -> serde_json::Result<CallToolRequestParams> {
        self.clone_parts().into_params()
    }

    /// rmcp's parameters with the arguments parsed.
    pub(crate) fn into_params(self) -> serde_json::Result<CallToolRequestParams> {
        let (mut params, arguments) = self.into_parts();
        params.arguments = arguments.into_object()?;
        Ok(params)
    }

    /// The parameters, and the arguments taken out of them.
    pub(crate) fn into_parts(self) -> (CallToolRequestParams, Arguments) {
        let ToolRequest {
            mut params,
            arguments_text,
        } = self;
        let arguments = match arguments_text {
            Some(text) => Arguments::Text(text),
            None => Arguments::Object(params.arguments.take()),
        };
        (params, arguments)
    }

    fn clone_parts(&self) -> ToolRequest {
        ToolRequest {
            params: self.params.clone(),
            arguments_text: self.arguments_text.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn only_an_object_is_taken_as_text() {
        assert!(Arguments::text(&raw(r#"{"a":1}"#)).is_some());
        for other in ["[1]", "1", r#""{}""#, "null", "true"] {
            assert!(Arguments::text(&raw(other)).is_none(), "{other}");
        }
    }

    #[test]
    fn text_arguments_parse_as_rmcp_would_send_them() {
        let call = ToolRequest::new(
            "t",
            Arguments::text(&raw(r#"{"b":[1,{"c":null}],"a":"é"}"#)).unwrap(),
        );
        assert_eq!(call.params.arguments, None);
        let params = call.to_params().unwrap();
        let expected: JsonObject = serde_json::from_str(r#"{"b":[1,{"c":null}],"a":"é"}"#).unwrap();
        assert_eq!(params.arguments, Some(expected));
        assert_eq!(params.name, "t");
    }
}
