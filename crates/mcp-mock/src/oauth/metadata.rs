//! The two metadata documents: protected resource metadata (RFC 9728) and authorization
//! server metadata (RFC 8414), with URLs from the request's origin.

use super::*;

pub(super) async fn resource_metadata(
    State(oauth): State<Arc<OAuth>>,
    headers: HeaderMap,
) -> Response {
    let origin = oauth.origin(&headers);
    let issuer = match (&oauth.next, &oauth.knobs.authorization_server) {
        (Some(next), _) if next.moved.load(Ordering::SeqCst) => {
            format!("http://{}/as2", next.authority)
        }
        (_, Some(named)) => named.clone(),
        _ => origin.clone(),
    };
    json_response(
        StatusCode::OK,
        &json!({
            "resource": format!("{origin}/mcp"),
            "authorization_servers": [issuer],
            "scopes_supported": oauth.knobs.scopes,
            "bearer_methods_supported": ["header"],
        }),
    )
}

pub(super) async fn server_metadata(
    State(oauth): State<Arc<OAuth>>,
    headers: HeaderMap,
) -> Response {
    let origin = oauth.origin(&headers);
    metadata_of(&oauth, &origin)
}

/// The metadata of the authorization server `oauth` whose issuer is `origin` (an origin, or
/// one with the path `/as2` for the second server).
pub(super) fn metadata_of(oauth: &OAuth, origin: &str) -> Response {
    let mut metadata = json!({
        "issuer": origin,
        "authorization_endpoint": oauth
            .knobs
            .authorize_endpoint
            .clone()
            .unwrap_or_else(|| format!("{origin}/authorize")),
        "token_endpoint": format!("{origin}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": GRANT_TYPES,
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "scopes_supported": oauth.knobs.scopes,
    });
    if oauth.knobs.dpop.is_some() {
        metadata["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    if oauth.knobs.iss.is_some() {
        metadata["authorization_response_iss_parameter_supported"] = true.into();
    }
    if oauth.knobs.registration {
        metadata["registration_endpoint"] = format!("{origin}/register").into();
    }
    for (field, url) in &oauth.knobs.endpoints {
        metadata[field] = url.clone().into();
    }
    json_response(StatusCode::OK, &metadata)
}
