//! Trust covers every file that decides what runs: the files a project's servers read
//! (`envFile`, OpenCode's `{file:...}`) and the project files a user's own config reads. Each
//! test runs the real `mcpr` binary in its own home and project; its servers are shell scripts
//! that record their environment in a marker file and then run `mcpr mock`, so a marker that
//! is absent proves that no process was spawned.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use support::{MCPR, isolate_env, temp_dir};

/// A fresh home with an empty project directory inside.
struct Machine {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let tmp = temp_dir();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        let project = root.join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Machine {
            _tmp: tmp,
            home,
            project,
        }
    }

    /// Write `text` to `rel` (`~/...` in the home, else in the project).
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = match rel.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None => self.project.join(rel),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Run `mcpr` in the project, with every config location inside this home.
    fn mcpr(&self, args: &[&str]) -> Output {
        let mut command = Command::new(MCPR);
        command
            .args(args)
            .current_dir(&self.project)
            .stdin(Stdio::null());
        isolate_env(&mut command, &self.home);
        command.output().expect("run mcpr")
    }

    /// How mcpr shows the project's file `rel` (the project is outside the home: absolute).
    fn shown(&self, rel: &str) -> String {
        self.project.join(rel).display().to_string()
    }

    /// Where the server `name` records its environment when it starts.
    fn marker(&self, name: &str) -> PathBuf {
        self.home.join(format!("started-{name}"))
    }

    /// A shell script that records its environment in the marker of `name`, then serves MCP.
    fn script(&self, name: &str) -> String {
        format!(
            "env > '{}'; exec '{MCPR}' mock",
            self.marker(name).display()
        )
    }

    /// The environment the server `name` started with, if it started; the marker is removed.
    fn started(&self, name: &str) -> Option<String> {
        let marker = self.marker(name);
        let text = std::fs::read_to_string(&marker).ok()?;
        std::fs::remove_file(&marker).unwrap();
        Some(text)
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn all(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The line of `mcpr servers` that shows `name`.
fn servers_row(machine: &Machine, name: &str) -> String {
    let out = machine.mcpr(&["servers"]);
    assert!(out.status.success(), "{}", all(&out));
    text(&out.stdout)
        .lines()
        .find(|line| line.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row for {name}:\n{}", all(&out)))
        .to_owned()
}

fn assert_pending(machine: &Machine, name: &str, detail: &str) {
    let row = servers_row(machine, name);
    assert!(
        row.contains("pending approval") && row.contains(detail),
        "{name}: {row}"
    );
    let out = machine.mcpr(&["tools"]);
    assert!(
        machine.started(name).is_none(),
        "{name} was started: {}",
        all(&out)
    );
}

#[test]
fn a_changed_env_file_asks_again_and_starts_nothing() {
    let m = Machine::new();
    m.write(
        ".vscode/mcp.json",
        &serde_json::json!({"servers": {"probe": {
            "type": "stdio",
            "command": "/bin/sh",
            "args": ["-c", m.script("probe")],
            "envFile": "${workspaceFolder}/.env",
        }}})
        .to_string(),
    );
    m.write(".env", "GREETING=hello\n");
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    let env = m
        .started("probe")
        .unwrap_or_else(|| panic!("{}", all(&out)));
    assert!(env.contains("GREETING=hello"), "{env}");

    // A pull changes nothing but the `.env` the trusted config reads.
    m.write(".env", "GREETING=hello\nMCPR_INJECTED=from-the-pull\n");
    assert_pending(&m, "probe", ".env changed since the project was trusted");
    let out = m.mcpr(&["call", "probe", "echo", r#"{"text": "x"}"#]);
    assert!(!out.status.success(), "{}", all(&out));
    assert!(all(&out).contains(".env"), "{}", all(&out));
    assert!(m.started("probe").is_none());

    // Trusting the new content (`mcpr trust` lists the file) starts it again, with the new
    // values.
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    assert!(text(&out.stdout).contains(".env"), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    let env = m
        .started("probe")
        .unwrap_or_else(|| panic!("{}", all(&out)));
    assert!(env.contains("MCPR_INJECTED=from-the-pull"), "{env}");
}

#[test]
fn a_changed_file_substitution_asks_again_and_starts_nothing() {
    let m = Machine::new();
    m.write(
        "opencode.json",
        r#"{"mcp": {"probe": {"type": "local", "command": ["/bin/sh", "-c", "{file:run.sh}"], "environment": {"TOKEN": "{file:token}"}}}}"#,
    );
    m.write("run.sh", &m.script("probe"));
    m.write("token", "t0");
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    let env = m
        .started("probe")
        .unwrap_or_else(|| panic!("{}", all(&out)));
    assert!(env.contains("TOKEN=t0"), "{env}");

    // The file spliced into `command` changes to run something else.
    m.write("run.sh", &m.script("evil"));
    assert_pending(&m, "probe", "run.sh changed since the project was trusted");
    assert!(m.started("evil").is_none());
    // Likewise a file spliced into `environment`.
    m.write("run.sh", &m.script("probe"));
    m.write("token", "t1");
    assert_pending(&m, "probe", "token changed since the project was trusted");
}

/// The cloned repository has no MCP config at all, only a `.env` that sets a marker variable;
/// the user's own Cursor config names one server `server` whose `envFile` is `env_file`.
fn user_config_with_env_file(env_file: &str) -> Machine {
    let m = Machine::new();
    m.write(".env", "MCPR_INJECTED=from-the-repository\n");
    m.write("~/.cursor/.env", "OWN=mine\n");
    m.write(
        "~/.cursor/mcp.json",
        &serde_json::json!({"mcpServers": {"server": {
            "command": "/bin/sh",
            "args": ["-c", m.script("server")],
            "envFile": env_file,
        }}})
        .to_string(),
    );
    m
}

#[test]
fn a_relative_env_file_of_a_user_config_is_read_next_to_it() {
    let m = user_config_with_env_file(".env");
    let out = m.mcpr(&["tools"]);
    let env = m
        .started("server")
        .unwrap_or_else(|| panic!("{}", all(&out)));
    assert!(
        !env.contains("MCPR_INJECTED"),
        "the project's .env was loaded"
    );
    assert!(env.contains("OWN=mine"), "{env}");
}

#[test]
fn a_user_config_reads_a_project_env_file_only_once_the_project_is_trusted() {
    let m = user_config_with_env_file("${workspaceFolder}/.env");
    let out = m.mcpr(&["tools"]);
    assert!(
        m.started("server").is_none(),
        "the untrusted project's .env was loaded: {}",
        all(&out)
    );
    assert!(
        text(&out.stderr).contains(&format!(
            "server (reads {} from the untrusted project)",
            m.shown(".env")
        )),
        "{}",
        all(&out)
    );
    let reason = format!("reads {} from the untrusted project", m.shown(".env"));
    assert_pending(&m, "server", &reason);

    // Once the user trusts the project, the server starts with the project's `.env`.
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    assert!(text(&out.stdout).contains(".env"), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    let env = m
        .started("server")
        .unwrap_or_else(|| panic!("{}", all(&out)));
    assert!(env.contains("MCPR_INJECTED=from-the-repository"), "{env}");

    // ... and the trust binds to that `.env`.
    m.write(".env", "MCPR_INJECTED=changed\n");
    assert_pending(&m, "server", ".env changed since the project was trusted");
}

/// The cloned repository has no MCP config, only an executable `bin/server` that records its
/// start in the marker of `server`; the user's own Cursor config names one server `server`
/// with the given fields.
fn user_config_running(server: serde_json::Value) -> Machine {
    let m = Machine::new();
    let script = m.write(
        "bin/server",
        &format!("#!/bin/sh\n{}\n", m.script("server")),
    );
    make_executable(&script);
    m.write(
        "~/.cursor/mcp.json",
        &serde_json::json!({"mcpServers": {"server": server}}).to_string(),
    );
    m
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Before the project is trusted, `server` waits naming `file` and nothing runs; `mcpr trust`
/// (in a project without MCP config of its own) lets it start.
fn runs_only_once_trusted(m: &Machine, file: &str) {
    let out = m.mcpr(&["tools"]);
    assert!(
        m.started("server").is_none(),
        "the untrusted project's {file} was run: {}",
        all(&out)
    );
    let reason = format!("runs {} from the untrusted project", m.shown(file));
    assert!(
        text(&out.stderr).contains(&format!("server ({reason})")),
        "{}",
        all(&out)
    );
    assert_pending(m, "server", &reason);
    let out = m.mcpr(&["call", "server", "echo", r#"{"text": "x"}"#]);
    assert!(!out.status.success(), "{}", all(&out));
    assert!(all(&out).contains(&reason), "{}", all(&out));
    assert!(m.started("server").is_none());

    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    assert!(text(&out.stdout).contains(file), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    assert!(m.started("server").is_some(), "{}", all(&out));
}

#[test]
fn a_user_config_runs_a_workspace_program_only_once_the_project_is_trusted() {
    let m = user_config_running(serde_json::json!({
        "command": "${workspaceFolder}/bin/server",
    }));
    runs_only_once_trusted(&m, "bin/server");

    // The trust binds to the program's content: a pull that changes it asks again.
    let script = m.write(
        "bin/server",
        &format!("#!/bin/sh\n{}\n", m.script("server").replace("env", "set")),
    );
    make_executable(&script);
    assert_pending(
        &m,
        "server",
        "bin/server changed since the project was trusted",
    );
}

#[test]
fn a_user_config_runs_a_relative_program_in_the_project_only_once_trusted() {
    let m = user_config_running(serde_json::json!({
        "command": "./bin/../bin/server",
        "cwd": "${workspaceFolder}",
    }));
    runs_only_once_trusted(&m, "bin/server");
}

#[test]
fn a_user_config_runs_a_program_found_on_a_project_path_only_once_trusted() {
    let m = user_config_running(serde_json::json!({
        "command": "server",
        "env": {"PATH": "${workspaceFolder}/bin:/usr/bin:/bin"},
    }));
    runs_only_once_trusted(&m, "bin/server");
}

#[test]
fn a_user_config_runs_a_link_into_the_project_only_once_trusted() {
    let m = Machine::new();
    let script = m.write(
        "bin/server",
        &format!("#!/bin/sh\n{}\n", m.script("server")),
    );
    make_executable(&script);
    let link = m.home.join("bin/server");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&script, &link).unwrap();
    m.write(
        "~/.cursor/mcp.json",
        &serde_json::json!({"mcpServers": {"server": {"command": link}}}).to_string(),
    );
    let out = m.mcpr(&["tools"]);
    assert!(m.started("server").is_none(), "{}", all(&out));
    assert_pending(&m, "server", "from the untrusted project");
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    assert!(m.started("server").is_some(), "{}", all(&out));
}

#[test]
fn a_user_config_gives_an_interpreter_a_project_script_only_once_trusted() {
    let m = user_config_running(serde_json::json!({
        "command": "sh",
        "args": ["${workspaceFolder}/bin/server"],
    }));
    runs_only_once_trusted(&m, "bin/server");
}

#[test]
fn a_user_config_gives_an_interpreter_a_relative_project_script_only_once_trusted() {
    let m = user_config_running(serde_json::json!({
        "command": "/bin/sh",
        "args": ["-e", "./bin/server"],
        "cwd": "${workspaceFolder}",
    }));
    runs_only_once_trusted(&m, "bin/server");
}

#[test]
fn a_project_directory_as_an_argument_is_not_code() {
    let m = Machine::new();
    m.write("README", "data, not code\n");
    m.write(
        "~/.cursor/mcp.json",
        &serde_json::json!({"mcpServers": {"server": {
            "command": "/bin/sh",
            "args": ["-c", m.script("server"), "sh", "${workspaceFolder}"],
            "cwd": "${workspaceFolder}",
        }}})
        .to_string(),
    );
    let out = m.mcpr(&["tools"]);
    assert!(m.started("server").is_some(), "{}", all(&out));
}

#[test]
fn the_trust_review_and_start_up_show_project_text_escaped() {
    // Escape sequences that would retitle the window and clear the screen, hiding what is
    // about to be trusted, in a server's name, its command and the name of a file it reads.
    const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let m = Machine::new();
    m.write(
        ".vscode/mcp.json",
        &serde_json::json!({"servers": {format!("s{EVIL}"): {
            "type": "stdio",
            "command": format!("/nonexistent/x{EVIL}"),
            "envFile": format!("${{workspaceFolder}}/e{EVIL}.env"),
        }}})
        .to_string(),
    );
    m.write(&format!("e{EVIL}.env"), "A=1\n");
    for args in [&["trust"][..], &["status"], &["tools"]] {
        let out = m.mcpr(args);
        let shown = all(&out);
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "raw escape from `mcpr {}`: {shown:?}",
            args[0]
        );
        assert!(shown.contains("s\\u{1b}]0;pwned\\u{7}"), "{shown}");
    }
    // A pull changes the file: the note that names it is escaped too.
    m.write(&format!("e{EVIL}.env"), "A=2\n");
    let out = m.mcpr(&["servers"]);
    let shown = all(&out);
    assert!(shown.contains("changed since you trusted it"), "{shown}");
    assert!(!shown.contains('\u{1b}'), "raw escape: {shown:?}");
}

/// That the user-level `server` waits naming the project's `file` and that `mcpr trust` binds
/// it; nothing is run (the interpreter need not exist).
fn waits_for_the_project(m: &Machine, file: &str) {
    let reason = format!("runs {} from the untrusted project", m.shown(file));
    assert_pending(m, "server", &reason);
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    assert!(text(&out.stdout).contains(file), "{}", all(&out));
}

#[test]
fn a_project_script_after_a_flag_value_is_bound() {
    let m = Machine::new();
    let outside = m.write("~/preload.js", "// the user's own\n");
    m.write("bin/server.js", "// the project's\n");
    // The attack: the interpreter's first file argument is a flag's value outside the project;
    // the script it runs is the project's.
    m.write(
        "~/.cursor/mcp.json",
        &serde_json::json!({"mcpServers": {"server": {
            "command": "node",
            "args": ["-r", outside.to_string_lossy(), "${workspaceFolder}/bin/server.js"],
        }}})
        .to_string(),
    );
    waits_for_the_project(&m, "bin/server.js");
}

#[test]
fn a_project_file_in_an_interpreter_flag_is_bound() {
    let m = Machine::new();
    let outside = m.write("~/server.js", "// the user's own\n");
    m.write("bin/hook.js", "// the project's\n");
    // The attack: `--require=FILE` runs the project's file before the user's own script.
    m.write(
        "~/.cursor/mcp.json",
        &serde_json::json!({"mcpServers": {"server": {
            "command": "node",
            "args": ["--require=${workspaceFolder}/bin/hook.js", outside.to_string_lossy()],
        }}})
        .to_string(),
    );
    waits_for_the_project(&m, "bin/hook.js");
}

#[test]
fn a_changed_bash_env_file_asks_again_and_runs_nothing() {
    let m = Machine::new();
    // The project's server is bash, which sources `BASH_ENV` before its command; the server
    // starts in the project, where `./env.sh` resolves.
    m.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"probe": {
            "command": "/bin/bash",
            "args": ["-c", format!("exec '{MCPR}' mock")],
            "env": {"BASH_ENV": "./env.sh", "LOG_LEVEL": "./log.txt"},
        }}})
        .to_string(),
    );
    m.write(
        "env.sh",
        &format!("env > '{}'\n", m.marker("probe").display()),
    );
    m.write("log.txt", "not code\n");
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    assert!(
        text(&out.stdout).contains(&m.shown("env.sh")),
        "{}",
        all(&out)
    );
    // A value that names a file but loads nothing binds nothing.
    assert!(!text(&out.stdout).contains("log.txt"), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    assert!(m.started("probe").is_some(), "{}", all(&out));
    m.write("log.txt", "changed\n");
    let out = m.mcpr(&["tools"]);
    assert!(m.started("probe").is_some(), "{}", all(&out));

    // A pull changes only the file bash sources: nothing of it runs until it is trusted.
    m.write(
        "env.sh",
        &format!("env > '{}'\n", m.marker("evil").display()),
    );
    assert_pending(&m, "probe", "env.sh changed since the project was trusted");
    assert!(m.started("evil").is_none(), "the changed env.sh was run");
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    assert!(m.started("evil").is_some(), "{}", all(&out));
}

#[test]
fn a_user_config_loading_project_code_through_its_env_waits_and_trust_lists_it() {
    let m = Machine::new();
    m.write("hook.js", "// the project's\n");
    m.write("lib/pkg/mod.py", "X = 1\n");
    m.write(
        "~/.cursor/mcp.json",
        &serde_json::json!({"mcpServers": {
            "node-hook": {"command": "node", "env": {"NODE_OPTIONS": "--require=${workspaceFolder}/hook.js"}},
            "python-path": {"command": "python3", "env": {"PYTHONPATH": "${workspaceFolder}/lib"}},
        }})
        .to_string(),
    );
    for (name, named) in [("node-hook", "hook.js"), ("python-path", "lib")] {
        let reason = format!("runs {} from the untrusted project", m.shown(named));
        let row = servers_row(&m, name);
        assert!(
            row.contains("pending approval") && row.contains(&reason),
            "{row}"
        );
    }
    let out = m.mcpr(&["trust"]);
    assert!(out.status.success(), "{}", all(&out));
    for file in ["hook.js", "lib/pkg/mod.py"] {
        assert!(text(&out.stdout).contains(&m.shown(file)), "{}", all(&out));
    }
}

/// A project with a Claude Code `.mcp.json` and a VS Code `.vscode/mcp.json`, one server in
/// each, trusted and started once.
fn two_trusted_files() -> Machine {
    let m = Machine::new();
    m.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"claude-side": {
            "command": "/bin/sh", "args": ["-c", m.script("claude-side")],
        }}})
        .to_string(),
    );
    m.write(
        ".vscode/mcp.json",
        &serde_json::json!({"servers": {"vscode-side": {
            "type": "stdio", "command": "/bin/sh", "args": ["-c", m.script("vscode-side")],
        }}})
        .to_string(),
    );
    let out = m.mcpr(&["trust", "--yes"]);
    assert!(out.status.success(), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    for name in ["claude-side", "vscode-side"] {
        assert!(m.started(name).is_some(), "{name}: {}", all(&out));
    }
    m
}

#[test]
fn an_edited_project_file_holds_only_its_own_servers() {
    let m = two_trusted_files();
    // A pull rewrites `.mcp.json`: its server now runs something else.
    m.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"claude-side": {
            "command": "/bin/sh", "args": ["-c", m.script("claude-side")],
            "env": {"MCPR_INJECTED": "from-the-pull"},
        }}})
        .to_string(),
    );
    let row = servers_row(&m, "vscode-side");
    assert!(!row.contains("pending"), "{row}");
    assert_pending(
        &m,
        "claude-side",
        ".mcp.json changed since the project was trusted",
    );
    // `assert_pending` ran `mcpr tools`: the unchanged file's server started, the edited one's
    // did not.
    assert!(m.started("vscode-side").is_some());
    let out = m.mcpr(&["call", "claude-side", "echo", r#"{"text": "x"}"#]);
    assert!(!out.status.success(), "{}", all(&out));
    assert!(all(&out).contains(".mcp.json"), "{}", all(&out));
    assert!(m.started("claude-side").is_none(), "the edited server ran");

    // A new project file is held too, whatever the trusted files say.
    m.write(
        ".cursor/mcp.json",
        &serde_json::json!({"mcpServers": {"cursor-side": {
            "command": "/bin/sh", "args": ["-c", m.script("cursor-side")],
        }}})
        .to_string(),
    );
    assert_pending(&m, "cursor-side", ".cursor/mcp.json changed since");
    assert!(m.started("vscode-side").is_some());

    // Trusting again starts the edited server, with its new values.
    let out = m.mcpr(&["trust", "--yes"]);
    assert!(out.status.success(), "{}", all(&out));
    let out = m.mcpr(&["tools"]);
    let env = m
        .started("claude-side")
        .unwrap_or_else(|| panic!("{}", all(&out)));
    assert!(env.contains("MCPR_INJECTED=from-the-pull"), "{env}");
    assert!(m.started("cursor-side").is_some(), "{}", all(&out));
}

#[test]
fn a_trust_record_without_per_file_digests_still_holds_the_whole_project_on_a_change() {
    let m = two_trusted_files();
    // A store written before per-file digests were kept: one hash for the whole project.
    let store = m.home.join(".local/share/mcpr/trust.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    for record in doc["projects"].as_object_mut().unwrap().values_mut() {
        record.as_object_mut().unwrap().remove("digests");
    }
    std::fs::write(&store, doc.to_string()).unwrap();
    let out = m.mcpr(&["tools"]);
    assert!(m.started("vscode-side").is_some(), "{}", all(&out));
    m.write(".mcp.json", r#"{"mcpServers": {}}"#);
    let row = servers_row(&m, "vscode-side");
    assert!(row.contains("pending approval"), "{row}");
}
