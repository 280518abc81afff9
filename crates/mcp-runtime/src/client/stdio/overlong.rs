//! A line from a stdio server longer than the longest accepted ([`MAX_LINE`]): it is dropped
//! unread, but the request it answers must not wait for its timeout.
//!
//! The line is never held whole, so its request is found from what is held: its start, where
//! rmcp and most SDKs put the `id` (`{"jsonrpc":"2.0","id":7,"result":...`), or, when the
//! start is all `result`, its last bytes, where the TypeScript SDK puts it
//! (`...},"jsonrpc":"2.0","id":7}`). A line that goes on past [`ENDLESS_LINE`] is taken as one
//! that will never end: the connection cannot find where the next message starts.

use std::cell::Cell;
use std::fmt;

use rmcp::model::RequestId;
use serde::de::{self, Deserializer as _, IgnoredAny, MapAccess, Visitor};

use super::decode::Key;

/// The longest line accepted (rmcp's bound for stdio and for an SSE event alike).
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How far a line may run on past [`MAX_LINE`] while it is dropped: beyond this, the server is
/// taken never to end it, and the connection is given up.
pub(crate) const ENDLESS_LINE: usize = 4 * MAX_LINE;

/// Bytes kept of a dropped line's end, to find an `id` written last.
pub(crate) const TAIL: usize = 128;

/// What the start of a line past the limit shows.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// An answer (`result` or `error`) to request `id`; `None` when the id, if any, comes after
    /// the `result`.
    Answer(Option<RequestId>),
    /// A request, a notification or anything else: no request of ours waits for it.
    Other,
}

/// The error of a request whose answer was a line past the limit.
pub(crate) fn too_long() -> String {
    format!(
        "the server wrote a line of more than {}; the limit is {}",
        mib(MAX_LINE),
        mib(MAX_LINE)
    )
}

/// The error of the requests waiting when a line runs past [`ENDLESS_LINE`].
pub(crate) fn endless() -> String {
    format!(
        "the server wrote a line of more than {} without ending it (the limit is {}); the \
         connection is closed",
        mib(ENDLESS_LINE),
        mib(MAX_LINE)
    )
}

fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes / (1024 * 1024))
}

/// What the first bytes of a line past the limit say about it.
pub(crate) fn read_head(head: &[u8]) -> Head {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let seen = Cell::new(Seen::default());
    let mut deserializer = serde_json::Deserializer::from_slice(head);
    // The line is cut short (or not JSON at all): the parse always ends in an error; what it
    // saw before is in `seen`.
    let _ = deserializer.deserialize_map(HeadVisitor { seen: &seen });
    let seen = seen.take();
    match seen.kind {
        Some(Kind::Answer) => Head::Answer(seen.id),
        Some(Kind::Other) | None => Head::Other,
    }
}

/// The `id` a line ends with, as in `...,"id":7}` or `...,"id":"a"}`; `None` when its last
/// bytes (`tail`, without the line break) end any other way.
pub(crate) fn id_at_end(tail: &[u8]) -> Option<RequestId> {
    let rest = trim_end(tail).strip_suffix(b"}")?;
    let rest = trim_end(rest);
    let (rest, id) = match rest.strip_suffix(b"\"") {
        Some(text) => {
            let start = text.iter().rposition(|b| *b == b'"')?;
            let id = &text[start + 1..];
            // An escape could hide where the string starts.
            if id.contains(&b'\\') {
                return None;
            }
            let id = std::str::from_utf8(id).ok()?;
            (&text[..start], RequestId::String(id.into()))
        }
        None => {
            let start = rest
                .iter()
                .rposition(|b| !(b.is_ascii_digit() || *b == b'-'))
                .map_or(0, |at| at + 1);
            let number = std::str::from_utf8(&rest[start..]).ok()?.parse().ok()?;
            (&rest[..start], RequestId::Number(number))
        }
    };
    let rest = trim_end(rest).strip_suffix(b":")?;
    let rest = trim_end(rest).strip_suffix(b"\"id\"")?;
    // A member of the outermost object: the one the line's last `}` closes.
    matches!(trim_end(rest).last(), Some(b',' | b'{')).then_some(id)
}

fn trim_end(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |at| at + 1);
    &bytes[..end]
}

#[derive(Default)]
struct Seen {
    kind: Option<Kind>,
    id: Option<RequestId>,
}

enum Kind {
    Answer,
    Other,
}

/// Reads a message's top-level keys until it knows whether it is an answer, and to what.
struct HeadVisitor<'a> {
    seen: &'a Cell<Seen>,
}

/// Why the parse stopped: it knows enough (never shown).
const ENOUGH: &str = "enough";

impl<'de> Visitor<'de> for HeadVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut id = None;
        while let Some(key) = map.next_key::<Key>()? {
            let kind = match key {
                Key::Id => {
                    id = Some(map.next_value::<RequestId>()?);
                    continue;
                }
                Key::Result | Key::Error => Kind::Answer,
                Key::Method => Kind::Other,
                Key::Jsonrpc | Key::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            self.seen.set(Seen {
                kind: Some(kind),
                id,
            });
            return Err(de::Error::custom(ENOUGH));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_of_an_answer_names_its_request() {
        let head = |text: &str| read_head(text.as_bytes());
        assert_eq!(
            head(
                r#"{"jsonrpc":"2.0","id":4294967296,"result":{"content":[{"type":"text","text":"xxx"#
            ),
            Head::Answer(Some(RequestId::Number(4_294_967_296)))
        );
        assert_eq!(
            head(r#"{"id":"a","jsonrpc":"2.0","error":{"code":1,"message":"xxxx"#),
            Head::Answer(Some(RequestId::String("a".into())))
        );
        // The TypeScript SDK's order: the id comes last.
        assert_eq!(
            head(r#"{"result":{"content":[{"type":"text","text":"xxx"#),
            Head::Answer(None)
        );
        assert_eq!(
            head(r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"x":"#),
            Head::Other
        );
        assert_eq!(
            head(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"#),
            Head::Other
        );
        assert_eq!(head("xxxxxxxx"), Head::Other);
        assert_eq!(
            head(r#"{"jsonrpc":"2.0","id":1,"_meta":{"big":"xxx"#),
            Head::Other
        );
    }

    #[test]
    fn the_end_of_an_answer_names_its_request_only_as_the_outermost_id() {
        let id = |text: &str| id_at_end(text.as_bytes());
        assert_eq!(
            id(r#"xxx"}]},"jsonrpc":"2.0","id":4294967297}"#),
            Some(RequestId::Number(4_294_967_297))
        );
        assert_eq!(id("xxx\"}]}, \"id\" : 7 }\r"), Some(RequestId::Number(7)));
        assert_eq!(
            id(r#"xx"},"id":"req-1"}"#),
            Some(RequestId::String("req-1".into()))
        );
        // An id of an inner object, or inside a string, is not the message's.
        assert_eq!(id(r#"xxx","inner":{"id":7}}"#), None);
        assert_eq!(id(r#"xxx \"id\":7}"#), None);
        assert_eq!(id(r#"xx","id":"a\"b"}"#), None);
        assert_eq!(id("xxxxxxxxxxxx"), None);
        assert_eq!(id(r#"xxx","id":}"#), None);
    }

    #[test]
    fn the_errors_name_the_limit() {
        assert_eq!(
            too_long(),
            "the server wrote a line of more than 16 MiB; the limit is 16 MiB"
        );
        assert!(endless().starts_with("the server wrote a line of more than 64 MiB without"));
    }
}
