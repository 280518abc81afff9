//! What mcpr says besides its answer, through the real binary against `mcpr mock` servers and
//! real config files of several AI tools in a home of each test's own: the problems of other
//! servers' configs shown once per change of the config and then counted, nothing of them with
//! `--quiet`, a broken TOML file reported once, server failures in a pipe without log lines,
//! timestamps or colour codes, and the shell's start-up on a real terminal: one line counting
//! the servers, then the prompt.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;
use support::pty::{Pty, screen_lines};
use support::{MCPR, temp_dir, text};

/// `mcpr ARGS` on pipes with `home` as its home.
fn mcpr_in(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, home);
    command
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env_remove("DOCS_TOKEN")
        .env_remove("MCPR_INPUT_KEY")
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR");
    command.stdin(Stdio::null()).output().expect("run mcpr")
}

/// A home where Claude Code runs a working mock and a server missing `DOCS_TOKEN`, VS Code a
/// server that needs an input, and Codex's config does not parse.
fn noisy_home() -> tempfile::TempDir {
    let home = temp_dir();
    let dir = home.path();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    let claude = json!({"mcpServers": {
        "ok": {"command": MCPR, "args": ["mock"]},
        "docs": {"type": "http", "url": "https://docs.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}", "X-Key": "sk-secret-4242"}},
    }});
    std::fs::write(dir.join(".claude.json"), claude.to_string()).unwrap();
    let vscode = dir.join(".config/Code/User");
    std::fs::create_dir_all(&vscode).unwrap();
    let inputs = json!({
        "inputs": [{"type": "promptString", "id": "key", "description": "API key", "password": true}],
        "servers": {"vs": {"command": "node", "args": ["x.js"], "env": {"KEY": "${input:key}"}}},
    });
    std::fs::write(vscode.join("mcp.json"), inputs.to_string()).unwrap();
    std::fs::create_dir_all(dir.join(".codex")).unwrap();
    std::fs::write(
        dir.join(".codex/config.toml"),
        "[mcp_servers.x]\ncommand = \"foo\"\nargs = [\n",
    )
    .unwrap();
    home
}

#[test]
fn other_servers_problems_are_shown_once_per_change_then_counted() {
    let home = noisy_home();
    let out = mcpr_in(home.path(), &["tools"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("DOCS_TOKEN").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("needs input `key`").count(), 1, "{stderr}");
    assert_eq!(
        stderr.matches("unclosed array").count(),
        1,
        "a broken file is reported once: {stderr}"
    );
    assert!(!stderr.contains("config problems"), "{stderr}");

    // The next command does not repeat them; one line counts them.
    let out = mcpr_in(home.path(), &["tools"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("DOCS_TOKEN"), "{stderr}");
    assert!(!stderr.contains("unclosed array"), "{stderr}");
    assert!(
        stderr.contains("note: 2 servers and 1 file have config problems: `mcpr servers --all`"),
        "{stderr}"
    );

    // `mcpr servers --all` is where they are all told, every time.
    let out = mcpr_in(home.path(), &["servers", "--all"]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("DOCS_TOKEN"), "{stderr}");

    // A change of Claude Code's config shows its problem again, and only it.
    let claude = home.path().join(".claude.json");
    let mut changed = std::fs::read_to_string(&claude).unwrap();
    changed.push('\n');
    std::fs::write(&claude, changed).unwrap();
    let out = mcpr_in(home.path(), &["tools"]);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("DOCS_TOKEN").count(), 1, "{stderr}");
    assert!(!stderr.contains("unclosed array"), "{stderr}");
    assert!(
        stderr.contains("1 server and 1 file have config problems"),
        "{stderr}"
    );

    // What is kept to know this holds no value of the configs.
    let state = home.path().join(".local/state/mcpr/shown_problems");
    let kept = std::fs::read_to_string(&state).expect("the record");
    for secret in ["sk-secret-4242", "DOCS_TOKEN", "docs"] {
        assert!(!kept.contains(secret), "{kept}");
    }
}

#[test]
fn quiet_says_nothing_of_other_servers() {
    let home = noisy_home();
    for args in [
        &["tools", "--quiet"][..],
        &["status", "-q"],
        &["call", "--quiet", "ok", "echo", "text=hi"],
    ] {
        let out = mcpr_in(home.path(), args);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
        assert!(!text(&out.stdout).is_empty(), "{args:?}");
    }
    // The problems of the servers it works on are still told.
    for args in [
        &["call", "--quiet", "docs", "search", "q=x"][..],
        &["tools", "--quiet", "docs"],
        &["resource", "docs"],
    ] {
        let out = mcpr_in(home.path(), args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr.contains("server `docs` cannot start") && stderr.contains("DOCS_TOKEN"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_failing_server_in_a_pipe_is_told_without_log_lines_timestamps_or_colour() {
    let home = temp_dir();
    std::fs::create_dir_all(home.path().join("project")).unwrap();
    let config = home.path().join("mcp.json");
    let servers = json!({"mcpServers": {
        "ok": {"command": MCPR, "args": ["mock"]},
        // Fails after the start-up gate (its handshake answers late, with a version no client
        // speaks), which the manager used to log as well. Not `--exit-after-init`: a tool list
        // can win the race with that exit, and then nothing fails.
        "late": {"command": MCPR, "args": ["mock", "--init-delay", "600", "--protocol-version", "1999-01-01"]},
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap();
    let out = mcpr_in(
        home.path(),
        &["tools", "--strict-config", "--config", config, "--wait"],
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error: server `late`"), "{stderr}");
    assert_eq!(
        stderr.matches("unsupported protocol version").count(),
        1,
        "one message for one failure: {stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "no colour codes: {stderr:?}");
    assert!(!stderr.contains("WARN"), "no log line: {stderr}");
    assert!(
        !stderr
            .lines()
            .any(|l| l.len() > 20 && l.as_bytes()[4] == b'-' && l.contains('T')),
        "no timestamps: {stderr}"
    );
}

#[test]
fn the_shell_starts_with_one_line_for_all_its_servers_then_the_prompt() {
    let home = temp_dir();
    std::fs::create_dir_all(home.path().join("project")).unwrap();
    let mut servers = serde_json::Map::new();
    for name in ["a", "b", "c", "d", "e"] {
        servers.insert(name.into(), json!({"command": MCPR, "args": ["mock"]}));
    }
    servers.insert(
        "broken".into(),
        json!({"command": MCPR, "args": ["mock", "--fail-init", "no such database"]}),
    );
    let config = home.path().join("mcp.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();
    let config = config.to_str().unwrap();

    let mut shell = Pty::start(
        home.path(),
        120,
        &["shell", "--strict-config", "--config", config],
    );
    let before = shell.wait_for("mcpr> ");
    shell.send("\x04");
    let (_, code) = shell.finish();
    assert_eq!(code, 0, "{before}");
    let lines: Vec<String> = screen_lines(&before)
        .into_iter()
        .filter(|line| !line.trim().is_empty())
        .collect();
    assert!(
        !before.contains("connected in"),
        "no line per server: {lines:#?}"
    );
    let summary = lines
        .iter()
        .find(|line| line.contains("servers connected"))
        .unwrap_or_else(|| panic!("a summary line: {lines:#?}"));
    assert!(
        summary.contains("5/6 servers connected, 50 tools"),
        "{summary}"
    );
    assert!(summary.contains("failed: broken"), "{summary}");
    // The summary, the greeting and the prompt.
    assert!(lines.len() <= 3, "{lines:#?}");
}
