//! The official MCP conformance suite (`@modelcontextprotocol/conformance@0.2.0-alpha.12`,
//! pinned) judging `mcpr mock --conformance --http` as a server, in both eras: revision
//! 2026-07-28's requirement set (stateless, per-request `_meta`) and every active scenario of
//! 2025-11-25 (the `initialize` handshake and sessions).
//!
//! The same suite then judges `mcpr serve --servers c --raw-names --http` standing in front of
//! that mock over stdio: what the gateway relays of each era. The scenarios it passes are
//! named below and must keep passing; the rest are printed, not asserted.
//!
//! Both also serve `server-sse-polling`, a scenario the suite keeps pending (run on its own).
//!
//! The suite scores what it sees on the wire. A run that executes nothing still exits 0, so
//! every scenario's check count is asserted, not just the exit status.

mod support;

use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use support::suite::ScenarioResult;

/// The server scenarios revision 2026-07-28 requires (its frozen requirement set).
const REQUIRED_2026: usize = 37;

/// An HTTP server under test (the conformance mock, or the gateway in front of it), killed
/// when dropped.
struct Served {
    _child: support::ChildGuard,
    url: String,
}

impl Served {
    /// `mcpr mock --conformance --http 127.0.0.1:0`.
    fn mock() -> Served {
        let mut command = Command::new(support::MCPR);
        command.args(["mock", "--conformance", "--http", "127.0.0.1:0"]);
        Served::listening(command)
    }

    /// Start `command` and wait for its `listening on URL` line.
    fn listening(mut command: Command) -> Served {
        command.stdin(Stdio::null()).stdout(Stdio::null());
        let (child, url) = support::spawn_listening(&mut command);
        Served { _child: child, url }
    }
}

/// Run the suite's `server` command against `url` with `args`; its exit status and output.
fn run_server_suite(url: &str, args: &[&str]) -> (ExitStatus, String) {
    let mut all = vec!["server", "--url", url];
    all.extend_from_slice(args);
    support::suite::run(&support::conformance_suite_2026(), &all)
}

/// The server suite's summary.
fn summary_lines(output: &str) -> Vec<ScenarioResult> {
    support::suite::summary_lines(output, "=== SUMMARY ===")
}

/// The scenarios a `--requirements` run lists as "Not scored for REVISION", with the reason.
fn unscored(output: &str) -> Vec<(String, String)> {
    support::suite::unscored(output)
}

fn print(results: &[ScenarioResult]) {
    for r in results {
        eprintln!(
            "{} {}: {} passed, {} failed",
            if r.ok { "✓" } else { "✗" },
            r.name,
            r.passed,
            r.failed
        );
    }
}

/// The scenarios of the tasks extension (`io.modelcontextprotocol/tasks`), which the
/// 2026-07-28 set runs unscored; each passes with checks.
const TASKS_2026: [&str; 9] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// The tasks scenario the suite itself skips (its harness does not listen for the
/// notifications yet): it runs, records no check, and must fail none.
const TASKS_SKIPPED_BY_THE_SUITE: &str = "tasks-status-notifications";

/// Revision 2026-07-28: all 37 required server scenarios pass with checks, and so do the
/// scenarios the set runs unscored: still pending (JSON Schema 2020-12, header validation)
/// or of the tasks extension.
#[test]
fn the_conformance_mock_meets_the_2026_07_28_server_requirements() {
    let mock = Served::mock();
    let (status, output) = run_server_suite(&mock.url, &["--requirements", "2026-07-28"]);
    let results = summary_lines(&output);
    print(&results);
    let unscored = unscored(&output);
    let scored: Vec<&ScenarioResult> = results
        .iter()
        .filter(|r| !unscored.iter().any(|(name, _)| *name == r.name))
        .collect();
    assert_eq!(scored.len(), REQUIRED_2026, "{output}");
    for result in &scored {
        assert!(
            result.ok && result.failed == 0 && result.passed > 0,
            "{result:?}:\n{output}"
        );
    }
    for name in TASKS_2026 {
        assert!(
            unscored
                .iter()
                .any(|(n, reason)| n == name && reason == "extension"),
            "{name} is not run as an extension:\n{output}"
        );
    }
    for (name, _) in &unscored {
        let result = results
            .iter()
            .find(|r| r.name == *name)
            .unwrap_or_else(|| panic!("{name} is not in the summary:\n{output}"));
        let checked = result.passed > 0 || name == TASKS_SKIPPED_BY_THE_SUITE;
        assert!(
            result.ok && result.failed == 0 && checked,
            "{result:?}:\n{output}"
        );
    }
    assert!(status.success(), "the suite failed ({status}):\n{output}");
}

/// Revision 2025-11-25 (sessions): every active server scenario the suite has for it passes
/// with checks.
#[test]
fn the_conformance_mock_passes_every_2025_11_25_server_scenario() {
    let mock = Served::mock();
    let (status, output) = run_server_suite(&mock.url, &["--spec-version", "2025-11-25"]);
    let results = summary_lines(&output);
    print(&results);
    assert!(!results.is_empty(), "no scenario ran:\n{output}");
    for name in [
        "server-initialize",
        "tools-call-sampling",
        "dns-rebinding-protection",
    ] {
        assert!(
            results.iter().any(|r| r.name == name),
            "{name} did not run:\n{output}"
        );
    }
    for result in &results {
        assert!(
            result.ok && result.failed == 0 && result.passed > 0,
            "{result:?}:\n{output}"
        );
    }
    assert!(status.success(), "the suite failed ({status}):\n{output}");
}

/// `mcpr serve --servers c --raw-names --http 127.0.0.1:0` in front of `mcpr mock
/// --conformance` over stdio, with its own home and config.
struct Gateway {
    served: Served,
    _dir: tempfile::TempDir,
}

impl Gateway {
    fn start() -> Gateway {
        let dir = support::temp_dir();
        let config = dir.path().join("mcp.json");
        let servers = serde_json::json!({"mcpServers": {"c": {
            "command": support::MCPR,
            "args": ["mock", "--conformance"],
        }}});
        std::fs::write(&config, servers.to_string()).expect("write the config");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("project")).expect("create the home");
        let mut command = Command::new(support::MCPR);
        command
            .args(["--strict-config", "--config"])
            .arg(&config)
            .args([
                "serve",
                "--servers",
                "c",
                "--raw-names",
                "--http",
                "127.0.0.1:0",
            ])
            .current_dir(home.join("project"))
            .env_remove("MCPR_GATEWAY_TOKEN");
        support::isolate_env(&mut command, &home);
        Gateway {
            served: Served::listening(command),
            _dir: dir,
        }
    }
}

/// Assert that every scenario in `expected` ran and passed with checks; print the rest.
fn assert_passing(results: &[ScenarioResult], expected: &[&str], output: &str) {
    let passing = results
        .iter()
        .filter(|r| r.ok && r.failed == 0 && r.passed > 0)
        .count();
    eprintln!("{passing} of {} scenarios pass", results.len());
    for name in expected {
        let result = results
            .iter()
            .find(|r| r.name == *name)
            .unwrap_or_else(|| panic!("{name} did not run:\n{output}"));
        assert!(
            result.ok && result.failed == 0 && result.passed > 0,
            "{result:?}:\n{output}"
        );
    }
}

/// The 2026-07-28 scenarios the gateway passes for the mock behind it: discovery, stateless
/// requests (the client's own capabilities reach the server behind it), headers (the custom
/// `Mcp-Param-*` ones checked by the gateway for the server behind, which gets none), caching,
/// every content type, resources, prompts, completions, the DNS-rebinding guard, and the
/// server's input-required results of a tool call or a prompt passed to the client and
/// answered.
const GATEWAY_2026: [&str; 39] = [
    "server-stateless",
    "http-header-validation",
    "http-custom-header-server-validation",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "sep-2164-resource-not-found",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
    "caching",
    "input-required-result-missing-input-response",
    "input-required-result-unsupported-methods",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-result-type",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-non-tool-request",
];

/// The 2025-11-25 scenarios the gateway passes: logging, resource subscriptions, and the
/// server's sampling and elicitation requests answered by the client over its session among them.
const GATEWAY_2025: [&str; 31] = [
    "completion-complete",
    "dns-rebinding-protection",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "logging-set-level",
    "ping",
    "prompts-get-embedded-resource",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-with-image",
    "prompts-list",
    "resources-list",
    "resources-read-binary",
    "resources-read-text",
    "resources-subscribe",
    "resources-templates-read",
    "resources-unsubscribe",
    "server-initialize",
    "server-session-lifecycle",
    "server-sse-multiple-streams",
    "tools-call-audio",
    "tools-call-elicitation",
    "tools-call-embedded-resource",
    "tools-call-error",
    "tools-call-image",
    "tools-call-mixed-content",
    "tools-call-sampling",
    "tools-call-simple-text",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "tools-list",
];

/// The gateway in front of the conformance mock, judged at 2026-07-28: the scenarios above,
/// and the tasks extension's, passed through (the one the suite skips runs no check).
#[test]
fn the_gateway_relays_2026_07_28_to_its_clients() {
    let gateway = Gateway::start();
    let (_, output) = run_server_suite(&gateway.served.url, &["--requirements", "2026-07-28"]);
    let results = summary_lines(&output);
    print(&results);
    assert_passing(&results, &GATEWAY_2026, &output);
    assert_passing(&results, &TASKS_2026, &output);
    let skipped = results
        .iter()
        .find(|r| r.name == TASKS_SKIPPED_BY_THE_SUITE)
        .unwrap_or_else(|| panic!("{TASKS_SKIPPED_BY_THE_SUITE} did not run:\n{output}"));
    assert!(skipped.ok && skipped.failed == 0, "{skipped:?}:\n{output}");
}

/// The gateway in front of the conformance mock, judged at 2025-11-25 (sessions).
#[test]
fn the_gateway_relays_2025_11_25_to_its_clients() {
    let gateway = Gateway::start();
    let (_, output) = run_server_suite(&gateway.served.url, &["--spec-version", "2025-11-25"]);
    let results = summary_lines(&output);
    print(&results);
    assert_passing(&results, &GATEWAY_2025, &output);
}

/// The suite's `server-sse-polling` scenario (2025-11-25; pending in the suite, so run with
/// the pending ones): its result at `url`, asserted to have run and passed with checks.
fn sse_polling(url: &str) -> ScenarioResult {
    let (_, output) =
        run_server_suite(url, &["--suite", "pending", "--spec-version", "2025-11-25"]);
    let results = summary_lines(&output);
    print(&results);
    let result = results
        .into_iter()
        .find(|r| r.name == "server-sse-polling")
        .unwrap_or_else(|| panic!("server-sse-polling did not run:\n{output}"));
    assert!(
        result.ok && result.failed == 0 && result.passed > 0,
        "{result:?}:\n{output}"
    );
    result
}

/// SSE polling: the mock's event streams open with a priming event (an id, `retry:`), and
/// `test_reconnection` closes its stream before answering; the answer comes on the stream
/// the suite resumes with `Last-Event-ID`. All three checks pass.
#[test]
fn the_conformance_mock_closes_and_resumes_sse_streams() {
    let mock = Served::mock();
    assert_eq!(sse_polling(&mock.url).passed, 3);
}

/// SSE polling through the gateway: its session streams open with a priming event and are
/// resumable; the call's answer (the mock behind it speaks stdio, with no stream to close)
/// comes on the stream it was asked on.
#[test]
fn the_gateway_primes_its_sse_streams() {
    let gateway = Gateway::start();
    sse_polling(&gateway.served.url);
}

/// A Python SDK 2.3 client in `auto` mode: it probes `server/discover`, and prints the
/// protocol it settled on and the answer of one call.
const PY_AUTO_CLIENT: &str = r#"
import asyncio, sys
from mcp.client.client import Client

async def main():
    async with Client(sys.argv[1], mode="auto") as client:
        print("protocol", client.protocol_version)
        result = await client.call_tool("test_simple_text", {})
        print("call", result.content[0].text)

asyncio.run(main())
"#;

/// The Python SDK 2.3 client in `auto` mode negotiates 2026-07-28 with the gateway.
#[test]
fn a_python_sdk_2_3_client_negotiates_2026_07_28_through_the_gateway() {
    let python = support::python_sdk_2();
    let gateway = Gateway::start();
    let script = gateway._dir.path().join("client.py");
    std::fs::write(&script, PY_AUTO_CLIENT).expect("write the client");
    let (out, err) = support::run_client(
        Command::new(python).arg(&script).arg(&gateway.served.url),
        Duration::from_secs(120),
    );
    assert!(out.contains("protocol 2026-07-28"), "{out}\n{err}");
    assert!(
        out.contains("call This is a simple text response for testing."),
        "{out}\n{err}"
    );
}

/// `--raw-names` stands in for one server: a view of two is a usage error, before anything
/// starts.
#[test]
fn raw_names_refuse_a_view_of_more_than_one_server() {
    let dir = support::temp_dir();
    let config = dir.path().join("mcp.json");
    let servers = serde_json::json!({"mcpServers": {
        "a": {"command": support::MCPR, "args": ["mock"]},
        "b": {"command": support::MCPR, "args": ["mock"]},
    }});
    std::fs::write(&config, servers.to_string()).expect("write the config");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("project")).expect("create the home");
    let mut command = Command::new(support::MCPR);
    command
        .args(["--strict-config", "--config"])
        .arg(&config)
        .args(["serve", "--raw-names"])
        .current_dir(home.join("project"))
        .stdin(Stdio::null());
    support::isolate_env(&mut command, &home);
    let output = command.output().expect("run mcpr serve");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--raw-names")
            && stderr.contains("2 servers")
            && stderr.contains("--servers"),
        "{stderr}"
    );
}

#[test]
fn the_summary_is_parsed() {
    let output = "x\n=== SUMMARY ===\n✓ tools-list: 4 passed, 0 failed\n✗ tasks-lifecycle: 1 passed, 8 failed\n\nTotal: 5 passed, 8 failed\n\nNot scored for 2026-07-28: 2 scenario(s) run, 1 failing. These do not affect conformance.\n  ✗ tasks-lifecycle (extension)\n  ✓ json-schema-2020-12 (pending)\n";
    let results = summary_lines(output);
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[1],
        ScenarioResult {
            ok: false,
            name: "tasks-lifecycle".into(),
            passed: 1,
            failed: 8
        }
    );
    assert_eq!(
        unscored(output),
        vec![
            ("tasks-lifecycle".to_owned(), "extension".to_owned()),
            ("json-schema-2020-12".to_owned(), "pending".to_owned())
        ]
    );
}
