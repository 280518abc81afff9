//! Turning one raw JSON server entry into a [`ServerConfig`], with errors that name the server
//! and the field.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::ConfigError;
use super::{
    HttpConfig, HttpKind, OAuthConfig, OAuthGrant, PrivateKey, ServerConfig, StdioConfig, Transport,
};

/// Validate one entry of an `mcpServers` map (the Claude / Cursor shape).
///
/// Transport is inferred when `type` is absent: `command` means stdio, `url` (or Windsurf's
/// `serverUrl`, Gemini's `httpUrl`) means streamable HTTP; both at once is an error. Besides the
/// Claude fields (`type, command, args, env, cwd, url, headers, timeout, enabled`) it reads
/// `disabled` (Cline, Kiro), `startup_timeout_ms`, `tool_timeout_ms`, `env_vars`,
/// `bearer_token_env_var`, `env_http_headers`, `enabled_tools`, `disabled_tools` and
/// `alwaysLoad` (or `always_load`).
///
/// ```
/// use mcp_runtime::config::server_from_json;
/// let cfg = server_from_json("fs", &serde_json::json!({"command": "mcp-fs", "args": ["/tmp"]})).unwrap();
/// assert_eq!(cfg.transport.kind_name(), "stdio");
/// let err = server_from_json("bad", &serde_json::json!({"args": []})).unwrap_err();
/// assert!(err.to_string().contains("`command`"));
/// ```
pub fn server_from_json(name: &str, entry: &Value) -> Result<ServerConfig, ConfigError> {
    let invalid = |field: &str, message: String| ConfigError::Invalid {
        file: None,
        server: name.to_owned(),
        field: field.to_owned(),
        message,
    };
    let obj = entry
        .as_object()
        .ok_or_else(|| invalid("", format!("expected an object, found {}", kind_of(entry))))?;
    let fields = Fields {
        obj,
        invalid: &invalid,
    };

    let command = fields.string("command")?;
    // Windsurf writes `serverUrl`, Gemini `httpUrl` (always streamable HTTP); at most one.
    let mut url: Option<(&str, String)> = None;
    for key in ["url", "serverUrl", "httpUrl"] {
        if let Some(value) = fields.string(key)? {
            if let Some((first, _)) = &url {
                return Err(invalid(
                    key,
                    format!("both `{first}` and `{key}` are set; use one"),
                ));
            }
            url = Some((key, value));
        }
    }
    let url_field = url.as_ref().map_or("url", |(key, _)| *key);
    let kind = match fields.string("type")?.as_deref() {
        None if url_field == "httpUrl" => Some(Some(HttpKind::StreamableHttp)),
        None => None,
        Some("stdio" | "local") => Some(None),
        Some("http" | "streamable-http" | "streamable_http" | "streamableHttp" | "remote") => {
            Some(Some(HttpKind::StreamableHttp))
        }
        Some("sse") => Some(Some(HttpKind::Sse)),
        Some(other) => {
            return Err(invalid(
                "type",
                format!("unknown transport type `{other}` (expected stdio, http or sse)"),
            ));
        }
    };
    let url = url.map(|(_, value)| value);

    let transport = match (kind, command, url) {
        (_, Some(_), Some(_)) => {
            return Err(invalid(
                "command",
                format!("both `command` and `{url_field}` are set; a server has one transport"),
            ));
        }
        (None | Some(None), Some(command), None) => {
            if command.trim().is_empty() {
                return Err(invalid("command", "is empty".into()));
            }
            if oauth_from_json(obj, &invalid)?.is_some() {
                return Err(invalid(
                    "oauth",
                    "applies to http and sse servers only; this one is stdio".into(),
                ));
            }
            Transport::Stdio(StdioConfig {
                command,
                args: fields.string_list("args")?,
                env: fields.string_map("env")?,
                cwd: fields.string("cwd")?.map(PathBuf::from),
                sandbox: crate::sandbox::from_entry(obj, &invalid)?,
                inherit_env: fields.flag("inheritEnv")?.unwrap_or(false),
            })
        }
        (Some(None), None, _) => {
            return Err(invalid("command", "is required for a stdio server".into()));
        }
        (None | Some(Some(_)), None, Some(url)) => {
            if crate::sandbox::from_entry(obj, &invalid)?.is_some() {
                return Err(invalid(
                    "sandboxEnabled",
                    "applies to stdio servers only; this one is reached over HTTP".into(),
                ));
            }
            if url.trim().is_empty() {
                return Err(invalid(url_field, "is empty".into()));
            }
            Transport::Http(HttpConfig {
                url,
                headers: fields.string_map("headers")?,
                kind: kind.flatten().unwrap_or(HttpKind::StreamableHttp),
                oauth: oauth_from_json(obj, &invalid)?,
            })
        }
        (Some(Some(_)), _, None) => {
            return Err(invalid(
                "url",
                "is required for an http or sse server".into(),
            ));
        }
        (None, None, None) => {
            return Err(invalid(
                "command",
                "a server needs `command` (stdio) or `url` (http)".into(),
            ));
        }
    };

    let enabled = fields.flag("enabled")?.unwrap_or(true);
    let disabled = fields.flag("disabled")?.unwrap_or(false);
    Ok(ServerConfig {
        transport,
        timeout_ms: fields.millis("timeout")?,
        startup_timeout_ms: fields.millis("startup_timeout_ms")?,
        tool_timeout_ms: fields.millis("tool_timeout_ms")?,
        enabled: enabled && !disabled,
        env_vars: fields.env_var_names("env_vars")?,
        bearer_token_env_var: fields.string("bearer_token_env_var")?,
        env_headers: fields.string_map("env_http_headers")?,
        enabled_tools: match fields.get("enabled_tools") {
            None => None,
            Some(_) => Some(fields.string_list("enabled_tools")?),
        },
        disabled_tools: fields.string_list("disabled_tools")?,
        always_load: match (fields.flag("alwaysLoad")?, fields.flag("always_load")?) {
            (Some(a), Some(b)) if a != b => {
                return Err(invalid(
                    "always_load",
                    "both `alwaysLoad` and `always_load` are set and disagree; use one".into(),
                ));
            }
            (a, b) => a.or(b).unwrap_or(false),
        },
        pin_tools: fields.flag("pinTools")?.unwrap_or(true),
    })
}

/// The `oauth` block (Claude Code), or an `auth` block with `type: oauth` (an older mcpr shape,
/// same keys). `auth: {type: none}` or no block at all gives `None`.
fn oauth_from_json<F: Fn(&str, String) -> ConfigError>(
    entry: &Map<String, Value>,
    invalid: &F,
) -> Result<Option<OAuthConfig>, ConfigError> {
    let (key, block) = match (entry.get("oauth"), entry.get("auth")) {
        (Some(Value::Null) | None, Some(Value::Null) | None) => return Ok(None),
        (Some(_), Some(auth)) if !auth.is_null() => {
            return Err(invalid(
                "auth",
                "both `oauth` and `auth` are set; use one".into(),
            ));
        }
        (Some(oauth), _) if !oauth.is_null() => ("oauth", oauth),
        (_, Some(auth)) => ("auth", auth),
        _ => return Ok(None),
    };
    let Some(obj) = block.as_object() else {
        return Err(invalid(
            key,
            format!("expected an object, found {}", kind_of(block)),
        ));
    };
    // Errors name the nested field: `oauth.clientId`.
    let nested = |field: &str, message: String| invalid(&format!("{key}.{field}"), message);
    let fields = Fields {
        obj,
        invalid: &nested,
    };
    if key == "auth" {
        match fields.string("type")?.as_deref() {
            Some("oauth" | "oauth2") => {}
            Some("none") => return Ok(None),
            Some(other) => {
                return Err(nested(
                    "type",
                    format!("unknown auth type `{other}` (expected oauth or none)"),
                ));
            }
            None => return Err(nested("type", "is required (oauth or none)".into())),
        }
    }
    let callback_port = match fields.get("callbackPort") {
        None => None,
        Some(Value::Number(n)) => Some(
            n.as_u64()
                .and_then(|port| u16::try_from(port).ok())
                .filter(|port| *port > 0)
                .ok_or_else(|| nested("callbackPort", format!("`{n}` is not a port")))?,
        ),
        Some(other) => return Err(fields.wrong("callbackPort", "a port number", other)),
    };
    // `scopes` as a list, or one space-separated string as OAuth writes them.
    let scopes = match fields.get("scopes") {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        _ => fields.string_list("scopes")?,
    };
    let grant = match fields.string("grantType")?.as_deref() {
        None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
        Some("client_credentials") => OAuthGrant::ClientCredentials,
        Some(other) => {
            return Err(nested(
                "grantType",
                format!(
                    "unknown grant `{other}` (expected authorization_code or client_credentials)"
                ),
            ));
        }
    };
    let private_key = match (
        fields.string("privateKeyFile")?,
        fields.string("privateKey")?,
    ) {
        (Some(_), Some(_)) => {
            return Err(nested(
                "privateKey",
                "both `privateKey` and `privateKeyFile` are set; use one".into(),
            ));
        }
        (Some(path), None) => Some(PrivateKey::File(PathBuf::from(path))),
        (None, Some(pem)) => Some(PrivateKey::Pem(pem)),
        (None, None) => None,
    };
    let client_id = fields.string("clientId")?;
    if grant == OAuthGrant::ClientCredentials && client_id.is_none() {
        return Err(nested(
            "clientId",
            "is required for the client_credentials grant".into(),
        ));
    }
    Ok(Some(OAuthConfig {
        client_id,
        client_secret: fields.string("clientSecret")?,
        callback_port,
        scopes,
        auth_server_metadata_url: fields.string("authServerMetadataUrl")?,
        client_metadata_url: fields.string("clientMetadataUrl")?,
        grant,
        private_key,
        signing_algorithm: fields.string("signingAlgorithm")?,
    }))
}

/// Typed access to an entry's fields; a wrong type is an error naming the field.
struct Fields<'a, F> {
    obj: &'a Map<String, Value>,
    invalid: &'a F,
}

impl<F: Fn(&str, String) -> ConfigError> Fields<'_, F> {
    fn get(&self, field: &str) -> Option<&Value> {
        self.obj.get(field).filter(|v| !v.is_null())
    }

    fn wrong(&self, field: &str, expected: &str, found: &Value) -> ConfigError {
        (self.invalid)(
            field,
            format!("expected {expected}, found {}", kind_of(found)),
        )
    }

    fn string(&self, field: &str) -> Result<Option<String>, ConfigError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.wrong(field, "a string", other)),
        }
    }

    fn string_list(&self, field: &str) -> Result<Vec<String>, ConfigError> {
        match self.get(field) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.wrong(field, "an array of strings", other)),
                })
                .collect(),
            Some(other) => Err(self.wrong(field, "an array of strings", other)),
        }
    }

    /// Codex's `env_vars`: names, or `{name, source}` tables whose `source` is `local` (the
    /// default). `remote` (a variable of a remote executor) has no meaning where mcpr starts
    /// the server itself, so it is refused rather than silently read from this machine.
    fn env_var_names(&self, field: &str) -> Result<Vec<String>, ConfigError> {
        let Some(Value::Array(items)) = self.get(field) else {
            return self.string_list(field);
        };
        let expected = "an array of names or {name, source} tables";
        items
            .iter()
            .map(|item| match item {
                Value::String(name) => Ok(name.clone()),
                Value::Object(table) => {
                    let name = match table.get("name") {
                        Some(Value::String(name)) => name.clone(),
                        _ => return Err((self.invalid)(field, "an entry has no `name`".into())),
                    };
                    match table.get("source") {
                        None | Some(Value::Null) => Ok(name),
                        Some(Value::String(source)) if source == "local" => Ok(name),
                        Some(other) => Err((self.invalid)(
                            field,
                            format!(
                                "`{name}` has source {other}; mcpr starts servers on this \
                                 machine, so only `local` applies"
                            ),
                        )),
                    }
                }
                other => Err(self.wrong(field, expected, other)),
            })
            .collect()
    }

    fn string_map(&self, field: &str) -> Result<BTreeMap<String, String>, ConfigError> {
        match self.get(field) {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(key, value)| match value {
                    Value::String(s) => Ok((key.clone(), s.clone())),
                    // Numbers and booleans in env blocks are common; pass them on as text.
                    Value::Number(n) => Ok((key.clone(), n.to_string())),
                    Value::Bool(b) => Ok((key.clone(), b.to_string())),
                    other => Err(self.wrong(&format!("{field}.{key}"), "a string", other)),
                })
                .collect(),
            Some(other) => Err(self.wrong(field, "an object of strings", other)),
        }
    }

    /// Milliseconds as a non-negative number or a numeric string.
    fn millis(&self, field: &str) -> Result<Option<u64>, ConfigError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                .map(Some)
                .ok_or_else(|| {
                    self.wrong(
                        field,
                        "a non-negative number of milliseconds",
                        &Value::Number(n.clone()),
                    )
                }),
            Some(Value::String(s)) => s.trim().parse::<u64>().map(Some).map_err(|_| {
                (self.invalid)(field, format!("expected milliseconds, found \"{s}\""))
            }),
            Some(other) => Err(self.wrong(field, "a number of milliseconds", other)),
        }
    }

    /// A boolean, also accepting `"true"`/`"false"`/`"1"`/`"0"` as some hosts write.
    fn flag(&self, field: &str) -> Result<Option<bool>, ConfigError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if matches!(s.as_str(), "true" | "1") => Ok(Some(true)),
            Some(Value::String(s)) if matches!(s.as_str(), "false" | "0") => Ok(Some(false)),
            Some(other) => Err(self.wrong(field, "true or false", other)),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(entry: Value) -> String {
        server_from_json("srv", &entry).unwrap_err().to_string()
    }

    #[test]
    fn infers_transport_from_fields() {
        let stdio =
            server_from_json("a", &json!({"command": "x", "env": {"K": "v", "N": 1}})).unwrap();
        let Transport::Stdio(s) = stdio.transport else {
            panic!("not stdio")
        };
        assert_eq!(s.env.get("N").map(String::as_str), Some("1"));
        let http = server_from_json("b", &json!({"url": "http://h/mcp"})).unwrap();
        assert_eq!(http.transport.kind_name(), "http");
        let sse = server_from_json("c", &json!({"type": "sse", "url": "http://h/sse"})).unwrap();
        assert_eq!(sse.transport.kind_name(), "sse");
    }

    #[test]
    fn validation_errors_name_server_and_field() {
        assert!(err(json!({"command": "x", "url": "http://h"})).contains("`command` and `url`"));
        assert!(err(json!({"type": "stdio"})).contains("field `command`"));
        assert!(err(json!({"type": "http"})).contains("field `url`"));
        assert!(err(json!({"type": "carrier-pigeon", "command": "x"})).contains("field `type`"));
        assert!(err(json!({"command": "x", "args": "nope"})).contains("field `args`"));
        assert!(err(json!({"command": "x", "timeout": "soon"})).contains("field `timeout`"));
        assert!(err(json!({})).contains("server `srv`"));
    }

    #[test]
    fn always_load_in_either_spelling() {
        let read = |entry: Value| server_from_json("s", &entry).unwrap().always_load;
        assert!(!read(json!({"command": "x"})));
        assert!(read(json!({"command": "x", "alwaysLoad": true})));
        assert!(read(json!({"command": "x", "always_load": "true"})));
        assert!(read(
            json!({"command": "x", "alwaysLoad": true, "always_load": true})
        ));
        let wrong = err(json!({"command": "x", "alwaysLoad": "yes"}));
        assert!(
            wrong.contains("server `srv`") && wrong.contains("`alwaysLoad`"),
            "{wrong}"
        );
        let clash = err(json!({"command": "x", "alwaysLoad": true, "always_load": false}));
        assert!(clash.contains("disagree"), "{clash}");
    }

    #[test]
    fn url_aliases_and_extras() {
        let w = server_from_json("w", &json!({"serverUrl": "http://h/mcp"})).unwrap();
        assert_eq!(w.transport.kind_name(), "http");
        let g = server_from_json("g", &json!({"httpUrl": "http://h/mcp"})).unwrap();
        assert_eq!(g.transport.kind_name(), "http");
        assert!(err(json!({"url": "http://a", "serverUrl": "http://b"})).contains("`serverUrl`"));
        let c = server_from_json(
            "c",
            &json!({"command": "x", "disabled": true, "env_vars": ["HOME"], "enabled_tools": ["a"]}),
        )
        .unwrap();
        assert!(!c.enabled);
        assert_eq!(c.env_vars, vec!["HOME".to_owned()]);
        assert!(c.allows_tool("a") && !c.allows_tool("b"));
    }

    #[test]
    fn accepts_host_spellings_of_flags_and_numbers() {
        let cfg = server_from_json(
            "a",
            &json!({"command": "x", "enabled": "0", "timeout": "1500"}),
        )
        .unwrap();
        assert!(!cfg.enabled);
        assert_eq!(cfg.timeout_ms, Some(1500));
    }

    #[test]
    fn oauth_blocks_in_claude_and_auth_shapes() {
        let oauth = |entry: Value| match server_from_json("s", &entry).unwrap().transport {
            Transport::Http(http) => http.oauth,
            Transport::Stdio(_) => panic!("expected http"),
        };
        let claude = oauth(json!({
            "url": "https://h/mcp",
            "oauth": {"clientId": "ci", "clientSecret": "cs", "callbackPort": 8765,
                      "scopes": "read write", "authServerMetadataUrl": "https://as/.well-known/x"}
        }))
        .unwrap();
        assert_eq!(claude.client_id.as_deref(), Some("ci"));
        assert_eq!(claude.callback_port, Some(8765));
        assert_eq!(claude.scopes, ["read", "write"]);
        assert_eq!(claude.grant, OAuthGrant::AuthorizationCode);
        let auth = oauth(json!({
            "url": "https://h/mcp",
            "auth": {"type": "oauth", "clientId": "m", "privateKeyFile": "/k.pem",
                     "grantType": "client_credentials", "scopes": ["a"]}
        }))
        .unwrap();
        assert_eq!(auth.grant, OAuthGrant::ClientCredentials);
        assert_eq!(auth.private_key, Some(PrivateKey::File("/k.pem".into())));
        assert!(oauth(json!({"url": "https://h/mcp", "auth": {"type": "none"}})).is_none());
        assert!(oauth(json!({"url": "https://h/mcp"})).is_none());
    }

    #[test]
    fn oauth_errors_name_the_nested_field() {
        let url = "https://h/mcp";
        assert!(
            err(json!({"url": url, "oauth": {"callbackPort": 70000}}))
                .contains("field `oauth.callbackPort`")
        );
        assert!(
            err(json!({"url": url, "oauth": {"grantType": "password"}}))
                .contains("field `oauth.grantType`")
        );
        assert!(
            err(json!({"url": url, "oauth": {"grantType": "client_credentials"}}))
                .contains("field `oauth.clientId`")
        );
        assert!(
            err(json!({"url": url, "auth": {"type": "kerberos"}})).contains("field `auth.type`")
        );
        assert!(
            err(json!({"url": url, "oauth": {}, "auth": {"type": "oauth"}}))
                .contains("field `auth`")
        );
        assert!(err(json!({"command": "x", "oauth": {"clientId": "c"}})).contains("field `oauth`"));
        assert!(err(json!({"url": url, "oauth": "yes"})).contains("field `oauth`"));
        // The secret is never part of an error.
        let e = err(
            json!({"url": url, "oauth": {"clientSecret": "s3cr3t-v4lue", "callbackPort": "x"}}),
        );
        assert!(!e.contains("s3cr3t-v4lue"), "{e}");
    }

    #[test]
    fn client_secrets_are_secret_values() {
        let shown = format!(
            "{:?}",
            server_from_json(
                "s",
                &json!({"url": "https://h/mcp", "oauth": {"clientSecret": "cs-hidden-1", "privateKey": "pem-hidden-2"}}),
            )
            .unwrap()
        );
        assert!(
            !shown.contains("cs-hidden-1") && !shown.contains("pem-hidden-2"),
            "{shown}"
        );
        let cfg = server_from_json(
            "s",
            &json!({"url": "https://h/mcp", "oauth": {"clientId": "ci", "clientSecret": "cs-123456"}}),
        )
        .unwrap();
        assert!(cfg.secret_values().contains(&"cs-123456".to_owned()));
    }
}
