//! The resource server's side: the bearer check in front of `/mcp`, its 401 and 403
//! challenges, and the extra scope `tools/call` may need.

use super::*;

impl OAuth {
    /// The scopes of the request's bearer token, if it has a live one.
    pub(super) fn bearer(&self, headers: &HeaderMap) -> Bearer {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| {
                scheme.eq_ignore_ascii_case("bearer")
                    || (self.knobs.dpop.is_some()
                        && scheme.eq_ignore_ascii_case("dpop")
                        && headers.contains_key("dpop"))
            })
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty());
        let Some(token) = token else {
            return Bearer::Missing;
        };
        let mut store = self.lock();
        match store.access.get(token) {
            Some(access) if access.live(Instant::now()) => Bearer::Valid(access.scopes.clone()),
            Some(_) => {
                store.access.remove(token);
                Bearer::Invalid
            }
            None => Bearer::Invalid,
        }
    }

    /// 401 asking for a proof with a new nonce (`--oauth-dpop resource`).
    pub(super) fn dpop_nonce_challenge(&self, origin: &str) -> Response {
        bump(&self.stats.dpop_nonce_challenges);
        let challenge = format!(
            r#"DPoP error="use_dpop_nonce", resource_metadata="{origin}{RESOURCE_METADATA_PATH}""#
        );
        let body = json!({"error": "use_dpop_nonce"});
        let mut response = challenged(StatusCode::UNAUTHORIZED, &challenge, &body);
        with_nonce(&mut response);
        response
    }

    /// 401 with the RFC 9728 challenge; `error="invalid_token"` when a token was sent.
    pub(super) fn unauthorized(&self, origin: &str, token_sent: bool) -> Response {
        bump(&self.stats.unauthorized);
        let mut challenge =
            format!(r#"Bearer resource_metadata="{origin}{RESOURCE_METADATA_PATH}""#);
        let description = if token_sent {
            challenge.push_str(r#", error="invalid_token""#);
            "the access token is unknown or expired"
        } else {
            "a bearer token is required"
        };
        let body = json!({"error": "invalid_token", "error_description": description});
        challenged(StatusCode::UNAUTHORIZED, &challenge, &body)
    }

    /// 403 naming the scopes that would do: the token's plus `needed`.
    pub(super) fn insufficient_scope(
        &self,
        origin: &str,
        scopes: &[String],
        needed: &str,
    ) -> Response {
        bump(&self.stats.insufficient_scope);
        let mut wanted = scopes.to_vec();
        if !wanted.iter().any(|s| s == needed) {
            wanted.push(needed.to_owned());
        }
        let challenge = format!(
            r#"Bearer error="insufficient_scope", scope="{}", resource_metadata="{origin}{RESOURCE_METADATA_PATH}""#,
            wanted.join(" ")
        );
        let body = json!({
            "error": "insufficient_scope",
            "error_description": "tools/call needs another scope (mcpr mock --oauth-call-scope)",
        });
        challenged(StatusCode::FORBIDDEN, &challenge, &body)
    }
}

pub(super) enum Bearer {
    Missing,
    Invalid,
    Valid(Vec<String>),
}

/// The middleware in front of `/mcp` (`axum::middleware::from_fn_with_state`).
pub(crate) async fn guard(
    State(oauth): State<Arc<OAuth>>,
    request: Request,
    next: Next,
) -> Response {
    let origin = oauth.origin(request.headers());
    let current = oauth.current();
    let scopes = match current.bearer(request.headers()) {
        Bearer::Valid(scopes) => scopes,
        Bearer::Missing => return current.unauthorized(&origin, false),
        Bearer::Invalid => return current.unauthorized(&origin, true),
    };
    if oauth.knobs.dpop == Some(DpopKnob::Resource) && request.headers().contains_key("dpop") {
        return oauth.dpop_nonce_challenge(&origin);
    }
    // `--oauth-migrate-to`: the first token used is the last the first server's are taken.
    if let Some(next) = &oauth.next {
        next.moved.store(true, Ordering::SeqCst);
    }
    let Some(needed) = &oauth.knobs.call_scope else {
        return next.run(request).await;
    };
    if request.method() != Method::POST || scopes.contains(needed) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await else {
        return text(StatusCode::PAYLOAD_TOO_LARGE, "request body too large");
    };
    if calls_a_tool(&body) {
        return oauth.insufficient_scope(&origin, &scopes, needed);
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// Whether a JSON-RPC body (one message or a batch) holds a `tools/call`.
pub(super) fn calls_a_tool(body: &[u8]) -> bool {
    let is_call = |m: &Value| m.get("method").and_then(Value::as_str) == Some("tools/call");
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch.iter().any(is_call),
        Ok(message) => is_call(&message),
        Err(_) => false,
    }
}
