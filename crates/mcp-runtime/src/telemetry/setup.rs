//! Installing telemetry from the standard OpenTelemetry environment variables: the tracer and
//! meter providers, their OTLP exporters, and the Prometheus registry the gateway's `/metrics`
//! reads; and shutting them down within a bound.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider};

use super::export_client::ExportClient;

/// The longest [`Telemetry::shutdown`] waits for the last spans and meters to leave.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(3);

/// The instrumentation scope of everything mcpr records.
const SCOPE: &str = "mcp-runtime";

/// What is installed, once per process.
pub(super) struct Installed {
    /// `None` when traces are not exported: spans are then not made at all.
    pub(super) tracer: Option<SdkTracer>,
    registry: Option<prometheus::Registry>,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// What is installed, if telemetry was.
pub(super) fn installed() -> Option<&'static Installed> {
    INSTALLED.get()
}

/// What a host asks of [`Telemetry::from_env`].
#[derive(Debug, Clone)]
pub struct TelemetryOptions {
    /// The service name when `OTEL_SERVICE_NAME` does not set one.
    pub service_name: String,
    /// Keep the meters readable as Prometheus text ([`prometheus_text`]) whether or not they
    /// are exported (the HTTP gateway's `/metrics`).
    pub prometheus: bool,
}

impl TelemetryOptions {
    /// Export as configured, no Prometheus text, under `service_name` by default.
    pub fn new(service_name: impl Into<String>) -> Self {
        TelemetryOptions {
            service_name: service_name.into(),
            prometheus: false,
        }
    }

    /// With the meters kept readable as Prometheus text.
    pub fn with_prometheus(mut self) -> Self {
        self.prometheus = true;
        self
    }
}

/// Why telemetry could not be installed. Messages name the variable, never its value
/// (an endpoint may carry credentials).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// Telemetry was installed before in this process.
    #[error("telemetry is already installed in this process")]
    AlreadyInstalled,
    /// Not called from inside a tokio runtime, which sends the exports.
    #[error("telemetry must be installed from inside a tokio runtime")]
    NoRuntime,
    /// A protocol other than `http/protobuf` or `http/json`.
    #[error("{variable}: only http/protobuf and http/json are supported")]
    Protocol {
        /// The variable that asked for it.
        variable: &'static str,
    },
    /// The exporter of a signal could not be built. What the exporter said is left out: it
    /// quotes the endpoint, which may hold credentials.
    #[error(
        "the OTLP {signal} exporter cannot be set up: check the endpoint, headers and timeout \
         in the OTEL_EXPORTER_OTLP_* variables"
    )]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
    },
    /// The shared HTTP client could not be built.
    #[error("the HTTP client for OTLP export cannot be set up: {0}")]
    Client(String),
    /// The Prometheus reader could not be built.
    #[error("the Prometheus reader cannot be set up: {0}")]
    Prometheus(String),
}

/// Installed telemetry; [`shutdown`](Self::shutdown) sends what is still queued.
pub struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.tracer_provider.is_some())
            .field("meters", &self.meter_provider.is_some())
            .finish()
    }
}

/// A variable's value, if set and not empty.
fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Whether `name` is set to `true` (case-insensitive).
fn var_true(name: &str) -> bool {
    var(name).is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
}

/// Whether a signal is exported: an endpoint for it, and its exporter not `none`.
fn exports(endpoint: &str, exporter: &str) -> bool {
    let chosen = var(exporter).is_none_or(|value| !value.trim().eq_ignore_ascii_case("none"));
    chosen && (var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() || var(endpoint).is_some())
}

/// The protocol of a signal: its own variable, else the general one, else `http/protobuf`
/// (the exporters' own default follows their cargo features, not the specification).
fn protocol(signal_variable: &'static str) -> Result<Protocol, TelemetryError> {
    let (variable, value) = match var(signal_variable) {
        Some(value) => (signal_variable, value),
        None => match var("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some(value) => ("OTEL_EXPORTER_OTLP_PROTOCOL", value),
            None => return Ok(Protocol::HttpBinary),
        },
    };
    match value.trim() {
        "http/protobuf" => Ok(Protocol::HttpBinary),
        "http/json" => Ok(Protocol::HttpJson),
        _ => Err(TelemetryError::Protocol { variable }),
    }
}

impl Telemetry {
    /// Install telemetry as the `OTEL_*` variables configure it: spans exported when an OTLP
    /// endpoint for traces is set, meters when one for metrics is (or kept for Prometheus
    /// when `options.prometheus`). Call once, from inside the tokio runtime that will send the
    /// exports. With nothing configured, nothing is recorded.
    pub fn from_env(options: TelemetryOptions) -> Result<Telemetry, TelemetryError> {
        if INSTALLED.get().is_some() {
            return Err(TelemetryError::AlreadyInstalled);
        }
        let disabled = var_true("OTEL_SDK_DISABLED");
        let traces =
            !disabled && exports("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER");
        let metrics = !disabled
            && exports(
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "OTEL_METRICS_EXPORTER",
            );
        let client = if traces || metrics {
            let runtime =
                tokio::runtime::Handle::try_current().map_err(|_| TelemetryError::NoRuntime)?;
            let client = crate::net::shared_client().map_err(TelemetryError::Client)?;
            Some(ExportClient::new(client, runtime))
        } else {
            None
        };
        let resource = resource(&options.service_name);
        let tracer_provider = match (&client, traces) {
            (Some(client), true) => Some(tracer_provider(client.clone(), resource.clone())?),
            _ => None,
        };
        let (meter_provider, registry) =
            meter_provider(client.filter(|_| metrics), options.prometheus, resource)?;
        if tracer_provider.is_none() && meter_provider.is_none() {
            // Nothing to record: every operation stays a no-op.
            return Ok(Telemetry {
                tracer_provider,
                meter_provider,
            });
        }
        let tracer = tracer_provider
            .as_ref()
            .map(|provider| provider.tracer(SCOPE));
        let installed = Installed { tracer, registry };
        if INSTALLED.set(installed).is_err() {
            return Err(TelemetryError::AlreadyInstalled);
        }
        // Meters only when they are exported or served as Prometheus text.
        if let Some(provider) = &meter_provider {
            super::meters::install(super::meters::Meters::new(provider));
        }
        Ok(Telemetry {
            tracer_provider,
            meter_provider,
        })
    }

    /// Whether spans are exported.
    pub fn exports_traces(&self) -> bool {
        self.tracer_provider.is_some()
    }

    /// Send what is still queued and stop, within a few seconds whatever the collector does.
    pub async fn shutdown(self) {
        let Telemetry {
            tracer_provider,
            meter_provider,
        } = self;
        if tracer_provider.is_none() && meter_provider.is_none() {
            return;
        }
        // The SDK's shutdown blocks its thread until its exporters are done.
        let stopping = tokio::task::spawn_blocking(move || {
            if let Some(provider) = tracer_provider {
                let _ = provider.shutdown_with_timeout(SHUTDOWN_BOUND);
            }
            if let Some(provider) = meter_provider {
                let _ = provider.shutdown_with_timeout(SHUTDOWN_BOUND);
            }
        });
        let _ = tokio::time::timeout(SHUTDOWN_BOUND, stopping).await;
    }
}

/// The meters as Prometheus text (the exposition format, version 0.0.4); `None` when
/// telemetry was not installed with [`TelemetryOptions::prometheus`].
pub fn prometheus_text() -> Option<String> {
    use prometheus::Encoder as _;
    let registry = INSTALLED.get()?.registry.as_ref()?;
    let mut text = Vec::new();
    prometheus::TextEncoder::new()
        .encode(&registry.gather(), &mut text)
        .ok()?;
    String::from_utf8(text).ok()
}

/// The service's resource: the SDK's detectors (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), with `service_name` when the environment names none.
fn resource(service_name: &str) -> Resource {
    let builder = Resource::builder();
    if var("OTEL_SERVICE_NAME").is_some() {
        builder.build()
    } else {
        builder.with_service_name(service_name.to_owned()).build()
    }
}

fn tracer_provider(
    client: ExportClient,
    resource: Resource,
) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")?)
        .with_http_client(client)
        .build()
        .map_err(|_| TelemetryError::Exporter { signal: "traces" })?;
    // The batch processor's queue is bounded (OTEL_BSP_MAX_QUEUE_SIZE, 2048 by default):
    // spans that find it full are dropped, never waited for.
    let processor = BatchSpanProcessor::builder(exporter).build();
    Ok(SdkTracerProvider::builder()
        .with_resource(resource)
        .with_span_processor(processor)
        .build())
}

fn meter_provider(
    client: Option<ExportClient>,
    prometheus: bool,
    resource: Resource,
) -> Result<(Option<SdkMeterProvider>, Option<prometheus::Registry>), TelemetryError> {
    if client.is_none() && !prometheus {
        return Ok((None, None));
    }
    let mut builder = SdkMeterProvider::builder().with_resource(resource);
    let mut registry = None;
    if prometheus {
        let shared = prometheus::Registry::new();
        let reader = opentelemetry_prometheus::exporter()
            .with_registry(shared.clone())
            .build()
            .map_err(|e| TelemetryError::Prometheus(e.to_string()))?;
        builder = builder.with_reader(reader);
        registry = Some(shared);
    }
    if let Some(client) = client {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")?)
            .with_http_client(client)
            .build()
            .map_err(|_| TelemetryError::Exporter { signal: "metrics" })?;
        // Every OTEL_METRIC_EXPORT_INTERVAL (60 s by default), and once more at shutdown.
        builder = builder.with_reader(PeriodicReader::builder(exporter).build());
    }
    Ok((Some(builder.build()), registry))
}
