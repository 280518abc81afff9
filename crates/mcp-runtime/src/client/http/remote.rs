//! Reaching a remote server: choose the transport, complete the handshake over it, and say
//! clearly why it failed.
//!
//! A `sse` server gets the legacy HTTP+SSE transport. Any other URL is tried with streamable
//! HTTP first, opened as the era plan says (a `server/discover` POST, falling back to
//! `initialize`). If the server answers the `server/discover` POST with a 4xx other than
//! 401/403, `initialize` is tried on a fresh streamable HTTP connection; if it answers that
//! `initialize` POST with such a 4xx too, it is taken for a 2024-11-05 server and the legacy
//! transport is tried on the same URL, as the MCP specification's backwards-compatibility
//! sections describe. (A config cannot
//! yet tell "type: http" from an absent type, so an explicit `http` falls back too; it costs
//! one extra request on a URL that is failing anyway.)

use std::error::Error as StdError;
use std::sync::Arc;

use reqwest::Url;
use reqwest::header::HeaderMap;
use rmcp::service::{
    ClientInitializeError, RoleClient, RunningService, serve_client_with_lifecycle,
};

use super::legacy_sse::LegacySse;
use super::plumbing::{self, HttpError};
use super::streamable_http;
use crate::auth::credential::ServerAuth;
use crate::client::ClientError;
use crate::client::handler::Handler;
use crate::client::probe::{Plan, Probe, ProbeState, Taken};
use crate::config::{HttpConfig, HttpKind};

/// Name of the streamable HTTP transport, as [`crate::client::McpClient::transport`] reports it.
pub(crate) const STREAMABLE_HTTP: &str = "http";
/// Name of the legacy HTTP+SSE transport.
pub(crate) const LEGACY_SSE: &str = "sse";

/// A connected remote server.
pub(crate) struct Remote {
    pub service: RunningService<RoleClient, Handler>,
    /// The configured URL (errors show it without its query).
    pub url: Url,
    /// [`STREAMABLE_HTTP`] or [`LEGACY_SSE`].
    pub transport: &'static str,
    /// What a direct road to a streamable HTTP server needs (see `direct`); `None` for the
    /// legacy transport.
    pub direct: Option<DirectParts>,
}

/// The pooled client, headers and OAuth of a streamable HTTP connection, from which its
/// direct road is made once the era is known.
pub(crate) struct DirectParts {
    pub client: reqwest::Client,
    pub headers: HeaderMap,
    pub auth: Option<Arc<ServerAuth>>,
    /// rmcp's HTTP backend of the connection: the session its worker sends on (a server of
    /// the `initialize` era), and the resumption of a broken stream.
    pub backend: Option<streamable_http::HttpClient>,
}

/// Connect to the server at `config.url` and complete the handshake. Not bounded here: the
/// caller applies the startup timeout to the whole attempt, fallback included.
pub(crate) async fn connect(
    server: &str,
    config: &HttpConfig,
    http_client: &crate::net::HttpClient,
    handler: Handler,
    auth: Option<Arc<ServerAuth>>,
    plan: Plan,
    probe: Arc<ProbeState>,
) -> Result<Remote, ClientError> {
    let url = plumbing::parse_url(server, &config.url)?;
    let mut headers = plumbing::header_map(server, &config.headers)?;
    // A configured `Authorization` header wins: the server is then not treated as OAuth.
    let auth = auth.filter(|_| !headers.contains_key(reqwest::header::AUTHORIZATION));
    let client = http_client.client().map_err(|reason| ClientError::Tls {
        server: server.to_owned(),
        url: plumbing::display_url(&url),
        reason,
    })?;
    let mut parts = DirectParts {
        client: client.clone(),
        headers: headers.clone(),
        auth: auth.clone(),
        backend: None,
    };
    let (service, transport) = match config.kind {
        HttpKind::Sse => {
            add_bearer(server, &url, &mut headers, auth.as_deref()).await?;
            let service = legacy(server, client, &url, headers, handler)
                .await
                .map_err(|failure| failure.error)?;
            (service, LEGACY_SSE)
        }
        HttpKind::StreamableHttp => {
            let mut outcome = streamable(
                server,
                client.clone(),
                &url,
                headers.clone(),
                handler.clone(),
                auth.clone(),
                plan,
                probe.clone(),
            )
            .await;
            if plan != Plan::Initialize
                && let Err(failure) = &outcome
                && (failure.legacy_hint || probe.timed_out())
            {
                // The POST itself was refused (a server of the `initialize` era that does not
                // take unknown methods at the HTTP level), or never answered in time.
                tracing::info!(
                    server,
                    "server/discover refused or unanswered ({}); trying initialize",
                    failure.error
                );
                outcome = streamable(
                    server,
                    client.clone(),
                    &url,
                    headers.clone(),
                    handler.clone(),
                    auth.clone(),
                    Plan::Initialize,
                    Arc::default(),
                )
                .await;
            }
            match outcome {
                Ok((service, backend)) => {
                    parts.backend = Some(backend);
                    (service, STREAMABLE_HTTP)
                }
                Err(failure) if failure.legacy_hint => {
                    tracing::info!(
                        server,
                        "streamable HTTP refused ({}); trying the legacy HTTP+SSE transport",
                        failure.error
                    );
                    add_bearer(server, &url, &mut headers, auth.as_deref()).await?;
                    match legacy(server, client, &url, headers, handler).await {
                        Ok(service) => (service, LEGACY_SSE),
                        // The URL did not serve an event stream either: the first answer says
                        // more about what is wrong.
                        Err(fallback) if !fallback.reached_stream => {
                            tracing::debug!(
                                server,
                                "legacy SSE fallback failed: {}",
                                fallback.error
                            );
                            return Err(failure.error);
                        }
                        Err(fallback) => return Err(fallback.error),
                    }
                }
                Err(failure) => return Err(failure.error),
            }
        }
    };
    Ok(Remote {
        service,
        url,
        transport,
        direct: (transport == STREAMABLE_HTTP).then_some(parts),
    })
}

/// The legacy transport sends the stored token as it is (it has no retry on 401; a server
/// that refuses it gets the usual authorization error).
async fn add_bearer(
    server: &str,
    url: &Url,
    headers: &mut HeaderMap,
    auth: Option<&ServerAuth>,
) -> Result<(), ClientError> {
    let Some(auth) = auth else { return Ok(()) };
    let token = auth
        .bearer()
        .await
        .map_err(|failure| plumbing::auth_error(server, url, 401, None, &failure))?;
    if let Some(token) = token
        && let Ok(value) = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
    {
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(())
}

/// Why one transport could not connect.
struct Failure {
    error: ClientError,
    /// Streamable HTTP: the server refused the POST in a way that suggests a legacy server.
    legacy_hint: bool,
    /// Legacy SSE: the GET returned an event stream (so this is an SSE server, and its error
    /// is the one to report).
    reached_stream: bool,
}

#[allow(clippy::too_many_arguments)]
async fn streamable(
    server: &str,
    client: reqwest::Client,
    url: &Url,
    headers: HeaderMap,
    handler: Handler,
    auth: Option<Arc<ServerAuth>>,
    plan: Plan,
    probe: Arc<ProbeState>,
) -> Result<
    (
        RunningService<RoleClient, Handler>,
        streamable_http::HttpClient,
    ),
    Failure,
> {
    let listener = streamable_http::Listener::new();
    let backend = streamable_http::HttpClient::new(
        client,
        listener.clone(),
        auth,
        Some(probe.clone()),
        handler.raw.clone(),
    );
    let transport = streamable_http::transport(backend.clone(), url, headers);
    let transport = Probe::new(transport, plan, Taken::Signalled, probe);
    let transport = crate::client::raw::Expect::new(transport, handler.raw.clone());
    let transport = crate::client::tally::Tallied::new(transport, handler.log_tally.clone());
    let opening = serve_client_with_lifecycle(handler, transport, plan.lifecycle()).await;
    let service = opening.map_err(|e| {
        let legacy_hint = match &e {
            ClientInitializeError::TransportError { error, .. } => plumbing::is_legacy_hint(error),
            ClientInitializeError::LegacyFallbackFailed { discover, .. } => matches!(
                discover.as_ref(),
                ClientInitializeError::TransportError { error, .. } if plumbing::is_legacy_hint(error)
            ),
            _ => false,
        };
        Failure {
            error: handshake_error(server, url, &e),
            legacy_hint,
            reached_stream: false,
        }
    })?;
    listener.wait_settled(LISTENER_BOUND).await;
    Ok((service, backend))
}

/// How long a new connection waits for its standalone GET stream to be answered.
const LISTENER_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

async fn legacy(
    server: &str,
    client: reqwest::Client,
    url: &Url,
    headers: HeaderMap,
    handler: Handler,
) -> Result<RunningService<RoleClient, Handler>, Failure> {
    let transport = LegacySse::connect(client, url, headers, handler.raw.clone())
        .await
        .map_err(|e| Failure {
            reached_stream: !matches!(
                e,
                HttpError::Status { .. } | HttpError::ContentType(_) | HttpError::Request(_)
            ),
            error: plumbing::classify(server, "initialize", url, &e).unwrap_or_else(|| {
                ClientError::Handshake {
                    server: server.to_owned(),
                    message: e.to_string(),
                    stderr: Vec::new(),
                    held_back: Vec::new(),
                }
            }),
            legacy_hint: false,
        })?;
    use rmcp::ServiceExt;
    let transport = crate::client::raw::Expect::new(transport, handler.raw.clone());
    let transport = crate::client::tally::Tallied::new(transport, handler.log_tally.clone());
    handler.serve(transport).await.map_err(|e| Failure {
        error: handshake_error(server, url, &e),
        legacy_hint: false,
        reached_stream: true,
    })
}

/// A failed handshake: an HTTP failure in its own words, anything else as a handshake error.
fn handshake_error(server: &str, url: &Url, error: &ClientInitializeError) -> ClientError {
    // After a refused probe, what went wrong with `initialize` is what to report.
    if let ClientInitializeError::LegacyFallbackFailed { fallback, .. } = error
        && let ClientInitializeError::TransportError { .. } = fallback.as_ref()
    {
        return handshake_error(server, url, fallback);
    }
    if let ClientInitializeError::TransportError { error, .. } = error
        && let Some(classified) = plumbing::classify(
            server,
            "initialize",
            url,
            error as &(dyn StdError + 'static),
        )
    {
        return classified;
    }
    ClientError::Handshake {
        server: server.to_owned(),
        message: crate::client::probe::describe(error),
        stderr: Vec::new(),
        held_back: Vec::new(),
    }
}
