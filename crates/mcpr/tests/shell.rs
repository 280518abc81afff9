//! `mcpr shell` driven through pipes, as a script would: tool calls, `/mcp` commands that change
//! the servers without restarting the shell, Ctrl-C, and quitting without leaving a process.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{MCPR, line_channel, read_pid, temp_dir, wait_dead};

/// Bound on every wait for output or exit.
const WAIT: Duration = Duration::from_secs(30);

/// The last line of `/help`. Sent after a command, `/help` marks where that command's output
/// ends (commands run one after the other, and stdout keeps their order).
const HELP_END: &str = "Ctrl-C cancels a running call.";

/// The first line of `/help`.
const HELP_START: &str = "Call a tool:";

/// A running `mcpr shell` with its pipes.
struct Shell {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// Everything read from stderr so far.
    errors: String,
}

impl Shell {
    /// `mcpr shell --config CONFIG` in the isolated home.
    fn start(config: &Path) -> Shell {
        let home = support::isolated_home();
        let config = config.to_str().expect("a UTF-8 path");
        Shell::start_in(&home.join("project"), &["--config", config])
    }

    /// `mcpr shell ARGS` run in `dir`, with the isolated home.
    fn start_in(dir: &Path, args: &[&str]) -> Shell {
        let home = support::isolated_home();
        let mut command = Command::new(MCPR);
        command.arg("shell").args(args).current_dir(dir);
        support::isolate_env(&mut command, &home);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcpr shell");
        let stdout = line_channel(child.stdout.take().expect("stdout pipe"));
        let stderr = line_channel(child.stderr.take().expect("stderr pipe"));
        Shell {
            stdin: child.stdin.take(),
            child,
            stdout,
            stderr,
            errors: String::new(),
        }
    }

    /// Write one line to the shell.
    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").expect("write to the shell");
        stdin.flush().expect("flush the shell's stdin");
    }

    /// Run `line` and return what it printed on stdout.
    fn run(&mut self, line: &str) -> String {
        self.send(line);
        self.send("/help");
        let deadline = Instant::now() + WAIT;
        let mut out = String::new();
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(remaining) {
                Ok(text) if text.contains(HELP_END) => break,
                Ok(text) => {
                    out.push_str(&text);
                    out.push('\n');
                }
                Err(_) => panic!(
                    "no answer to `{line}` within {WAIT:?}\nstdout so far:\n{out}\nstderr:\n{}",
                    self.drain_errors()
                ),
            }
        }
        match out.rfind(HELP_START) {
            Some(start) => out.truncate(start),
            None => panic!("`/help` output missing after `{line}`:\n{out}"),
        }
        out
    }

    /// Wait until stderr contains `needle`; returns all of stderr so far.
    fn expect_error(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        while !self.errors.contains(needle) {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(remaining) {
                Ok(line) => {
                    self.errors.push_str(&line);
                    self.errors.push('\n');
                }
                Err(_) => panic!("`{needle}` never appeared on stderr:\n{}", self.errors),
            }
        }
        self.errors.clone()
    }

    /// Everything on stderr so far (for failure messages).
    fn drain_errors(&mut self) -> String {
        while let Ok(line) = self.stderr.try_recv() {
            self.errors.push_str(&line);
            self.errors.push('\n');
        }
        self.errors.clone()
    }

    /// Send `signal` to the shell.
    fn signal(&self, signal: i32) {
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// Close stdin (end of input) and wait for the shell to exit.
    fn close(mut self) -> ExitStatus {
        self.stdin = None;
        self.wait()
    }

    /// Wait for the shell to exit, bounded; kills it (and fails) when it does not.
    fn wait(mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the shell") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the shell did not exit:\n{}", self.drain_errors());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Write `{"mcpServers": ...}` to `path`: each server runs `mcpr mock` with its flags.
fn write_config(path: &Path, servers: &[(&str, Vec<String>)]) {
    let mut map = serde_json::Map::new();
    for (name, flags) in servers {
        let mut args = vec!["mock".to_owned()];
        args.extend(flags.iter().cloned());
        map.insert(name.to_string(), json!({"command": MCPR, "args": args}));
    }
    let text = serde_json::to_string_pretty(&json!({"mcpServers": map})).expect("serialize");
    std::fs::write(path, text).expect("write config");
}

/// Mock flags that record the server's pid in `dir/<name>.pid`.
fn with_pid(dir: &Path, name: &str) -> (Vec<String>, PathBuf) {
    let pid_file = dir.join(format!("{name}.pid"));
    let flags = vec!["--pid-file".to_owned(), pid_file.display().to_string()];
    (flags, pid_file)
}

/// Poll until `condition` holds, at most [`WAIT`].
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn calls_tools_and_answers_the_mcp_commands() {
    let dir = temp_dir();
    let (m_flags, m_pid) = with_pid(dir.path(), "m");
    let (mut n_flags, n_pid) = with_pid(dir.path(), "n");
    n_flags.extend(["--tools".to_owned(), "2".to_owned()]);
    let config = dir.path().join("mcp.json");
    write_config(&config, &[("m", m_flags), ("n", n_flags)]);
    let args_file = dir.path().join("args.json");
    std::fs::write(&args_file, r#"{"text": "from a file"}"#).unwrap();
    let mut shell = Shell::start(&config);

    assert_eq!(
        shell.run(r#"mcp_m_echo {"text": "hello shell"}"#),
        "hello shell\n"
    );
    assert_eq!(shell.run(r#"mcp_m_add {"a": 2, "b": 3}"#), "5\n");
    let from_file = shell.run(&format!("mcp_m_echo @{}", args_file.display()));
    assert_eq!(from_file, "from a file\n");
    // `key=value` words, as `mcpr call` takes them, typed by the tool's schema.
    assert_eq!(
        shell.run(r#"mcp_m_echo text="hello words""#),
        "hello words\n"
    );
    assert_eq!(shell.run("mcp_m_add a=2 b=3"), "5\n");
    shell.run("mcp_m_fail");
    shell.expect_error("tool reported an error");
    shell.run("mcp_nobody_here");
    shell.expect_error("no tool named `mcp_nobody_here`");
    shell.run("mcp_m_echo {oops");
    shell.expect_error("not valid JSON");

    let list = shell.run("/mcp list");
    for expected in ["m (", "mcp_m_echo", "n (", "mcp_n_tool_1"] {
        assert!(list.contains(expected), "`{expected}` missing:\n{list}");
    }
    let status = shell.run("/mcp status");
    assert!(status.starts_with("SERVER"), "{status}");
    for name in ["m", "n"] {
        assert!(
            status
                .lines()
                .any(|l| l.starts_with(&format!("{name} ")) && l.contains("connected")),
            "{name} not connected:\n{status}"
        );
    }
    // The mock offers neither resources nor prompts: a clean empty answer per server.
    let resources = shell.run("/mcp resources");
    assert_eq!(resources, "m: no resources\nn: no resources\n");
    let prompts = shell.run("/mcp prompts");
    assert_eq!(prompts, "m: no prompts\nn: no prompts\n");
    let test = shell.run("/mcp test m");
    assert!(
        test.starts_with("m: ok (") && test.contains("ping"),
        "{test}"
    );

    let (m, n) = (read_pid(&m_pid), read_pid(&n_pid));
    let status = shell.close();
    // Three lines failed (a tool error, an unknown tool, bad JSON): the exit code says so.
    assert_eq!(status.code(), Some(1), "exit on end of input: {status:?}");
    assert!(
        wait_dead(m, Duration::from_secs(5)),
        "server m survived the shell"
    );
    assert!(
        wait_dead(n, Duration::from_secs(5)),
        "server n survived the shell"
    );
}

#[test]
fn reload_applies_an_edited_config_by_difference() {
    let dir = temp_dir();
    let (gone_flags, gone_pid) = with_pid(dir.path(), "gone");
    let (keep_flags, keep_pid) = with_pid(dir.path(), "keep");
    let (change_flags, change_pid) = with_pid(dir.path(), "change");
    let config = dir.path().join("mcp.json");
    write_config(
        &config,
        &[
            ("keep", keep_flags.clone()),
            ("change", change_flags.clone()),
            ("gone", gone_flags),
        ],
    );
    let mut shell = Shell::start(&config);
    let before = shell.run("/mcp list");
    assert!(before.contains("mcp_gone_echo"), "{before}");
    let (gone, keep, change) = (
        read_pid(&gone_pid),
        read_pid(&keep_pid),
        read_pid(&change_pid),
    );

    let mut changed_flags = change_flags;
    changed_flags.extend(["--tools".to_owned(), "1".to_owned()]);
    write_config(
        &config,
        &[
            ("keep", keep_flags),
            ("change", changed_flags),
            ("fresh", Vec::new()),
        ],
    );
    let reload = shell.run("/mcp reload");
    assert!(
        reload.starts_with("reloaded: +fresh, ~change, -gone, 1 unchanged (3 servers, "),
        "{reload}"
    );
    let after = shell.run("/mcp list");
    for expected in ["mcp_fresh_echo", "mcp_keep_echo", "mcp_change_tool_0"] {
        assert!(after.contains(expected), "`{expected}` missing:\n{after}");
    }
    assert!(
        !after.contains("gone"),
        "removed server still listed:\n{after}"
    );
    assert!(
        wait_dead(gone, Duration::from_secs(5)),
        "removed server still running"
    );
    assert!(
        wait_dead(change, Duration::from_secs(5)),
        "the changed server's old process still running"
    );
    assert_ne!(
        read_pid(&change_pid),
        change,
        "changed server not restarted"
    );
    assert_eq!(read_pid(&keep_pid), keep, "unchanged server restarted");
    assert!(support::alive(keep), "unchanged server stopped");
    assert_eq!(shell.run(r#"mcp_fresh_echo {"text": "new"}"#), "new\n");

    // Nothing changed since: nothing happens.
    let again = shell.run("/mcp reload");
    assert!(again.starts_with("reloaded: 3 unchanged"), "{again}");
    assert_eq!(read_pid(&keep_pid), keep);

    assert!(shell.close().success());
}

#[test]
fn reconnect_starts_a_new_server_process_and_exit_quits() {
    let dir = temp_dir();
    let (flags, pid_file) = with_pid(dir.path(), "m");
    let config = dir.path().join("mcp.json");
    write_config(&config, &[("m", flags)]);
    let mut shell = Shell::start(&config);
    let old = read_pid(&pid_file);

    let out = shell.run("/mcp reconnect m");
    assert!(out.contains("`m` reconnected"), "{out}");
    eventually("a new server process", || read_pid(&pid_file) != old);
    assert!(
        wait_dead(old, Duration::from_secs(5)),
        "old process survived"
    );
    assert_eq!(shell.run(r#"mcp_m_echo {"text": "again"}"#), "again\n");
    shell.run("/mcp reconnect nobody");
    shell.expect_error("no server named `nobody`");

    let new = read_pid(&pid_file);
    shell.send("/exit");
    assert!(shell.wait().success());
    assert!(
        wait_dead(new, Duration::from_secs(5)),
        "server survived /exit"
    );
}

#[test]
fn disable_and_enable_persist_and_apply_at_once() {
    let dir = temp_dir();
    // A name no other test uses: the user config file is shared by this test binary.
    let (flags, pid_file) = with_pid(dir.path(), "toggled");
    let config = dir.path().join("mcp.json");
    write_config(&config, &[("toggled", flags), ("other", Vec::new())]);
    let user_config = support::isolated_home().join(".config/mcpr/mcp.json");
    let mut shell = Shell::start(&config);
    let first = read_pid(&pid_file);

    let out = shell.run("/mcp disable toggled");
    assert!(out.contains("`toggled` disabled"), "{out}");
    shell.expect_error("tools changed: -");
    assert!(
        wait_dead(first, Duration::from_secs(5)),
        "disabled server still running"
    );
    let list = shell.run("/mcp list");
    assert!(
        !list.contains("toggled") && list.contains("mcp_other_echo"),
        "{list}"
    );
    let saved = std::fs::read_to_string(&user_config).unwrap_or_default();
    assert!(
        saved.contains("disabledServers") && saved.contains("toggled"),
        "{saved}"
    );

    let out = shell.run("/mcp enable toggled");
    assert!(out.contains("`toggled` enabled"), "{out}");
    shell.expect_error("tools changed: +");
    let list = shell.run("/mcp list");
    assert!(list.contains("mcp_toggled_echo"), "{list}");
    assert_eq!(shell.run(r#"mcp_toggled_echo {"text": "back"}"#), "back\n");
    let saved = std::fs::read_to_string(&user_config).unwrap_or_default();
    assert!(
        !saved.contains("toggled"),
        "still listed after enable: {saved}"
    );

    let second = read_pid(&pid_file);
    assert!(shell.close().success());
    assert!(wait_dead(second, Duration::from_secs(5)));
}

#[test]
fn ctrl_c_cancels_a_running_call_and_the_shell_goes_on() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let config = dir.path().join("mcp.json");
    let flags = vec!["--record".to_owned(), record.display().to_string()];
    write_config(&config, &[("m", flags)]);
    let mut shell = Shell::start(&config);

    shell.send(r#"mcp_m_sleep {"ms": 60000}"#);
    eventually("the call to reach the server", || {
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .contains("\"sleep\"")
    });
    shell.signal(libc::SIGINT);
    shell.expect_error("call cancelled");
    eventually("notifications/cancelled at the server", || {
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .contains("notifications/cancelled")
    });
    assert_eq!(
        shell.run(r#"mcp_m_echo {"text": "still here"}"#),
        "still here\n"
    );
    // The cancelled call counts as a failed line.
    assert_eq!(shell.close().code(), Some(1));
}

#[test]
fn sigterm_quits_and_leaves_no_server() {
    let dir = temp_dir();
    let (flags, pid_file) = with_pid(dir.path(), "m");
    let config = dir.path().join("mcp.json");
    write_config(&config, &[("m", flags)]);
    let mut shell = Shell::start(&config);
    shell.run("/mcp status");
    let server = read_pid(&pid_file);

    shell.signal(libc::SIGTERM);
    let status = shell.wait();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(
        wait_dead(server, Duration::from_secs(5)),
        "server survived SIGTERM"
    );
}

#[test]
fn escape_sequences_from_servers_are_shown_escaped() {
    const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    let definitions = json!([{
        "name": "evil",
        "description": format!("harmless {EVIL}"),
        "result": {"content": [{"type": "text", "text": format!("result {EVIL}")}], "isError": true}
    }]);
    std::fs::write(&tools, definitions.to_string()).unwrap();
    let config = dir.path().join("mcp.json");
    write_config(
        &config,
        &[(
            "e",
            vec!["--tool-file".to_owned(), tools.display().to_string()],
        )],
    );
    let mut shell = Shell::start(&config);
    let list = shell.run("/mcp list");
    assert!(list.contains("harmless \\u{1b}]0;pwned"), "{list}");
    let result = shell.run("mcp_e_evil");
    assert!(
        result.contains("result \\u{1b}]0;pwned\\u{7}\\u{1b}[2J"),
        "{result}"
    );
    let errors = shell.expect_error("tool reported an error");
    for output in [&list, &result, &errors] {
        assert!(!output.contains('\u{1b}'), "raw ESC in {output:?}");
    }
    // The tool reported an error: a failed line.
    assert_eq!(shell.close().code(), Some(1));
}

#[test]
fn a_server_name_from_a_config_is_shown_escaped() {
    const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let dir = temp_dir();
    let config = dir.path().join("mcp.json");
    let name = format!("n{EVIL}");
    write_config(&config, &[(name.as_str(), vec!["--resources".to_owned()])]);
    let mut shell = Shell::start(&config);
    for command in ["/mcp", "/mcp list", "/mcp resources", "/mcp prompts"] {
        let output = shell.run(command);
        assert!(output.contains("n\\u{1b}]0;pwned"), "{command}: {output}");
        assert!(
            !output.contains('\u{1b}'),
            "raw ESC from {command}: {output:?}"
        );
    }
    assert!(shell.close().success());
}

#[test]
fn mcp_trust_shows_the_project_files_and_starts_their_servers_only_with_yes() {
    let dir = temp_dir();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    let (flags, pid_file) = with_pid(&project, "held");
    let mut args = vec!["mock".to_owned()];
    args.extend(flags);
    let config = json!({"mcpServers": {"held": {"command": MCPR, "args": args,
        "env": {"API_TOKEN": "hunter2"}}}});
    std::fs::write(project.join(".mcp.json"), config.to_string()).unwrap();
    let mut shell = Shell::start_in(&project, &[]);

    let review = shell.run("/mcp trust");
    assert!(
        review.contains(".mcp.json") && review.contains("held") && review.contains("--yes"),
        "{review}"
    );
    assert!(!review.contains("hunter2"), "{review}");
    assert!(
        !pid_file.exists(),
        "the project's server started before it was trusted"
    );
    let list = shell.run("/mcp list");
    assert!(!list.contains("mcp_held_echo"), "{list}");

    let trusted = shell.run("/mcp trust --yes");
    assert!(trusted.contains("Trusted"), "{trusted}");
    eventually("the trusted server to start", || pid_file.exists());
    assert_eq!(shell.run(r#"mcp_held_echo text=now"#), "now\n");
    let pid = read_pid(&pid_file);
    let status = shell.close();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(wait_dead(pid, Duration::from_secs(5)));
}
