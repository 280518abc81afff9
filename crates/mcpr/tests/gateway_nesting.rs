//! A gateway listed in a config that mcpr reads must not start itself without bound. Two
//! guards, each tested on its own against the real binary: discovery skips an entry that plainly
//! runs `mcpr serve` over the same configs, and a gateway nested too deep (counted through the
//! environment of every process mcpr starts) refuses to start, for entries that hide the gateway
//! behind a wrapper.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{MCPR, temp_dir};

/// Write `~/.claude.json` of `home` with these servers.
fn claude_config(home: &Path, servers: Value) {
    std::fs::create_dir_all(home.join("project")).unwrap();
    std::fs::write(
        home.join(".claude.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .unwrap();
}

fn run(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, home);
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcpr");
    child.wait_with_output().expect("wait for mcpr")
}

/// The agent-facing tool names `mcpr tools --json` printed.
fn tool_names(output: &Output) -> Vec<String> {
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "tools --json: {e}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The state `mcpr servers --json` gives `name`.
fn state(home: &Path, name: &str) -> String {
    let out = run(home, &["servers", "--all", "--json"]);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    listing["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name}"))["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn an_entry_that_runs_mcpr_serve_over_the_same_configs_is_skipped_and_never_started() {
    let home = temp_dir();
    let home = home.path();
    // The set-up a new user tries first: `claude mcp add -s user gw -- mcpr serve`. A symlink
    // under another name is the same program.
    let link = home.join("gateway");
    std::os::unix::fs::symlink(MCPR, &link).unwrap();
    claude_config(
        home,
        json!({
            "gw": {"command": MCPR, "args": ["serve"]},
            "gw-http": {"command": MCPR, "args": ["--no-project", "serve", "--http", "127.0.0.1:0"]},
            "linked": {"command": link, "args": ["serve", "--discovery"]},
            "echo": {"command": MCPR, "args": ["mock"]},
        }),
    );

    let out = run(home, &["tools", "--wait", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let names = tool_names(&out);
    assert!(names.contains(&"mcp_echo_echo".to_owned()), "{names:?}");
    // Had any gateway started, its tools (echo's, served again) would be listed under its name.
    assert!(
        names.iter().all(|n| n.starts_with("mcp_echo_")),
        "a gateway was started: {names:?}"
    );
    for name in ["gw", "gw-http", "linked"] {
        let note = stderr
            .lines()
            .find(|l| l.starts_with(&format!("note: skipped {name} (~/.claude.json)")))
            .unwrap_or_else(|| panic!("no note for {name}: {stderr}"));
        assert!(
            note.contains("`mcpr serve` over these same configs"),
            "{note}"
        );
        assert!(state(home, name).starts_with("skipped"), "{name}");
    }
    assert_eq!(state(home, "echo"), "enabled");
}

#[test]
fn a_scoped_gateway_over_its_own_file_stays_and_one_over_the_same_file_is_skipped() {
    let home = temp_dir();
    let home = home.path();
    let scoped = home.join("scoped.json");
    std::fs::write(
        &scoped,
        json!({"mcpServers": {"inner": {"command": MCPR, "args": ["mock"]}}}).to_string(),
    )
    .unwrap();
    let scoped = scoped.to_str().unwrap();
    claude_config(
        home,
        json!({
            "front": {"command": MCPR, "args": ["serve", "--strict-config", "--config", scoped]},
            // Strict, but over the very file that defines it: it would start itself.
            "loop": {"command": MCPR, "args": ["--strict-config", "--config=../.claude.json", "serve"]},
        }),
    );

    let out = run(home, &["tools", "--wait", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = tool_names(&out);
    assert!(
        names.contains(&"mcp_front_mcp_inner_echo".to_owned()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("loop")), "{names:?}");
    assert_eq!(state(home, "front"), "enabled");
    assert!(state(home, "loop").starts_with("skipped"));
}

#[test]
fn a_gateway_hidden_behind_a_wrapper_stops_at_the_nesting_bound() {
    let home = temp_dir();
    let home = home.path();
    // Discovery cannot see through `sh -c`; every start is logged with the depth it was given.
    let starts = home.join("starts.log");
    let errors = home.join("refusals.log");
    let script = format!(
        "echo \"$MCPR_NESTING\" >> '{}'; exec '{MCPR}' serve 2>> '{}'",
        starts.display(),
        errors.display()
    );
    claude_config(
        home,
        json!({
            "wrapped": {"command": "sh", "args": ["-c", script]},
            "echo": {"command": MCPR, "args": ["mock"]},
        }),
    );
    assert_eq!(state(home, "wrapped"), "enabled", "the first guard sees it");

    let out = run(home, &["tools", "--wait", "--json"]);
    assert!(
        out.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = tool_names(&out);
    // Two gateways deep, each serving echo again; the third refused to start.
    assert!(
        names.contains(&"mcp_wrapped_mcp_echo_echo".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"mcp_wrapped_mcp_wrapped_mcp_echo_echo".to_owned()),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.contains("wrapped_mcp_wrapped_mcp_wrapped")),
        "{names:?}"
    );
    // One gateway at each allowed depth; the refused third may be tried again (a failed start
    // is retried once in the other protocol era), never deeper.
    let depths = std::fs::read_to_string(&starts).unwrap();
    let depths: Vec<&str> = depths.lines().collect();
    assert_eq!(&depths[..2], ["1", "2"], "{depths:?}");
    assert!(
        !depths[2..].is_empty() && depths[2..].iter().all(|d| *d == "3"),
        "{depths:?}"
    );
    let refusals = std::fs::read_to_string(&errors).unwrap();
    let refused: Vec<&str> = refusals
        .lines()
        .filter(|l| l.contains("refusing to start a gateway nested 3 levels deep"))
        .collect();
    assert_eq!(refused.len(), depths.len() - 2, "{refusals}");
    assert!(refused[0].contains("--strict-config --config FILE"));
}

#[test]
fn a_gateway_started_too_deep_refuses_with_a_usage_error() {
    let home = temp_dir();
    let home = home.path();
    claude_config(home, json!({"echo": {"command": MCPR, "args": ["mock"]}}));
    // A value that is no number counts as deep as allowed: that gateway starts, and one it
    // would start refuses.
    for (value, refused) in [
        ("2", false),
        ("not-a-number", false),
        ("3", true),
        ("17", true),
    ] {
        let mut command = Command::new(MCPR);
        command.arg("serve").current_dir(home.join("project"));
        support::isolate_env(&mut command, home);
        // An empty stdin ends a gateway that starts at once.
        let out = command
            .env("MCPR_NESTING", value)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if refused {
            assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
            assert!(stderr.contains("refusing to start a gateway"), "{stderr}");
        } else {
            assert!(!stderr.contains("refusing"), "{value}: {stderr}");
        }
    }
}
