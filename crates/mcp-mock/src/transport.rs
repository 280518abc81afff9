//! A transport wrapper for the knobs that act on messages rather than on tool behaviour.
//!
//! It wraps any rmcp server transport, so a future HTTP mode can reuse it:
//! - `--protocol-version` rewrites the version in the `initialize` response on its way out.
//!   rmcp re-negotiates whatever the handler answers, so the handler alone cannot force an
//!   arbitrary version; doing it here keeps rmcp's own session on a version it supports.
//! - `--garbage` needs to know which outgoing lines answer a `tools/call`: incoming call ids
//!   are handed to the stdout pump.
//! - a result that carries its own wire form (the `rich` tool) is sent as that JSON.
//! - the end of input is signalled to [`super::serve_stdio`], which then exits promptly instead
//!   of waiting for rmcp to drain calls that may never finish.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ProtocolVersion, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::transport::Transport;
use tokio_util::sync::CancellationToken;

use super::io::CallIds;

/// Wraps a server transport `T` with the message-level fault knobs.
pub(crate) struct MockTransport<T> {
    inner: T,
    forced_version: Option<ProtocolVersion>,
    call_ids: Option<Arc<CallIds>>,
    eof: CancellationToken,
}

impl<T> MockTransport<T> {
    /// `forced_version` replaces the version answered to `initialize`; `call_ids` collects the
    /// ids of incoming `tools/call` requests; `eof` is cancelled when input ends.
    pub(crate) fn new(
        inner: T,
        forced_version: Option<ProtocolVersion>,
        call_ids: Option<Arc<CallIds>>,
        eof: CancellationToken,
    ) -> Self {
        MockTransport {
            inner,
            forced_version,
            call_ids,
            eof,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for MockTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some(version) = &self.forced_version
            && let JsonRpcMessage::Response(response) = &mut item
            && let ServerResult::InitializeResult(init) = &mut response.result
        {
            init.protocol_version = version.clone();
        }
        if let JsonRpcMessage::Response(response) = &mut item
            && let ServerResult::CallToolResult(result) = &mut response.result
            && let Some(wire) = result
                .meta
                .as_mut()
                .and_then(|meta| meta.0.remove(super::tools::WIRE_MARKER))
        {
            // A result that must reach the client exactly as written (the `rich` tool).
            response.result = ServerResult::CustomResult(rmcp::model::CustomResult(wire));
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.inner.receive().await;
        match &message {
            None => self.eof.cancel(),
            Some(JsonRpcMessage::Request(request))
                if matches!(request.request, ClientRequest::CallToolRequest(_)) =>
            {
                if let Some(ids) = &self.call_ids
                    && let Ok(id_json) = serde_json::to_string(&request.id)
                {
                    ids.insert(id_json);
                }
            }
            Some(_) => {}
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
