//! `GET /healthz` of `mcpr serve --http`, over real sockets:
//!
//! - `503` while start-up is in progress (a backend held before it starts), `200` once it is
//!   over; each backend's name, state and tool count, and nothing of its command, URL,
//!   headers or environment;
//! - no token needed (a load balancer's check often cannot send one), but without it a
//!   gateway that has a token shows the status only; the `Origin` and `Host` rules of `/mcp`
//!   hold (a web page cannot read it), a request without `Host` is answered.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::{MCPR, temp_dir};

/// Bound on any wait.
const BOUND: Duration = Duration::from_secs(60);

/// One HTTP/1.1 request to `127.0.0.1:port` (HTTP/1.0 without a `Host` when `host` is
/// `None`); the status and the body.
fn request(
    port: u16,
    method: &str,
    path: &str,
    host: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut text = match host {
        Some(host) => format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n"),
        None => format!("{method} {path} HTTP/1.0\r\n"),
    };
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
    support::http_exchange(port, &text)
}

/// `GET /healthz` with a loopback `Host` and `headers`: status and body as JSON.
fn health(port: u16, headers: &[(&str, &str)]) -> (u16, Value) {
    let (status, body) = request(port, "GET", "/healthz", Some("127.0.0.1"), headers);
    let body = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{body}: {e}"));
    (status, body)
}

/// Poll `/healthz` until it says 200; its body.
fn serving(port: u16, headers: &[(&str, &str)]) -> Value {
    let deadline = Instant::now() + BOUND;
    loop {
        let (status, body) = health(port, headers);
        if status == 200 {
            return body;
        }
        assert!(Instant::now() < deadline, "never healthy: {status} {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap()
}

#[test]
fn healthz_says_starting_then_serving_and_shows_backends_without_their_secrets() {
    let dir = temp_dir();
    // A backend held before it starts, until the test opens the pipe it waits on.
    let gate = dir.path().join("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .unwrap();
    assert!(made.success());
    let world = ServeWorld::with_servers(
        dir,
        json!({
            "held": {
                "command": "sh",
                "args": ["-c", "cat \"$0\" >/dev/null; exec \"$1\" mock", gate, MCPR],
                "env": {"API_TOKEN": "env-s3cret"},
            },
            "down": {
                "type": "http",
                "url": "http://127.0.0.1:1/mcp?key=query-s3cret",
                "headers": {"Authorization": "Bearer header-s3cret"},
            },
        }),
    );
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let port = port_of(&url);

    let (status, starting) = health(port, &[]);
    assert_eq!(status, 503, "{starting}");
    assert_eq!(starting["status"], "starting", "{starting}");

    // Let the held backend start.
    drop(std::fs::OpenOptions::new().write(true).open(&gate).unwrap());
    let body = serving(port, &[]);
    assert_eq!(body["status"], "serving", "{body}");
    let servers = body["servers"].as_array().expect("servers");
    let held = servers.iter().find(|s| s["name"] == "held").expect("held");
    assert_eq!(held["state"], "connected", "{body}");
    assert!(held["tools"].as_u64().unwrap_or(0) > 0, "{body}");
    let down = servers.iter().find(|s| s["name"] == "down").expect("down");
    assert_ne!(down["state"], "connected", "{body}");
    assert_eq!(down["tools"], 0, "{body}");
    let text = body.to_string();
    for secret in ["s3cret", "127.0.0.1:1", "mock", "sh", "gate"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[test]
fn healthz_needs_no_token_but_shows_backends_only_with_it_and_keeps_origin_and_host_rules() {
    let world = ServeWorld::with_servers(
        temp_dir(),
        json!({"m": {"command": MCPR, "args": ["mock"]}}),
    );
    let token_file = world.path("token");
    std::fs::write(&token_file, "t0ken\n").unwrap();
    let token_flag = token_file.to_string_lossy().into_owned();
    let (_gateway, url) = world.http_gateway(&["--token-file", &token_flag], &[]);
    let port = port_of(&url);
    let bearer = [("Authorization", "Bearer t0ken")];

    // With the token: the backends.
    let shown = serving(port, &bearer);
    assert_eq!(shown["servers"][0]["name"], "m", "{shown}");
    // Without it (or with a wrong one): the status only.
    for headers in [&[][..], &[("Authorization", "Bearer wrong")][..]] {
        let (status, bare) = health(port, headers);
        assert_eq!(status, 200, "{bare}");
        assert_eq!(bare, json!({"status": "serving"}));
    }
    // `/mcp` still wants the token.
    let (status, _) = request(port, "POST", "/mcp", Some("127.0.0.1"), &[]);
    assert_eq!(status, 401);

    // A web page cannot read it: a foreign Origin, or a Host that a rebound name gives.
    let own = format!("http://127.0.0.1:{port}");
    let (status, _) = request(
        port,
        "GET",
        "/healthz",
        Some("127.0.0.1"),
        &[("Origin", &own)],
    );
    assert_eq!(status, 200);
    let foreign = [("Origin", "http://evil.example")];
    let (status, body) = request(port, "GET", "/healthz", Some("127.0.0.1"), &foreign);
    assert_eq!(status, 403, "{body}");
    let rebound = format!("evil.example:{port}");
    let (status, body) = request(port, "GET", "/healthz", Some(&rebound), &bearer);
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("\"m\""), "{body}");
    let (status, _) = request(
        port,
        "GET",
        "/healthz",
        Some(&format!("localhost:{port}")),
        &[],
    );
    assert_eq!(status, 200);
    // A checker that sends no Host at all (HTTP/1.0, as HAProxy's plain check does).
    let (status, body) = request(port, "GET", "/healthz", None, &[]);
    assert_eq!(status, 200, "{body}");
    // Only GET (and HEAD).
    let (status, _) = request(port, "POST", "/healthz", Some("127.0.0.1"), &[]);
    assert_eq!(status, 405);
}
