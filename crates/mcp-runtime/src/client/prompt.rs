//! `prompts/get`. A 2026-07-28 server may answer it with `input_required` before it fills the
//! prompt, as it may a tool call: the requests it embeds are answered (by the call's asker
//! where it declared them, else by the host handlers: see `mrtr`) and the request is sent
//! again, at most [`MAX_INPUT_ROUNDS`] rounds. An older server asks with requests of its own
//! while the `prompts/get` runs, which reach the asker as a tool call's do (see `ask`).

use std::time::Instant;

use rmcp::model::{ClientRequest, GetPromptRequest, GetPromptRequestParams, ServerResult};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::ask::CallInput;
use super::envelope::{Answer, Outgoing};
use super::http::lost;
use super::mrtr::{self, MAX_INPUT_ROUNDS};
use super::{ClientError, Era, McpClient, TraceContext};

impl McpClient {
    /// Get one prompt (`prompts/get`) filled with `arguments`. The result comes back as the
    /// server sent it, in the wire format (`{"description"?, "messages": [...]}`). What the
    /// server asks for first is answered by the host's handlers.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, ClientError> {
        let mut params = GetPromptRequestParams::new(name);
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        self.get_prompt_answering(params, None, None).await
    }

    /// [`get_prompt`](Self::get_prompt) for a gateway's client: what the server asks for, in
    /// either era, goes to `asker` where it declared it. `cancel` stops the request and tells
    /// the server (`notifications/cancelled`).
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) async fn get_prompt_asking(
        &self,
        params: GetPromptRequestParams,
        asker: &CallInput,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ClientError> {
        let _asking = self.handler.asking.register(asker.clone());
        self.get_prompt_answering(params, Some(asker), cancel).await
    }

    /// `prompts/get` as a gateway relays it to a 2026-07-28 client: a retry's `inputResponses`
    /// and `requestState` (in `params`) go to the server unchanged, and the server's
    /// `input_required` result comes back as sent (wire format, `resultType` set) for that
    /// client to answer. A 2026-07-28 server is told `declared` as the client's capabilities.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // used by the gateway only
    pub(crate) async fn get_prompt_relayed(
        &self,
        params: GetPromptRequestParams,
        declared: rmcp::model::ClientCapabilities,
    ) -> Result<Value, ClientError> {
        let (operation, params) = self.prompt_operation(params);
        let result = self.send_prompt_relayed(params, declared).await;
        super::finish(operation, &result);
        result
    }

    async fn send_prompt_relayed(
        &self,
        params: GetPromptRequestParams,
        declared: rmcp::model::ClientCapabilities,
    ) -> Result<Value, ClientError> {
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let method = "prompts/get";
        // Only its capabilities are used, and only by a 2026-07-28 server: nothing is asked
        // through it (an older server's own requests get the host handlers' answers).
        let (asker, _) = CallInput::new(std::sync::Arc::new(declared));
        let asker = (self.opening.era == Era::Modern).then_some(&asker);
        let timeout = self.config.request_timeout();
        let answer = self
            .request_with_progress(
                Outgoing::Request(Box::new(request)),
                method,
                timeout,
                None,
                None,
                asker,
            )
            .await?;
        let Answer::Typed(result) = answer else {
            return Err(self.protocol_error(method, "unexpected response type"));
        };
        let value = match *result {
            ServerResult::GetPromptResult(result) => serde_json::to_value(&result),
            ServerResult::InputRequiredResult(result) => serde_json::to_value(&result),
            _ => return Err(self.protocol_error(method, "unexpected response type")),
        };
        value.map_err(|e| self.protocol_error(method, format!("invalid result: {e}")))
    }

    /// Send `prompts/get` until the server fills the prompt, answering what it asks for on
    /// the way; the request's timeout bounds the whole exchange.
    async fn get_prompt_answering(
        &self,
        params: GetPromptRequestParams,
        asker: Option<&CallInput>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ClientError> {
        let (operation, params) = self.prompt_operation(params);
        let result = self.send_prompt(params, asker, cancel).await;
        super::finish(operation, &result);
        result
    }

    /// The span of a `prompts/get`, parented on the trace context of its `_meta` (a gateway's
    /// client's); the server is sent the span's own context in its place.
    fn prompt_operation(
        &self,
        mut params: GetPromptRequestParams,
    ) -> (crate::telemetry::Operation, GetPromptRequestParams) {
        let trace = params
            .meta
            .as_ref()
            .map(|meta| TraceContext::from_meta(&meta.0.0))
            .unwrap_or_default();
        let kind = crate::telemetry::Kind::Prompt(&params.name);
        let operation = crate::telemetry::start(kind, self.place(&trace));
        if let Some(traceparent) = operation.traceparent() {
            let meta = params.meta.get_or_insert_with(Default::default);
            trace.continued_by(traceparent).write_into(&mut meta.0.0);
        }
        (operation, params)
    }

    async fn send_prompt(
        &self,
        mut params: GetPromptRequestParams,
        asker: Option<&CallInput>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ClientError> {
        let method = "prompts/get";
        let timeout = self.config.request_timeout();
        let started = Instant::now();
        for _round in 0..=MAX_INPUT_ROUNDS {
            let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
            let send = || {
                let request =
                    ClientRequest::GetPromptRequest(GetPromptRequest::new(params.clone()));
                self.request_with_progress(
                    Outgoing::Request(Box::new(request)),
                    method,
                    left,
                    cancel,
                    None,
                    asker,
                )
            };
            let answer = match send().await {
                Err(ClientError::AnswerLost { .. }) => {
                    tracing::debug!(server = %self.server, "{method}: answer lost; asking again");
                    send().await.map_err(lost::lost_again)
                }
                other => other,
            };
            let Answer::Typed(result) = answer? else {
                return Err(self.protocol_error(method, "unexpected response type"));
            };
            match *result {
                ServerResult::GetPromptResult(result) => {
                    return serde_json::to_value(&result)
                        .map_err(|e| self.protocol_error(method, format!("invalid result: {e}")));
                }
                ServerResult::InputRequiredResult(asked) => {
                    let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
                    let asker = asker.map(|asker| (asker, left));
                    let retry = mrtr::next_round(&self.handler, asked, method, asker).await?;
                    params.input_responses = retry.input_responses;
                    params.request_state = retry.request_state;
                }
                _ => return Err(self.protocol_error(method, "unexpected response type")),
            }
        }
        Err(self.protocol_error(
            method,
            format!("the server still asked for input after {MAX_INPUT_ROUNDS} rounds"),
        ))
    }
}
