//! The mock's streamable HTTP sessions: rmcp's in-memory ones, except that a request for a
//! session that has ended gets `404 Not Found`, as the transport asks of a server, so that
//! its client opens a new session.
//!
//! rmcp answers 404 for a session id it does not hold. But a session whose service has just
//! ended (expired, closed) stays in its table for a moment, and a request that finds it there
//! fails on the way into the session with "Session service terminated", which rmcp answers
//! with `500`. [`Sessions`] notes such failures for the request at hand, and
//! [`not_found_when_ended`] (a middleware around the service) turns that request's answer into
//! the 404 it should have been.

use std::cell::Cell;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId,
};

tokio::task_local! {
    /// Set when the request being served found its session ended.
    static ENDED: Cell<bool>;
}

/// rmcp's in-memory sessions, noting requests that find their session ended.
pub(crate) struct Sessions(pub LocalSessionManager);

/// Whether `error` says the session is gone (unknown, or its service has ended).
fn is_ended(error: &LocalSessionManagerError) -> bool {
    matches!(
        error,
        LocalSessionManagerError::SessionNotFound(_)
            | LocalSessionManagerError::SessionError(SessionError::SessionServiceTerminated)
    )
}

/// Note, for the request being served, that its session is gone.
fn note<T>(result: Result<T, LocalSessionManagerError>) -> Result<T, LocalSessionManagerError> {
    if let Err(error) = &result
        && is_ended(error)
    {
        // Outside a request (a session closed by the server itself) there is no one to tell.
        let _ = ENDED.try_with(|ended| ended.set(true));
    }
    result
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.0.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        // Not noted: a 404 answers only a request that named its session, and `initialize`
        // names none.
        self.0.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.0.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.0.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        note(self.0.create_stream(id, message).await)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        note(self.0.accept_message(id, message).await)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        note(self.0.create_standalone_stream(id).await)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        note(self.0.resume(id, last_event_id).await)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.0.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.0.event_store()
    }
}

/// The middleware (`axum::middleware::from_fn`) around the MCP service: a request that found
/// its session ended gets 404, whatever the service answered.
pub(crate) async fn not_found_when_ended(request: Request, next: Next) -> Response {
    ENDED
        .scope(Cell::new(false), async move {
            let response = next.run(request).await;
            if ENDED.with(Cell::get) {
                return (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "Not Found: Session not found",
                )
                    .into_response();
            }
            response
        })
        .await
}
