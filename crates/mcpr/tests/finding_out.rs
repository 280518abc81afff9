//! Finding out what is configured and how it is doing, with the real `mcpr` binary and real
//! mock servers: `mcpr servers` shows every argument (wrapped to the terminal's width, or in
//! full with `--wide` or in a pipe), `mcpr resource SERVER` lists resource templates,
//! `mcpr status` shows invalid definitions as rows with their reason, and `mcpr get NAME
//! --check` connects and reports.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{MCPR, isolate_env, temp_dir, text};

/// A home with a project directory, and a `--config` file in it.
struct Setup {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    config: PathBuf,
}

impl Setup {
    /// `servers` is the `mcpServers` object of the config file.
    fn new(servers: Value) -> Setup {
        let tmp = temp_dir();
        let home = tmp.path().to_owned();
        std::fs::create_dir_all(home.join("project")).unwrap();
        let config = home.join("mcp.json");
        std::fs::write(&config, json!({ "mcpServers": servers }).to_string()).unwrap();
        Setup {
            _tmp: tmp,
            home,
            config,
        }
    }

    /// `mcpr --strict-config --config FILE ARGS` with `env` set, its output on pipes.
    fn mcpr_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(MCPR);
        command
            .args(["--strict-config", "--config"])
            .arg(&self.config)
            .args(args)
            .current_dir(self.home.join("project"))
            .env_remove("COLUMNS")
            .envs(env.iter().copied())
            .stdin(Stdio::null());
        isolate_env(&mut command, &self.home);
        command.output().expect("run mcpr")
    }

    fn mcpr(&self, args: &[&str]) -> Output {
        self.mcpr_with(args, &[])
    }
}

fn both(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// A mock server whose command line is long: a pid file deep in `dir`.
fn long_server(dir: &Path) -> (Value, String) {
    let pid = dir.join("a/rather/deep/directory/that/the/user/wants/to/see/server.pid");
    std::fs::create_dir_all(pid.parent().unwrap()).unwrap();
    let args = ["mock", "--resources", "--pid-file", pid.to_str().unwrap()];
    let target = std::iter::once(MCPR)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ");
    (json!({"command": MCPR, "args": args}), target)
}

#[test]
fn servers_shows_every_argument_wrapped_to_the_terminal_or_in_full() {
    let tmp = temp_dir();
    let (server, target) = long_server(tmp.path());
    let setup = Setup::new(json!({ "fs": server }));

    // A pipe: nothing is cut.
    let out = setup.mcpr(&["servers"]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(text(&out.stdout).contains(&target), "{}", both(&out));

    // A terminal 80 columns wide: wrapped under its column, nothing lost.
    let out = setup.mcpr_with(&["servers"], &[("COLUMNS", "80")]);
    let shown = text(&out.stdout);
    assert!(shown.lines().all(|l| l.chars().count() <= 80), "{shown}");
    let column = shown.lines().next().unwrap().find("COMMAND").unwrap();
    let pieces: String = shown
        .lines()
        .skip(1)
        .map(|l| {
            l.get(column..)
                .unwrap_or("")
                .split("  ")
                .next()
                .unwrap_or("")
        })
        .collect::<Vec<_>>()
        .concat();
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(squeeze(&pieces), squeeze(&target), "{shown}");

    // --wide: one line per server, in full, whatever the width.
    let out = setup.mcpr_with(&["servers", "--wide"], &[("COLUMNS", "80")]);
    let shown = text(&out.stdout);
    assert_eq!(shown.lines().count(), 2, "{shown}");
    assert!(shown.contains(&target), "{shown}");
}

#[test]
fn resource_lists_the_resource_templates_too() {
    let setup = Setup::new(json!({"m": {"command": MCPR, "args": ["mock", "--resources"]}}));
    let out = setup.mcpr(&["resource", "m"]);
    assert!(out.status.success(), "{}", both(&out));
    let shown = text(&out.stdout);
    let template = shown
        .lines()
        .find(|l| l.contains("/items/{id}"))
        .unwrap_or_else(|| panic!("no template listed:\n{shown}"));
    assert!(template.contains("[template]"), "{shown}");
    assert!(shown.lines().any(|l| l.contains("/public")), "{shown}");

    let out = setup.mcpr(&["resource", "m", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).expect("a JSON array");
    assert!(
        listed.iter().any(|r| r["uriTemplate"]
            .as_str()
            .is_some_and(|u| u.ends_with("/items/{id}"))),
        "{listed:?}"
    );
}

#[test]
fn status_shows_an_invalid_server_as_a_row_with_its_reason() {
    let setup = Setup::new(json!({
        "good": {"command": MCPR, "args": ["mock"]},
        "broken": {"command": 5},
    }));
    let out = setup.mcpr(&["status"]);
    let shown = text(&out.stdout);
    let row = shown
        .lines()
        .find(|l| l.starts_with("broken "))
        .unwrap_or_else(|| panic!("no row for the invalid server:\n{}", both(&out)));
    assert!(row.contains("invalid") && row.contains("mcp.json"), "{row}");
    assert!(
        shown.contains("broken: invalid definition") && shown.contains("`command`"),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("good ") && l.contains("connected"))
    );

    let out = setup.mcpr(&["status", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let broken = listed
        .iter()
        .find(|r| r["name"] == "broken")
        .expect("listed");
    assert_eq!(broken["status"], "invalid");
    assert!(broken["error"].as_str().unwrap().contains("command"));
}

#[test]
fn get_check_connects_and_reports() {
    let setup = Setup::new(json!({
        "good": {"command": MCPR, "args": ["mock", "--tools", "3"]},
        "gone": {"command": "/nonexistent/mcp-server"},
    }));
    let out = setup.mcpr(&["get", "good", "--check"]);
    assert!(out.status.success(), "{}", both(&out));
    let check = text(&out.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("check"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no check line:\n{}", both(&out)));
    assert!(
        check.contains("connected in") && check.contains("tools"),
        "{check}"
    );

    // Without --check nothing is started.
    // (A line, not a word: the checkout's own path may contain "check".)
    let out = setup.mcpr(&["get", "good"]);
    assert!(
        !text(&out.stdout)
            .lines()
            .any(|l| l.trim_start().starts_with("check")),
        "{}",
        both(&out)
    );

    let out = setup.mcpr(&["get", "gone", "--check"]);
    assert_eq!(out.status.code(), Some(3), "{}", both(&out));
    assert!(text(&out.stdout).contains("failed"), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("/nonexistent/mcp-server"),
        "{}",
        both(&out)
    );
}
