//! Meters: calls by server, tool and outcome, their latency, reconnects, and the levels a
//! gateway reports (backends by state, held tools, sessions). Tool names become labels only
//! up to [`MAX_TOOL_LABELS`] distinct (server, tool) pairs.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;

use super::{MAX_TOOL_LABELS, Outcome};

/// The tool label of calls past [`MAX_TOOL_LABELS`].
const OTHER_TOOL: &str = "_other";

/// Bucket bounds of the latency histogram, in seconds: a relayed call takes tens of
/// microseconds, a real tool up to minutes.
const LATENCY_BOUNDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    10.0, 60.0,
];

/// The instruments, made once when telemetry is installed.
#[derive(Debug)]
pub(super) struct Meters {
    /// For the gauges a gateway registers.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))]
    meter: Meter,
    calls: Counter<u64>,
    duration: Histogram<f64>,
    reconnects: Counter<u64>,
    /// The (server, tool) pairs already labelled.
    tools: Mutex<Labelled>,
}

impl Meters {
    pub(super) fn new(provider: &SdkMeterProvider) -> Self {
        let meter = provider.meter("mcp-runtime");
        let calls = meter
            .u64_counter("mcpr.calls")
            .with_description("Calls to servers, by server, tool and outcome")
            .build();
        let duration = meter
            .f64_histogram("mcp.client.operation.duration")
            .with_unit("s")
            .with_description("Duration of the MCP requests sent to servers")
            .with_boundaries(LATENCY_BOUNDS.to_vec())
            .build();
        let reconnects = meter
            .u64_counter("mcpr.reconnects")
            .with_description("Reconnect attempts, by server")
            .build();
        Meters {
            meter,
            calls,
            duration,
            reconnects,
            tools: Mutex::default(),
        }
    }

    /// `tool` as a label: itself while the bound allows, else `_other`.
    fn tool_label(&self, server: &str, tool: &str) -> String {
        let mut seen = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        if seen
            .known
            .get(server)
            .is_some_and(|tools| tools.contains(tool))
        {
            return tool.to_owned();
        }
        if seen.count < MAX_TOOL_LABELS {
            seen.count += 1;
            let tools = seen.known.entry(server.to_owned()).or_default();
            tools.insert(tool.to_owned());
            return tool.to_owned();
        }
        OTHER_TOOL.to_owned()
    }
}

/// The (server, tool) pairs already labelled, looked up without allocating.
#[derive(Debug, Default)]
struct Labelled {
    known: HashMap<String, HashSet<String>>,
    count: usize,
}

/// The meters, once installed (see `setup`): once per process, like the rest of telemetry.
static METERS: OnceLock<Meters> = OnceLock::new();

/// Install `meters` (a second install is ignored, as `setup` installs once).
pub(super) fn install(meters: Meters) {
    let _ = METERS.set(meters);
}

/// Whether calls are metered.
pub(super) fn metered() -> bool {
    METERS.get().is_some()
}

fn meters() -> Option<&'static Meters> {
    METERS.get()
}

/// Count a finished call and its latency.
pub(super) fn call_finished(
    method: &'static str,
    server: &str,
    tool: Option<&str>,
    outcome: Outcome,
    elapsed: Duration,
) {
    let Some(meters) = meters() else { return };
    let (outcome, error) = match outcome {
        Outcome::Ok => ("ok", None),
        Outcome::ToolError => ("tool_error", Some("tool_error")),
        Outcome::Failed(kind) => ("error", Some(kind)),
    };
    let mut labels = vec![
        KeyValue::new("mcp.method.name", method),
        KeyValue::new("mcpr.server.name", server.to_owned()),
    ];
    if let Some(tool) = tool {
        labels.push(KeyValue::new(
            "gen_ai.tool.name",
            meters.tool_label(server, tool),
        ));
    }
    let mut timed = labels.clone();
    if let Some(error) = error {
        timed.push(KeyValue::new("error.type", error));
    }
    meters.duration.record(elapsed.as_secs_f64(), &timed);
    labels.push(KeyValue::new("outcome", outcome));
    meters.calls.add(1, &labels);
}

/// Count one reconnect attempt of `server`.
pub(crate) fn reconnect_started(server: &str) {
    if let Some(meters) = meters() {
        let labels = [KeyValue::new("mcpr.server.name", server.to_owned())];
        meters.reconnects.add(1, &labels);
    }
}

/// The levels a gateway reports when the meters are read.
#[cfg(feature = "gateway")]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Levels {
    /// Backends connected.
    pub(crate) connected: u64,
    /// Backends still connecting or reconnecting.
    pub(crate) connecting: u64,
    /// Backends failed or suspended.
    pub(crate) failed: u64,
    /// Tools held until their changed definition is accepted.
    pub(crate) held_tools: u64,
    /// Client sessions open.
    pub(crate) sessions: u64,
}

/// The gauges, kept for as long as the process runs.
#[cfg(feature = "gateway")]
static GAUGES: OnceLock<Vec<Box<dyn std::any::Any + Send + Sync>>> = OnceLock::new();

/// Report `levels()` each time the meters are read. The first caller in a process is the
/// one reported.
#[cfg(feature = "gateway")]
pub(crate) fn observe_levels(levels: impl Fn() -> Levels + Send + Sync + 'static) {
    let Some(meters) = meters() else { return };
    GAUGES.get_or_init(|| gauges(&meters.meter, std::sync::Arc::new(levels)));
}

#[cfg(feature = "gateway")]
fn gauges(
    meter: &Meter,
    levels: std::sync::Arc<dyn Fn() -> Levels + Send + Sync>,
) -> Vec<Box<dyn std::any::Any + Send + Sync>> {
    let backends = levels.clone();
    let held = levels.clone();
    let sessions = levels;
    vec![
        Box::new(
            meter
                .u64_observable_gauge("mcpr.backends")
                .with_description("Backends, by state (connected, connecting, failed)")
                .with_callback(move |observer| {
                    let now = backends();
                    for (state, count) in [
                        ("connected", now.connected),
                        ("connecting", now.connecting),
                        ("failed", now.failed),
                    ] {
                        observer.observe(count, &[KeyValue::new("state", state)]);
                    }
                })
                .build(),
        ),
        Box::new(
            meter
                .u64_observable_gauge("mcpr.tools.held")
                .with_description("Tools held until their changed definition is accepted")
                .with_callback(move |observer| observer.observe(held().held_tools, &[]))
                .build(),
        ),
        Box::new(
            meter
                .u64_observable_gauge("mcpr.sessions")
                .with_description("Client sessions open at the gateway")
                .with_callback(move |observer| observer.observe(sessions().sessions, &[]))
                .build(),
        ),
    ]
}
