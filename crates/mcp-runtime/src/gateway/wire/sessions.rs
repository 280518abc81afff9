//! The HTTP gateway's sessions: rmcp's in-memory ones, held to the rules of
//! [`super::admission`], and answered as the streamable HTTP transport asks.
//!
//! - A client past a cap gets `503 Service Unavailable` with `Retry-After`.
//! - A session not initialised within [`INIT_GRACE`](super::admission::INIT_GRACE) is
//!   closed; an initialised one is closed after [`IDLE_EXPIRY`] without a message (rmcp's
//!   keep-alive).
//! - A request for a session that is unknown, expired, closed or whose service has ended gets
//!   `404 Not Found`, so that its client opens a new one. rmcp answers 404 for a session id
//!   it does not hold, but a session whose service has just ended stays in its table for a
//!   moment, and a request that finds it there fails inside rmcp, which answers `500`.
//!
//! rmcp's session manager is not told which request it serves, nor can it choose the status
//! of its errors. So [`guard`], a middleware right around the MCP service, opens a
//! task-local scope for each request with the client's address; [`Sessions`] reads the
//! address when a session opens, and notes in the scope when a session is refused or gone;
//! the middleware then answers 503 or 404 instead of what rmcp made of the error.

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManagerError, SessionError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, SessionManager,
};

use super::admission::{Admission, Peer, SessionLimits};

/// How long an initialised session lives without a message from or to its client.
pub const IDLE_EXPIRY: Duration = Duration::from_secs(300);

/// How often sessions past the grace for initialisation are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

tokio::task_local! {
    /// The request being served.
    static REQUEST: Scope;
}

/// What the session manager learns of, and tells about, the request being served.
struct Scope {
    peer: Peer,
    verdict: Cell<Verdict>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// As rmcp answered.
    Served,
    /// The request's session is gone: 404.
    Gone,
    /// No session may open now: 503, try again after this long.
    Full(Duration),
}

/// Tell the request being served how it ends (outside a request, e.g. a session closed by
/// the sweep, there is no one to tell).
fn tell(verdict: Verdict) {
    let _ = REQUEST.try_with(|scope| scope.verdict.set(verdict));
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError<E> {
    /// A cap is reached.
    #[error("too many sessions")]
    Full,
    /// The session is unknown, expired or closed.
    #[error("session not found")]
    Gone,
    /// rmcp's own error.
    #[error(transparent)]
    Inner(E),
}

/// rmcp's sessions (`M`) under the gateway's caps and expiry.
pub(crate) struct Sessions<M> {
    inner: M,
    admission: Mutex<Admission<SessionId>>,
}

impl<M> Sessions<M>
where
    M: SessionManager<Error = LocalSessionManagerError>,
{
    /// `inner` under `limits`; sessions past the grace are swept until it is dropped.
    pub(crate) fn new(inner: M, limits: SessionLimits) -> Arc<Self> {
        let sessions = Arc::new(Sessions {
            inner,
            admission: Mutex::new(Admission::new(limits)),
        });
        let weak = Arc::downgrade(&sessions);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SWEEP_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut closed_last = false;
            loop {
                every.tick().await;
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                if closed_last {
                    // The sessions closed a tick ago have ended by now.
                    super::relay::give_back_memory();
                }
                closed_last = sessions.sweep().await;
            }
        });
        sessions
    }

    /// Sessions open, openings under way included.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))] // read by the meters only
    pub(crate) fn open(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, Admission<SessionId>> {
        self.admission.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Close the sessions past the grace without having been initialised; whether there were.
    async fn sweep(&self) -> bool {
        let due = self.lock().expire(Instant::now());
        if !due.is_empty() {
            tracing::debug!("gateway: {} sessions never initialised closed", due.len());
        }
        for id in &due {
            self.close_inner(id).await;
        }
        !due.is_empty()
    }

    /// Close `id` in rmcp (which ends its service and its streams).
    async fn close_inner(&self, id: &SessionId) {
        if let Err(e) = self.inner.close_session(id).await {
            tracing::debug!("gateway: closing a session: {e}");
        }
    }

    /// `result`, with a session found gone noted for the request and told as such.
    fn gone_as_404<T>(
        &self,
        result: Result<T, LocalSessionManagerError>,
    ) -> Result<T, SessionsError<LocalSessionManagerError>> {
        result.map_err(|error| {
            if is_gone(&error) {
                tell(Verdict::Gone);
                SessionsError::Gone
            } else {
                SessionsError::Inner(error)
            }
        })
    }
}

/// Whether rmcp's `error` says the session is gone (unknown, or its service has ended).
fn is_gone(error: &LocalSessionManagerError) -> bool {
    matches!(
        error,
        LocalSessionManagerError::SessionNotFound(_)
            | LocalSessionManagerError::SessionError(SessionError::SessionServiceTerminated)
    )
}

/// Whether `message` shows that its session is in use by a client that completed the
/// handshake: `notifications/initialized`, or any request.
fn in_use(message: &ClientJsonRpcMessage) -> bool {
    match message {
        ClientJsonRpcMessage::Request(_) => true,
        ClientJsonRpcMessage::Notification(notification) => matches!(
            notification.notification,
            ClientNotification::InitializedNotification(_)
        ),
        _ => false,
    }
}

/// An admitted opening: gives its place back unless it got its session (also when the
/// request is dropped halfway).
struct Opening<'a, M>
where
    M: SessionManager<Error = LocalSessionManagerError>,
{
    sessions: &'a Sessions<M>,
    peer: Peer,
    done: bool,
}

impl<M> Drop for Opening<'_, M>
where
    M: SessionManager<Error = LocalSessionManagerError>,
{
    fn drop(&mut self) {
        if !self.done {
            self.sessions.lock().abandoned(self.peer);
        }
    }
}

impl<M> SessionManager for Sessions<M>
where
    M: SessionManager<Error = LocalSessionManagerError>,
{
    type Error = SessionsError<LocalSessionManagerError>;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let peer = REQUEST
            .try_with(|scope| scope.peer)
            .unwrap_or_else(|_| Peer::unknown());
        let admitted = self.lock().admit(peer, Instant::now());
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(refused) => {
                tell(Verdict::Full(refused.retry_after));
                return Err(SessionsError::Full);
            }
        };
        let mut opening = Opening {
            sessions: self,
            peer,
            done: false,
        };
        if let Some(evicted) = admitted.evicted {
            tracing::debug!("gateway: at the session cap; a session never initialised closed");
            self.close_inner(&evicted).await;
        }
        let (id, transport) = self
            .inner
            .create_session()
            .await
            .map_err(SessionsError::Inner)?;
        self.lock().opened(peer, id.clone(), Instant::now());
        opening.done = true;
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let result = self.inner.initialize_session(id, message).await;
        if result.as_ref().is_err_and(is_gone) && !self.lock().contains(id) {
            // Closed for room before its first answer: the sessions are full right now. (A
            // 404 answers only requests that name their session.)
            tell(Verdict::Full(Duration::from_secs(1)));
            return Err(SessionsError::Full);
        }
        result.map_err(SessionsError::Inner)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.lock().contains(id) {
            return Ok(false);
        }
        self.inner
            .has_session(id)
            .await
            .map_err(SessionsError::Inner)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock().remove(id);
        self.inner
            .close_session(id)
            .await
            .map_err(SessionsError::Inner)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if in_use(&message) {
            self.lock().initialized(id);
        }
        let created = self.inner.create_stream(id, message).await;
        self.gone_as_404(created)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if in_use(&message) {
            self.lock().initialized(id);
        }
        let accepted = self.inner.accept_message(id, message).await;
        self.gone_as_404(accepted)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let created = self.inner.create_standalone_stream(id).await;
        self.gone_as_404(created)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let resumed = self.inner.resume(id, last_event_id).await;
        self.gone_as_404(resumed)
    }

    async fn restore_session(
        &self,
        _id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Sessions live in this process only: one it does not hold is gone.
        Ok(RestoreOutcome::NotSupported)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// The middleware (`axum::middleware::from_fn`) right around the MCP service: it tells the
/// session manager the client's address, and answers 404 or 503 when the session manager
/// says so, whatever rmcp made of it.
pub(crate) async fn guard(request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(Peer::unknown, |ConnectInfo(addr)| Peer::of(addr.ip()));
    let scope = Scope {
        peer,
        verdict: Cell::new(Verdict::Served),
    };
    REQUEST
        .scope(scope, async move {
            let response = next.run(request).await;
            match REQUEST.with(|scope| scope.verdict.get()) {
                Verdict::Served => response,
                Verdict::Gone => (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "Not Found: Session not found",
                )
                    .into_response(),
                Verdict::Full(retry_after) => full(retry_after),
            }
        })
        .await
}

/// `503 Service Unavailable`, asking to retry after `retry_after`.
fn full(retry_after: Duration) -> Response {
    let seconds = retry_after.as_secs().max(1);
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (header::RETRY_AFTER, HeaderValue::from(seconds)),
        ],
        format!(
            "Service Unavailable: too many sessions open (from this address, or in all); \
             retry in {seconds} s\n"
        ),
    )
        .into_response()
}
