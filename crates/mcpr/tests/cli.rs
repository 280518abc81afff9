//! The `mcpr` command line as a user runs it: `demo`, `tools`, `call`, exit codes and signals.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{MCPR, config_file, mcpr, mcpr_command, read_pid, temp_dir, text, wait_dead};

#[test]
fn demo_runs_the_whole_lifecycle_and_leaves_no_process() {
    let out = mcpr(&["demo"]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "demo failed:\n{stdout}\n{stderr}");
    assert!(
        stderr.contains("fast") && stderr.contains("connected in"),
        "{stderr}"
    );
    assert!(
        stderr.contains("slow") && stderr.contains("broken  failed"),
        "{stderr}"
    );
    assert!(stdout.contains("\"hello from mcpr\""), "{stdout}");
    assert!(
        stdout.contains("cannot open database"),
        "stderr tail shown: {stdout}"
    );
    assert!(stdout.contains("no child process left"), "{stdout}");
}

#[test]
fn tools_lists_every_server_as_text_and_json() {
    let dir = temp_dir();
    let config = config_file(dir.path(), &[("alpha", &["--tools", "2"]), ("beta", &[])]);
    let config = config.to_str().unwrap();

    let out = mcpr(&["tools", "--config", config]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("alpha (") && stdout.contains("beta ("),
        "{stdout}"
    );
    assert!(stdout.contains("tool_1"));

    let out = mcpr(&["tools", "--config", config, "--json"]);
    assert!(out.status.success());
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(
        tools
            .iter()
            .any(|t| t["server"] == "beta" && t["tool"] == "echo" && t["name"] == "mcp_beta_echo")
    );
    assert!(tools.iter().all(|t| t["inputSchema"].is_object()));
}

#[test]
fn call_prints_the_result_and_uses_exit_codes() {
    let dir = temp_dir();
    let config = config_file(
        dir.path(),
        &[("m", &[]), ("dead", &["--fail-init", "no license"])],
    );
    let config = config.to_str().unwrap();

    let out = mcpr(&[
        "call",
        "--config",
        config,
        "m",
        "echo",
        r#"{"text": "hi there"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hi there");

    let out = mcpr(&[
        "call",
        "--config",
        config,
        "m",
        "add",
        r#"{"a": 2, "b": 3}"#,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["structuredContent"]["sum"], 5);

    let out = mcpr(&["call", "--config", config, "m", "fail"]);
    assert_eq!(out.status.code(), Some(1), "isError → 1");

    let out = mcpr(&["call", "--config", config, "m", "echo", "{not json"]);
    assert_eq!(out.status.code(), Some(2), "bad arguments → 2");
    assert!(text(&out.stderr).contains("not valid JSON"));

    let out = mcpr(&["call", "--config", config, "nobody", "echo"]);
    assert_eq!(out.status.code(), Some(2), "unknown server → 2");
    assert!(
        text(&out.stderr).contains("configured: dead, m")
            || text(&out.stderr).contains("configured: m, dead")
    );

    let out = mcpr(&["call", "--config", config, "dead", "echo"]);
    assert_eq!(out.status.code(), Some(3), "connection failure → 3");
    assert!(
        text(&out.stderr).contains("no license"),
        "stderr tail in the error"
    );

    let out = mcpr(&["call", "--config", "/nonexistent/mcp.json", "m", "echo"]);
    assert_eq!(out.status.code(), Some(2), "unreadable config → 2");
}

#[test]
fn call_reads_arguments_from_a_file_and_from_stdin() {
    let dir = temp_dir();
    let config = config_file(dir.path(), &[("m", &[])]);
    let config = config.to_str().unwrap();
    let args_file = dir.path().join("args.json");
    std::fs::write(&args_file, r#"{"text": "from a file"}"#).unwrap();

    let out = mcpr(&[
        "call",
        "--config",
        config,
        "m",
        "echo",
        &format!("@{}", args_file.display()),
    ]);
    assert_eq!(text(&out.stdout).trim(), "from a file");

    let mut child = mcpr_command(&["call", "--config", config, "m", "echo", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"text": "from stdin"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout).trim(), "from stdin");
}

#[test]
fn a_malformed_config_names_file_line_and_column() {
    let dir = temp_dir();
    let path = dir.path().join("broken.json");
    std::fs::write(
        &path,
        "{\n  \"mcpServers\": {\n    \"a\" {\"command\": \"x\"}\n  }\n}\n",
    )
    .unwrap();
    let out = mcpr(&["tools", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3:", path.display())),
        "{stderr}"
    );
}

#[test]
fn an_invalid_server_is_reported_and_the_others_still_work() {
    let dir = temp_dir();
    let path = dir.path().join("mcp.json");
    let config = json!({"mcpServers": {
        "good": {"command": MCPR, "args": ["mock"]},
        "bad": {"command": "x", "url": "http://localhost:1/mcp"}
    }});
    std::fs::write(&path, config.to_string()).unwrap();
    let out = mcpr(&["tools", "--config", path.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("good ("));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("server `bad`") && stderr.contains("`command`"),
        "{stderr}"
    );
}

#[test]
fn sigterm_during_a_call_cancels_it_and_leaves_no_process() {
    let dir = temp_dir();
    let pid_file = dir.path().join("server.pid");
    let record = dir.path().join("record.jsonl");
    let grandchild_file = dir.path().join("grandchild.pid");
    let flags = [
        "--pid-file",
        pid_file.to_str().unwrap(),
        "--record",
        record.to_str().unwrap(),
        "--grandchild",
        grandchild_file.to_str().unwrap(),
    ];
    let config = config_file(dir.path(), &[("m", &flags)]);
    let mut child = mcpr_command(&[
        "call",
        "--config",
        config.to_str().unwrap(),
        "m",
        "sleep",
        r#"{"ms": 60000}"#,
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let server = read_pid(&pid_file);
    let grandchild = read_pid(&grandchild_file);
    // Wait until the call has reached the server before interrupting.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&record)
        .unwrap_or_default()
        .contains("\"sleep\"")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(wait_dead(server, Duration::from_secs(5)), "server survived");
    assert!(
        wait_dead(grandchild, Duration::from_secs(5)),
        "grandchild survived"
    );
    let recorded = std::fs::read_to_string(&record).unwrap();
    assert!(recorded.contains("notifications/cancelled"), "{recorded}");
}

#[test]
fn call_accepts_the_exposed_tool_name() {
    let dir = temp_dir();
    let config = config_file(dir.path(), &[("my.server", &[]), ("other", &[])]);
    let out = mcpr(&[
        "call",
        "--config",
        config.to_str().unwrap(),
        "mcp_my_server_echo",
        r#"{"text": "by name"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "by name");

    let out = mcpr(&[
        "call",
        "--config",
        config.to_str().unwrap(),
        "mcp_nope_echo",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no tool named `mcp_nope_echo`"));
}

#[test]
fn status_reports_each_server_with_errors_and_stderr() {
    let dir = temp_dir();
    let config = config_file(
        dir.path(),
        &[("up", &[]), ("down", &["--fail-init", "missing API key"])],
    );
    let out = mcpr(&["status", "--config", config.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "one server answered → 0");
    let reports: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let up = reports.iter().find(|r| r["name"] == "up").unwrap();
    assert_eq!(up["status"], "connected");
    assert_eq!(up["protocol_version"], "2025-11-25");
    assert!(up["tools"].as_u64().unwrap() >= 10);
    assert!(up["handshake_ms"].is_u64());
    let down = reports.iter().find(|r| r["name"] == "down").unwrap();
    assert_eq!(down["status"], "disconnected");
    assert!(
        down["stderr_tail"].to_string().contains("missing API key"),
        "{down}"
    );

    let out = mcpr(&["status", "--config", config.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("SERVER") && stdout.contains("connected"),
        "{stdout}"
    );
    assert!(stdout.contains("| missing API key"), "{stdout}");
}

#[test]
fn sigterm_during_start_up_leaves_no_process() {
    let dir = temp_dir();
    let pid_a = dir.path().join("a.pid");
    let pid_b = dir.path().join("b.pid");
    let flags_a = ["--pid-file", pid_a.to_str().unwrap(), "--hang-init"];
    let flags_b = [
        "--pid-file",
        pid_b.to_str().unwrap(),
        "--init-delay",
        "60000",
    ];
    let config = config_file(dir.path(), &[("a", &flags_a), ("b", &flags_b)]);
    let mut child = mcpr_command(&["tools", "--config", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (a, b) = (read_pid(&pid_a), read_pid(&pid_b));
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(wait_dead(a, Duration::from_secs(5)), "server a survived");
    assert!(wait_dead(b, Duration::from_secs(5)), "server b survived");
}

#[test]
fn sigkill_of_the_gateway_leaves_no_grandchild() {
    let dir = temp_dir();
    let files: Vec<[std::path::PathBuf; 2]> = ["a", "b"]
        .iter()
        .map(|name| {
            [
                dir.path().join(format!("{name}-server.pid")),
                dir.path().join(format!("{name}-grandchild.pid")),
            ]
        })
        .collect();
    let flags: Vec<Vec<&str>> = files
        .iter()
        .map(|[server, grandchild]| {
            vec![
                "--grandchild",
                grandchild.to_str().unwrap(),
                "--pid-file",
                server.to_str().unwrap(),
            ]
        })
        .collect();
    let config = config_file(
        dir.path(),
        &[("npx_like_a", &flags[0]), ("npx_like_b", &flags[1])],
    );
    // stdin stays open, so only the kill ends the gateway.
    let mut command = mcpr_command(&["--config", config.to_str().unwrap(), "serve"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut gateway = support::ChildGuard::spawn(&mut command);
    let pids: Vec<u32> = files.iter().flatten().map(|file| read_pid(file)).collect();

    // One watchdog for both servers: the gateway's only child, and the servers' parent.
    let children = children_of(gateway.0.id());
    assert_eq!(children.len(), 1, "children of the gateway: {children:?}");
    let mut servers = children_of(children[0]);
    servers.sort_unstable();
    let mut expected = vec![pids[0], pids[2]];
    expected.sort_unstable();
    assert_eq!(servers, expected, "children of the watchdog");

    // SAFETY: plain kill(2) on our own child: nothing of the gateway runs after this.
    unsafe { libc::kill(gateway.0.id() as i32, libc::SIGKILL) };
    let _ = gateway.0.wait();

    assert_all_gone(&pids);
}

#[test]
fn sigkill_of_the_gateway_leaves_no_process_that_escaped_a_group() {
    let dir = temp_dir();
    let file = |name: &str| dir.path().join(format!("{name}.pid"));
    let flags: Vec<String> = [
        ("--pid-file", "server"),
        ("--grandchild-setsid", "setsid"),
        ("--orphan", "orphan"),
    ]
    .iter()
    .flat_map(|(flag, name)| [flag.to_string(), file(name).display().to_string()])
    .collect();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let config = config_file(dir.path(), &[("daemonizing", &flags)]);
    let mut command = mcpr_command(&["--config", config.to_str().unwrap(), "serve"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut gateway = support::ChildGuard::spawn(&mut command);
    let pids: Vec<u32> = ["server", "setsid", "orphan"]
        .iter()
        .map(|name| read_pid(&file(name)))
        .collect();

    // SAFETY: plain kill(2) on our own child: nothing of the gateway runs after this.
    unsafe { libc::kill(gateway.0.id() as i32, libc::SIGKILL) };
    let _ = gateway.0.wait();

    assert_all_gone(&pids);
}

#[test]
fn a_one_shot_command_leaves_no_process_that_escaped_a_group() {
    let dir = temp_dir();
    let setsid = dir.path().join("setsid.pid");
    let orphan = dir.path().join("orphan.pid");
    let flags = [
        "--grandchild-setsid",
        setsid.to_str().unwrap(),
        "--orphan",
        orphan.to_str().unwrap(),
    ];
    let config = config_file(dir.path(), &[("daemonizing", &flags)]);
    let out = mcpr(&[
        "call",
        "--config",
        config.to_str().unwrap(),
        "daemonizing",
        "echo",
        r#"{"text": "hi"}"#,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("hi"));
    assert_all_gone(&[read_pid(&setsid), read_pid(&orphan)]);
}

#[test]
fn a_killed_watchdog_takes_its_servers_and_new_ones_are_guarded_again() {
    let dir = temp_dir();
    let file = |name: &str| dir.path().join(format!("{name}.pid"));
    let flags = |name: &str| {
        vec![
            "--grandchild".to_owned(),
            file(&format!("{name}-grandchild")).display().to_string(),
            "--pid-file".to_owned(),
            file(&format!("{name}-server")).display().to_string(),
        ]
    };
    let (flags_a, flags_b) = (flags("a"), flags("b"));
    let flags_a: Vec<&str> = flags_a.iter().map(String::as_str).collect();
    let flags_b: Vec<&str> = flags_b.iter().map(String::as_str).collect();
    let config = config_file(dir.path(), &[("npx_like_a", &flags_a)]);
    let mut command = mcpr_command(&["--config", config.to_str().unwrap(), "serve", "--watch"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut gateway = support::ChildGuard::spawn(&mut command);
    let server_a = read_pid(&file("a-server"));
    let grandchild_a = read_pid(&file("a-grandchild"));
    // Killed during its first handshake, a server is a failed start, not a lost connection:
    // wait until the gateway lists its tools (it is connected then).
    wait_listed(&mut gateway, "npx_like_a");

    // Someone kills the watchdog (an OOM killer, a `pkill`): the gateway's only child. Its
    // server dies with it, and the gateway kills what was left of the server's group.
    let watchdogs = children_of(gateway.0.id());
    assert_eq!(watchdogs.len(), 1, "the gateway's children: {watchdogs:?}");
    std::fs::remove_file(file("a-server")).unwrap();
    std::fs::remove_file(file("a-grandchild")).unwrap();
    // SAFETY: kill(2) of the gateway's own watchdog, started for this test's servers.
    unsafe { libc::kill(watchdogs[0] as i32, libc::SIGKILL) };
    assert_all_gone(&[watchdogs[0], server_a, grandchild_a]);

    // The gateway reconnects the server under a new watchdog, and one added now joins it.
    let again_a = read_pid(&file("a-server"));
    config_file(
        dir.path(),
        &[("npx_like_a", &flags_a), ("npx_like_b", &flags_b)],
    );
    let server_b = read_pid(&file("b-server"));
    let children = children_of(gateway.0.id());
    assert_eq!(children.len(), 1, "the gateway's children: {children:?}");
    assert_ne!(children[0], watchdogs[0]);
    let guarded = children_of(children[0]);
    assert!(
        guarded.contains(&again_a) && guarded.contains(&server_b),
        "children of the new watchdog: {guarded:?}"
    );
    let grandchildren = [
        read_pid(&file("a-grandchild")),
        read_pid(&file("b-grandchild")),
    ];

    // SAFETY: plain kill(2) on our own child: nothing of the gateway runs after this.
    unsafe { libc::kill(gateway.0.id() as i32, libc::SIGKILL) };
    let _ = gateway.0.wait();
    assert_all_gone(&[again_a, server_b, grandchildren[0], grandchildren[1]]);
}

/// Speak to the stdio gateway `gateway` as a client until its `tools/list` names `tool`.
fn wait_listed(gateway: &mut support::ChildGuard, tool: &str) {
    let lines = support::line_channel(gateway.0.stdout.take().expect("gateway stdout"));
    let stdin = gateway.0.stdin.as_mut().expect("gateway stdin");
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("no tools/list answer from the gateway");
        let answer: Value = serde_json::from_str(&line).unwrap_or_default();
        if answer["id"] == 2 {
            assert!(line.contains(tool), "{line}");
            return;
        }
    }
}

/// Every one of `pids` ends soon after mcpr was killed or exited; any survivor is killed here and
/// fails the test.
fn assert_all_gone(pids: &[u32]) {
    let survivors: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|pid| !wait_dead(*pid, Duration::from_secs(20)))
        .collect();
    for pid in &survivors {
        // SAFETY: the test's own stray process; do not leave it behind.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(
        survivors.is_empty(),
        "servers or what they started outlived mcpr: {survivors:?} of {pids:?}"
    );
}

/// The processes `pid` started (every thread's), from `/proc`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let listed = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        children.extend(
            listed
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    children
}

#[test]
fn a_tool_listed_twice_is_shown_once_with_a_warning() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([
            {"name": "twice", "description": "first"},
            {"name": "twice", "description": "second"}
        ])
        .to_string(),
    )
    .unwrap();
    let config = config_file(
        dir.path(),
        &[("dup", &["--tool-file", tools.to_str().unwrap()])],
    );
    let out = mcpr(&["tools", "--config", config.to_str().unwrap(), "--json"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let twice: Vec<&Value> = listed.iter().filter(|t| t["tool"] == "twice").collect();
    assert_eq!(twice.len(), 1, "{listed:?}");
    assert_eq!(twice[0]["description"], "first");
    assert!(
        stderr.contains("`dup`") && stderr.contains("`twice`") && stderr.contains("more than once"),
        "{stderr}"
    );
}

/// What a hostile server puts in its texts: a window-title change and a screen clear.
const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";

/// A tool file whose tool has escape sequences in its description and in its error result.
fn evil_tool_file(dir: &Path) -> PathBuf {
    let path = dir.join("evil-tools.json");
    let tools = json!([{
        "name": "evil",
        "description": format!("looks harmless {EVIL} really"),
        "result": {"content": [{"type": "text", "text": format!("tool failed {EVIL}")}], "isError": true}
    }]);
    std::fs::write(&path, tools.to_string()).unwrap();
    path
}

#[test]
fn escape_sequences_from_servers_never_reach_the_terminal_raw() {
    let dir = temp_dir();
    let tools = evil_tool_file(dir.path());
    let fail = format!("cannot start {EVIL}");
    let config = config_file(
        dir.path(),
        &[
            ("evil", &["--tool-file", tools.to_str().unwrap()]),
            ("broken", &["--stderr", EVIL, "--fail-init", &fail]),
        ],
    );
    let config = config.to_str().unwrap();
    let raw = |out: &Output| {
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(
            !all.contains('\u{1b}') && !all.contains('\u{7}'),
            "raw control bytes in:\n{all:?}"
        );
        all
    };

    // Human-readable: the description, the stderr tail and errors are escaped.
    let all = raw(&mcpr(&["tools", "--config", config]));
    assert!(
        all.contains("looks harmless \\u{1b}]0;pwned\\u{7}"),
        "{all}"
    );
    assert!(all.contains("cannot start \\u{1b}"), "{all}");
    let all = raw(&mcpr(&["status", "--config", config]));
    assert!(
        all.contains("| cannot start \\u{1b}]0;pwned"),
        "stderr tail:\n{all}"
    );
    let out = mcpr(&["call", "--config", config, "evil", "evil"]);
    assert_eq!(out.status.code(), Some(1));
    let all = raw(&out);
    assert!(
        all.contains("tool failed \\u{1b}]0;pwned\\u{7}\\u{1b}[2J"),
        "{all}"
    );
    let all = raw(&mcpr(&["call", "--config", config, "broken", "anything"]));
    assert!(all.contains("cannot start \\u{1b}"), "{all}");

    // JSON keeps the text, as JSON escapes.
    let out = mcpr(&["tools", "--config", config, "--json"]);
    assert!(text(&out.stdout).contains("looks harmless \\u001b]0;pwned\\u0007"));
    assert!(!text(&out.stdout).contains('\u{1b}'));
    let out = mcpr(&["call", "--config", config, "--json", "evil", "evil"]);
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(result["content"][0]["text"], format!("tool failed {EVIL}"));
    assert!(!text(&out.stdout).contains('\u{1b}'));
}
