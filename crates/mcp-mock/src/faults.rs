//! HTTP-level fault knobs of the mock's HTTP modes, as one axum middleware in front of the MCP
//! endpoint. The MCP server behind it (rmcp's, or the legacy SSE endpoint) is unaware of them.
//!
//! - `--require-token`: 401 with a `WWW-Authenticate` challenge without the right bearer token;
//! - `--expire-session-after N`: a session's request N+1 (and everything after) gets 404;
//!   requests the session had already taken are still answered, and the session ends in the
//!   server once they have been, as a server that expires sessions does;
//! - `--http-500 N`: the first N `tools/call` POSTs get 500 with a text body;
//! - `--drop-stream N`: the SSE responses of the first N `tools/call` POSTs end right after
//!   their first (priming) event, so the client must resume with `Last-Event-ID`;
//! - `--fail-resume`: such resumptions (GET with `Last-Event-ID`) get 500;
//! - `--drop-answer METHOD[:NAME]`: the response stream of the first such request (a
//!   `tools/call` of tool NAME, when given) ends before the answer, once; the server has run
//!   the request, the client never hears how it went;
//! - `--sse-delay MS`: every chunk of an event stream is held back MS milliseconds;
//! - `--protocol-version`: the `initialize` answer is rewritten to carry that version;
//! - `--record FILE`: one JSON line per HTTP request (method, session, `Last-Event-ID`, body).

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};

/// Largest request body the middleware reads (rmcp's own limit is larger than any test needs).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// How long the `initialize` answer may take to arrive whole when its version is rewritten.
const REWRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The knobs, from the command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpKnobs {
    pub require_token: Option<String>,
    pub expire_session_after: Option<usize>,
    pub http_500: usize,
    pub drop_stream: usize,
    /// `--drop-answer`: `method` or `method:name` keys, each used once.
    pub drop_answer: Vec<String>,
    pub fail_resume: bool,
    pub sse_delay: Option<Duration>,
    pub forced_version: Option<String>,
}

/// Called with a session id when `--expire-session-after` expires it, so the server can end
/// the session too.
pub(crate) type OnExpire = Arc<dyn Fn(String) + Send + Sync>;

/// The middleware's state: the knobs and what they have used up so far.
pub(crate) struct Faults {
    knobs: HttpKnobs,
    http_500_left: AtomicUsize,
    drops_left: AtomicUsize,
    /// `--drop-answer` keys not used yet (a key given twice drops two answers).
    answers_to_drop: Mutex<Vec<String>>,
    /// What `--expire-session-after` knows of each session.
    sessions: Mutex<Expiry>,
    recorder: Option<Mutex<std::fs::File>>,
    on_expire: Option<OnExpire>,
}

/// The sessions of `--expire-session-after`.
#[derive(Default)]
struct Expiry {
    /// JSON-RPC requests taken per session.
    seen: HashMap<String, usize>,
    /// Requests taken and not answered yet, per session.
    running: HashMap<String, usize>,
    expired: HashSet<String>,
}

/// Why a request is refused by `--expire-session-after`.
#[derive(Debug, PartialEq, Eq)]
struct Expired;

/// A request a session took before it expired: until this is dropped (its answer sent, or
/// its client gone), the session is not ended in the server.
struct Taken {
    faults: Arc<Faults>,
    session: String,
}

impl Drop for Taken {
    fn drop(&mut self) {
        let ends = {
            let mut sessions = self.faults.lock_sessions();
            let left = sessions.running.get_mut(&self.session).map(|running| {
                *running -= 1;
                *running
            });
            if left == Some(0) {
                sessions.running.remove(&self.session);
            }
            left == Some(0) && sessions.expired.contains(&self.session)
        };
        if ends {
            self.faults.end(&self.session);
        }
    }
}

impl Faults {
    /// Opens the `--record` file (appending) if one is given.
    pub(crate) fn new(
        knobs: HttpKnobs,
        record: Option<&Path>,
        on_expire: Option<OnExpire>,
    ) -> anyhow::Result<Faults> {
        let recorder = match record {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("cannot open --record file {}", path.display()))?,
            )),
            None => None,
        };
        Ok(Faults {
            http_500_left: AtomicUsize::new(knobs.http_500),
            drops_left: AtomicUsize::new(knobs.drop_stream),
            answers_to_drop: Mutex::new(knobs.drop_answer.clone()),
            knobs,
            sessions: Mutex::default(),
            recorder,
            on_expire,
        })
    }

    /// Appends one line describing the request; flushed at once so tests can read it.
    fn record(&self, method: &Method, headers: &HeaderMap, body: &Bytes, message: Option<&Value>) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let body = match message {
            Some(message) => message.clone(),
            None if body.is_empty() => Value::Null,
            None => Value::String(String::from_utf8_lossy(body).into_owned()),
        };
        // The headers 2026-07-28 mirrors from the message (`Mcp-Param-*` from tool arguments).
        let params: serde_json::Map<String, Value> = headers
            .iter()
            .filter(|(name, _)| name.as_str().starts_with("mcp-param-"))
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), Value::String(value))
            })
            .collect();
        let line = json!({
            "http": method.as_str(),
            "session": header_str(headers, "mcp-session-id"),
            "lastEventId": header_str(headers, "last-event-id"),
            "protocolVersion": header_str(headers, "mcp-protocol-version"),
            "mcpMethod": header_str(headers, "mcp-method"),
            "mcpName": header_str(headers, "mcp-name"),
            "mcpParams": params,
            "body": body,
        });
        self.write_line(recorder, &line);
    }

    /// Appends a line saying the request just recorded was refused with 404 as of an expired
    /// session (it never ran): `{"refused": "expired", "session", "body"}`.
    fn record_expired(&self, headers: &HeaderMap, message: Option<&Value>) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let line = json!({
            "refused": "expired",
            "session": header_str(headers, "mcp-session-id"),
            "body": message.cloned().unwrap_or(Value::Null),
        });
        self.write_line(recorder, &line);
    }

    fn write_line(&self, recorder: &Mutex<std::fs::File>, line: &Value) {
        let mut file = recorder.lock().unwrap_or_else(PoisonError::into_inner);
        // A failed write only loses a test record; the server goes on.
        let _ = writeln!(file, "{line}").and_then(|()| file.flush());
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, Expiry> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Let a message of `session` through, unless the session is (or now becomes) expired.
    /// Only JSON-RPC requests count; one let through is [`Taken`] until it is answered.
    fn admit(self: &Arc<Self>, session: &str, is_request: bool) -> Result<Option<Taken>, Expired> {
        let Some(limit) = self.knobs.expire_session_after else {
            return Ok(None);
        };
        let ends_now = {
            let mut sessions = self.lock_sessions();
            if sessions.expired.contains(session) {
                return Err(Expired);
            }
            if !is_request {
                return Ok(None);
            }
            let count = sessions.seen.entry(session.to_owned()).or_default();
            *count += 1;
            if *count <= limit {
                *sessions.running.entry(session.to_owned()).or_default() += 1;
                return Ok(Some(Taken {
                    faults: self.clone(),
                    session: session.to_owned(),
                }));
            }
            sessions.seen.remove(session);
            sessions.expired.insert(session.to_owned());
            !sessions.running.contains_key(session)
        };
        if ends_now {
            self.end(session);
        }
        Err(Expired)
    }

    /// End an expired session in the server.
    fn end(&self, session: &str) {
        if let Some(on_expire) = &self.on_expire {
            on_expire(session.to_owned());
        }
    }
}

/// Takes one from `counter` if it is not zero yet.
fn take(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            left.checked_sub(1)
        })
        .is_ok()
}

impl Faults {
    /// Whether the answer to this request is to be dropped (`--drop-answer`): its method, or
    /// its method and `params.name`, is a key not used yet.
    fn take_answer(&self, method: &str, message: Option<&Value>) -> bool {
        let mut keys = self
            .answers_to_drop
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let name = message
            .and_then(|m| m.pointer("/params/name"))
            .and_then(Value::as_str);
        let named = name.map(|name| format!("{method}:{name}"));
        let found = keys
            .iter()
            .position(|key| Some(key) == named.as_ref())
            .or_else(|| keys.iter().position(|key| key == method));
        found.map(|index| keys.remove(index)).is_some()
    }
}

/// The middleware (`axum::middleware::from_fn_with_state`).
pub(crate) async fn apply(
    State(faults): State<Arc<Faults>>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await else {
        return text(StatusCode::PAYLOAD_TOO_LARGE, "request body too large");
    };
    let message: Option<Value> = if parts.method == Method::POST {
        serde_json::from_slice(&body).ok()
    } else {
        None
    };
    faults.record(&parts.method, &parts.headers, &body, message.as_ref());
    let knobs = &faults.knobs;

    if let Some(token) = &knobs.require_token {
        let expected = format!("Bearer {token}");
        if header_str(&parts.headers, "authorization").as_deref() != Some(expected.as_str()) {
            let mut response = text(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static(
                    r#"Bearer realm="mcpr-mock", error="invalid_token""#,
                ),
            );
            return response;
        }
    }
    let method = message
        .as_ref()
        .and_then(|m| m.get("method"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let is_request = message.as_ref().is_some_and(|m| m.get("id").is_some()) && !method.is_empty();
    let taken = match header_str(&parts.headers, "mcp-session-id") {
        Some(session) => match faults.admit(&session, is_request) {
            Ok(taken) => taken,
            Err(Expired) => {
                faults.record_expired(&parts.headers, message.as_ref());
                return text(
                    StatusCode::NOT_FOUND,
                    "session expired (mcpr mock --expire-session-after)",
                );
            }
        },
        None => None,
    };
    if knobs.fail_resume
        && parts.method == Method::GET
        && parts.headers.contains_key("last-event-id")
    {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "resumption refused (mcpr mock --fail-resume)",
        );
    }
    let is_call = method == "tools/call";
    if is_call && take(&faults.http_500_left) {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "injected failure (mcpr mock --http-500)",
        );
    }
    let drop_stream = is_call && take(&faults.drops_left);
    let drop_answer = is_request && faults.take_answer(&method, message.as_ref());
    let rewrite_version = (method == "initialize")
        .then(|| knobs.forced_version.clone())
        .flatten();

    // A client that accepted the forced version names it in every request; rmcp's server
    // would reject a version it does not know, so the header is dropped (the server then
    // assumes its default), keeping the server's own session on a version it supports.
    if let Some(forced) = &knobs.forced_version
        && header_str(&parts.headers, "mcp-protocol-version").as_deref() == Some(forced)
    {
        parts.headers.remove("mcp-protocol-version");
    }
    let mut response = next.run(Request::from_parts(parts, Body::from(body))).await;
    if let Some(taken) = taken {
        // The request counts as running until its answer has gone out.
        let body = std::mem::take(response.body_mut()).into_data_stream();
        *response.body_mut() = Body::from_stream(body.map(move |chunk| {
            let _running = &taken;
            chunk
        }));
    }

    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    let (parts, mut body) = response.into_parts();
    if let Some(version) = rewrite_version {
        body = rewrite_protocol_version(body, &version).await;
    }
    if drop_stream && is_sse {
        body = cut_after_first_event(body);
    }
    if drop_answer {
        // Whatever the server answered (JSON or events), the client gets an event stream
        // that ends before the answer.
        let mut parts = parts;
        parts.headers.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/event-stream"),
        );
        parts.headers.remove(header::CONTENT_LENGTH);
        let body = if is_sse {
            cut_before_answer(body)
        } else {
            // Let the server finish (and drop) its answer first.
            let _ = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await;
            Body::empty()
        };
        return Response::from_parts(parts, body);
    }
    if let (Some(delay), true) = (knobs.sse_delay, is_sse) {
        body = Body::from_stream(body.into_data_stream().then(move |chunk| async move {
            tokio::time::sleep(delay).await;
            chunk
        }));
    }
    Response::from_parts(parts, body)
}

/// The events of `body` up to (not including) the first one that carries a JSON-RPC
/// response; the stream then ends, as a dropped connection would.
fn cut_before_answer(body: Body) -> Body {
    let stream = futures::stream::unfold(
        (body.into_data_stream(), Vec::<u8>::new(), false),
        |(mut inner, mut pending, done)| async move {
            if done {
                return None;
            }
            loop {
                // Hand out whole events that are not the answer.
                if let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                    let event: Vec<u8> = pending.drain(..end + 2).collect();
                    if is_answer(&event) {
                        return None;
                    }
                    return Some((Ok(Bytes::from(event)), (inner, pending, false)));
                }
                match inner.next().await {
                    Some(Ok(chunk)) => pending.extend_from_slice(&chunk),
                    Some(Err(e)) => return Some((Err(e), (inner, pending, true))),
                    None => return None,
                }
            }
        },
    );
    Body::from_stream(stream)
}

/// Whether one SSE event carries a JSON-RPC response (a `result` or an `error` with an id).
fn is_answer(event: &[u8]) -> bool {
    let text = String::from_utf8_lossy(event);
    let data: String = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .collect();
    serde_json::from_str::<Value>(&data).is_ok_and(|message| {
        message.get("id").is_some()
            && (message.get("result").is_some() || message.get("error").is_some())
    })
}

/// The body ends right after the first complete SSE event (`\n\n`); the connection is closed
/// as a dropped stream would be.
fn cut_after_first_event(body: Body) -> Body {
    struct Cut {
        inner: axum::body::BodyDataStream,
        last: u8,
        done: bool,
    }
    let state = Cut {
        inner: body.into_data_stream(),
        last: 0,
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let chunk = match state.inner.next().await? {
            Ok(chunk) => chunk,
            Err(e) => return Some((Err(e), state)),
        };
        let mut previous = state.last;
        for (i, &byte) in chunk.iter().enumerate() {
            if byte == b'\n' && previous == b'\n' {
                state.done = true;
                return Some((Ok(chunk.slice(..=i)), state));
            }
            previous = byte;
        }
        state.last = previous;
        Some((Ok(chunk), state))
    });
    Body::from_stream(stream)
}

/// Sets `result.protocolVersion` in an `initialize` answer, JSON or SSE-framed.
async fn rewrite_protocol_version(body: Body, version: &str) -> Body {
    let collected = tokio::time::timeout(
        REWRITE_TIMEOUT,
        axum::body::to_bytes(body, MAX_REQUEST_BYTES),
    )
    .await;
    let Ok(Ok(bytes)) = collected else {
        return Body::empty();
    };
    let text = String::from_utf8_lossy(&bytes);
    let rewrite = |json: &str| -> Option<String> {
        let mut message: Value = serde_json::from_str(json).ok()?;
        let result = message.get_mut("result")?.as_object_mut()?;
        result.insert("protocolVersion".into(), Value::String(version.to_owned()));
        Some(message.to_string())
    };
    if let Some(rewritten) = rewrite(text.trim()) {
        return Body::from(rewritten);
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| match line.strip_prefix("data:") {
            Some(data) => match rewrite(data.trim()) {
                Some(rewritten) => format!("data: {rewritten}"),
                None => line.to_owned(),
            },
            None => line.to_owned(),
        })
        .collect();
    Body::from(lines.join("\n"))
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn text(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("mcpr mock: {message}\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cut_stream_keeps_exactly_the_first_event() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"id: 0\ndata:\n")),
            Ok(Bytes::from_static(b"\ndata: {\"result\":1}\n\n")),
        ];
        let body = cut_after_first_event(Body::from_stream(futures::stream::iter(chunks)));
        let bytes = axum::body::to_bytes(body, 1024).await.unwrap();
        assert_eq!(&bytes[..], b"id: 0\ndata:\n\n");
    }

    #[tokio::test]
    async fn the_initialize_version_is_rewritten_in_sse_and_json() {
        let sse = Body::from(
            "data:\n\ndata: {\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\"}}\n\n",
        );
        let out = rewrite_protocol_version(sse, "1999-01-01").await;
        let out = axum::body::to_bytes(out, 1024).await.unwrap();
        assert!(String::from_utf8_lossy(&out).contains("\"protocolVersion\":\"1999-01-01\""));
        let json = Body::from("{\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\"}}");
        let out = rewrite_protocol_version(json, "2024-11-05").await;
        let out = axum::body::to_bytes(out, 1024).await.unwrap();
        assert!(String::from_utf8_lossy(&out).contains("2024-11-05"));
    }

    #[test]
    fn sessions_expire_after_n_requests_and_stay_expired() {
        let ended = Arc::new(Mutex::new(Vec::new()));
        let on_expire: OnExpire = {
            let ended = ended.clone();
            Arc::new(move |session| ended.lock().unwrap().push(session))
        };
        let faults = Arc::new(
            Faults::new(
                HttpKnobs {
                    expire_session_after: Some(2),
                    ..HttpKnobs::default()
                },
                None,
                Some(on_expire),
            )
            .unwrap(),
        );
        let first = faults.admit("a", true).unwrap();
        assert!(first.is_some());
        assert!(faults.admit("a", false).unwrap().is_none());
        drop(faults.admit("a", true).unwrap());
        assert_eq!(faults.admit("a", true).err(), Some(Expired));
        assert_eq!(faults.admit("a", false).err(), Some(Expired));
        assert!(faults.admit("b", true).unwrap().is_some());
        // The session ends in the server only once the request it took is answered.
        assert!(ended.lock().unwrap().is_empty());
        drop(first);
        assert_eq!(*ended.lock().unwrap(), ["a"]);
    }
}
