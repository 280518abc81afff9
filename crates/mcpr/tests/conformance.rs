//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned) judging
//! `mcpr conformance` as a client: the suite starts its own test server on localhost, runs our
//! binary with the server's URL, and scores the checks from what it saw on the wire.
//!
//! The suite and Node 22 (which it needs) are installed from npm into `target/peers` on first
//! use. A run that executes nothing still exits 0, so every scenario's check count is
//! asserted, not just the exit status: `--suite all` must list all 26 client scenarios (22 of
//! them OAuth), each with at least one passed check and none failed or warned.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bound on the whole suite (the suite gives each client 30 s and runs them in parallel).
const SUITE_BOUND: Duration = Duration::from_secs(300);

/// Every client scenario of the pinned suite, OAuth included: 4 core + 22 `auth/*`.
const SCENARIOS: usize = 26;

/// Run `--suite all` and return its output (stdout and stderr).
fn run_suite() -> String {
    let suite = support::conformance_suite();
    let node_bin = support::node22_bin();
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out_dir = support::temp_dir();
    let mut child = support::ChildGuard::spawn(
        Command::new(node_bin.join("node"))
            .arg(&suite)
            .args(["client", "--command"])
            .arg(format!("{} conformance", support::MCPR))
            .args(["--suite", "all", "--verbose", "-o"])
            .arg(out_dir.path())
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    // Drain both pipes on threads so the suite never blocks on a full pipe.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = read(child.0.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.0.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + SUITE_BOUND;
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait for the suite") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the suite is still running after {SUITE_BOUND:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = format!(
        "{}\n{}",
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default()
    );
    assert!(status.success(), "the suite failed ({status}):\n{output}");
    output
}

/// One line of the suite summary: `✓ auth/basic-cimd: 13 passed, 0 failed[, N warnings]`.
#[derive(Debug, PartialEq)]
struct ScenarioResult {
    ok: bool,
    name: String,
    passed: u32,
    failed: u32,
}

fn summary_lines(output: &str) -> Vec<ScenarioResult> {
    let Some((_, summary)) = output.split_once("=== SUITE SUMMARY ===") else {
        return Vec::new();
    };
    summary
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let (ok, rest) = if let Some(rest) = line.strip_prefix("✓ ") {
                (true, rest)
            } else {
                (false, line.strip_prefix("✗ ")?)
            };
            let (name, counts) = rest.rsplit_once(": ")?;
            let mut numbers = counts
                .split(", ")
                .filter_map(|part| part.split_whitespace().next()?.parse::<u32>().ok());
            Some(ScenarioResult {
                ok,
                name: name.to_owned(),
                passed: numbers.next()?,
                failed: numbers.next()?,
            })
        })
        .collect()
}

#[test]
fn conformance_suite_all_passes_every_scenario() {
    let output = run_suite();
    let results = summary_lines(&output);
    for result in &results {
        eprintln!(
            "{} {}: {} passed, {} failed",
            if result.ok { "✓" } else { "✗" },
            result.name,
            result.passed,
            result.failed
        );
    }
    assert_eq!(
        results.len(),
        SCENARIOS,
        "expected {SCENARIOS} scenarios:\n{output}"
    );
    let auth = results
        .iter()
        .filter(|r| r.name.starts_with("auth/"))
        .count();
    assert_eq!(auth, 22, "{output}");
    for result in &results {
        assert!(
            result.ok && result.failed == 0 && result.passed > 0,
            "{result:?}:\n{output}"
        );
    }
}

#[test]
fn the_suite_summary_is_parsed() {
    let output = "noise\n=== SUITE SUMMARY ===\n\n✓ initialize: 1 passed, 0 failed\n\
                  ✗ auth/x: 1 passed, 3 failed, 2 warnings\n    - detail\n\nTotal: 2 passed\n";
    assert_eq!(
        summary_lines(output),
        [
            ScenarioResult {
                ok: true,
                name: "initialize".into(),
                passed: 1,
                failed: 0
            },
            ScenarioResult {
                ok: false,
                name: "auth/x".into(),
                passed: 1,
                failed: 3
            }
        ]
    );
    assert!(summary_lines("Passed: 0/0").is_empty());
}
