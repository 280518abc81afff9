//! Config files written to take the host down: the real `mcpr` binary in a project whose
//! configs are nested 60,000 levels deep must warn about each file and go on with the others.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;
use support::{MCPR, temp_dir};

const LEVELS: usize = 60_000;

/// A home with one good user server and deeply nested files in every format, at user and
/// project level. Returns the files that must be warned about (as `mcpr` shows them).
fn hostile_home(home: &Path) -> Vec<&'static str> {
    let project = home.join("project");
    let write = |path: &str, text: String| {
        let path = if let Some(rest) = path.strip_prefix("~/") {
            home.join(rest)
        } else {
            project.join(path)
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "~/.config/mcpr/mcp.json",
        json!({"mcpServers": {"good": {"command": MCPR, "args": ["mock"]}}}).to_string(),
    );
    let files = [
        (".mcp.json", "[".repeat(LEVELS)),
        (".vscode/mcp.json", "[".repeat(LEVELS)),
        (
            ".codex/config.toml",
            format!("a{} = 1\n", ".a".repeat(LEVELS)),
        ),
        (
            "~/.codex/config.toml",
            format!("x = {}\n", "[".repeat(LEVELS)),
        ),
        (".continue/mcpServers/deep.yaml", "[".repeat(LEVELS)),
        (
            "~/.config/goose/config.yaml",
            format!("{}x\n", "- ".repeat(LEVELS)),
        ),
    ];
    let mut shown = Vec::new();
    for (path, text) in files {
        write(path, text);
        shown.push(path);
    }
    shown
}

fn run(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, home);
    command.stdin(Stdio::null()).output().expect("run mcpr")
}

#[test]
fn deeply_nested_configs_are_warnings_and_the_other_servers_still_work() {
    let dir = temp_dir();
    let files = hostile_home(dir.path());
    for args in [&["servers"][..], &["tools"]] {
        let out = run(dir.path(), args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "mcpr {args:?}: {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(stdout.contains("good"), "mcpr {args:?}: {stdout}\n{stderr}");
        for file in &files {
            assert!(
                stderr
                    .lines()
                    .any(|l| l.contains(&format!("{file}:1:")) && l.contains("nested more than")),
                "mcpr {args:?}: no warning about {file}:\n{stderr}"
            );
        }
    }
}

#[test]
fn config_files_that_are_fifos_or_devices_are_warnings_not_hangs() {
    let dir = temp_dir();
    let home = dir.path();
    let project = home.join("project");
    std::fs::create_dir_all(project.join(".cursor")).unwrap();
    let user = home.join(".config/mcpr/mcp.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        json!({"mcpServers": {"good": {"command": MCPR, "args": ["mock"]}}}).to_string(),
    )
    .unwrap();
    // The attack: a checkout whose `.mcp.json` is a FIFO (opening it blocks until a writer
    // comes) and whose `.cursor/mcp.json` links to a device that never ends.
    let made = Command::new("mkfifo")
        .arg(project.join(".mcp.json"))
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", project.join(".cursor/mcp.json")).unwrap();

    let mut command = Command::new(MCPR);
    command
        .args(["servers", "--trust-project"])
        .current_dir(&project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    support::isolate_env(&mut command, home);
    let mut child = support::ChildGuard::spawn(&mut command);
    let stdout = support::drain(child.0.stdout.take().unwrap());
    let stderr = support::drain(child.0.stderr.take().unwrap());
    let status = support::wait_bounded(
        &mut child,
        std::time::Duration::from_secs(120),
        "mcpr servers",
    );
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "{status:?}\n{stdout}\n{stderr}");
    assert!(stdout.contains("good"), "{stdout}\n{stderr}");
    for file in [".mcp.json", ".cursor/mcp.json"] {
        assert!(
            stderr
                .lines()
                .any(|line| line.contains(file) && line.contains("not a regular file")),
            "no warning for {file}:\n{stderr}"
        );
    }
}

#[test]
fn deep_nesting_after_a_json5_line_end_is_found() {
    let dir = temp_dir();
    let home = dir.path();
    let user = home.join(".config/mcpr/mcp.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        json!({"mcpServers": {"good": {"command": MCPR, "args": ["mock"]}}}).to_string(),
    )
    .unwrap();
    // The attack: JSON5 ends a `//` comment at a carriage return or a Unicode line or
    // paragraph separator too, so what follows is structure to the parser, not comment.
    let files = [
        (".vscode/mcp.json", "\r"),
        (".cursor/mcp.json", "\u{2028}"),
        (".mcp.json", "\u{2029}"),
    ];
    for (path, line_end) in files {
        let path = home.join("project").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("// x{line_end}{}", "[".repeat(LEVELS))).unwrap();
    }
    let out = run(home, &["servers", "--trust-project"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("good"), "{stdout}\n{stderr}");
    for (file, _) in files {
        assert!(
            stderr
                .lines()
                .any(|line| line.contains(file) && line.contains("levels deep")),
            "no warning for {file}:\n{stderr}"
        );
    }
}
