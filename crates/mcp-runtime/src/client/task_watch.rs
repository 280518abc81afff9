//! The tasks being waited for on one connection: where each task's status notifications go,
//! so that a notification ends its wait early. The connection's handler feeds it; the waits
//! of `tasks` read it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

use super::model::task::TaskState;

/// The tasks being waited for on one connection, and the channel each one's status
/// notifications go to.
#[derive(Debug, Default)]
pub(crate) struct TaskWatchers {
    routes: Mutex<HashMap<String, mpsc::Sender<TaskState>>>,
}

/// A wait's registration; dropping it stops the routing.
pub(super) struct TaskWatch {
    watchers: Arc<TaskWatchers>,
    id: String,
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        self.watchers.lock().remove(&self.id);
    }
}

impl TaskWatchers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<TaskState>>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn watch(self: &Arc<Self>, id: &str) -> (TaskWatch, mpsc::Receiver<TaskState>) {
        // Small: a notification only ends a wait early, and a later one supersedes it.
        let (sender, receiver) = mpsc::channel(4);
        self.lock().insert(id.to_owned(), sender);
        let watch = TaskWatch {
            watchers: self.clone(),
            id: id.to_owned(),
        };
        (watch, receiver)
    }

    /// A task status notification (either revision's) arrived: hand it to its waiter, if
    /// any. Malformed ones are dropped; the next poll tells the truth.
    pub(crate) fn notified(&self, params: Option<&Value>) {
        let Some(Value::Object(params)) = params else {
            return;
        };
        let Ok(state) = TaskState::from_wire(params) else {
            tracing::debug!("a malformed task status notification was dropped");
            return;
        };
        if let Some(sender) = self.lock().get(&state.id) {
            let _ = sender.try_send(state);
        }
    }
}
