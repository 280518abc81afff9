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
