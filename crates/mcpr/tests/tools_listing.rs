//! What `mcpr tools` prints, through the real binary against `mcpr mock` servers in a home of
//! each test's own: one line per tool cut to a real terminal's width (and whole in a pipe),
//! `--long` with everything, one server configured by three AI tools listed and searched
//! once, and a query that is exactly a tool's name finding that tool first.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::pty::{Pty, screen_lines};
use support::{MCPR, temp_dir, text};

/// The end of the long description: on a terminal it is cut off, in a pipe it is printed.
const LONG_END: &str = "and this is where the long description finally ends";

/// A home with a `project` directory, and a mock's tool file in it.
fn home_with_tools(tools: &Value) -> (tempfile::TempDir, PathBuf) {
    let home = temp_dir();
    std::fs::create_dir_all(home.path().join("project")).unwrap();
    let file = home.path().join("tools.json");
    std::fs::write(&file, tools.to_string()).unwrap();
    (home, file)
}

/// A server entry running the mock with `tool_file`.
fn mock_entry(tool_file: &Path) -> Value {
    json!({"command": MCPR, "args": ["mock", "--tool-file", tool_file]})
}

/// Write `{"mcpServers": servers}` at `home/relative`.
fn write_config(home: &Path, relative: &str, servers: Value) -> PathBuf {
    let path = home.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path
}

/// `mcpr ARGS` on pipes with `home` as its home.
fn mcpr_in(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, home);
    command.env("XDG_STATE_HOME", home.join(".local/state"));
    command.stdin(Stdio::null()).output().expect("run mcpr")
}

fn long_tools() -> Value {
    let long = format!(
        "Reads a file, {} {LONG_END}",
        "with many words that go on and on ".repeat(6)
    );
    json!([
        {"name": "read_file", "description": long},
        {"name": "two_lines", "description": "First line of two\nSecond line, shown with --long"},
    ])
}

#[test]
fn on_a_terminal_each_tool_is_one_line_cut_to_the_width() {
    let (home, tools) = home_with_tools(&long_tools());
    let config = write_config(
        home.path(),
        "mcp.json",
        json!({"files": mock_entry(&tools)}),
    );
    let config = config.to_str().unwrap();

    let (screen, code) = Pty::start(home.path(), 60, &["tools", "--config", config]).finish();
    assert_eq!(code, 0, "{screen}");
    let lines = screen_lines(&screen);
    // The mock's own 12 tools, two of them from the tool file.
    let header = lines.iter().find(|l| l.ends_with("files (12 tools)"));
    assert!(header.is_some(), "a header per server: {lines:#?}");
    let tool_lines: Vec<&String> = lines.iter().filter(|l| l.contains("mcp_files_")).collect();
    assert_eq!(tool_lines.len(), 12, "one line per tool: {lines:#?}");
    for line in &tool_lines {
        assert!(line.chars().count() <= 60, "cut to 60 columns: {line:?}");
    }
    let read_file = tool_lines
        .iter()
        .find(|l| l.contains("mcp_files_read_file"));
    assert!(
        read_file.is_some_and(|l| l.ends_with('…')),
        "{tool_lines:#?}"
    );
    assert!(!screen.contains(LONG_END), "{screen}");
    assert!(!screen.contains("Second line"), "{screen}");

    // --long shows all of it.
    let (screen, code) =
        Pty::start(home.path(), 60, &["tools", "--config", config, "--long"]).finish();
    assert_eq!(code, 0, "{screen}");
    let plain = support::pty::strip_escapes(&screen).replace("\r\n", "\n");
    assert!(plain.contains(LONG_END), "{plain}");
    assert!(plain.contains("Second line, shown with --long"), "{plain}");

    // In a pipe, lines are whole (for grep), and still one per tool.
    let out = mcpr_in(home.path(), &["tools", "--config", config]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains(LONG_END), "{stdout}");
    assert!(!stdout.contains("Second line"), "{stdout}");
    assert_eq!(stdout.lines().count(), 13, "{stdout}");
}

#[test]
fn one_server_configured_by_three_ai_tools_is_listed_and_searched_once() {
    let (home, tools) = home_with_tools(&json!([
        {"name": "get_env", "description": "Returns all environment variables"},
        {"name": "print_env", "description": "Get the environment: get env vars and env values"},
    ]));
    let entry = mock_entry(&tools);
    write_config(home.path(), ".claude.json", json!({"everything": entry}));
    write_config(
        home.path(),
        ".cursor/mcp.json",
        json!({"server-everything": entry}),
    );
    write_config(home.path(), ".gemini/settings.json", json!({"ev": entry}));

    let out = mcpr_in(home.path(), &["tools"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(
        stdout.matches("get_env").count(),
        1,
        "each tool once: {stdout}"
    );
    let header = stdout.lines().next().unwrap_or_default();
    assert!(header.contains("also configured as"), "{stdout}");
    assert!(header.contains("`server-everything` (Cursor)"), "{stdout}");
    assert!(header.contains("`ev` (Gemini CLI)"), "{stdout}");
    assert_eq!(
        stderr.matches("connected in").count(),
        1,
        "one server started: {stderr}"
    );

    // Search: one hit per tool, the copies named once.
    let out = mcpr_in(
        home.path(),
        &["tools", "--search", "environment", "--limit", "5"],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(stdout.lines().count(), 2, "no copies in the hits: {stdout}");
    assert!(stderr.contains("also configured as"), "{stderr}");

    let out = mcpr_in(home.path(), &["tools", "--json"]);
    let listing: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(listing.len(), 12, "the mock's 12 tools, once: {listing:?}");
    let same = listing[0]["sameServerAs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(same.len(), 2, "{listing:?}");
}

#[test]
fn a_query_that_is_exactly_a_tool_name_finds_that_tool_first() {
    let (home, tools) = home_with_tools(&json!([
        {"name": "get_env", "description": "Returns all environment variables"},
        {"name": "print_env", "description": "Get the environment: get env vars and env values"},
    ]));
    let config = write_config(home.path(), "mcp.json", json!({"env": mock_entry(&tools)}));
    let config = config.to_str().unwrap();
    for query in ["get_env", "mcp_env_get_env"] {
        let out = mcpr_in(
            home.path(),
            &["tools", "--config", config, "--search", query],
        );
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        let first = stdout.lines().next().unwrap_or_default();
        assert!(first.contains("mcp_env_get_env"), "{query}: {stdout}");
    }
}
