//! The channels of ended calls, kept for the next calls.
//!
//! Every relayed call has a channel for its backend's questions, and one for its progress
//! when the client asked for progress. Making a tokio channel allocates twice, once with a
//! cache-line alignment, and dropping it frees both: together about a tenth of the gateway's
//! work for a call. A call's channel is therefore taken from a pool and put back when the
//! call's flight drops, provided nothing else can still send on it.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

/// Most channels a pool keeps: enough for the calls of a busy client in flight at once. A
/// kept channel holds its state and its first block of 32 slots: about 2 KiB for progress
/// (48-byte updates), under 1 KiB for questions (boxed), so at most ~130 and ~50 KiB.
const KEPT: usize = 64;

/// Idle channels of one kind, all made with the same capacity.
pub(crate) struct Pool<T> {
    capacity: usize,
    idle: Mutex<Vec<(mpsc::Sender<T>, mpsc::Receiver<T>)>>,
}

impl<T> Pool<T> {
    /// A pool of channels that hold `capacity` messages.
    pub(crate) fn new(capacity: usize) -> Arc<Pool<T>> {
        Arc::new(Pool {
            capacity,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// A channel for one call: an idle one, else a new one.
    pub(crate) fn take(self: &Arc<Self>) -> Pooled<T> {
        let pair = self
            .lock()
            .pop()
            .unwrap_or_else(|| mpsc::channel(self.capacity));
        Pooled {
            pair: Some(pair),
            pool: Arc::clone(self),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(mpsc::Sender<T>, mpsc::Receiver<T>)>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One call's channel. Its own sender stays with it, so its receiver never sees the channel
/// close: a call waits on its channels only beside the call itself, which ends the wait.
pub(crate) struct Pooled<T> {
    pair: Option<(mpsc::Sender<T>, mpsc::Receiver<T>)>,
    pool: Arc<Pool<T>>,
}

impl<T> Pooled<T> {
    /// A sender for the call (a clone: no allocation).
    pub(crate) fn sender(&self) -> mpsc::Sender<T> {
        match &self.pair {
            Some((sender, _)) => sender.clone(),
            None => unreachable!("a pooled channel is taken apart only as it drops"),
        }
    }

    /// The call's receiver.
    pub(crate) fn receiver(&mut self) -> &mut mpsc::Receiver<T> {
        match &mut self.pair {
            Some((_, receiver)) => receiver,
            None => unreachable!("a pooled channel is taken apart only as it drops"),
        }
    }
}

impl<T> Drop for Pooled<T> {
    fn drop(&mut self) {
        let Some((sender, mut receiver)) = self.pair.take() else {
            return;
        };
        // A sender still out (a call still ending on a task of its own) could send into the
        // next call's channel: such a channel is dropped, not kept. Nobody holds a weak
        // sender, so with ours the only one left, nothing can send any more.
        if sender.strong_count() != 1 {
            return;
        }
        // What was sent and never read belongs to the call that ended.
        while receiver.try_recv().is_ok() {}
        let mut idle = self.pool.lock();
        if idle.len() < KEPT {
            idle.push((sender, receiver));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_channel_comes_back_empty_once_its_call_let_go_of_it() {
        let pool = Pool::<u32>::new(4);
        let mut first = pool.take();
        let sender = first.sender();
        sender.send(1).await.unwrap();
        drop(sender);
        assert_eq!(first.receiver().recv().await, Some(1));
        first.sender().send(2).await.unwrap(); // left unread
        drop(first);
        assert_eq!(pool.lock().len(), 1, "kept for the next call");

        let mut second = pool.take();
        assert!(pool.lock().is_empty(), "the kept channel was reused");
        assert!(
            second.receiver().try_recv().is_err(),
            "the ended call's message is gone"
        );
    }

    #[tokio::test]
    async fn a_channel_a_sender_still_holds_is_not_kept() {
        let pool = Pool::<u32>::new(4);
        let call = pool.take();
        let still_out = call.sender();
        drop(call);
        assert!(pool.lock().is_empty());
        // The sender that is still out cannot reach a later call.
        let mut later = pool.take();
        let _ = still_out.try_send(7);
        assert!(later.receiver().try_recv().is_err());
    }

    #[test]
    fn a_pool_keeps_a_bounded_number() {
        let pool = Pool::<u32>::new(1);
        let calls: Vec<_> = (0..KEPT + 10).map(|_| pool.take()).collect();
        drop(calls);
        assert_eq!(pool.lock().len(), KEPT);
    }
}
