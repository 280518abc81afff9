//! The `initialize` era on the direct road: the session a call goes on when the server had
//! expired the one before, the server's requests on a call's stream, and resuming a stream
//! that broke (see the parent module).

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcError, JsonRpcRequest, JsonRpcResponse, JsonRpcVersion2_0,
    RequestId, ServerRequest,
};
use rmcp::service::{InboundStreamOrigin, RequestContext};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::super::plumbing::{self, HttpError};
use super::super::streamable_http::{self, HttpClient, Turn};
use super::{CANCEL_BOUND, Exchange, Expired, HttpDirect, Ticket, authorized};
use crate::client::link::ServerPeer;
use crate::client::{ClientError, McpClient};

/// How many expired sessions may refuse one call before it fails. rmcp's road sends a call
/// again once; here up to three times, as a server that expires sessions after some number of
/// requests may spend the new session's on the calls sent again before this one. Each refusal
/// (a 404 for the session) says the call did not run.
const SESSION_RENEWALS: usize = 3;
/// How many new sessions a call may wait for without being sent, each spent by the calls
/// queued before it: a bound for a server that expires every session at once.
const SESSIONS_WAITED: usize = 16;

impl McpClient {
    /// [`exchange`](Self::exchange), sent again on a new session when the server had expired
    /// the session the call went on: a 404 for its session says the call never reached the
    /// server, so the call runs at most once. A session found gone already is not tried at
    /// all. At most [`SESSION_RENEWALS`] sessions refuse one call, and it waits for at most
    /// [`SESSIONS_WAITED`] new ones.
    ///
    /// While a new session is being opened, calls take turns
    /// ([`Sessions::turn`](streamable_http::Sessions::turn)): the ones sent again go first,
    /// each holding its turn until the server has taken its request, and calls made meanwhile
    /// queue behind them, as rmcp's worker sends the requests it retries before the ones that
    /// came during its recovery. A server that expires sessions after a number of requests then
    /// takes the calls it refused first.
    pub(super) async fn exchange_renewing<M: Display + ?Sized>(
        &self,
        direct: &HttpDirect,
        id: u64,
        ticket: &Ticket,
        body: Bytes,
        method: &M,
    ) -> Exchange {
        let sessions = direct.backend.as_ref().map(HttpClient::sessions);
        let mut ticket = ticket.clone();
        // A call made while a new session opens waits for its turn.
        let mut turn = match sessions {
            Some(sessions) if sessions.renewing() => Some(sessions.turn().await),
            _ => None,
        };
        // Sessions that refused the call, and sessions it found gone before sending.
        let (mut refused, mut found_gone) = (0, 0);
        loop {
            let expired = match (&ticket, sessions) {
                (Ticket::Session(session), Some(sessions)) if sessions.is_expired(session) => {
                    found_gone += 1;
                    session.clone()
                }
                _ => match self
                    .exchange(direct, id, &ticket, body.clone(), method, turn.take())
                    .await
                {
                    Err(Expired(expired)) => {
                        refused += 1;
                        expired
                    }
                    Ok(exchange) => return exchange,
                },
            };
            if refused > SESSION_RENEWALS || found_gone > SESSIONS_WAITED {
                return Exchange::Failed(self.session_lost(direct, method));
            }
            drop(turn.take());
            let (renewed, next_turn) = match self.renewed_session(direct, &expired).await {
                Ok(renewed) => renewed,
                Err(error) => return Exchange::Failed(error),
            };
            ticket = Ticket::Session(renewed);
            turn = Some(next_turn);
        }
    }

    /// The session after `expired`, and the turn to send on it. rmcp's worker opens the new
    /// session when its next request finds the old one gone (told by
    /// [`Sessions::expired`](streamable_http::Sessions::expired), so it does not send that
    /// request): a ping, unless a call before this one in the queue has opened it already.
    async fn renewed_session(
        &self,
        direct: &HttpDirect,
        expired: &Arc<str>,
    ) -> Result<(Arc<str>, Turn), ClientError> {
        let (Some(backend), ServerPeer::Service(peer)) = (&direct.backend, &self.peer) else {
            return Err(self.session_lost(direct, "tools/call"));
        };
        let sessions = backend.sessions();
        sessions.expired(expired);
        let turn = sessions.turn().await;
        if sessions.latest().as_ref() == Some(expired) {
            let ping = rmcp::model::ClientRequest::PingRequest(Default::default());
            peer.send_request(ping)
                .await
                .map_err(|e| self.service_error("tools/call", e))?;
        }
        match sessions.latest() {
            Some(session) if session != *expired => Ok((session, turn)),
            _ => Err(self.session_lost(direct, "tools/call")),
        }
    }

    /// The error of a call whose session expired and could not be opened again.
    pub(super) fn session_lost<M: Display + ?Sized>(
        &self,
        direct: &HttpDirect,
        method: &M,
    ) -> ClientError {
        let error = StreamableHttpError::<HttpError>::SessionExpired;
        plumbing::classify(&self.server, &method.to_string(), &direct.url, &error)
            .unwrap_or_else(|| self.protocol_error(method, error.to_string()))
    }

    /// Answer a request the server asked on a call's stream, by the connection's handler as
    /// rmcp's service would, and POST the answer on the session. On a task of its own: the
    /// call's stream goes on being read meanwhile, and the answer outlives the call if it
    /// must (the server may be waiting for it to answer the call).
    pub(super) fn answer_asked(
        &self,
        direct: &HttpDirect,
        ticket: &Ticket,
        call_id: u64,
        request: JsonRpcRequest<ServerRequest>,
    ) {
        let ServerPeer::Service(peer) = &self.peer else {
            return;
        };
        let mut context = RequestContext::new(request.id.clone(), peer.clone());
        // The stream it came on: the handler gives it to that call's asker.
        let call = RequestId::Number(i64::try_from(call_id).unwrap_or(i64::MAX));
        context
            .extensions
            .insert(InboundStreamOrigin::OutboundRequest(call));
        let handler = self.handler.clone();
        let post = direct.post(ticket, Vec::new());
        let (auth, url) = (direct.auth.clone(), direct.url.clone());
        let server = self.server.clone();
        tokio::spawn(async move {
            let id = request.id;
            let answer =
                match rmcp::Service::handle_request(&handler, request.request, context).await {
                    Ok(result) => ClientJsonRpcMessage::Response(JsonRpcResponse {
                        jsonrpc: JsonRpcVersion2_0,
                        id,
                        result,
                    }),
                    Err(error) => ClientJsonRpcMessage::Error(JsonRpcError::new(Some(id), error)),
                };
            let body = match serde_json::to_vec(&answer) {
                Ok(body) => body,
                Err(e) => {
                    tracing::warn!(%server, "cannot write an answer to the server: {e}");
                    return;
                }
            };
            let request = authorized(auth.as_deref(), &url, post.body(body)).await;
            match tokio::time::timeout(CANCEL_BOUND, request.send()).await {
                Ok(Ok(response)) if response.status().is_success() => {}
                Ok(Ok(response)) => tracing::debug!(
                    %server,
                    "the server refused an answer to its request: HTTP {}",
                    response.status()
                ),
                Ok(Err(e)) => tracing::debug!(%server, "cannot send an answer to the server: {e}"),
                Err(_) => tracing::debug!(%server, "an answer to the server got no reply in time"),
            }
        });
    }
}

/// Where a broken response stream resumes, and when: after the server's `retry:` hint the
/// first time, then backing off, a bounded number of times (as rmcp's worker resumes).
#[derive(Default)]
pub(super) struct Resumption {
    last_event_id: Option<String>,
    retry: Option<Duration>,
    tries: u32,
}

impl Resumption {
    pub(super) fn saw(&mut self, id: Option<&str>, retry: Option<u64>) {
        if let Some(id) = id {
            self.last_event_id = Some(id.to_owned());
        }
        if let Some(retry) = retry {
            self.retry = Some(Duration::from_millis(retry));
        }
    }

    /// The event to resume after and the wait before, unless no event had an id or the tries
    /// are spent.
    pub(super) fn next(&mut self) -> Option<(String, Duration)> {
        let last_event_id = self.last_event_id.clone()?;
        if self.tries > streamable_http::RECONNECT_ATTEMPTS {
            return None;
        }
        let wait = match self.tries {
            0 => self.retry.unwrap_or(streamable_http::RECONNECT_BACKOFF),
            n => (streamable_http::RECONNECT_BACKOFF * 2u32.saturating_pow(n - 1))
                .min(streamable_http::RECONNECT_MAX_DELAY),
        };
        self.tries += 1;
        Some((last_event_id, wait))
    }
}
