//! A real OTLP/HTTP receiver on loopback for the telemetry tests: it accepts `POST /v1/traces`
//! and `POST /v1/metrics` in protobuf or JSON, decodes them with the OpenTelemetry protocol
//! definitions (`opentelemetry-proto`), and keeps what arrived for the test to look at.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};

/// One span as received.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub attributes: BTreeMap<String, String>,
    /// `service.name` of the resource that sent it.
    pub service: String,
}

/// What the receiver got, decoded.
#[derive(Debug, Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    /// `protobuf` or `json`, per request.
    encodings: Vec<&'static str>,
}

/// The receiver; it stops with the test process.
pub(crate) struct Collector {
    pub port: u16,
    received: Arc<Mutex<Received>>,
}

impl Collector {
    /// Listen on a free loopback port.
    pub(crate) fn start() -> Collector {
        let received = Arc::new(Mutex::new(Received::default()));
        let shared = received.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                tx.send(listener.local_addr().expect("address").port())
                    .expect("send port");
                let app = axum::Router::new()
                    .route("/v1/traces", axum::routing::post(traces))
                    .route("/v1/metrics", axum::routing::post(metrics))
                    .with_state(shared);
                axum::serve(listener, app).await.expect("serve");
            });
        });
        let port = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the receiver started");
        Collector { port, received }
    }

    /// The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<Span> {
        let received = self.received.lock().unwrap();
        let mut spans = Vec::new();
        for request in &received.traces {
            for resource in &request.resource_spans {
                let service = resource
                    .resource
                    .as_ref()
                    .map(|r| attributes(&r.attributes))
                    .and_then(|a| a.get("service.name").cloned())
                    .unwrap_or_default();
                for scope in &resource.scope_spans {
                    for span in &scope.spans {
                        spans.push(Span {
                            name: span.name.clone(),
                            trace_id: hex(&span.trace_id),
                            span_id: hex(&span.span_id),
                            parent_span_id: hex(&span.parent_span_id),
                            attributes: attributes(&span.attributes),
                            service: service.clone(),
                        });
                    }
                }
            }
        }
        spans
    }

    /// Wait (bounded) for a span named `name`.
    pub(crate) fn wait_span(&self, name: &str) -> Span {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(span) = self.spans().into_iter().find(|s| s.name == name) {
                return span;
            }
            let names: Vec<String> = self.spans().into_iter().map(|s| s.name).collect();
            assert!(Instant::now() < deadline, "no span `{name}`; got {names:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The names of the metrics received, and every attribute (key=value) on their points.
    pub(crate) fn metrics(&self) -> (Vec<String>, Vec<String>) {
        let received = self.received.lock().unwrap();
        let mut names = Vec::new();
        let mut labels = Vec::new();
        for request in &received.metrics {
            for resource in &request.resource_metrics {
                for scope in &resource.scope_metrics {
                    for metric in &scope.metrics {
                        names.push(metric.name.clone());
                        labels.extend(point_attributes(metric));
                    }
                }
            }
        }
        (names, labels)
    }

    /// Wait (bounded) until a metric named `name` arrived.
    pub(crate) fn wait_metric(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.metrics().0.iter().any(|n| n == name) {
            assert!(
                Instant::now() < deadline,
                "no metric `{name}`: {:?}",
                self.metrics().0
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// How each request was encoded (`protobuf` or `json`).
    pub(crate) fn encodings(&self) -> Vec<&'static str> {
        self.received.lock().unwrap().encodings.clone()
    }
}

/// Decode an OTLP body as its content type says.
fn decode<M: prost::Message + Default + serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    body: &[u8],
) -> Option<(M, &'static str)> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        serde_json::from_slice(body).ok().map(|m| (m, "json"))
    } else {
        M::decode(body).ok().map(|m| (m, "protobuf"))
    }
}

async fn traces(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    match decode::<ExportTraceServiceRequest>(&headers, &body) {
        Some((request, encoding)) => {
            let mut received = received.lock().unwrap();
            received.traces.push(request);
            received.encodings.push(encoding);
            StatusCode::OK
        }
        None => StatusCode::BAD_REQUEST,
    }
}

async fn metrics(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    match decode::<ExportMetricsServiceRequest>(&headers, &body) {
        Some((request, encoding)) => {
            let mut received = received.lock().unwrap();
            received.metrics.push(request);
            received.encodings.push(encoding);
            StatusCode::OK
        }
        None => StatusCode::BAD_REQUEST,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn value_text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes
        .iter()
        .map(|kv| (kv.key.clone(), value_text(kv.value.as_ref())))
        .collect()
}

/// `key=value` of every data point of `metric`.
fn point_attributes(metric: &opentelemetry_proto::tonic::metrics::v1::Metric) -> Vec<String> {
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    let each = |attrs: &[KeyValue]| -> Vec<String> {
        attributes(attrs)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    };
    match &metric.data {
        Some(Data::Sum(sum)) => sum
            .data_points
            .iter()
            .flat_map(|p| each(&p.attributes))
            .collect(),
        Some(Data::Gauge(gauge)) => gauge
            .data_points
            .iter()
            .flat_map(|p| each(&p.attributes))
            .collect(),
        Some(Data::Histogram(h)) => h
            .data_points
            .iter()
            .flat_map(|p| each(&p.attributes))
            .collect(),
        _ => Vec::new(),
    }
}
