//! OAuth 2.1 through the library (`mcp_runtime::auth` + `McpClient`), against `mcp-mock
//! --http --oauth`: a real authorization server and protected MCP server on loopback. The
//! person's part of a login is played by `Headless` (the mock approves by itself), so these
//! tests check what a host agent relies on: tokens stored and sent, refreshed ahead of expiry
//! and once after a 401 however many calls race, a dead refresh token turned into "log in
//! again", step-up on 403 `insufficient_scope`, and no browser ever awaited by a connection
//! that may not start one.

mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::auth::{self, AuthContext, AuthFailure, AuthStatus, CredentialStore, Headless};
use mcp_runtime::client::{ClientError, ConnectOptions, McpClient};
use mcp_runtime::config::{ServerConfig, server_from_json};
use serde_json::{Value, json};
use support::{HttpMock, echo, temp_dir};

/// Upper bound of any one test.
const TEST_BOUND: Duration = Duration::from_secs(90);

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

fn count(stats: &Value, path: &[&str]) -> u64 {
    let mut value = stats;
    for key in path {
        value = &value[key];
    }
    value
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {path:?} in {stats}"))
}

fn store(dir: &tempfile::TempDir) -> CredentialStore {
    CredentialStore::new(dir.path().join(auth::CREDENTIALS_FILE))
}

/// Log in headlessly (the mock approves at once).
async fn login(config: &ServerConfig, store: &CredentialStore) -> auth::LoginOutcome {
    let context = AuthContext::interactive(store.clone(), Arc::new(Headless));
    auth::login("svc", config, &context, &[])
        .await
        .expect("headless login")
}

/// A mock started with `--oauth` and `flags`, a store of this test, and a headless login.
struct LoggedIn {
    mock: HttpMock,
    _dir: tempfile::TempDir,
    store: CredentialStore,
    cfg: ServerConfig,
}

async fn logged_in(flags: &[&str]) -> LoggedIn {
    let mut all = vec!["--oauth"];
    all.extend_from_slice(flags);
    let mock = HttpMock::http(&all);
    let dir = temp_dir();
    let store = store(&dir);
    let cfg = config(&mock, None);
    login(&cfg, &store).await;
    LoggedIn {
        mock,
        _dir: dir,
        store,
        cfg,
    }
}

/// A connection that uses the stored login and never starts one.
async fn connected(setup: &LoggedIn) -> Arc<McpClient> {
    Arc::new(
        connect(
            &setup.cfg,
            AuthContext::non_interactive(setup.store.clone()),
        )
        .await
        .expect("connect with the stored login"),
    )
}

async fn connect(config: &ServerConfig, context: AuthContext) -> Result<McpClient, ClientError> {
    let options = ConnectOptions::default().with_auth(Some(context));
    McpClient::connect("svc", config, &options).await
}

#[tokio::test]
async fn a_server_that_needs_login_fails_at_once_without_a_person() {
    bounded(async {
        let mock = HttpMock::http(&["--oauth"]);
        let dir = temp_dir();
        let started = std::time::Instant::now();
        let err = connect(
            &config(&mock, None),
            AuthContext::non_interactive(store(&dir)),
        )
        .await
        .expect_err("no credential: the connection must fail");
        assert!(err.needs_login(), "{err}");
        let text = err.to_string();
        assert!(
            matches!(err.auth_failure(), Some(AuthFailure::LoginRequired { server }) if server == "svc"),
            "{text}"
        );
        assert!(text.contains("HTTP 401"), "{text}");
        // Nothing waited for a browser (the login timeout is minutes).
        assert!(started.elapsed() < Duration::from_secs(20));
        // A read-only look at a store never creates the file.
        assert!(!store(&dir).path().exists());
        assert_eq!(count(&stats(&mock).await, &["authorizations"]), 0);
    })
    .await;
}

#[tokio::test]
async fn a_login_is_stored_privately_and_used_by_later_connections() {
    bounded(async {
        let mock = HttpMock::http(&["--oauth"]);
        let dir = temp_dir();
        let store = store(&dir);
        let cfg = config(&mock, None);
        let outcome = login(&cfg, &store).await;
        assert!(outcome.refreshable);
        assert!(outcome.expires_at.is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "the credential store must be private");
        }
        assert!(matches!(
            auth::status(&cfg, &store),
            AuthStatus::LoggedIn {
                refreshable: true,
                ..
            }
        ));

        let client = connect(&cfg, AuthContext::non_interactive(store.clone()))
            .await
            .expect("connect with the stored token");
        assert_eq!(echo(&client, "hi").await.unwrap(), "hi");
        client.close().await;

        let stats = stats(&mock).await;
        assert_eq!(count(&stats, &["registrations"]), 1);
        assert_eq!(count(&stats, &["authorizations"]), 1);
        assert_eq!(count(&stats, &["token_requests", "authorization_code"]), 1);

        // The credential belongs to the URL, not the name: the same name pointing elsewhere
        // (a project config, say) gets no token.
        let other = HttpMock::http(&["--oauth"]);
        let err = connect(
            &config(&other, None),
            AuthContext::non_interactive(store.clone()),
        )
        .await
        .expect_err("another URL has no login");
        assert!(err.needs_login(), "{err}");

        assert!(auth::logout("svc", &cfg, &store).unwrap());
        assert_eq!(auth::status(&cfg, &store), AuthStatus::NotLoggedIn);
        assert!(!auth::logout("svc", &cfg, &store).unwrap());
    })
    .await;
}

#[tokio::test]
async fn racing_calls_share_one_refresh_ahead_of_expiry() {
    bounded(async {
        // The first token lives 2 s: from its second second on, the client refreshes it before
        // the server would refuse it (and, were the test slow enough for the server to refuse
        // it first, after the 401). The refreshed token lives an hour, so however slowly the
        // twenty calls run, they see one refresh.
        let setup = logged_in(&[
            "--oauth-token-ttl-ms",
            "2000",
            "--oauth-refreshed-token-ttl",
            "3600",
        ])
        .await;
        let mock = &setup.mock;
        let client = connected(&setup).await;
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let calls: Vec<_> = (0..20)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move { echo(&client, &format!("c{i}")).await })
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            assert_eq!(call.await.unwrap().unwrap(), format!("c{i}"));
        }
        let stats = stats(mock).await;
        assert_eq!(
            count(&stats, &["token_requests", "refresh_token"]),
            1,
            "twenty racing calls, one refresh: {stats}"
        );
        assert_eq!(
            count(&stats, &["authorizations"]),
            1,
            "no new login: {stats}"
        );
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn racing_calls_refused_with_401_share_one_refresh() {
    bounded(async {
        // The server does not say when its tokens expire (the first after 1.5 s, refreshed
        // ones after an hour, so that a slow run sees no second expiry): the client learns it
        // from the 401s of twenty calls at once, and must refresh once, not twenty times.
        let setup = logged_in(&[
            "--oauth-token-ttl-ms",
            "1500",
            "--oauth-hide-expiry",
            "--oauth-refreshed-token-ttl",
            "3600",
        ])
        .await;
        let mock = &setup.mock;
        let client = connected(&setup).await;
        tokio::time::sleep(Duration::from_millis(1700)).await;
        let calls: Vec<_> = (0..20)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move { echo(&client, &format!("r{i}")).await })
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            assert_eq!(call.await.unwrap().unwrap(), format!("r{i}"));
        }
        let stats = stats(mock).await;
        assert!(count(&stats, &["unauthorized"]) >= 1, "{stats}");
        assert_eq!(
            count(&stats, &["token_requests", "refresh_token"]),
            1,
            "one refresh after the 401s: {stats}"
        );
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_2026_07_28_call_refused_with_401_is_refreshed_and_sent_again() {
    bounded(async {
        // A stateless JSON server: calls take the HTTP client's direct road, which leaves a
        // 401 (the call never ran) to rmcp's road, which refreshes and sends it again.
        let setup = logged_in(&[
            "--era",
            "2026-07-28",
            "--json-response",
            "--oauth-token-ttl-ms",
            "1500",
            "--oauth-hide-expiry",
            "--oauth-refreshed-token-ttl",
            "3600",
        ])
        .await;
        let client = connected(&setup).await;
        assert_eq!(client.info().protocol_version, "2026-07-28");
        assert_eq!(echo(&client, "before").await.unwrap(), "before");
        tokio::time::sleep(Duration::from_millis(1700)).await;
        assert_eq!(echo(&client, "after").await.unwrap(), "after");
        let stats = stats(&setup.mock).await;
        assert!(count(&stats, &["unauthorized"]) >= 1, "{stats}");
        assert_eq!(
            count(&stats, &["token_requests", "refresh_token"]),
            1,
            "one refresh after the 401: {stats}"
        );
        client.close().await;
    })
    .await;
}

#[tokio::test]
async fn connections_sharing_the_store_survive_each_others_refresh() {
    bounded(async {
        // Two connections (two processes, say) hold the same rotating refresh token. When
        // both find the token expired at once, the slower refresh is refused (the token was
        // rotated); it must take the other's result instead of asking for a login. Refreshed
        // tokens live an hour: a slow run sees the first expiry only.
        let setup = logged_in(&[
            "--oauth-token-ttl-ms",
            "1500",
            "--oauth-hide-expiry",
            "--oauth-refreshed-token-ttl",
            "3600",
        ])
        .await;
        let (mock, store, cfg) = (&setup.mock, &setup.store, &setup.cfg);
        let first = connected(&setup).await;
        let second = connected(&setup).await;
        tokio::time::sleep(Duration::from_millis(1700)).await;
        for round in 0..3 {
            let (a, b) = tokio::join!(echo(&first, "a"), echo(&second, "b"));
            assert_eq!(a.unwrap(), "a", "round {round}");
            assert_eq!(b.unwrap(), "b", "round {round}");
        }
        assert!(matches!(
            auth::status(cfg, store),
            AuthStatus::LoggedIn { .. }
        ));
        assert_eq!(count(&stats(mock).await, &["authorizations"]), 1);
        first.close().await;
        second.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_dead_refresh_token_is_forgotten_and_asks_for_a_login() {
    bounded(async {
        let setup = logged_in(&["--oauth-token-ttl-ms", "1500", "--oauth-refresh-invalid"]).await;
        let (mock, store, cfg) = (&setup.mock, &setup.store, &setup.cfg);
        tokio::time::sleep(Duration::from_millis(1700)).await;
        let err = connect(cfg, AuthContext::non_interactive(store.clone()))
            .await
            .expect_err("the refresh token is dead");
        assert!(err.to_string().contains("login expired"), "{err}");
        assert!(err.needs_login(), "{err}");
        assert!(
            matches!(err.auth_failure(), Some(AuthFailure::Expired { server }) if server == "svc"),
            "{err}"
        );
        assert!(
            count(&stats(mock).await, &["token_requests", "refresh_token"]) >= 1,
            "a refresh was tried"
        );
        assert_eq!(
            auth::status(cfg, store),
            AuthStatus::NotLoggedIn,
            "invalid_grant removes the stale credential"
        );
    })
    .await;
}

#[tokio::test]
async fn insufficient_scope_steps_up_when_a_person_can_log_in() {
    bounded(async {
        let setup = logged_in(&["--oauth-call-scope", "mcp:admin"]).await;
        let (mock, store, cfg) = (&setup.mock, &setup.store, &setup.cfg);

        // Without a person: the call fails and says which scope to ask for.
        let client = connect(cfg, AuthContext::non_interactive(store.clone()))
            .await
            .expect("connect");
        let err = echo(&client, "x")
            .await
            .expect_err("the call needs mcp:admin");
        let text = err.to_string();
        assert!(text.contains("HTTP 403"), "{text}");
        assert!(text.contains("mcp:admin"), "{text}");
        let needed = err.auth_failure().and_then(AuthFailure::needed_scope);
        assert!(
            needed.is_some_and(|scope| scope.split(' ').any(|s| s == "mcp:admin")),
            "{text}"
        );
        client.close().await;

        // With one: a second login asks for the granted scopes plus mcp:admin, and the call
        // goes through.
        let client = connect(
            cfg,
            AuthContext::interactive(store.clone(), Arc::new(Headless)),
        )
        .await
        .expect("connect");
        assert_eq!(echo(&client, "up").await.unwrap(), "up");
        client.close().await;
        let stats = stats(mock).await;
        assert_eq!(count(&stats, &["authorizations"]), 2, "{stats}");
        assert!(count(&stats, &["insufficient_scope"]) >= 2, "{stats}");
        match auth::status(cfg, store) {
            AuthStatus::LoggedIn { .. } => {}
            other => panic!("expected a stored login, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn client_credentials_need_no_person() {
    bounded(async {
        let mock = HttpMock::http(&["--oauth", "--oauth-client", "machine:m-secret-42"]);
        let dir = temp_dir();
        let store = store(&dir);
        let cfg = config(
            &mock,
            Some(json!({
                "clientId": "machine",
                "clientSecret": "m-secret-42",
                "grantType": "client_credentials"
            })),
        );
        let client = connect(&cfg, AuthContext::non_interactive(store.clone()))
            .await
            .expect("client credentials are obtained on the first 401");
        assert_eq!(echo(&client, "m2m").await.unwrap(), "m2m");
        client.close().await;
        let stats = stats(&mock).await;
        assert_eq!(count(&stats, &["token_requests", "client_credentials"]), 1);
        assert_eq!(count(&stats, &["authorizations"]), 0);

        // A wrong secret is an error that names the server and never shows the secret.
        let bad = config(
            &mock,
            Some(json!({
                "clientId": "machine",
                "clientSecret": "wrong-secret-99",
                "grantType": "client_credentials"
            })),
        );
        let other_store = temp_dir();
        let err = connect(
            &bad,
            AuthContext::non_interactive(self::store(&other_store)),
        )
        .await
        .expect_err("wrong client secret");
        let text = err.to_string();
        assert!(text.contains("svc"), "{text}");
        assert!(!text.contains("wrong-secret-99"), "{text}");
    })
    .await;
}

#[tokio::test]
async fn a_login_to_a_server_without_oauth_says_so() {
    bounded(async {
        let mock = HttpMock::http(&[]);
        let dir = temp_dir();
        let context = AuthContext::interactive(store(&dir), Arc::new(Headless));
        let err = auth::login("svc", &config(&mock, None), &context, &[])
            .await
            .expect_err("nothing to log in to");
        assert!(err.to_string().contains("may not need a login"), "{err}");
        assert!(!err.needs_login());
    })
    .await;
}

#[tokio::test]
async fn a_refused_authorization_is_an_error_that_says_so() {
    bounded(async {
        let mock = HttpMock::http(&["--oauth", "--oauth-deny"]);
        let dir = temp_dir();
        let store = store(&dir);
        let cfg = config(&mock, None);
        let context = AuthContext::interactive(store.clone(), Arc::new(Headless));
        let err = auth::login("svc", &cfg, &context, &[])
            .await
            .expect_err("the authorization server refuses");
        assert!(err.to_string().contains("access_denied"), "{err}");
        assert_eq!(auth::status(&cfg, &store), AuthStatus::NotLoggedIn);
    })
    .await;
}

/// The server moves to another authorization server, at another origin (`localhost` where the
/// client knows `127.0.0.1`): the next 401 is followed by a login there, and nothing the first
/// one issued (client registration, refresh token) is presented to the second, nor refreshed
/// at the first.
#[tokio::test]
async fn an_authorization_server_migration_is_followed_without_carrying_credentials() {
    bounded(async {
        let setup = logged_in(&["--oauth-migrate-to", "localhost"]).await;
        let (mock, store, cfg) = (&setup.mock, &setup.store, &setup.cfg);
        let client = connect(
            cfg,
            AuthContext::interactive(store.clone(), Arc::new(Headless)),
        )
        .await
        .expect("connect");
        assert_eq!(echo(&client, "moved").await.unwrap(), "moved");
        client.close().await;
        let moved = stats(mock).await;
        assert_eq!(moved["migration"]["moved"], true, "{moved}");
        assert_eq!(
            count(&moved, &["migration", "foreign_credentials"]),
            0,
            "{moved}"
        );
        assert_eq!(
            count(&moved, &["migration", "second", "registrations"]),
            1,
            "{moved}"
        );
        assert_eq!(
            count(&moved, &["migration", "second", "authorizations"]),
            1,
            "{moved}"
        );
        assert_eq!(
            count(&moved, &["token_requests", "refresh_token"]),
            0,
            "{moved}"
        );

        // Later connections use the second server's credential without another login.
        let client = connect(cfg, AuthContext::non_interactive(store.clone()))
            .await
            .expect("connect with the new login");
        assert_eq!(echo(&client, "again").await.unwrap(), "again");
        client.close().await;
        let after = stats(mock).await;
        assert_eq!(
            count(&after, &["migration", "second", "authorizations"]),
            1,
            "{after}"
        );
    })
    .await;
}

/// With an authorization server that issues DPoP-bound tokens, the login binds its token to a
/// key of its own, and calls carry it with a proof.
#[tokio::test]
async fn dpop_bound_tokens_work_end_to_end() {
    bounded(async {
        let setup = logged_in(&["--oauth-dpop", "on"]).await;
        let before = count(&stats(&setup.mock).await, &["unauthorized"]);
        let client = connected(&setup).await;
        assert_eq!(echo(&client, "bound").await.unwrap(), "bound");
        // The bound token and its proofs were taken at the first try.
        let stats = stats(&setup.mock).await;
        assert_eq!(count(&stats, &["unauthorized"]), before, "{stats}");
        client.close().await;
    })
    .await;
}

/// A hostile token endpoint answers every proof with a new `use_dpop_nonce` challenge: the
/// login retries once with the nonce, then fails saying what the server said.
#[tokio::test]
async fn a_token_endpoint_asking_for_nonces_forever_is_answered_once() {
    bounded(async {
        let mock = HttpMock::http(&["--oauth", "--oauth-dpop", "token"]);
        let dir = temp_dir();
        let store = store(&dir);
        let cfg = config(&mock, None);
        let context = AuthContext::interactive(store.clone(), Arc::new(Headless));
        let err = auth::login("svc", &cfg, &context, &[])
            .await
            .expect_err("no token is ever issued");
        assert!(err.to_string().contains("use_dpop_nonce"), "{err}");
        let stats = stats(&mock).await;
        assert_eq!(count(&stats, &["dpop_nonce_challenges"]), 2, "{stats}");
        assert_eq!(
            count(&stats, &["token_requests", "authorization_code"]),
            2,
            "{stats}"
        );
    })
    .await;
}

/// A hostile server answers every DPoP request with a new `use_dpop_nonce` challenge: each
/// request retries once with the nonce (and once more after a refresh), then fails with the
/// server's 401 instead of looping.
#[tokio::test]
async fn a_server_asking_for_nonces_forever_is_answered_once_per_request() {
    bounded(async {
        let setup = logged_in(&["--oauth-dpop", "resource"]).await;
        let err = connect(
            &setup.cfg,
            AuthContext::non_interactive(setup.store.clone()),
        )
        .await
        .expect_err("every request is challenged");
        assert!(err.to_string().contains("401"), "{err}");
        let stats = stats(&setup.mock).await;
        let challenges = count(&stats, &["dpop_nonce_challenges"]);
        assert!((2..=4).contains(&challenges), "{stats}");
    })
    .await;
}

/// A login against `mcpr mock --oauth --oauth-iss MODE`: its error, if any, and the
/// authorization-code exchanges the mock saw.
async fn login_with_iss(mode: &str) -> (Result<auth::LoginOutcome, auth::AuthFailure>, u64) {
    let mock = HttpMock::http(&["--oauth", "--oauth-iss", mode]);
    let dir = temp_dir();
    let context = AuthContext::interactive(store(&dir), Arc::new(Headless));
    let outcome = auth::login("svc", &config(&mock, None), &context, &[]).await;
    let exchanges = count(
        &stats(&mock).await,
        &["token_requests", "authorization_code"],
    );
    (outcome, exchanges)
}

/// RFC 9207: an authorization server that says it names itself in authorization responses
/// must; a response from another issuer (a mix-up attack, here with a terminal escape
/// sequence in the name) or without one is refused before its code is exchanged, and the
/// error shows no control character.
#[tokio::test]
async fn authorization_responses_must_name_the_right_issuer() {
    bounded(async {
        let (outcome, exchanges) = login_with_iss("right").await;
        outcome.expect("the right issuer logs in");
        assert_eq!(exchanges, 1);
        for mode in ["wrong", "missing"] {
            let (outcome, exchanges) = login_with_iss(mode).await;
            let err = outcome.expect_err(mode).to_string();
            assert!(err.contains("`svc`"), "{mode}: {err}");
            assert!(err.contains("issuer"), "{mode}: {err}");
            assert!(!err.chars().any(char::is_control), "{mode}: {err:?}");
            assert_eq!(exchanges, 0, "{mode}: the code was exchanged");
        }
    })
    .await;
}

/// Workload identity federation: the workload's JWT is exchanged once for a token that the
/// server takes; a refused one is reported as the authorization server said (minus its
/// control characters), once, with no retry and no other grant tried.
#[tokio::test]
async fn a_workload_assertion_is_exchanged_once_and_a_refusal_reported() {
    bounded(async {
        let mock = HttpMock::http(&["--oauth", "--oauth-jwt-bearer", "workload-jwt"]);
        let login = |assertion: &str| auth::WorkloadLogin {
            client_id: "workload".into(),
            assertion: assertion.into(),
            scopes: Vec::new(),
        };
        let err = auth::workload_access_token("svc", &mock.url, &login("stolen-jwt"))
            .await
            .expect_err("another assertion is refused");
        let text = err.to_string();
        assert!(text.contains("`svc`"), "{text}");
        assert!(text.contains("invalid_grant"), "{text}");
        assert!(!text.chars().any(char::is_control), "{text:?}");
        let refused = stats(&mock).await;
        assert_eq!(
            count(&refused, &["token_requests", "jwt_bearer"]),
            1,
            "{refused}"
        );
        assert_eq!(count(&refused, &["authorizations"]), 0, "{refused}");

        let token = auth::workload_access_token("svc", &mock.url, &login("workload-jwt"))
            .await
            .expect("the workload's assertion");
        let entry =
            json!({"url": mock.url, "headers": {"Authorization": format!("Bearer {token}")}});
        let cfg = server_from_json("svc", &entry).expect("valid config");
        let client = McpClient::connect("svc", &cfg, &ConnectOptions::default())
            .await
            .expect("connect with the workload's token");
        assert_eq!(echo(&client, "w").await.unwrap(), "w");
        client.close().await;
    })
    .await;
}
