//! The gateway over streamable HTTP (`POST`/`GET`/`DELETE` at `/mcp`), one MCP session per
//! client, every session served by clones of one [`Gateway`] — so every client shares one
//! connection per backend server.
//!
//! It binds loopback addresses freely. Any other address requires a bearer token: each request
//! must carry `Authorization: Bearer <token>` (compared in constant time) or gets a bare `401`
//! before reaching the MCP layer. A token given for a loopback address is enforced too: without
//! one, every local user and process can call the tools behind a loopback gateway.
//!
//! A request carrying an `Origin` header other than the gateway's own (`http://<address>`) gets
//! `403`, so that web pages in a browser cannot drive the gateway; clients that are not
//! browsers send no `Origin`. On a loopback address the `Host` header must name a loopback
//! host (`localhost`, `127.0.0.1`, `::1` or the bound address), which stops DNS rebinding.
//!
//! Sessions are capped in all and per client address ([`SessionLimits`]; past a cap, `503`
//! with `Retry-After`); one never initialised is closed after [`INIT_GRACE`], an idle one
//! after [`IDLE_EXPIRY`]; a request for a session that is gone gets `404` (see `sessions`).
//! `GET /healthz` ([`HEALTH_PATH`]) answers health checks; it needs no token (see `healthz`).
//! With the `otel` feature, `GET /metrics` serves the meters as Prometheus text; it needs the
//! token when there is one (see `metrics`).
//!
//! ```no_run
//! # async fn demo(gateway: mcp_runtime::gateway::Gateway) -> Result<(), mcp_runtime::gateway::GatewayError> {
//! use mcp_runtime::gateway::http::{HttpOptions, bind};
//! use tokio_util::sync::CancellationToken;
//!
//! let server = bind(gateway, HttpOptions::new("127.0.0.1:0".parse().unwrap())).await?;
//! println!("serving on {}", server.url());
//! let stop = CancellationToken::new();
//! server.serve(stop).await
//! # }
//! ```

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

use super::sessions::{self, Sessions};
use super::token::{Token, presented_token};
use crate::gateway::{Gateway, GatewayError};

pub use super::admission::{
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PEER, INIT_GRACE, SessionLimits,
};
pub use super::sessions::IDLE_EXPIRY;

/// Where the MCP endpoint lives.
pub const PATH: &str = "/mcp";

pub use crate::gateway::health::HEALTH_PATH;

/// How long open streams may take to close after shutdown is asked for.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Settings of the HTTP endpoint.
#[derive(Clone)]
pub struct HttpOptions {
    /// Address to listen on (port 0 picks a free port).
    pub addr: SocketAddr,
    /// Bearer token every request must carry; required unless `addr` is a loopback address.
    pub token: Option<String>,
    /// The caps on sessions open at once.
    pub sessions: SessionLimits,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("sessions", &self.sessions)
            .finish()
    }
}

impl HttpOptions {
    /// Listen on `addr` without a token (loopback addresses only).
    pub fn new(addr: SocketAddr) -> Self {
        HttpOptions {
            addr,
            token: None,
            sessions: SessionLimits::default(),
        }
    }

    /// Require `token` on every request.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Cap the sessions open at once (see [`SessionLimits`]).
    pub fn with_session_limits(mut self, limits: SessionLimits) -> Self {
        self.sessions = limits;
        self
    }
}

/// A bound, not yet serving, endpoint.
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    local: SocketAddr,
    gateway: Gateway,
    token: Option<Arc<Token>>,
    sessions: SessionLimits,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local", &self.local)
            .field("token", &self.token.is_some())
            .finish()
    }
}

/// Bind the endpoint, refusing a non-loopback address without a token.
pub async fn bind(gateway: Gateway, options: HttpOptions) -> Result<HttpServer, GatewayError> {
    let token = options
        .token
        .filter(|t| !t.trim().is_empty())
        .map(|t| Arc::new(Token::new(t.trim())));
    if token.is_none() && !options.addr.ip().is_loopback() {
        return Err(GatewayError::TokenRequired { addr: options.addr });
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| GatewayError::Bind {
            addr: options.addr,
            source,
        })?;
    let local = listener.local_addr().map_err(|source| GatewayError::Bind {
        addr: options.addr,
        source,
    })?;
    Ok(HttpServer {
        listener,
        local,
        gateway,
        token,
        sessions: options.sessions,
    })
}

impl HttpServer {
    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:8931/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{PATH}", self.local)
    }

    /// Serve until `stop` is cancelled; then close every session (their open streams too)
    /// and return within a short grace.
    pub async fn serve(self, stop: CancellationToken) -> Result<(), GatewayError> {
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(stop.child_token())
            // We serve no pages: the only origin that may send requests is our own.
            .with_allowed_origins([own_origin(self.local)])
            .enforce_origin_validation();
        if self.local.ip().is_loopback() {
            // The default loopback names, and the address actually bound (`127.0.0.2`, ...),
            // which clients use as printed.
            let mut hosts = config.allowed_hosts.clone();
            hosts.push(self.local.ip().to_string());
            config = config.with_allowed_hosts(hosts);
        } else {
            // Host checks stop DNS rebinding against unauthenticated local servers; here every
            // request needs the token, and clients reach us under names we cannot know.
            config = config.disable_allowed_hosts();
        }
        let health = super::healthz::route(self.gateway.clone(), self.local, self.token.clone());
        // Stateless `tools/call` POSTs are answered before rmcp's service (see `http_call`).
        let hosts = self
            .local
            .ip()
            .is_loopback()
            .then(|| config.allowed_hosts.clone());
        let fast = super::http_call::FastCalls::new(self.gateway.clone(), hosts, stop.clone());
        let gateway = self.gateway;
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(IDLE_EXPIRY);
        let sessions = Sessions::new(super::relay::RelaySessions(local), self.sessions);
        #[cfg(feature = "otel")]
        let metrics = {
            let open = Arc::downgrade(&sessions);
            let open_sessions = move || open.upgrade().map_or(0, |sessions| sessions.open());
            super::metrics::route(
                gateway.clone(),
                self.local,
                self.token.clone(),
                open_sessions,
            )
        };
        let service = StreamableHttpService::new(
            // Each session gets its own client state (activated tools in discovery mode).
            move || Ok(gateway.for_new_client()),
            sessions,
            config,
        );
        // Behind an `Arc`: every layer below clones what it wraps on every request, and rmcp's
        // service clones its whole configuration (host and origin lists) when cloned.
        let service = Arc::new(service);
        let mcp = axum::routing::any(move |request: Request| {
            let service = service.clone();
            async move { service.handle(request).await }
        });
        let mut router = axum::Router::new()
            .nest_service(PATH, mcp)
            // Right around the service: it answers for the session the service was asked about.
            .layer(axum::middleware::from_fn(sessions::guard))
            .layer(axum::middleware::from_fn(session_ended))
            .layer(axum::middleware::from_fn(unrelay))
            .layer(axum::middleware::from_fn_with_state(
                fast,
                super::http_call::take,
            ));
        if let Some(token) = self.token {
            router = router.layer(axum::middleware::from_fn_with_state(token, authorize));
        }
        // After the token's layer, which it does not go through.
        let router = router.merge(health);
        #[cfg(feature = "otel")]
        let router = router.merge(metrics);
        let graceful = stop.clone();
        // Small JSON-RPC messages on streams: without TCP_NODELAY, Nagle's algorithm and
        // delayed ACKs add tens of milliseconds to every call.
        let listener = self.listener.tap_io(|stream| {
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!("gateway: cannot set TCP_NODELAY: {e}");
            }
        });
        // The client's address, for the per-address cap on sessions.
        let router = router.into_make_service_with_connect_info::<SocketAddr>();
        let serving = axum::serve(listener, router)
            .with_graceful_shutdown(async move { graceful.cancelled().await })
            .into_future();
        tokio::pin!(serving);
        tokio::select! {
            result = &mut serving => return result.map_err(GatewayError::Http),
            () = stop.cancelled() => {}
        }
        // Streams still open after the grace are cut: shutdown must not hang on a client.
        match tokio::time::timeout(SHUTDOWN_GRACE, serving).await {
            Ok(result) => result.map_err(GatewayError::Http),
            Err(_) => Ok(()),
        }
    }
}

/// The origin of the gateway's own URL, with its port (`http://127.0.0.1:8931`).
fn own_origin(local: SocketAddr) -> String {
    format!("http://{local}")
}

/// Let a request through only with the right bearer token; otherwise a bare `401`.
async fn authorize(State(token): State<Arc<Token>>, request: Request, next: Next) -> Response {
    match presented_token(request.headers()) {
        Some(presented) if token.matches(presented) => next.run(request).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, r#"Bearer realm="mcpr-gateway""#)],
        )
            .into_response(),
    }
}

/// rmcp answers a session's `DELETE` with `202 Accepted`; clients expect the session to be
/// gone, and the Python SDK warns on anything but 200 or 204. It is gone: say `204`.
async fn session_ended(request: Request, next: Next) -> Response {
    let deleting = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if deleting && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// rmcp answers a 2026-07-28 request on a one-shot transport of its own, which the relay's
/// session wrapper never sees: its tool results leave as the handler's placeholders, and are
/// replaced here, chunk by chunk, by the results as the servers sent them.
async fn unrelay(request: Request, next: Next) -> Response {
    use futures::StreamExt as _;
    let (parts, body) = next.run(request).await.into_parts();
    let chunks = body
        .into_data_stream()
        .map(|chunk| chunk.map(super::relay::unwrap_chunk));
    Response::from_parts(parts, axum::body::Body::from_stream(chunks))
}
