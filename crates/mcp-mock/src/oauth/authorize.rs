//! `GET /authorize`: approves at once (no UI) and redirects back with a code; PKCE S256 only.

use super::*;

impl OAuth {
    /// `/authorize`: a redirect with a code (or an error), or 400 text when it cannot safely
    /// redirect (unknown client, bad redirect URI) or the request is malformed.
    pub(super) fn authorize(&self, query: &str, issuer: Option<&str>) -> Response {
        let params = match params(query.as_bytes()) {
            Ok(params) => params,
            Err(why) => return reject(why),
        };
        let param = |name: &str| params.get(name).map(String::as_str);
        let Some(client_id) = param("client_id") else {
            return reject("missing client_id");
        };
        let mut store = self.lock();
        let Some(client) = store.clients.get(client_id) else {
            return reject("unknown client_id");
        };
        let redirect_uri = match (param("redirect_uri"), client.redirect_uris.as_deref()) {
            (Some(uri), _) => uri.to_owned(),
            // OAuth 2.1 §4.1.1: optional when exactly one is registered.
            (None, Some([only])) => only.clone(),
            (None, _) => return reject("missing redirect_uri"),
        };
        let Some(target) = loopback(&redirect_uri) else {
            return reject("redirect_uri must be an http loopback URL");
        };
        if let Some(registered) = &client.redirect_uris
            && !registered.iter().any(|r| same_redirect(r, &target))
        {
            return reject("redirect_uri is not registered for this client");
        }
        if param("response_type") != Some("code") {
            return reject("response_type must be code");
        }
        let Some(challenge) = param("code_challenge") else {
            return reject("missing code_challenge (PKCE is required)");
        };
        if param("code_challenge_method") != Some("S256") {
            return reject("code_challenge_method must be S256");
        }
        if !is_challenge(challenge) {
            return reject("code_challenge must be 43 base64url characters (S256)");
        }

        // From here on, errors go back to the client through the redirect.
        let scopes = match param("scope").map(parse_scopes) {
            None => self.knobs.scopes.clone(),
            Some(Some(scopes)) if scopes.is_empty() => self.knobs.scopes.clone(),
            Some(Some(scopes)) => scopes,
            Some(None) => return redirect(target, &[("error", "invalid_scope")], param("state")),
        };
        let resource = param("resource");
        if resource.is_some_and(|r| !self.is_resource(r)) {
            return redirect(target, &[("error", "invalid_target")], param("state"));
        }
        bump(&self.stats.authorizations);
        if self.knobs.deny {
            return redirect(target, &[("error", "access_denied")], param("state"));
        }
        let Ok(code) = random("mock-code-") else {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness from the OS",
            );
        };
        store.codes.insert(
            code.clone(),
            Code {
                client_id: client_id.to_owned(),
                redirect_uri: param("redirect_uri").map(str::to_owned),
                challenge: challenge.to_owned(),
                scopes,
                resource: resource.map(str::to_owned),
                expires: Instant::now() + CODE_TTL,
            },
        );
        let iss = match self.knobs.iss {
            Some(IssKnob::Right) => issuer,
            Some(IssKnob::Wrong) => Some(WRONG_ISSUER),
            Some(IssKnob::Missing) | None => None,
        };
        let mut params = vec![("code", code.as_str())];
        params.extend(iss.map(|iss| ("iss", iss)));
        redirect(target, &params, param("state"))
    }
}

pub(super) async fn authorize(
    State(oauth): State<Arc<OAuth>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let issuer = oauth.origin(&headers);
    oauth.authorize(uri.query().unwrap_or_default(), Some(&issuer))
}

/// Whether `challenge` can be an S256 challenge: 43 base64url characters (32 bytes, no
/// padding), which catches padded or standard-alphabet encodings early.
pub(super) fn is_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
