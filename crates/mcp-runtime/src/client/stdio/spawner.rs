//! Server processes are started on a few threads of their own, never on the async runtime's
//! worker threads.
//!
//! Why: starting a process blocks the calling thread until the child has called `exec` (and the
//! watchdog's `fork` until the kernel has copied the page tables; a request to the watchdog
//! until the watchdog reads it). With a couple of dozen servers booting on a two-core machine
//! the child may wait tens of milliseconds to be scheduled, and on a worker thread that wait
//! stalls every other task, the start-up gate's timer among them: the gate then opens late,
//! however early it was due.
//!
//! The threads live as long as the process. That matters where the host starts a server itself
//! (see `spawn`): it is started with a parent-death signal, which the kernel sends when the
//! *thread* that started it exits, and a thread of tokio's blocking pool idles out after ten
//! seconds and would take its servers with it.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

/// Spawns that may run at once. Each one mostly waits for a child to reach `exec`, so a few
/// threads keep the starts of many servers overlapping without costing memory.
const SPAWN_THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// The queue the spawn threads take jobs from; `None` if no thread could be started. The
/// threads never exit (a job's panic is caught and handed to its caller), so a job sent here
/// is always run.
fn queue() -> Option<&'static Sender<Job>> {
    static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (sender, receiver) = channel::<Job>();
            let receiver = Arc::new(Mutex::new(receiver));
            let started = (0..SPAWN_THREADS)
                .filter(|n| {
                    let receiver = receiver.clone();
                    std::thread::Builder::new()
                        .name(format!("mcp-spawn-{n}"))
                        .stack_size(256 * 1024)
                        .spawn(move || serve(&receiver))
                        .is_ok()
                })
                .count();
            (started > 0).then_some(sender)
        })
        .as_ref()
}

fn serve(receiver: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while waiting for the next job, never while running one.
        let job = match receiver.lock() {
            Ok(receiver) => receiver.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Run `start` (a process spawn) on a spawn thread, inside the caller's tokio runtime (the
/// child is registered with that runtime's process driver), and wait for its result without
/// blocking the runtime. A panic in `start` is raised again in the caller.
///
/// If the caller stops waiting, `start`'s result is dropped on the spawn thread, so it must
/// clean up after itself on drop (a `kill_on_drop` child does). Where no spawn thread could be
/// started, `start` runs on the calling thread.
pub(crate) async fn spawn_off_runtime<T, F>(start: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let Some(queue) = queue() else {
        return start();
    };
    let runtime = tokio::runtime::Handle::current();
    let (done, result) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _runtime = runtime.enter();
        let _ = done.send(catch_unwind(AssertUnwindSafe(start)));
    });
    // Sending cannot fail: the spawn threads hold the receiver and never exit.
    let _ = queue.send(job);
    match result.await {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => resume_unwind(panic),
        Err(_) => panic!("a process spawn was dropped before it ran"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_spawn_runs_on_a_spawn_thread_inside_the_callers_runtime() {
        let caller = std::thread::current().id();
        let (thread, name, in_runtime) = spawn_off_runtime(|| {
            let thread = std::thread::current();
            let in_runtime = tokio::runtime::Handle::try_current().is_ok();
            (thread.id(), thread.name().map(str::to_owned), in_runtime)
        })
        .await;
        assert_ne!(thread, caller);
        assert!(name.is_some_and(|name| name.starts_with("mcp-spawn-")));
        assert!(in_runtime, "a child needs the runtime's process driver");
    }

    #[tokio::test]
    async fn a_panic_reaches_the_caller_and_the_threads_stay() {
        let panicked = tokio::spawn(spawn_off_runtime(|| -> u8 { panic!("no such program") }))
            .await
            .unwrap_err();
        assert!(panicked.is_panic());
        // All of them still serve.
        for n in 0..2 * SPAWN_THREADS {
            assert_eq!(spawn_off_runtime(move || n).await, n);
        }
    }
}
