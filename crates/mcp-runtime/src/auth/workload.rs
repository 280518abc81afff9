//! Workload identity federation: a workload (a CI job, a pod) that holds a JWT from its own
//! identity provider exchanges it at the MCP server's authorization server for an access token
//! with the JWT-bearer grant (RFC 7523 §2.1). No person, no browser, no client secret.
//!
//! A rejected assertion is reported as the authorization server said, once: the same
//! assertion would be rejected again, and another grant type is not what the workload asked
//! for.

use std::time::Duration;

use rmcp::transport::auth::AuthorizationManager;
use serde::Deserialize;

use super::{AuthFailure, endpoint, printable};

/// The grant type of RFC 7523 §2.1.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Bound on the token request.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest token response read (a token response is a few kilobytes).
const MAX_RESPONSE_BYTES: usize = 256 * 1024;

/// What a workload presents.
#[derive(Clone)]
pub struct WorkloadLogin {
    /// This client's id at the MCP server's authorization server.
    pub client_id: String,
    /// The workload's JWT from its identity provider (a secret).
    pub assertion: String,
    /// Scopes to ask for; none: the authorization server's default.
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for WorkloadLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadLogin")
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// Exchange `login`'s assertion for an access token to the MCP server at `url`, found by the
/// same discovery as a login. The token is returned, not stored: its lifetime is the
/// assertion's, and the workload presents a fresh one next time.
pub async fn workload_access_token(
    server: &str,
    url: &str,
    login: &WorkloadLogin,
) -> Result<String, AuthFailure> {
    let failed = |message: String| AuthFailure::Oauth {
        server: server.to_owned(),
        message,
    };
    let client = crate::net::shared_client().map_err(failed)?;
    endpoint::check_resource_metadata(server, url, None).await?;
    let manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let metadata = manager
        .resolve_metadata()
        .await
        .map_err(|e| failed(e.to_string()))?
        .metadata;
    // The assertion is a bearer credential: it goes to no endpoint in the clear.
    endpoint::check_metadata(server, &metadata)?;
    let mut form = vec![
        ("grant_type", JWT_BEARER_GRANT.to_owned()),
        ("assertion", login.assertion.clone()),
        ("client_id", login.client_id.clone()),
        ("resource", url.to_owned()),
    ];
    if !login.scopes.is_empty() {
        form.push(("scope", login.scopes.join(" ")));
    }
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&form)
        .finish();
    let response = client
        .post(&metadata.token_endpoint)
        .header(reqwest::header::ACCEPT, "application/json")
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .timeout(TOKEN_TIMEOUT)
        .send()
        .await
        .map_err(|e| failed(format!("token request: {}", crate::net::root_cause(&e))))?;
    let status = response.status();
    let body = read_bounded(response)
        .await
        .map_err(|e| failed(format!("token response: {e}")))?;
    let answer: Option<TokenAnswer> = serde_json::from_slice(&body).ok();
    match answer {
        Some(TokenAnswer {
            access_token: Some(token),
            ..
        }) if status.is_success() && !token.is_empty() => Ok(token),
        Some(TokenAnswer {
            error: Some(error),
            error_description,
            ..
        }) => Err(failed(format!(
            "the authorization server refused the workload's assertion: {}{}",
            printable(&error),
            error_description
                .map(|d| format!(": {}", printable(&d)))
                .unwrap_or_default()
        ))),
        _ => Err(failed(format!(
            "the token endpoint answered HTTP {status} without an access token"
        ))),
    }
}

/// The body of `response`, refused past [`MAX_RESPONSE_BYTES`].
async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(format!("larger than {MAX_RESPONSE_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
