//! `POST /register`: dynamic client registration (RFC 7591), with the redirect URI rules
//! (http loopback only, any port) that `/authorize` applies too.

use super::*;

impl OAuth {
    pub(super) fn register(&self, body: &[u8]) -> Result<Value, OAuthError> {
        let invalid = |why: &'static str| OAuthError::bad("invalid_client_metadata", why);
        let Ok(Value::Object(metadata)) = serde_json::from_slice::<Value>(body) else {
            return Err(invalid("the body must be a JSON object"));
        };
        let redirect_uris = strings(&metadata, "redirect_uris")?.unwrap_or_default();
        let grant_types = strings(&metadata, "grant_types")?
            .unwrap_or_else(|| vec!["authorization_code".to_owned()]);
        let response_types =
            strings(&metadata, "response_types")?.unwrap_or_else(|| vec!["code".to_owned()]);
        // RFC 7591 §2: client_secret_basic when absent.
        let method = match metadata.get("token_endpoint_auth_method") {
            None | Some(Value::Null) => AuthMethod::Basic,
            Some(Value::String(name)) => AuthMethod::parse(name).ok_or_else(|| {
                invalid("token_endpoint_auth_method must be client_secret_basic, client_secret_post or none")
            })?,
            Some(_) => return Err(invalid("token_endpoint_auth_method must be a string")),
        };
        let client_name = match metadata.get("client_name") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => return Err(invalid("client_name must be a string")),
        };
        if !grant_types
            .iter()
            .all(|g| GRANT_TYPES.contains(&g.as_str()))
        {
            return Err(invalid(
                "grant_types may hold authorization_code, refresh_token and client_credentials",
            ));
        }
        if response_types.iter().any(|r| r != "code") {
            return Err(invalid("response_types may only hold code"));
        }
        if method == AuthMethod::None && grant_types.iter().any(|g| g == "client_credentials") {
            return Err(invalid("client_credentials needs a confidential client"));
        }
        if redirect_uris.iter().any(|uri| loopback(uri).is_none()) {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "redirect URIs must be http loopback URLs (127.0.0.1, localhost or [::1])",
            ));
        }
        if redirect_uris.is_empty() && grant_types.iter().any(|g| g == "authorization_code") {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "authorization_code needs at least one redirect URI",
            ));
        }

        let client_id = random("mock-client-")?;
        let secret = match method {
            AuthMethod::None => None,
            AuthMethod::Basic | AuthMethod::Post => Some(random("mock-cs-")?),
        };
        let mut answer = json!({
            "client_id": client_id,
            "client_id_issued_at": unix_now(),
            "token_endpoint_auth_method": method.name(),
            "redirect_uris": redirect_uris,
            "grant_types": grant_types,
            "response_types": response_types,
        });
        if let Some(secret) = &secret {
            answer["client_secret"] = secret.clone().into();
            // RFC 7591 §3.2.1: required with a secret; 0 is "never expires".
            answer["client_secret_expires_at"] = 0.into();
        }
        if let Some(name) = client_name {
            answer["client_name"] = name.into();
        }
        self.lock().clients.insert(
            client_id,
            Client {
                secret,
                method: Some(method),
                redirect_uris: Some(redirect_uris),
            },
        );
        bump(&self.stats.registrations);
        Ok(answer)
    }
}

pub(super) async fn register(State(oauth): State<Arc<OAuth>>, body: Bytes) -> Response {
    match oauth.register(&body) {
        Ok(answer) => json_response(StatusCode::CREATED, &answer),
        Err(e) => e.into_response(),
    }
}

pub(super) async fn no_registration() -> Response {
    text(
        StatusCode::NOT_FOUND,
        "no dynamic client registration (--oauth-no-registration)",
    )
}

/// `uri` parsed, if it is an http URL on a loopback host (127.0.0.0/8, `localhost`, `[::1]`)
/// without credentials or fragment.
pub(super) fn loopback(uri: &str) -> Option<Url> {
    let url = Url::parse(uri).ok()?;
    let host_ok = match url.host()? {
        url::Host::Domain(domain) => domain.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    let plain = url.username().is_empty() && url.password().is_none() && url.fragment().is_none();
    (url.scheme() == "http" && host_ok && plain).then_some(url)
}

/// Whether `requested` matches the registered redirect URI: exactly, or but for the port, as
/// loopback clients pick theirs at run time (RFC 8252 §7.3).
pub(super) fn same_redirect(registered: &str, requested: &Url) -> bool {
    let Ok(mut registered) = Url::parse(registered) else {
        return false;
    };
    let mut requested = requested.clone();
    // Both are http URLs with a host, where setting the port cannot fail.
    let _ = registered.set_port(None);
    let _ = requested.set_port(None);
    registered == requested
}

/// A string-array member of the registration metadata.
pub(super) fn strings(
    metadata: &Map<String, Value>,
    name: &str,
) -> Result<Option<Vec<String>>, OAuthError> {
    match metadata.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| {
                OAuthError::bad("invalid_client_metadata", "arrays must hold strings only")
            }),
        Some(_) => Err(OAuthError::bad(
            "invalid_client_metadata",
            "redirect_uris, grant_types and response_types must be arrays",
        )),
    }
}
