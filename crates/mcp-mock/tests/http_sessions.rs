//! `mcp-mock --http`'s sessions behave as a correct server's: a request for a session that
//! has ended gets 404 (never 500), and `--expire-session-after` refuses new requests of an
//! expired session while still answering the ones it took before. Driven by hand over HTTP
//! (reqwest); loopback only, every test bounded in time.

#[path = "support/mod.rs"]
mod support;

use std::future::Future;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::HttpMock;

/// Upper bound of any one test.
const TEST_BOUND: Duration = Duration::from_secs(60);

async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(TEST_BOUND, test)
        .await
        .expect("test timed out")
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// POST `message` to the mock, in `session` if given.
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: &Value,
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(message.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("the mock answers")
}

/// A new session, initialised; its id.
async fn open_session(client: &reqwest::Client, url: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "sessions", "version": "0"}}});
    let response = post(client, url, None, &initialize).await;
    assert_eq!(response.status(), StatusCode::OK);
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let _ = response.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post(client, url, Some(&session), &initialized).await;
    assert!(response.status().is_success(), "{}", response.status());
    session
}

fn echo(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}})
}

#[tokio::test]
async fn an_expired_session_still_answers_the_calls_it_took() {
    bounded(async {
        let mock = HttpMock::http(&["--expire-session-after", "1", "--call-delay", "300"]);
        let client = client();
        let session = open_session(&client, &mock.url).await;
        // The first call is taken (its stream is open), and runs for a while ...
        let first = post(&client, &mock.url, Some(&session), &echo(1, "taken")).await;
        assert_eq!(first.status(), StatusCode::OK);
        // ... when the second finds the session expired.
        let second = post(&client, &mock.url, Some(&session), &echo(2, "refused")).await;
        assert_eq!(second.status(), StatusCode::NOT_FOUND);
        let answer = first.text().await.unwrap_or_default();
        assert!(
            answer.contains(r#""text":"taken""#),
            "the call taken before the session expired was not answered: {answer:?}"
        );
        // Once it has been, the session is ended: its requests keep getting 404.
        let third = post(&client, &mock.url, Some(&session), &echo(3, "late")).await;
        assert_eq!(third.status(), StatusCode::NOT_FOUND);
    })
    .await;
}

#[tokio::test]
async fn requests_racing_the_end_of_their_session_get_404_never_500() {
    bounded(async {
        let mock = HttpMock::http(&[]);
        let client = client();
        let mut statuses = Vec::new();
        for _round in 0..40 {
            let session = open_session(&client, &mock.url).await;
            // The session ends while requests naming it are on their way in.
            let calls = (0..16).map(|i| {
                let (client, url, session) = (client.clone(), mock.url.clone(), session.clone());
                tokio::spawn(async move {
                    let response = post(&client, &url, Some(&session), &echo(i, "x")).await;
                    let status = response.status();
                    let _ = response.text().await;
                    status
                })
            });
            let calls: Vec<_> = calls.collect();
            let deleted = client
                .delete(&mock.url)
                .header("mcp-session-id", &session)
                .send()
                .await
                .expect("DELETE answered");
            assert!(deleted.status().is_success(), "{}", deleted.status());
            for call in calls {
                statuses.push(call.await.unwrap());
            }
        }
        let unexpected: Vec<_> = statuses
            .iter()
            .filter(|status| **status != StatusCode::OK && **status != StatusCode::NOT_FOUND)
            .collect();
        assert!(unexpected.is_empty(), "{unexpected:?}");
        assert!(
            statuses.contains(&StatusCode::NOT_FOUND),
            "no request came after the end of its session"
        );
    })
    .await;
}
