//! Sending one request and turning every way it can fail into a [`ClientError`]: timeouts,
//! cancellation, a closed connection, an answer lost with its stream (asked again when safe),
//! and the server's own errors.

use serde::Deserialize as _;

use std::fmt::Display;
use std::time::Duration;

use rmcp::model::{CancelledNotificationParam, ClientRequest, RequestMetaObject, ServerResult};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::envelope::{Answer, Outgoing, RequestSettings, ToolAnswer};
use super::http::direct::Road;
use super::http::{lost, plumbing};
use super::model::era::{self, Era};
use super::{
    ClientError, McpClient, ProgressUpdate, ask, is_transport_closed, progress, raw, stderr_now,
};

impl McpClient {
    /// Send one request and map every failure to a [`ClientError`].
    pub(super) async fn request(
        &self,
        request: ClientRequest,
        method: &(impl Display + ?Sized),
        timeout: Option<Duration>,
        cancel: Option<&CancellationToken>,
    ) -> Result<ServerResult, ClientError> {
        let spare = lost::repeatable(&request).then(|| request.clone());
        let send = |request| {
            self.request_with_progress(
                Outgoing::Request(Box::new(request)),
                method,
                timeout,
                cancel,
                None,
                None,
            )
        };
        let answer = match (send(request).await, spare) {
            (Err(ClientError::AnswerLost { .. }), Some(request)) => {
                tracing::debug!(server = %self.server, "{method}: answer lost; asking again");
                send(request).await.map_err(lost::lost_again)
            }
            (other, _) => other,
        };
        let sent = match answer? {
            Answer::Typed(result) => return Ok(*result),
            Answer::Tool(ToolAnswer::Wire(sent)) => {
                rmcp::model::CallToolResult::deserialize(Value::Object(sent))
            }
            Answer::Tool(ToolAnswer::Output(output)) => {
                serde_json::to_value(output).and_then(rmcp::model::CallToolResult::deserialize)
            }
        };
        sent.map(ServerResult::CallToolResult)
            .map_err(|e| self.protocol_error(method, format!("invalid result: {e}")))
    }

    /// [`request`](Self::request), sending the server's progress notifications about it to
    /// `progress`. A `tools/call` answer comes back as the server sent it. A 2026-07-28
    /// server is told the capabilities of the call's asker, if it has one. A stdio server's
    /// requests take the direct path (see [`direct`](super::stdio::direct)), a remote server's
    /// rmcp's service, a 2026-07-28 tool call over streamable HTTP aside (see
    /// [`http::direct`](super::http::direct)).
    pub(super) async fn request_with_progress(
        &self,
        request: Outgoing<'_>,
        method: &(impl Display + ?Sized),
        timeout: Option<Duration>,
        cancel: Option<&CancellationToken>,
        progress: Option<&mpsc::Sender<ProgressUpdate>>,
        input: Option<&ask::CallInput>,
    ) -> Result<Answer, ClientError> {
        let settings = RequestSettings {
            method,
            timeout,
            cancel,
            progress,
        };
        if let Some(direct) = &self.direct {
            let meta = self.request_meta(input);
            return self.request_direct(request, meta, direct, settings).await;
        }
        // A 2026-07-28 tool call over streamable HTTP (see `http::direct`); what that road
        // does not take goes on to rmcp's.
        if let Outgoing::Tool(call) = &request
            && let Some(road) = self.http_direct_for(call)
        {
            let meta = self.request_meta(input);
            // Boxed, as below: the HTTP exchange's future is large.
            let taken =
                Box::pin(self.request_http_direct(road, call, meta, &settings, input)).await;
            if let Road::Done(outcome) = taken {
                return outcome;
            }
        }
        let meta = self.request_meta(input);
        // Boxed: rmcp's futures would otherwise make every request's future several KiB,
        // copied on each move, for the direct path's sake too.
        Box::pin(self.request_via_service(request, meta, settings, input)).await
    }

    /// The `_meta` a request carries: the era's, and on a 2026-07-28 connection the
    /// capabilities of the call's asker, if it has one.
    fn request_meta(&self, input: Option<&ask::CallInput>) -> Option<RequestMetaObject> {
        let mut meta = era::request_meta(
            self.opening.era,
            self.handler.events.is_some(),
            self.log_level(),
        );
        if let (Era::Modern, Some(input)) = (self.opening.era, input) {
            use rmcp::ClientHandler as _;
            let declared = input.capabilities(self.handler.get_info().capabilities);
            meta.get_or_insert_with(Default::default)
                .set_client_capabilities(declared);
        }
        meta
    }

    /// [`request_with_progress`](Self::request_with_progress) through rmcp's service: a
    /// remote server's requests.
    async fn request_via_service<M: Display + ?Sized>(
        &self,
        request: Outgoing<'_>,
        meta: Option<RequestMetaObject>,
        settings: RequestSettings<'_, M>,
        input: Option<&ask::CallInput>,
    ) -> Result<Answer, ClientError> {
        let method = settings.method;
        let request = match request {
            Outgoing::Request(request) => *request,
            Outgoing::Tool(call) => {
                let params = call.to_params().map_err(|e| {
                    self.protocol_error(method, format!("cannot write the request: {e}"))
                })?;
                ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params))
            }
        };
        // A custom method's result is taken as sent (see `raw`), not as rmcp's untagged parse.
        let custom = matches!(request, ClientRequest::CustomRequest(_));
        let mut options = PeerRequestOptions::no_options();
        // rmcp sends `notifications/cancelled` itself when this timeout expires.
        options.timeout = settings.timeout;
        options.meta = meta;
        // Failing to hand the request to rmcp's writer means it was never sent.
        let not_sent = || ClientError::NotSent {
            server: self.server.clone(),
            method: method.to_string(),
        };
        if self.is_closed() {
            return Err(not_sent());
        }
        // The server's requests on this request's response stream go to its asker (see `ask`).
        let sending = input.map(|_| self.handler.asking.sending());
        let handle = self
            .peer
            .send_request_with_option(request, options)
            .await
            .map_err(|e| match e {
                ServiceError::TransportClosed | ServiceError::TransportSend(_) => not_sent(),
                other => self.service_error(method, other),
            })?;
        let id = handle.id.clone();
        let _sent = sending
            .zip(input)
            .map(|(sending, input)| sending.sent(id.clone(), input.clone()));
        let forget = raw::Forget {
            raw: &self.handler.raw,
            id: id.clone(),
        };
        // Registered for as long as this function runs; notifications that beat the
        // registration are handed over by the router.
        let _progress_route = settings.progress.map(|sender| {
            self.progress
                .register(handle.progress_token.clone(), sender.clone())
        });
        let response = match settings.cancel {
            None => handle.await_response().await,
            Some(cancel) => tokio::select! {
                response = handle.await_response() => response,
                () = cancel.cancelled() => {
                    let notice = CancelledNotificationParam::new(
                        Some(id),
                        Some("cancelled by the client".into()),
                    );
                    let _ = self.peer.notify_cancelled(notice).await;
                    return Err(ClientError::Cancelled {
                        server: self.server.clone(),
                        method: method.to_string(),
                    });
                }
            },
        };
        if response.is_ok() && _progress_route.as_ref().is_some_and(|r| r.seen_any()) {
            // rmcp hands each notification to a task of its own but the response straight to
            // us, so a progress notification sent just before the result may still be on its
            // way to the router: give those tasks a moment before the route goes.
            tokio::time::sleep(progress::LATE_GRACE).await;
        }
        match response {
            // The result as sent stands for a tool's result only, not for a question
            // (`input_required`) that comes back in its place.
            Ok(result) => Ok(match (self.handler.raw.take(&forget.id), result) {
                (Some(sent), ServerResult::CallToolResult(_)) => {
                    Answer::Tool(ToolAnswer::Wire(sent))
                }
                (Some(sent), _) if custom => Answer::Typed(Box::new(ServerResult::CustomResult(
                    rmcp::model::CustomResult(Value::Object(sent)),
                ))),
                (_, result) => Answer::Typed(Box::new(result)),
            }),
            Err(e) => {
                let error = self.service_error_after_send(method, e).await;
                self.forget_refuted_discovery(&error);
                Err(error)
            }
        }
    }

    /// A server that refuses the protocol version of a connection opened from a cached
    /// `server/discover` result has changed since: forget that result and the era, so the
    /// next connection probes it afresh.
    pub(super) fn forget_refuted_discovery(&self, error: &ClientError) {
        // Without the `cache` feature nothing was cached to forget.
        #[cfg(not(feature = "cache"))]
        let _ = error;
        #[cfg(feature = "cache")]
        if matches!(
            error,
            ClientError::Rpc { code, .. }
                if *code == rmcp::model::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0
        ) && self.opening.discovery_cached
            && let Some(cache) = &self.cache
        {
            let (server, config) = (self.server.clone(), self.config.clone());
            cache.queue(move |cache| {
                cache.forget_discovery(&server, &config);
                cache.forget_era(&server, &config);
            });
        }
    }

    pub(super) fn service_error(
        &self,
        method: &(impl Display + ?Sized),
        error: ServiceError,
    ) -> ClientError {
        let method = &method.to_string();
        // A remote server's HTTP failure says more than "connection closed".
        if let (Some(url), ServiceError::TransportSend(send)) = (&self.url, &error)
            && let Some(classified) = plumbing::classify(&self.server, method, url, send)
        {
            return classified;
        }
        match error {
            // rmcp answers a request itself when the stream carrying its response was lost
            // and could not be resumed; that is not the server's answer.
            // Protocol 2026-07-28 has no resumption: the answer is gone.
            ServiceError::McpError(e)
                if self.url.is_some()
                    && is_transport_closed(&e)
                    && self.opening.era == Era::Modern =>
            {
                self.answer_lost(method)
            }
            ServiceError::TransportClosed
                if self.url.is_some()
                    && !self.peer.is_transport_closed()
                    && self.opening.era == Era::Modern =>
            {
                self.answer_lost(method)
            }
            ServiceError::McpError(e) if self.url.is_some() && is_transport_closed(&e) => {
                ClientError::Transport {
                    server: self.server.clone(),
                    phase: method.to_owned(),
                    reason: e.message.to_string(),
                }
            }
            // Over HTTP, rmcp also drops a request whose response stream was lost while the
            // connection as a whole goes on.
            ServiceError::TransportClosed
                if self.url.is_some() && !self.peer.is_transport_closed() =>
            {
                ClientError::Transport {
                    server: self.server.clone(),
                    phase: method.to_owned(),
                    reason: "the response stream was lost and could not be resumed".into(),
                }
            }
            ServiceError::McpError(e) => ClientError::Rpc {
                server: self.server.clone(),
                method: method.to_owned(),
                code: e.code.0,
                message: e.message.to_string(),
                data: e.data.map(Box::new),
            },
            ServiceError::Timeout { timeout } => ClientError::Timeout {
                server: self.server.clone(),
                phase: method.to_owned(),
                after: timeout,
                stderr: Vec::new(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => ClientError::Exited {
                server: self.server.clone(),
                phase: method.to_owned(),
                status: self
                    .process
                    .as_ref()
                    .and_then(|process| process.exit_status())
                    .map(|s| s.to_string()),
                stderr: stderr_now(self.process.as_ref()),
                held_back: Vec::new(),
            },
            other => self.protocol_error(method, other.to_string()),
        }
    }

    /// Like `service_error`, but a lost connection waits briefly for the process to be reaped
    /// so the error can give its exit status.
    pub(super) async fn service_error_after_send(
        &self,
        method: &(impl Display + ?Sized),
        error: ServiceError,
    ) -> ClientError {
        if matches!(
            error,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) && let Some(process) = &self.process
        {
            process.exited_within(Duration::from_millis(100)).await;
        }
        self.service_error(method, error)
    }

    pub(super) fn answer_lost(&self, method: &(impl Display + ?Sized)) -> ClientError {
        ClientError::AnswerLost {
            server: self.server.clone(),
            method: method.to_string(),
            repeated: false,
        }
    }

    pub(super) fn protocol_error(
        &self,
        method: &(impl Display + ?Sized),
        message: impl Into<String>,
    ) -> ClientError {
        ClientError::Protocol {
            server: self.server.clone(),
            method: method.to_string(),
            message: message.into(),
        }
    }
}
