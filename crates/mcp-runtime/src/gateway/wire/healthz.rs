//! `GET /healthz` on the HTTP gateway, for load balancers and operators: the gateway's health
//! (see `health`) as JSON.
//!
//! - `200` once start-up is over; `503` before, so that a load balancer sends no client to a
//!   replica still starting. A failed backend shows in the body, not in the status.
//! - The body is JSON, `{"status": "serving" | "starting", "servers": [{"name", "state",
//!   "tools"}]}`.
//! - The `Origin` and `Host` rules of `/mcp` hold (a foreign `Origin` gets `403`; on a
//!   loopback address a `Host` that names no loopback host gets `403`), so that no web page
//!   can read it. A request without `Host`, which no browser sends, is answered: health
//!   checkers often send none.
//! - No bearer token is needed: a load balancer's health check often cannot send one. Without
//!   the token (on a gateway that has one) the answer says the status only; the backends are
//!   listed to a request that carries the token.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::guard::Guard;
use super::token::Token;
use crate::gateway::Gateway;
use crate::gateway::health::{HEALTH_PATH, HealthStatus};

/// What `GET /healthz` needs to answer.
struct Probe {
    gateway: Gateway,
    guard: Guard,
}

/// The `GET /healthz` route of a gateway bound to `local`, its backends shown only to
/// requests that carry `token` (when there is one).
pub(super) fn route(
    gateway: Gateway,
    local: SocketAddr,
    token: Option<Arc<Token>>,
) -> axum::Router {
    let probe = Probe {
        gateway,
        guard: Guard::new(local, token),
    };
    axum::Router::new()
        .route(HEALTH_PATH, axum::routing::get(answer))
        .with_state(Arc::new(probe))
}

async fn answer(State(probe): State<Arc<Probe>>, headers: HeaderMap) -> Response {
    if let Some(refusal) = probe.guard.refusal(&headers) {
        return (StatusCode::FORBIDDEN, refusal).into_response();
    }
    let mut health = probe.gateway.health();
    if !probe.guard.token_presented(&headers) {
        health.servers = None;
    }
    let status = match health.status {
        HealthStatus::Serving => StatusCode::OK,
        HealthStatus::Starting => StatusCode::SERVICE_UNAVAILABLE,
    };
    let body = serde_json::to_string(&health).unwrap_or_default();
    let headers = [
        (header::CONTENT_TYPE, "application/json"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    (status, headers, body).into_response()
}
