//! Tool results relayed to a gateway client as the backend server sent them.
//!
//! The handler answers a tool call with a placeholder that carries the result in the wire
//! format (see `answer`); the client's transport ([`RelayTransport`], also inside every HTTP
//! session through [`RelaySessions`]) sends that JSON instead of the placeholder, and the
//! stream's fast path writes the answer's line straight from the output ([`answer_line`]).

use std::sync::Arc;

use futures::Stream;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, CustomResult, JsonRpcResponse, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::EventStore;
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionManager};
use serde_json::Value;

use crate::client::ToolOutput;
use crate::gateway::answer::{MARKER, says_complete};

/// The answer to request `id` that returned `output`, as a line: what a placeholder becomes
/// on its way out, written straight from the output (the stream's fast path, see `front`).
pub(crate) fn answer_line(
    id: &RequestId,
    output: &ToolOutput,
    modern_client: bool,
) -> serde_json::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut line, id)?;
    line.extend_from_slice(br#","result":"#);
    // An object that always has `content` and `isError`: it ends with its `}`.
    serde_json::to_writer(&mut line, output)?;
    if says_complete(output, modern_client) {
        line.pop();
        line.extend_from_slice(br#","resultType":"complete"}"#);
    }
    line.extend_from_slice(b"}\n");
    Ok(line)
}

/// An HTTP body chunk (a JSON body, or server-sent events) with every placeholder answer in
/// it replaced by the result it carries; a chunk without one is returned as is.
pub(crate) fn unwrap_chunk(chunk: bytes::Bytes) -> bytes::Bytes {
    let marker = MARKER.as_bytes();
    if !chunk.windows(marker.len()).any(|w| w == marker) {
        return chunk;
    }
    let Ok(text) = std::str::from_utf8(&chunk) else {
        return chunk;
    };
    let unwrap_json = |json: &str| -> Option<String> {
        let mut message: Value = serde_json::from_str(json).ok()?;
        let wire = message
            .get_mut("result")?
            .get_mut("_meta")?
            .as_object_mut()?
            .remove(MARKER)?;
        message["result"] = wire;
        serde_json::to_string(&message).ok()
    };
    if text.trim_start().starts_with('{') {
        return unwrap_json(text).map_or(chunk, bytes::Bytes::from);
    }
    let events: Vec<String> = text
        .split('\n')
        .map(|line| match line.strip_prefix("data:") {
            Some(json) => match unwrap_json(json.trim()) {
                Some(unwrapped) => format!("data: {unwrapped}"),
                None => line.to_owned(),
            },
            None => line.to_owned(),
        })
        .collect();
    bytes::Bytes::from(events.join("\n"))
}

/// A placeholder's result in the wire format; any other message unchanged.
pub(crate) fn unwrap(message: ServerJsonRpcMessage) -> ServerJsonRpcMessage {
    match message {
        ServerJsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc,
            id,
            result: ServerResult::CallToolResult(mut result),
        }) => {
            let wire = result.meta.as_mut().and_then(|meta| meta.0.remove(MARKER));
            let result = match wire {
                Some(wire) => ServerResult::CustomResult(CustomResult(wire)),
                None => ServerResult::CallToolResult(result),
            };
            ServerJsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc,
                id,
                result,
            })
        }
        other => other,
    }
}

/// Tools in a `tools/list` answer from which on the memory it took is given back once sent.
const LARGE_LIST: usize = 100;

/// Whether `message` answers `tools/list` with at least [`LARGE_LIST`] tools. Such an answer
/// is built whole (every tool's schemas parsed, then the line written): megabytes with a few
/// dozen servers, freed once sent.
fn is_large_list(message: &ServerJsonRpcMessage) -> bool {
    matches!(
        message,
        ServerJsonRpcMessage::Response(JsonRpcResponse {
            result: ServerResult::ListToolsResult(list),
            ..
        }) if list.tools.len() >= LARGE_LIST
    )
}

/// Return freed memory to the system. glibc keeps what a large answer took in its arenas
/// after it is freed, so an idle gateway would hold the peak of its largest list for good;
/// trimming costs a walk of the free lists, once per large list.
pub(crate) fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of the allocator's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A gateway client's transport that sends placeholders as the results they carry.
pub(crate) struct RelayTransport<T>(pub(crate) T);

impl<T: Transport<RoleServer>> Transport<RoleServer> for RelayTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let large = is_large_list(&item);
        let sent = self.0.send(unwrap(item));
        async move {
            let sent = sent.await;
            if large {
                give_back_memory();
            }
            sent
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// HTTP sessions whose transports are [`RelayTransport`]s; otherwise `M` itself.
pub(crate) struct RelaySessions<M>(pub(crate) M);

impl<M: SessionManager> SessionManager for RelaySessions<M> {
    type Error = M::Error;
    type Transport = RelayTransport<M::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.0.create_session().await?;
        Ok((id, RelayTransport(transport)))
    }

    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<ServerJsonRpcMessage, Self::Error>> + Send {
        self.0.initialize_session(id, message)
    }

    fn has_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        self.0.has_session(id)
    }

    fn close_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close_session(id)
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.resume(id, last_event_id)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.0.restore_session(id).await? {
            RestoreOutcome::Restored(transport) => {
                RestoreOutcome::Restored(RelayTransport(transport))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.0.event_store()
    }
}
