//! The HTTP endpoint's fast path for the request it mostly serves: a stateless 2026-07-28
//! `tools/call` POST.
//!
//! rmcp's streamable HTTP service serves such a request by building a whole server service
//! for it (a new handler, a one-shot transport, a service loop on a task of its own, channels
//! between them), typing the body into its message enum and back into a JSON value for its
//! header checks, and answering with a stream of server-sent events the `http` module then
//! rewrites chunk by chunk. For a call that is most of what the gateway adds. So the request
//! is looked at here first ([`take`]): one that passes every check rmcp would make, and that
//! makes the handler send nothing but its progress and its answer (no log level, no search
//! that changes the client's list), is read in one pass (`client_line`), run through the same
//! handler rmcp would call, and answered from the tool's output as the server sent it (see
//! `relay`). Every other request, and any this path is not sure of (an `Origin` header, a
//! `Host` it does not recognise, headers that disagree with the body, a call of a tool that
//! asks for `Mcp-Param-*` headers, a body that is large, malformed or of another method),
//! goes on to rmcp unchanged and gets the answer it always
//! got. The bearer token is checked before this, by the `http` module's outer layer.
//!
//! The answer is one `application/json` body, which a client must accept (rmcp requires it to
//! accept both JSON and event streams), with the HTTP status rmcp gives it; a call whose
//! progress comes before its answer is answered with an event stream instead, the progress as
//! it comes and the answer last (see `http_progress`). A client that leaves before the answer
//! drops the request, and with it the backend call, whose server is told it was cancelled
//! (see `input`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use rmcp::model::{
    ErrorCode, ProgressNotificationParam, ProtocolVersion, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::client_line::{Call, FastLine, LineReader};
use super::http_progress::{ProgressRoutes, Route, RoutingTransport};
use crate::gateway::Gateway;
use crate::gateway::answer::Answered;
use crate::gateway::input::Asker;
use crate::gateway::search_mode::SEARCH_TOOL;

/// Largest body this path reads (by its `Content-Length`); a larger one goes to rmcp as it
/// comes in, which has its own bound.
const FAST_BODY_MAX: usize = 1024 * 1024;

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const MCP_METHOD: &str = "mcp-method";
const MCP_NAME: &str = "mcp-name";
const SESSION_ID: &str = "mcp-session-id";

/// What the fast path of one endpoint needs.
pub(super) struct FastCalls {
    gateway: Gateway,
    /// The peer the calls' contexts name (see `http_progress`).
    peer: Peer<RoleServer>,
    /// Where the calls' progress goes.
    routes: Arc<ProgressRoutes>,
    /// The service behind `peer`, kept running while the endpoint serves.
    _service: RunningService<RoleServer, Gateway>,
    /// The host names a request may name, on a loopback address (`None`: any).
    hosts: Option<Vec<String>>,
    /// Cancelled when the endpoint shuts down.
    stop: CancellationToken,
    /// What the last call's metadata said: clients send the same metadata with every call
    /// but its progress token, and what it says depends on its text alone.
    lines: std::sync::Mutex<LineReader>,
}

impl FastCalls {
    /// The fast path of `gateway`'s endpoint; `hosts` as rmcp checks them (`None`: any).
    pub(super) fn new(
        gateway: Gateway,
        hosts: Option<Vec<String>>,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let routes = Arc::new(ProgressRoutes::default());
        let service = rmcp::service::serve_directly(
            gateway.for_new_client(),
            RoutingTransport(routes.clone()),
            None,
        );
        Arc::new(FastCalls {
            peer: service.peer().clone(),
            routes,
            gateway,
            _service: service,
            hosts,
            stop,
            lines: std::sync::Mutex::default(),
        })
    }
}

/// Answer a stateless 2026-07-28 `tools/call` POST here if it may be; pass anything else on.
pub(super) async fn take(
    State(fast): State<Arc<FastCalls>>,
    request: Request,
    next: Next,
) -> Response {
    if !may_take(&fast, request.method(), request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, FAST_BODY_MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::debug!("gateway: a request's body could not be read: {e}");
            return (
                StatusCode::BAD_REQUEST,
                "Bad Request: the body could not be read",
            )
                .into_response();
        }
    };
    let mut lines = fast.lines.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let read = lines.read(&bytes);
    *fast.lines.lock().unwrap_or_else(|e| e.into_inner()) = lines;
    let call = match read {
        Some(FastLine::Call(call)) if fits(&fast.gateway, &parts.headers, &call) => call,
        _ => {
            return next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
        }
    };
    let id = call.id.clone();
    let gateway = fast.gateway.for_new_client();
    let context = RequestContext::new(id.clone(), fast.peer.clone());
    // The handler sends the call's progress under a token of the gateway's own.
    let (route, progress) = match call.progress {
        Some(token) => {
            let (route, progress) = fast.routes.open(token);
            (Some(route), Some(progress))
        }
        None => (None, None),
    };
    let said = call.said;
    let token = route.as_ref().map(Route::token);
    let mut asker = Asker::from_parts(said.version, said.declared, token, None, &context);
    asker.trace = said.trace;
    let answering: Answering = Box::pin(async move {
        let answered = gateway.answer_call(call.request, &context, asker).await;
        drop(route);
        answered
    });
    let Some(mut progress) = progress else {
        return match until_stopped(&fast.stop, answering).await {
            Some(answered) => answer(id, answered),
            None => shutting_down(),
        };
    };
    // Answered in one JSON body unless progress comes first: then as an event stream, the
    // progress as it comes and the answer last.
    let mut answering = answering;
    let first = tokio::select! {
        biased;
        () = fast.stop.cancelled() => return shutting_down(),
        first = progress.recv() => first,
        answered = &mut answering => {
            let mut events = Vec::new();
            while let Ok(param) = progress.try_recv() {
                push_progress(&mut events, &param);
            }
            if events.is_empty() {
                return answer(id, answered);
            }
            push_answer(&mut events, &id, answered);
            return event_stream(Body::from(events));
        }
    };
    let mut head = Vec::new();
    if let Some(param) = &first {
        push_progress(&mut head, param);
    }
    let stop = fast.stop.clone();
    let rest = futures::stream::unfold(Some((answering, progress, id)), move |state| {
        let stop = stop.clone();
        async move {
            let (mut answering, mut progress, id) = state?;
            let mut events = Vec::new();
            tokio::select! {
                biased;
                () = stop.cancelled() => None,
                Some(param) = progress.recv() => {
                    push_progress(&mut events, &param);
                    Some((Ok::<_, std::convert::Infallible>(events), Some((answering, progress, id))))
                }
                answered = &mut answering => {
                    while let Ok(param) = progress.try_recv() {
                        push_progress(&mut events, &param);
                    }
                    push_answer(&mut events, &id, answered);
                    Some((Ok(events), None))
                }
            }
        }
    });
    let head = futures::stream::once(std::future::ready(Ok(head)));
    event_stream(Body::from_stream(head.chain(rest)))
}

/// A call being answered.
type Answering = futures::future::BoxFuture<'static, Result<Answered, McpError>>;

/// `answering`'s answer, unless the endpoint shuts down first.
async fn until_stopped(
    stop: &CancellationToken,
    answering: Answering,
) -> Option<Result<Answered, McpError>> {
    tokio::select! {
        answered = answering => Some(answered),
        () = stop.cancelled() => None,
    }
}

fn shutting_down() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: shutting down",
    )
        .into_response()
}

/// A response of server-sent events with `body`.
fn event_stream(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, EVENT_STREAM),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// Append a progress notification as an event.
fn push_progress(events: &mut Vec<u8>, param: &ProgressNotificationParam) {
    let message = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": param,
    });
    events.extend_from_slice(b"data: ");
    events.extend_from_slice(message.to_string().as_bytes());
    events.extend_from_slice(b"\n\n");
}

/// Append the answer as an event.
fn push_answer(events: &mut Vec<u8>, id: &RequestId, answered: Result<Answered, McpError>) {
    match message_body(id.clone(), answered) {
        Ok((_, body)) => {
            events.extend_from_slice(b"data: ");
            events.extend_from_slice(body.trim_ascii_end());
            events.extend_from_slice(b"\n\n");
        }
        Err(e) => tracing::warn!("gateway: an answer could not be written: {e}"),
    }
}

/// Whether the request's method and headers are those of a call this path may take, before
/// its body is read.
fn may_take(fast: &FastCalls, method: &Method, headers: &HeaderMap) -> bool {
    method == Method::POST
        // A browser's request, or one of a session: rmcp's checks and routes.
        && !headers.contains_key(header::ORIGIN)
        && !headers.contains_key(SESSION_ID)
        && host_allowed(fast.hosts.as_deref(), headers)
        && accepts_both(headers)
        && is_json(headers)
        && one(headers, MCP_METHOD).is_some_and(|method| method == "tools/call")
        && headers
            .get(header::CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok()?.parse::<usize>().ok())
            .is_some_and(|length| length <= FAST_BODY_MAX)
}

/// Whether `call`, sent with `headers`, passes every check rmcp makes of it, and needs
/// nothing but its answer.
fn fits(gateway: &Gateway, headers: &HeaderMap, call: &Call<'_>) -> bool {
    let said = &call.said;
    let Some(version) = &said.version else {
        return false;
    };
    let name = &call.request.params.name;
    let header_version = one(headers, PROTOCOL_VERSION);
    *version >= ProtocolVersion::V_2026_07_28
        && said.has_required_meta
        && ServerHandler::supported_protocol_versions(gateway).contains(version)
        && header_version.is_some_and(|v| v.as_bytes() == version.as_str().as_bytes())
        // A name sent encoded is rmcp's to decode.
        && one(headers, MCP_NAME)
            .is_some_and(|sent| sent.as_bytes() == name.as_bytes() && !name.starts_with("=?"))
        // These make the handler send more than the answer and its progress: log lines, or
        // the client's changed list after a search.
        && said.log_level.is_none()
        && name != SEARCH_TOOL
        // Its `Mcp-Param-*` headers are rmcp's to check.
        && gateway.tool_with_param_headers(name).is_none()
}

/// The only value of header `name`, if it has exactly one.
fn one<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a HeaderValue> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then_some(value)
}

/// Whether the `Host` header names a host the endpoint serves (any, when `hosts` is `None`).
fn host_allowed(hosts: Option<&[String]>, headers: &HeaderMap) -> bool {
    let Some(hosts) = hosts else {
        return true;
    };
    one(headers, header::HOST.as_str())
        .and_then(|host| host.to_str().ok())
        .and_then(|host| axum::http::uri::Authority::try_from(host).ok())
        .is_some_and(|authority| {
            let named = authority.host().trim_matches(['[', ']']);
            hosts.iter().any(|host| host.eq_ignore_ascii_case(named))
        })
}

/// Whether the client accepts both JSON and event streams, as rmcp requires.
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for media in value.split(',') {
            let essence = media.split(';').next().unwrap_or_default().trim();
            json |= essence.eq_ignore_ascii_case(JSON);
            events |= essence.eq_ignore_ascii_case(EVENT_STREAM);
        }
    }
    json && events
}

/// Whether the body is said to be JSON.
fn is_json(headers: &HeaderMap) -> bool {
    one(headers, header::CONTENT_TYPE.as_str())
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case(JSON)
        })
}

/// The HTTP response to request `id` that got `answered`.
fn answer(id: RequestId, answered: Result<Answered, McpError>) -> Response {
    match message_body(id, answered) {
        Ok((status, body)) => (status, [(header::CONTENT_TYPE, JSON)], body).into_response(),
        Err(e) => {
            tracing::warn!("gateway: an answer could not be written: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error: the answer could not be written",
            )
                .into_response()
        }
    }
}

/// The JSON-RPC message answering request `id`, and the HTTP status rmcp gives it.
fn message_body(
    id: RequestId,
    answered: Result<Answered, McpError>,
) -> serde_json::Result<(StatusCode, Vec<u8>)> {
    Ok(match answered {
        Ok(Answered::Output(output, modern)) => (
            StatusCode::OK,
            super::relay::answer_line(&id, &output, modern)?,
        ),
        Ok(Answered::Response(response)) => {
            let message = ServerJsonRpcMessage::response(response.into(), id);
            (
                StatusCode::OK,
                serde_json::to_vec(&super::relay::unwrap(message))?,
            )
        }
        Err(error) => (
            error_status(error.code),
            serde_json::to_vec(&ServerJsonRpcMessage::error(error, Some(id)))?,
        ),
    })
}

/// The HTTP status rmcp gives a 2026-07-28 request's error (of a request whose metadata is
/// well formed, as every request this path takes is).
fn error_status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn accept_needs_both_media_types() {
        assert!(accepts_both(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_both(&headers(&[
            ("accept", "application/json;q=0.9"),
            ("accept", "TEXT/EVENT-STREAM"),
        ])));
        assert!(!accepts_both(&headers(&[("accept", "application/json")])));
        assert!(!accepts_both(&headers(&[])));
    }

    #[test]
    fn hosts_are_matched_by_name_whatever_the_port() {
        let hosts = ["localhost".to_owned(), "::1".to_owned()];
        let allowed = |host: &str| host_allowed(Some(&hosts), &headers(&[("host", host)]));
        assert!(allowed("localhost:8931"));
        assert!(allowed("LOCALHOST"));
        assert!(allowed("[::1]:80"));
        assert!(!allowed("evil.example:8931"));
        assert!(!host_allowed(Some(&hosts), &headers(&[])));
        assert!(host_allowed(None, &headers(&[])));
    }

    #[test]
    fn a_header_sent_twice_is_not_taken() {
        let twice = headers(&[("mcp-method", "tools/call"), ("mcp-method", "tools/call")]);
        assert!(one(&twice, MCP_METHOD).is_none());
    }
}
