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

/// A config of the mock `m` recording what it receives in `record`, and `down`, which fails
/// to start.
fn recorded(dir: &std::path::Path, record: &std::path::Path) -> String {
    let record = record.to_str().expect("utf-8 path");
    let config = config_file(
        dir,
        &[
            ("m", &["--record", record]),
            ("down", &["--fail-init", "no license"]),
        ],
    );
    config.to_str().expect("utf-8 path").to_owned()
}

/// Whether the mock was sent a `tools/call`.
fn called(record: &std::path::Path) -> bool {
    std::fs::read_to_string(record).is_ok_and(|r| r.contains("\"tools/call\""))
}

#[test]
fn arguments_are_checked_against_the_schema_before_anything_is_sent() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let config = recorded(dir.path(), &record);
    let file = dir.path().join("args.json");
    std::fs::write(&file, r#"{"a": "two", "b": 1}"#).unwrap();
    let at_file = format!("@{}", file.display());
    let cases: [(&[&str], &str, &str); 4] = [
        (&["a=2"], "", "`b` is required"),
        (&[r#"{"a": 2}"#], "", "`b` is required"),
        (&[at_file.as_str()], "", "`a`: "),
        (
            &["-"],
            r#"{"a": 1, "b": 2, "bb": 3}"#,
            "there is no parameter `bb`",
        ),
    ];
    for (words, stdin, expected) in cases {
        let mut args = vec!["call", "--config", &config, "m", "add"];
        args.extend(words);
        let mut child = mcpr_command(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run mcpr");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        let out = child.wait_with_output().expect("wait for mcpr");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{words:?}: {stderr}");
        assert!(stderr.contains(expected), "{words:?}: {stderr}");
        assert!(
            stderr.contains("the tool's parameters:") && stderr.contains("a  number, required"),
            "{words:?}: {stderr}"
        );
        assert!(!called(&record), "{words:?}: the call was sent");
    }
    let out = mcpr(&["call", "--config", &config, "m", "add", "a=2", "b=3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains('5'), "{}", text(&out.stdout));
    // --no-validate leaves the judgement to the server.
    let _ = std::fs::remove_file(&record);
    let out = mcpr(&[
        "call",
        "--config",
        &config,
        "--no-validate",
        "m",
        "add",
        "a=2",
    ]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(called(&record), "--no-validate must send the call");
}

#[test]
fn mistyped_names_get_a_suggestion_and_blame_no_unrelated_server() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let config = recorded(dir.path(), &record);
    let cases: [(&[&str], &str); 4] = [
        (&["m", "ecoh", "text=hi"], "did you mean `echo`?"),
        (&["mm", "echo"], "did you mean `m`?"),
        (&["mcp_m_ecoh", "text=hi"], "did you mean `mcp_m_echo`?"),
        (&["mcp_mm_echo", "text=hi"], "did you mean `mcp_m_echo`?"),
    ];
    for (words, expected) in cases {
        let mut args = vec!["call", "--config", &config];
        args.extend(words);
        let out = mcpr(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{words:?}: {stderr}");
        assert!(stderr.contains(expected), "{words:?}: {stderr}");
        assert!(
            !stderr.contains("failed") && !stderr.contains("no license"),
            "{words:?} blames `down`: {stderr}"
        );
        assert!(!called(&record), "{words:?}: the call was sent");
    }
}

/// A stdio server entry that notes each start in `DIR/NAME.started`, then runs the mock (or,
/// with `fail`, exits at once).
fn noted(dir: &std::path::Path, name: &str, fail: bool) -> serde_json::Value {
    let marker = dir.join(format!("{name}.started"));
    let then = if fail {
        "exit 1".to_owned()
    } else {
        format!("exec '{MCPR}' mock")
    };
    serde_json::json!({
        "command": "sh",
        "args": ["-c", format!("echo x >> '{}'; {then}", marker.display())],
    })
}

#[test]
fn a_call_by_agent_facing_name_starts_only_the_servers_it_can_belong_to() {
    let dir = temp_dir();
    let servers = serde_json::json!({
        "m": noted(dir.path(), "m", false),
        "m_x": noted(dir.path(), "m_x", false),
        "down": noted(dir.path(), "down", true),
    });
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let config = config.to_str().expect("utf-8 path");
    let started = |name: &str| dir.path().join(format!("{name}.started")).exists();
    let forget = || {
        for name in ["m", "m_x", "down"] {
            let _ = std::fs::remove_file(dir.path().join(format!("{name}.started")));
        }
    };
    // `mcp_m_x_echo` could be `m`'s tool `x_echo` or `m_x`'s `echo`. With nothing cached,
    // both are asked (the fallback); `down`, which cannot offer it, is never started.
    let out = mcpr(&["call", "--config", config, "mcp_m_x_echo", "text=hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hi");
    assert!(started("m") && started("m_x"), "the fallback asks both");
    assert!(!started("down"), "an unrelated server was started");
    // Now the cache knows both lists and decides: only `m_x` starts.
    forget();
    let out = mcpr(&["call", "--config", config, "mcp_m_x_echo", "text=again"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "again");
    assert!(started("m_x"), "the tool's own server runs the call");
    assert!(!started("m"), "the cache decided, yet `m` was started");
    assert!(!started("down"), "an unrelated server was started");
}

#[test]
fn a_schema_newer_than_the_cache_is_read_before_refusing() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    let greet = |properties: serde_json::Value| {
        serde_json::json!([{"name": "greet", "inputSchema": {
            "type": "object", "properties": properties, "additionalProperties": false}}])
        .to_string()
    };
    std::fs::write(
        &tools,
        greet(serde_json::json!({"name": {"type": "string"}})),
    )
    .unwrap();
    let tool_file = tools.to_str().expect("utf-8 path");
    let config = config_file(dir.path(), &[("m", &["--tool-file", tool_file])]);
    let config = config.to_str().expect("utf-8 path");
    let out = mcpr(&["call", "--config", config, "m", "greet", "name=x"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The server learns a parameter; the cache still has the old schema.
    let newer = serde_json::json!({"name": {"type": "string"}, "loud": {"type": "boolean"}});
    std::fs::write(&tools, greet(newer)).unwrap();
    let out = mcpr(&[
        "call",
        "--config",
        config,
        "m",
        "greet",
        "name=x",
        "loud=true",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("true"), "{}", text(&out.stdout));
}

#[test]
fn the_shell_checks_arguments_and_suggests_names_too() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let config = recorded(dir.path(), &record);
    let mut child = mcpr_command(&["shell", "--config", &config])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mcpr shell");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"mcp_m_add {\"a\": 2}\nmcp_m_ecoh {\"text\": \"hi\"}\n")
        .expect("write lines");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for the shell");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "failed lines → 1: {stderr}");
    assert!(stderr.contains("`b` is required"), "{stderr}");
    assert!(stderr.contains("a  number, required"), "{stderr}");
    assert!(stderr.contains("did you mean `mcp_m_echo`?"), "{stderr}");
    assert!(!called(&record), "the shell sent a call");
}
