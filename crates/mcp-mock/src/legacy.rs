//! The legacy HTTP+SSE transport (protocol 2024-11-05) on the server side, which rmcp does not
//! provide: `GET /sse` opens a session's event stream, whose first event (`endpoint`) names
//! `/message?sessionId=ID`; the client POSTs its messages there (answered 202) and reads the
//! server's on the stream as `message` events. A session ends when its stream is closed.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ProtocolVersion, ServerJsonRpcMessage};
use rmcp::service::ServerInitializeError;
use rmcp::transport::sink_stream::SinkStreamTransport;
use tokio_util::sync::CancellationToken;

use super::server::MockServer;
use super::transport::MockTransport;

/// Messages from the client waiting for the server, per session.
const INBOX: usize = 64;

/// The open sessions: where to deliver each session's POSTs.
#[derive(Clone)]
struct Sessions {
    server: MockServer,
    forced_version: Option<ProtocolVersion>,
    inboxes: Arc<Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>>,
    next_id: Arc<AtomicU64>,
}

/// The routes `/sse` and `/message`.
pub(crate) fn router(server: MockServer, forced_version: Option<ProtocolVersion>) -> Router {
    let sessions = Sessions {
        server,
        forced_version,
        inboxes: Arc::default(),
        next_id: Arc::default(),
    };
    Router::new()
        .route("/sse", get(open_stream))
        .route("/message", post(deliver))
        .with_state(sessions)
}

/// `GET /sse`: start a session served by the mock, and stream its messages.
async fn open_stream(State(sessions): State<Sessions>) -> Response {
    // Unguessable enough for a test server; unique within the process.
    let id = format!(
        "{:x}-{:x}",
        std::process::id(),
        sessions.next_id.fetch_add(1, Ordering::SeqCst)
    );
    let (inbox, from_client) = mpsc::channel::<ClientJsonRpcMessage>(INBOX);
    let (to_client, outbox) = mpsc::unbounded::<ServerJsonRpcMessage>();
    sessions
        .inboxes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id.clone(), inbox);

    let transport = MockTransport::new(
        SinkStreamTransport::new(to_client, from_client),
        sessions.forced_version.clone(),
        None,
        CancellationToken::new(),
    );
    let server = sessions.server.clone();
    tokio::spawn(async move {
        match rmcp::serve_server(server, transport).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {}
            Err(e) => eprintln!("mcpr mock: legacy SSE session failed: {e}"),
        }
    });

    let endpoint = format!("event: endpoint\ndata: /message?sessionId={id}\n\n");
    let messages = outbox.map(|message| {
        let data = serde_json::to_string(&message).unwrap_or_default();
        format!("event: message\ndata: {data}\n\n")
    });
    // When the client goes away the body is dropped, and with it this guard: the session's
    // inbox is removed, the server sees the end of its input and stops.
    let guard = SessionGuard {
        id,
        inboxes: sessions.inboxes.clone(),
    };
    let events = futures::stream::once(async move { endpoint })
        .chain(messages)
        .map(move |event| {
            let _keep = &guard;
            Ok::<_, Infallible>(Bytes::from(event))
        });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(events),
    )
        .into_response()
}

/// Removes a session's inbox when its event stream ends.
struct SessionGuard {
    id: String,
    inboxes: Arc<Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.inboxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

#[derive(serde::Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// `POST /message?sessionId=ID`: hand one client message to its session.
async fn deliver(
    State(sessions): State<Sessions>,
    Query(query): Query<SessionQuery>,
    body: Bytes,
) -> Response {
    let message = match serde_json::from_slice::<ClientJsonRpcMessage>(&body) {
        Ok(message) => message,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("invalid JSON-RPC message: {e}\n"),
            )
                .into_response();
        }
    };
    let inbox = sessions
        .inboxes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&query.session_id)
        .cloned();
    let Some(mut inbox) = inbox else {
        return (StatusCode::NOT_FOUND, "no such session\n").into_response();
    };
    match inbox.send(message).await {
        Ok(()) => (StatusCode::ACCEPTED, "Accepted").into_response(),
        Err(_) => (StatusCode::NOT_FOUND, "session closed\n").into_response(),
    }
}
