//! What a newcomer's first day trips over, each against real processes: `-H` values expand
//! `${VAR}` (checked by a loopback HTTP server that records what it was sent), arguments are
//! checked against the tool's schema before anything is sent, names are resolved with a
//! "did you mean", a call by agent-facing name starts only its own server, and one failed
//! server does not make a complete listing fail.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use support::*;

/// A loopback HTTP server that answers every request `401` with a bearer challenge and keeps
/// the `Authorization` header of each, until the test ends.
fn refusing_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if lower.starts_with("authorization:") {
                    let value = line["authorization:".len()..].trim().to_owned();
                    record.lock().unwrap().push(value);
                }
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n\
                  Content-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (url, seen)
}

#[test]
fn an_inline_header_expands_variables_from_the_environment() {
    let (url, seen) = refusing_server();
    let out = mcpr_command(&[
        "tools",
        "--url",
        &url,
        "-H",
        "Authorization: Bearer ${TOKEN}",
    ])
    .env("TOKEN", "s3cret-first-day")
    .stdin(std::process::Stdio::null())
    .output()
    .expect("run mcpr");
    let stderr = text(&out.stderr);
    let sent = seen.lock().unwrap().clone();
    assert!(
        sent.iter().any(|v| v == "Bearer s3cret-first-day"),
        "the server got {sent:?}; stderr: {stderr}"
    );
    assert!(!sent.iter().any(|v| v.contains("${")), "{sent:?}");
    // The refusal does not tell the user to do what they just did, nor show the token.
    assert!(!stderr.contains("give its token with -H"), "{stderr}");
    assert!(stderr.contains("check the token"), "{stderr}");
    assert!(!stderr.contains("s3cret-first-day"), "{stderr}");
}

#[test]
fn an_inline_header_with_an_unset_variable_is_refused_before_connecting() {
    let (url, seen) = refusing_server();
    let out = mcpr_command(&[
        "tools",
        "--url",
        &url,
        "-H",
        "Authorization: Bearer ${TOKEN}",
    ])
    .env_remove("TOKEN")
    .env("OTHER_SECRET", "never-shown")
    .stdin(std::process::Stdio::null())
    .output()
    .expect("run mcpr");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("-H `Authorization`") && stderr.contains("`TOKEN`"),
        "{stderr}"
    );
    assert!(!stderr.contains("never-shown"), "{stderr}");
    assert!(seen.lock().unwrap().is_empty(), "nothing may be sent");
}

/// A config of one working mock (`up`) and one that fails to start (`down`).
fn one_down(dir: &std::path::Path) -> String {
    let config = config_file(
        dir,
        &[("up", &[]), ("down", &["--fail-init", "no license"])],
    );
    config.to_str().expect("utf-8 path").to_owned()
}

#[test]
fn one_unreachable_server_does_not_fail_a_complete_listing() {
    let dir = temp_dir();
    let config = one_down(dir.path());
    for args in [
        &["tools"][..],
        &["tools", "--json"],
        &["tools", "--search", "echo"],
        &["status"],
        &["status", "--json"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--config", &config]);
        let out = mcpr(&all);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            stderr.contains("down") || stdout.contains("down"),
            "{args:?} must name the failed server: {stderr}"
        );
        if args == ["tools", "--json"] {
            let tools: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("JSON list");
            assert!(tools.iter().any(|t| t["name"] == "mcp_up_echo"), "{stdout}");
            let errors: serde_json::Value = serde_json::from_str(stderr.trim()).expect("JSON");
            assert!(
                errors["errors"]["down"]
                    .as_str()
                    .is_some_and(|e| e.contains("no license")),
                "{stderr}"
            );
        }
        all.push("--strict");
        let out = mcpr(&all);
        assert_eq!(out.status.code(), Some(3), "{args:?} --strict");
    }
}

#[test]
fn a_listing_where_no_server_answered_fails() {
    let dir = temp_dir();
    let config = config_file(dir.path(), &[("down", &["--fail-init", "no license"])]);
    let config = config.to_str().expect("utf-8 path");
    for args in [&["tools"][..], &["status"]] {
        let mut all = args.to_vec();
        all.extend(["--config", config]);
        assert_eq!(mcpr(&all).status.code(), Some(3), "{args:?}");
    }
}
