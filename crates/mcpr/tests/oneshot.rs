//! One-shot commands (`call`, `tools`, `status`) print what they have and then stop their
//! servers within a short, bounded grace, leaving no process behind: not a server that
//! ignores SIGTERM, not its grandchild, not a server still booting. A call that names its
//! server and tool goes straight to the call once the tool cache knows the tool's schema.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{MCPR, read_pid, temp_dir, wait_dead};

/// Bound on a process's death after the command that owned it exited.
const GONE: Duration = Duration::from_secs(10);

/// `mcpr ARGS` in a home of its own under `dir` (its tool cache included).
fn mcpr(dir: &Path, args: &[&str]) -> Output {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join("project")).unwrap();
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, &home);
    command.stdin(Stdio::null()).output().expect("run mcpr")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Write `dir/mcp.json` with these servers (name → JSON definition).
fn config(dir: &Path, servers: Value) -> String {
    let path = dir.join("mcp.json");
    let text = serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap();
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[test]
fn call_by_server_and_tool_goes_straight_to_the_call() {
    let dir = temp_dir();
    let record = path(dir.path(), "m.record");
    let config = config(
        dir.path(),
        json!({"m": {"command": MCPR, "args": ["mock", "--record", record]}}),
    );
    let call = |words: &[&str]| {
        let mut args = vec!["--strict-config", "--config", &config, "call"];
        args.extend(words);
        let _ = std::fs::remove_file(&record);
        let out = mcpr(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "hi\n");
        let received = std::fs::read_to_string(&record).unwrap();
        assert!(received.contains("tools/call"), "{received}");
        received
    };
    // The first call lists the tools once, for the schema its arguments are checked against
    // (and caches it); later calls, and calls told not to check, go straight to the call.
    call(&["m", "echo", r#"{"text": "hi"}"#]);
    for words in [
        &["m", "echo", r#"{"text": "hi"}"#][..],
        &["--no-validate", "m", "echo", "text=hi"],
    ] {
        let received = call(words);
        assert!(
            !received.contains("tools/list"),
            "a call by server and tool listed tools:\n{received}"
        );
    }

    // An unknown tool: exit 2, naming the server.
    let out = mcpr(
        dir.path(),
        &[
            "--strict-config",
            "--config",
            &config,
            "call",
            "m",
            "no_such_tool",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no_such_tool") && stderr.contains("server `m`"),
        "{stderr}"
    );
}

#[test]
fn one_shot_commands_leave_no_process_when_a_server_lingers() {
    let dir = temp_dir();
    let (pid_file, grandchild) = (path(dir.path(), "m.pid"), path(dir.path(), "gc.pid"));
    // The mock's grandchild (`sleep`, same group) outlives the mock's own exit at stdin EOF,
    // and the mock ignores SIGTERM: only the group-wide escalation stops both.
    let config = config(
        dir.path(),
        json!({"m": {"command": MCPR, "args": [
            "mock", "--pid-file", pid_file, "--grandchild", grandchild, "--ignore-sigterm"
        ]}}),
    );
    let runs: [&[&str]; 4] = [
        &["call", "m", "echo", r#"{"text": "hi"}"#],
        &["call", "mcp_m_echo", r#"{"text": "hi"}"#],
        &["tools"],
        &["status"],
    ];
    for run in runs {
        let _ = std::fs::remove_file(&pid_file);
        let _ = std::fs::remove_file(&grandchild);
        let mut args = vec!["--strict-config", "--config", &config];
        args.extend(run);
        let out = mcpr(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{run:?}: {}", text(&out.stderr));
        assert!(!out.stdout.is_empty(), "{run:?} printed nothing");
        let (server, child) = (read_pid(&pid_file), read_pid(&grandchild));
        assert!(wait_dead(server, GONE), "{run:?}: the server survived");
        assert!(wait_dead(child, GONE), "{run:?}: its grandchild survived");
    }
}

#[test]
fn tools_at_the_gate_stops_a_server_still_booting() {
    let dir = temp_dir();
    let pid_file = path(dir.path(), "slow.pid");
    let hang = path(dir.path(), "hang");
    // Connects normally (and its tools are cached) until `hang` exists; then it never answers
    // `initialize`, so the next run offers its cached tools at the gate.
    let script = format!(
        "echo $$ > '{pid}'; if [ -e '{hang}' ]; then exec '{MCPR}' mock --hang-init; \
         else exec '{MCPR}' mock --tools 1; fi",
        pid = pid_file.display(),
        hang = hang.display(),
    );
    let config = config(
        dir.path(),
        json!({
            "fast": {"command": MCPR, "args": ["mock"]},
            "slow": {"command": "sh", "args": ["-c", script], "startup_timeout_ms": 120000}
        }),
    );
    let args = ["--strict-config", "--config", &config, "tools"];
    let out = mcpr(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("mcp_slow_tool_0"));

    std::fs::write(&hang, "").unwrap();
    let out = mcpr(dir.path(), &args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("slow (") && stdout.contains("cached: still connecting"),
        "{stdout}"
    );
    assert!(stdout.contains("mcp_fast_echo"), "{stdout}");
    let booting = read_pid(&pid_file);
    assert!(wait_dead(booting, GONE), "the booting server survived");
}
