//! Which URLs OAuth requests may go to: `https:`, or `http:` to a loopback host.
//!
//! The MCP authorization spec requires HTTPS for every authorization server endpoint: plain
//! `http:` to another host carries authorization codes, PKCE verifiers, refresh tokens, client
//! secrets and assertions in the clear, and lets anyone on the path rewrite the metadata that
//! says where the next request goes. Loopback stays allowed for local servers and tests.
//!
//! Every URL a flow takes from metadata (the resource's `authorization_servers`, the
//! authorization server's `issuer`, `token_endpoint`, `registration_endpoint`) or from the
//! config (`oauth.authServerMetadataUrl`, an identity provider's token endpoint) is checked
//! here before the first request to it. The browser's `authorization_endpoint` is checked by
//! the same rule ([`super::web_page`]).

use std::time::Duration;

use rmcp::transport::auth::{AuthorizationMetadata, WWWAuthenticateParams};

use super::{AuthFailure, printable};

/// Bound on reading a resource's metadata before discovery.
const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest resource metadata document read (a few hundred bytes in practice).
const MAX_METADATA_BYTES: usize = 256 * 1024;

/// Longest text of an unparsable URL repeated in an error.
const MAX_SHOWN: usize = 200;

/// `url` parsed, when it may be sent OAuth requests: `https:` with a host, or `http:` to a
/// loopback host (`localhost`, `127.0.0.0/8`, `[::1]`).
pub(crate) fn secure_url(url: &str) -> Option<reqwest::Url> {
    let parsed = reqwest::Url::parse(url).ok()?;
    crate::net::is_secure_url(&parsed).then_some(parsed)
}

/// Refuse `url` unless it meets [`super::ENDPOINT_RULE`]; `field` names it in the error.
pub(crate) fn check(server: &str, field: &str, url: &str) -> Result<(), AuthFailure> {
    if secure_url(url).is_some() {
        return Ok(());
    }
    // Metadata is the authorization server's text: shown parsed (escaped, without query or
    // user info) or, when it does not parse, without control characters and bounded.
    let shown = match reqwest::Url::parse(url) {
        Ok(parsed) => crate::net::display_url(&parsed),
        Err(_) => printable(url).chars().take(MAX_SHOWN).collect(),
    };
    Err(AuthFailure::InsecureEndpoint {
        server: server.to_owned(),
        field: field.to_owned(),
        url: shown,
    })
}

/// Check the endpoints of discovered metadata that every flow relies on: the `issuer` (the
/// authorization server the resource named; discovery binds the two) and the
/// `token_endpoint`. The `registration_endpoint` is checked where a client registers.
pub(crate) fn check_metadata(
    server: &str,
    metadata: &AuthorizationMetadata,
) -> Result<(), AuthFailure> {
    if let Some(issuer) = &metadata.issuer {
        check(server, "issuer", issuer)?;
    }
    check(server, "token_endpoint", &metadata.token_endpoint)
}

/// Check the authorization servers named by the protected resource metadata of the server at
/// `url` before discovery sends a request to any of them. The document read is the one the
/// challenge points at, else the well-known ones (RFC 9728 §3.1), and only on the server's own
/// origin, which mcpr talks to anyway. A document that cannot be read is left to discovery,
/// whose result is checked by [`check_metadata`].
pub(crate) async fn check_resource_metadata(
    server: &str,
    url: &str,
    challenge: Option<&str>,
) -> Result<(), AuthFailure> {
    let Ok(base) = reqwest::Url::parse(url) else {
        return Ok(());
    };
    for candidate in resource_metadata_urls(&base, challenge) {
        if let Some(named) = named_authorization_servers(&candidate).await {
            for entry in named {
                // Relative entries are read as discovery reads them.
                let absolute = match reqwest::Url::parse(&entry) {
                    Ok(parsed) => parsed.to_string(),
                    Err(_) => candidate.join(&entry).map(String::from).unwrap_or(entry),
                };
                check(server, "authorization_servers", &absolute)?;
            }
            return Ok(());
        }
    }
    Ok(())
}

/// Where the resource's metadata may be, on the resource's own origin.
fn resource_metadata_urls(base: &reqwest::Url, challenge: Option<&str>) -> Vec<reqwest::Url> {
    let pointed = challenge
        .and_then(|c| WWWAuthenticateParams::parse(c, base).resource_metadata_url)
        .filter(|pointer| pointer.origin() == base.origin());
    if let Some(pointer) = pointed {
        return vec![pointer];
    }
    let path = base.path().trim_end_matches('/');
    let mut paths = Vec::new();
    if !path.is_empty() {
        paths.push(format!("/.well-known/oauth-protected-resource{path}"));
    }
    paths.push("/.well-known/oauth-protected-resource".to_owned());
    paths
        .into_iter()
        .map(|path| {
            let mut candidate = base.clone();
            candidate.set_path(&path);
            candidate.set_query(None);
            candidate.set_fragment(None);
            candidate
        })
        .collect()
}

/// The `authorization_servers` (and the older singular `authorization_server`) of the
/// document at `url`; `None` when there is no such document.
async fn named_authorization_servers(url: &reqwest::Url) -> Option<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct ResourceMetadata {
        authorization_server: Option<String>,
        authorization_servers: Option<Vec<String>>,
    }
    let client = crate::net::shared_client().ok()?;
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(METADATA_TIMEOUT)
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = read_bounded(response).await?;
    let document: ResourceMetadata = serde_json::from_slice(&body).ok()?;
    let mut named: Vec<String> = document.authorization_server.into_iter().collect();
    named.extend(document.authorization_servers.unwrap_or_default());
    Some(
        named
            .into_iter()
            .map(|entry| entry.trim().to_owned())
            .filter(|entry| !entry.is_empty())
            .collect(),
    )
}

/// The body of `response`; `None` past [`MAX_METADATA_BYTES`] or on a read error.
async fn read_bounded(mut response: reqwest::Response) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_METADATA_BYTES {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_and_loopback_http_are_endpoints() {
        for allowed in [
            "https://as.example/token",
            "https://10.0.0.1/token",
            "http://127.0.0.1:8080/token",
            "http://127.9.9.9/t",
            "http://LOCALHOST:1/t",
            "http://[::1]:9/t",
        ] {
            assert!(secure_url(allowed).is_some(), "{allowed}");
        }
        for refused in [
            "http://as.example/token",
            "http://10.0.0.1/token",
            "http://192.0.2.2:9/token",
            "http://localhost.evil.example/t",
            "http://[fd00::2]/t",
            "ftp://as.example/t",
            "file:///etc/passwd",
            "token",
            "",
        ] {
            assert!(secure_url(refused).is_none(), "{refused}");
        }
    }

    #[test]
    fn a_refusal_names_the_field_the_url_and_the_rule() {
        let refused = check(
            "svc",
            "token_endpoint",
            "http://evil.example/token?k=secret",
        )
        .expect_err("plain http to another host");
        assert_eq!(
            refused.to_string(),
            "OAuth with `svc` refused: token_endpoint http://evil.example/token: \
             an OAuth endpoint must be https, or http on loopback"
        );
        assert_eq!(refused.server(), Some("svc"));
        assert!(!refused.needs_login());
        // Text that is no URL reaches the terminal without escape sequences, bounded.
        let hostile = format!("\u{1b}]0;owned\u{7}{}", "x".repeat(1000));
        let shown = check("svc", "issuer", &hostile).unwrap_err().to_string();
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(shown.len() < 400, "{shown}");
    }

    #[test]
    fn resource_metadata_is_read_on_the_resources_origin_only() {
        let base = reqwest::Url::parse("https://mcp.example/v1/mcp").unwrap();
        let same = r#"Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/v1/mcp""#;
        assert_eq!(
            resource_metadata_urls(&base, Some(same))
                .iter()
                .map(|u| u.as_str())
                .collect::<Vec<_>>(),
            ["https://mcp.example/.well-known/oauth-protected-resource/v1/mcp"]
        );
        let elsewhere = r#"Bearer resource_metadata="https://other.example/prm""#;
        assert_eq!(
            resource_metadata_urls(&base, Some(elsewhere))
                .iter()
                .map(|u| u.as_str())
                .collect::<Vec<_>>(),
            [
                "https://mcp.example/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource",
            ]
        );
    }
}
