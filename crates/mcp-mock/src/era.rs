//! `--era` and `--ignore-unknown`: which era of MCP the mock speaks.
//!
//! rmcp's server answers both `initialize` and `server/discover`. The mock speaks only the
//! `initialize` era unless told otherwise, as the servers most clients meet still do, so
//! every other knob keeps behaving the way it always has:
//! - `legacy` (default): `server/discover` gets "method not found", as any 2025 server answers;
//! - `both`: rmcp's own behaviour (either opening works);
//! - `2026-07-28`: `initialize` is refused ("unsupported protocol version"), as a server of the
//!   new revision only would.
//!
//! `--ignore-unknown` makes a legacy mock never answer `server/discover` at all, as some old
//! servers never answer a method they do not know; `--exit-on-unknown` makes it exit instead,
//! as servers built on the Python SDK before 1.7 do: silent on the method itself, dead when the
//! next message arrives. `--no-listen-ack` makes it never answer
//! (nor acknowledge) `subscriptions/listen`, and `--listen-ack-delay` serves it late (stdio). Over stdio the rules are applied by a
//! transport wrapper; over streamable HTTP by a middleware that reads the POSTed message.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, ProtocolVersion,
    ServerJsonRpcMessage,
};
use rmcp::transport::Transport;

/// The `--era` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EraKnob {
    /// Only `initialize` (2025-11-25 and older).
    #[default]
    #[value(name = "legacy")]
    Legacy,
    /// `initialize` and `server/discover`.
    #[value(name = "both")]
    Both,
    /// Only `server/discover` (2026-07-28).
    #[value(name = "2026-07-28")]
    Modern,
}

/// What the mock does with one opening request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Hand it to rmcp.
    Pass,
    /// Answer it with this error.
    Refuse(Refusal),
    /// Never answer it.
    Ignore,
    /// Never answer it, and exit when the next message arrives, as a server whose reader
    /// crashed on a method it does not know.
    Exit,
}

/// The refusals an opening can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `server/discover` on a legacy server.
    UnknownMethod,
    /// `initialize` on a 2026-07-28 server.
    NoInitialize,
}

impl Refusal {
    fn error(self) -> ErrorData {
        match self {
            Refusal::UnknownMethod => ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "method not found: server/discover",
                None,
            ),
            Refusal::NoInitialize => ErrorData::unsupported_protocol_version(
                ProtocolVersion::V_2025_11_25,
                &[ProtocolVersion::V_2026_07_28],
            ),
        }
    }
}

/// The era knobs of one mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct EraKnobs {
    pub era: EraKnob,
    pub ignore_unknown: bool,
    /// `--exit-on-unknown`: exit on `server/discover` (with `--era legacy`).
    pub exit_on_unknown: bool,
    /// `--no-listen-ack`: never answer (nor acknowledge) `subscriptions/listen`.
    pub ignore_listen: bool,
    /// `--listen-ack-delay`: hold `subscriptions/listen` this long before serving it (stdio).
    pub listen_delay: Option<std::time::Duration>,
}

impl EraKnobs {
    /// The verdict on a request with `method`.
    pub(crate) fn verdict(self, method: &str) -> Verdict {
        match (method, self.era) {
            ("server/discover", EraKnob::Legacy) if self.exit_on_unknown => Verdict::Exit,
            ("server/discover", EraKnob::Legacy) if self.ignore_unknown => Verdict::Ignore,
            ("server/discover", EraKnob::Legacy) => Verdict::Refuse(Refusal::UnknownMethod),
            ("initialize", EraKnob::Modern) => Verdict::Refuse(Refusal::NoInitialize),
            ("subscriptions/listen", _) if self.ignore_listen => Verdict::Ignore,
            _ => Verdict::Pass,
        }
    }
}

fn method_of(request: &ClientRequest) -> &'static str {
    match request {
        ClientRequest::DiscoverRequest(_) => "server/discover",
        ClientRequest::InitializeRequest(_) => "initialize",
        ClientRequest::SubscriptionsListenRequest(_) => "subscriptions/listen",
        _ => "",
    }
}

/// A stdio transport applying the era knobs.
pub(crate) struct EraTransport<T> {
    inner: T,
    knobs: EraKnobs,
    /// A `subscriptions/listen` held back by `--listen-ack-delay`, and when to serve it.
    held: Option<(tokio::time::Instant, ClientJsonRpcMessage)>,
    /// `--exit-on-unknown` met its method: the next message ends the server.
    doomed: bool,
}

impl<T> EraTransport<T> {
    pub(crate) fn new(inner: T, knobs: EraKnobs) -> Self {
        EraTransport {
            inner,
            knobs,
            held: None,
            doomed: false,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for EraTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let message = match &self.held {
                Some((due, _)) => {
                    let due = *due;
                    tokio::select! {
                        message = self.inner.receive() => message?,
                        () = tokio::time::sleep_until(due) => {
                            return self.held.take().map(|(_, held)| held);
                        }
                    }
                }
                None => self.inner.receive().await?,
            };
            if self.doomed {
                // The end of input ends the server, and with it the process.
                eprintln!("exiting, as asked (--exit-on-unknown)");
                return None;
            }
            let JsonRpcMessage::Request(request) = &message else {
                return Some(message);
            };
            if let (Some(delay), "subscriptions/listen") =
                (self.knobs.listen_delay, method_of(&request.request))
                && self.held.is_none()
            {
                self.held = Some((tokio::time::Instant::now() + delay, message));
                continue;
            }
            match self.knobs.verdict(method_of(&request.request)) {
                Verdict::Pass => return Some(message),
                Verdict::Ignore => continue,
                Verdict::Exit => self.doomed = true,
                Verdict::Refuse(refusal) => {
                    let answer =
                        ServerJsonRpcMessage::error(refusal.error(), Some(request.id.clone()));
                    if self.inner.send(answer).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Largest POST body the middleware reads to find the method: an opening is small, so a
/// bigger body (or one of unknown length) passes untouched.
const MAX_PEEK: usize = 64 * 1024;

/// The streamable HTTP middleware applying the era knobs.
pub(crate) async fn apply(
    State(knobs): State<Arc<EraKnobs>>,
    request: Request,
    next: Next,
) -> Response {
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if request.method() != axum::http::Method::POST || length.is_none_or(|n| n > MAX_PEEK) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_PEEK).await else {
        return (StatusCode::BAD_REQUEST, "unreadable request body").into_response();
    };
    let message = serde_json::from_slice::<serde_json::Value>(&bytes).ok();
    let method = message
        .as_ref()
        .and_then(|m| m.get("method"))
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    let id = message.as_ref().and_then(|m| m.get("id")).cloned();
    match (knobs.verdict(method), id) {
        (Verdict::Refuse(refusal), Some(id)) => {
            let answer = serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": refusal.error(),
            });
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                answer.to_string(),
            )
                .into_response()
        }
        (Verdict::Exit, _) => {
            eprintln!("exiting on `{method}`, as asked (--exit-on-unknown)");
            std::process::exit(1)
        }
        (Verdict::Ignore, Some(_)) => {
            // An event stream that never carries the answer.
            let stream = futures::stream::pending::<Result<bytes::Bytes, std::io::Error>>();
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(stream),
            )
                .into_response()
        }
        _ => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let legacy = EraKnobs::default();
        assert_eq!(
            legacy.verdict("server/discover"),
            Verdict::Refuse(Refusal::UnknownMethod)
        );
        assert_eq!(legacy.verdict("initialize"), Verdict::Pass);
        let ignoring = EraKnobs {
            ignore_unknown: true,
            ..legacy
        };
        let deaf = EraKnobs {
            ignore_listen: true,
            ..legacy
        };
        assert_eq!(deaf.verdict("subscriptions/listen"), Verdict::Ignore);
        assert_eq!(legacy.verdict("subscriptions/listen"), Verdict::Pass);
        assert_eq!(ignoring.verdict("server/discover"), Verdict::Ignore);
        let crashing = EraKnobs {
            exit_on_unknown: true,
            ..legacy
        };
        assert_eq!(crashing.verdict("server/discover"), Verdict::Exit);
        assert_eq!(crashing.verdict("initialize"), Verdict::Pass);
        let modern = EraKnobs {
            era: EraKnob::Modern,
            ..legacy
        };
        assert_eq!(modern.verdict("server/discover"), Verdict::Pass);
        assert_eq!(
            modern.verdict("initialize"),
            Verdict::Refuse(Refusal::NoInitialize)
        );
        let both = EraKnobs {
            era: EraKnob::Both,
            ..legacy
        };
        assert_eq!(both.verdict("initialize"), Verdict::Pass);
        assert_eq!(both.verdict("server/discover"), Verdict::Pass);
    }
}
