//! Per-call progress: `notifications/progress` from a server, routed to the caller of the
//! request it belongs to.
//!
//! rmcp gives every request a progress token of its own, but only tells us which one once the
//! request is already on its way, and it handles each notification on a task of its own. A
//! fast server can therefore report progress before the caller has registered for the token.
//! The router keeps such early notifications (a few, briefly) and hands them over when the
//! caller registers, so none is lost and no lock is held while sending.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::ProgressToken;
use tokio::sync::mpsc;

/// Early notifications kept for tokens nobody has registered yet. Servers may report progress
/// for requests nobody watches (e.g. `tools/list`), so this is bounded: the oldest go first.
const EARLY_LIMIT: usize = 64;

/// How long a call waits after its result for progress notifications that rmcp is still
/// handing over (it does so on tasks of their own, which may run after the result arrives).
/// Only calls that asked for progress and already received some wait: those servers typically
/// report the last step just before the result.
pub(crate) const LATE_GRACE: std::time::Duration = std::time::Duration::from_millis(2);

/// One `notifications/progress` of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far (increases with every notification).
    pub progress: f64,
    /// Total, when the server knows it.
    pub total: Option<f64>,
    /// Human-readable status, if any.
    pub message: Option<String>,
}

/// Routes progress notifications of one connection to the callers that asked for them.
#[derive(Debug, Default)]
pub(crate) struct ProgressRouter {
    state: Mutex<RouterState>,
}

#[derive(Debug, Default)]
struct RouterState {
    /// The receiver of each token, and whether it got anything yet. The tokens are ours (a
    /// server only looks them up), so a fast hasher will do.
    routes:
        HashMap<ProgressToken, (mpsc::Sender<ProgressUpdate>, bool), foldhash::fast::RandomState>,
    early: VecDeque<(ProgressToken, ProgressUpdate)>,
}

impl ProgressRouter {
    fn lock(&self) -> MutexGuard<'_, RouterState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A notification arrived for `token` (`1` and `"1"` are different tokens).
    pub(crate) fn deliver(&self, token: ProgressToken, update: ProgressUpdate) {
        let mut state = self.lock();
        match state.routes.get_mut(&token) {
            // Never waits, so the lock is never held across a wait; a full channel means the
            // caller lags behind a flood, and the update is dropped.
            Some((sender, seen)) => {
                *seen = true;
                let _ = sender.try_send(update);
            }
            None => {
                if state.early.len() >= EARLY_LIMIT {
                    state.early.pop_front();
                }
                state.early.push_back((token, update));
            }
        }
    }

    /// Send progress for `token` to `sender` until the returned route is dropped, starting
    /// with what already arrived.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        sender: mpsc::Sender<ProgressUpdate>,
    ) -> ProgressRoute {
        let mut state = self.lock();
        let mut seen = false;
        if !state.early.is_empty() {
            for (early_token, update) in std::mem::take(&mut state.early) {
                if early_token == token {
                    seen = true;
                    let _ = sender.try_send(update);
                } else {
                    state.early.push_back((early_token, update));
                }
            }
        }
        state.routes.insert(token.clone(), (sender, seen));
        ProgressRoute {
            router: self.clone(),
            token,
        }
    }
}

/// A registration with the router; dropping it stops the routing.
pub(crate) struct ProgressRoute {
    router: Arc<ProgressRouter>,
    token: ProgressToken,
}

impl ProgressRoute {
    /// Whether any progress arrived for this route.
    pub(crate) fn seen_any(&self) -> bool {
        self.router
            .lock()
            .routes
            .get(&self.token)
            .is_some_and(|(_, seen)| *seen)
    }
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        let removed = self.router.lock().routes.remove(&self.token);
        // Dropped after the lock is released: a receiver's task may wake up on it.
        drop(removed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn update(progress: f64) -> ProgressUpdate {
        ProgressUpdate {
            progress,
            total: None,
            message: None,
        }
    }

    #[test]
    fn early_notifications_are_delivered_on_registration() {
        let router = Arc::new(ProgressRouter::default());
        router.deliver(token(1), update(1.0));
        router.deliver(token(2), update(5.0));
        let (tx, mut rx) = mpsc::channel(8);
        let route = router.register(token(1), tx);
        router.deliver(token(1), update(2.0));
        assert_eq!(rx.try_recv().map(|u| u.progress), Ok(1.0));
        assert_eq!(rx.try_recv().map(|u| u.progress), Ok(2.0));
        assert!(rx.try_recv().is_err());
        drop(route);
        // After the route is gone, notifications for the token are kept as early ones again,
        // and the other token's early notification is still there.
        router.deliver(token(1), update(3.0));
        assert!(rx.try_recv().is_err());
        assert_eq!(router.lock().early.len(), 2);
    }

    #[test]
    fn a_caller_that_lags_loses_updates_instead_of_growing_memory() {
        let router = Arc::new(ProgressRouter::default());
        let (tx, mut rx) = mpsc::channel(2);
        let _route = router.register(token(1), tx);
        for i in 0..100 {
            router.deliver(token(1), update(i as f64));
        }
        assert_eq!(rx.try_recv().map(|u| u.progress), Ok(0.0));
        assert_eq!(rx.try_recv().map(|u| u.progress), Ok(1.0));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn early_notifications_are_bounded() {
        let router = ProgressRouter::default();
        for i in 0..(EARLY_LIMIT * 2) {
            router.deliver(token(i as i64), update(i as f64));
        }
        assert_eq!(router.lock().early.len(), EARLY_LIMIT);
    }
}
