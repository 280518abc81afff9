//! The tool cache's own thread: the queue that async callers hand their work to, run one job
//! at a time in the order queued (see `ToolCache::queue` for why a thread of its own).

use std::sync::mpsc;

/// One piece of work for the cache's thread.
pub(super) type Job = Box<dyn FnOnce() + Send>;

/// The cache's thread: runs jobs in order until the cache (the only sender) is dropped.
pub(super) fn start_lane() -> Option<mpsc::Sender<Job>> {
    let (sender, jobs) = mpsc::channel::<Job>();
    let started = std::thread::Builder::new()
        .name("mcp-tool-cache".into())
        .spawn(move || {
            for job in jobs {
                // A panicking job drops its answer's sender, which its receiver sees.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        });
    match started {
        Ok(_) => Some(sender),
        Err(e) => {
            tracing::warn!("tool cache: no thread of its own ({e}); its work runs inline");
            None
        }
    }
}
