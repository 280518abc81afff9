//! `mcpr mock --http ADDR` and `--sse ADDR`: the same [`MockServer`] over HTTP.
//!
//! - Streamable HTTP at `/mcp`: rmcp's tower service with in-memory sessions and an event store
//!   ([`super::events`]), so a client can resume any stream with `Last-Event-ID`. A request
//!   for a session that has ended gets 404 ([`super::sessions`]).
//! - Legacy HTTP+SSE (2024-11-05) at `/sse` (`GET`, first event `endpoint`) and
//!   `/message?sessionId=` (`POST`): see [`super::legacy`].
//!
//! Both sit behind the HTTP fault knobs of [`super::faults`]. With `--oauth`, `/mcp` also sits
//! behind [`super::oauth::guard`], and the authorization server's routes are served next to it
//! (same origin). The bound address is printed on
//! stderr (`listening on http://127.0.0.1:PORT/mcp`), so port 0 can be used. The server runs
//! until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::serve::ListenerExt;
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{SessionManager, StreamableHttpServerConfig};
use tokio_util::sync::CancellationToken;

use super::events::MemoryEvents;
use super::faults::{self, Faults, HttpKnobs, OnExpire};
use super::legacy;
use super::oauth::{self, OAuth, OAuthKnobs};
use super::server::MockServer;
use super::sessions::{self, Sessions};

/// How long open connections may take to end after SIGINT or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// Which HTTP flavour to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// Streamable HTTP at `/mcp`.
    Streamable,
    /// Legacy HTTP+SSE at `/sse` + `/message`.
    LegacySse,
}

/// Settings of the HTTP modes beyond the fault knobs.
#[derive(Debug, Clone)]
pub(crate) struct HttpOptions {
    pub flavour: Flavour,
    pub addr: SocketAddr,
    /// `retry:` announced on streamable HTTP event streams.
    pub sse_retry: Duration,
    /// Stateless streamable HTTP answering plain JSON (no session, no event streams).
    pub json_response: bool,
    pub knobs: HttpKnobs,
    pub record: Option<std::path::PathBuf>,
    /// `--protocol-version` for the legacy flavour (streamable HTTP rewrites it in `knobs`).
    pub forced_version: Option<ProtocolVersion>,
    /// `--ignore-sigterm`: only SIGINT stops the server.
    pub ignore_sigterm: bool,
    /// `--era`, `--ignore-unknown` (streamable HTTP only).
    pub era: super::era::EraKnobs,
    /// `--oauth` (streamable HTTP only).
    pub oauth: Option<OAuthKnobs>,
}

/// Serves `server` until SIGINT or SIGTERM.
pub(crate) async fn serve(server: MockServer, options: HttpOptions) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let bound = listener.local_addr().context("no local address")?;
    let stop = CancellationToken::new();

    let router = match options.flavour {
        Flavour::Streamable => streamable(server, &options, bound, stop.clone())?,
        Flavour::LegacySse => {
            let faults = Faults::new(options.knobs.clone(), options.record.as_deref(), None)?;
            legacy::router(server, options.forced_version.clone()).layer(
                axum::middleware::from_fn_with_state(Arc::new(faults), faults::apply),
            )
        }
    };
    let path = match options.flavour {
        Flavour::Streamable => "/mcp",
        Flavour::LegacySse => "/sse",
    };
    // Tests and scripts read this line to find the port.
    eprintln!("listening on http://{bound}{path}");

    let shutdown = stop.clone();
    let ignore_sigterm = options.ignore_sigterm;
    tokio::spawn(async move {
        if ignore_sigterm {
            // Listening for SIGTERM would undo its "ignore" disposition.
            let _ = tokio::signal::ctrl_c().await;
        } else {
            interrupted().await;
        }
        shutdown.cancel();
    });
    // Without TCP_NODELAY, the small event that follows a response's first chunk waits for
    // the client's delayed ACK: ~40 ms per call on Linux.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let serving =
        axum::serve(listener, router).with_graceful_shutdown(stop.clone().cancelled_owned());
    // Open event streams never finish by themselves: after a signal, connections get a short
    // grace to end, then the process exits anyway.
    tokio::select! {
        result = serving => result.context("the HTTP server failed"),
        () = async {
            stop.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    }
}

/// rmcp's streamable HTTP service at `/mcp`, behind the fault knobs.
fn streamable(
    server: MockServer,
    options: &HttpOptions,
    bound: SocketAddr,
    stop: CancellationToken,
) -> anyhow::Result<Router> {
    let mut sessions =
        LocalSessionManager::default().with_event_store(Arc::new(MemoryEvents::default()));
    sessions.session_config.sse_retry = Some(options.sse_retry);
    let sessions = Arc::new(Sessions(sessions));
    // Only loopback names are accepted by default (DNS rebinding); a mock bound elsewhere
    // must also accept its own address.
    let ip = bound.ip().to_string();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1", ip.as_str()])
        .with_sse_retry(Some(options.sse_retry))
        .with_legacy_session_mode(!options.json_response)
        .with_json_response(options.json_response)
        .with_cancellation_token(stop);
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);

    // An expired session is also ended in rmcp, closing its GET stream as a real server would.
    let on_expire: OnExpire = Arc::new(move |session: String| {
        let sessions = sessions.clone();
        tokio::spawn(async move {
            let _ = sessions.close_session(&Arc::from(session)).await;
        });
    });
    let faults = Faults::new(
        options.knobs.clone(),
        options.record.as_deref(),
        Some(on_expire),
    )?;
    let mcp = Router::new()
        .nest_service("/mcp", service)
        // Right around the service: it answers for the session the service was asked about.
        .layer(axum::middleware::from_fn(sessions::not_found_when_ended))
        // Inside the fault knobs, so `--record` still sees the refused openings; on `/mcp`
        // only, so other paths keep their 404.
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::new(options.era),
            super::era::apply,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(faults),
            faults::apply,
        ));
    let Some(knobs) = &options.oauth else {
        return Ok(mcp);
    };
    let oauth = Arc::new(OAuth::new(knobs.clone(), bound));
    // Outermost, as a real server checks tokens first: a refused request never reaches the
    // fault knobs (nor `--record`) and uses up none of their counts. `route_layer`: unknown
    // paths still get 404, not 401.
    Ok(mcp
        .route_layer(axum::middleware::from_fn_with_state(
            oauth.clone(),
            oauth::guard,
        ))
        .merge(oauth::router(oauth)))
}

/// Resolves when SIGINT or SIGTERM arrives.
pub(crate) async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without signal handlers the default action (exit) applies; never resolve.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
