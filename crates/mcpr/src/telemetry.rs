//! OpenTelemetry for the commands that call servers (`serve`, `call`, `resource`, `prompt`):
//! installed from the standard `OTEL_*` variables before the command runs, and flushed,
//! within a few seconds whatever the collector does, when it ends. `mcpr serve --http` also
//! keeps its meters for `GET /metrics`. A telemetry set-up that fails is reported on one line
//! and the command runs without it: observability must not stop the work it observes.

use mcp_runtime::telemetry::{Telemetry, TelemetryOptions};

use crate::cli::Command;

/// The service name when `OTEL_SERVICE_NAME` sets none.
const SERVICE_NAME: &str = "mcpr";

/// Install telemetry for `command`, if it is one that calls servers.
pub(crate) fn install(command: &Command) -> Option<Telemetry> {
    let prometheus = match command {
        Command::Serve(serve) => serve.args.http.is_some(),
        Command::Call(_) | Command::Resource(_) | Command::Prompt(_) => false,
        _ => return None,
    };
    let mut options = TelemetryOptions::new(SERVICE_NAME);
    if prometheus {
        options = options.with_prometheus();
    }
    match Telemetry::from_env(options) {
        Ok(telemetry) => Some(telemetry),
        Err(error) => {
            eprintln!("mcpr: warning: {error}; continuing without telemetry");
            None
        }
    }
}
