//! The official MCP conformance suites (`@modelcontextprotocol/conformance`, pinned) judging
//! `mcpr conformance` as a client: a suite starts its own test server on localhost, runs our
//! binary with the server's URL, and scores the checks from what it saw on the wire.
//!
//! Two suites run: 0.1.16 (protocol up to 2025-11-25) and 0.2.0-alpha.12 (revision 2026-07-28).
//! Both and Node 22 (which they need) are installed from npm into `target/peers` on first use.
//! A run that executes nothing still exits 0, so every scenario's check count is asserted, not
//! just the exit status. The scenarios come from the suites themselves: 0.1.16's `--suite all`
//! must list all 26 client scenarios (22 of them OAuth); 0.2.0-alpha.12's `--requirements`
//! sets decide which scenarios a revision requires.

mod support;

use std::path::Path;
use std::process::ExitStatus;

use support::suite::{ScenarioResult, run as run_node};

/// Every client scenario of the 0.1.16 suite, OAuth included: 4 core + 22 `auth/*`.
const SCENARIOS: usize = 26;

/// The client suite's summary.
fn summary_lines(output: &str) -> Vec<ScenarioResult> {
    support::suite::summary_lines(output, "=== SUITE SUMMARY ===")
}

/// Run `client --command "mcpr conformance"` with `args` (which pick the scenarios); the
/// results are also written under a temporary directory, for a person debugging a failure.
fn run_client(suite: &Path, args: &[&str]) -> (ExitStatus, String) {
    let out_dir = support::temp_dir();
    let command = format!("{} conformance", support::MCPR);
    let out = out_dir.path().display().to_string();
    let mut all = vec!["client", "--command", &command, "--verbose", "-o", &out];
    all.extend_from_slice(args);
    run_node(suite, &all)
}

/// Run the 0.1.16 suite's `--suite all` and return its output; it must exit 0.
fn run_suite() -> String {
    let (status, output) = run_client(&support::conformance_suite(), &["--suite", "all"]);
    assert!(status.success(), "the suite failed ({status}):\n{output}");
    output
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

/// The client scenarios of a suite, as its `list --client` names them (`  - name [versions]`).
fn client_scenarios(suite: &Path) -> Vec<String> {
    let (status, output) = run_node(suite, &["list", "--client"]);
    assert!(
        status.success(),
        "list --client failed ({status}):\n{output}"
    );
    listed_scenarios(&output)
}

fn listed_scenarios(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|line| {
            let name = line.trim().strip_prefix("- ")?;
            Some(name.split_whitespace().next()?.to_owned())
        })
        .collect()
}

/// The scenarios a `--requirements` run lists as "Not scored for REVISION" (extensions, and
/// scenarios added after the revision's release): they run, but do not decide conformance.
fn unscored(output: &str) -> Vec<String> {
    support::suite::unscored(output)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// Run the 0.2.0-alpha.12 suite's `--requirements REVISION` and check every scenario it runs,
/// those it scores for the revision and the extensions it runs beside them alike: at least
/// one check passed, none failed, and the suite's own verdict (its exit status) is a pass.
/// Returns the summary lines.
fn requirements_pass(revision: &str) -> Vec<ScenarioResult> {
    let suite = support::conformance_suite_2026();
    let (status, output) = run_client(&suite, &["--requirements", revision]);
    let results = summary_lines(&output);
    let unscored = unscored(&output);
    for result in &results {
        eprintln!(
            "{} {}: {} passed, {} failed{}",
            if result.ok { "✓" } else { "✗" },
            result.name,
            result.passed,
            result.failed,
            if unscored.contains(&result.name) {
                " (not scored)"
            } else {
                ""
            }
        );
    }
    assert!(
        results.iter().any(|r| !unscored.contains(&r.name)),
        "no scenario scored for {revision}:\n{output}"
    );
    for result in &results {
        assert!(
            result.ok && result.failed == 0 && result.passed > 0,
            "{revision}: {result:?}:\n{output}"
        );
    }
    assert!(status.success(), "the suite failed ({status}):\n{output}");
    results
}

/// Every scenario the 2026-07-28 suite runs for a client at revision 2025-11-25 (its own
/// requirement set, extensions included, nothing picked by hand) passes with checks.
#[test]
fn conformance_2026_suite_passes_the_2025_11_25_requirements() {
    let results = requirements_pass("2025-11-25");
    let listed = client_scenarios(&support::conformance_suite_2026());
    // The requirement set is the suite's: every scenario it ran is one `list --client` knows.
    for result in &results {
        assert!(listed.contains(&result.name), "{result:?} not listed");
    }
}

/// Revision 2026-07-28: every scenario its requirement set runs, extensions included, passes
/// with checks.
#[test]
fn conformance_2026_suite_passes_the_2026_07_28_requirements() {
    requirements_pass("2026-07-28");
}

/// Every client scenario the 2026-07-28 suite has (`list --client`: the core ones, every
/// revision's, OAuth and the extensions: DPoP, workload identity, skills), run with
/// `--suite all`: each ran, passed at least one check and failed none.
#[test]
fn conformance_2026_suite_passes_every_client_scenario() {
    let suite = support::conformance_suite_2026();
    let listed = client_scenarios(&suite);
    assert!(listed.len() >= 48, "{listed:?}");
    let (status, output) = run_client(&suite, &["--suite", "all"]);
    let results = summary_lines(&output);
    for name in &listed {
        let result = results.iter().find(|r| &r.name == name);
        assert!(
            result.is_some_and(|r| r.ok && r.failed == 0 && r.passed > 0),
            "{name}: {result:?}:\n{output}"
        );
    }
    assert!(status.success(), "the suite failed ({status}):\n{output}");
}

/// `mcpr skill` against the suite's skill servers, as a person would run it (`--url`): the
/// listing reads no skill file, and a skill whose SKILL.md does not match the server's listing
/// (another digest, another front matter) is refused before any other file of it is read.
#[test]
fn mcpr_skill_lists_without_reading_and_refuses_a_tampered_skill() {
    let suite = support::conformance_suite_2026();
    let list = format!("{} skill --url", support::MCPR);
    let load = format!("{} skill pdf-processing --url", support::MCPR);
    for (scenario, command) in [
        ("sep-2640-client-no-prefetch", &list),
        ("sep-2640-client-verify-digest", &load),
        ("sep-2640-client-verify-size", &load),
        ("sep-2640-client-verify-frontmatter", &load),
    ] {
        let (_, output) = run_node(
            &suite,
            &["client", "--command", command, "--scenario", scenario],
        );
        assert!(
            output.contains("Passed: 1/1, 0 failed"),
            "{scenario} with `{command}`:\n{output}"
        );
    }
}

#[test]
fn the_suite_lists_are_parsed() {
    let list = "Client scenarios (test against a client):\n  - initialize [2025-06-18]\n  \
                - auth/dpop [extension]\n";
    assert_eq!(listed_scenarios(list), ["initialize", "auth/dpop"]);
    let output = "=== SUITE SUMMARY ===\n\n✓ initialize: 1 passed, 0 failed\n\nTotal: 1 passed\n\n\
                  Not scored for 2026-07-28: 2 scenario(s) run, 1 failing. These do not affect \
                  conformance.\n  ✓ auth/client-credentials-jwt (extension)\n  \
                  ✗ auth/dpop (extension)\n";
    assert_eq!(
        unscored(output),
        ["auth/client-credentials-jwt", "auth/dpop"]
    );
    assert!(unscored("Total: 1 passed").is_empty());
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
