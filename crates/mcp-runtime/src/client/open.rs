//! Opening a connection: start or reach the server, choose the opening for its era (from the
//! cache, else a bounded probe), and retry once with another opening when the first one was
//! the wrong guess. What is learnt is written back to the cache: the era, and a
//! `server/discover` result the server lets clients keep (`ttlMs`, not private), which a
//! later opening within that time replays instead of asking again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::service::{ClientInitializeError, RunningService, serve_client_with_lifecycle};

use super::handler::Handler;
use super::http::remote;
use super::link::ServerPeer;
use super::model::era::{Era, Opening};
use super::probe::{self, Plan, Probe, ProbeState, Taken, describe};
use super::stdio::direct::Direct;
use super::stdio::own;
use super::stdio::pipe::PipeTransport;
use super::stdio::process::ServerProcess;
use super::{ClientError, ConnectOptions, handshake_error, stderr_now, stop};
use crate::cache::CacheHints;
use crate::config::{ServerConfig, StdioConfig, Transport};

/// Most connections one opening makes (the first guess and one correction).
const MAX_ATTEMPTS: u32 = 2;

/// A connection whose handshake (or discovery) is complete.
pub(crate) struct Opened {
    /// rmcp's service of a remote server (a stdio server's ends with the opening).
    pub service: Option<RunningService<RoleClient, Handler>>,
    pub peer: ServerPeer,
    pub process: Option<ServerProcess>,
    pub url: Option<reqwest::Url>,
    pub transport: &'static str,
    pub opening: Opening,
    /// The caching hints of the server's `server/discover` result (live or replayed from the
    /// cache); `None` when the connection did not open with one.
    pub discovery_hints: Option<CacheHints>,
    /// The direct request path of a stdio connection.
    pub direct: Option<Arc<Direct>>,
    /// What the direct road of a streamable HTTP connection is made of.
    pub http_direct: Option<super::http::remote::DirectParts>,
}

/// Open a connection to `server`, bounded as a whole by `bound` (the startup timeout).
pub(crate) async fn open(
    server: &str,
    config: &ServerConfig,
    options: &ConnectOptions,
    handler: Handler,
    bound: Option<Duration>,
) -> Result<Opened, ClientError> {
    #[cfg(feature = "cache")]
    let cache = options.cache.clone();
    #[cfg(feature = "cache")]
    let (cached, discovery) = match &cache {
        Some(cache) => {
            let (name, config) = (server.to_owned(), config.clone());
            cache
                .run(move |cache| {
                    let era = cache.era(&name, &config);
                    let discovery = match era {
                        Some(Era::Modern) => cache.discovery(&name, &config),
                        _ => None,
                    };
                    (era, discovery)
                })
                .await
                .unwrap_or_default()
        }
        None => (None, None),
    };
    #[cfg(not(feature = "cache"))]
    let (cached, discovery) = (None::<Era>, None::<serde_json::Value>);
    // A cached result that no longer parses is simply not replayed.
    let mut replay = discovery.and_then(|value| serde_json::from_value(value).ok());
    let deadline = bound.map(|bound| Instant::now() + bound);
    let mut plan = Plan::for_era(cached);
    let mut attempts = 0;
    let mut probes = 0;
    let mut probe_timed_out = false;
    let mut replayed_hints = None;
    loop {
        attempts += 1;
        let state = Arc::new(ProbeState::default());
        // Only the first attempt replays; a failed one is followed by a live probe.
        let replaying = match replay.take() {
            Some(result) => {
                replayed_hints = Some(discover_hints(&result));
                state.replay(result);
                true
            }
            None => false,
        };
        let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let result = attempt(
            server,
            config,
            options,
            handler.clone(),
            plan,
            state.clone(),
            remaining,
        )
        .await;
        probes += state.probes();
        probe_timed_out |= state.timed_out();
        let from_cache = cached.is_some() && attempts == 1;
        match result {
            Ok(mut opened) => {
                let version = opened.peer.negotiated().unwrap_or_default();
                let era = Era::of(&version);
                let discovered = state.discovered();
                opened.discovery_hints = match &discovered {
                    Some(result) => Some(discover_hints(result)),
                    None => replayed_hints.filter(|_| state.replayed()),
                };
                #[cfg(feature = "cache")]
                if let Some(cache) = &cache {
                    // A server that answered the probe late is modern, whatever this
                    // connection ended up speaking: the next start-up asks it directly.
                    let remembered = if state.late_modern() {
                        Era::Modern
                    } else {
                        era
                    };
                    remember(
                        cache,
                        server,
                        config,
                        (cached != Some(remembered)).then_some(remembered),
                        discovered,
                    )
                    .await;
                }
                opened.opening = Opening {
                    era,
                    cached: from_cache,
                    probes,
                    probe_timed_out,
                    attempts,
                    discovery_cached: state.replayed(),
                };
                return Ok(opened);
            }
            Err(Failed { error, refused }) => {
                if matches!(error, ClientError::Exited { .. }) {
                    state.exited();
                }
                // A replayed discovery sent nothing, so it cannot have been refused: whatever
                // failed, a live probe is worth one more connection.
                let next = match replaying {
                    true => Some(Plan::Probe),
                    // A server that exited on the probe refused it in its own way.
                    false => probe::retry_plan(plan, &state, from_cache)
                        .filter(|_| refused || state.closed_on_probe()),
                };
                let next = next
                    .filter(|_| attempts < MAX_ATTEMPTS)
                    .filter(|_| deadline.is_none_or(|d| Instant::now() < d));
                #[cfg(feature = "cache")]
                if replaying && let Some(cache) = &cache {
                    cache.forget_discovery(server, config);
                }
                let Some(next) = next else {
                    return Err(error);
                };
                tracing::debug!(server, "opening {plan:?} failed ({error}); trying {next:?}");
                #[cfg(feature = "cache")]
                if from_cache && let Some(cache) = &cache {
                    cache.forget_era(server, config);
                }
                plan = next;
            }
        }
    }
}

/// Write what an opening learnt to the cache: the era when it changed, and the server's
/// `server/discover` result when its hints let it be kept (a private one makes an older
/// entry go).
#[cfg(feature = "cache")]
async fn remember(
    cache: &Arc<crate::cache::ToolCache>,
    server: &str,
    config: &ServerConfig,
    era: Option<Era>,
    discovered: Option<rmcp::model::DiscoverResult>,
) {
    let private = |result: &rmcp::model::DiscoverResult| {
        result.cache_scope == rmcp::model::CacheScope::Private
    };
    let discovery = discovered
        .filter(|result| result.ttl_ms > 0 || private(result))
        .map(|result| {
            let hints = CacheHints::new(Some(result.ttl_ms), private(&result));
            (serde_json::to_value(&result).ok(), hints)
        });
    if era.is_none() && discovery.is_none() {
        return;
    }
    let (name, config) = (server.to_owned(), config.clone());
    let _ = cache
        .run(move |cache| {
            if let Some(era) = era {
                cache.put_era(&name, &config, era);
            }
            match discovery {
                Some((Some(result), hints)) => cache.put_discovery(&name, &config, &result, hints),
                Some((None, _)) => cache.forget_discovery(&name, &config),
                None => {}
            }
        })
        .await;
}

/// The caching hints of a `server/discover` result.
fn discover_hints(result: &rmcp::model::DiscoverResult) -> CacheHints {
    CacheHints::new(
        Some(result.ttl_ms),
        result.cache_scope == rmcp::model::CacheScope::Private,
    )
}

/// A failed attempt.
struct Failed {
    error: ClientError,
    /// The server answered the opening, but not the way this plan expected: another plan may
    /// work. A process that died or a server that never answered is not retried.
    refused: bool,
}

impl From<ClientError> for Failed {
    fn from(error: ClientError) -> Self {
        // Over HTTP a refusal is reported as a handshake error (there is no process).
        let refused = matches!(error, ClientError::Handshake { .. });
        Failed { error, refused }
    }
}

/// Whether rmcp failed the opening because of what the server answered.
fn answered(error: &ClientInitializeError) -> bool {
    matches!(
        error,
        ClientInitializeError::JsonRpcError(_)
            | ClientInitializeError::LegacyFallbackFailed { .. }
            | ClientInitializeError::ExpectedInitResult(_)
            | ClientInitializeError::NoCompatibleProtocolVersion { .. }
    )
}

/// One connection with one plan.
async fn attempt(
    server: &str,
    config: &ServerConfig,
    options: &ConnectOptions,
    handler: Handler,
    plan: Plan,
    state: Arc<ProbeState>,
    bound: Option<Duration>,
) -> Result<Opened, Failed> {
    let opening = Opening {
        era: Era::Legacy,
        cached: false,
        probes: 0,
        probe_timed_out: false,
        attempts: 1,
        discovery_cached: false,
    };
    match &config.transport {
        Transport::Stdio(stdio) => {
            // The policy and `env_vars` are settled here, so that every spawn honours them.
            let stdio = &super::environment::for_connection(config, stdio, options.inherit_env);
            let (peer, process, direct) =
                connect_stdio(server, stdio, handler, bound, plan, state).await?;
            Ok(Opened {
                service: None,
                peer,
                process: Some(process),
                url: None,
                transport: "stdio",
                opening,
                discovery_hints: None,
                direct: Some(direct),
                http_direct: None,
            })
        }
        Transport::Http(http) => {
            #[cfg(feature = "oauth")]
            let auth = options.auth.as_ref().map(|context| {
                Arc::new(crate::auth::credential::ServerAuth::new(
                    server,
                    &http.url,
                    http.oauth.as_ref(),
                    context,
                ))
            });
            #[cfg(not(feature = "oauth"))]
            let auth = match http.oauth {
                // Sending no token to a server configured for OAuth would only earn a 401.
                Some(_) => return Err(oauth_not_built_in(server).into()),
                None => None,
            };
            let connecting =
                remote::connect(server, http, &options.http, handler, auth, plan, state);
            let timeout = |bound| ClientError::Timeout {
                server: server.to_owned(),
                phase: "initialize".into(),
                after: bound,
                stderr: Vec::new(),
            };
            let remote = match bound {
                Some(bound) => tokio::time::timeout(bound, connecting)
                    .await
                    .map_err(|_| timeout(bound))??,
                None => connecting.await?,
            };
            Ok(Opened {
                peer: ServerPeer::Service(remote.service.peer().clone()),
                service: Some(remote.service),
                process: None,
                url: Some(remote.url),
                transport: remote.transport,
                opening,
                discovery_hints: None,
                direct: None,
                http_direct: remote.direct,
            })
        }
    }
}

/// Spawn a stdio server and open the connection within `bound`, then take the connection over
/// from rmcp (see `own`); on failure the process (group) is killed and the error carries its
/// stderr tail.
async fn connect_stdio(
    server: &str,
    config: &StdioConfig,
    handler: Handler,
    bound: Option<Duration>,
    plan: Plan,
    state: Arc<ProbeState>,
) -> Result<(ServerPeer, ServerProcess, Arc<Direct>), Failed> {
    let (process, pipes) = ServerProcess::spawn(server, config).await?;
    #[cfg(unix)]
    let taken = Taken::Pipe(std::os::fd::AsRawFd::as_raw_fd(&pipes.stdin));
    #[cfg(not(unix))]
    let taken = Taken::Signalled;
    let pipe = PipeTransport::new(pipes.stdout, pipes.stdin, handler.raw.clone());
    let direct = pipe.direct();
    let transport = Probe::new(pipe, plan, taken, state);
    let transport = super::tally::Tallied::new(transport, handler.log_tally.clone());
    let (transport, handed_back) = own::Handoff::new(transport);
    let handshake = serve_client_with_lifecycle(handler.clone(), transport, plan.lifecycle());
    let outcome = match bound {
        Some(bound) => tokio::time::timeout(bound, handshake)
            .await
            .map_err(|_| bound),
        None => Ok(handshake.await),
    };
    let failure = match outcome {
        Ok(Ok(service)) => {
            match own::take_over(service, handed_back, handler, direct.clone()).await {
                Some(own) => return Ok((ServerPeer::Own(own), process, direct)),
                None => Ok(ClientInitializeError::ConnectionClosed(
                    "the opening".to_owned(),
                )),
            }
        }
        // rmcp dropped the transport, which came back: closing it now lets a server that
        // exits on stdin EOF do so while the error waits for its status.
        Ok(Err(e)) => {
            drop(handed_back);
            Ok(e)
        }
        Err(bound) => {
            drop(handed_back);
            Err(bound)
        }
    };
    let mut refused = false;
    let error = match failure {
        Err(bound) => ClientError::Timeout {
            server: server.to_owned(),
            phase: phase(plan).into(),
            after: bound,
            stderr: stderr_now(Some(&process)),
        },
        Ok(e) => {
            refused = answered(&e);
            handshake_error(server, &describe(&e), Some(&process)).await
        }
    };
    stop(Some(process)).await;
    Err(Failed { error, refused })
}

/// The request an opening waits for, as errors name it.
pub(crate) fn phase(plan: Plan) -> &'static str {
    match plan {
        Plan::Discover | Plan::Recall => "server/discover",
        Plan::Probe | Plan::Initialize => "initialize",
    }
}

/// The error for a server whose config sets `oauth` in a build without the `oauth` feature.
#[cfg(not(feature = "oauth"))]
fn oauth_not_built_in(server: &str) -> ClientError {
    ClientError::Config {
        server: server.to_owned(),
        message: format!(
            "server `{server}` (field `oauth`): OAuth is not built into this program \
             (mcp-runtime's `oauth` feature)"
        ),
    }
}
