//! One session of the `initialize` era: what the client declared, its log level, and the
//! requests the server sent it that still wait for an answer.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::Failure;
use super::tasks::{Announcer, TaskStore, announce_on};

/// How long the server waits for the client to answer one of its requests.
const ANSWER_WAIT: Duration = Duration::from_secs(60);

/// The rank of a log level, or `None` for an unknown one.
pub(super) fn level_rank(level: &str) -> Option<usize> {
    crate::tools::LOG_LEVELS.iter().position(|l| *l == level)
}

/// A session of the `initialize` era.
pub(super) struct Session {
    /// `Mcp-Session-Id` (unused over stdio).
    pub id: String,
    /// The capabilities the client declared in `initialize`.
    capabilities: Mutex<Value>,
    /// The level set with `logging/setLevel`, as a rank (0 = everything).
    log_level: Mutex<usize>,
    /// Server-to-client requests waiting for an answer, by id.
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    next_id: AtomicU64,
    subscriptions: Mutex<HashSet<String>>,
    /// The standalone GET stream, while one is open.
    standalone: Mutex<Option<mpsc::UnboundedSender<Value>>>,
    /// The event streams of its requests over HTTP, for resumption.
    pub streams: super::resume::Streams,
    /// Its tasks.
    pub tasks: TaskStore,
}

impl Session {
    /// A new session with id `id`.
    pub(super) fn new(id: String) -> Self {
        Session {
            id,
            capabilities: Mutex::new(json!({})),
            log_level: Mutex::new(0),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            subscriptions: Mutex::new(HashSet::new()),
            standalone: Mutex::new(None),
            streams: Default::default(),
            tasks: TaskStore::default(),
        }
    }

    /// Records what `initialize` declared.
    pub(super) fn set_capabilities(&self, capabilities: Value) {
        *self.capabilities.lock().unwrap_or_else(|e| e.into_inner()) = capabilities;
    }

    /// Whether the client declared capability `name`.
    pub(super) fn has_capability(&self, name: &str) -> bool {
        self.capabilities
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .is_some_and(|v| !v.is_null())
    }

    /// `logging/setLevel`.
    pub(super) fn set_log_level(&self, rank: usize) {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = rank;
    }

    /// Whether a message at `level` passes the level the client set.
    pub(super) fn logs(&self, level: &str) -> bool {
        let floor = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        level_rank(level).is_some_and(|rank| rank >= floor)
    }

    /// `resources/subscribe` (`true`) or `resources/unsubscribe` (`false`).
    pub(super) fn subscribe(&self, uri: &str, on: bool) {
        let mut subscriptions = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        if on {
            subscriptions.insert(uri.to_owned());
        } else {
            subscriptions.remove(uri);
        }
    }

    /// Opens the standalone GET stream, replacing an older one.
    pub(super) fn open_standalone(&self) -> mpsc::UnboundedReceiver<Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.standalone.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        rx
    }

    /// Sends `request` (method and params) to the client on `out` and waits for its answer:
    /// the result, or the client's error as a failure.
    pub(super) async fn request(
        &self,
        out: &mpsc::UnboundedSender<Value>,
        method: &str,
        params: Value,
    ) -> Result<Value, Failure> {
        let id = format!("server-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), tx);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if out.send(message).is_err() {
            self.forget(&id);
            return Err(Failure::new(-32603, "the client's stream closed"));
        }
        let answer = tokio::time::timeout(ANSWER_WAIT, rx).await;
        self.forget(&id);
        match answer {
            Ok(Ok(answer)) => match (answer.get("result"), answer.get("error")) {
                (Some(result), _) => Ok(result.clone()),
                (None, Some(error)) => Err(Failure::from_error(
                    error,
                    "the client answered with an error",
                )),
                (None, None) => Err(Failure::new(-32603, "the client's answer had no result")),
            },
            Ok(Err(_)) => Err(Failure::new(-32603, "the session ended")),
            Err(_) => Err(Failure::new(
                -32603,
                format!("the client did not answer {method}"),
            )),
        }
    }

    fn forget(&self, id: &str) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// Hands a response from the client to the request waiting for it; false if none was.
    pub(super) fn deliver(&self, answer: Value) -> bool {
        let Some(id) = answer.get("id").and_then(Value::as_str) else {
            return false;
        };
        let waiting = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        match waiting {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Where the status changes of a task created by a request that came with `out` go: the
    /// standalone stream when one is open at the time, else `out` (stdout over stdio).
    pub(super) fn announcer(self: &Arc<Self>, out: mpsc::UnboundedSender<Value>) -> Announcer {
        let session = Arc::downgrade(self);
        let fallback = announce_on(out);
        Some(Arc::new(move |message: Value| {
            let standalone = session.upgrade().and_then(|s| {
                s.standalone
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone()
            });
            match (standalone, &fallback) {
                (Some(stream), _) => {
                    let _ = stream.send(message);
                }
                (None, Some(fallback)) => fallback(message),
                (None, None) => {}
            }
        }))
    }

    /// Ends the session: waiting requests fail, the standalone stream closes, tasks stop.
    pub(super) fn close(&self) {
        self.tasks.stop_all();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        *self.standalone.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
