//! Where a path's CPU goes while calls are in flight: the client (this process), the process
//! in the middle and the server, from the kernel's per-thread run times (Linux `/proc`). On
//! two cores the three share the machine, so throughput follows their sum; this shows which
//! of them a path's figure is made of.

#[cfg(target_os = "linux")]
use std::collections::HashMap;
use std::time::Duration;

/// CPU time spent so far by each side of one path.
#[derive(Clone, Copy, Default)]
pub(super) struct Spent {
    pub client: Duration,
    pub middle: Duration,
    pub server: Duration,
}

impl Spent {
    /// What was spent between `earlier` and `self`.
    pub fn since(self, earlier: Spent) -> Spent {
        Spent {
            client: self.client.saturating_sub(earlier.client),
            middle: self.middle.saturating_sub(earlier.middle),
            server: self.server.saturating_sub(earlier.server),
        }
    }

    pub fn add(&mut self, other: Spent) {
        self.client += other.client;
        self.middle += other.middle;
        self.server += other.server;
    }
}

/// The CPU time spent so far by this process (the client) and by the path whose first
/// process is `pid` and everything it started: a `mcpr mock` among them is the server, the
/// rest is the middle (nothing, on the direct path). `None` where `/proc` cannot tell.
#[cfg(target_os = "linux")]
pub(super) fn spent(pid: u32) -> Option<Spent> {
    use procfs::process::Process;

    let client = run_time(&Process::myself().ok()?)?;
    let children = children_by_parent();
    let mut spent = Spent {
        client,
        ..Spent::default()
    };
    let mut todo = vec![i32::try_from(pid).ok()?];
    while let Some(pid) = todo.pop() {
        if let Ok(process) = Process::new(pid) {
            let time = run_time(&process).unwrap_or_default();
            if is_mock(&process) {
                spent.server += time;
            } else {
                spent.middle += time;
            }
        }
        todo.extend(children.get(&pid).into_iter().flatten());
    }
    Some(spent)
}

/// No `/proc`: no figures.
#[cfg(not(target_os = "linux"))]
pub(super) fn spent(_pid: u32) -> Option<Spent> {
    None
}

/// The time every thread of `process` has run (`schedstat`: nanoseconds, unlike the clock
/// ticks of `stat`, too coarse for runs of a fraction of a second).
#[cfg(target_os = "linux")]
fn run_time(process: &procfs::process::Process) -> Option<Duration> {
    let nanos = process
        .tasks()
        .ok()?
        .flatten()
        .filter_map(|task| task.schedstat().ok())
        .map(|stat| stat.sum_exec_runtime)
        .sum();
    Some(Duration::from_nanos(nanos))
}

/// Every process's children, from each one's parent.
#[cfg(target_os = "linux")]
fn children_by_parent() -> HashMap<i32, Vec<i32>> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    let processes = procfs::process::all_processes().into_iter().flatten();
    for stat in processes.flatten().filter_map(|p| p.stat().ok()) {
        children.entry(stat.ppid).or_default().push(stat.pid);
    }
    children
}

/// Whether `process` runs `… mock` (the benchmark's server).
#[cfg(target_os = "linux")]
fn is_mock(process: &procfs::process::Process) -> bool {
    process
        .cmdline()
        .is_ok_and(|args| args.get(1).is_some_and(|arg| arg == "mock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_has_run() {
        let spent = spent(std::process::id()).expect("this process's run time");
        // This process is both the client and (as the path's first process) the middle.
        assert!(spent.client > Duration::ZERO);
        assert!(spent.middle >= spent.client);
        assert_eq!(spent.server, Duration::ZERO);
    }
}
