//! An answer to a direct request (see `direct`), read from its line in one pass: its id (in
//! the direct path's range, or not) and its `result` (as text, or straight into a tool's
//! output) or `error`. The parse gives up as soon as the line shows it is something else, so
//! the traffic of rmcp's opening costs little. What a direct request waits for ([`Wants`]) and is
//! handed ([`Reply`]) are said here too.

use std::cell::Cell;
use std::fmt;

use rmcp::model::ErrorData;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

use serde_json::value::RawValue;

use super::decode::Key;
use crate::client::model::tool_result;
use crate::client::model::types::ToolOutput;

/// The first id of a direct request: past every id rmcp's 32-bit counter gives.
pub(crate) const FIRST_ID: u64 = 1 << 32;

/// What a direct request gets back: its `result`, or why there is none.
pub(crate) type Reply = Result<Delivered, NoResult>;

/// Why a direct request has no `result`.
#[derive(Debug)]
pub(crate) enum NoResult {
    /// The server answered with a JSON-RPC error.
    Server(ErrorData),
    /// The server's answer could not be read (a line past the longest accepted): what happened,
    /// for the caller's error.
    Unreadable(String),
}

impl fmt::Display for NoResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoResult::Server(error) => write!(f, "{} (code {})", error.message, error.code.0),
            NoResult::Unreadable(why) => f.write_str(why),
        }
    }
}

/// A direct request's `result` as the reader hands it over.
#[derive(Debug)]
pub(crate) enum Delivered {
    /// The JSON text as sent, decoded by the caller's task into the type it wants.
    Text(Box<RawValue>),
    /// A tool's output, read by the reader in the same pass that found the answer's id (see
    /// [`Wants::ToolOutput`]). Boxed: the answer is moved several times on its way to the
    /// caller, and an output is several times the size of the text's pointer.
    Tool(Box<ToolOutput>),
}

/// How a direct request wants its `result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wants {
    /// As JSON text.
    Text,
    /// As a [`ToolOutput`] when the reader can read one straight from the line: the answer
    /// names its `id` before its `result` (as servers write it), and the result is an output
    /// the one-pass reader takes. Anything else (an `input_required` result, a result the
    /// one-pass reader leaves to the slow one, the id after the result) comes as text.
    ToolOutput,
}

/// The id and answer of a line that answers a direct request; `None` for anything else.
/// `wants` says how the request with an id wants its result.
pub(crate) fn parse_answer(line: &[u8], wants: &dyn Fn(u64) -> Wants) -> Option<(u64, Reply)> {
    // JSON is UTF-8 throughout: checked once for the whole line, rather than string by
    // string as the parse meets them and again for the result's text.
    let line = std::str::from_utf8(super::decode::trim(line)).ok()?;
    let read_tool = Cell::new(false);
    match parse_line(line, Some(wants), &read_tool) {
        // The one-pass tool reader stopped the parse (it leaves this result to the slow
        // reader, or it is no output): read the line again, the result as text.
        None if read_tool.get() => parse_line(line, None, &read_tool),
        parsed => parsed,
    }
}

fn parse_line(
    line: &str,
    wants: Option<&dyn Fn(u64) -> Wants>,
    read_tool: &Cell<bool>,
) -> Option<(u64, Reply)> {
    let mut deserializer = serde_json::Deserializer::from_str(line);
    let visitor = AnswerVisitor { wants, read_tool };
    let (id, answer) = deserializer.deserialize_map(visitor).ok()??;
    deserializer.end().ok()?;
    Some((id, answer))
}

/// An id as far as the direct path cares: in our range, or not.
enum Id {
    Ours(u64),
    Other,
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request id")
    }

    fn visit_u64<E: de::Error>(self, id: u64) -> Result<Id, E> {
        Ok(if id >= FIRST_ID {
            Id::Ours(id)
        } else {
            Id::Other
        })
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Id, E> {
        Ok(Id::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Id, E> {
        Ok(Id::Other)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Id, E> {
        Ok(Id::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
        Ok(Id::Other)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Id, E> {
        Ok(Id::Other)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Id, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Id::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Id, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Id::Other)
    }
}

/// Reads an answer to a direct request; gives up (with an error, which ends the parse at
/// once) as soon as the message shows it is something else, so rmcp's traffic costs little.
struct AnswerVisitor<'a> {
    /// How a request wants its result; `None`: as text, whatever it wants.
    wants: Option<&'a dyn Fn(u64) -> Wants>,
    /// Set when the result was read as a tool's output.
    read_tool: &'a Cell<bool>,
}

/// Why the parse stopped early: the message is not ours (never shown to anyone).
const NOT_OURS: &str = "not a direct answer";

impl<'de> Visitor<'de> for AnswerVisitor<'_> {
    type Value = Option<(u64, Reply)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut version = false;
        let mut id = None::<u64>;
        let mut result = None::<Delivered>;
        let mut error = None::<ErrorData>;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                // A borrowed string: "2.0" has no escapes (one that does is not ours).
                Key::Jsonrpc if !version => {
                    version = map.next_value::<&'de str>()? == "2.0";
                    if !version {
                        return Err(de::Error::custom(NOT_OURS));
                    }
                }
                Key::Id if id.is_none() => match map.next_value::<Id>()? {
                    Id::Ours(ours) => id = Some(ours),
                    Id::Other => return Err(de::Error::custom(NOT_OURS)),
                },
                Key::Result if result.is_none() && error.is_none() => {
                    let as_output = match (id, self.wants) {
                        (Some(id), Some(wants)) => wants(id) == Wants::ToolOutput,
                        _ => false,
                    };
                    result = Some(if as_output {
                        self.read_tool.set(true);
                        Delivered::Tool(Box::new(map.next_value_seed(tool_result::OutputSeed)?))
                    } else {
                        Delivered::Text(map.next_value()?)
                    });
                }
                Key::Error if result.is_none() && error.is_none() => {
                    error = Some(map.next_value()?);
                }
                Key::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                }
                // A request or notification (`method`), or a field twice: not ours.
                _ => return Err(de::Error::custom(NOT_OURS)),
            }
        }
        Ok(match (version, id, result, error) {
            (true, Some(id), Some(result), None) => Some((id, Ok(result))),
            (true, Some(id), None, Some(error)) => Some((id, Err(NoResult::Server(error)))),
            _ => None,
        })
    }
}
