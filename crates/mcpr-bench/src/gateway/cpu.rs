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
    pub(super) fn since(self, earlier: Spent) -> Spent {
        Spent {
            client: self.client.saturating_sub(earlier.client),
            middle: self.middle.saturating_sub(earlier.middle),
            server: self.server.saturating_sub(earlier.server),
        }
    }

    pub(super) fn add(&mut self, other: Spent) {
        self.client += other.client;
        self.middle += other.middle;
        self.server += other.server;
    }
}

/// The processes of one path: the server (`mcpr mock`) and whatever runs between it and the
/// client. Found once, after the path is up (a `/proc` scan), and read at each sample.
#[derive(Clone)]
pub(super) struct Tree {
    server: Vec<i32>,
    middle: Vec<i32>,
}

impl Tree {
    /// The process `pid` and everything it started. `None` where `/proc` cannot tell.
    #[cfg(target_os = "linux")]
    pub(super) fn of(pid: u32) -> Option<Tree> {
        let children = children_by_parent();
        let mut tree = Tree {
            server: Vec::new(),
            middle: Vec::new(),
        };
        let mut todo = vec![i32::try_from(pid).ok()?];
        while let Some(pid) = todo.pop() {
            let process = procfs::process::Process::new(pid).ok()?;
            if is_mock(&process) {
                tree.server.push(pid);
            } else {
                tree.middle.push(pid);
            }
            todo.extend(children.get(&pid).into_iter().flatten());
        }
        Some(tree)
    }

    /// No `/proc`: no figures.
    #[cfg(not(target_os = "linux"))]
    pub fn of(_pid: u32) -> Option<Tree> {
        None
    }

    /// The CPU time spent so far by this process (the client) and by the tree's.
    #[cfg(target_os = "linux")]
    pub(super) fn spent(&self) -> Option<Spent> {
        let of = |pids: &[i32]| -> Option<Duration> { pids.iter().map(|pid| run_time(*pid)).sum() };
        Some(Spent {
            client: run_time(i32::try_from(std::process::id()).ok()?)?,
            middle: of(&self.middle)?,
            server: of(&self.server)?,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn spent(&self) -> Option<Spent> {
        None
    }
}

/// The time every thread of `pid` has run (`schedstat`: nanoseconds, unlike the clock ticks
/// of `stat`, too coarse for runs of a fraction of a second).
#[cfg(target_os = "linux")]
fn run_time(pid: i32) -> Option<Duration> {
    let nanos = procfs::process::Process::new(pid)
        .ok()?
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
        let tree = Tree::of(std::process::id()).expect("this process's tree");
        let spent = tree.spent().expect("this process's run time");
        // This process is both the client and (as the path's first process) the middle.
        assert!(spent.client > Duration::ZERO);
        assert!(spent.middle >= spent.client);
        assert_eq!(spent.server, Duration::ZERO);
    }
}
