//! `mcpr tools --search` through the real binary against `mcpr mock` servers serving a fixed set
//! of tools: ranked best first, `--limit`, `--json` objects as `mcpr tools --json` plus `score`,
//! and clear refusals for a blank query or a bad limit.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{MCPR, temp_dir};

fn mcpr(args: &[&str]) -> Output {
    let home = support::isolated_home();
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, &home);
    command.stdin(Stdio::null()).output().expect("run mcpr")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Two mock servers, each serving the tools of a tool file.
fn config(dir: &Path) -> PathBuf {
    let files = [
        (
            "files",
            json!([
                {"name": "read_file", "description": "Read the complete contents of a file",
                 "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
                {"name": "read_multiple_files", "description": "Read the contents of several files at once",
                 "inputSchema": {"type": "object", "properties": {"paths": {"type": "array"}}}},
                {"name": "write_file", "description": "Create or overwrite a file with new content"},
            ]),
        ),
        (
            "browser",
            json!([
                {"name": "browser_click", "description": "Click an element on the web page"},
                {"name": "browser_hover", "description": "Hover the mouse over an element on the page"},
                {"name": "browserTakeScreenshot", "description": "Capture an image of the current page"},
            ]),
        ),
    ];
    let mut servers = serde_json::Map::new();
    for (name, tools) in files {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, tools.to_string()).unwrap();
        servers.insert(
            name.into(),
            json!({"command": MCPR, "args": ["mock", "--tool-file", path]}),
        );
    }
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path
}

#[test]
fn search_ranks_best_first_and_limits() {
    let dir = temp_dir();
    let config = config(dir.path());
    let config = config.to_str().unwrap();

    let out = mcpr(&["tools", "--config", config, "--search", "read the file"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let first = stdout.lines().next().unwrap_or_default();
    assert!(first.contains("mcp_files_read_file"), "{stdout}");
    assert!(!stdout.contains("browser_click"), "only matches: {stdout}");

    // camelCase names are split: "screenshot" finds browserTakeScreenshot.
    let out = mcpr(&[
        "tools",
        "--config",
        config,
        "--search",
        "take a screenshot",
        "--limit",
        "1",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("browserTakeScreenshot"), "{stdout}");
}

#[test]
fn search_json_is_the_tools_json_plus_a_score() {
    let dir = temp_dir();
    let config = config(dir.path());
    let config = config.to_str().unwrap();

    let out = mcpr(&["tools", "--config", config, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");

    let out = mcpr(&[
        "tools",
        "--config",
        config,
        "--json",
        "--search",
        "hover over the menu",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hits: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(hits[0]["tool"], "browser_hover", "{hits:?}");
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
    assert!(scores.iter().all(|s| *s > 0.0));
    for hit in &hits {
        let mut without = hit.clone();
        without.as_object_mut().unwrap().remove("score");
        assert!(
            all.contains(&without),
            "same object as `tools --json`: {hit}"
        );
    }

    let out = mcpr(&["tools", "--config", config, "--json", "--search", "zzz qqq"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let none: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(none.is_empty());
}

#[test]
fn blank_query_and_bad_limit_are_refused_clearly() {
    let dir = temp_dir();
    let config = config(dir.path());
    let config = config.to_str().unwrap();

    let out = mcpr(&["tools", "--config", config, "--search", "   "]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--search"),
        "{}",
        text(&out.stderr)
    );

    let out = mcpr(&[
        "tools", "--config", config, "--search", "file", "--limit", "0",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--limit"),
        "{}",
        text(&out.stderr)
    );

    let out = mcpr(&["tools", "--config", config, "--limit", "3"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--search"),
        "{}",
        text(&out.stderr)
    );
}
