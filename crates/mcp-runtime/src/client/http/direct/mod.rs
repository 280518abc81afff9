//! The direct road of a `tools/call` to a streamable HTTP server: the calling task POSTs the
//! request itself on the process's pooled client and reads the answer, without rmcp's
//! transport worker.
//!
//! rmcp's worker costs every call a channel hop into its loop, its task and event queue, a
//! `serde_json::Value` copy of the request for its headers, the URL parsed again, the answer
//! parsed through its untagged message enums (its `flatten`s buffer every field), and when
//! the server answers with an event stream, rmcp's own SSE parse on top of ours. None of the
//! worker's state is needed for a call but the session: protocol 2026-07-28 has none, and a
//! server of the `initialize` era gets the session rmcp's worker last sent on (the worker
//! opens it, re-opens it when it expires, and closes it). Here the request is written once
//! from the borrowed parameters (the stdio road's writer), sent with the URL parsed at
//! connect time and the headers built then, and the answer (`application/json`, or the event
//! stream the call's answer comes on) read in one pass straight into a
//! [`ToolOutput`](crate::client::ToolOutput) by the stdio road's answer reader; the result
//! keeps every field the server sent.
//!
//! What the road does not take goes to rmcp's road unchanged:
//!
//! - before anything is sent: a server of the `initialize` era whose requests carry a stored
//!   OAuth credential (it gets no road) or that gave no session, a tool whose input schema
//!   asks for `Mcp-Param-*` headers (rmcp writes them from the schema), a name that needs the
//!   Base64 header form (2026-07-28);
//! - after: a 401 or 403 on a connection with OAuth, or a credential that cannot be read. The
//!   server refused the request before running it, so sending it again through rmcp's road,
//!   which refreshes, logs in or steps up, is safe.
//!
//! A 404 for the session (`initialize` era) says the server had expired it before the call
//! reached it: the road has rmcp's worker open a new session and sends the call on it (see
//! `session`). An event-stream answer is read here (the server chose it; the request cannot be
//! taken back): its notifications (progress, log lines) go to the connection's handler in the
//! order they came, a request the server asks on it (`initialize` era: sampling, elicitation,
//! roots, ping) goes to the call's asker through the handler and the answer is POSTed on the
//! session, a stream of that era that breaks is resumed after its last event, as rmcp's worker
//! resumes, and the call's answer goes to the caller. An event over the size limit fails the
//! call with a [`ClientError::Protocol`] naming the limit. Everything else fails as rmcp's
//! road fails: HTTP
//! statuses, refusals and TLS through the same classification, a timeout or cancellation with
//! `notifications/cancelled` sent to the server, a connection that breaks as
//! [`ClientError::Transport`], and an event stream that ends before its answer with
//! [`ClientError::AnswerLost`] (the caller calls again only a tool annotated read-only or
//! idempotent). One difference, on purpose: a `200 application/json` body that is not
//! JSON-RPC is a [`ClientError::Protocol`] showing the start of the body, where rmcp's road
//! reports a closed connection.

use std::collections::HashSet;
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt as _, StreamExt as _};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::model::RequestId;
use rmcp::model::{
    NumberOrString, ProgressToken, ProtocolVersion, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::plumbing::{self, HttpError};
use super::remote::DirectParts;
use super::streamable_http::{HttpClient, MAX_RESPONSE_BYTES, Turn};
use crate::auth::credential::ServerAuth;
use crate::client::ask::CallInput;
use crate::client::envelope::{Answer, RequestSettings, ToolAnswer};
use crate::client::model::tool_request::ToolRequest;
use crate::client::stdio::answer::{Delivered, FIRST_ID, NoResult, Reply, Wants, parse_answer};
use crate::client::stdio::decode::Expected;
use crate::client::{ClientError, McpClient, ToolDefinition};

mod session;

use session::Resumption;

const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const JSON: &str = "application/json";
/// How long a `notifications/cancelled` POST may take before it is given up.
const CANCEL_BOUND: Duration = Duration::from_secs(5);
const EVENT_STREAM: &str = "text/event-stream";

/// The direct road of one streamable HTTP connection.
pub(crate) struct HttpDirect {
    /// The process's pooled client (connections are kept alive between calls).
    client: reqwest::Client,
    /// Parsed once, at connect time.
    url: Url,
    /// Every call's headers: the configured ones, `Accept`, `Content-Type`, the protocol
    /// version, and for 2026-07-28 `Mcp-Method`.
    headers: HeaderMap,
    /// OAuth: the token to send; a refusal sends the call through rmcp's road.
    auth: Option<Arc<ServerAuth>>,
    /// Request ids, from the stdio road's [`FIRST_ID`]: above anything rmcp's counter gives.
    next: AtomicU64,
    /// Tools of the last listing whose input schema asks for `Mcp-Param-*` headers.
    param_header_tools: Mutex<HashSet<String>>,
    /// A server of the `initialize` era: rmcp's HTTP backend of the connection, whose session
    /// the calls go on and which resumes a broken stream. `None` for 2026-07-28, which has no
    /// session.
    backend: Option<HttpClient>,
    /// Answered streams being read to their end (see `finish_in_background`).
    finishing: Arc<AtomicUsize>,
}

/// What a call the road takes is sent with.
#[derive(Clone)]
pub(in crate::client) enum Ticket {
    /// 2026-07-28: its `Mcp-Name` header.
    Named(HeaderValue),
    /// The `initialize` era: the session it goes on.
    Session(Arc<str>),
}

impl std::fmt::Debug for HttpDirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpDirect").finish_non_exhaustive()
    }
}

impl HttpDirect {
    /// The road of a streamable HTTP connection to `url` made of `parts`, which negotiated
    /// `version` (`modern`: opened with `server/discover`), if it gets one: 2026-07-28 calls
    /// go without a session, `initialize`-era calls on the session of rmcp's backend. `None`
    /// for a server of the `initialize` era whose requests carry an OAuth credential: when two
    /// connections sharing a token store found it expired at once, the road's extra 401 before
    /// rmcp's refresh made the slower refresh miss the other's result (seen once under load;
    /// not yet understood), so it stays on rmcp's road. A server the store holds no
    /// credential for (most, though every HTTP connection may log in) takes the road. `None`
    /// too when the version cannot travel as a header.
    pub(crate) fn for_connection(
        parts: DirectParts,
        url: &Url,
        version: &ProtocolVersion,
        modern: bool,
    ) -> Option<HttpDirect> {
        let backend = if version.has_initialize() {
            if parts.auth.as_ref().is_some_and(|auth| auth.in_use()) {
                return None;
            }
            Some(parts.backend?)
        } else if modern {
            None
        } else {
            return None;
        };
        let mut headers = parts.headers;
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
        // As rmcp's worker sends it, in every era.
        headers.insert(
            PROTOCOL_VERSION,
            HeaderValue::from_str(version.as_str()).ok()?,
        );
        if backend.is_none() {
            headers.insert(MCP_METHOD, HeaderValue::from_static("tools/call"));
        }
        Some(HttpDirect {
            client: parts.client,
            url: url.clone(),
            headers,
            auth: parts.auth,
            next: AtomicU64::new(FIRST_ID),
            finishing: Arc::default(),
            param_header_tools: Mutex::default(),
            backend,
        })
    }

    /// Note which tools of a listing ask for `Mcp-Param-*` headers (rmcp's road sends those).
    pub(crate) fn listed(&self, tools: &[ToolDefinition]) {
        let asking = tools
            .iter()
            .filter(|tool| tool.input_schema.as_str().contains("x-mcp-header"))
            .map(|tool| tool.name.clone())
            .collect();
        *self
            .param_header_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = asking;
    }

    /// What a call of `name` is sent with, when this road may take the call.
    fn takes(&self, name: &str) -> Option<Ticket> {
        if let Some(backend) = &self.backend {
            // Before the server gave a session (or for one that gives none), rmcp's road.
            return backend.sessions().latest().map(Ticket::Session);
        }
        if needs_base64(name)
            || self
                .param_header_tools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(name)
        {
            return None;
        }
        HeaderValue::from_str(name).ok().map(Ticket::Named)
    }

    /// The headers a resumption GET carries beside those rmcp's backend adds: the configured
    /// ones and the protocol version.
    fn get_headers(&self) -> std::collections::HashMap<HeaderName, HeaderValue> {
        self.headers
            .iter()
            .filter(|(name, _)| *name != ACCEPT && *name != CONTENT_TYPE)
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect()
    }

    /// A POST of `body` with every call's headers, sent as `ticket` says.
    fn post(&self, ticket: &Ticket, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
        let request = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body);
        match ticket {
            Ticket::Named(name) => request.header(MCP_NAME, name.clone()),
            Ticket::Session(session) => request.header(SESSION_ID, &**session),
        }
    }
}

/// A POST of `request` to `url` with the OAuth token, when there is one and it can be had:
/// for what the road sends beside its calls, on tasks of their own.
async fn authorized(
    auth: Option<&ServerAuth>,
    url: &Url,
    request: reqwest::RequestBuilder,
) -> reqwest::RequestBuilder {
    if let Some(auth) = auth
        && let Ok(Some(token)) = auth.bearer().await
    {
        return auth.authorize_request(request, "POST", url.as_str(), &token);
    }
    request
}

/// Whether a header value must take the Base64 form (`=?base64?…?=`): a leading or trailing
/// blank, a character outside printable ASCII, or a value that looks like that form already.
fn needs_base64(value: &str) -> bool {
    let bytes = value.as_bytes();
    matches!(bytes.first(), Some(b' ' | b'\t'))
        || matches!(bytes.last(), Some(b' ' | b'\t'))
        || bytes.iter().any(|b| !(0x20..=0x7e).contains(b))
        || (value.starts_with("=?base64?") && value.ends_with("?="))
}

/// What the direct road made of a call.
pub(in crate::client) enum Road {
    /// The call's outcome, as rmcp's road would have given it.
    Done(Result<Answer, ClientError>),
    /// The server refused the call before running it (or nothing was sent): rmcp's road
    /// takes it.
    Refused,
}

/// What one exchange with the server came to.
enum Exchange {
    Reply(Reply),
    Refused,
    Failed(ClientError),
}

/// The server had expired the session a call went on (a 404): the call never reached it.
struct Expired(Arc<str>);

impl McpClient {
    /// The direct road for a call of `call`, when this connection has one and it may take
    /// the call.
    pub(in crate::client) fn http_direct_for(
        &self,
        call: &ToolRequest,
    ) -> Option<(&HttpDirect, Ticket)> {
        let direct = self.http_direct.as_ref()?;
        let ticket = direct.takes(&call.params.name)?;
        Some((direct, ticket))
    }

    /// Send `call` on the direct road and wait for its answer, its timeout or its
    /// cancellation, whichever comes first.
    pub(in crate::client) async fn request_http_direct<M: Display + ?Sized>(
        &self,
        (direct, ticket): (&HttpDirect, Ticket),
        call: &ToolRequest,
        meta: Option<RequestMetaObject>,
        settings: &RequestSettings<'_, M>,
        input: Option<&CallInput>,
    ) -> Road {
        let method = settings.method;
        if self.is_closed() {
            return Road::Done(Err(ClientError::NotSent {
                server: self.server.clone(),
                method: method.to_string(),
            }));
        }
        let id = direct.next.fetch_add(1, Ordering::Relaxed);
        // Ids start at 2^32 and count up: they stay far below i64::MAX.
        let wire_id = i64::try_from(id).unwrap_or(i64::MAX);
        let body = match self.tool_call_line(wire_id, call, meta) {
            Ok(body) => Bytes::from(body),
            Err(e) => {
                let error = self.protocol_error(method, format!("cannot write the request: {e}"));
                return Road::Done(Err(error));
            }
        };
        // Registered for as long as the call runs: an event-stream answer's progress
        // notifications are handed to the router before the answer is.
        let _progress_route = settings.progress.map(|sender| {
            let token = ProgressToken(NumberOrString::Number(wire_id));
            self.progress.register(token, sender.clone())
        });
        // The server's requests on the call's stream (`initialize` era) go to the call's
        // asker, as they do on rmcp's road (see `ask`).
        let _asking = input.filter(|_| direct.backend.is_some()).map(|input| {
            let sending = self.handler.asking.sending();
            sending.sent(RequestId::Number(wire_id), input.clone())
        });
        // Boxed where it is made: moved into the timeout, the block and the select below, the
        // exchange's large future (reqwest's request and response within) would be copied whole
        // on each move, and would make this future and its callers' as large.
        let exchange = Box::pin(self.exchange_renewing(direct, id, &ticket, body, method));
        let timed = async {
            match settings.timeout {
                Some(timeout) => tokio::time::timeout(timeout, exchange).await.ok(),
                None => Some(exchange.await),
            }
        };
        let outcome = match settings.cancel {
            None => timed.await,
            Some(cancel) => tokio::select! {
                outcome = timed => outcome,
                () = cancel.cancelled() => {
                    self.cancel_sent(direct, &ticket, wire_id, "cancelled by the client");
                    return Road::Done(Err(ClientError::Cancelled {
                        server: self.server.clone(),
                        method: method.to_string(),
                    }));
                }
            },
        };
        let reply = match outcome {
            None => {
                self.cancel_sent(direct, &ticket, wire_id, "request timeout");
                let timeout = settings.timeout.unwrap_or_default();
                return Road::Done(Err(
                    self.service_error(method, ServiceError::Timeout { timeout })
                ));
            }
            Some(Exchange::Refused) => return Road::Refused,
            Some(Exchange::Failed(error)) => return Road::Done(Err(error)),
            Some(Exchange::Reply(reply)) => reply,
        };
        Road::Done(match reply {
            Ok(Delivered::Tool(output)) => Ok(Answer::Tool(ToolAnswer::Output(*output))),
            Ok(Delivered::Text(result)) => self.direct_result(Expected::CallTool, &result, method),
            Err(NoResult::Server(error)) => {
                let error = self.service_error(method, ServiceError::McpError(error));
                self.forget_refuted_discovery(&error);
                Err(error)
            }
            Err(NoResult::Unreadable(why)) => Err(self.protocol_error(method, why)),
        })
    }

    /// Tell the server a call it may be running is no longer wanted: POSTed by a task of its
    /// own, as rmcp's road does, so the caller has its error at once. Protocol 2026-07-28
    /// servers also take the closed response stream for it.
    fn cancel_sent(&self, direct: &HttpDirect, ticket: &Ticket, wire_id: i64, reason: &str) {
        let notice = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": wire_id, "reason": reason},
        });
        let mut request = direct.post(ticket, notice.to_string());
        if direct.backend.is_none() {
            request = request.header(
                MCP_METHOD,
                HeaderValue::from_static("notifications/cancelled"),
            );
        }
        let auth = direct.auth.clone();
        let url = direct.url.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            let request = authorized(auth.as_deref(), &url, request).await;
            match tokio::time::timeout(CANCEL_BOUND, request.send()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::debug!(%server, "cannot send notifications/cancelled: {e}"),
                Err(_) => tracing::debug!(%server, "notifications/cancelled got no answer"),
            }
        });
    }

    /// POST the call and read its answer; [`Expired`] when the server answered 404 for the
    /// session the call went on (it never reached the server).
    async fn exchange<M: Display + ?Sized>(
        &self,
        direct: &HttpDirect,
        id: u64,
        ticket: &Ticket,
        body: Bytes,
        method: &M,
        turn: Option<Turn>,
    ) -> Result<Exchange, Expired> {
        let phase = method.to_string();
        let failed = |error: &(dyn std::error::Error + 'static)| {
            let url = &direct.url;
            Ok(Exchange::Failed(
                plumbing::classify(&self.server, &phase, url, error)
                    .unwrap_or_else(|| self.protocol_error(method, plumbing::root_cause(error))),
            ))
        };
        let token = match &direct.auth {
            // A credential that cannot be had is rmcp's road's to report, as it always was.
            Some(auth) => match auth.bearer().await {
                Ok(token) => token,
                Err(_) => return Ok(Exchange::Refused),
            },
            None => None,
        };
        let mut request = direct.post(ticket, body);
        // Open on its session until its answer is in, as rmcp's requests are: rmcp waits for
        // it before opening a new session when this one expires (see `drain`).
        let _open = match (ticket, &direct.backend) {
            (Ticket::Session(session), Some(backend)) => {
                Some(backend.sessions().open.open(session.clone()))
            }
            _ => None,
        };
        if let (Some(auth), Some(token)) = (&direct.auth, &token) {
            request = auth.authorize_request(request, "POST", direct.url.as_str(), token);
        }
        // Refused, unreachable, TLS, or a connection that broke after the request went out:
        // as rmcp's road says it (the call is not sent again).
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return failed(&HttpError::Request(e)),
        };
        // The server has taken the request: the next call may go.
        drop(turn);
        let status = response.status();
        if direct.auth.is_some()
            && (status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN)
        {
            return Ok(Exchange::Refused);
        }
        // The session expired before the request reached it.
        if status == StatusCode::NOT_FOUND
            && let Ticket::Session(session) = ticket
        {
            return Err(Expired(session.clone()));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(essence)
            .unwrap_or_default();
        let wants = |_: u64| Wants::ToolOutput;
        if status.is_success() && content_type.eq_ignore_ascii_case(EVENT_STREAM) {
            return Ok(self.read_events(direct, ticket, response, id, method).await);
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(Exchange::Failed(self.protocol_error(
                method,
                format!("the server answered {status} with no result"),
            )));
        }
        let auth_failure = status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
        if !content_type.eq_ignore_ascii_case(JSON) || auth_failure {
            if status.is_success() {
                let shown = if content_type.is_empty() {
                    "(none)"
                } else {
                    content_type.as_str()
                };
                return Ok(Exchange::Failed(self.protocol_error(
                    method,
                    format!("unexpected content type {shown}"),
                )));
            }
            return failed(&plumbing::status_error(response).await);
        }
        let body = match read_bounded(response, MAX_RESPONSE_BYTES).await {
            Ok(body) => body,
            Err(Body::TooLarge) => {
                return failed(&StreamableHttpError::<HttpError>::ResponseBodyTooLarge {
                    max_size: MAX_RESPONSE_BYTES,
                });
            }
            Err(Body::Broken(e)) => return failed(&HttpError::Request(e)),
        };
        match parse_answer(&body, &wants) {
            // A JSON-RPC error sent with an error status is still the answer.
            Some((answered, reply))
                if answered == id
                    && (status.is_success() || matches!(reply, Err(NoResult::Server(_)))) =>
            {
                Ok(Exchange::Reply(reply))
            }
            _ if status.is_success() => Ok(Exchange::Failed(self.protocol_error(
                method,
                format!("invalid JSON-RPC response: {}", excerpt(&body)),
            ))),
            _ => failed(&HttpError::Status {
                status,
                www_authenticate: None,
                body: excerpt(&body),
            }),
        }
    }

    /// Read an event-stream answer: notifications to the handler as they come, then the
    /// answer. A stream that ends or breaks before the answer lost it.
    async fn read_events<M: Display + ?Sized>(
        &self,
        direct: &HttpDirect,
        ticket: &Ticket,
        response: reqwest::Response,
        id: u64,
        method: &M,
    ) -> Exchange {
        let wants = |_: u64| Wants::ToolOutput;
        let overflowed = Arc::new(AtomicBool::new(false));
        let mut events = super::sse::events(
            response.bytes_stream(),
            MAX_RESPONSE_BYTES,
            Some(overflowed.clone()),
        );
        let mut resumption = Resumption::default();
        // Why the last resumption failed: a server that cannot be reached any more says so,
        // not that an answer was lost.
        let mut unresumed = None;
        loop {
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        tracing::debug!(server = %self.server, "{method}: the event stream broke: {e}");
                        break;
                    }
                };
                resumption.saw(event.id.as_deref(), event.retry);
                let Some(data) = event.data.filter(|data| !data.trim().is_empty()) else {
                    continue;
                };
                if let Some((answered, reply)) = parse_answer(data.as_bytes(), &wants) {
                    if answered == id {
                        finish_in_background(&direct.finishing, events);
                        return Exchange::Reply(reply);
                    }
                    continue;
                }
                match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    Ok(ServerJsonRpcMessage::Notification(notification)) => {
                        self.handler.notified(notification.notification);
                    }
                    Ok(ServerJsonRpcMessage::Request(request)) if direct.backend.is_some() => {
                        self.answer_asked(direct, ticket, id, request);
                    }
                    // Protocol 2026-07-28 asks its questions in `input_required` results, not as
                    // requests on a call's stream.
                    Ok(other) => {
                        tracing::debug!(server = %self.server, "{method}: ignoring {other:?} on the call's stream");
                    }
                    Err(e) => {
                        tracing::debug!(server = %self.server, "{method}: ignoring an unreadable event: {e}");
                    }
                }
            }
            if overflowed.load(Ordering::SeqCst) {
                // Fetching it again would bring the same event: the call fails.
                let error = StreamableHttpError::<HttpError>::ResponseBodyTooLarge {
                    max_size: MAX_RESPONSE_BYTES,
                };
                return Exchange::Failed(
                    plumbing::classify(&self.server, &method.to_string(), &direct.url, &error)
                        .unwrap_or_else(|| self.protocol_error(method, error.to_string())),
                );
            }
            // The stream of an `initialize`-era session ended before its answer: resumed after
            // its last event, as rmcp's worker resumes its own (2026-07-28 streams are not
            // resumable: the answer is lost).
            let (Ticket::Session(session), Some(backend)) = (ticket, &direct.backend) else {
                break;
            };
            let Some((last_event_id, wait)) = resumption.next() else {
                break;
            };
            tokio::time::sleep(wait).await;
            events = match backend
                .resume(
                    &direct.url,
                    session.clone(),
                    last_event_id,
                    direct.get_headers(),
                )
                .await
            {
                Ok(rest) => {
                    unresumed = None;
                    rest
                }
                Err(e) => {
                    tracing::debug!(server = %self.server, "{method}: the event stream could not be resumed: {e}");
                    unresumed = Some(e);
                    futures::stream::empty().boxed()
                }
            };
        }
        let unreachable = unresumed.as_ref().and_then(|error| {
            plumbing::classify(&self.server, &method.to_string(), &direct.url, error)
                .filter(ClientError::is_connection_lost)
        });
        Exchange::Failed(unreachable.unwrap_or_else(|| self.answer_lost(method)))
    }
}

/// How long the rest of an answered call's stream is read in the background: a server ends
/// it right after the answer, as a rule.
const FINISH_GRACE: Duration = Duration::from_millis(250);

/// How many answered streams of one connection may be read to their end at once. A server
/// that keeps its streams open after answering would otherwise have the client hold a
/// connection per call for the grace.
const MAX_FINISHING: usize = 16;

/// Read what is left of an answered call's stream (its end, as a rule) on a task of its own,
/// for at most [`FINISH_GRACE`]: a response dropped before its end closes its connection, and
/// the next call would connect again; one read to its end goes back to the pool. Past
/// [`MAX_FINISHING`] such streams (`finishing` counts them), the stream is dropped.
fn finish_in_background(finishing: &Arc<AtomicUsize>, mut events: super::sse::Events) {
    // Most often the end came in with the answer.
    if let Some(None) = events.next().now_or_never() {
        return;
    }
    if finishing.fetch_add(1, Ordering::Relaxed) >= MAX_FINISHING {
        finishing.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let finishing = finishing.clone();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(FINISH_GRACE, async {
            while events.next().await.is_some() {}
        })
        .await;
        finishing.fetch_sub(1, Ordering::Relaxed);
    });
}

/// The media type of a `Content-Type`, without its parameters.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The start of a body, as text, for an error message.
fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(plumbing::BODY_EXCERPT_BYTES)]).into_owned()
}

/// Why a body could not be read whole.
enum Body {
    TooLarge,
    Broken(reqwest::Error),
}

/// The whole body, refused past `limit` bytes.
async fn read_bounded(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Body> {
    if response
        .content_length()
        .is_some_and(|len| len > limit as u64)
    {
        return Err(Body::TooLarge);
    }
    let mut body = Vec::with_capacity(
        response
            .content_length()
            .map_or(1024, |len| len as usize)
            .min(limit),
    );
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(Body::Broken)?;
        if chunk.len() > limit - body.len() {
            return Err(Body::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_need_the_base64_form_are_left_to_rmcp() {
        assert!(!needs_base64("echo"));
        assert!(!needs_base64("a tool"));
        assert!(needs_base64(" echo"));
        assert!(needs_base64("écho"));
        assert!(needs_base64("line\nbreak"));
        assert!(needs_base64("=?base64?ZWNobw==?="));
    }

    #[test]
    fn media_types_lose_their_parameters() {
        assert_eq!(
            essence("Application/JSON; charset=utf-8"),
            "Application/JSON"
        );
        assert_eq!(essence("text/event-stream"), EVENT_STREAM);
    }
}
