//! A pipelined soak of `mcpr serve`: 3,000 `tools/call`s, 64 in flight at every moment, over
//! six backends that fail in every way the mock knows (the scenario is `mcp_testkit::soak`,
//! which the benchmarks run too).
//!
//! Every call is answered exactly once, with its own text; the only failures are the injected
//! ones, told apart by their error text: the crash, the time limit, the 500's body. A call
//! that may have run is never sent twice: each text reaches an HTTP server once, except the
//! calls refused before they ran (a 404 for an expired session), sent once more on the new
//! session.

mod support;

use std::path::Path;

use mcp_testkit::soak::{self, Backend, CALLS, IN_FLIGHT};
use support::{MCPR, temp_dir};

#[test]
fn every_call_is_answered_once_and_only_injected_failures_fail() {
    let scratch = temp_dir();
    let run = soak::run(Path::new(MCPR), scratch.path())
        .unwrap_or_else(|e| panic!("the soak did not start: {e}"));
    eprintln!("{CALLS} calls, {IN_FLIGHT} in flight, in {:?}", run.elapsed);

    assert!(
        run.strays.is_empty(),
        "answers to no call of ours:\n{}",
        run.strays.join("\n")
    );
    assert!(
        run.answered_twice.is_empty(),
        "{}",
        run.answered_twice.join("\n")
    );
    assert_eq!(
        run.lost(),
        0,
        "calls never answered: {}",
        run.stalled
            .as_deref()
            .unwrap_or("the gateway stopped answering")
    );
    let unexpected = run.unexpected();
    let injected = run.injected_by_backend();
    eprintln!("injected failures: {injected:?}");
    assert!(
        unexpected.is_empty(),
        "{} calls failed without an injected fault:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert_eq!(
        injected.get(&Backend::Http500),
        Some(&30),
        "each 500 fails one call"
    );
    assert_eq!(
        injected.get(&Backend::Hang),
        Some(&(CALLS / 50)),
        "every call of the hanging server times out"
    );
    assert!(
        injected.get(&Backend::Crash).is_some_and(|n| *n >= 1),
        "the crashing server crashed"
    );

    // No call that may have run was sent again: a text reaches an HTTP server more than once
    // only when every time but the last it was refused as of an expired session (so never
    // ran), each time on another session.
    for (backend, recorded) in &run.recorded {
        for (text, sessions) in &recorded.sessions_of {
            let refused = recorded.expired_of.get(text).copied().unwrap_or(0);
            assert!(
                sessions.len() <= refused + 1,
                "{backend}: {text} sent {} times, refused {refused} times",
                sessions.len()
            );
            let distinct: std::collections::BTreeSet<String> =
                sessions.iter().map(|s| s.to_string()).collect();
            assert_eq!(
                distinct.len(),
                sessions.len(),
                "{backend}: {text} resent in its session: {sessions:?}"
            );
        }
        match backend {
            Backend::Expire => assert!(
                recorded.initializes > 5,
                "the sessions of `expire` expired again and again"
            ),
            Backend::Drop => assert!(
                recorded.resumed_streams > 0,
                "the streams `drop` cut were resumed"
            ),
            _ => {}
        }
    }
}
