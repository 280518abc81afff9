//! What a 2026-07-28 request must carry before it is served, and what its result must carry
//! after.
//!
//! A request is checked in the order the revision asks for: its `_meta`
//! (`protocolVersion` and `clientCapabilities` required, `clientInfo` optional), then over HTTP
//! the `MCP-Protocol-Version` header against it, then the version itself, then the routing
//! headers (`Mcp-Method`, `Mcp-Name`) and the custom `Mcp-Param-*` headers a tool declares
//! with `x-mcp-header`. Every refusal is HTTP 400. Results get `resultType` and, for the
//! cacheable methods, `ttlMs` and `cacheScope`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::catalog::{self, TTL_MS};
use super::exchange::Meta;
use super::session::level_rank;
use super::{Failure, MODERN_VERSION};

/// `_meta` keys of 2026-07-28.
pub(super) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// `-32020 HeaderMismatch`.
const HEADER_MISMATCH: i64 = -32020;

/// Methods of the `initialize` era that 2026-07-28 removed.
pub(super) const REMOVED: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The MCP headers of one HTTP request (values trimmed of surrounding whitespace).
#[derive(Debug, Default)]
pub(super) struct Headers {
    pub protocol_version: Option<String>,
    pub method: Option<String>,
    pub name: Option<String>,
    /// `Mcp-Param-<suffix>` headers: lower-cased suffix and value.
    pub params: Vec<(String, String)>,
}

/// Whether a request without a session is a 2026-07-28 request: it carries `_meta` with a
/// protocol version, or (over HTTP) a protocol version header of a revision that has no
/// sessions.
pub(super) fn is_modern(params: &Value, header_version: Option<&str>) -> bool {
    let meta = params.get("_meta");
    match header_version {
        Some(version) => meta.is_some() || !super::SESSION_VERSIONS.contains(&version),
        None => meta.and_then(|m| m.get(PROTOCOL_VERSION)).is_some(),
    }
}

/// Checks a 2026-07-28 request; `headers` is `None` over stdio.
pub(super) fn check(
    method: &str,
    params: &Value,
    headers: Option<&Headers>,
) -> Result<Meta, Failure> {
    let bad = |code: i64, message: &str| Failure::new(code, message).with_status(400);
    if let Some(headers) = headers
        && headers.protocol_version.is_none()
    {
        return Err(bad(HEADER_MISMATCH, "Missing MCP-Protocol-Version header"));
    }
    let meta = params.get("_meta").filter(|m| m.is_object());
    let version = meta
        .and_then(|m| m.get(PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let capabilities = meta
        .and_then(|m| m.get(CLIENT_CAPABILITIES))
        .filter(|c| c.is_object());
    let (Some(version), Some(capabilities)) = (version, capabilities) else {
        return Err(bad(
            -32602,
            "Invalid params: _meta needs io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
        ));
    };
    if let Some(headers) = headers
        && headers.protocol_version.as_deref() != Some(version)
    {
        return Err(bad(
            HEADER_MISMATCH,
            "MCP-Protocol-Version header does not match _meta",
        ));
    }
    if version != MODERN_VERSION {
        return Err(
            Failure::new(-32022, format!("Unsupported protocol version: {version}"))
                .with_data(json!({"supported": [MODERN_VERSION], "requested": version}))
                .with_status(400),
        );
    }
    if let Some(headers) = headers {
        check_routing(method, params, headers)?;
    }
    let log_level = match meta.and_then(|m| m.get(LOG_LEVEL)) {
        None | Some(Value::Null) => None,
        Some(level) => Some(
            level
                .as_str()
                .and_then(level_rank)
                .ok_or_else(|| bad(-32602, "unknown io.modelcontextprotocol/logLevel"))?,
        ),
    };
    Ok(Meta {
        capabilities: capabilities.clone(),
        log_level,
    })
}

/// `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` against the body.
fn check_routing(method: &str, params: &Value, headers: &Headers) -> Result<(), Failure> {
    let mismatch = |message: String| Failure::new(HEADER_MISMATCH, message).with_status(400);
    match headers.method.as_deref() {
        Some(header) if header == method => {}
        Some(header) => {
            return Err(mismatch(format!(
                "Mcp-Method header `{header}` does not match the body's method `{method}`"
            )));
        }
        None => return Err(mismatch("Missing Mcp-Method header".into())),
    }
    let name = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            params.get("taskId").and_then(Value::as_str)
        }
        _ => None,
    };
    match (name, headers.name.as_deref()) {
        (None, _) => {}
        (Some(name), Some(header)) if header == name => {}
        (Some(name), Some(header)) => {
            return Err(mismatch(format!(
                "Mcp-Name header `{header}` does not match `{name}`"
            )));
        }
        (Some(_), None) => return Err(mismatch("Missing Mcp-Name header".into())),
    }
    if method == "tools/call"
        && let Some(name) = name
    {
        check_params(name, params.get("arguments"), headers)?;
    }
    Ok(())
}

/// The custom headers of tool `name`: every argument whose schema has `x-mcp-header` and a
/// value must arrive as `Mcp-Param-<x-mcp-header>` with the same value (plain, or
/// `=?base64?…?=`).
fn check_params(name: &str, arguments: Option<&Value>, headers: &Headers) -> Result<(), Failure> {
    let mismatch = |message: String| Failure::new(HEADER_MISMATCH, message).with_status(400);
    let tools = catalog::modern_tools();
    let Some(properties) = tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|t| t.pointer("/inputSchema/properties"))
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    for (argument, schema) in properties {
        let Some(suffix) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let value = arguments.and_then(|a| a.get(argument));
        let header = headers
            .params
            .iter()
            .find(|(s, _)| s.eq_ignore_ascii_case(suffix))
            .map(|(_, v)| v.as_str());
        let expected = match value {
            None | Some(Value::Null) => continue,
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        let Some(header) = header else {
            return Err(mismatch(format!("Missing Mcp-Param-{suffix} header")));
        };
        let decoded = decode_param(header)
            .ok_or_else(|| mismatch(format!("Mcp-Param-{suffix} is not valid Base64")))?;
        if decoded != expected {
            return Err(mismatch(format!(
                "Mcp-Param-{suffix} header does not match argument `{argument}`"
            )));
        }
    }
    Ok(())
}

/// A custom header value: `=?base64?<strict Base64 of UTF-8>?=`, or the value itself.
fn decode_param(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(STANDARD.decode(encoded).ok()?).ok(),
        None => Some(value.to_owned()),
    }
}

/// Adds what every 2026-07-28 result carries: `resultType` and, on cacheable methods,
/// caching hints (public for lists, private for reads).
pub(super) fn decorate(method: &str, result: &mut Value) {
    let Some(object) = result.as_object_mut() else {
        return;
    };
    object
        .entry("resultType")
        .or_insert_with(|| Value::String("complete".into()));
    let scope = match method {
        "server/discover"
        | "tools/list"
        | "prompts/list"
        | "resources/list"
        | "resources/templates/list" => "public",
        "resources/read" => "private",
        _ => return,
    };
    object.entry("ttlMs").or_insert_with(|| json!(TTL_MS));
    object
        .entry("cacheScope")
        .or_insert_with(|| Value::String(scope.into()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(version: &str) -> Value {
        json!({"_meta": {
            PROTOCOL_VERSION: version,
            CLIENT_CAPABILITIES: {},
        }})
    }

    fn headers(method: &str) -> Headers {
        Headers {
            protocol_version: Some(MODERN_VERSION.into()),
            method: Some(method.into()),
            ..Headers::default()
        }
    }

    #[test]
    fn refusals_carry_the_codes_of_the_revision() {
        let missing = check("tools/list", &json!({}), None).unwrap_err();
        assert_eq!((missing.code, missing.status), (-32602, 400));
        let old = check("tools/list", &meta("2025-11-25"), None).unwrap_err();
        assert_eq!(old.code, -32022);
        assert_eq!(old.data.unwrap()["requested"], "2025-11-25");
        let mut h = headers("prompts/list");
        let wrong = check("tools/list", &meta(MODERN_VERSION), Some(&h)).unwrap_err();
        assert_eq!(wrong.code, -32020);
        h.method = Some("tools/list".into());
        assert!(check("tools/list", &meta(MODERN_VERSION), Some(&h)).is_ok());
    }

    #[test]
    fn custom_headers_decode_strict_base64() {
        assert_eq!(
            decode_param("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
        assert_eq!(decode_param("=?base64?SGVsbG8?="), None);
        assert_eq!(decode_param("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_param("plain").as_deref(), Some("plain"));
    }
}
