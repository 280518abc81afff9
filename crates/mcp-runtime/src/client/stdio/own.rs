//! A stdio connection after its opening, without rmcp's service: one task per connection
//! reads the server's stdout, and everything it reads goes where rmcp's service would have
//! taken it.
//!
//! rmcp still opens the connection (`initialize`, or `server/discover` in 2026-07-28, with
//! the bounded probe and the cached discovery of `probe`): the transport is handed to it inside
//! a [`Handoff`], which stops reading as soon as the opening's answer has gone through, and
//! gives the transport back when rmcp's service ends. The service is ended at once, so its
//! channels, its task and its per-message wake-ups cost an idle connection nothing; from then
//! on [`OwnPeer`]'s reader:
//!
//! - hands answers to the client's requests to the direct path ([`Direct`], which the
//!   transport consults first);
//! - answers the server's requests (`ping`, `roots/list`, `elicitation/create`,
//!   `sampling/createMessage`) through the connection's [`Handler`], each on a task of its
//!   own (the host may take its time), and drops an answer whose request the server
//!   cancelled;
//! - hands the server's notifications to the handler (progress, log lines, list changes,
//!   resource updates) in the order they arrive, so progress sent before an answer reaches
//!   its caller before the answer does;
//! - routes the notifications of a 2026-07-28 subscription (`subscriptions/listen`, see
//!   `listen`) by their subscription id: the acknowledgement to the listener, changes within
//!   the acknowledged filter to the host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorData, GetMeta as _, JsonRpcMessage, RequestId,
    ServerNotification, ServerPeerInfo, ServerRequest, SubscriptionFilter,
    SubscriptionsListenRequest, SubscriptionsListenRequestParams,
};
use rmcp::service::{RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::process::ChildStdout;
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};

use super::answer::Reply;
use super::direct::{Direct, EraMeta, cancel_line, to_line};
use super::pipe::PipeTransport;
use crate::client::handler::Handler;
use crate::client::probe::Probe;
use crate::client::tally::Tallied;

/// The transport a stdio connection is opened with.
pub(crate) type Opening = Tallied<Probe<PipeTransport<ChildStdout>>>;

/// The transport as rmcp holds it during the opening (see the module documentation).
pub(crate) struct Handoff<T> {
    inner: Option<T>,
    /// The opening's answer has gone through: nothing more is read for rmcp.
    parked: bool,
    back: Option<oneshot::Sender<T>>,
}

impl<T> Handoff<T> {
    /// Wrap `inner`; the receiver gets it back when rmcp drops the wrapper.
    pub(crate) fn new(inner: T) -> (Handoff<T>, oneshot::Receiver<T>) {
        let (back, handed_back) = oneshot::channel();
        let handoff = Handoff {
            inner: Some(inner),
            parked: false,
            back: Some(back),
        };
        (handoff, handed_back)
    }
}

impl<T> Transport<RoleClient> for Handoff<T>
where
    T: Transport<RoleClient, Error = std::io::Error> + Send,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        use futures::future::Either;
        match self.inner.as_mut() {
            Some(inner) => Either::Left(inner.send(item)),
            None => Either::Right(std::future::ready(Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the transport was handed back",
            )))),
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        // rmcp's opening reads until an answer (`result`) to its request comes: after that
        // it is either done or gives up, so whatever follows is the reader's.
        let inner = match (self.parked, self.inner.as_mut()) {
            (false, Some(inner)) => inner,
            _ => return std::future::pending().await,
        };
        let message = inner.receive().await;
        if matches!(message, Some(JsonRpcMessage::Response(_))) {
            self.parked = true;
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Not closed: the transport goes back to the connection when rmcp drops it.
        Ok(())
    }
}

impl<T> Drop for Handoff<T> {
    fn drop(&mut self) {
        if let (Some(inner), Some(back)) = (self.inner.take(), self.back.take()) {
            // Nobody waiting (the opening failed): dropped here, which closes it.
            let _ = back.send(inner);
        }
    }
}

/// End rmcp's service of a connection whose opening is complete, take the transport back,
/// and start reading it ourselves. `None` when the transport did not come back.
pub(crate) async fn take_over(
    service: RunningService<RoleClient, Handler>,
    handed_back: oneshot::Receiver<Opening>,
    handler: Handler,
    direct: Arc<Direct>,
) -> Option<Arc<OwnPeer>> {
    let info = service.peer().peer_info();
    // The service never read a message (its transport was parked): ending it loses nothing.
    let _ = service.cancel().await;
    let pipe = handed_back.await.ok()?.into_inner().into_inner();
    let era_meta = info
        .as_ref()
        .filter(|info| !info.protocol_version.has_initialize())
        .map(|info| {
            use rmcp::ClientHandler as _;
            let ours = handler.get_info();
            EraMeta::new(
                info.protocol_version.clone(),
                ours.client_info,
                ours.capabilities,
            )
        });
    let shared = Arc::new(Shared::default());
    let reader = Reader {
        modern: era_meta.is_some(),
        handler,
        direct: direct.clone(),
        shared: shared.clone(),
    };
    let task = tokio::spawn(reader.run(pipe));
    Some(Arc::new(OwnPeer {
        info,
        direct,
        shared,
        era_meta,
        reader: Mutex::new(Some(task)),
    }))
}

/// A stdio connection's server after the opening.
pub(crate) struct OwnPeer {
    info: Option<Arc<ServerPeerInfo>>,
    direct: Arc<Direct>,
    shared: Arc<Shared>,
    /// The `_meta` of every request on a connection without `initialize`.
    era_meta: Option<EraMeta>,
    /// The reader's task; taken by `close`.
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for OwnPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnPeer").finish_non_exhaustive()
    }
}

impl OwnPeer {
    /// What the server said about itself in the opening.
    pub(crate) fn peer_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.info.clone()
    }

    /// Whether the connection has ended (the server's stdout closed, or `close`).
    pub(crate) fn is_closed(&self) -> bool {
        self.direct.is_closed()
    }

    /// Stop reading and close the server's stdin (dropping the transport does both).
    pub(crate) async fn close(&self) {
        let task = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
    }

    /// Write a notification to the server.
    pub(crate) async fn notify(&self, message: &ClientJsonRpcMessage) -> std::io::Result<()> {
        self.direct.write_line(to_line(message)?).await
    }

    /// Open a 2026-07-28 subscription for `filter` and wait for the server's acknowledgement;
    /// from then on the reader hands what it brings to the host, until the returned
    /// subscription ends or is dropped (which cancels it).
    pub(crate) async fn listen(
        &self,
        filter: SubscriptionFilter,
    ) -> Result<OwnSubscription, String> {
        let Some((id, answer)) = self.direct.register_standing() else {
            return Err("the connection is closed".to_owned());
        };
        let key = wire_id(id);
        let (acked, acknowledgement) = oneshot::channel();
        let (ended, end) = oneshot::channel();
        self.shared.lock().subscriptions.insert(
            key.clone(),
            Subscribed {
                requested: filter.clone(),
                accepted: None,
                acked: Some(acked),
                _ended: ended,
            },
        );
        let mut subscription = OwnSubscription {
            direct: self.direct.clone(),
            shared: self.shared.clone(),
            id,
            key: key.clone(),
            answer,
            end,
        };
        let mut request = ClientRequest::SubscriptionsListenRequest(
            SubscriptionsListenRequest::new(SubscriptionsListenRequestParams::new(filter)),
        );
        if let Some(era) = &self.era_meta {
            era.add_to(request.get_meta_mut());
        }
        let line = to_line(&ClientJsonRpcMessage::request(request, key))
            .map_err(|e| format!("cannot write the request: {e}"))?;
        self.direct
            .write_line(line)
            .await
            .map_err(|e| format!("cannot write the request: {e}"))?;
        let acknowledged = tokio::select! {
            acknowledged = acknowledgement => acknowledged,
            answer = &mut subscription.answer => return Err(match answer {
                Ok(Err(refused)) => refused.to_string(),
                Ok(Ok(_)) => "answered before it was acknowledged".to_owned(),
                Err(_) => "the connection closed before the acknowledgement".to_owned(),
            }),
        };
        match acknowledged {
            Ok(Ok(())) => Ok(subscription),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the subscription ended before its acknowledgement".to_owned()),
        }
    }
}

impl Drop for OwnPeer {
    fn drop(&mut self) {
        if let Some(task) = self
            .reader
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

/// An open subscription of a stdio connection (see [`OwnPeer::listen`]).
pub(crate) struct OwnSubscription {
    direct: Arc<Direct>,
    shared: Arc<Shared>,
    id: u64,
    key: RequestId,
    /// The final answer to `subscriptions/listen`, which ends the subscription.
    answer: oneshot::Receiver<Reply>,
    /// Resolves when the reader drops the subscription (the server cancelled it, or sent
    /// something outside its filter).
    end: oneshot::Receiver<()>,
}

impl OwnSubscription {
    /// Resolves when the subscription is over.
    pub(crate) async fn ended(&mut self) {
        tokio::select! {
            _ = &mut self.answer => {}
            _ = &mut self.end => {}
        }
    }
}

impl Drop for OwnSubscription {
    fn drop(&mut self) {
        self.shared.lock().subscriptions.remove(&self.key);
        if !self.direct.forget(self.id) {
            return;
        }
        // Still open on the server's side: tell it, as rmcp does for a dropped subscription.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let line = cancel_line(&self.key, "subscription handle dropped");
            let direct = self.direct.clone();
            runtime.spawn(async move { direct.write_line(line).await });
        }
    }
}

/// What the reader and the connection share.
#[derive(Default)]
struct Shared {
    state: Mutex<SharedState>,
}

#[derive(Default)]
struct SharedState {
    /// The server's requests being answered, by id; the task is `None` until it is known.
    answering: HashMap<RequestId, Option<AbortHandle>>,
    /// Open subscriptions, by the id of their `subscriptions/listen`.
    subscriptions: HashMap<RequestId, Subscribed>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, SharedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One subscription as the reader sees it.
struct Subscribed {
    requested: SubscriptionFilter,
    /// The filter the server acknowledged; `None` until then.
    accepted: Option<SubscriptionFilter>,
    /// Told of the acknowledgement (or of what came instead).
    acked: Option<oneshot::Sender<Result<(), String>>>,
    /// Dropped with the subscription, which wakes its listener.
    _ended: oneshot::Sender<()>,
}

/// The reader of one connection (see the module documentation).
struct Reader {
    handler: Handler,
    direct: Arc<Direct>,
    shared: Arc<Shared>,
    /// 2026-07-28: the server's questions must come while one of our requests is in flight.
    modern: bool,
}

impl Reader {
    async fn run(self, mut pipe: PipeTransport<ChildStdout>) {
        // Ends when the server's stdout does (the transport then ends the direct path).
        while let Some(message) = pipe.receive().await {
            self.handler.log_tally.count(&message);
            match message {
                JsonRpcMessage::Request(request) => self.request(request.id, request.request),
                JsonRpcMessage::Notification(notification) => {
                    self.notification(notification.notification);
                }
                JsonRpcMessage::Response(response) => {
                    tracing::debug!(server = %self.handler.server, id = %response.id, "dropping an answer to a request nobody waits for");
                }
                JsonRpcMessage::Error(error) => {
                    tracing::debug!(server = %self.handler.server, error = %error.error.message, "dropping an error for a request nobody waits for");
                }
            }
        }
        // Listeners learn that their subscriptions are over.
        self.shared.lock().subscriptions.clear();
    }

    /// Answer one of the server's requests on a task of its own.
    fn request(&self, id: RequestId, request: ServerRequest) {
        let restricted = matches!(
            request,
            ServerRequest::CreateMessageRequest(_)
                | ServerRequest::ListRootsRequest(_)
                | ServerRequest::ElicitRequest(_)
        );
        if self.modern && restricted && self.direct.waiting() == 0 {
            // As rmcp's service refuses it: in 2026-07-28 the server asks only about a
            // request of ours in flight.
            let error = ErrorData::invalid_params(
                "server-to-client requests must be associated with an in-flight client request",
                None,
            );
            tracing::warn!(server = %self.handler.server, %id, "refused a server request outside any request of ours");
            let direct = self.direct.clone();
            tokio::spawn(async move {
                write(&direct, &ClientJsonRpcMessage::error(error, Some(id))).await;
            });
            return;
        }
        self.shared.lock().answering.insert(id.clone(), None);
        let (handler, direct, shared) = (
            self.handler.clone(),
            self.direct.clone(),
            self.shared.clone(),
        );
        let key = id.clone();
        let task = tokio::spawn(async move {
            let answer = handler.answer(request).await;
            if shared.lock().answering.remove(&id).is_none() {
                tracing::debug!(server = %handler.server, %id, "the server cancelled its request; its answer is dropped");
                return;
            }
            let message = match answer {
                Ok(result) => ClientJsonRpcMessage::response(result, id),
                Err(error) => ClientJsonRpcMessage::error(error, Some(id)),
            };
            write(&direct, &message).await;
        });
        if let Some(slot) = self.shared.lock().answering.get_mut(&key) {
            *slot = Some(task.abort_handle());
        }
    }

    fn notification(&self, notification: ServerNotification) {
        if let ServerNotification::CancelledNotification(cancelled) = &notification {
            let Some(id) = &cancelled.params.request_id else {
                return;
            };
            let mut shared = self.shared.lock();
            // A 2026-07-28 server ends a subscription by cancelling its request.
            if shared.subscriptions.remove(id).is_some() {
                return;
            }
            if let Some(task) = shared.answering.remove(id).flatten() {
                task.abort();
            }
            return;
        }
        if let Some(id) = notification.get_meta().subscription_id()
            && self.subscribed(&id, &notification)
        {
            return;
        }
        self.handler.notified(notification);
    }

    /// Take a notification of subscription `id`; `false` when there is no such subscription.
    fn subscribed(&self, id: &RequestId, notification: &ServerNotification) -> bool {
        let mut shared = self.shared.lock();
        let Some(subscription) = shared.subscriptions.get_mut(id) else {
            return false;
        };
        let Some(accepted) = &subscription.accepted else {
            let outcome = match notification {
                ServerNotification::SubscriptionsAcknowledgedNotification(ack)
                    if ack
                        .params
                        .notifications
                        .is_subset_of(&subscription.requested) =>
                {
                    Ok(ack.params.notifications.clone())
                }
                ServerNotification::SubscriptionsAcknowledgedNotification(_) => {
                    Err("the subscription acknowledged an unrequested filter")
                }
                _ => Err("a notification came before the subscription's acknowledgement"),
            };
            match outcome {
                Ok(filter) => {
                    subscription.accepted = Some(filter);
                    if let Some(acked) = subscription.acked.take() {
                        let _ = acked.send(Ok(()));
                    }
                }
                Err(reason) => {
                    if let Some(mut subscription) = shared.subscriptions.remove(id)
                        && let Some(acked) = subscription.acked.take()
                    {
                        let _ = acked.send(Err(reason.to_owned()));
                    }
                    self.cancel(id, reason);
                }
            }
            return true;
        };
        match notification {
            ServerNotification::ToolListChangedNotification(_)
                if accepted.tools_list_changed == Some(true) =>
            {
                self.handler.tools_changed_now();
            }
            ServerNotification::ResourceUpdatedNotification(update)
                if accepted
                    .resource_subscriptions
                    .as_ref()
                    .is_some_and(|uris| uris.contains(&update.params.uri)) =>
            {
                self.handler
                    .emit(crate::client::ClientEvent::ResourceUpdated {
                        uri: update.params.uri.clone(),
                    });
            }
            ServerNotification::PromptListChangedNotification(_)
                if accepted.prompts_list_changed == Some(true) => {}
            ServerNotification::ResourceListChangedNotification(_)
                if accepted.resources_list_changed == Some(true) => {}
            _ => {
                // As rmcp ends such a subscription: the server broke its own filter.
                tracing::debug!(server = %self.handler.server, "a subscription notification outside the acknowledged filter; the subscription is cancelled");
                shared.subscriptions.remove(id);
                self.cancel(
                    id,
                    "subscription notification was outside the acknowledged filter",
                );
            }
        }
        true
    }

    /// Tell the server that we gave up request `id` (a subscription), without waiting.
    fn cancel(&self, id: &RequestId, reason: &str) {
        if let RequestId::Number(number) = id
            && let Ok(number) = u64::try_from(*number)
        {
            self.direct.forget(number);
        }
        let line = cancel_line(id, reason);
        let direct = self.direct.clone();
        tokio::spawn(async move { direct.write_line(line).await });
    }
}

/// Write one message to the server; a failure only means the connection is going.
async fn write(direct: &Arc<Direct>, message: &ClientJsonRpcMessage) {
    let written = match to_line(message) {
        Ok(line) => direct.write_line(line).await,
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        tracing::debug!("cannot answer the server: {e}");
    }
}

/// A direct request's id as it goes on the wire (ids count up from 2^32, far below
/// `i64::MAX`).
fn wire_id(id: u64) -> RequestId {
    RequestId::Number(i64::try_from(id).unwrap_or(i64::MAX))
}
