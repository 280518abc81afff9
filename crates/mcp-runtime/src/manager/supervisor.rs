//! The life of one server: connect, load its tools, watch the connection (re-listing on
//! `list_changed`), and on an unexpected close reconnect with back-off until the breaker
//! suspends it. Every state change is tagged with the connection sequence (generation) it
//! belongs to, so work of a superseded sequence is discarded. Written against the
//! [`Connector`] seam, so the tests below drive it with a scripted connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::connection::{Connection, Connector};
use super::events::{ManagerEvent, ServerNotice};
use super::health::Decision;
use super::remembered::{fresh_cached_tools, remember_failure, store_tools};
use super::report::ServerError;
use super::state::{Inner, Phase};
use crate::client::{ClientError, ClientEvent, ToolDefinition};
use crate::config::ServerConfig;

/// Why a live connection ended.
enum Ended {
    /// The transport closed without us asking.
    Unexpectedly,
    /// The server was disconnected or reconnected on request.
    OnRequest,
}

/// Why a connection attempt did not produce a usable connection.
enum Establish<K> {
    /// It never got going (spawn, handshake, config, timeout): the attempt failed.
    Failed(ClientError),
    /// The handshake succeeded, then the connection dropped while loading tools.
    Lost(Arc<K>),
}

/// The life of one server for one generation: connect, supervise, reconnect on unexpected
/// close with back-off, until it fails for good, is suspended, or is disconnected.
pub(crate) async fn run_server<C: Connector>(
    inner: Arc<Inner<C>>,
    name: String,
    generation: u64,
    gate_passed: Arc<AtomicBool>,
) {
    // 0 = the first connection; >0 = the reconnect attempt of the current outage.
    let mut attempt: u32 = 0;
    loop {
        let Some(config) = inner.config_of(&name, generation) else {
            return;
        };
        inner.update(&name, generation, |e| {
            if !matches!(e.phase, Phase::Reconnecting { .. }) {
                e.phase = Phase::Connecting;
            }
        });
        inner.emit(ManagerEvent::Connecting {
            server: name.clone(),
        });
        let started = Instant::now();
        // A reconnect attempt is a span of its own, the connection's span inside it.
        let reconnect = (attempt > 0).then(|| {
            crate::telemetry::reconnect_started(&name);
            let place = crate::telemetry::Place {
                server: &name,
                ..Default::default()
            };
            crate::telemetry::start(crate::telemetry::Kind::Reconnect, place)
        });
        let establishing = establish(&inner, &name, generation, &config, started);
        let established = match &reconnect {
            Some(reconnect) => reconnect.within(establishing).await,
            None => establishing.await,
        };
        if let Some(reconnect) = reconnect {
            reconnect.finish(match &established {
                Ok(_) => crate::telemetry::Outcome::Ok,
                Err(_) => crate::telemetry::Outcome::Failed("reconnect_failed"),
            });
        }
        let lost = match established {
            Ok((client, mut notices)) => {
                match supervise(&inner, &name, generation, &client, &mut notices).await {
                    Ended::OnRequest => return,
                    Ended::Unexpectedly => client,
                }
            }
            Err(Establish::Lost(client)) => client,
            Err(Establish::Failed(error)) => {
                let stderr = error.stderr_tail().to_vec();
                let error = ServerError::from(error);
                if gate_passed.load(Ordering::SeqCst) {
                    tracing::warn!("{error}");
                } else {
                    tracing::debug!("{error}");
                }
                inner.emit(ManagerEvent::Failed {
                    server: name.clone(),
                    error: error.clone(),
                    stderr: stderr.clone(),
                });
                if attempt == 0 {
                    remember_failure(&inner, &name, &config, &error);
                    fail(&inner, &name, generation, error, stderr);
                    return;
                }
                // A failed reconnect attempt: back off further, or give up.
                inner.update(&name, generation, |e| e.stderr_tail = stderr);
                match plan_reconnect(&inner, &name, generation, attempt + 1, error) {
                    Some(delay) => {
                        attempt += 1;
                        tokio::time::sleep(delay).await;
                        continue;
                    }
                    None => return,
                }
            }
        };

        // The connection dropped without being asked to: an outage.
        let status = lost
            .close()
            .await
            .unwrap_or_else(|| "connection closed".into());
        let error = ServerError::ConnectionLost {
            server: name.clone(),
            status,
        };
        tracing::warn!("{error}");
        let stderr = lost.stderr_tail();
        if !inner.options.reconnect {
            inner.emit(ManagerEvent::Failed {
                server: name.clone(),
                error: error.clone(),
                stderr: stderr.clone(),
            });
            fail(&inner, &name, generation, error, stderr);
            return;
        }
        inner.update(&name, generation, |e| e.stderr_tail = stderr);
        match plan_reconnect(&inner, &name, generation, 1, error) {
            Some(delay) => {
                attempt = 1;
                tokio::time::sleep(delay).await;
            }
            None => return,
        }
    }
}

/// Mark a server failed; its cached tools go (their server is not coming).
fn fail<C: Connector>(
    inner: &Inner<C>,
    name: &str,
    generation: u64,
    error: ServerError,
    stderr: Vec<String>,
) {
    let mut had_cached = false;
    inner.update(name, generation, |e| {
        had_cached = e.cached_tools.is_some() && e.live_tools.is_none();
        e.phase = Phase::Failed;
        e.last_error = Some(error);
        e.stderr_tail = stderr;
        e.cached_tools = None;
    });
    if had_cached {
        inner.emit(ManagerEvent::ToolsChanged {
            server: name.to_owned(),
        });
    }
}

/// Record an outage and decide about reconnect attempt `attempt`: the back-off to sleep, or
/// `None` when the server is now suspended.
fn plan_reconnect<C: Connector>(
    inner: &Inner<C>,
    name: &str,
    generation: u64,
    attempt: u32,
    error: ServerError,
) -> Option<Duration> {
    let mut decision = None;
    inner.update(name, generation, |e| {
        let d = e.budget.next(attempt, Instant::now());
        match &d {
            Decision::Retry { attempt, .. } => {
                e.phase = Phase::Reconnecting { attempt: *attempt };
                e.last_error = Some(error);
            }
            Decision::Suspend(reason) => {
                e.phase = Phase::Suspended;
                e.last_error = Some(ServerError::Suspended {
                    cause: Box::new(error),
                    reason: reason.clone(),
                });
            }
        }
        decision = Some(d);
    });
    match decision? {
        Decision::Retry { attempt, delay } => {
            inner.emit(ManagerEvent::Reconnecting {
                server: name.to_owned(),
                attempt,
                delay,
            });
            Some(delay)
        }
        Decision::Suspend(reason) => {
            tracing::warn!(server = name, "{reason}");
            inner.emit(ManagerEvent::Suspended {
                server: name.to_owned(),
                reason,
            });
            None
        }
    }
}

/// Connect (resolving connect-time values), list tools, write the cache.
async fn establish<C: Connector>(
    inner: &Arc<Inner<C>>,
    name: &str,
    generation: u64,
    config: &ServerConfig,
    started: Instant,
) -> Result<(Arc<C::Conn>, mpsc::Receiver<ClientEvent>), Establish<C::Conn>> {
    let (events, notices) = mpsc::channel(crate::client::EVENT_BUFFER);
    let client = Arc::new(
        inner
            .connector
            .connect(name, config, events)
            .await
            .map_err(Establish::Failed)?,
    );
    if !inner.update(name, generation, |e| {
        e.phase = Phase::Loading(client.clone())
    }) {
        client.close().await;
        return Err(Establish::Failed(superseded(name)));
    }
    // A list the server said is still fresh (its `ttlMs`) stands in for a new one.
    if let Some(tools) = fresh_cached_tools(inner, name, config).await {
        client.adopt_cached_tools(&tools);
        // Fresh or not, a list passes the pins.
        let tools = inner.pinned(name, config, tools.into());
        return accept(inner, name, generation, client, notices, tools, started).await;
    }
    // The first list belongs to start-up: the startup timeout bounds it too.
    let listing = match config.startup_timeout() {
        Some(bound) => tokio::time::timeout(bound, client.list_tools())
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    server: name.to_owned(),
                    phase: "tools/list".into(),
                    after: bound,
                    stderr: client.stderr_tail(),
                })
            }),
        None => client.list_tools().await,
    };
    // One list, shared by the manager's state, the cache writer and every tool built from it.
    let tools: Arc<[ToolDefinition]> = match listing {
        Ok(tools) => tools.into(),
        // The handshake worked but the server died: that is an outage, not a bad config.
        Err(e) if e.is_connection_lost() => return Err(Establish::Lost(client)),
        Err(e) => {
            client.close().await;
            return Err(Establish::Failed(e));
        }
    };
    // Pinned first: a held tool is not cached either, so it is never offered as deferred.
    let tools = inner.pinned(name, config, tools);
    store_tools(inner, name, config, &tools.0, client.tools_cache_hints());
    accept(inner, name, generation, client, notices, tools, started).await
}

/// The connection is up with `tools`: make it the server's live one (unless superseded).
async fn accept<C: Connector>(
    inner: &Arc<Inner<C>>,
    name: &str,
    generation: u64,
    client: Arc<C::Conn>,
    notices: mpsc::Receiver<ClientEvent>,
    (tools, held): (Arc<[ToolDefinition]>, Vec<crate::pins::HeldTool>),
    started: Instant,
) -> Result<(Arc<C::Conn>, mpsc::Receiver<ClientEvent>), Establish<C::Conn>> {
    let count = tools.len();
    let accepted = inner.update(name, generation, |e| {
        e.live_tools = Some(tools);
        e.held_tools = held;
        e.cached_tools = None;
        e.last_error = None;
        e.phase = Phase::Connected(client.clone());
        // Sent before the state change is announced: whoever waits for the server to settle
        // (the start-up gate) finds these events already queued.
        inner.emit(ManagerEvent::Connected {
            server: name.to_owned(),
            tools: count,
            elapsed: started.elapsed(),
        });
        inner.emit(ManagerEvent::ToolsChanged {
            server: name.to_owned(),
        });
    });
    if !accepted {
        client.close().await;
        return Err(Establish::Failed(superseded(name)));
    }
    Ok((client, notices))
}

/// Watch a live connection: re-list tools on `list_changed`; return when it closes.
async fn supervise<C: Connector>(
    inner: &Arc<Inner<C>>,
    name: &str,
    generation: u64,
    client: &Arc<C::Conn>,
    notices: &mut mpsc::Receiver<ClientEvent>,
) -> Ended {
    loop {
        tokio::select! {
            () = client.closed() => break,
            notice = notices.recv() => match notice {
                Some(ClientEvent::ToolsChanged) => {
                    // Coalesce a burst of notifications into one re-list; what else came
                    // meanwhile is passed on.
                    while let Ok(next) = notices.try_recv() {
                        pass_on(inner, name, next);
                    }
                    relist(inner, name, generation, client).await;
                }
                Some(other) => pass_on(inner, name, other),
                // The connection's handler is gone: the transport closed.
                None => {
                    client.closed().await;
                    break;
                }
            },
        }
    }
    if inner.is_current(name, generation) {
        Ended::Unexpectedly
    } else {
        Ended::OnRequest
    }
}

/// Hand a server's log line or resource update to the manager's notice subscribers.
fn pass_on<C: Connector>(inner: &Inner<C>, name: &str, event: ClientEvent) {
    let notice = match event {
        ClientEvent::Log {
            level,
            logger,
            data,
        } => ServerNotice::Log {
            server: name.to_owned(),
            level,
            logger,
            data,
        },
        ClientEvent::ResourceUpdated { uri } => ServerNotice::ResourceUpdated {
            server: name.to_owned(),
            uri,
        },
        _ => return,
    };
    // No subscriber is fine.
    let _ = inner.notices.send(notice);
}

/// `tools/list_changed`: list again, replace this server's tools, rewrite the cache.
async fn relist<C: Connector>(
    inner: &Arc<Inner<C>>,
    name: &str,
    generation: u64,
    client: &Arc<C::Conn>,
) {
    match client.list_tools().await {
        Ok(tools) => {
            let Some(config) = inner.config_of(name, generation) else {
                return;
            };
            let tools: Arc<[ToolDefinition]> = tools.into();
            let (tools, held) = inner.pinned(name, &config, tools);
            store_tools(inner, name, &config, &tools, client.tools_cache_hints());
            if inner.update(name, generation, |e| {
                e.live_tools = Some(tools);
                e.held_tools = held;
            }) {
                inner.emit(ManagerEvent::ToolsChanged {
                    server: name.to_owned(),
                });
            }
        }
        Err(e) => tracing::warn!("re-listing tools after list_changed failed: {e}"),
    }
}

fn superseded(name: &str) -> ClientError {
    ClientError::Cancelled {
        server: name.to_owned(),
        method: "connect (superseded by a newer connection)".into(),
    }
}

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
