//! OpenTelemetry: spans for connections and calls, and meters, exported over OTLP when the
//! standard `OTEL_*` environment variables ask for it (feature `otel`).
//!
//! A host opts in once, inside its tokio runtime, with [`Telemetry::from_env`]; until then,
//! and always without the feature, every span and meter below is a no-op that costs a call
//! one atomic load. Nothing is exported unless an OTLP endpoint is configured
//! (`OTEL_EXPORTER_OTLP_ENDPOINT` or the per-signal `…_TRACES_ENDPOINT` /
//! `…_METRICS_ENDPOINT`), and `OTEL_SDK_DISABLED=true` turns export off whatever else is set.
//!
//! What is recorded follows the OpenTelemetry semantic conventions for MCP where they exist:
//!
//! - spans `tools/call {tool}`, `prompts/get {prompt}`, `resources/read` (kind client, with
//!   `mcp.method.name`, `gen_ai.tool.name` / `gen_ai.prompt.name`, `gen_ai.operation.name`,
//!   `network.transport`, `mcp.protocol.version`, `error.type`, and `mcpr.server.name`),
//!   `connect {server}` per connection and handshake, `reconnect {server}` around each
//!   reconnect attempt, and `gate {server}` for time a call waits at the start-up gate;
//! - meters `mcp.client.operation.duration` (seconds), `mcpr.calls` (by server, tool and
//!   outcome), `mcpr.reconnects`, `mcpr.backends` (by state), `mcpr.tools.held` and
//!   `mcpr.sessions`.
//!
//! A span's parent is the request's `traceparent` (a gateway's client, `TRACEPARENT` for
//! `mcpr call`), and the server is sent the span's own context in its place, so a backend
//! continues the same trace under the call's span. No argument value, resource URI, header
//! or environment value is ever recorded; tool names become metric labels only up to a bound
//! ([`MAX_TOOL_LABELS`]), past which they are counted as `_other`.
//!
//! The exporters batch in the background with bounded queues: a collector that is down or
//! hangs loses spans, never slows a call, and holds up a host's exit by at most
//! [`Telemetry::shutdown`]'s bound.

#[cfg(feature = "otel")]
mod export_client;
#[cfg(feature = "otel")]
mod meters;
#[cfg(not(feature = "otel"))]
mod off;
#[cfg(feature = "otel")]
mod setup;
#[cfg(feature = "otel")]
mod spans;

#[cfg(feature = "otel")]
pub use setup::{Telemetry, TelemetryError, TelemetryOptions, prometheus_text};

#[cfg(feature = "otel")]
pub(crate) use meters::reconnect_started;
#[cfg(all(feature = "otel", feature = "gateway"))]
pub(crate) use meters::{Levels, observe_levels};
#[cfg(not(feature = "otel"))]
pub(crate) use off::{Operation, reconnect_started, start, tracing};
#[cfg(feature = "otel")]
pub(crate) use spans::{Operation, start, tracing};

/// The most distinct (server, tool) pairs that become metric labels; later ones are counted
/// under the tool label `_other`, so a client that makes up names cannot grow the series
/// without bound.
pub const MAX_TOOL_LABELS: usize = 512;

/// What a span or a call's meters describe.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) enum Kind<'a> {
    /// `tools/call` of this tool.
    Tool(&'a str),
    /// `prompts/get` of this prompt.
    Prompt(&'a str),
    /// `resources/read` (the URI is never recorded: it may carry what the host keeps secret).
    Resource,
    /// Opening the connection: the process or HTTP session, and the handshake.
    Connect,
    /// Waiting at the start-up gate for the server to connect.
    Gate,
    /// One reconnect attempt.
    Reconnect,
}

/// Where a span sits: the server, how it is reached, and the request's incoming trace
/// context (its W3C `traceparent` and `tracestate`, already checked).
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct Place<'a> {
    /// The server's configured name.
    pub(crate) server: &'a str,
    /// `stdio`, `http` or `sse`, when known.
    pub(crate) transport: Option<&'static str>,
    /// The protocol revision the connection speaks, when known.
    pub(crate) protocol: Option<&'a str>,
    /// The parent's `traceparent`; `None`: the current context's span, if any.
    pub(crate) traceparent: Option<&'a str>,
    /// The parent's `tracestate`.
    pub(crate) tracestate: Option<&'a str>,
}

/// How an operation ended.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) enum Outcome {
    /// It succeeded.
    Ok,
    /// The tool answered with `isError: true`.
    ToolError,
    /// It failed; the error's kind (`timeout`, `cancelled`, a JSON-RPC code, ...).
    Failed(&'static str),
}
