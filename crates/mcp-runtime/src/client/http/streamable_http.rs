//! The streamable HTTP transport (protocol 2025-03-26 and later).
//!
//! rmcp's transport worker runs the protocol: the session id, the `initialize` barrier, JSON or
//! SSE responses, the GET listener, resuming a dropped stream with `Last-Event-ID` after the
//! server's `retry:` delay, one re-initialisation when the session expires (404), and `DELETE`
//! on close. A 404 reaches rmcp once the answers still coming on the expired session's streams
//! have arrived (see [`super::drain`]). It does so through [`HttpClient`], our implementation
//! of its HTTP backend, so that requests go through the process's pooled client and failures
//! keep what a person needs to know: the status, the start of the body and the
//! `WWW-Authenticate` challenge.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpClient,
    StreamableHttpClientTransportConfig, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

use super::drain::{DRAIN_BOUND, OpenStreams};
use super::plumbing::{HttpError, auth_failed, status_error};
use super::sse;
use crate::auth::credential::{self, ServerAuth};
use crate::client::probe::ProbeState;

/// Largest JSON response body or SSE event accepted from a server (a huge tool result is
/// refused with an error rather than exhausting memory).
pub(crate) const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// Reconnection attempts after a stream drops, beyond the first. The first waits for the
/// server's `retry:` hint; failed ones back off from [`RECONNECT_BACKOFF`]. Bounded so that a
/// server that died fails its pending calls within seconds instead of at their timeout.
pub(crate) const RECONNECT_ATTEMPTS: u32 = 3;
pub(crate) const RECONNECT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(250);
pub(crate) const RECONNECT_MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(2);

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// The transport rmcp drives for one streamable HTTP server.
pub(crate) type Transport = StreamableHttpClientTransport<HttpClient>;

/// The session rmcp's worker last sent a request on, and the response streams open on each
/// session: what the direct road needs to send a call on the same session as rmcp (see
/// [`super::direct`]).
#[derive(Clone, Default)]
pub(crate) struct Sessions {
    state: Arc<Mutex<SessionState>>,
    /// The direct road's calls take turns while a new session opens (see `direct`).
    turns: Arc<tokio::sync::Mutex<()>>,
    /// The response streams open on each session, waited for when the session expires.
    pub(crate) open: OpenStreams,
}

#[derive(Default)]
struct SessionState {
    /// `None` until the server gave a session id and rmcp sent a request on it.
    latest: Option<Arc<str>>,
    /// A session the direct road found expired (a 404): rmcp's next request on it is not
    /// sent, and rmcp re-initialises at once.
    expired: Option<Arc<str>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session rmcp sent its latest request on. After the server expired it, rmcp's next
    /// request (which re-initialises) moves this on to the new one.
    pub(crate) fn latest(&self) -> Option<Arc<str>> {
        self.lock().latest.clone()
    }

    /// A turn to open a new session or send a call on it, in the order asked (tokio's mutex
    /// is fair).
    pub(crate) async fn turn(&self) -> Turn {
        self.turns.clone().lock_owned().await
    }

    /// Whether a new session is being opened (someone holds a turn).
    pub(crate) fn renewing(&self) -> bool {
        self.turns.try_lock().is_err()
    }

    /// Whether the direct road found `session` expired.
    pub(crate) fn is_expired(&self, session: &Arc<str>) -> bool {
        self.lock().expired.as_ref() == Some(session)
    }

    /// The server answered 404 for `session`: it has expired.
    pub(crate) fn expired(&self, session: &Arc<str>) {
        self.lock().expired = Some(session.clone());
    }

    /// Note a request rmcp sends on `session`; `false` when the session is known to have
    /// expired (the request is then not sent).
    fn sending_on(&self, session: &Arc<str>) -> bool {
        let mut state = self.lock();
        if state.expired.as_ref() == Some(session) {
            return false;
        }
        if state.latest.as_ref() != Some(session) {
            state.latest = Some(session.clone());
        }
        true
    }
}

/// A turn of [`Sessions::turn`], given back when dropped.
pub(crate) type Turn = tokio::sync::OwnedMutexGuard<()>;

/// Build the transport for `url` over `client`, sending `headers` with every request.
pub(crate) fn transport(client: HttpClient, url: &reqwest::Url, headers: HeaderMap) -> Transport {
    let custom_headers: HashMap<HeaderName, HeaderValue> = headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let mut backoff = ExponentialBackoff::default();
    backoff.max_times = Some(RECONNECT_ATTEMPTS as usize);
    backoff.base_duration = RECONNECT_BACKOFF;
    backoff.max_delay = Some(RECONNECT_MAX_DELAY);
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
        .custom_headers(custom_headers)
        .max_json_response_size(MAX_RESPONSE_BYTES)
        .max_sse_event_size(MAX_RESPONSE_BYTES)
        .max_error_response_size(super::plumbing::BODY_EXCERPT_BYTES)
        // A 404 on an expired session re-initialises once.
        .reinit_on_expired_session(true);
    config.retry_config = Arc::new(backoff);
    Transport::with_client(client, config)
}

/// Tracks the standalone GET stream (server-to-client messages), which rmcp opens in the
/// background once a session exists. The connection waits for that GET to be answered before
/// it is handed out, so the listener is in place before the first request: notifications sent
/// right after connecting are not missed, and a later GET is always a resumption.
#[derive(Clone)]
pub(crate) struct Listener {
    /// The server gave a session id, so rmcp will open the GET stream.
    session: Arc<AtomicBool>,
    /// Becomes `true` once the first standalone GET got its answer (or failed).
    settled: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Listener {
    pub(crate) fn new() -> Self {
        Listener {
            session: Arc::default(),
            settled: Arc::new(tokio::sync::watch::channel(false).0),
        }
    }

    /// Wait (at most `bound`) for the standalone GET to be answered, if one is coming.
    pub(crate) async fn wait_settled(&self, bound: std::time::Duration) {
        if !self.session.load(Ordering::SeqCst) {
            return;
        }
        let mut settled = self.settled.subscribe();
        let _ = tokio::time::timeout(bound, settled.wait_for(|done| *done)).await;
    }
}

/// Marks the listener settled when the GET that owns it returns, whatever the outcome.
struct SettleOnDrop(Listener);

impl Drop for SettleOnDrop {
    fn drop(&mut self) {
        self.0.settled.send_replace(true);
    }
}

/// rmcp's HTTP backend over our shared `reqwest` client.
#[derive(Clone)]
pub(crate) struct HttpClient {
    inner: reqwest::Client,
    /// The latest session, and the response streams open on each.
    sessions: Sessions,
    /// Set when an event stream carried an event over the size limit. rmcp takes that for a
    /// dropped stream and resumes it, which would fetch the same event again and again; the
    /// next resumption is refused instead, which ends the stream and fails its request.
    overflowed: Arc<AtomicBool>,
    /// The standalone GET stream's progress.
    listener: Listener,
    /// OAuth: the token to send, and what to do on 401 / 403 `insufficient_scope`.
    auth: Option<Arc<ServerAuth>>,
    /// Told when the server answers a `server/discover` POST, which starts the probe's bound.
    probe: Option<Arc<ProbeState>>,
    /// Sees every message before rmcp parses it (tool results are kept as sent).
    raw: crate::client::raw::RawResults,
}

/// Step-up logins one request may trigger after 403 `insufficient_scope`; with the first
/// login that makes at most three authorization attempts, after which the 403 stands.
const MAX_STEP_UPS: usize = 2;

/// What to do with an answer, as far as authorization goes.
enum AuthStep {
    /// Send the request again with this token.
    Retry(String),
    /// Use the answer as it is.
    Done(reqwest::Response),
}

type Result<T> = std::result::Result<T, StreamableHttpError<HttpError>>;

impl HttpClient {
    /// rmcp's backend over the process's pooled `client`.
    pub(crate) fn new(
        client: reqwest::Client,
        listener: Listener,
        auth: Option<Arc<ServerAuth>>,
        probe: Option<Arc<ProbeState>>,
        raw: crate::client::raw::RawResults,
    ) -> HttpClient {
        HttpClient {
            inner: client,
            sessions: Sessions::default(),
            overflowed: Arc::default(),
            listener,
            auth,
            probe,
            raw,
        }
    }

    /// The session rmcp sends on, and the streams open on each.
    pub(crate) fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The rest of a response stream of `session` that broke after the event
    /// `last_event_id`, as rmcp's worker resumes its own (a GET with `Last-Event-ID`).
    pub(crate) async fn resume(
        &self,
        url: &reqwest::Url,
        session: Arc<str>,
        last_event_id: String,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<sse::Events> {
        self.get(
            url.as_str().into(),
            Some(session),
            Some(last_event_id),
            None,
            headers,
            MAX_RESPONSE_BYTES,
        )
        .await
    }

    /// A request with the headers every MCP request carries.
    fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        session_id: Option<&str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let method_name = method.as_str().to_owned();
        let mut request = self
            .inner
            .request(method, uri)
            .header(ACCEPT, "application/json, text/event-stream");
        // Configured headers were checked against the reserved ones when the config was read.
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(token) = auth_token {
            request = match &self.auth {
                // Bearer, or DPoP with a proof when the token is bound to a key.
                Some(auth) => auth.authorize_request(request, &method_name, uri, &token),
                None => request.bearer_auth(token),
            };
        }
        if let Some(session_id) = session_id {
            request = request.header(SESSION_ID, session_id);
        }
        request
    }

    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse> {
        let mut token = self.bearer().await?.or(auth_token);
        let mut tries = AuthTries::default();
        // Open on its session from now until its answer is in (see `drain`).
        if let Some(session) = &session_id
            && !self.sessions.sending_on(session)
        {
            // The direct road got its 404 already: as if this request had got it.
            self.sessions.open.settled(session, DRAIN_BOUND).await;
            return Err(StreamableHttpError::SessionExpired);
        }
        let in_flight = session_id
            .clone()
            .map(|session| self.sessions.open.open(session));
        let response = loop {
            let response = self
                .request(
                    reqwest::Method::POST,
                    &uri,
                    session_id.as_deref(),
                    token.clone(),
                    custom_headers.clone(),
                )
                .json(&message)
                .send()
                .await
                .map_err(client_error)?;
            match self
                .authorize(response, token.as_deref(), &mut tries)
                .await?
            {
                AuthStep::Retry(next) => token = Some(next),
                AuthStep::Done(response) => break response,
            }
        };
        if let Some(probe) = &self.probe
            && let ClientJsonRpcMessage::Request(request) = &message
            && matches!(
                request.request,
                rmcp::model::ClientRequest::DiscoverRequest(_)
            )
        {
            probe.mark_taken();
        }
        let status = response.status();
        if let Some(challenge) = auth_challenge(&response) {
            return Err(challenge);
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        // Only a request that named a session can find it expired; rmcp then re-initialises,
        // dropping the old session's streams: the answers still on them come in first.
        if status == StatusCode::NOT_FOUND
            && let Some(session) = &session_id
        {
            drop(response);
            drop(in_flight);
            self.sessions.open.settled(session, DRAIN_BOUND).await;
            return Err(StreamableHttpError::SessionExpired);
        }
        let new_session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if new_session.is_some() {
            self.listener.session.store(true, Ordering::SeqCst);
        }
        let content_type = content_type(response.headers());
        // Notifications and responses expect no answer; some servers still send 200 with a
        // body (or an empty one), which is fine.
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let auth_failure = status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
        if !status.is_success() && is(&content_type, JSON) && !auth_failure {
            let body = read_bounded(response, limits.max_json_response_size).await?;
            if let Ok(error @ ServerJsonRpcMessage::Error(_)) = serde_json::from_slice(&body) {
                // A JSON-RPC error sent with an error status is still the answer to the
                // request: the caller gets it as an error response.
                return Ok(StreamableHttpPostResponse::Json(error, new_session));
            }
            return Err(StreamableHttpError::Client(HttpError::Status {
                status,
                www_authenticate: None,
                body: excerpt(&body),
            }));
        }
        if !status.is_success() {
            return Err(StreamableHttpError::Client(status_error(response).await));
        }
        if is(&content_type, EVENT_STREAM) {
            let mut events = sse::observed(
                sse::events(
                    response.bytes_stream(),
                    limits.max_sse_event_size,
                    Some(self.overflowed.clone()),
                ),
                &self.raw,
            );
            if let Some(open) = in_flight {
                events = self.sessions.open.track_with(open, events);
            }
            return Ok(StreamableHttpPostResponse::Sse(events, new_session));
        }
        if is(&content_type, JSON) {
            let body = read_bounded(response, limits.max_json_response_size).await?;
            self.raw.observe(&body);
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(message) => Ok(StreamableHttpPostResponse::Json(message, new_session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!("invalid JSON-RPC response ({e}): {}", excerpt(&body)),
                ))),
            };
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(content_type))
    }

    async fn get(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_event_bytes: usize,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        // A GET without Last-Event-ID is the standalone listener (not a resumption).
        let _settle = last_event_id
            .is_none()
            .then(|| SettleOnDrop(self.listener.clone()));
        if last_event_id.is_some() && self.overflowed.swap(false, Ordering::SeqCst) {
            // "No SSE here" is the one answer that makes rmcp stop resuming.
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if last_event_id.is_some() && speaks_modern(&custom_headers) {
            // Protocol 2026-07-28 streams are not resumable (a server must ignore
            // `Last-Event-ID`): the answer is lost, and the client decides whether the request
            // may be sent again.
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let mut token = self.bearer().await?.or(auth_token);
        let mut tries = AuthTries::default();
        let response = loop {
            let mut request = self.request(
                reqwest::Method::GET,
                &uri,
                session_id.as_deref(),
                token.clone(),
                custom_headers.clone(),
            );
            if let Some(last_event_id) = &last_event_id {
                request = request.header(LAST_EVENT_ID, last_event_id);
            }
            let response = request.send().await.map_err(client_error)?;
            match self
                .authorize(response, token.as_deref(), &mut tries)
                .await?
            {
                AuthStep::Retry(next) => token = Some(next),
                AuthStep::Done(response) => break response,
            }
        };
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            // The server offers no GET stream; rmcp then works without one.
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(challenge) = auth_challenge(&response) {
            return Err(challenge);
        }
        if !status.is_success() {
            return Err(StreamableHttpError::Client(status_error(response).await));
        }
        let content_type = content_type(response.headers());
        if !is(&content_type, EVENT_STREAM) {
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        }
        let events = sse::observed(
            sse::events(
                response.bytes_stream(),
                max_event_bytes,
                Some(self.overflowed.clone()),
            ),
            &self.raw,
        );
        // A resumed response stream carries answers too; the standalone listener does not end.
        Ok(match (session_id, last_event_id) {
            (Some(session), Some(_)) => self.sessions.open.track(session, events),
            _ => events,
        })
    }
}

/// How far one request has gone in getting authorized.
#[derive(Default)]
struct AuthTries {
    /// A 401 was answered (refresh or login) already.
    unauthorized: bool,
    /// 403 `insufficient_scope` step-ups so far.
    step_ups: usize,
    /// A DPoP nonce challenge was answered already (once: a server that asks again and
    /// again would keep the request in a loop).
    dpop_nonce: bool,
}

impl HttpClient {
    /// The stored token to send first.
    async fn bearer(&self) -> Result<Option<String>> {
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        auth.bearer().await.map_err(|failure| {
            StreamableHttpError::Client(auth_failed(StatusCode::UNAUTHORIZED, None, failure))
        })
    }

    /// On 401, refresh or log in once; on 403 `insufficient_scope`, step up a bounded number
    /// of times. Anything else (or no OAuth layer) passes the response through.
    async fn authorize(
        &self,
        response: reqwest::Response,
        sent: Option<&str>,
        tries: &mut AuthTries,
    ) -> Result<AuthStep> {
        let Some(auth) = &self.auth else {
            return Ok(AuthStep::Done(response));
        };
        let status = response.status();
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let fail =
            |failure| StreamableHttpError::Client(auth_failed(status, challenge.clone(), failure));
        if status == StatusCode::UNAUTHORIZED
            && !tries.dpop_nonce
            && let Some(sent) = sent
            && auth.dpop_nonce_retry(
                response.url().as_str(),
                Some(sent),
                status.as_u16(),
                challenge.as_deref(),
                response.headers().get("DPoP-Nonce").map(|v| v.as_bytes()),
            )
        {
            tries.dpop_nonce = true;
            return Ok(AuthStep::Retry(sent.to_owned()));
        }
        if status == StatusCode::UNAUTHORIZED && !tries.unauthorized {
            tries.unauthorized = true;
            let next = auth
                .on_unauthorized(sent, challenge.as_deref())
                .await
                .map_err(fail)?;
            return Ok(AuthStep::Retry(next));
        }
        if status == StatusCode::FORBIDDEN
            && let Some(challenge) = challenge.as_deref()
            && credential::is_insufficient_scope(challenge)
            && tries.step_ups < MAX_STEP_UPS
        {
            tries.step_ups += 1;
            let next = auth
                .on_insufficient_scope(sent, challenge)
                .await
                .map_err(fail)?;
            return Ok(AuthStep::Retry(next));
        }
        Ok(AuthStep::Done(response))
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        let limits = StreamableHttpResponseLimits::default();
        self.post(uri, message, session_id, auth_token, custom_headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse> {
        self.post(uri, message, session_id, auth_token, custom_headers, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        let response = self
            .request(
                reqwest::Method::DELETE,
                &uri,
                Some(&session_id),
                auth_token,
                custom_headers,
            )
            .send()
            .await
            .map_err(client_error)?;
        let status = response.status();
        // 405: the server does not let clients end sessions; 404: it is gone already.
        if status.is_success()
            || status == StatusCode::METHOD_NOT_ALLOWED
            || status == StatusCode::NOT_FOUND
        {
            return Ok(());
        }
        Err(StreamableHttpError::Client(status_error(response).await))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        self.get(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            sse::MAX_EVENT_BYTES,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        self.get(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            max_sse_event_size,
        )
        .await
    }
}

/// Whether requests with these headers speak protocol 2026-07-28 or later (rmcp puts the
/// version of the request in `MCP-Protocol-Version`).
fn speaks_modern(headers: &HashMap<HeaderName, HeaderValue>) -> bool {
    headers
        .get(&HeaderName::from_static("mcp-protocol-version"))
        .and_then(|v| v.to_str().ok())
        .is_some_and(|version| {
            crate::client::model::era::Era::of(version) == crate::client::model::era::Era::Modern
        })
}

fn client_error(error: reqwest::Error) -> StreamableHttpError<HttpError> {
    StreamableHttpError::Client(HttpError::Request(error))
}

/// 401 and 403 with a challenge become rmcp's auth errors, which stop it from retrying.
fn auth_challenge(response: &reqwest::Response) -> Option<StreamableHttpError<HttpError>> {
    let status = response.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let header = response.headers().get(WWW_AUTHENTICATE)?;
    let challenge = String::from_utf8_lossy(header.as_bytes()).into_owned();
    Some(if status == StatusCode::UNAUTHORIZED {
        StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge))
    } else {
        StreamableHttpError::InsufficientScope(InsufficientScopeError::new(challenge, None))
    })
}

/// The start of a body, as text, for an error message.
fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(super::plumbing::BODY_EXCERPT_BYTES)])
        .into_owned()
}

/// The whole body, or an error if it is larger than `limit`.
async fn read_bounded(response: reqwest::Response, limit: usize) -> Result<Vec<u8>> {
    use futures::StreamExt;
    if response
        .content_length()
        .is_some_and(|len| len > limit as u64)
    {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(client_error)?;
        if chunk.len() > limit - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// Whether a `Content-Type` has the media type `expected` (case-insensitive, parameters
/// ignored).
fn is(content_type: &Option<String>, expected: &str) -> bool {
    content_type.as_deref().is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_ignore_case_and_parameters() {
        let ct = |s: &str| Some(s.to_owned());
        assert!(is(&ct("text/event-stream"), EVENT_STREAM));
        assert!(is(&ct("Application/JSON; charset=utf-8"), JSON));
        assert!(!is(&ct("text/html"), JSON));
        assert!(!is(&None, JSON));
    }
}
