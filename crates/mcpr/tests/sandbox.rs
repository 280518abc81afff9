//! Sandboxed stdio servers (`sandboxEnabled` / `sandbox`), through the real `mcpr` binary and
//! its real spawn path: each test runs a server script that attempts what the sandbox forbids,
//! records what happened in a file it may write, then runs the mock so the call completes.
//! Linux only: elsewhere a sandboxed server does not start at all.
#![cfg(target_os = "linux")]

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::{MCPR, mcpr, mcpr_command, read_pid, temp_dir, text, wait_dead};

/// Write `dir/mcp.json` with one server `s`, and return its path.
fn config(dir: &Path, server: Value) -> PathBuf {
    let path = dir.join("mcp.json");
    let body = json!({"mcpServers": {"s": server}});
    std::fs::write(&path, serde_json::to_string_pretty(&body).unwrap()).unwrap();
    path
}

/// A server script: `body` (shell) with its output in `report`, then the mock.
fn script(dir: &Path, report: &Path, body: &str) -> PathBuf {
    let path = dir.join("server.sh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n{{\n{body}\n}} > '{}' 2>&1\nexec '{MCPR}' mock\n",
            report.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `mcpr call` of the mock's echo on server `s` of `config`; returns the output.
fn call_echo(config: &Path) -> Output {
    mcpr(&[
        "call",
        "--trust-project",
        "--config",
        config.to_str().unwrap(),
        "s",
        "echo",
        r#"{"text": "still works"}"#,
    ])
}

fn assert_called(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), "still works");
}

#[test]
fn denied_reads_and_writes_outside_allow_write_fail_and_allowed_ones_work() {
    let dir = temp_dir();
    let root = dir.path();
    for sub in ["secret", "work", "work/frozen", "elsewhere"] {
        std::fs::create_dir(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("secret/key"), "SECRET-IN-DIR").unwrap();
    std::fs::write(root.join("secret-file"), "SECRET-FILE").unwrap();
    std::fs::write(root.join("readable"), "PLAIN-READ").unwrap();
    let report = root.join("work/report");
    let r = root.display();
    let server = script(
        root,
        &report,
        &format!(
            "cat '{r}/secret/key'; echo\n\
             cat '{r}/secret-file'; echo\n\
             ls '{r}/secret'; echo listed\n\
             cat '{r}/readable'; echo\n\
             echo x > '{r}/elsewhere/out' && echo WROTE-OUTSIDE\n\
             echo x > '{r}/work/frozen/out' && echo WROTE-DENY-WRITE\n\
             echo x > '{r}/work/ok' && echo wrote-allowed\n\
             echo x > \"$TMPDIR/t\" && echo wrote-tmp\n\
             echo \"tmpdir=$TMPDIR\"\n\
             echo \"tmpdir-mode=$(stat -c %a \"$TMPDIR\") $(stat -c %a \"$TMPDIR/..\")\"\n\
             touch '{r}/secret/planted' || echo planting-refused\n\
             watchdog=$(cut -d' ' -f4 /proc/$PPID/stat)\n\
             cat \"/proc/$watchdog/root{r}/secret/key\"; echo\n\
             echo \"watchdog=$watchdog\""
        ),
    );
    let config = config(
        root,
        json!({
            "command": server,
            "sandboxEnabled": true,
            "sandbox": {"filesystem": {
                "allowWrite": [format!("{r}/work")],
                "denyRead": [format!("{r}/secret"), format!("{r}/secret-file")],
                "denyWrite": [format!("{r}/work/frozen")]
            }}
        }),
    );

    let out = call_echo(&config);
    assert_called(&out);
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(!report.contains("SECRET-IN-DIR"), "{report}");
    assert!(!report.contains("SECRET-FILE"), "{report}");
    assert!(report.contains("PLAIN-READ"), "{report}");
    assert!(!report.contains("WROTE-OUTSIDE"), "{report}");
    assert!(!root.join("elsewhere/out").exists(), "{report}");
    assert!(!report.contains("WROTE-DENY-WRITE"), "{report}");
    assert!(!root.join("work/frozen/out").exists(), "{report}");
    assert!(report.contains("wrote-allowed"), "{report}");
    assert!(root.join("work/ok").exists(), "{report}");
    assert!(report.contains("wrote-tmp"), "{report}");
    assert!(report.contains("planting-refused"), "{report}");
    // The attempt through the watchdog's view of the filesystem was made, and failed.
    assert!(
        report.lines().any(|line| line
            .strip_prefix("watchdog=")
            .is_some_and(|pid| pid.parse::<u32>().is_ok())),
        "{report}"
    );
    assert!(!root.join("secret/planted").exists());
    // The private TMPDIR is neither the system's nor left behind.
    let tmpdir = report
        .lines()
        .find_map(|line| line.strip_prefix("tmpdir="))
        .unwrap();
    assert!(tmpdir.contains("mcpr-sandbox-"), "{report}");
    assert!(report.contains("tmpdir-mode=700 700"), "{report}");
    let gone = (0..250).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        !Path::new(tmpdir).exists()
    });
    assert!(gone, "the private TMPDIR {tmpdir} is left behind");
}

/// A loopback TCP server of the test: answers every request with `body`, counting connections.
fn http_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (port, hits)
}

#[test]
fn a_server_without_allowed_domains_has_no_network() {
    let (port, hits) = http_server("FROM-HOST");
    let dir = temp_dir();
    let report = dir.path().join("report");
    let server = script(
        dir.path(),
        &report,
        &format!(
            "curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/ && echo REACHED\n\
             curl -sS -m 5 http://127.0.0.1:{port}/ && echo REACHED-VIA-PROXY\n\
             echo \"proxy=$HTTP_PROXY\""
        ),
    );
    let config = config(
        dir.path(),
        json!({
            "command": server,
            "sandboxEnabled": true,
            "sandbox": {"filesystem": {"allowWrite": [dir.path()]}}
        }),
    );

    let out = call_echo(&config);
    assert_called(&out);
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(!report.contains("FROM-HOST"), "{report}");
    assert!(!report.contains("REACHED"), "{report}");
    assert!(report.contains("proxy=\n"), "{report}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "{report}");
}

#[test]
fn allowed_domains_are_reached_through_the_proxy_and_nothing_else_is() {
    let (port, hits) = http_server("FROM-HOST");
    let dir = temp_dir();
    let report = dir.path().join("report");
    let server = script(
        dir.path(),
        &report,
        &format!(
            "echo \"$(curl -sS -m 5 http://127.0.0.1:{port}/plain 2>&1) <- plain\"\n\
             echo \"$(curl -sS -m 5 -p http://127.0.0.1:{port}/tunnel 2>&1) <- tunnel\"\n\
             echo \"$(curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/ 2>&1) <- direct\"\n\
             echo \"$(curl -sS -m 5 http://localhost:{port}/ 2>&1) <- denied\"\n\
             echo \"$(curl -sS -m 5 -p http://localhost:{port}/ 2>&1) <- denied-tunnel\"\n\
             echo \"$(curl -sS -m 5 http://127.0.0.2:{port}/ 2>&1) <- other\""
        ),
    );
    let config = config(
        dir.path(),
        json!({
            "command": server,
            "sandboxEnabled": true,
            "sandbox": {
                "filesystem": {"allowWrite": [dir.path()]},
                "network": {
                    "allowedDomains": ["127.0.0.1", "localhost"],
                    "deniedDomains": ["localhost"]
                }
            }
        }),
    );

    let out = call_echo(&config);
    assert_called(&out);
    let report = std::fs::read_to_string(&report).unwrap();
    let line = |tag: &str| {
        report
            .lines()
            .find(|line| line.ends_with(&format!(" <- {tag}")))
            .unwrap_or_else(|| panic!("no {tag} line in {report}"))
            .to_owned()
    };
    assert!(line("plain").contains("FROM-HOST"), "{report}");
    assert!(line("tunnel").contains("FROM-HOST"), "{report}");
    assert!(!line("direct").contains("FROM-HOST"), "{report}");
    assert!(
        line("denied").contains("not in this server's allowedDomains"),
        "{report}"
    );
    assert!(!line("denied-tunnel").contains("FROM-HOST"), "{report}");
    assert!(!line("other").contains("FROM-HOST"), "{report}");
    // Only the two allowed requests reached the test's server.
    assert_eq!(hits.load(Ordering::SeqCst), 2, "{report}");
}

/// Call through a server entry of `server` with `sandbox`, which must keep it from starting:
/// the call fails, and the script never wrote `started`. Returns mcpr's stderr.
fn refused_before_start(dir: &Path, server: &Path, started: &Path, sandbox: Value) -> String {
    let config = config(
        dir,
        json!({"command": server, "sandboxEnabled": true, "sandbox": sandbox}),
    );
    let out = call_echo(&config);
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(!started.exists(), "the server ran: {stderr}");
    stderr
}

#[test]
fn a_malformed_sandbox_keeps_the_server_from_starting() {
    let dir = temp_dir();
    let started = dir.path().join("started");
    let server = script(dir.path(), &started, "echo started");
    let stderr = refused_before_start(
        dir.path(),
        &server,
        &started,
        json!({"filesystem": {"allowWrite": dir.path()}}),
    );
    assert!(
        stderr.contains("sandbox.filesystem.allowWrite") && stderr.contains("mcp.json"),
        "{stderr}"
    );

    // Relative paths are refused too, rather than guessed.
    let stderr = refused_before_start(
        dir.path(),
        &server,
        &started,
        json!({"filesystem": {"denyRead": [".ssh"]}}),
    );
    assert!(
        stderr.contains("sandbox.filesystem.denyRead[0]") && stderr.contains("absolute"),
        "{stderr}"
    );
}

#[test]
fn an_early_exit_inside_the_sandbox_says_what_the_sandbox_withholds() {
    let dir = temp_dir();
    let server = dir.path().join("server.sh");
    std::fs::write(&server, "#!/bin/sh\necho 'npm ERR! network' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = config(
        dir.path(),
        json!({"command": server, "sandboxEnabled": true}),
    );

    let out = call_echo(&config);
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("inside the sandbox") && stderr.contains("allowedDomains"),
        "{stderr}"
    );
}

#[test]
fn nothing_sandboxed_outlives_a_killed_host() {
    let dir = temp_dir();
    let file = |name: &str| dir.path().join(format!("{name}.pid"));
    let config = config(
        dir.path(),
        json!({
            "command": MCPR,
            "args": [
                "mock",
                "--pid-file", file("server"),
                "--grandchild", file("grandchild"),
                "--orphan", file("orphan")
            ],
            "sandboxEnabled": true,
            "sandbox": {"filesystem": {"allowWrite": [dir.path()]}}
        }),
    );
    let mut command = mcpr_command(&["--config", config.to_str().unwrap(), "serve"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut gateway = support::ChildGuard::spawn(&mut command);
    let pids: Vec<u32> = ["server", "grandchild", "orphan"]
        .iter()
        .map(|name| read_pid(&file(name)))
        .collect();
    // The launcher stays as the server's parent.
    let launcher = parent_of(pids[0]);
    assert!(
        std::fs::read_to_string(format!("/proc/{launcher}/cmdline"))
            .unwrap_or_default()
            .contains(mcp_runtime::sandbox::LAUNCHER_ARG),
        "the server's parent {launcher} is not the launcher"
    );

    // SAFETY: plain kill(2) on our own child: nothing of the gateway runs after this.
    unsafe { libc::kill(gateway.0.id() as i32, libc::SIGKILL) };
    let _ = gateway.0.wait();

    for pid in pids.iter().chain([&launcher]) {
        assert!(
            wait_dead(*pid, Duration::from_secs(10)),
            "process {pid} outlived the host"
        );
    }
}

fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    after.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn server_filesystem_works_inside_a_sandbox_that_allows_its_directory() {
    let entry = support::server_everything();
    let filesystem = entry
        .ancestors()
        .nth(3)
        .unwrap()
        .join("server-filesystem/dist/index.js");
    assert!(filesystem.exists(), "{}", filesystem.display());
    let dir = temp_dir();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "hello from the host").unwrap();
    let config = config(
        dir.path(),
        json!({
            "command": "node",
            "args": [filesystem, files],
            "sandboxEnabled": true,
            "sandbox": {"filesystem": {"allowWrite": [files]}}
        }),
    );
    let config = config.to_str().unwrap();
    let call = |tool: &str, args: Value| {
        // The project is the served directory: server-filesystem takes the client's roots
        // over its arguments.
        mcpr(&[
            "call",
            "--trust-project",
            "--cwd",
            files.to_str().unwrap(),
            "--config",
            config,
            "s",
            tool,
            &args.to_string(),
        ])
    };

    let read = call("read_text_file", json!({"path": files.join("hello.txt")}));
    assert_eq!(read.status.code(), Some(0), "{}", text(&read.stderr));
    assert!(text(&read.stdout).contains("hello from the host"));
    let written = call(
        "write_file",
        json!({"path": files.join("new.txt"), "content": "made inside"}),
    );
    assert_eq!(written.status.code(), Some(0), "{}", text(&written.stderr));
    assert_eq!(
        std::fs::read_to_string(files.join("new.txt")).unwrap(),
        "made inside"
    );
}

#[test]
fn vscode_sandbox_keys_and_variables_are_honoured() {
    let dir = temp_dir();
    let project = dir.path().join("project");
    for sub in [".vscode", "secret", "out"] {
        std::fs::create_dir_all(project.join(sub)).unwrap();
    }
    std::fs::write(project.join("secret/token"), "PROJECT-SECRET").unwrap();
    let report = project.join("out/report");
    let p = project.display();
    let server = script(
        dir.path(),
        &report,
        &format!(
            "cat '{p}/secret/token'; echo\n\
             echo x > '{p}/outside' && echo WROTE-OUTSIDE"
        ),
    );
    let vscode = json!({
        "servers": {"s": {
            "type": "stdio",
            "command": server,
            "sandboxEnabled": true,
            "sandbox": {
                "filesystem": {
                    "allowWrite": ["${workspaceFolder}/out"],
                    "denyRead": ["${workspaceFolder}/secret"]
                },
                "network": {"allowedDomains": ["*.example.com"]}
            }
        }}
    });
    std::fs::write(
        project.join(".vscode/mcp.json"),
        serde_json::to_string_pretty(&vscode).unwrap(),
    )
    .unwrap();

    let out = mcpr(&[
        "call",
        "--trust-project",
        "--cwd",
        project.to_str().unwrap(),
        "s",
        "echo",
        r#"{"text": "still works"}"#,
    ]);
    assert_called(&out);
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(!report.contains("PROJECT-SECRET"), "{report}");
    assert!(!report.contains("WROTE-OUTSIDE"), "{report}");
    assert!(!project.join("outside").exists(), "{report}");
}

#[test]
fn mcpr_add_sandbox_writes_the_keys_and_get_shows_them() {
    let home = temp_dir();
    std::fs::create_dir(home.path().join("project")).unwrap();
    let work = home.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let run = |args: &[&str]| {
        let mut command = Command::new(MCPR);
        command
            .args(args)
            .current_dir(home.path().join("project"))
            .stdin(Stdio::null());
        support::isolate_env(&mut command, home.path());
        command.output().expect("run mcpr")
    };
    let pid_file = work.join("server.pid");
    let added = run(&[
        "add",
        "--sandbox",
        "--allow-write",
        work.to_str().unwrap(),
        "--deny-read",
        "~/.ssh",
        "--allow-domain",
        "*.example.com",
        "boxed",
        "--",
        MCPR,
        "mock",
        "--pid-file",
        pid_file.to_str().unwrap(),
    ]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));
    let written = std::fs::read_to_string(home.path().join(".config/mcpr/mcp.json")).unwrap();
    let written: Value = serde_json::from_str(&written).unwrap();
    let entry = &written["mcpServers"]["boxed"];
    assert_eq!(entry["sandboxEnabled"], true, "{entry}");
    assert_eq!(
        entry["sandbox"]["filesystem"]["allowWrite"],
        json!([work]),
        "{entry}"
    );
    assert_eq!(
        entry["sandbox"]["filesystem"]["denyRead"],
        json!(["~/.ssh"]),
        "{entry}"
    );
    assert_eq!(
        entry["sandbox"]["network"]["allowedDomains"],
        json!(["*.example.com"]),
        "{entry}"
    );

    let shown = run(&["get", "boxed"]);
    let stdout = text(&shown.stdout);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(stdout.contains("sandbox"), "{stdout}");
    assert!(stdout.contains(&work.display().to_string()), "{stdout}");
    assert!(stdout.contains("hidden: ~/.ssh"), "{stdout}");
    assert!(stdout.contains("network: *.example.com"), "{stdout}");

    // The server it added runs in its sandbox: under the launcher.
    let called = run(&["call", "boxed", "echo", r#"{"text": "boxed"}"#]);
    assert_eq!(called.status.code(), Some(0), "{}", text(&called.stderr));
    assert_eq!(text(&called.stdout).trim(), "boxed");
    assert!(pid_file.exists());

    let refused = run(&[
        "add",
        "--sandbox",
        "web",
        "--url",
        "https://example.com/mcp",
    ]);
    assert_ne!(refused.status.code(), Some(0));
    assert!(text(&refused.stderr).contains("--sandbox is for stdio servers"));
}

#[test]
fn a_sandbox_that_cannot_be_set_up_keeps_the_server_from_starting() {
    // A read-only /proc leaves the server's user namespace no way to map its ids: the launcher
    // fails after its own set-up, and the server must not run regardless.
    let dir = temp_dir();
    let started = dir.path().join("started");
    let server = script(dir.path(), &started, "echo started");
    let stderr = refused_before_start(
        dir.path(),
        &server,
        &started,
        json!({"filesystem": {"denyWrite": ["/proc"]}}),
    );
    assert!(
        stderr.contains("mcpr sandbox: cannot") && stderr.contains("the server was not started"),
        "{stderr}"
    );
}

#[test]
fn an_unprivileged_user_gets_the_same_sandbox() {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Path::new("/usr/bin/setpriv");
    if !root || !setpriv.exists() {
        eprintln!("skipped: needs root and setpriv to become an unprivileged user");
        return;
    }
    let dir = temp_dir();
    let root_dir = dir.path();
    for sub in ["home/project", "work", "secret"] {
        std::fs::create_dir_all(root_dir.join(sub)).unwrap();
    }
    std::fs::write(root_dir.join("secret/key"), "NOBODY-SECRET").unwrap();
    let report = root_dir.join("work/report");
    let r = root_dir.display();
    let server = script(
        root_dir,
        &report,
        &format!(
            "id -u\n\
             cat '{r}/secret/key'; echo\n\
             echo x > '{r}/outside' && echo WROTE-OUTSIDE\n\
             echo x > '{r}/work/in' && echo wrote-in"
        ),
    );
    let config = config(
        root_dir,
        json!({
            "command": server,
            "sandboxEnabled": true,
            "sandbox": {"filesystem": {
                "allowWrite": [format!("{r}/work")],
                "denyRead": [format!("{r}/secret")]
            }}
        }),
    );
    // Open to the unprivileged user, as a user's own files would be to them.
    for path in [
        root_dir.to_owned(),
        root_dir.join("work"),
        root_dir.join("home"),
    ] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(
        root_dir.join("home/project"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let home = root_dir.join("home");
    let mut command = Command::new(setpriv);
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", MCPR])
        .args([
            "call",
            "--config",
            config.to_str().unwrap(),
            "s",
            "echo",
            r#"{"text": "still works"}"#,
        ])
        .current_dir(home.join("project"))
        .stdin(Stdio::null());
    support::isolate_env(&mut command, &home);
    let out = command.output().expect("run mcpr as nobody");
    assert_called(&out);
    let report = std::fs::read_to_string(&report).unwrap();
    assert_eq!(report.lines().next(), Some("65534"), "{report}");
    assert!(!report.contains("NOBODY-SECRET"), "{report}");
    assert!(!report.contains("WROTE-OUTSIDE"), "{report}");
    assert!(report.contains("wrote-in"), "{report}");
}

#[test]
fn codex_toml_takes_the_same_keys() {
    let home = temp_dir();
    std::fs::create_dir_all(home.path().join("project")).unwrap();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(
        home.path().join(".codex/config.toml"),
        "[mcp_servers.boxed]\n\
         command = \"/bin/true\"\n\
         sandboxEnabled = true\n\
         [mcp_servers.boxed.sandbox.filesystem]\n\
         denyRead = [\"${userHome}/.ssh\"]\n\
         [mcp_servers.boxed.sandbox.network]\n\
         allowedDomains = [\"api.example.com\"]\n\
         [mcp_servers.broken]\n\
         command = \"/bin/true\"\n\
         sandboxEnabled = true\n\
         [mcp_servers.broken.sandbox.network]\n\
         allowedDomains = \"api.example.com\"\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut command = Command::new(MCPR);
        command
            .args(args)
            .current_dir(home.path().join("project"))
            .stdin(Stdio::null());
        support::isolate_env(&mut command, home.path());
        command.output().expect("run mcpr")
    };
    let shown = run(&["get", "boxed"]);
    let stdout = text(&shown.stdout);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(stdout.contains("network: api.example.com"), "{stdout}");
    assert!(stdout.contains("hidden: ${userHome}/.ssh"), "{stdout}");
    let listed = run(&["list", "--all"]);
    let all = format!("{}{}", text(&listed.stdout), text(&listed.stderr));
    assert!(
        all.contains("broken") && all.contains("sandbox.network.allowedDomains"),
        "{all}"
    );
}
