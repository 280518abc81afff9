//! A `tools/call` result read from its JSON text straight into a [`ToolOutput`].
//!
//! [`ToolOutput::from_wire`] takes apart a result already read into a `serde_json` map; with
//! `preserve_order` that map is an `IndexMap` with SipHash per key and an allocation per key
//! and string, for the result and again for every content block, most of what reading an
//! answer cost. Here the result's text is read once: the fields `ToolOutput` and [`Content`]
//! model are read into their types, the rest into the `extra` maps, in the order sent.
//!
//! The outcome is exactly `from_wire`'s. Whatever this reader does not take (a field twice, a
//! field of the wrong type, a content block that is not an object, a result that is not an
//! object, JSON too deep) makes it give up, and the result is read again through a `Value`
//! and `from_wire`, whose answer (an error, or rmcp's parse for what is no tool output)
//! stands. Hostile answers thus cost a second parse, never a different outcome.

use std::fmt;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::types::{Content, ToolOutput};

/// What a `tools/call` result turned out to be.
#[derive(Debug)]
pub(crate) enum ToolRead {
    /// A tool's output.
    Output(ToolOutput),
    /// A result object that does not fit [`ToolOutput`]: serde's error says why.
    Invalid(serde_json::Error),
    /// Not a tool's output: an `input_required` result or a task handle (2026-07-28), or no
    /// object at all.
    /// rmcp's parse decides what it is.
    Other,
}

/// Read the text of a `tools/call` result (valid JSON, as the transport checked it).
pub(crate) fn read(text: &str) -> ToolRead {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    match deserializer.deserialize_map(ResultVisitor) {
        Ok(Fast::Output(output)) if deserializer.end().is_ok() => ToolRead::Output(output),
        Ok(Fast::InputRequired) => ToolRead::Other,
        _ => read_slowly(text),
    }
}

/// Reads a `tools/call` result in the middle of a larger message (the answer's line, see
/// `direct`) into a [`ToolOutput`]. Fails where [`read`] would fall back to the slow reader
/// or find no output: the caller then reads the result as text and hands it to [`read`].
pub(crate) struct OutputSeed;

impl<'de> DeserializeSeed<'de> for OutputSeed {
    type Value = ToolOutput;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ToolOutput, D::Error> {
        match deserializer.deserialize_map(ResultVisitor)? {
            Fast::Output(output) => Ok(output),
            Fast::InputRequired => Err(de::Error::custom(GIVE_UP)),
        }
    }
}

/// [`read`] through a `Value` and [`ToolOutput::from_wire`]: the reference for every result
/// the fast reader gives up on.
fn read_slowly(text: &str) -> ToolRead {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(result)) if !asks_for_input(&result) => {
            match ToolOutput::from_wire(result) {
                Ok(output) => ToolRead::Output(output),
                Err(e) => ToolRead::Invalid(e),
            }
        }
        Ok(_) => ToolRead::Other,
        // Valid JSON that `Value` cannot hold (nested too deep, a number out of range).
        Err(e) => ToolRead::Invalid(e),
    }
}

/// Whether a result object is a 2026-07-28 `input_required` result or task handle rather
/// than an output.
fn asks_for_input(result: &Map<String, Value>) -> bool {
    matches!(
        result.get("resultType").and_then(Value::as_str),
        Some(INPUT_REQUIRED | TASK)
    )
}

const INPUT_REQUIRED: &str = "input_required";

/// `resultType` of a 2026-07-28 task handle (the tasks extension): no output either.
const TASK: &str = "task";

/// Why the fast reader stopped: the slow one reads this result (never shown to anyone).
const GIVE_UP: &str = "left to the slow reader";

enum Fast {
    Output(ToolOutput),
    InputRequired,
}

/// A top-level field of a result. Other fields' names are kept for `extra`.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ResultKey {
    Content,
    StructuredContent,
    IsError,
    ResultType,
    Other(String),
}

/// `resultType`: whether it says `input_required` or `task` (no output). Any other value, of any type, is not
/// the tool's and is dropped, as `from_wire` drops it.
struct ResultType(bool);

impl<'de> de::Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TypeVisitor;
        impl<'de> Visitor<'de> for TypeVisitor {
            type Value = ResultType;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }

            fn visit_str<E: de::Error>(self, kind: &str) -> Result<ResultType, E> {
                Ok(ResultType(kind == INPUT_REQUIRED || kind == TASK))
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<ResultType, E> {
                Ok(ResultType(false))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ResultType, E> {
                Ok(ResultType(false))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ResultType, E> {
                Ok(ResultType(false))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ResultType, E> {
                Ok(ResultType(false))
            }

            fn visit_unit<E: de::Error>(self) -> Result<ResultType, E> {
                Ok(ResultType(false))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ResultType, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ResultType(false))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultType, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ResultType(false))
            }
        }
        deserializer.deserialize_any(TypeVisitor)
    }
}

struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = Fast;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fast, A::Error> {
        let give_up = || de::Error::custom(GIVE_UP);
        let mut content = None::<Vec<Content>>;
        let mut structured_content = None::<Value>;
        let mut is_error = None::<bool>;
        let mut asks_for_input = None::<bool>;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<ResultKey>()? {
            match key {
                ResultKey::Content if content.is_none() => {
                    content = Some(map.next_value::<Blocks>()?.0);
                }
                ResultKey::StructuredContent if structured_content.is_none() => {
                    structured_content = Some(map.next_value()?);
                }
                // Anything but a boolean is refused by `from_wire`, in its own words.
                ResultKey::IsError if is_error.is_none() => is_error = Some(map.next_value()?),
                ResultKey::ResultType if asks_for_input.is_none() => {
                    asks_for_input = Some(map.next_value::<ResultType>()?.0);
                }
                ResultKey::Other(name) => {
                    let value = map.next_value()?;
                    if extra.insert(name, value).is_some() {
                        return Err(give_up());
                    }
                }
                // The same field twice: the map keeps the last value at the first place.
                _ => return Err(give_up()),
            }
        }
        if asks_for_input == Some(true) {
            return Ok(Fast::InputRequired);
        }
        Ok(Fast::Output(ToolOutput {
            content: content.unwrap_or_default(),
            structured_content: structured_content.filter(|value| !value.is_null()),
            is_error: is_error.unwrap_or(false),
            extra,
        }))
    }
}

/// `content`: an array of block objects.
struct Blocks(Vec<Content>);

impl<'de> de::Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlocksVisitor;
        impl<'de> Visitor<'de> for BlocksVisitor {
            type Value = Blocks;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of content blocks")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
                // Bounded by what was sent, never by what a server claims.
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                while let Some(block) = seq.next_element_seed(BlockSeed)? {
                    blocks.push(block);
                }
                Ok(Blocks(blocks))
            }
        }
        deserializer.deserialize_seq(BlocksVisitor)
    }
}

/// A field of a content block that some block type models.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Known {
    Text,
    Data,
    MimeType,
    Resource,
}

impl Known {
    const ALL: [Known; 4] = [Known::Text, Known::Data, Known::MimeType, Known::Resource];

    fn name(self) -> &'static str {
        match self {
            Known::Text => "text",
            Known::Data => "data",
            Known::MimeType => "mimeType",
            Known::Resource => "resource",
        }
    }
}

/// A field name of a content block.
enum BlockKey {
    Type,
    Known(Known),
    Other(String),
}

impl<'de> de::Deserialize<'de> for BlockKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = BlockKey;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<BlockKey, E> {
                Ok(match key {
                    "type" => BlockKey::Type,
                    "text" => BlockKey::Known(Known::Text),
                    "data" => BlockKey::Known(Known::Data),
                    "mimeType" => BlockKey::Known(Known::MimeType),
                    "resource" => BlockKey::Known(Known::Resource),
                    other => BlockKey::Other(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// A block's `type`: one this version models, or any other value (kept for
/// [`Content::Other`]).
enum Kind {
    Text,
    Image,
    Audio,
    Resource,
    ResourceLink,
    Unknown(Value),
}

impl Kind {
    fn into_value(self) -> Value {
        let name = match self {
            Kind::Text => "text",
            Kind::Image => "image",
            Kind::Audio => "audio",
            Kind::Resource => "resource",
            Kind::ResourceLink => "resource_link",
            Kind::Unknown(value) => return value,
        };
        Value::String(name.to_owned())
    }
}

impl<'de> de::Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Only a string can name a kind; anything else is kept as it is.
        let value = match deserializer.deserialize_any(KindVisitor)? {
            Ok(kind) => return Ok(kind),
            Err(value) => value,
        };
        Ok(Kind::Unknown(value))
    }
}

/// Reads a string `type` without allocating for the kinds this version knows; any other
/// value is read as a `Value`.
struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Result<Kind, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_str<E: de::Error>(self, kind: &str) -> Result<Self::Value, E> {
        Ok(Ok(match kind {
            "text" => Kind::Text,
            "image" => Kind::Image,
            "audio" => Kind::Audio,
            "resource" => Kind::Resource,
            "resource_link" => Kind::ResourceLink,
            other => return Ok(Err(Value::String(other.to_owned()))),
        }))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Err(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Err(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Err(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // Finite: JSON has no other numbers.
        Ok(Err(
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
        ))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Err(value))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Err(value))
    }
}

/// One content block, read into its [`Content`] variant.
struct BlockSeed;

impl<'de> DeserializeSeed<'de> for BlockSeed {
    type Value = Content;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Content, D::Error> {
        deserializer.deserialize_map(BlockVisitor)
    }
}

struct BlockVisitor;

/// The fields of one block as read, each with its place among the block's fields but `type`.
#[derive(Default)]
struct Fields {
    /// The fields some type models, by [`Known`].
    known: [Option<(usize, Value)>; 4],
    /// The others, in order (a text block usually has none: no allocation).
    others: Vec<(usize, String, Value)>,
}

impl Fields {
    fn is_string(&self, name: Known) -> bool {
        matches!(self.known[name as usize], Some((_, Value::String(_))))
    }

    fn take(&mut self, name: Known) -> Option<Value> {
        self.known[name as usize].take().map(|(_, value)| value)
    }

    fn take_string(&mut self, name: Known) -> String {
        match self.take(name) {
            Some(Value::String(text)) => text,
            _ => String::new(),
        }
    }

    /// The fields left as a map in their order, with `kind` (`type`) put back before the
    /// field that followed it; `None` when a name came twice.
    fn into_map(self, kind: Option<(usize, Value)>) -> Option<Map<String, Value>> {
        // Every field taken by the block's type (a text block's usual case): nothing is left.
        if kind.is_none() && self.others.is_empty() && self.known.iter().all(Option::is_none) {
            return Some(Map::new());
        }
        let Fields { known, mut others } = self;
        let mut known_left = false;
        for (name, slot) in Known::ALL.into_iter().zip(known) {
            if let Some((at, value)) = slot {
                others.push((at, name.name().to_owned(), value));
                known_left = true;
            }
        }
        if known_left {
            // Places are distinct: one per field read.
            others.sort_unstable_by_key(|(at, ..)| *at);
        }
        let mut map = Map::with_capacity(others.len() + usize::from(kind.is_some()));
        let mut kind = kind;
        for (at, name, value) in others {
            if kind.as_ref().is_some_and(|(kind_at, _)| *kind_at <= at)
                && let Some((_, kind)) = kind.take()
            {
                map.insert("type".to_owned(), kind);
            }
            if map.insert(name, value).is_some() {
                return None;
            }
        }
        if let Some((_, kind)) = kind {
            map.insert("type".to_owned(), kind);
        }
        Some(map)
    }
}

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
        let give_up = || de::Error::custom(GIVE_UP);
        let mut kind = None::<Kind>;
        // How many fields came before `type`: where `Content::Other` puts it back.
        let mut kind_at = 0;
        let mut read = 0;
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<BlockKey>()? {
            match key {
                BlockKey::Type if kind.is_none() => {
                    kind_at = read;
                    kind = Some(map.next_value()?);
                    continue;
                }
                BlockKey::Known(known) if fields.known[known as usize].is_none() => {
                    fields.known[known as usize] = Some((read, map.next_value()?));
                }
                // A name twice is found when the map is built.
                BlockKey::Other(name) => fields.others.push((read, name, map.next_value()?)),
                _ => return Err(give_up()),
            }
            read += 1;
        }
        block(kind, kind_at, fields).ok_or_else(give_up)
    }
}

/// The block of `kind` with `fields`, as [`Content::from_wire`] makes it; `None` when a
/// field name came twice.
fn block(kind: Option<Kind>, kind_at: usize, mut fields: Fields) -> Option<Content> {
    let fits = match &kind {
        Some(Kind::Text) => fields.is_string(Known::Text),
        Some(Kind::Image | Kind::Audio) => {
            fields.is_string(Known::Data) && fields.is_string(Known::MimeType)
        }
        Some(Kind::Resource) => matches!(
            fields.known[Known::Resource as usize],
            Some((_, Value::Object(_)))
        ),
        Some(Kind::ResourceLink) => true,
        Some(Kind::Unknown(_)) | None => false,
    };
    if !fits {
        // The whole block, `type` in its place.
        let kind = kind.map(|kind| (kind_at, kind.into_value()));
        return fields.into_map(kind).map(Content::Other);
    }
    Some(match kind {
        Some(Kind::Text) => {
            let text = fields.take_string(Known::Text);
            Content::Text {
                text,
                extra: fields.into_map(None)?,
            }
        }
        Some(Kind::Image) => {
            let data = fields.take_string(Known::Data);
            let mime_type = fields.take_string(Known::MimeType);
            Content::Image {
                data,
                mime_type,
                extra: fields.into_map(None)?,
            }
        }
        Some(Kind::Audio) => {
            let data = fields.take_string(Known::Data);
            let mime_type = fields.take_string(Known::MimeType);
            Content::Audio {
                data,
                mime_type,
                extra: fields.into_map(None)?,
            }
        }
        Some(Kind::Resource) => {
            let resource = fields.take(Known::Resource).unwrap_or_default();
            Content::Resource {
                resource,
                extra: fields.into_map(None)?,
            }
        }
        _ => Content::ResourceLink(fields.into_map(None)?),
    })
}

#[cfg(test)]
#[path = "tool_result_tests.rs"]
mod tests;
