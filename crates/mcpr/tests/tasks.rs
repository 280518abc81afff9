//! Tasks from the command line, against the mock's conformance mode as a real process: a
//! `mcpr call` of a task tool waits for its result (its status on the live line of a
//! terminal only, Ctrl-C cancelling it), `mcpr call --detach` prints the task's id, and
//! `mcpr task get|result|cancel|list` take the task up again on new connections (over
//! streamable HTTP, where the server keeps tasks across connections), with the exit codes of
//! the other commands.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use portable_pty::CommandBuilder;
use serde_json::{Value, json};
use support::{MCPR, temp_dir};

/// `mcpr ARGS` in a home of its own under `dir`, its output on pipes.
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

/// A config with the conformance mock over stdio as server `jobs`.
fn stdio_config(dir: &Path) -> String {
    let path = dir.join("mcp.json");
    let servers =
        json!({"mcpServers": {"jobs": {"command": MCPR, "args": ["mock", "--conformance"]}}});
    std::fs::write(&path, servers.to_string()).unwrap();
    path.display().to_string()
}

/// The conformance mock over streamable HTTP, killed when dropped.
struct Served {
    _child: support::ChildGuard,
    url: String,
}

fn served() -> Served {
    let mut command = Command::new(MCPR);
    command
        .args(["mock", "--conformance", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let (child, url) = support::spawn_listening(&mut command);
    Served { _child: child, url }
}

#[test]
fn a_call_of_a_task_tool_waits_for_its_result_and_prints_nothing_extra_on_a_pipe() {
    let dir = temp_dir();
    let config = stdio_config(dir.path());
    let base = [
        "--strict-config",
        "--config",
        config.as_str(),
        "call",
        "jobs",
    ];
    let run = |rest: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(rest);
        mcpr(dir.path(), &args)
    };
    let out = run(&["slow_compute", "seconds:=0.3", "label=sum"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Computed sum in 0.3s\n");
    assert_eq!(text(&out.stderr), "", "nothing but the result on a pipe");
    // Must be a task, and completes with a tool error: exit 1, as any tool error.
    let out = run(&["failing_job"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // Fails with a JSON-RPC error: the caller's side of things, exit 2.
    let out = run(&["protocol_error_job"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("on purpose"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_detached_task_is_taken_up_again_by_id_with_mcpr_task() {
    let dir = temp_dir();
    let server = served();
    let url = server.url.as_str();
    let out = mcpr(
        dir.path(),
        &[
            "call",
            "--url",
            url,
            "--detach",
            "slow_compute",
            "seconds:=0.5",
            "label=later",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_owned();
    assert!(
        !id.is_empty() && !id.contains(char::is_whitespace),
        "{id:?}"
    );

    let out = mcpr(dir.path(), &["task", "get", "--url", url, &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let state: Value = serde_json::from_slice(&out.stdout).expect("one JSON state");
    assert_eq!(state["taskId"], id.as_str());

    let out = mcpr(dir.path(), &["task", "result", "--url", url, &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Computed later in 0.5s\n");

    let out = mcpr(dir.path(), &["task", "get", "--url", url, &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(&format!("{id}\tcompleted")),
        "{}",
        text(&out.stdout)
    );

    // Cancelled: the wait for its result is the tool's failure, exit 1.
    let out = mcpr(
        dir.path(),
        &[
            "call",
            "--url",
            url,
            "--detach",
            "slow_compute",
            "seconds:=300",
            "label=long",
        ],
    );
    let long = text(&out.stdout).trim().to_owned();
    let out = mcpr(dir.path(), &["task", "cancel", "--url", url, &long]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = mcpr(dir.path(), &["task", "result", "--url", url, &long]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cancelled"),
        "{}",
        text(&out.stderr)
    );

    // No such task: the server's error, exit 2. The extension has no list: exit 2.
    let out = mcpr(dir.path(), &["task", "get", "--url", url, "no-such-task"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = mcpr(dir.path(), &["task", "list", "--url", url]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("tasks/list"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_bad_task_id_is_refused_with_exit_2_and_escaped() {
    let dir = temp_dir();
    let server = served();
    let out = mcpr(
        dir.path(),
        &["task", "get", "--url", &server.url, "a\u{1b}[2Jb"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains('\u{1b}'),
        "{}",
        text(&out.stderr)
    );
}

/// `mcpr ARGS` on a pseudo-terminal; what it wrote by the time it exited, and its exit code.
fn on_terminal(dir: &Path, args: &[&str], interrupt_on: Option<&str>) -> (String, u32) {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut command = CommandBuilder::new(MCPR);
    command.args(args);
    command.cwd(dir);
    command.env("HOME", &home);
    command.env("XDG_CONFIG_HOME", home.join(".config"));
    command.env("XDG_CACHE_HOME", home.join(".cache"));
    command.env("XDG_DATA_HOME", home.join(".local/share"));
    command.env("XDG_STATE_HOME", home.join(".local/state"));
    command.env("TERM", "xterm");
    let support::pty::Spawned {
        mut child,
        mut writer,
        output,
    } = support::pty::spawn(command, 40, 200);
    let mut seen = String::new();
    if let Some(needle) = interrupt_on {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !seen.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            match output.recv_timeout(left) {
                Ok(bytes) => seen.push_str(&text(&bytes)),
                Err(_) => panic!("no {needle:?} on the terminal:\n{seen}"),
            }
        }
        use std::io::Write as _;
        writer.write_all(b"\x03").unwrap();
        writer.flush().unwrap();
    }
    let code = support::pty::wait_exit(child.as_mut(), &output, &mut seen);
    (seen, code)
}

#[test]
fn on_a_terminal_the_live_line_shows_the_task_and_ctrl_c_cancels_it() {
    let dir = temp_dir();
    let config = stdio_config(dir.path());
    let base = [
        "--strict-config",
        "--config",
        config.as_str(),
        "call",
        "jobs",
    ];
    let mut args = base.to_vec();
    args.extend(["slow_compute", "seconds:=1.5", "label=shown"]);
    let (seen, code) = on_terminal(dir.path(), &args, None);
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("slow_compute: task working"), "{seen}");
    assert!(seen.contains("Computed shown in 1.5s"), "{seen}");

    let mut args = base.to_vec();
    args.extend(["slow_compute", "seconds:=300", "label=stopped"]);
    let (seen, code) = on_terminal(dir.path(), &args, Some("task working"));
    assert_eq!(code, 130, "{seen}");
    assert!(seen.contains("cancelled"), "{seen}");
}
