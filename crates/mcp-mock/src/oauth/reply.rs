//! The shapes of the authorization server's answers: OAuth error bodies, JSON without
//! caching, challenges, redirects and plain-text refusals.

use super::*;

/// An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2): `{error, error_description}`.
#[derive(Debug)]
pub(super) struct OAuthError {
    pub(super) status: StatusCode,
    pub(super) error: &'static str,
    pub(super) description: &'static str,
}

impl OAuthError {
    pub(super) fn bad(error: &'static str, description: &'static str) -> OAuthError {
        OAuthError {
            status: StatusCode::BAD_REQUEST,
            error,
            description,
        }
    }

    pub(super) fn invalid_client(description: &'static str) -> OAuthError {
        OAuthError {
            status: StatusCode::UNAUTHORIZED,
            error: "invalid_client",
            description,
        }
    }
}

pub(super) fn invalid_grant(description: &'static str) -> OAuthError {
    OAuthError::bad("invalid_grant", description)
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.error, "error_description": self.description});
        let mut response = json_response(self.status, &body);
        if self.error == "use_dpop_nonce" {
            with_nonce(&mut response);
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 6749 §5.2: a 401 names the scheme the client should authenticate with.
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Basic realm="mcpr-mock""#),
            );
        }
        response
    }
}

/// A new `DPoP-Nonce` on `response`: a different one every time, as a hostile server would.
pub(super) fn with_nonce(response: &mut Response) {
    if let Ok(nonce) = random("mock-nonce-")
        && let Ok(value) = HeaderValue::from_str(&nonce)
    {
        response.headers_mut().insert("dpop-nonce", value);
    }
}

/// A JSON answer that no cache keeps (RFC 6749 §5.1).
pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

/// A JSON answer with a `WWW-Authenticate` challenge.
pub(super) fn challenged(status: StatusCode, challenge: &str, body: &Value) -> Response {
    let mut response = json_response(status, body);
    // The origin and scopes in it were checked to be header-safe; should one not be, the
    // status and body still say what is wrong.
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// 302 to `target` with `params` (and `state`, if the client sent one) added to its query.
pub(super) fn redirect(mut target: Url, params: &[(&str, &str)], state: Option<&str>) -> Response {
    {
        let mut query = target.query_pairs_mut();
        for (name, value) in params {
            query.append_pair(name, value);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
    }
    match HeaderValue::from_str(target.as_str()) {
        Ok(location) => (
            StatusCode::FOUND,
            [
                (header::LOCATION, location),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
        )
            .into_response(),
        Err(_) => reject("redirect_uri cannot be used in a Location header"),
    }
}

/// 400 with a text body: `/authorize` refuses without redirecting.
pub(super) fn reject(why: &str) -> Response {
    text(StatusCode::BAD_REQUEST, why)
}

pub(super) fn text(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("mcpr mock: {message}\n"),
    )
        .into_response()
}
