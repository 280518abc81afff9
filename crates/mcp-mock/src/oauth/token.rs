//! `POST /token`: the `authorization_code`, `refresh_token` and `client_credentials` grants,
//! client authentication and PKCE verification.

use super::*;

impl OAuth {
    pub(super) fn token(&self, headers: &HeaderMap, body: &[u8]) -> Result<Value, OAuthError> {
        let is_form = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded"));
        if !is_form {
            return Err(OAuthError::bad(
                "invalid_request",
                "the body must be application/x-www-form-urlencoded",
            ));
        }
        let params = params(body).map_err(|why| OAuthError::bad("invalid_request", why))?;
        let grant = params.get("grant_type").map(String::as_str);
        match grant {
            Some("authorization_code") => bump(&self.stats.authorization_code),
            Some("refresh_token") => bump(&self.stats.refresh_token),
            Some("client_credentials") => bump(&self.stats.client_credentials),
            Some(JWT_BEARER) if self.knobs.jwt_bearer.is_some() => {
                bump(&self.stats.jwt_bearer);
                let mut store = self.lock();
                return self.jwt_bearer(&mut store, &params);
            }
            Some(_) => {
                return Err(OAuthError::bad(
                    "unsupported_grant_type",
                    "grant_type must be authorization_code, refresh_token or client_credentials",
                ));
            }
            None => return Err(OAuthError::bad("invalid_request", "missing grant_type")),
        }
        let proof = headers.contains_key("dpop");
        if proof && self.knobs.dpop == Some(DpopKnob::Token) {
            bump(&self.stats.dpop_nonce_challenges);
            return Err(OAuthError::bad(
                "use_dpop_nonce",
                "use the DPoP-Nonce (mcpr mock --oauth-dpop token)",
            ));
        }
        let mut store = self.lock();
        let client_id = authenticate(&store, headers, &params)?;
        let mut answer = match grant {
            Some("authorization_code") => self.exchange_code(&mut store, client_id, &params),
            Some("refresh_token") => self.refresh(&mut store, client_id, &params),
            _ => self.client_credentials(&mut store, client_id, &params),
        }?;
        if proof && self.knobs.dpop.is_some() {
            answer["token_type"] = "DPoP".into();
        }
        Ok(answer)
    }

    /// The JWT-bearer grant: the `--oauth-jwt-bearer` assertion gets a token (no refresh
    /// token: the workload presents a fresh assertion next time); any other is refused with
    /// a hostile description.
    fn jwt_bearer(&self, store: &mut Store, params: &Params) -> Result<Value, OAuthError> {
        if params.get("assertion") != self.knobs.jwt_bearer.as_ref() {
            return Err(invalid_grant(
                "the assertion is not the one expected\u{1b}]0;pwned\u{7}",
            ));
        }
        if params.get("resource").is_some_and(|r| !self.is_resource(r)) {
            return Err(OAuthError::bad(
                "invalid_target",
                "resource must be this server's /mcp URL",
            ));
        }
        self.issue(store, self.knobs.scopes.clone(), None)
    }

    pub(super) fn exchange_code(
        &self,
        store: &mut Store,
        client_id: String,
        params: &Params,
    ) -> Result<Value, OAuthError> {
        let param = |name: &str| params.get(name).map(String::as_str);
        let Some(code) = param("code") else {
            return Err(OAuthError::bad("invalid_request", "missing code"));
        };
        // Single use: gone at the first attempt, whatever its outcome.
        let Some(grant) = store.codes.remove(code) else {
            return Err(invalid_grant("unknown, expired or already used code"));
        };
        if grant.expires <= Instant::now() {
            return Err(invalid_grant("unknown, expired or already used code"));
        }
        if grant.client_id != client_id {
            return Err(invalid_grant("the code was issued to another client"));
        }
        if grant.redirect_uri.is_some() && param("redirect_uri") != grant.redirect_uri.as_deref() {
            return Err(invalid_grant(
                "redirect_uri differs from the authorization request",
            ));
        }
        let Some(verifier) = param("code_verifier") else {
            return Err(invalid_grant("missing code_verifier"));
        };
        if !pkce_matches(verifier, &grant.challenge) {
            return Err(invalid_grant(
                "code_verifier does not match the code_challenge",
            ));
        }
        if param("resource").is_some_and(|r| grant.resource.as_deref() != Some(r)) {
            return Err(invalid_grant(
                "resource differs from the authorization request",
            ));
        }
        let refresh = Refresh {
            client_id,
            scopes: grant.scopes.clone(),
            resource: grant.resource,
        };
        self.issue(store, grant.scopes, Some(refresh))
    }

    pub(super) fn refresh(
        &self,
        store: &mut Store,
        client_id: String,
        params: &Params,
    ) -> Result<Value, OAuthError> {
        if self.knobs.refresh_invalid {
            return Err(invalid_grant(
                "refresh tokens are refused (mcpr mock --oauth-refresh-invalid)",
            ));
        }
        let param = |name: &str| params.get(name).map(String::as_str);
        let Some(token) = param("refresh_token") else {
            return Err(OAuthError::bad("invalid_request", "missing refresh_token"));
        };
        let Some(old) = store.refresh.get(token) else {
            return Err(invalid_grant("unknown or already used refresh token"));
        };
        if old.client_id != client_id {
            return Err(invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        // RFC 6749 §6: a narrower scope may be asked for, never a wider one.
        let scopes = match param("scope").map(parse_scopes) {
            None => old.scopes.clone(),
            Some(Some(scopes)) if scopes.iter().all(|s| old.scopes.contains(s)) => scopes,
            Some(_) => {
                return Err(OAuthError::bad(
                    "invalid_scope",
                    "a refresh may only narrow the scopes first granted",
                ));
            }
        };
        if param("resource").is_some_and(|r| old.resource.as_deref() != Some(r)) {
            return Err(invalid_grant(
                "resource differs from the authorization request",
            ));
        }
        // Rotation: the old refresh token dies with this use.
        let Some(old) = store.refresh.remove(token) else {
            return Err(invalid_grant("unknown or already used refresh token"));
        };
        let ttl = self
            .knobs
            .refreshed_token_ttl
            .unwrap_or(self.knobs.token_ttl);
        self.issue_for(store, scopes, Some(old), ttl)
    }

    pub(super) fn client_credentials(
        &self,
        store: &mut Store,
        client_id: String,
        params: &Params,
    ) -> Result<Value, OAuthError> {
        let confidential = store
            .clients
            .get(&client_id)
            .is_some_and(|c| c.secret.is_some());
        if !confidential {
            return Err(OAuthError::bad(
                "unauthorized_client",
                "client_credentials needs a confidential client",
            ));
        }
        let scopes = match params.get("scope").map(|s| parse_scopes(s)) {
            None => self.knobs.scopes.clone(),
            Some(Some(scopes)) if scopes.is_empty() => self.knobs.scopes.clone(),
            Some(Some(scopes)) => scopes,
            Some(None) => return Err(OAuthError::bad("invalid_scope", "malformed scope")),
        };
        if params.get("resource").is_some_and(|r| !self.is_resource(r)) {
            return Err(OAuthError::bad(
                "invalid_target",
                "resource must be this server's /mcp URL",
            ));
        }
        self.issue(store, scopes, None)
    }

    /// A new access token for `scopes`, and a new refresh token carrying `refresh` if given.
    pub(super) fn issue(
        &self,
        store: &mut Store,
        scopes: Vec<String>,
        refresh: Option<Refresh>,
    ) -> Result<Value, OAuthError> {
        self.issue_for(store, scopes, refresh, self.knobs.token_ttl)
    }

    /// [`issue`](Self::issue), with an access token that lives `ttl`.
    fn issue_for(
        &self,
        store: &mut Store,
        scopes: Vec<String>,
        refresh: Option<Refresh>,
        ttl: Duration,
    ) -> Result<Value, OAuthError> {
        let now = Instant::now();
        // Expired tokens are only ever refused: forget them.
        store.access.retain(|_, access| access.live(now));
        let access_token = random("mock-at-")?;
        let mut answer = json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": u64::try_from(ttl.as_millis().div_ceil(1000))
                .unwrap_or(u64::MAX),
            "scope": self.knobs.token_scope.clone().unwrap_or_else(|| scopes.join(" ")),
        });
        if self.knobs.hide_expiry
            && let Some(fields) = answer.as_object_mut()
        {
            fields.remove("expires_in");
        }
        if let Some(refresh) = refresh {
            let refresh_token = random("mock-rt-")?;
            answer["refresh_token"] = refresh_token.clone().into();
            store.refresh.insert(refresh_token, refresh);
        }
        store.access.insert(
            access_token,
            Access {
                scopes,
                expires: now.checked_add(ttl),
            },
        );
        Ok(answer)
    }
}

pub(super) async fn token(
    State(oauth): State<Arc<OAuth>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match oauth.token(&headers, &body) {
        Ok(answer) => json_response(StatusCode::OK, &answer),
        Err(e) => e.into_response(),
    }
}

/// The client a `/token` request authenticates as, which must be the way it registered: HTTP
/// Basic (`client_secret_basic`), `client_id` + `client_secret` in the body
/// (`client_secret_post`), or `client_id` alone (public, `none`). `--oauth-client` clients may
/// use either secret method.
pub(super) fn authenticate(
    store: &Store,
    headers: &HeaderMap,
    params: &Params,
) -> Result<String, OAuthError> {
    let basic =
        match headers.get(header::AUTHORIZATION) {
            Some(value) => {
                Some(value.to_str().ok().and_then(parse_basic).ok_or_else(|| {
                    OAuthError::invalid_client("malformed HTTP Basic credentials")
                })?)
            }
            None => None,
        };
    let body_id = params.get("client_id");
    let body_secret = params.get("client_secret");
    let (client_id, secret, used) = match (basic, body_id, body_secret) {
        (Some(_), _, Some(_)) => {
            return Err(OAuthError::bad(
                "invalid_request",
                "more than one client authentication method",
            ));
        }
        (Some((id, secret)), body_id, None) => {
            if body_id.is_some_and(|b| *b != id) {
                return Err(OAuthError::invalid_client(
                    "client_id differs from the HTTP Basic credentials",
                ));
            }
            (id, Some(secret), AuthMethod::Basic)
        }
        (None, Some(id), Some(secret)) => (id.clone(), Some(secret.clone()), AuthMethod::Post),
        (None, Some(id), None) => (id.clone(), None, AuthMethod::None),
        (None, None, _) => return Err(OAuthError::invalid_client("no client authentication")),
    };
    let Some(client) = store.clients.get(&client_id) else {
        return Err(OAuthError::invalid_client("unknown client"));
    };
    match (&client.secret, client.method) {
        (None, _) if used == AuthMethod::None => Ok(client_id),
        (None, _) => Err(OAuthError::invalid_client(
            "a public client authenticates with its client_id alone",
        )),
        (Some(_), Some(method)) if method != used => {
            Err(OAuthError::invalid_client(match method {
                AuthMethod::Post => "this client registered client_secret_post",
                _ => "this client registered client_secret_basic",
            }))
        }
        (Some(_), None) if used == AuthMethod::None => {
            Err(OAuthError::invalid_client("this client needs its secret"))
        }
        (Some(expected), _) if secret.as_ref() == Some(expected) => Ok(client_id),
        (Some(_), _) => Err(OAuthError::invalid_client("wrong client secret")),
    }
}

/// `id` and `secret` from an `Authorization: Basic` value. RFC 6749 §2.3.1 has both
/// form-encoded before base64; text that is not validly encoded is taken as it is.
pub(super) fn parse_basic(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((form_decode(id), form_decode(secret)))
}

/// Undoes `application/x-www-form-urlencoded` (`+`, `%XX`); `text` as it is if that fails.
pub(super) fn form_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                let Some(decoded) = hex else {
                    return text.to_owned();
                };
                out.push(decoded);
                i += 2;
            }
            _ => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// Whether `verifier` is a valid PKCE verifier (RFC 7636 §4.1) whose S256 challenge is
/// `challenge`: base64url without padding of its SHA-256.
pub(super) fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
    (43..=128).contains(&verifier.len())
        && verifier.bytes().all(unreserved)
        && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}
