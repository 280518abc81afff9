//! Reading a client's line for the byte-stream front end's fast path (see `front`).
//!
//! One pass over the line tells whether it is a `tools/call` or a `notifications/cancelled`
//! the fast path may take, and reads its parameters as rmcp types them. A line it does not
//! take, for whatever reason, goes on to rmcp unchanged, which answers it as it always did.
//!
//! A call's `_meta` is read as text first. A client sends the same metadata with every
//! request (its revision, name and capabilities; only the progress token changes), so the
//! map parsed from the session's last metadata is copied when the text is the same, rather
//! than parsed again, and so are the facts the front checks in it.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ConstString as _, InputResponses,
    JsonObject, JsonRpcVersion2_0, MetaObject, ProtocolVersion, RequestId, RequestMetaObject,
};
use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// The key of a request's progress token in its `_meta`.
const PROGRESS_TOKEN: &str = "progressToken";

/// Metadata longer than this (as text) is parsed every time rather than remembered.
const MEMO_MAX_TEXT: usize = 4 * 1024;

/// Metadata with more keys than this is parsed every time rather than remembered.
const MEMO_MAX_KEYS: usize = 16;

/// Copies of the remembered metadata kept for later calls, at most (as many as calls in
/// flight give back at once, about).
const MEMO_MAX_SPARE: usize = 64;

/// A line the fast path takes.
// Not boxed: returned once per line and taken apart at once, never stored.
#[allow(clippy::large_enum_variant)]
pub(super) enum FastLine {
    /// A `tools/call` request.
    Call(Call),
    /// A `notifications/cancelled`.
    Cancel(CancelledNotificationParam),
}

/// A `tools/call` request, with what its `_meta` says.
pub(super) struct Call {
    pub(super) id: RequestId,
    /// As rmcp reads them, `_meta` taken out.
    pub(super) params: CallToolRequestParams,
    /// Its `_meta` (empty when it has none).
    pub(super) meta: RequestMetaObject,
    /// The revision its `_meta` names.
    pub(super) version: Option<ProtocolVersion>,
    /// Whether its `_meta` carries what 2026-07-28 requires of every request.
    pub(super) has_required_meta: bool,
    /// Its `_meta` is the one remembered (of this generation), and may be given back.
    pub(super) remembered: Option<u64>,
}

/// Reads one session's lines. It remembers the metadata the session's last call carried, and
/// keeps the copies of it that calls give back once answered for the calls after them.
#[derive(Default)]
pub(super) struct LineReader {
    memo: Mutex<Memo>,
}

#[derive(Default)]
struct Memo {
    last: Option<MetaMemo>,
    /// Counts the metadata remembered, so that a copy of an earlier one is not kept.
    generation: u64,
}

/// A call's `_meta` as it was sent and as it was read.
struct MetaMemo {
    /// Its entries in order: key and raw value (`None` for the progress token's, which
    /// changes from call to call).
    entries: Vec<(String, Option<Box<str>>)>,
    meta: RequestMetaObject,
    version: Option<ProtocolVersion>,
    has_required_meta: bool,
    /// Copies given back by calls answered (their progress tokens as those calls had them).
    spare: Vec<RequestMetaObject>,
}

impl LineReader {
    /// The call or cancellation `line` is, if the fast path may take it as it is: valid
    /// JSON-RPC of the types rmcp reads it as, with no field twice.
    pub(super) fn read(&self, line: &[u8]) -> Option<FastLine> {
        let top: Top = serde_json::from_slice(line).ok()?;
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

    /// A call's `_meta`, answered: kept for a later call if it is still the one remembered.
    pub(super) fn give_back(&self, generation: u64, meta: RequestMetaObject) {
        let mut memo = self.lock();
        if memo.generation == generation
            && let Some(last) = &mut memo.last
            && last.spare.len() < MEMO_MAX_SPARE
        {
            last.spare.push(meta);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Memo> {
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn call(&self, id: RequestId, params: CallParams) -> Option<FastLine> {
        let CallParams {
            meta,
            name,
            arguments,
            input_responses,
            request_state,
        } = params;
        let mut params = CallToolRequestParams::new(name);
        params.arguments = arguments;
        params.input_responses = input_responses;
        params.request_state = request_state;
        let (meta, version, has_required_meta, remembered) = match meta {
            Some(MetaEntries(entries)) => self.meta(entries)?,
            None => (RequestMetaObject::default(), None, false, None),
        };
        Some(FastLine::Call(Call {
            id,
            params,
            meta,
            version,
            has_required_meta,
            remembered,
        }))
    }

    /// `_meta` from its entries: when they are the last call's, a copy of its map (one given
    /// back if there is one) with this call's progress token.
    #[allow(clippy::type_complexity)]
    fn meta(
        &self,
        entries: Vec<(Cow<'_, str>, &RawValue)>,
    ) -> Option<(
        RequestMetaObject,
        Option<ProtocolVersion>,
        bool,
        Option<u64>,
    )> {
        let token = match entries.iter().find(|(key, _)| key == PROGRESS_TOKEN) {
            Some((_, token)) => Some(parse(token)?),
            None => None,
        };
        {
            let mut memo = self.lock();
            let generation = memo.generation;
            if let Some(last) = &mut memo.last
                && last.matches(&entries)
            {
                let mut meta = last.spare.pop().unwrap_or_else(|| last.meta.clone());
                if let Some(token) = token
                    && let Some(slot) = meta.0.0.get_mut(PROGRESS_TOKEN)
                {
                    *slot = token;
                }
                let (version, has_required) = (last.version.clone(), last.has_required_meta);
                return Some((meta, version, has_required, Some(generation)));
            }
        }
        let mut map = JsonObject::with_capacity(entries.len());
        for (key, value) in &entries {
            map.insert(key.as_ref().to_owned(), parse(value)?);
        }
        let meta = RequestMetaObject(MetaObject(map));
        let version = meta.protocol_version();
        let has_required_meta = meta
            .missing_required_keys(&ProtocolVersion::V_2026_07_28)
            .is_empty();
        if !rememberable(&entries) {
            return Some((meta, version, has_required_meta, None));
        }
        let mut memo = self.lock();
        memo.generation += 1;
        memo.last = Some(MetaMemo {
            entries: entries
                .iter()
                .map(|(key, value)| {
                    let value = (key != PROGRESS_TOKEN).then(|| value.get().into());
                    (key.as_ref().to_owned(), value)
                })
                .collect(),
            meta: meta.clone(),
            version: version.clone(),
            has_required_meta,
            spare: Vec::new(),
        });
        Some((meta, version, has_required_meta, Some(memo.generation)))
    }
}

impl MetaMemo {
    /// Whether `entries` are the ones remembered, but for the progress token's value.
    fn matches(&self, entries: &[(Cow<'_, str>, &RawValue)]) -> bool {
        self.entries.len() == entries.len()
            && self
                .entries
                .iter()
                .zip(entries)
                .all(|((key, text), (new_key, new_value))| {
                    key == new_key && text.as_deref().is_none_or(|text| text == new_value.get())
                })
    }
}

/// Whether metadata is worth remembering: small, and with no key twice (a key sent twice
/// keeps its first place and its last value, which a copy with a new token would not keep).
fn rememberable(entries: &[(Cow<'_, str>, &RawValue)]) -> bool {
    entries.len() <= MEMO_MAX_KEYS
        && entries
            .iter()
            .map(|(_, value)| value.get().len())
            .sum::<usize>()
            <= MEMO_MAX_TEXT
        && entries
            .iter()
            .enumerate()
            .all(|(i, (key, _))| entries[..i].iter().all(|(other, _)| other != key))
}

/// A value already checked as JSON.
fn parse(value: &RawValue) -> Option<Value> {
    serde_json::from_str(value.get()).ok()
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

/// `tools/call` parameters as rmcp's `CallToolRequestParams` reads them, `_meta` as text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<MetaEntries<'a>>,
    name: Cow<'static, str>,
    arguments: Option<JsonObject>,
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

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
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

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
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
        let mut method_seen = false;
        let mut params_seen = false;
        let twice = |field| Err(de::Error::duplicate_field(field));
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "jsonrpc" => {
                    top.jsonrpc_twice |= top.jsonrpc.is_some();
                    top.jsonrpc = Some(map.next_value()?);
                }
                "id" if top.id.is_some() => return twice("id"),
                "id" => top.id = Some(map.next_value()?),
                "method" if method_seen => return twice("method"),
                "method" => {
                    method_seen = true;
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
                "params" if params_seen => return twice("params"),
                "params" => {
                    params_seen = true;
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

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
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

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
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

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"progressToken":TOKEN}"#;

    fn call_line(id: u64, token: u64) -> String {
        let meta = META.replace("TOKEN", &token.to_string());
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{meta},"name":"echo","arguments":{{"message":"hi"}}}}}}"#
        )
    }

    fn read_call(reader: &LineReader, line: &str) -> Call {
        match reader.read(line.as_bytes()) {
            Some(FastLine::Call(call)) => call,
            _ => panic!("not taken as a call: {line}"),
        }
    }

    /// What rmcp reads from the same line's `params`.
    fn rmcp_params(line: &str) -> CallToolRequestParams {
        let value: Value = serde_json::from_str(line).unwrap();
        serde_json::from_value(value["params"].clone()).unwrap()
    }

    fn with_meta(call: Call) -> CallToolRequestParams {
        let mut params = call.params;
        params.meta = Some(call.meta);
        params
    }

    #[test]
    fn a_call_reads_as_rmcp_reads_it_and_its_metadata_is_reused_with_each_token() {
        let reader = LineReader::default();
        for (id, token) in [(1, 10), (2, 11), (3, 12)] {
            let line = call_line(id, token);
            let call = read_call(&reader, &line);
            assert_eq!(call.id, RequestId::Number(id as i64));
            assert_eq!(call.version, Some(ProtocolVersion::V_2026_07_28));
            assert!(call.has_required_meta);
            let params = with_meta(call);
            assert_eq!(params, rmcp_params(&line));
            assert_eq!(
                params.meta.unwrap().get_progress_token(),
                Some(rmcp::model::ProgressToken(
                    rmcp::model::NumberOrString::Number(token as i64)
                ))
            );
        }
        assert!(reader.lock().last.is_some());
    }

    #[test]
    fn metadata_given_back_serves_a_later_call_with_its_own_token() {
        let reader = LineReader::default();
        let first = read_call(&reader, &call_line(1, 10));
        let generation = first.remembered.expect("remembered");
        reader.give_back(generation, first.meta);
        assert_eq!(reader.lock().last.as_ref().unwrap().spare.len(), 1);
        let line = call_line(2, 11);
        let second = read_call(&reader, &line);
        assert_eq!(second.remembered, Some(generation));
        assert!(
            reader.lock().last.as_ref().unwrap().spare.is_empty(),
            "taken"
        );
        assert_eq!(with_meta(second), rmcp_params(&line));
        // A copy of metadata no longer remembered is not kept.
        let other = call_line(3, 12).replace(r#""name":"c""#, r#""name":"d""#);
        let third = read_call(&reader, &other);
        assert_ne!(third.remembered, Some(generation));
        let stale = read_call(&reader, &call_line(4, 13));
        let _ = read_call(&reader, &other);
        reader.give_back(stale.remembered.unwrap(), stale.meta);
        assert!(reader.lock().last.as_ref().unwrap().spare.is_empty());
    }

    #[test]
    fn changed_metadata_is_read_again() {
        let reader = LineReader::default();
        read_call(&reader, &call_line(1, 1));
        let changed = call_line(2, 2).replace(r#""elicitation":{}"#, r#""sampling":{}"#);
        let call = read_call(&reader, &changed);
        let params = with_meta(call);
        assert_eq!(params, rmcp_params(&changed));
        assert!(
            params
                .meta
                .unwrap()
                .client_capabilities()
                .unwrap()
                .sampling
                .is_some(),
            "the capabilities of the line, not the last ones"
        );
        // Without the capabilities 2026-07-28 requires.
        let missing = call_line(3, 3).replace(
            r#","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}"#,
            "",
        );
        let call = read_call(&reader, &missing);
        assert!(!call.has_required_meta);
        assert_eq!(with_meta(call), rmcp_params(&missing));
        // And back: not the previous line's facts.
        let call = read_call(&reader, &call_line(4, 4));
        assert!(call.has_required_meta);
    }

    #[test]
    fn metadata_with_a_key_twice_or_escapes_reads_as_rmcp_reads_it() {
        let reader = LineReader::default();
        for meta in [
            r#"{"progressToken":1,"a":1,"progressToken":2}"#,
            r#"{"a":1,"b":[1,{"c":null}],"a":{"x":2}}"#,
            r#"{"progr\u0065ssToken":"t","io.modelcontextprotocol/protocolVersion":"2025-11-25"}"#,
            r#"{}"#,
            "null",
        ] {
            for id in [1, 2] {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"n","_meta":{meta}}}}}"#
                );
                let call = read_call(&reader, &line);
                let mut params = call.params;
                let expected = rmcp_params(&line);
                params.meta = expected.meta.as_ref().map(|_| call.meta);
                assert_eq!(params, expected, "{line}");
            }
        }
    }

    #[test]
    fn params_before_the_method_and_cancellations_are_read() {
        let reader = LineReader::default();
        let line = r#"{"params":{"name":"n","arguments":{"k":[1]}},"id":"x","method":"tools/call","jsonrpc":"2.0"}"#;
        let call = read_call(&reader, line);
        assert_eq!(call.id, RequestId::String("x".into()));
        assert_eq!(with_meta(call).arguments, rmcp_params(line).arguments);
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
    fn lines_rmcp_would_answer_otherwise_are_left_to_it() {
        let reader = LineReader::default();
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
            format!("{} x", call_line(1, 1)),
        ] {
            assert!(reader.read(line.as_bytes()).is_none(), "taken: {line}");
        }
        // The metadata of a line refused is not remembered.
        assert!(reader.lock().last.is_none());
    }
}
