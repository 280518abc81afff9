//! Counts and bounds, each configurable by an environment variable.

use std::time::Duration;

/// One knob: its variable, default and meaning (printed by `--help`).
pub(crate) const KNOBS: &[(&str, &str, &str)] = &[
    (
        "BENCH_CALLS",
        "5000",
        "echo calls per client and mode (section 1)",
    ),
    ("BENCH_WARMUP", "200", "warm-up calls before timing"),
    (
        "BENCH_IN_FLIGHT",
        "64",
        "concurrent calls in the in-flight mode",
    ),
    (
        "BENCH_ROUNDS",
        "2",
        "interleaved rounds of section 1; the best round counts",
    ),
    (
        "BENCH_STARTUP",
        "1,10,50",
        "server counts for start-up (section 2)",
    ),
    (
        "BENCH_STARTUP_RUNS",
        "3",
        "runs per start-up figure (median)",
    ),
    (
        "BENCH_ONESHOT_RUNS",
        "10",
        "runs per one-shot CLI figure (median)",
    ),
    (
        "BENCH_GATEWAY_CALLS",
        "2000",
        "sequential calls, direct and through `mcpr serve`",
    ),
    (
        "BENCH_HTTP_SESSIONS",
        "1,8,32",
        "concurrent sessions of the HTTP gateway section",
    ),
    (
        "BENCH_HTTP_ERA",
        "legacy",
        "what the HTTP gateway section's mock speaks: `legacy` (sessions, event streams) or \
         `2026-07-28` (stateless, plain JSON answers)",
    ),
    (
        "BENCH_HTTP_OTEL",
        "0",
        "1: the HTTP gateway section adds a gateway exporting spans and meters over OTLP to a \
         loopback sink, and its added p50 against the gateway without export",
    ),
    (
        "BENCH_IN_FLIGHT_MS",
        "500",
        "how long each in-flight run of section 4 lasts",
    ),
    ("BENCH_IDLE", "200", "idle connections for the RSS figure"),
    (
        "BENCH_CALLGRIND_CALLS",
        "1000",
        "calls counted under callgrind",
    ),
    (
        "BENCH_FIRSTBYTE_RUNS",
        "5",
        "runs of `mcpr tools` with the real servers (section 7)",
    ),
    (
        "BENCH_HANG_BOUND_MS",
        "5000",
        "how long the TS SDK may wait for a hanging server",
    ),
    ("BENCH_TIMEOUT_S", "180", "bound of every measurement step"),
    (
        "BENCH_INSTALL_TIMEOUT_S",
        "900",
        "bound of each peer install (npm, pip)",
    ),
    (
        "BENCH_BUILD_TIMEOUT_S",
        "1800",
        "bound of `cargo build --release -p mcpr`",
    ),
    (
        "BENCH_ONLY",
        "all",
        "sections to run: client,startup,oneshot,callname,gateway,http,memory,callgrind,soak \
         (and firstbyte, which runs only when named)",
    ),
    (
        "MCPR_BIN",
        "",
        "use this mcpr binary instead of building target/release/mcpr",
    ),
    (
        "BENCH_PEERS_DIR",
        "<target>/peers",
        "where peers are installed",
    ),
];

#[derive(Debug, Clone)]
pub struct Settings {
    pub calls: usize,
    pub warmup: usize,
    pub in_flight: usize,
    pub rounds: usize,
    pub startup_counts: Vec<usize>,
    pub startup_runs: usize,
    pub oneshot_runs: usize,
    pub gateway_calls: usize,
    pub http_sessions: Vec<usize>,
    /// The mock's flags in the HTTP gateway section, beyond `--http ADDR`.
    pub http_mock_flags: Vec<&'static str>,
    /// Whether the HTTP gateway section measures a gateway with OTLP export on too.
    pub http_otel: bool,
    pub in_flight_window: Duration,
    pub idle: usize,
    pub callgrind_calls: usize,
    pub firstbyte_runs: usize,
    pub hang_bound: Duration,
    pub step: Duration,
    pub install: Duration,
    pub build: Duration,
    only: Option<Vec<String>>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn number(name: &str, default: usize) -> usize {
    match var(name) {
        None => default,
        Some(value) => value.trim().parse().unwrap_or_else(|_| {
            eprintln!("warning: {name}={value} is not a number; using {default}");
            default
        }),
    }
}

/// A comma-separated list of positive numbers.
pub(crate) fn parse_counts(text: &str) -> Vec<usize> {
    text.split(',')
        .filter_map(|part| part.trim().parse().ok())
        .filter(|n| *n > 0)
        .collect()
}

impl Settings {
    pub fn from_env() -> Settings {
        let startup_counts = var("BENCH_STARTUP")
            .map(|v| parse_counts(&v))
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| vec![1, 10, 50]);
        Settings {
            calls: number("BENCH_CALLS", 5000).max(1),
            warmup: number("BENCH_WARMUP", 200).max(1),
            in_flight: number("BENCH_IN_FLIGHT", 64).max(1),
            rounds: number("BENCH_ROUNDS", 2).max(1),
            startup_counts,
            startup_runs: number("BENCH_STARTUP_RUNS", 3).max(1),
            oneshot_runs: number("BENCH_ONESHOT_RUNS", 10).max(1),
            gateway_calls: number("BENCH_GATEWAY_CALLS", 2000).max(1),
            http_sessions: var("BENCH_HTTP_SESSIONS")
                .map(|v| parse_counts(&v))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| vec![1, 8, 32]),
            http_mock_flags: match var("BENCH_HTTP_ERA").as_deref() {
                Some("2026-07-28") => vec!["--era", "2026-07-28", "--json-response"],
                _ => Vec::new(),
            },
            http_otel: var("BENCH_HTTP_OTEL").is_some_and(|v| v.trim() == "1"),
            in_flight_window: Duration::from_millis(number("BENCH_IN_FLIGHT_MS", 500).max(1) as u64),
            idle: number("BENCH_IDLE", 200).max(1),
            callgrind_calls: number("BENCH_CALLGRIND_CALLS", 1000).max(1),
            firstbyte_runs: number("BENCH_FIRSTBYTE_RUNS", 5).max(1),
            hang_bound: Duration::from_millis(number("BENCH_HANG_BOUND_MS", 5000) as u64),
            step: Duration::from_secs(number("BENCH_TIMEOUT_S", 180).max(1) as u64),
            install: Duration::from_secs(number("BENCH_INSTALL_TIMEOUT_S", 900).max(1) as u64),
            build: Duration::from_secs(number("BENCH_BUILD_TIMEOUT_S", 1800).max(1) as u64),
            only: var("BENCH_ONLY")
                .filter(|v| v.trim() != "all")
                .map(|v| v.split(',').map(|s| s.trim().to_lowercase()).collect()),
        }
    }

    /// Whether section `name` is selected by `BENCH_ONLY` (`firstbyte` only when named).
    pub fn runs(&self, name: &str) -> bool {
        match &self.only {
            Some(only) => only.iter().any(|o| o == name),
            None => name != "firstbyte",
        }
    }

    /// Whether every section runs.
    pub fn all_sections(&self) -> bool {
        self.only.is_none()
    }

    /// The counts as printed in the report.
    pub fn summary(&self) -> String {
        format!(
            "BENCH_CALLS={} BENCH_WARMUP={} BENCH_IN_FLIGHT={} BENCH_ROUNDS={} BENCH_STARTUP={} \
             BENCH_STARTUP_RUNS={} BENCH_ONESHOT_RUNS={} BENCH_GATEWAY_CALLS={} \
             BENCH_IN_FLIGHT_MS={} BENCH_IDLE={} BENCH_CALLGRIND_CALLS={}",
            self.calls,
            self.warmup,
            self.in_flight,
            self.rounds,
            self.startup_counts
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(","),
            self.startup_runs,
            self.oneshot_runs,
            self.gateway_calls,
            self.in_flight_window.as_millis(),
            self.idle,
            self.callgrind_calls
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_skip_garbage_and_zero() {
        assert_eq!(parse_counts("1, 10,x,0,50"), vec![1, 10, 50]);
    }
}
