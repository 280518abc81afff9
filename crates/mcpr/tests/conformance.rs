//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned) judging
//! `mcpr conformance` as a client: the suite starts its own test server on localhost, runs our
//! binary with the server's URL, and scores the checks from what it saw on the wire.
//!
//! The suite and Node 22 (which it needs) are installed from npm into `target/peers` on first
//! use. A run that executes nothing prints `Passed: 0/0` and still exits 0, so the counts are
//! asserted, not just the exit status.

mod support;

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bound on one scenario (the suite gives the client 30 s).
const SCENARIO_BOUND: Duration = Duration::from_secs(120);

/// One scenario at a time: `sse-retry` measures the client's reconnection delay to within
/// 50 ms early / 200 ms late, which a busy two-core machine could otherwise disturb.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Run one client scenario and return the suite's summary `(passed, total)` and its output.
fn run_scenario(scenario: &str) -> (u32, u32, String) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
            .args(["--scenario", scenario, "-o"])
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
    let deadline = Instant::now() + SCENARIO_BOUND;
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait for the suite") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "scenario {scenario} still running after {SCENARIO_BOUND:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = format!(
        "{}\n{}",
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default()
    );
    let (passed, total) = summary(&output)
        .unwrap_or_else(|| panic!("no `Passed: N/M` summary for {scenario}:\n{output}"));
    assert!(
        status.success(),
        "the suite failed scenario {scenario} ({status}):\n{output}"
    );
    (passed, total, output)
}

/// The `Passed: X/Y` line of the suite's summary.
fn summary(output: &str) -> Option<(u32, u32)> {
    let line = output
        .lines()
        .find(|l| l.trim_start().starts_with("Passed: "))?;
    let counts = line.trim_start().strip_prefix("Passed: ")?;
    let counts = counts.split([',', ' ']).next()?;
    let (passed, total) = counts.split_once('/')?;
    Some((passed.parse().ok()?, total.parse().ok()?))
}

fn assert_all_passed(scenario: &str) {
    let (passed, total, output) = run_scenario(scenario);
    eprintln!("{scenario}: Passed: {passed}/{total}");
    assert!(total > 0, "{scenario} ran no check:\n{output}");
    assert_eq!(passed, total, "{scenario}:\n{output}");
}

#[test]
fn conformance_initialize() {
    assert_all_passed("initialize");
}

#[test]
fn conformance_tools_call() {
    assert_all_passed("tools_call");
}

#[test]
fn conformance_elicitation_sep1034_client_defaults() {
    assert_all_passed("elicitation-sep1034-client-defaults");
}

#[test]
fn conformance_sse_retry() {
    assert_all_passed("sse-retry");
}

#[test]
fn the_summary_line_is_parsed() {
    assert_eq!(
        summary("x\nPassed: 3/3, 0 failed, 0 warnings\n"),
        Some((3, 3))
    );
    assert_eq!(summary("Passed: 0/0"), Some((0, 0)));
    assert_eq!(summary("nothing"), None);
}
