//! Trace context carried in a request's `_meta`: W3C Trace Context (`traceparent`,
//! `tracestate`) and W3C Baggage (`baggage`), as MCP names them, so that a trace started by a
//! script, an agent or a gateway's client continues at the server.
//!
//! Without telemetry (see [`crate::telemetry`]) mcpr makes no spans of its own: it passes a
//! well-formed context on unchanged (the gateway to its backends, a sub-agent handle to the
//! servers it calls, `mcpr call` from its environment), and never sends a malformed value.
//! With telemetry exporting traces, a call's span is the incoming context's child, and the
//! server gets the span's own `traceparent` in its place ([`TraceContext::continued_by`]),
//! `tracestate` and `baggage` unchanged. Each value is checked against its W3C syntax here.

use serde_json::{Map, Value};

/// The `_meta` key of the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// The `_meta` key of the W3C `baggage`.
pub const BAGGAGE: &str = "baggage";

/// The most list members a `tracestate` may have.
const TRACESTATE_MAX_MEMBERS: usize = 32;
/// The longest `baggage` W3C asks implementations to carry whole, in bytes.
const BAGGAGE_MAX_BYTES: usize = 8192;
/// The most list members of a `baggage` W3C asks implementations to carry.
const BAGGAGE_MAX_MEMBERS: usize = 180;

/// Why a trace context value was refused. The message names the field and the rule, never the
/// value (baggage may carry what should not end up in logs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} is not valid W3C syntax ({rule}); it is not sent")]
pub struct TraceContextError {
    /// `traceparent`, `tracestate` or `baggage`.
    pub field: &'static str,
    /// The rule it breaks.
    pub rule: &'static str,
}

/// A request's trace context: each part well-formed, kept as written.
///
/// ```
/// use mcp_runtime::client::TraceContext;
/// let trace = TraceContext::default()
///     .with_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
///     .unwrap()
///     .with_tracestate("congo=t61rcWkgMzE")
///     .unwrap();
/// assert!(TraceContext::default().with_traceparent("00-xyz").is_err());
/// let mut meta = serde_json::Map::new();
/// trace.write_into(&mut meta);
/// assert_eq!(TraceContext::from_meta(&meta), trace);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: Option<String>,
    tracestate: Option<String>,
    baggage: Option<String>,
}

impl TraceContext {
    /// With `traceparent`, if it is well-formed.
    pub fn with_traceparent(mut self, value: &str) -> Result<Self, TraceContextError> {
        check_traceparent(value)?;
        self.traceparent = Some(value.to_owned());
        Ok(self)
    }

    /// With `tracestate`, if it is well-formed. It is sent only beside a `traceparent`.
    pub fn with_tracestate(mut self, value: &str) -> Result<Self, TraceContextError> {
        check_tracestate(value)?;
        self.tracestate = Some(value.to_owned());
        Ok(self)
    }

    /// With `baggage`, if it is well-formed.
    pub fn with_baggage(mut self, value: &str) -> Result<Self, TraceContextError> {
        check_baggage(value)?;
        self.baggage = Some(value.to_owned());
        Ok(self)
    }

    /// The well-formed parts of a request's `_meta`; a malformed one is left out.
    pub fn from_meta(meta: &Map<String, Value>) -> TraceContext {
        let take = |key: &str, check: fn(&str) -> Result<(), TraceContextError>| {
            meta.get(key)
                .and_then(Value::as_str)
                .filter(|value| check(value).is_ok())
                .map(str::to_owned)
        };
        TraceContext {
            traceparent: take(TRACEPARENT, check_traceparent),
            tracestate: take(TRACESTATE, check_tracestate),
            baggage: take(BAGGAGE, check_baggage),
        }
    }

    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.traceparent.is_none() && self.baggage.is_none()
    }

    /// The `traceparent`, if any.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// The `tracestate`, if any (sent only with a `traceparent`).
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The `baggage`, if any.
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }

    /// The context a span continues: `traceparent` (the span's own, well-formed by
    /// construction) in place of this one's, `tracestate` and `baggage` kept.
    pub(crate) fn continued_by(&self, traceparent: String) -> TraceContext {
        TraceContext {
            traceparent: Some(traceparent),
            tracestate: self.tracestate.clone(),
            baggage: self.baggage.clone(),
        }
    }

    /// Write the context into a request's `_meta`, replacing what it held under these keys.
    pub fn write_into(&self, meta: &mut Map<String, Value>) {
        let mut put = |key: &str, value: Option<&String>| {
            if let Some(value) = value {
                meta.insert(key.to_owned(), Value::String(value.clone()));
            }
        };
        put(TRACEPARENT, self.traceparent.as_ref());
        // A tracestate means nothing without the traceparent it belongs to.
        if self.traceparent.is_some() {
            put(TRACESTATE, self.tracestate.as_ref());
        }
        put(BAGGAGE, self.baggage.as_ref());
    }
}

fn refused(field: &'static str, rule: &'static str) -> TraceContextError {
    TraceContextError { field, rule }
}

fn is_lower_hex(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `version-traceid-parentid-flags`: lowercase hex of 2, 32, 16 and 2 digits, the ids not all
/// zeros, version `ff` invalid; a later version may add fields after another `-`.
fn check_traceparent(value: &str) -> Result<(), TraceContextError> {
    let rule = "version-traceid-parentid-flags in lowercase hex, ids not all zeros";
    let bad = || refused(TRACEPARENT, rule);
    let bytes = value.as_bytes();
    if bytes.len() < 55 || !value.is_ascii() {
        return Err(bad());
    }
    let (version, trace_id, parent_id, flags) =
        (&value[0..2], &value[3..35], &value[36..52], &value[53..55]);
    let dashes = bytes[2] == b'-' && bytes[35] == b'-' && bytes[52] == b'-';
    let hex = [version, trace_id, parent_id, flags]
        .iter()
        .all(|part| is_lower_hex(part));
    let zero = |id: &str| id.bytes().all(|b| b == b'0');
    let rest_ok = match version {
        "00" => bytes.len() == 55,
        _ => bytes.len() == 55 || bytes[55] == b'-',
    };
    if !dashes || !hex || version == "ff" || zero(trace_id) || zero(parent_id) || !rest_ok {
        return Err(bad());
    }
    Ok(())
}

/// Up to 32 `key=value` members separated by commas (blank members allowed), keys unique.
fn check_tracestate(value: &str) -> Result<(), TraceContextError> {
    let bad = |rule| refused(TRACESTATE, rule);
    let mut keys = Vec::new();
    for member in value.split(',').map(|m| m.trim_matches([' ', '\t'])) {
        if member.is_empty() {
            continue;
        }
        let (key, val) = member
            .split_once('=')
            .ok_or_else(|| bad("each member is key=value"))?;
        if !tracestate_key(key) {
            return Err(bad("keys are lowercase, at most 256 characters"));
        }
        let printable = |b: u8| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=';
        if val.is_empty() || val.len() > 256 || !val.bytes().all(printable) || val.ends_with(' ') {
            return Err(bad("values are 1-256 printable characters"));
        }
        if keys.contains(&key) {
            return Err(bad("a key may appear once"));
        }
        keys.push(key);
    }
    if keys.len() > TRACESTATE_MAX_MEMBERS {
        return Err(bad("at most 32 members"));
    }
    Ok(())
}

/// `simple-key` or `tenant@system`.
fn tracestate_key(key: &str) -> bool {
    let rest = |text: &str, max: usize| {
        text.len() <= max
            && text
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/'))
    };
    let first = |text: &str, digit: bool| {
        text.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || (digit && b.is_ascii_digit()))
    };
    match key.split_once('@') {
        None => first(key, false) && rest(&key[1..], 255),
        Some((tenant, system)) => {
            first(tenant, true)
                && rest(&tenant[1..], 240)
                && first(system, false)
                && rest(&system[1..], 13)
        }
    }
}

/// `key=value` members separated by commas, each with optional `;property` parts: keys are
/// HTTP tokens, values baggage octets (percent-encoded beyond them).
fn check_baggage(value: &str) -> Result<(), TraceContextError> {
    let bad = |rule| refused(BAGGAGE, rule);
    if value.len() > BAGGAGE_MAX_BYTES {
        return Err(bad("at most 8192 bytes"));
    }
    let ows = [' ', '\t'];
    let mut members = 0;
    for member in value.split(',') {
        members += 1;
        let mut parts = member.split(';');
        let pair = parts.next().unwrap_or_default();
        let (key, val) = pair
            .split_once('=')
            .ok_or_else(|| bad("each member is key=value"))?;
        if !is_token(key.trim_matches(ows)) || !val.trim_matches(ows).bytes().all(baggage_octet) {
            return Err(bad("keys are tokens, values baggage octets"));
        }
        for property in parts {
            let (key, val) = property.split_once('=').unwrap_or((property, ""));
            if !is_token(key.trim_matches(ows)) || !val.trim_matches(ows).bytes().all(baggage_octet)
            {
                return Err(bad("properties are key or key=value"));
            }
        }
    }
    if members > BAGGAGE_MAX_MEMBERS {
        return Err(bad("at most 180 members"));
    }
    Ok(())
}

/// An HTTP token (RFC 9110 `tchar`s, at least one).
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A `baggage-octet`: printable ASCII but space, `"`, `,`, `;` and `\`.
fn baggage_octet(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparents_follow_the_w3c_syntax() {
        assert!(check_traceparent(PARENT).is_ok());
        assert!(check_traceparent(&format!("01{}-later", &PARENT[2..])).is_ok());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            &PARENT.to_uppercase(),
            &format!("ff{}", &PARENT[2..]),
            &format!("{PARENT}-x"),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473é-00f067aa0ba902b7-0",
        ] {
            assert!(check_traceparent(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tracestates_and_baggage_follow_the_w3c_syntax() {
        for good in ["congo=t61rcWkgMzE", "rojo=00f067aa0ba902b7, ,t@sys=a b"] {
            assert!(check_tracestate(good).is_ok(), "{good}");
        }
        for bad in ["Congo=x", "a=", "a=1,a=2", "a=x\n", "novalue", "a=b=c"] {
            assert!(check_tracestate(bad).is_err(), "{bad}");
        }
        for good in ["userId=alice", "a=1 , b=%20x;prop;k=v"] {
            assert!(check_baggage(good).is_ok(), "{good}");
        }
        for bad in ["", "a", "a=b c", "k=\"q\"", "a=1,,b=2", "k=v\r\nX: y"] {
            assert!(check_baggage(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_malformed_part_of_a_requests_meta_is_left_out() {
        let meta: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "traceparent": PARENT, "tracestate": "Bad=1", "baggage": "k=v", "other": 1
        }))
        .unwrap();
        let trace = TraceContext::from_meta(&meta);
        assert_eq!(trace.traceparent(), Some(PARENT));
        assert_eq!(trace.tracestate(), None);
        assert_eq!(trace.baggage(), Some("k=v"));
        let error = TraceContext::default()
            .with_baggage("secret value")
            .unwrap_err();
        assert!(!error.to_string().contains("secret"), "{error}");
    }
}
