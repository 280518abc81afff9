//! Reading a client's line for the byte-stream front end's fast path (see `front`).
//!
//! One pass over the line tells whether it is a `tools/call` or a `notifications/cancelled`
//! the fast path may take, and reads its parameters as rmcp types them. A line it does not
//! take, for whatever reason, goes on to rmcp unchanged, which answers it as it always did.
//!
//! A call's `_meta` is read as text first. A client sends the same metadata with every
//! request (its revision, name and capabilities; only the progress token changes), so what
//! the session's last metadata said is reused when the text is the same, rather than parsed
//! again: the handler is given what it says ([`Said`]), not the map.

#![allow(deprecated)] // logging levels: current in the revisions with sessions

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ConstString as _, InputResponses,
    JsonRpcVersion2_0, LoggingLevel, ProgressToken, ProtocolVersion, RequestId, RequestMetaObject,
};
use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::client::model::tool_request::{Arguments, ToolRequest};
use crate::config::json_too_deep;

/// The key of a request's progress token in its `_meta`.
const PROGRESS_TOKEN: &str = "progressToken";

/// Metadata longer than this (as text) is read every time rather than remembered.
const MEMO_MAX_TEXT: usize = 4 * 1024;

/// Metadata with more keys than this is read every time rather than remembered.
const MEMO_MAX_KEYS: usize = 16;

/// How deep a call's arguments may nest: serde_json reads 127 levels of arrays and objects,
/// of which the line and its `params` take two.
const ARGUMENTS_NESTING: usize = 125;

/// A line the fast path takes.
// Not boxed: returned once per line and taken apart at once, never stored.
#[allow(clippy::large_enum_variant)]
pub(super) enum FastLine<'a> {
    /// A `tools/call` request.
    Call(Call<'a>),
    /// A `notifications/cancelled`.
    Cancel(CancelledNotificationParam),
}

/// A `tools/call` request, with what its `_meta` says.
pub(super) struct Call<'a> {
    pub(super) id: RequestId,
    /// As rmcp reads them, without `_meta`, and with the arguments as their text.
    pub(super) request: ToolRequest,
    /// Its `_meta` as sent, if it has one (see [`meta`](Self::meta)).
    meta_text: Option<&'a RawValue>,
    pub(super) said: Said,
    pub(super) progress: Option<ProgressToken>,
}

impl Call<'_> {
    /// Its `_meta` as rmcp reads it (empty when it has none).
    pub(super) fn meta(&self) -> RequestMetaObject {
        self.meta_text
            .and_then(|text| meta_of(text.get()))
            .unwrap_or_default()
    }
}

/// What a call's `_meta` says (besides its progress token), as rmcp's accessors read it.
#[derive(Clone, Default)]
pub(super) struct Said {
    /// The revision it names.
    pub(super) version: Option<ProtocolVersion>,
    /// Whether it carries what 2026-07-28 requires of every request.
    pub(super) has_required_meta: bool,
    /// The capabilities it declares.
    pub(super) declared: Option<Arc<ClientCapabilities>>,
    pub(super) log_level: Option<LoggingLevel>,
    /// The trace context it carries (its well-formed parts).
    pub(super) trace: crate::client::TraceContext,
}

/// Reads one session's lines, and remembers what the metadata of its last call said.
///
/// Cheap to clone (the memo is shared): the HTTP endpoint keeps one for all its requests and
/// hands each request a copy, since a request has no session to remember it in.
#[derive(Clone, Default)]
pub(super) struct LineReader {
    last_meta: Option<Arc<MetaMemo>>,
}

/// A call's `_meta` as it was sent, and what it said.
struct MetaMemo {
    /// Its text before its progress token's value (all of it when it has no token), and
    /// after: the token changes from call to call.
    before: Box<str>,
    after: Box<str>,
    has_token: bool,
    said: Said,
}

impl LineReader {
    /// The call or cancellation `line` is, if the fast path may take it as it is: valid
    /// JSON-RPC of the types rmcp reads it as, with no field twice.
    pub(super) fn read<'a>(&mut self, line: &'a [u8]) -> Option<FastLine<'a>> {
        let top: Top<'_> = serde_json::from_slice(line).ok()?;
        // rmcp refuses a message with both a method and a result or an error.
        if top.result || top.error {
            return None;
        }
        match top.method?.as_ref() {
            "tools/call" => {
                let _: Version = serde_json::from_str(top.jsonrpc?.get()).ok()?;
                if top.jsonrpc_twice {
                    return None;
                }
                let id: RequestId = serde_json::from_str(top.id?.get()).ok()?;
                let params = match top.params {
                    Params::Call(params) => params,
                    Params::Raw(raw) => serde_json::from_str(raw.get()).ok()?,
                    Params::Absent | Params::Cancel(_) => return None,
                };
                self.call(id, params)
            }
            "notifications/cancelled" if top.id.is_none() => match top.params {
                Params::Cancel(cancel) => Some(FastLine::Cancel(cancel)),
                Params::Raw(raw) => serde_json::from_str(raw.get()).ok().map(FastLine::Cancel),
                Params::Absent | Params::Call(_) => None,
            },
            _ => None,
        }
    }

    fn call<'a>(&mut self, id: RequestId, params: CallParams<'a>) -> Option<FastLine<'a>> {
        let CallParams {
            meta,
            name,
            arguments,
            input_responses,
            request_state,
        } = params;
        let arguments = match arguments {
            None => Arguments::Object(None),
            Some(text) => {
                // Skipped as text: an object nested no deeper than rmcp's own parse of the
                // line allows, or rmcp refuses the call. (Valid JSON: every bracket outside a
                // string nests.)
                if json_too_deep(text.get().as_bytes(), ARGUMENTS_NESTING).is_some() {
                    return None;
                }
                Arguments::text(text)?
            }
        };
        let mut request = ToolRequest::new(name, arguments);
        let params = &mut request.params;
        params.input_responses = input_responses;
        params.request_state = request_state;
        let (said, progress) = match meta {
            Some(text) => self.said(text.get())?,
            None => (Said::default(), None),
        };
        Some(FastLine::Call(Call {
            id,
            request,
            meta_text: meta,
            said,
            progress,
        }))
    }

    /// What `_meta` with `text` says, and its progress token: what the last call's said when
    /// the text is the same but for the token.
    fn said(&mut self, text: &str) -> Option<(Said, Option<ProgressToken>)> {
        if let Some(memo) = &self.last_meta
            && let Some(progress) = memo.token_in(text)
        {
            return Some((memo.said.clone(), progress));
        }
        let meta = meta_of(text)?;
        let said = Said {
            version: meta.protocol_version(),
            has_required_meta: meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty(),
            declared: meta.client_capabilities().map(Arc::new),
            log_level: meta.log_level(),
            trace: crate::client::TraceContext::from_meta(&meta.0.0),
        };
        // Its entries as sent, for where the token's value is and whether a key comes twice.
        if text.len() <= MEMO_MAX_TEXT
            && let Ok(MetaEntries(entries)) = serde_json::from_str(text)
            && rememberable(&entries)
        {
            let token = entries.iter().find(|(key, _)| key == PROGRESS_TOKEN);
            // The token's value is a slice of `text`: where it starts there.
            let (start, end) = match token {
                Some((_, value)) => {
                    let start = value.get().as_ptr() as usize - text.as_ptr() as usize;
                    (start, start + value.get().len())
                }
                None => (text.len(), text.len()),
            };
            self.last_meta = Some(Arc::new(MetaMemo {
                before: text[..start].into(),
                after: text[end..].into(),
                has_token: token.is_some(),
                said: said.clone(),
            }));
        }
        Some((said, meta.get_progress_token()))
    }
}

/// `_meta` from its text, as rmcp reads it (`None` if it is not an object).
fn meta_of(text: &str) -> Option<RequestMetaObject> {
    serde_json::from_str(text).ok()
}

impl MetaMemo {
    /// If `text` is the remembered metadata but for its progress token's value: that token
    /// (`None` when it has none, or one of the wrong type, as rmcp's accessor reads it).
    fn token_in(&self, text: &str) -> Option<Option<ProgressToken>> {
        if !self.has_token {
            return (text == &*self.before).then_some(None);
        }
        let value = text
            .strip_prefix(&*self.before)?
            .strip_suffix(&*self.after)?;
        // One JSON value and nothing more, or the text has another shape.
        let value: serde_json::Value = serde_json::from_str(value).ok()?;
        Some(ProgressToken::deserialize(&value).ok())
    }
}

/// Whether metadata with `entries` is worth remembering: few keys, none twice (a key sent
/// twice counts with its last value, and the text remembered is cut around the token's only
/// one).
fn rememberable(entries: &[(Cow<'_, str>, &RawValue)]) -> bool {
    entries.len() <= MEMO_MAX_KEYS
        && entries
            .iter()
            .enumerate()
            .all(|(i, (key, _))| entries[..i].iter().all(|(other, _)| other != key))
}

/// A client line's top-level fields, the parameters read as the method says.
struct Top<'a> {
    jsonrpc: Option<&'a RawValue>,
    /// `jsonrpc` came twice (rmcp refuses such a call; a cancellation never looked at it).
    jsonrpc_twice: bool,
    /// There at all (`null` included).
    id: Option<&'a RawValue>,
    method: Option<Cow<'a, str>>,
    result: bool,
    error: bool,
    params: Params<'a>,
}

/// A line's `params`.
enum Params<'a> {
    Absent,
    /// Came before the method: read once the method is known.
    Raw(&'a RawValue),
    Call(CallParams<'a>),
    Cancel(CancelledNotificationParam),
}

/// `tools/call` parameters as rmcp's `CallToolRequestParams` reads them, `_meta` as text
/// (read further by [`LineReader`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<&'a RawValue>,
    name: Cow<'static, str>,
    /// As text: a relay passes them on as they are (see `ToolRequest`).
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    input_responses: Option<InputResponses>,
    request_state: Option<String>,
}

/// A `_meta` object's entries in order, values as text.
struct MetaEntries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for MetaEntries<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for EntriesVisitor<'a> {
            type Value = MetaEntries<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(Key(key)) = map.next_key()? {
                    entries.push((key, map.next_value()?));
                }
                Ok(MetaEntries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
        let mut top = Top {
            jsonrpc: None,
            jsonrpc_twice: false,
            id: None,
            method: None,
            result: false,
            error: false,
            params: Params::Absent,
        };
        let twice = |field| Err(de::Error::duplicate_field(field));
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "jsonrpc" => {
                    top.jsonrpc_twice |= top.jsonrpc.is_some();
                    top.jsonrpc = Some(map.next_value()?);
                }
                "id" if top.id.is_some() => return twice("id"),
                "id" => top.id = Some(map.next_value()?),
                // A method read is always one the fast path takes (see below).
                "method" if top.method.is_some() => return twice("method"),
                "method" => {
                    top.method = map.next_value::<Option<Key<'de>>>()?.map(|Key(m)| m);
                    // A method the fast path does not take: no need to read further.
                    if !matches!(
                        top.method.as_deref(),
                        Some("tools/call" | "notifications/cancelled")
                    ) {
                        return Err(de::Error::custom("not for the fast path"));
                    }
                }
                "result" if top.result => return twice("result"),
                "result" => top.result = map.next_value::<IgnoredAny>().map(|_| true)?,
                "error" if top.error => return twice("error"),
                "error" => top.error = map.next_value::<IgnoredAny>().map(|_| true)?,
                "params" if !matches!(top.params, Params::Absent) => return twice("params"),
                "params" => {
                    top.params = match top.method.as_deref() {
                        Some("tools/call") => Params::Call(map.next_value()?),
                        Some(_) => Params::Cancel(map.next_value()?),
                        None => Params::Raw(map.next_value()?),
                    };
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(top)
    }
}

/// A string, borrowed from the line when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for KeyVisitor<'a> {
            type Value = Key<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor(std::marker::PhantomData))
    }
}

/// `jsonrpc`: the string `2.0`, as rmcp's `JsonRpcVersion2_0` accepts it (escapes included),
/// read without the `String` rmcp allocates for it.
struct Version;

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VersionVisitor;
        impl Visitor<'_> for VersionVisitor {
            type Value = Version;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, version: &str) -> Result<Version, E> {
                if version == JsonRpcVersion2_0::VALUE {
                    Ok(Version)
                } else {
                    Err(E::custom("expect const string value \"2.0\""))
                }
            }
        }
        deserializer.deserialize_str(VersionVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/logLevel":"debug","progressToken":TOKEN}"#;

    fn call_line(id: u64, token: &str) -> String {
        let meta = META.replace("TOKEN", token);
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{meta},"name":"echo","arguments":{{"message":"hi"}}}}}}"#
        )
    }

    fn read_call<'a>(reader: &mut LineReader, line: &'a str) -> Call<'a> {
        match reader.read(line.as_bytes()) {
            Some(FastLine::Call(call)) => call,
            _ => panic!("not taken as a call: {line}"),
        }
    }

    /// `call` is read from `line` as rmcp reads it: its parameters, its `_meta`, and what
    /// rmcp's accessors say of that `_meta`.
    fn assert_as_rmcp_reads(call: &Call<'_>, line: &str) {
        let value: Value = serde_json::from_str(line).unwrap();
        let mut expected: rmcp::model::CallToolRequestParams =
            serde_json::from_value(value["params"].clone()).unwrap();
        let meta = expected.meta.take().unwrap_or_default();
        // The arguments as text, the same object once parsed.
        let params = ToolRequest {
            params: call.request.params.clone(),
            arguments_text: call.request.arguments_text.clone(),
        };
        assert_eq!(params.into_params().unwrap(), expected, "{line}");
        assert_eq!(call.meta(), meta, "{line}");
        assert_eq!(call.said.version, meta.protocol_version(), "{line}");
        assert_eq!(
            call.said.has_required_meta,
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty(),
            "{line}"
        );
        assert_eq!(
            call.said.declared.as_deref(),
            meta.client_capabilities().as_ref(),
            "{line}"
        );
        assert_eq!(call.said.log_level, meta.log_level(), "{line}");
        assert_eq!(call.progress, meta.get_progress_token(), "{line}");
    }

    #[test]
    fn a_call_reads_as_rmcp_reads_it_and_its_metadata_is_remembered_but_its_token() {
        let mut reader = LineReader::default();
        for (id, token) in [
            (1, "10"),
            (2, "11"),
            (3, r#""t""#),
            (4, "true"),
            (5, r#"{"c":1}"#),
            (6, " 12 "),
        ] {
            let line = call_line(id, token);
            let call = read_call(&mut reader, &line);
            assert_eq!(call.id, RequestId::Number(id as i64));
            assert_eq!(call.said.version, Some(ProtocolVersion::V_2026_07_28));
            assert!(call.said.has_required_meta);
            assert_as_rmcp_reads(&call, &line);
        }
        assert!(reader.last_meta.is_some());
        // Text after the token that is not the remembered text's: another shape, read again
        // (here a log level sent twice, whose last value counts).
        let line = call_line(7, r#"1,"io.modelcontextprotocol/logLevel":"error""#);
        let call = read_call(&mut reader, &line);
        assert_as_rmcp_reads(&call, &line);
        assert_eq!(call.said.log_level, Some(LoggingLevel::Error));
    }

    #[test]
    fn large_metadata_is_read_every_time_not_remembered() {
        let mut reader = LineReader::default();
        let key = "k".repeat(MEMO_MAX_TEXT);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"n","_meta":{{"{key}":1,"progressToken":2}}}}}}"#
        );
        let call = read_call(&mut reader, &line);
        assert_as_rmcp_reads(&call, &line);
        assert!(reader.last_meta.is_none());
    }

    #[test]
    fn changed_metadata_is_read_again() {
        let mut reader = LineReader::default();
        read_call(&mut reader, &call_line(1, "1"));
        let changed = call_line(2, "2").replace(r#""elicitation":{}"#, r#""sampling":{}"#);
        let call = read_call(&mut reader, &changed);
        assert_as_rmcp_reads(&call, &changed);
        assert!(
            call.said.declared.as_ref().unwrap().sampling.is_some(),
            "the capabilities of the line, not the last ones"
        );
        // Without the capabilities 2026-07-28 requires.
        let missing = call_line(3, "3").replace(
            r#","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}"#,
            "",
        );
        let call = read_call(&mut reader, &missing);
        assert!(!call.said.has_required_meta);
        assert_as_rmcp_reads(&call, &missing);
        // And back: not the previous line's facts.
        let line = call_line(4, "4");
        let call = read_call(&mut reader, &line);
        assert!(call.said.has_required_meta);
        assert_as_rmcp_reads(&call, &line);
    }

    #[test]
    fn metadata_with_a_key_twice_or_escapes_reads_as_rmcp_reads_it() {
        let mut reader = LineReader::default();
        for meta in [
            r#"{"progressToken":1,"a":1,"progressToken":2}"#,
            r#"{"a":1,"b":[1,{"c":null}],"a":{"x":2}}"#,
            r#"{"progr\u0065ssToken":"t","io.modelcontextprotocol/protocolVersion":"2025-11-25"}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":"x"}"#,
            r#"{}"#,
            "null",
        ] {
            for id in [1, 2] {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"n","_meta":{meta}}}}}"#
                );
                let call = read_call(&mut reader, &line);
                assert_as_rmcp_reads(&call, &line);
            }
        }
    }

    #[test]
    fn params_before_the_method_and_cancellations_are_read() {
        let mut reader = LineReader::default();
        let line = r#"{"params":{"name":"n","arguments":{"k":[1]}},"id":"x","method":"tools/call","jsonrpc":"2.0"}"#;
        let call = read_call(&mut reader, line);
        assert_eq!(call.id, RequestId::String("x".into()));
        assert_as_rmcp_reads(&call, line);
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
            r#"{"params":{"requestId":7},"method":"notifications/cancelled"}"#,
        ] {
            match reader.read(line.as_bytes()) {
                Some(FastLine::Cancel(cancel)) => {
                    assert_eq!(cancel.request_id, Some(RequestId::Number(7)))
                }
                _ => panic!("not taken as a cancellation: {line}"),
            }
        }
    }

    #[test]
    fn arguments_are_taken_as_deep_as_rmcp_reads_them() {
        let mut reader = LineReader::default();
        let mut taken = 0;
        // Around serde_json's limit of 128 levels, in arrays and in objects.
        for depth in 120..132 {
            for (open, close) in [("[", "]"), (r#"{"k":"#, "}")] {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"n","arguments":{{"a":{}1{}}}}}}}"#,
                    open.repeat(depth),
                    close.repeat(depth)
                );
                let rmcp_reads =
                    serde_json::from_str::<rmcp::model::ClientJsonRpcMessage>(&line).is_ok();
                let read = reader.read(line.as_bytes()).is_some();
                assert_eq!(read, rmcp_reads, "depth {depth} in {open}");
                taken += usize::from(read);
            }
        }
        assert!(taken > 0 && taken < 24, "the limit lies inside the range");
    }

    #[test]
    fn lines_rmcp_would_answer_otherwise_are_left_to_it() {
        let mut reader = LineReader::default();
        let call = |rest: &str| format!(r#"{{"method":"tools/call",{rest}}}"#);
        for line in [
            call(r#""id":1,"params":{"name":"n"}"#), // no jsonrpc
            call(r#""jsonrpc":"1.0","id":1,"params":{"name":"n"}"#),
            call(r#""jsonrpc":"2.0","jsonrpc":"2.0","id":1,"params":{"name":"n"}"#),
            call(r#""jsonrpc":"2.0","params":{"name":"n"}"#), // a notification
            call(r#""jsonrpc":"2.0","id":null,"params":{"name":"n"}"#),
            call(r#""jsonrpc":"2.0","id":1.5,"params":{"name":"n"}"#),
            call(r#""jsonrpc":"2.0","id":1,"id":2,"params":{"name":"n"}"#),
            call(r#""jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"n"}"#),
            call(r#""jsonrpc":"2.0","id":1,"params":{"name":"n"},"params":{"name":"n"}"#),
            call(r#""jsonrpc":"2.0","id":1"#), // no params
            call(r#""jsonrpc":"2.0","id":1,"params":{"arguments":{}}"#), // no name
            call(r#""jsonrpc":"2.0","id":1,"params":{"name":"n","_meta":[]}"#),
            call(r#""jsonrpc":"2.0","id":1,"params":{"name":"n","arguments":[]}"#),
            call(r#""jsonrpc":"2.0","id":1,"params":{"name":"n","name":"m"}"#),
            call(r#""jsonrpc":"2.0","id":1,"params":{"name":"n"},"result":{}"#),
            call(r#""jsonrpc":"2.0","id":1,"params":{"name":"n"},"error":null"#),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":null,"params":{"name":"n"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"notifications/cancelled","params":{}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#.into(),
            r#"["2.0",1,"tools/call",{"name":"n"}]"#.into(),
            format!("{} x", call_line(1, "1")),
        ] {
            assert!(reader.read(line.as_bytes()).is_none(), "taken: {line}");
        }
        // The metadata of a line refused is not remembered.
        assert!(reader.last_meta.is_none());
    }
}
