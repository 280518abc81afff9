//! Spans: one per connection, call, gate wait and reconnect attempt, parented on the
//! request's incoming `traceparent` (or the current context), with the attributes of the
//! OpenTelemetry semantic conventions for MCP. A finished call also feeds the call meters.

use std::time::Instant;

use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue};

use super::{Kind, Outcome, Place};

/// One operation under way: its span (when traces are exported) and what its meters need.
/// Dropped without [`finish`](Self::finish), the span ends as it is.
#[derive(Debug)]
pub(crate) struct Operation {
    span: Option<opentelemetry_sdk::trace::Span>,
    /// For the call meters: the method, server and tool; `None` for what is not a call.
    call: Option<(&'static str, String, Option<String>)>,
    /// When a call started; `None` when it is not metered (reading the clock is not free).
    started: Option<Instant>,
}

/// Whether spans are made (a caller skips work only a span needs when not).
pub(crate) fn tracing() -> bool {
    super::setup::installed().is_some_and(|installed| installed.tracer.is_some())
}

/// Start an operation of `kind` at `place`. Costs an atomic load when telemetry is off.
pub(crate) fn start(kind: Kind<'_>, place: Place<'_>) -> Operation {
    let installed = super::setup::installed();
    let metered = super::meters::metered();
    let call = match kind {
        _ if !metered => None,
        Kind::Tool(tool) => Some(("tools/call", Some(tool))),
        Kind::Prompt(_) => Some(("prompts/get", None)),
        Kind::Resource => Some(("resources/read", None)),
        Kind::Connect | Kind::Gate | Kind::Reconnect => None,
    }
    .map(|(method, tool)| (method, place.server.to_owned(), tool.map(str::to_owned)));
    let span = installed
        .and_then(|installed| installed.tracer.as_ref())
        .map(|tracer| {
            let (name, span_kind, mut attributes) = describe(kind, place.server);
            attributes.push(KeyValue::new("mcpr.server.name", place.server.to_owned()));
            if let Some(transport) = place.transport {
                attributes.push(network_transport(transport));
            }
            if let Some(protocol) = place.protocol {
                attributes.push(KeyValue::new("mcp.protocol.version", protocol.to_owned()));
            }
            tracer
                .span_builder(name)
                .with_kind(span_kind)
                .with_attributes(attributes)
                .start_with_context(tracer, &parent(place))
        });
    let started = call.as_ref().map(|_| Instant::now());
    Operation {
        span,
        call,
        started,
    }
}

/// The span's name, kind and own attributes.
fn describe(kind: Kind<'_>, server: &str) -> (String, SpanKind, Vec<KeyValue>) {
    match kind {
        Kind::Tool(tool) => (
            format!("tools/call {tool}"),
            SpanKind::Client,
            vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", tool.to_owned()),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
            ],
        ),
        Kind::Prompt(prompt) => (
            format!("prompts/get {prompt}"),
            SpanKind::Client,
            vec![
                KeyValue::new("mcp.method.name", "prompts/get"),
                KeyValue::new("gen_ai.prompt.name", prompt.to_owned()),
            ],
        ),
        Kind::Resource => (
            "resources/read".to_owned(),
            SpanKind::Client,
            vec![KeyValue::new("mcp.method.name", "resources/read")],
        ),
        Kind::Connect => (format!("connect {server}"), SpanKind::Client, Vec::new()),
        Kind::Gate => (format!("gate {server}"), SpanKind::Internal, Vec::new()),
        Kind::Reconnect => (
            format!("reconnect {server}"),
            SpanKind::Internal,
            Vec::new(),
        ),
    }
}

/// `network.transport`: `pipe` for stdio, `tcp` for HTTP.
fn network_transport(transport: &str) -> KeyValue {
    let value = if transport == "stdio" { "pipe" } else { "tcp" };
    KeyValue::new("network.transport", value)
}

/// The parent: the incoming `traceparent` when there is one, else the current context.
fn parent(place: Place<'_>) -> Context {
    match place
        .traceparent
        .and_then(|traceparent| remote(traceparent, place.tracestate))
    {
        Some(remote) => Context::new().with_remote_span_context(remote),
        None => Context::current(),
    }
}

/// A W3C `traceparent` (already checked) as a remote span context.
fn remote(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.split('-');
    let _version = parts.next()?;
    let trace_id = TraceId::from_hex(parts.next()?).ok()?;
    let span_id = SpanId::from_hex(parts.next()?).ok()?;
    let flags = u8::from_str_radix(parts.next()?, 16).ok()?;
    let state = tracestate
        .and_then(|state| state.parse::<TraceState>().ok())
        .unwrap_or_default();
    let context = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state);
    context.is_valid().then_some(context)
}

impl Operation {
    /// The `traceparent` to send the server in place of the incoming one: this span's own
    /// context. `None` when no span is made (the incoming context then goes on unchanged).
    pub(crate) fn traceparent(&self) -> Option<String> {
        let context = self.span.as_ref()?.span_context();
        context.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                context.trace_id(),
                context.span_id(),
                context.trace_flags().to_u8()
            )
        })
    }

    /// Run `work` with this span as the current one, so spans it starts become its children.
    pub(crate) async fn within<F: Future>(&self, work: F) -> F::Output {
        use opentelemetry::context::FutureExt as _;
        match &self.span {
            Some(span) => {
                let context =
                    Context::current().with_remote_span_context(span.span_context().clone());
                work.with_context(context).await
            }
            None => work.await,
        }
    }

    /// Record what the connection turned out to be (known only once it is open).
    pub(crate) fn opened(&mut self, transport: &'static str, protocol: &str) {
        if let Some(span) = &mut self.span {
            span.set_attribute(network_transport(transport));
            span.set_attribute(KeyValue::new("mcp.protocol.version", protocol.to_owned()));
        }
    }

    /// End the span with `outcome`, and count a call.
    pub(crate) fn finish(mut self, outcome: Outcome) {
        let error = match outcome {
            Outcome::Ok => None,
            Outcome::ToolError => Some("tool_error"),
            Outcome::Failed(kind) => Some(kind),
        };
        if let Some(span) = &mut self.span {
            if let Some(error) = error {
                span.set_attribute(KeyValue::new("error.type", error));
                span.set_status(Status::error(error));
            }
            span.end();
        }
        if let (Some((method, server, tool)), Some(started)) = (&self.call, self.started) {
            super::meters::call_finished(
                method,
                server,
                tool.as_deref(),
                outcome,
                started.elapsed(),
            );
        }
    }
}
