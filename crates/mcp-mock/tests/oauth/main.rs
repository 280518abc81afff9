//! `mcp-mock --http ADDR --oauth`: the mock as an OAuth 2.1 protected resource and its own
//! authorization server, driven by hand over HTTP (reqwest, no redirect following) the way an
//! MCP client would: discovery from the 401 challenge, registration, authorization with PKCE,
//! code exchange, bearer requests on `/mcp`, refresh, expiry, client credentials and step-up
//! scopes. Loopback only; every test is bounded in time.

mod grants;
#[path = "../support/mod.rs"]
mod support;

use std::future::Future;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use support::{ChildGuard, HttpMock};

/// The mock binary of this package.
const MOCK: &str = env!("CARGO_BIN_EXE_mcp-mock");
use url::Url;

/// Upper bound of any one test.
const TEST_BOUND: Duration = Duration::from_secs(60);

/// Upper bound of any one HTTP request of a test.
const REQUEST_BOUND: Duration = Duration::from_secs(15);

/// Where the (never running) client would receive the code.
const REDIRECT: &str = "http://127.0.0.1:7777/callback";

/// A PKCE verifier: 43 to 128 unreserved characters.
const VERIFIER: &str = "mcpr-test-verifier-0123456789-abcdefghijklmnopqrstuvwxyz";

async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(TEST_BOUND, test)
        .await
        .expect("test timed out")
}

/// The S256 challenge of `verifier`.
fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// An `application/x-www-form-urlencoded` body or query string.
fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// The query parameters of a redirect's `Location`.
fn location_params(response: &reqwest::Response) -> Vec<(String, String)> {
    let location = response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .expect("a Location header");
    assert!(location.starts_with(REDIRECT), "{location}");
    Url::parse(location)
        .expect("an absolute Location")
        .query_pairs()
        .into_owned()
        .collect()
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mock-oauth-test", "version": "0"},
        },
    })
}

fn challenge_header(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// `mcp-mock --http 127.0.0.1:0 --oauth FLAGS` and a client for it.
struct Server {
    _mock: HttpMock,
    /// `http://127.0.0.1:PORT`.
    origin: String,
    http: reqwest::Client,
}

impl Server {
    fn start(flags: &[&str]) -> Server {
        let mut all = vec!["--oauth"];
        all.extend_from_slice(flags);
        let mock = HttpMock::http(&all);
        let origin = mock
            .url
            .strip_suffix("/mcp")
            .expect("the mock serves /mcp")
            .to_owned();
        // reqwest needs a rustls provider even for http:// URLs.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // Each request bounded well inside the test's bound, so that a request that never gets
        // an answer fails naming its URL instead of timing the whole test out.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_BOUND)
            .build()
            .expect("an HTTP client");
        Server {
            _mock: mock,
            origin,
            http,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    async fn get_json(&self, path: &str) -> Value {
        let response = self.http.get(self.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.unwrap()
    }

    async fn stats(&self) -> Value {
        self.get_json("/__oauth/stats").await
    }

    async fn register(&self, metadata: Value) -> (StatusCode, Value) {
        let response = self
            .http
            .post(self.url("/register"))
            .json(&metadata)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Registers a public client (`none`) redirecting to [`REDIRECT`]; its client_id.
    async fn register_public(&self) -> String {
        let (status, client) = self
            .register(json!({
                "client_name": "test",
                "redirect_uris": [REDIRECT],
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "none",
            }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{client}");
        client["client_id"].as_str().unwrap().to_owned()
    }

    async fn authorize(&self, pairs: &[(&str, &str)]) -> reqwest::Response {
        let url = format!("{}?{}", self.url("/authorize"), form(pairs));
        self.http.get(url).send().await.unwrap()
    }

    /// A code for `client_id` (PKCE with [`VERIFIER`], resource = our `/mcp`).
    async fn code(&self, client_id: &str, scope: Option<&str>) -> String {
        let resource = self.url("/mcp");
        let challenge = challenge(VERIFIER);
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("state", "st4te"),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", resource.as_str()),
        ];
        if let Some(scope) = scope {
            pairs.push(("scope", scope));
        }
        let response = self.authorize(&pairs).await;
        assert_eq!(response.status(), StatusCode::FOUND);
        let params = location_params(&response);
        assert_eq!(param(&params, "state"), Some("st4te"));
        param(&params, "code").expect("a code").to_owned()
    }

    /// POST /token with `pairs`, authenticating with HTTP Basic if `basic` is given.
    async fn token(
        &self,
        pairs: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .post(self.url("/token"))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form(pairs));
        if let Some((id, secret)) = basic {
            request = request.basic_auth(id, Some(secret));
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    /// The code exchange of a public client.
    async fn exchange(&self, client_id: &str, code: &str) -> (StatusCode, Value) {
        let resource = self.url("/mcp");
        self.token(
            &[
                ("grant_type", "authorization_code"),
                ("client_id", client_id),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
                ("resource", &resource),
            ],
            None,
        )
        .await
    }

    /// Authorization and code exchange of a public client: the token answer.
    async fn login(&self, client_id: &str, scope: Option<&str>) -> Value {
        let code = self.code(client_id, scope).await;
        let (status, tokens) = self.exchange(client_id, &code).await;
        assert_eq!(status, StatusCode::OK, "{tokens}");
        tokens
    }

    async fn refresh(&self, client_id: &str, refresh_token: &str) -> (StatusCode, Value) {
        self.token(
            &[
                ("grant_type", "refresh_token"),
                ("client_id", client_id),
                ("refresh_token", refresh_token),
            ],
            None,
        )
        .await
    }

    /// POST a JSON-RPC message to `/mcp`.
    async fn mcp(
        &self,
        token: Option<&str>,
        session: Option<&str>,
        body: &Value,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(self.url("/mcp"))
            .header(ACCEPT, "application/json, text/event-stream")
            .json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send().await.unwrap()
    }

    /// `Bearer resource_metadata="…"`: the start of every challenge on `/mcp`.
    fn resource_challenge(&self) -> String {
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
            self.origin
        )
    }
}

fn access_token(tokens: &Value) -> &str {
    tokens["access_token"].as_str().expect("an access_token")
}

#[tokio::test]
async fn a_client_discovers_registers_authorizes_and_reaches_mcp() {
    bounded(async {
        let server = Server::start(&[]);

        // No token: 401 pointing at the resource metadata, with no error code.
        let response = server.mcp(None, None, &initialize()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(challenge_header(&response), server.resource_challenge());
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_token");

        let resource = server
            .get_json("/.well-known/oauth-protected-resource/mcp")
            .await;
        assert_eq!(resource["resource"], server.url("/mcp"));
        assert_eq!(resource["authorization_servers"], json!([server.origin]));
        assert_eq!(resource["scopes_supported"], json!(["mcp:tools"]));
        assert_eq!(resource["bearer_methods_supported"], json!(["header"]));

        let metadata = server
            .get_json("/.well-known/oauth-authorization-server")
            .await;
        assert_eq!(metadata["issuer"], server.origin);
        assert_eq!(metadata["authorization_endpoint"], server.url("/authorize"));
        assert_eq!(metadata["token_endpoint"], server.url("/token"));
        assert_eq!(metadata["registration_endpoint"], server.url("/register"));
        assert_eq!(metadata["response_types_supported"], json!(["code"]));
        assert_eq!(
            metadata["code_challenge_methods_supported"],
            json!(["S256"])
        );
        assert_eq!(
            metadata["grant_types_supported"],
            json!(["authorization_code", "refresh_token", "client_credentials"])
        );
        assert_eq!(
            metadata["token_endpoint_auth_methods_supported"],
            json!(["client_secret_basic", "client_secret_post", "none"])
        );
        assert_eq!(metadata["scopes_supported"], json!(["mcp:tools"]));

        // URLs follow the Host the client used.
        let port = server.origin.rsplit(':').next().unwrap();
        let by_name = server
            .http
            .get(format!(
                "http://localhost:{port}/.well-known/oauth-authorization-server"
            ))
            .header("host", format!("localhost:{port}"))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap();
        assert_eq!(by_name["issuer"], format!("http://localhost:{port}"));

        let (status, client) = server
            .register(json!({
                "client_name": "test",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
            }))
            .await;
        assert_eq!(status, StatusCode::CREATED);
        assert!(client.get("client_secret").is_none(), "{client}");
        assert_eq!(client["token_endpoint_auth_method"], "none");
        assert_eq!(client["redirect_uris"], json!([REDIRECT]));
        assert_eq!(client["client_name"], "test");
        assert!(client["client_id_issued_at"].is_u64());
        let client_id = client["client_id"].as_str().unwrap();

        let code = server.code(client_id, None).await;
        let (status, tokens) = server.exchange(client_id, &code).await;
        assert_eq!(status, StatusCode::OK, "{tokens}");
        assert_eq!(tokens["token_type"], "Bearer");
        assert_eq!(tokens["expires_in"], 3600);
        assert_eq!(tokens["scope"], "mcp:tools");
        assert!(access_token(&tokens).starts_with("mock-at-"));
        assert!(
            tokens["refresh_token"]
                .as_str()
                .unwrap()
                .starts_with("mock-rt-")
        );

        // A code is single-use.
        let (status, again) = server.exchange(client_id, &code).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(again["error"], "invalid_grant");

        let response = server
            .mcp(Some(access_token(&tokens)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().contains_key("mcp-session-id"));
        let body = response.text().await.unwrap();
        assert!(body.contains("serverInfo"), "{body}");

        // An unknown token: the challenge says invalid_token.
        let response = server.mcp(Some("mock-at-bogus"), None, &initialize()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            challenge_header(&response),
            format!(r#"{}, error="invalid_token""#, server.resource_challenge())
        );

        assert_eq!(
            server.stats().await,
            json!({
                "registrations": 1,
                "authorizations": 1,
                "token_requests": {
                    "authorization_code": 2,
                    "refresh_token": 0,
                    "client_credentials": 0,
                },
                "unauthorized": 2,
                "insufficient_scope": 0,
            })
        );
    })
    .await;
}

#[tokio::test]
async fn a_code_is_bound_to_its_verifier_redirect_uri_and_resource() {
    bounded(async {
        let server = Server::start(&[]);
        let client_id = server.register_public().await;
        let resource = server.url("/mcp");
        let wrong: [(&str, &str); 3] = [
            (
                "code_verifier",
                "another-verifier-0123456789-abcdefghijklmnopqrstuvwxyz",
            ),
            ("redirect_uri", "http://127.0.0.1:7777/elsewhere"),
            ("resource", "http://127.0.0.1:1/mcp"),
        ];
        for (name, value) in wrong {
            let code = server.code(&client_id, None).await;
            let mut pairs = vec![
                ("grant_type", "authorization_code"),
                ("client_id", client_id.as_str()),
                ("code", code.as_str()),
            ];
            for (n, v) in [
                ("code_verifier", VERIFIER),
                ("redirect_uri", REDIRECT),
                ("resource", resource.as_str()),
            ] {
                pairs.push((n, if n == name { value } else { v }));
            }
            let (status, answer) = server.token(&pairs, None).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "wrong {name}");
            assert_eq!(answer["error"], "invalid_grant", "wrong {name}");
        }

        let (status, answer) = server
            .token(
                &[("grant_type", "password"), ("client_id", &client_id)],
                None,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"], "unsupported_grant_type");
    })
    .await;
}

#[tokio::test]
async fn bad_authorization_requests_are_refused_without_a_redirect() {
    bounded(async {
        let server = Server::start(&[]);
        let (status, answer) = server
            .register(json!({"redirect_uris": ["https://example.com/callback"]}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"], "invalid_redirect_uri");

        let client_id = server.register_public().await;
        let challenge = challenge(VERIFIER);
        let good = [
            ("response_type", "code"),
            ("client_id", client_id.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ];
        let with = |name: &'static str, value: Option<&'static str>| {
            let mut pairs: Vec<(&str, &str)> =
                good.iter().copied().filter(|(n, _)| *n != name).collect();
            if let Some(value) = value {
                pairs.push((name, value));
            }
            pairs
        };
        let cases = [
            ("unknown client", with("client_id", Some("nobody"))),
            (
                "non-loopback redirect",
                with("redirect_uri", Some("http://example.com/callback")),
            ),
            (
                "unregistered redirect",
                with("redirect_uri", Some("http://127.0.0.1:7777/other")),
            ),
            ("no PKCE", with("code_challenge", None)),
            ("plain PKCE", with("code_challenge_method", Some("plain"))),
            ("no PKCE method", with("code_challenge_method", None)),
        ];
        for (case, pairs) in cases {
            let response = server.authorize(&pairs).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{case}");
            assert!(response.headers().get(LOCATION).is_none(), "{case}");
        }
        // The same request with everything right is approved.
        let response = server.authorize(&good).await;
        assert_eq!(response.status(), StatusCode::FOUND);
        assert!(param(&location_params(&response), "code").is_some());
    })
    .await;
}
