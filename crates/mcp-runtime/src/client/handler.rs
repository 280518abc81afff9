//! Our side of the conversation: what we tell a server about ourselves, and how we answer its
//! requests (`ping`, `roots/list`, `elicitation/create`, `sampling/createMessage`, also when
//! they come embedded in an `input_required` result: see `mrtr`) and notifications (logging,
//! progress, list changes, updates of subscribed resources). A question about a call that
//! carries its own asker goes there (see `ask`); these handlers answer the rest.

// rmcp marks roots and logging deprecated because protocol 2026-07-28 drops them; we speak
// 2025-11-25 and older, where both are current.
#![allow(deprecated)]

use std::path::PathBuf;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, CreateMessageRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationCapability, FormElicitationCapability, Implementation, InputRequest,
    ListRootsRequest, ListRootsResult, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProtocolVersion, ResourceUpdatedNotificationParam, Root, RootsCapabilities, SamplingCapability,
    ServerNotification, ServerRequest,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleClient};
use tokio::sync::mpsc;

use super::ask::ask_one;
use super::elicitation::{ElicitationAction, ElicitationHandler, ElicitationRequest};
use super::progress::{ProgressRouter, ProgressUpdate};

/// Something a server told us outside a request/response pair.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// `notifications/tools/list_changed`: the tool list should be fetched again.
    ToolsChanged,
    /// `notifications/message`: a log line from the server.
    Log {
        /// `debug` … `emergency`.
        level: String,
        /// The logger name, if given.
        logger: Option<String>,
        /// The payload, usually a string.
        data: serde_json::Value,
    },
    /// `notifications/progress` for one of our requests.
    Progress {
        /// The token rmcp attached to the request.
        token: serde_json::Value,
        /// Progress so far.
        progress: f64,
        /// Total, when known.
        total: Option<f64>,
        /// Human-readable status.
        message: Option<String>,
    },
    /// `notifications/resources/updated`: a resource we subscribed to changed.
    ResourceUpdated {
        /// The resource's URI, as the server sent it.
        uri: String,
    },
}

/// The rmcp client handler of one connection. Cloned when a remote server is tried over a
/// second transport.
#[derive(Clone)]
pub(crate) struct Handler {
    pub server: String,
    pub roots: Vec<PathBuf>,
    pub events: Option<mpsc::Sender<ClientEvent>>,
    /// A [`ClientEvent::ToolsChanged`] is waiting for room in `events`: later ones merge with it.
    pub tools_changed_waiting: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The host's elicitation callback; the capability is declared only when set.
    pub elicitation: Option<ElicitationHandler>,
    /// Progress of calls whose caller asked for it (`CallOptions::progress`).
    pub progress: std::sync::Arc<ProgressRouter>,
    /// Sent as `clientInfo`.
    pub identity: crate::ClientIdentity,
    /// Tool results as the server sent them (the transports feed it).
    pub raw: super::raw::RawResults,
    /// Log lines received, counted by the transport as they arrive (see `tally`).
    pub log_tally: super::tally::LogTally,
    /// Calls that answer the server's questions themselves (see `ask`).
    pub asking: super::ask::AskingCalls,
    /// Calls carry their own askers ([`ConnectOptions::relay_input`]): elicitation and sampling
    /// are declared in `initialize`, and a question no call can take is declined.
    ///
    /// [`ConnectOptions::relay_input`]: super::ConnectOptions::relay_input
    pub relay_input: bool,
    /// Tasks being waited for, to which their status notifications go (see `tasks`).
    pub tasks: std::sync::Arc<super::task_watch::TaskWatchers>,
}

impl Handler {
    /// Hand a log or progress event to the host without waiting: when the host falls behind a
    /// flooding server, the event is dropped (it is informational; the log line went to
    /// `tracing` too), so memory stays bounded. A receiver that went away means nobody listens.
    pub(crate) fn emit(&self, event: ClientEvent) {
        if let Some(events) = &self.events
            && let Err(mpsc::error::TrySendError::Full(event)) = events.try_send(event)
        {
            if matches!(event, ClientEvent::Log { .. }) {
                // Nobody is to wait for it (see `tally`).
                self.log_tally.dropped();
            }
            tracing::debug!(server = %self.server, "event queue full; a server notification was dropped");
        }
    }

    /// Hand a tool-list change to the host: never dropped, since it means the tools must be
    /// listed again. While one waits for room, later ones merge with it, so a flood costs one
    /// waiting task (rmcp runs each notification handler on a task of its own).
    pub(crate) async fn emit_tools_changed(&self) {
        use std::sync::atomic::Ordering;
        let Some(events) = &self.events else { return };
        if self.tools_changed_waiting.swap(true, Ordering::SeqCst) {
            return;
        }
        let permit = events.reserve().await;
        // Cleared before sending: a change after this point is reported by a new event.
        self.tools_changed_waiting.store(false, Ordering::SeqCst);
        if let Ok(permit) = permit {
            permit.send(ClientEvent::ToolsChanged);
        }
    }
}

impl Handler {
    /// Our answer to `roots/list`, as a server request or embedded in an `input_required`
    /// result.
    pub(crate) fn roots(&self) -> ListRootsResult {
        let roots = self
            .roots
            .iter()
            .map(|path| {
                let mut root = Root::new(file_uri(path));
                root.name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                root
            })
            .collect();
        ListRootsResult::new(roots)
    }

    /// Our answer to `elicitation/create` (the host's callback), as a server request or
    /// embedded in an `input_required` result.
    pub(crate) async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        let decline = || ElicitResult::new(rmcp::model::ElicitationAction::Decline);
        let (
            Some(handler),
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            },
        ) = (&self.elicitation, request)
        else {
            // Not declared (no callback) or URL mode, which we do not declare either.
            return decline();
        };
        let Ok(requested_schema) = serde_json::to_value(&requested_schema) else {
            return decline();
        };
        let response = handler(ElicitationRequest {
            server: self.server.clone(),
            message,
            requested_schema,
        })
        .await;
        let action = match response.action {
            ElicitationAction::Accept => rmcp::model::ElicitationAction::Accept,
            ElicitationAction::Decline => rmcp::model::ElicitationAction::Decline,
            ElicitationAction::Cancel => rmcp::model::ElicitationAction::Cancel,
        };
        let accepted = action == rmcp::model::ElicitationAction::Accept;
        let mut result = ElicitResult::new(action);
        if accepted {
            result = result.with_content(serde_json::Value::Object(
                response.content.unwrap_or_default(),
            ));
        }
        result
    }
}

impl Handler {
    /// The asker of the call a server request is about (see `ask`), if it declared what
    /// `request` needs. `origin` is the stream rmcp saw the request on (streamable HTTP);
    /// `None` elsewhere.
    async fn asker_for(
        &self,
        request: &InputRequest,
        origin: Option<&InboundStreamOrigin>,
    ) -> Option<super::ask::CallInput> {
        let super::ask::Route::Call(input) = self.asking.route(origin).await else {
            return None;
        };
        if input.can(request) {
            return Some(input);
        }
        tracing::info!(
            server = %self.server,
            "the calling client did not declare what the server asks; answered here instead"
        );
        None
    }

    /// Our answer to the server's `roots/list`.
    async fn answer_roots(
        &self,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<ListRootsResult, ErrorData> {
        let request = InputRequest::ListRoots(ListRootsRequest::default());
        match self.asker_for(&request, origin).await {
            Some(input) => ask_one(&input, "roots", request)
                .await
                .map_err(|e| ErrorData::internal_error(e, None)),
            None => Ok(self.roots()),
        }
    }

    /// Our answer to the server's `elicitation/create`.
    async fn answer_elicitation(
        &self,
        request: ElicitRequestParams,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = InputRequest::Elicitation(ElicitRequest::new(request));
        match (self.asker_for(&request, origin).await, request) {
            (Some(input), request) => ask_one(&input, "elicitation", request)
                .await
                .map_err(|e| ErrorData::internal_error(e, None)),
            (None, InputRequest::Elicitation(request)) => Ok(self.elicit(request.params).await),
            (None, _) => Ok(ElicitResult::new(rmcp::model::ElicitationAction::Decline)),
        }
    }

    /// Our answer to the server's `sampling/createMessage`: only a call whose own client
    /// declared sampling can take it.
    async fn answer_sampling(
        &self,
        params: CreateMessageRequestParams,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
        match self.asker_for(&request, origin).await {
            Some(input) => ask_one(&input, "sampling", request)
                .await
                .map_err(|e| ErrorData::internal_error(e, None)),
            None => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "sampling is not offered: the client that made this call did not declare it",
                None,
            )),
        }
    }

    /// Answer one request of a server whose connection has no rmcp service (stdio, see
    /// `own`): the same answers rmcp's service gives through [`ClientHandler`].
    pub(crate) async fn answer(&self, request: ServerRequest) -> Result<ClientResult, ErrorData> {
        match request {
            ServerRequest::PingRequest(_) => Ok(ClientResult::empty(())),
            ServerRequest::ListRootsRequest(_) => self
                .answer_roots(None)
                .await
                .map(ClientResult::ListRootsResult),
            ServerRequest::ElicitRequest(request) => self
                .answer_elicitation(request.params, None)
                .await
                .map(ClientResult::ElicitResult),
            ServerRequest::CreateMessageRequest(request) => self
                .answer_sampling(request.params, None)
                .await
                .map(Box::new)
                .map(ClientResult::CreateMessageResult),
            ServerRequest::CustomRequest(request) => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            )),
            // A request of a later revision: not one we know.
            _ => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "method not found",
                None,
            )),
        }
    }

    /// Take one notification of a server whose connection has no rmcp service (stdio, see
    /// `own`), without waiting: what rmcp's service hands to [`ClientHandler`]'s callbacks.
    pub(crate) fn notified(&self, notification: ServerNotification) {
        match notification {
            ServerNotification::ProgressNotification(notification) => {
                self.progressed(notification.params);
            }
            ServerNotification::LoggingMessageNotification(notification) => {
                self.logged(notification.params);
            }
            ServerNotification::ResourceUpdatedNotification(notification) => {
                self.emit(ClientEvent::ResourceUpdated {
                    uri: notification.params.uri,
                });
            }
            ServerNotification::ToolListChangedNotification(_) => self.tools_changed_now(),
            ServerNotification::TaskStatusNotification(notification) => {
                self.tasks
                    .notified(serde_json::to_value(&notification.params).ok().as_ref());
            }
            ServerNotification::CustomNotification(notification)
                if notification.method == CORE_TASK_STATUS =>
            {
                self.tasks.notified(notification.params.as_ref());
            }
            // Nothing to do: the host lists resources and prompts when it asks for them, and
            // a cancellation was dealt with by the reader.
            _ => {}
        }
    }

    /// [`emit_tools_changed`](Self::emit_tools_changed) from a reader that must not wait:
    /// handed over at once when there is room, else by a task of its own that waits for it.
    pub(crate) fn tools_changed_now(&self) {
        use std::sync::atomic::Ordering;
        let Some(events) = &self.events else { return };
        if self.tools_changed_waiting.load(Ordering::SeqCst) {
            // One is already waiting for room: this change merges with it.
            return;
        }
        match events.try_reserve() {
            Ok(permit) => permit.send(ClientEvent::ToolsChanged),
            Err(mpsc::error::TrySendError::Full(())) => {
                let handler = self.clone();
                tokio::spawn(async move { handler.emit_tools_changed().await });
            }
            Err(mpsc::error::TrySendError::Closed(())) => {}
        }
    }

    /// A log line from the server: to `tracing` and to the host.
    fn logged(&self, params: LoggingMessageNotificationParam) {
        // The level's wire spelling (`debug` … `emergency`).
        let level = match serde_json::to_value(params.level) {
            Ok(serde_json::Value::String(level)) => level,
            _ => "info".to_owned(),
        };
        tracing::info!(server = %self.server, level = %level, logger = ?params.logger, "server log: {}", params.data);
        self.emit(ClientEvent::Log {
            level,
            logger: params.logger,
            data: params.data,
        });
    }

    /// Progress of one of our requests: to its caller, if it asked, and to the host.
    fn progressed(&self, params: ProgressNotificationParam) {
        self.progress.deliver(
            params.progress_token.clone(),
            ProgressUpdate {
                progress: params.progress,
                total: params.total,
                message: params.message.clone(),
            },
        );
        self.emit(ClientEvent::Progress {
            token: serde_json::to_value(&params.progress_token).unwrap_or_default(),
            progress: params.progress,
            total: params.total,
            message: params.message,
        });
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(RootsCapabilities::default());
        if self.relay_input {
            // What the caller's own client declared decides per call; undeclared questions
            // are declined (elicitation) or refused (sampling) then.
            capabilities.elicitation = Some(ElicitationCapability::new());
            capabilities.sampling = Some(SamplingCapability::default());
        } else if self.elicitation.is_some() {
            // Form mode only: URL mode needs a browser, which a host may not have.
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        // Revision 2026-07-28: this client follows tasks (see `tasks`), so a server may
        // answer any tool call with one; a call then waits for its result as before.
        capabilities.extensions = Some(std::collections::BTreeMap::from([(
            super::model::task::TASKS_EXTENSION.to_owned(),
            Default::default(),
        )]));
        ClientConfig::new(
            capabilities,
            Implementation::new(self.identity.name.clone(), self.identity.version.clone()),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.answer_roots(context.extensions.get::<InboundStreamOrigin>())
            .await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.answer_elicitation(request, context.extensions.get::<InboundStreamOrigin>())
            .await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.answer_sampling(params, context.extensions.get::<InboundStreamOrigin>())
            .await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.emit_tools_changed().await;
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logged(params);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.emit(ClientEvent::ResourceUpdated { uri: params.uri });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progressed(params);
    }

    async fn on_task_status(
        &self,
        params: rmcp::model::TaskStatusNotificationParams,
        _context: NotificationContext<RoleClient>,
    ) {
        self.tasks
            .notified(serde_json::to_value(&params).ok().as_ref());
    }

    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == CORE_TASK_STATUS {
            self.tasks.notified(notification.params.as_ref());
        }
    }
}

/// The task status notification of revision 2025-11-25 (2026-07-28's is rmcp's own).
const CORE_TASK_STATUS: &str = "notifications/tasks/status";

/// `file://` URI of a path, percent-encoding everything but unreserved characters and `/`.
pub(crate) fn file_uri(path: &std::path::Path) -> String {
    use std::fmt::Write;
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(byte as char);
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(
            file_uri(std::path::Path::new("/a b/c#d")),
            "file:///a%20b/c%23d"
        );
    }
}
