//! Grants and tokens: client authentication, refresh rotation and refusal, expiry, client
//! credentials, the call scope, denial, pre-registered clients, and the flags `--oauth` needs.

use super::*;

/// The code exchange of a confidential client, its secret sent by HTTP Basic or in the body.
async fn exchange_confidential(
    server: &Server,
    id: &str,
    secret: &str,
    basic: bool,
) -> (StatusCode, Value) {
    let code = server.code(id, None).await;
    let mut pairs = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    if basic {
        return server.token(&pairs, Some((id, secret))).await;
    }
    pairs.extend([("client_id", id), ("client_secret", secret)]);
    server.token(&pairs, None).await
}

#[tokio::test]
async fn confidential_clients_authenticate_the_way_they_registered() {
    bounded(async {
        let server = Server::start(&[]);
        for (method, basic) in [("client_secret_basic", true), ("client_secret_post", false)] {
            let (status, client) = server
                .register(json!({
                    "redirect_uris": [REDIRECT],
                    "token_endpoint_auth_method": method,
                }))
                .await;
            assert_eq!(status, StatusCode::CREATED);
            assert_eq!(client["token_endpoint_auth_method"], method);
            let id = client["client_id"].as_str().unwrap();
            let secret = client["client_secret"].as_str().expect("a client_secret");

            // The other method, or a wrong secret: invalid_client.
            let (status, answer) = exchange_confidential(&server, id, secret, !basic).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method}, other method");
            assert_eq!(answer["error"], "invalid_client");
            let (status, answer) = exchange_confidential(&server, id, "nope", basic).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method}, wrong secret");
            assert_eq!(answer["error"], "invalid_client");
            let (status, tokens) = exchange_confidential(&server, id, secret, basic).await;
            assert_eq!(status, StatusCode::OK, "{method}: {tokens}");
            assert!(tokens["refresh_token"].is_string());
        }
    })
    .await;
}

#[tokio::test]
async fn refresh_tokens_rotate() {
    bounded(async {
        let server = Server::start(&[]);
        let client_id = server.register_public().await;
        let first = server.login(&client_id, None).await;
        let old_refresh = first["refresh_token"].as_str().unwrap();

        let (status, second) = server.refresh(&client_id, old_refresh).await;
        assert_eq!(status, StatusCode::OK, "{second}");
        let new_refresh = second["refresh_token"]
            .as_str()
            .expect("a rotated refresh token");
        assert_ne!(new_refresh, old_refresh);
        assert_ne!(access_token(&second), access_token(&first));
        assert_eq!(second["scope"], "mcp:tools");

        // The old refresh token died with its use; the new one works.
        let (status, answer) = server.refresh(&client_id, old_refresh).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"], "invalid_grant");
        let response = server
            .mcp(Some(access_token(&second)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let (status, _) = server.refresh(&client_id, new_refresh).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(server.stats().await["token_requests"]["refresh_token"], 3);
    })
    .await;
}

#[tokio::test]
async fn refresh_invalid_refuses_every_refresh() {
    bounded(async {
        let server = Server::start(&["--oauth-refresh-invalid"]);
        let client_id = server.register_public().await;
        let tokens = server.login(&client_id, None).await;
        let (status, answer) = server
            .refresh(&client_id, tokens["refresh_token"].as_str().unwrap())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"], "invalid_grant");
        assert!(answer["error_description"].is_string());
    })
    .await;
}

#[tokio::test]
async fn a_zero_ttl_issues_tokens_that_are_already_expired() {
    bounded(async {
        let server = Server::start(&["--oauth-token-ttl", "0"]);
        let client_id = server.register_public().await;
        let tokens = server.login(&client_id, None).await;
        assert_eq!(tokens["expires_in"], 0);
        let response = server
            .mcp(Some(access_token(&tokens)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(challenge_header(&response).ends_with(r#"error="invalid_token""#));
    })
    .await;
}

#[tokio::test]
async fn access_tokens_expire_after_the_ttl_and_a_refresh_brings_access_back() {
    bounded(async {
        // The first token lives 3.5 s, long enough to be used at once however slow the run;
        // the refreshed one an hour, so that it is still alive when it is tried.
        let server = Server::start(&[
            "--oauth-token-ttl-ms",
            "3500",
            "--oauth-refreshed-token-ttl",
            "3600",
        ]);
        let client_id = server.register_public().await;
        let tokens = server.login(&client_id, None).await;
        assert_eq!(tokens["expires_in"], 4, "rounded up to whole seconds");
        let response = server
            .mcp(Some(access_token(&tokens)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::OK);

        tokio::time::sleep(Duration::from_millis(3700)).await;
        let response = server
            .mcp(Some(access_token(&tokens)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            challenge_header(&response),
            format!(r#"{}, error="invalid_token""#, server.resource_challenge())
        );

        let (status, fresh) = server
            .refresh(&client_id, tokens["refresh_token"].as_str().unwrap())
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(fresh["expires_in"], 3600, "--oauth-refreshed-token-ttl");
        let response = server
            .mcp(Some(access_token(&fresh)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    })
    .await;
}

#[tokio::test]
async fn client_credentials_work_for_pre_registered_clients_only() {
    bounded(async {
        let server = Server::start(&["--oauth-client", "ci-bot:s3cret"]);
        let grant = [("grant_type", "client_credentials")];
        let (status, tokens) = server.token(&grant, Some(("ci-bot", "s3cret"))).await;
        assert_eq!(status, StatusCode::OK, "{tokens}");
        assert!(tokens.get("refresh_token").is_none(), "{tokens}");
        assert_eq!(tokens["scope"], "mcp:tools");
        let response = server
            .mcp(Some(access_token(&tokens)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::OK);

        // The secret may also come in the body.
        let (status, _) = server
            .token(
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", "ci-bot"),
                    ("client_secret", "s3cret"),
                ],
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK);

        let (status, answer) = server.token(&grant, Some(("ci-bot", "wrong"))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(answer["error"], "invalid_client");

        let public = server.register_public().await;
        let (status, answer) = server
            .token(
                &[("grant_type", "client_credentials"), ("client_id", &public)],
                None,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"], "unauthorized_client");
        assert_eq!(
            server.stats().await["token_requests"]["client_credentials"],
            4
        );
    })
    .await;
}

#[tokio::test]
async fn tools_call_needs_the_call_scope() {
    bounded(async {
        let server = Server::start(&["--oauth-call-scope", "mcp:admin"]);
        let client_id = server.register_public().await;
        let tokens = server.login(&client_id, None).await;
        assert_eq!(tokens["scope"], "mcp:tools");
        let token = access_token(&tokens);

        // Anything but tools/call is fine without the scope.
        let response = server.mcp(Some(token), None, &initialize()).await;
        assert_eq!(response.status(), StatusCode::OK);
        let call = json!({
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}},
        });
        let response = server.mcp(Some(token), None, &call).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            challenge_header(&response),
            format!(
                r#"Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
                server.origin
            )
        );
        assert_eq!(server.stats().await["insufficient_scope"], 1);

        // Step-up: authorize again for the scopes the challenge named.
        let tokens = server.login(&client_id, Some("mcp:tools mcp:admin")).await;
        assert_eq!(tokens["scope"], "mcp:tools mcp:admin");
        let token = access_token(&tokens);
        let response = server.mcp(Some(token), None, &initialize()).await;
        assert_eq!(response.status(), StatusCode::OK);
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session")
            .to_owned();
        let _ = response.text().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = server.mcp(Some(token), Some(&session), &initialized).await;
        assert!(response.status().is_success(), "{}", response.status());
        let response = server.mcp(Some(token), Some(&session), &call).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.text().await.unwrap();
        assert!(body.contains("\"hi\""), "{body}");
    })
    .await;
}

#[tokio::test]
async fn deny_redirects_back_with_access_denied() {
    bounded(async {
        let server = Server::start(&["--oauth-deny"]);
        let client_id = server.register_public().await;
        let challenge = challenge(VERIFIER);
        let response = server
            .authorize(&[
                ("response_type", "code"),
                ("client_id", &client_id),
                ("redirect_uri", REDIRECT),
                ("state", "xyz"),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ])
            .await;
        assert_eq!(response.status(), StatusCode::FOUND);
        let params = location_params(&response);
        assert_eq!(param(&params, "error"), Some("access_denied"));
        assert_eq!(param(&params, "state"), Some("xyz"));
        assert_eq!(param(&params, "code"), None);
    })
    .await;
}

#[tokio::test]
async fn without_registration_a_pre_registered_client_still_logs_in() {
    bounded(async {
        let server = Server::start(&["--oauth-no-registration", "--oauth-client", "app:pw"]);
        let metadata = server
            .get_json("/.well-known/oauth-authorization-server")
            .await;
        assert!(
            metadata.get("registration_endpoint").is_none(),
            "{metadata}"
        );
        let (status, _) = server.register(json!({"redirect_uris": [REDIRECT]})).await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        let code = server.code("app", Some("mcp:tools")).await;
        let (status, tokens) = server
            .token(
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", VERIFIER),
                ],
                Some(("app", "pw")),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{tokens}");
        let response = server
            .mcp(Some(access_token(&tokens)), None, &initialize())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(server.stats().await["registrations"], 0);
    })
    .await;
}

#[test]
fn oauth_needs_streamable_http_and_excludes_require_token() {
    for flags in [
        &["--oauth"][..],
        &["--sse", "127.0.0.1:0", "--oauth"],
        &["--http", "127.0.0.1:0", "--oauth", "--require-token", "t"],
        &["--http", "127.0.0.1:0", "--oauth-deny"],
        &["--http", "127.0.0.1:0", "--oauth", "--oauth-scopes", "a\"b"],
    ] {
        // A mock that wrongly starts would serve until killed: wait a bounded time only.
        let mut child = ChildGuard::spawn(
            std::process::Command::new(MOCK)
                .args(flags)
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.0.try_wait().expect("wait for the mock") {
                break status;
            }
            assert!(Instant::now() < deadline, "{flags:?} was accepted");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(!status.success(), "{flags:?} was accepted");
    }
}
