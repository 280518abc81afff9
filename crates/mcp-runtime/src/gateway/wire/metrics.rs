//! `GET /metrics` on the HTTP gateway (feature `otel`): the meters in the Prometheus text
//! format, for a scraper. The levels it reports (backends by state, held tools, sessions)
//! are read from the gateway when the meters are read.
//!
//! - The `Origin` and `Host` rules of `/mcp` hold (see `guard`).
//! - On a gateway with a bearer token, the scraper must send it (`401` otherwise): the
//!   meters name the backends and their tools.
//! - No label holds an argument value, a header or an environment value (see
//!   [`crate::telemetry`]).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::guard::Guard;
use super::token::Token;
use crate::gateway::Gateway;
use crate::manager::ConnectionState;

/// Where the meters are served.
pub(super) const METRICS_PATH: &str = "/metrics";

/// The content type of the Prometheus text format.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The `GET /metrics` route of a gateway bound to `local`, and the gateway's levels reported
/// to the meters (`open_sessions` counts its client sessions while they are served).
pub(super) fn route(
    gateway: Gateway,
    local: SocketAddr,
    token: Option<Arc<Token>>,
    open_sessions: impl Fn() -> usize + Send + Sync + 'static,
) -> axum::Router {
    crate::telemetry::observe_levels(move || levels(&gateway, &open_sessions));
    axum::Router::new()
        .route(METRICS_PATH, axum::routing::get(answer))
        .with_state(Arc::new(Guard::new(local, token)))
}

/// The gateway's levels now.
fn levels(gateway: &Gateway, open_sessions: &dyn Fn() -> usize) -> crate::telemetry::Levels {
    let mut levels = crate::telemetry::Levels::default();
    let manager = gateway.manager();
    for (_, state) in manager.states() {
        match state {
            ConnectionState::Connected => levels.connected += 1,
            ConnectionState::Failed | ConnectionState::Suspended => levels.failed += 1,
            _ => levels.connecting += 1,
        }
    }
    levels.held_tools = manager
        .held_tools()
        .iter()
        .map(|(_, held)| held.len() as u64)
        .sum();
    levels.sessions = open_sessions() as u64;
    levels
}

async fn answer(State(guard): State<Arc<Guard>>, headers: HeaderMap) -> Response {
    if let Some(refusal) = guard.refusal(&headers) {
        return (StatusCode::FORBIDDEN, refusal).into_response();
    }
    if !guard.token_presented(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(text) = crate::telemetry::prometheus_text() else {
        return (
            StatusCode::NOT_FOUND,
            "metrics are not kept by this gateway (telemetry is not installed)",
        )
            .into_response();
    };
    let headers = [
        (header::CONTENT_TYPE, PROMETHEUS_TEXT),
        (header::CACHE_CONTROL, "no-store"),
    ];
    (StatusCode::OK, headers, text).into_response()
}
