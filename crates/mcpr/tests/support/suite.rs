//! Running the official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned) under
//! Node 22, and reading its summary. Shared by the client-side and the server-side runs.

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bound on a whole suite run (a suite gives each client 30 s and runs them in parallel).
pub(crate) const SUITE_BOUND: Duration = Duration::from_secs(600);

/// One suite run at a time: each runs dozens of clients or requests in parallel already, and
/// two at once on a small machine would starve them into the suite's own timeouts.
static ONE_SUITE: Mutex<()> = Mutex::new(());

/// Run the suite at `suite` (its `index.js`) with `args` under Node 22; return its exit status
/// and output (stdout and stderr).
pub(crate) fn run(suite: &Path, args: &[&str]) -> (ExitStatus, String) {
    let _one = ONE_SUITE.lock().unwrap_or_else(|e| e.into_inner());
    let node_bin = super::node22_bin();
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = super::ChildGuard::spawn(
        Command::new(node_bin.join("node"))
            .arg(suite)
            .args(args)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    // Drain both pipes on threads so the suite never blocks on a full pipe.
    let stdout = super::drain(child.0.stdout.take().expect("stdout"));
    let stderr = super::drain(child.0.stderr.take().expect("stderr"));
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
    (status, output)
}

/// One line of a suite summary: `✓ initialize: 1 passed, 0 failed[, N warnings]`.
#[derive(Debug, PartialEq)]
pub(crate) struct ScenarioResult {
    pub ok: bool,
    pub name: String,
    pub passed: u32,
    pub failed: u32,
}

/// The scenario lines after `header` (`=== SUITE SUMMARY ===` for clients, `=== SUMMARY ===`
/// for servers), up to the `Total:` line.
pub(crate) fn summary_lines(output: &str, header: &str) -> Vec<ScenarioResult> {
    let Some((_, summary)) = output.split_once(header) else {
        return Vec::new();
    };
    summary
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Total:"))
        .filter_map(|line| {
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

/// The scenarios a `--requirements` run lists as "Not scored for REVISION", each with the reason
/// in parentheses (`extension`, `pending`, `added-after-release`; empty when none is given).
pub(crate) fn unscored(output: &str) -> Vec<(String, String)> {
    let Some((_, rest)) = output.split_once("Not scored for ") else {
        return Vec::new();
    };
    rest.lines()
        .skip(1)
        .map_while(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("✓ ")
                .or_else(|| line.strip_prefix("✗ "))?;
            Some(match rest.split_once(" (") {
                Some((name, reason)) => (name.to_owned(), reason.trim_end_matches(')').to_owned()),
                None => (rest.trim().to_owned(), String::new()),
            })
        })
        .collect()
}
