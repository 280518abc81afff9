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

use super::token::{Token, presented_token};
use crate::gateway::Gateway;
use crate::gateway::health::{HEALTH_PATH, HealthStatus};

/// What `GET /healthz` needs to answer.
struct Probe {
    gateway: Gateway,
    /// The gateway's own origin (`http://<address>`).
    origin: String,
    /// The host names a request may name, on a loopback address (`None`: any).
    hosts: Option<Vec<String>>,
    token: Option<Arc<Token>>,
}

/// The `GET /healthz` route of a gateway bound to `local`, its backends shown only to
/// requests that carry `token` (when there is one).
pub(super) fn route(
    gateway: Gateway,
    local: SocketAddr,
    token: Option<Arc<Token>>,
) -> axum::Router {
    let hosts = loopback_hosts(local);
    let probe = Probe {
        gateway,
        origin: format!("http://{local}"),
        hosts,
        token,
    };
    axum::Router::new()
        .route(HEALTH_PATH, axum::routing::get(answer))
        .with_state(Arc::new(probe))
}

/// The host names a request to a gateway bound to `local` may name: on a loopback address,
/// the loopback names and the address; elsewhere any (`None`).
pub(super) fn loopback_hosts(local: SocketAddr) -> Option<Vec<String>> {
    local.ip().is_loopback().then(|| {
        ["localhost", "127.0.0.1", "::1"]
            .map(str::to_owned)
            .into_iter()
            .chain([local.ip().to_string()])
            .collect()
    })
}

async fn answer(State(probe): State<Arc<Probe>>, headers: HeaderMap) -> Response {
    if let Some(refusal) = refusal(&probe.origin, probe.hosts.as_deref(), &headers) {
        return (StatusCode::FORBIDDEN, refusal).into_response();
    }
    let mut health = probe.gateway.health();
    let shown = match &probe.token {
        None => true,
        Some(token) => presented_token(&headers).is_some_and(|given| token.matches(given)),
    };
    if !shown {
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

/// Why the request is refused, by the rules `/mcp` has for `Origin` and `Host`: `origin` is
/// the gateway's own, `hosts` what [`loopback_hosts`] allows.
pub(super) fn refusal(
    origin: &str,
    hosts: Option<&[String]>,
    headers: &HeaderMap,
) -> Option<&'static str> {
    let own_origin = origin;
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = origin
            .to_str()
            .is_ok_and(|origin| origin.trim().eq_ignore_ascii_case(own_origin));
        if !own {
            return Some("Forbidden: Origin header is not allowed");
        }
    }
    if let (Some(hosts), Some(host)) = (hosts, headers.get(header::HOST)) {
        let named = host
            .to_str()
            .ok()
            .and_then(|host| axum::http::uri::Authority::try_from(host).ok())
            .map(|authority| {
                authority
                    .host()
                    .trim_matches(['[', ']'])
                    .to_ascii_lowercase()
            });
        if !named.is_some_and(|named| hosts.contains(&named)) {
            return Some("Forbidden: Host header is not allowed");
        }
    }
    None
}
