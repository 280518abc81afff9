//! `--conformance --http`: both eras at `/mcp`.
//!
//! - A POST with `Mcp-Session-Id` belongs to a session of the `initialize` era (404 once the
//!   session is gone); a POST of `initialize` without `_meta` opens one. The answer is plain
//!   JSON when the handler finishes without talking, else an event stream carrying its
//!   notifications and requests to the client before the response; the client's answers
//!   come back as POSTs (202). A session's event streams open with a priming event (id,
//!   `retry:`) and are resumable: GET with `Last-Event-ID` carries on after that event (see
//!   [`super::resume`]). GET without it opens the session's standalone stream; DELETE ends
//!   it.
//! - Any other POST is a 2026-07-28 request, checked by [`super::modern`] and answered the
//!   same way, except `subscriptions/listen`, whose event stream stays open.
//!
//! Every request first passes the DNS-rebinding guard: the `Host` must name this server (a
//! loopback name, or the address it listens on) and an `Origin`, when sent, must be a
//! loopback origin. Anything else is 403.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::dispatch;
use super::exchange::{Era, Exchange};
use super::modern::{self, Headers, REMOVED};
use super::{Failure, Server, response};

/// How long open streams may take to end after SIGINT or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// Largest request body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// The state every handler shares.
#[derive(Clone)]
struct App {
    server: Arc<Server>,
    /// The address the server listens on (an allowed `Host`).
    bound: SocketAddr,
}

/// Serves until SIGINT or SIGTERM.
pub(crate) async fn serve(server: Arc<Server>, addr: SocketAddr) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr().context("no local address")?;
    let app = App { server, bound };
    let router = Router::new()
        .route("/mcp", axum::routing::post(post).get(get).delete(delete))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app);
    // Tests and scripts read this line to find the port.
    eprintln!("listening on http://{bound}/mcp");
    let stop = CancellationToken::new();
    let shutdown = stop.clone();
    tokio::spawn(async move {
        super::super::http::interrupted().await;
        shutdown.cancel();
    });
    let serving =
        axum::serve(listener, router).with_graceful_shutdown(stop.clone().cancelled_owned());
    tokio::select! {
        result = serving => result.context("the HTTP server failed"),
        () = async {
            stop.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    }
}

/// The DNS-rebinding guard.
async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let host_ok = host.is_some_and(|h| allowed_host(h, app.bound));
    let origin_ok = origin.is_none_or(|o| {
        o.strip_prefix("http://")
            .or_else(|| o.strip_prefix("https://"))
            .is_some_and(|h| allowed_host(h, app.bound))
    });
    if !host_ok || !origin_ok {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: the Host or Origin header does not name this server",
        );
    }
    next.run(request).await
}

/// Whether `host` (`name[:port]`) names a loopback interface or the bound address.
fn allowed_host(host: &str, bound: SocketAddr) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    matches!(name, "localhost" | "127.0.0.1" | "::1") || name == bound.ip().to_string()
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], text).into_response()
}

/// A JSON body with `status`.
fn json_body(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// An error response with the failure's status.
fn error(id: &Value, failure: &Failure) -> Response {
    json_body(failure.status, &response(id, &Err(failure.clone())))
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
}

/// The MCP headers of a request.
fn mcp_headers(headers: &HeaderMap) -> Headers {
    Headers {
        protocol_version: header_text(headers, "mcp-protocol-version"),
        method: header_text(headers, "mcp-method"),
        name: header_text(headers, "mcp-name"),
        params: headers
            .iter()
            .filter_map(|(name, value)| {
                let suffix = name.as_str().strip_prefix("mcp-param-")?;
                Some((suffix.to_owned(), value.to_str().ok()?.trim().to_owned()))
            })
            .collect(),
    }
}

async fn post(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    if body.len() > MAX_BODY {
        return error(
            &Value::Null,
            &Failure::new(-32600, "request too large").with_status(413),
        );
    }
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return error(
            &Value::Null,
            &Failure::new(-32700, "Parse error").with_status(400),
        );
    };
    let session_id = header_text(&headers, "mcp-session-id");
    let session = match &session_id {
        Some(id) => match app.server.session(id) {
            Some(session) => Some(session),
            None => {
                let id = message.get("id").cloned().unwrap_or(Value::Null);
                return error(
                    &id,
                    &Failure::new(-32001, "Session not found").with_status(404),
                );
            }
        },
        None => None,
    };
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // A response from the client, to a request the server sent on a session stream.
        let delivered = session.is_some_and(|s| s.deliver(message.clone()));
        return if delivered {
            StatusCode::ACCEPTED.into_response()
        } else {
            error(
                &Value::Null,
                &Failure::new(-32600, "Invalid Request").with_status(400),
            )
        };
    };
    let method = method.to_owned();
    let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    let Some(id) = message.get("id").cloned() else {
        // Notifications (`notifications/initialized`, `notifications/cancelled`, ...).
        return StatusCode::ACCEPTED.into_response();
    };
    let headers = mcp_headers(&headers);
    if let Some(session) = session {
        return served(app.server, Era::Session(session), method, params, id, false).await;
    }
    if modern::is_modern(&params, headers.protocol_version.as_deref()) {
        return modern_request(app.server, method, params, id, &headers).await;
    }
    if method == "initialize" {
        let session = match app.server.open_session() {
            Ok(session) => session,
            Err(e) => return error(&id, &Failure::new(-32000, e.to_string()).with_status(503)),
        };
        let result = dispatch::initialize(&app.server, &session, &params);
        let mut answer = json_body(200, &response(&id, &Ok(result)));
        if let Ok(value) = HeaderValue::from_str(&session.id) {
            answer.headers_mut().insert("mcp-session-id", value);
        }
        return answer;
    }
    error(
        &id,
        &Failure::new(
            -32000,
            "Bad Request: no Mcp-Session-Id (send initialize first) and no 2026-07-28 _meta",
        )
        .with_status(400),
    )
}

/// A 2026-07-28 request.
async fn modern_request(
    server: Arc<Server>,
    method: String,
    params: Value,
    id: Value,
    headers: &Headers,
) -> Response {
    let meta = match modern::check(&method, &params, Some(headers)) {
        Ok(meta) => meta,
        Err(failure) => return error(&id, &failure),
    };
    if REMOVED.contains(&method.as_str()) {
        return error(&id, &Failure::method_not_found(&method).with_status(404));
    }
    if method == "subscriptions/listen" {
        return listen(&server, &params, id);
    }
    served(server, Era::Stateless(meta), method, params, id, true).await
}

/// `subscriptions/listen`: an event stream that opens with the acknowledgement and then
/// carries the list changes the client asked for, until the client goes away.
fn listen(server: &Server, params: &Value, id: Value) -> Response {
    let wants =
        |key: &str| params.pointer(&format!("/notifications/{key}")) == Some(&Value::Bool(true));
    let (tools, prompts) = (wants("toolsListChanged"), wants("promptsListChanged"));
    let mut honoured = serde_json::Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), Value::Bool(true));
    }
    if prompts {
        honoured.insert("promptsListChanged".into(), Value::Bool(true));
    }
    // Its resources never change, so every subscription is kept, vacuously.
    if let Some(uris) = params
        .pointer("/notifications/resourceSubscriptions")
        .filter(|uris| uris.is_array())
    {
        honoured.insert("resourceSubscriptions".into(), uris.clone());
    }
    let ack = super::notification(
        "notifications/subscriptions/acknowledged",
        json!({
            "_meta": {"io.modelcontextprotocol/subscriptionId": id},
            "notifications": honoured,
        }),
    );
    let mut rx = server.listen(id, tools, prompts);
    let (frames, body) = event_stream();
    let _ = frames.send(event(&ack));
    tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            if frames.send(event(&message)).is_err() {
                break;
            }
        }
    });
    sse_response(body)
}

/// Runs a request and answers it: plain JSON if the handler finishes without sending
/// anything, else an event stream with what it sends, then the response. A session's event
/// stream is resumable (see [`super::resume`]); its handler may close the connection early.
async fn served(
    server: Arc<Server>,
    era: Era,
    method: String,
    params: Value,
    id: Value,
    modern: bool,
) -> Response {
    let (out, mut rx) = mpsc::unbounded_channel();
    let session = match &era {
        Era::Session(session) => Some(session.clone()),
        Era::Stateless(_) => None,
    };
    let (closer, mut close_rx) = mpsc::unbounded_channel();
    let progress_token = params.pointer("/_meta/progressToken").cloned();
    let x = Exchange {
        out,
        era,
        progress_token,
        closer: session.is_some().then_some(closer),
    };
    let (done_tx, mut done_rx) = oneshot::channel();
    tokio::spawn(async move {
        let mut reply = dispatch::handle(&server, &method, &params, &x).await;
        drop(x);
        if modern {
            match &mut reply {
                Ok(result) => modern::decorate(&method, result),
                Err(failure) if failure.code == -32601 => failure.status = 404,
                Err(_) => {}
            }
        }
        let _ = done_tx.send(reply);
    });
    let stopped = || Err(Failure::new(-32603, "the handler stopped").with_status(500));
    let mut early = Vec::new();
    let mut close_early = false;
    let reply = tokio::select! {
        biased;
        reply = &mut done_rx => Some(reply.unwrap_or_else(|_| stopped())),
        message = rx.recv() => {
            early.extend(message);
            None
        }
        Some(()) = close_rx.recv() => {
            close_early = true;
            None
        }
    };
    while let Ok(message) = rx.try_recv() {
        early.push(message);
    }
    if early.is_empty() && !close_early {
        let reply = match reply {
            Some(reply) => reply,
            None => done_rx.await.unwrap_or_else(|_| stopped()),
        };
        let status = reply.as_ref().err().map_or(200, |f| f.status);
        return json_body(status, &response(&id, &reply));
    }
    let (frames, body) = event_stream();
    let sink = match &session {
        Some(session) => Sink::Resumable(session.streams.open(frames)),
        None => Sink::Plain(frames),
    };
    tokio::spawn(async move {
        for message in early {
            sink.send(&message);
        }
        if close_early {
            sink.close_connection();
        }
        loop {
            tokio::select! {
                biased;
                message = rx.recv() => match message {
                    Some(message) => sink.send(&message),
                    None => break,
                },
                Some(()) = close_rx.recv() => sink.close_connection(),
            }
        }
        let reply = match reply {
            Some(reply) => reply,
            None => done_rx.await.unwrap_or_else(|_| stopped()),
        };
        sink.send(&response(&id, &reply));
        sink.finish();
    });
    sse_response(body)
}

/// Where a request's event stream goes.
enum Sink {
    /// Straight to its one connection (2026-07-28).
    Plain(mpsc::UnboundedSender<Bytes>),
    /// Through a session's resumable stream.
    Resumable(Arc<super::resume::Stream>),
}

impl Sink {
    fn send(&self, message: &Value) {
        match self {
            Sink::Plain(frames) => {
                let _ = frames.send(event(message));
            }
            Sink::Resumable(stream) => stream.push(message),
        }
    }

    fn close_connection(&self) {
        if let Sink::Resumable(stream) = self {
            stream.close_connection();
        }
    }

    fn finish(self) {
        if let Sink::Resumable(stream) = self {
            stream.finish();
        }
    }
}

/// One server-sent event carrying `message`.
fn event(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// A channel of events and the body that streams them until every sender is gone.
fn event_stream() -> (mpsc::UnboundedSender<Bytes>, Body) {
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|frame| (Ok::<_, Infallible>(frame), rx))
    });
    (tx, Body::from_stream(stream))
}

fn sse_response(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// GET: the standalone stream of a session, or with `Last-Event-ID` the rest of one of its
/// request streams. Without a session there is nothing to stream (2026-07-28 clients use
/// `subscriptions/listen`).
async fn get(State(app): State<App>, headers: HeaderMap) -> Response {
    let Some(id) = header_text(&headers, "mcp-session-id") else {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET needs an Mcp-Session-Id; 2026-07-28 clients POST subscriptions/listen",
        );
    };
    let Some(session) = app.server.session(&id) else {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    };
    if let Some(last) = header_text(&headers, "last-event-id") {
        let (frames, body) = event_stream();
        if session.streams.resume(&last, frames) {
            return sse_response(body);
        }
        return plain(
            StatusCode::NOT_FOUND,
            "Last-Event-ID names no stream of this session (any more)",
        );
    }
    let mut rx = session.open_standalone();
    let (frames, body) = event_stream();
    tokio::spawn(async move {
        // A comment line first, so that the client sees the stream open at once.
        let _ = frames.send(Bytes::from_static(b": stream open\n\n"));
        while let Some(message) = rx.recv().await {
            if frames.send(event(&message)).is_err() {
                break;
            }
        }
    });
    sse_response(body)
}

/// DELETE: ends a session.
async fn delete(State(app): State<App>, headers: HeaderMap) -> Response {
    let Some(id) = header_text(&headers, "mcp-session-id") else {
        return plain(StatusCode::BAD_REQUEST, "DELETE needs an Mcp-Session-Id");
    };
    if app.server.close_session(&id) {
        StatusCode::OK.into_response()
    } else {
        plain(StatusCode::NOT_FOUND, "Session not found")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_must_name_this_server() {
        let bound: SocketAddr = "127.0.0.1:3000".parse().expect("addr");
        assert!(allowed_host("localhost:3000", bound));
        assert!(allowed_host("127.0.0.1", bound));
        assert!(allowed_host("[::1]:3000", bound));
        assert!(!allowed_host("evil.example.com", bound));
        assert!(!allowed_host("evil.example.com:3000", bound));
        assert!(!allowed_host("localhost.evil.example.com", bound));
    }
}
