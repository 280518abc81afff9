//! OAuth requests go to https endpoints, or http ones on loopback, and nowhere else: each test
//! is an attack by metadata that names a plain-http endpoint on another host, against `mcp-mock
//! --http --oauth` (a real authorization server on loopback, its metadata bent by
//! `--oauth-endpoint` and `--oauth-authorization-server`).
//!
//! The hostile URLs point at an [`Eavesdropper`]: a listener on this machine's non-loopback
//! address, standing in for whoever reads plain http on the way. Every test asserts that it
//! heard nothing (no code, PKCE verifier, refresh token, client secret, assertion or client
//! registration), that the mock saw no registration or authorization, and that the error
//! names the field, the URL and the rule.

mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::auth::{self, AuthContext, AuthFailure, CredentialStore, Headless};
use mcp_runtime::client::{ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use serde_json::{Value, json};
use support::{Eavesdropper, HttpMock, temp_dir};

/// Upper bound of any one test.
const TEST_BOUND: Duration = Duration::from_secs(120);

/// What every refusal says.
const RULE: &str = "an OAuth endpoint must be https, or http on loopback";

async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(TEST_BOUND, test)
        .await
        .expect("test timed out")
}

/// A config for the mock named `svc`, with an optional `oauth` block.
fn config(mock: &HttpMock, oauth: Option<Value>) -> ServerConfig {
    mock.oauth_config(oauth)
}

/// The mock's OAuth counters.
async fn stats(mock: &HttpMock) -> Value {
    mock.oauth_stats().await
}

/// `failure` is the refusal of `url` as `field`, for `svc`.
fn assert_refused(failure: &AuthFailure, field: &str, url: &str) {
    let text = failure.to_string();
    assert!(
        matches!(failure, AuthFailure::InsecureEndpoint { server, field: f, .. }
            if server == "svc" && f == field),
        "{field}: {text}"
    );
    assert!(
        text.contains(&format!("{field} {url}: {RULE}")),
        "{field}: {text}"
    );
}

/// Nothing reached the eavesdropper, and the mock registered and authorized no one.
async fn assert_nothing_sent(eve: &Eavesdropper, mock: &HttpMock, what: &str) {
    assert_eq!(
        eve.heard(),
        Vec::<String>::new(),
        "{what}: sent in the clear"
    );
    let stats = stats(mock).await;
    assert_eq!(stats["registrations"], 0, "{what}: {stats}");
    assert_eq!(stats["authorizations"], 0, "{what}: {stats}");
}

/// Metadata that names a plain-http `token_endpoint`, `registration_endpoint`, `issuer`, or a
/// plain-http authorization server in the resource's `authorization_servers`, with and
/// without DPoP: the login fails before it registers or sends anyone to authorize, so no
/// code, verifier or registration is ever sent.
#[tokio::test]
async fn a_login_sends_nothing_to_a_plain_http_endpoint() {
    bounded(async {
        let cases: [(&str, &str, &[&str]); 5] = [
            ("token_endpoint", "/token", &[]),
            ("token_endpoint", "/token", &["--oauth-dpop", "on"]),
            ("registration_endpoint", "/register", &[]),
            ("issuer", "/", &[]),
            ("authorization_servers", "/", &[]),
        ];
        for (field, path, extra) in cases {
            let eve = Eavesdropper::start();
            let hostile = eve.url(path);
            let mut flags = vec!["--oauth".to_owned()];
            flags.extend(extra.iter().map(|f| f.to_string()));
            if field == "authorization_servers" {
                flags.extend(["--oauth-authorization-server".to_owned(), hostile.clone()]);
            } else {
                flags.extend(["--oauth-endpoint".to_owned(), format!("{field}={hostile}")]);
            }
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            let mock = HttpMock::http(&flags);
            let dir = temp_dir();
            let store = CredentialStore::new(dir.path().join(auth::CREDENTIALS_FILE));
            let context = AuthContext::interactive(store, Arc::new(Headless));
            let outcome = auth::login("svc", &config(&mock, None), &context, &[]).await;
            assert_nothing_sent(&eve, &mock, &format!("{field} {extra:?}")).await;
            assert_refused(&outcome.expect_err(field), field, &hostile);
        }
    })
    .await;
}

/// A configured `oauth.authServerMetadataUrl` on plain http to another host is refused
/// before it is fetched.
#[tokio::test]
async fn a_configured_metadata_url_must_be_https() {
    bounded(async {
        let eve = Eavesdropper::start();
        let hostile = eve.url("/.well-known/oauth-authorization-server");
        let mock = HttpMock::http(&["--oauth"]);
        let dir = temp_dir();
        let store = CredentialStore::new(dir.path().join(auth::CREDENTIALS_FILE));
        let cfg = config(&mock, Some(json!({"authServerMetadataUrl": hostile})));
        let context = AuthContext::interactive(store, Arc::new(Headless));
        let outcome = auth::login("svc", &cfg, &context, &[]).await;
        assert_nothing_sent(&eve, &mock, "authServerMetadataUrl").await;
        let failure = outcome.expect_err("a plain-http metadata URL");
        assert_refused(&failure, "oauth.authServerMetadataUrl", &hostile);
    })
    .await;
}

/// The client-credentials grant sends its client secret to no plain-http token endpoint.
#[tokio::test]
async fn a_client_secret_is_not_sent_to_a_plain_http_token_endpoint() {
    bounded(async {
        let eve = Eavesdropper::start();
        let hostile = eve.url("/token");
        let endpoint = format!("token_endpoint={hostile}");
        let mock = HttpMock::http(&[
            "--oauth",
            "--oauth-client",
            "ci:cs-secret-123",
            "--oauth-endpoint",
            &endpoint,
        ]);
        let dir = temp_dir();
        let store = CredentialStore::new(dir.path().join(auth::CREDENTIALS_FILE));
        let cfg = config(
            &mock,
            Some(json!({
                "clientId": "ci",
                "clientSecret": "cs-secret-123",
                "grantType": "client_credentials"
            })),
        );
        let outcome = auth::login("svc", &cfg, &AuthContext::non_interactive(store), &[]).await;
        assert_nothing_sent(&eve, &mock, "client_credentials").await;
        let failure = outcome.expect_err("a plain-http token endpoint");
        assert_refused(&failure, "token_endpoint", &hostile);
        let stats = stats(&mock).await;
        assert_eq!(stats["token_requests"]["client_credentials"], 0, "{stats}");
    })
    .await;
}

/// A workload's assertion is sent to no plain-http token endpoint.
#[tokio::test]
async fn a_workload_assertion_is_not_sent_to_a_plain_http_token_endpoint() {
    bounded(async {
        let eve = Eavesdropper::start();
        let hostile = eve.url("/token");
        let endpoint = format!("token_endpoint={hostile}");
        let mock = HttpMock::http(&[
            "--oauth",
            "--oauth-jwt-bearer",
            "workload-jwt",
            "--oauth-endpoint",
            &endpoint,
        ]);
        let login = auth::WorkloadLogin {
            client_id: "workload".into(),
            assertion: "workload-jwt".into(),
            scopes: Vec::new(),
        };
        let outcome = auth::workload_access_token("svc", &mock.url, &login).await;
        assert_nothing_sent(&eve, &mock, "workload").await;
        let failure = outcome.expect_err("a plain-http token endpoint");
        assert_refused(&failure, "token_endpoint", &hostile);
    })
    .await;
}

/// A stored credential whose authorization server metadata names a plain-http token endpoint
/// (as a login before this rule could have stored): its refresh token is never sent there;
/// the connection fails naming the endpoint.
#[tokio::test]
async fn a_refresh_token_is_not_sent_to_a_plain_http_token_endpoint() {
    bounded(async {
        // Tokens that are expired when issued: the first connection must refresh.
        let mock = HttpMock::http(&["--oauth", "--oauth-token-ttl", "0"]);
        let dir = temp_dir();
        let store = CredentialStore::new(dir.path().join(auth::CREDENTIALS_FILE));
        let cfg = config(&mock, None);
        let context = AuthContext::interactive(store.clone(), Arc::new(Headless));
        auth::login("svc", &cfg, &context, &[])
            .await
            .expect("headless login");

        let eve = Eavesdropper::start();
        let hostile = eve.url("/token");
        let db = rusqlite::Connection::open(store.path()).expect("open the store");
        let changed = db
            .execute(
                "UPDATE credentials SET record = json_set(record, '$.metadata.token_endpoint', ?1)",
                [&hostile],
            )
            .expect("rewrite the stored metadata");
        assert_eq!(changed, 1);
        drop(db);

        let options =
            ConnectOptions::default().with_auth(Some(AuthContext::non_interactive(store)));
        let outcome = McpClient::connect("svc", &cfg, &options).await;
        assert_eq!(eve.heard(), Vec::<String>::new(), "sent in the clear");
        let stats = stats(&mock).await;
        assert_eq!(stats["token_requests"]["refresh_token"], 0, "{stats}");
        let err = outcome.expect_err("the refresh is refused");
        let failure = err.auth_failure().expect("an authorization failure");
        assert_refused(failure, "token_endpoint", &hostile);
    })
    .await;
}
