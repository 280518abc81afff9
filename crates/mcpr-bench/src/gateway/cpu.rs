//! Where a path's CPU goes while calls are in flight: the client (this process), the process
//! in the middle and the server, from the kernel's per-thread run times (Linux `/proc`). On
//! two cores the three share the machine, so throughput follows their sum; this shows which
//! of them a path's figure is made of.

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
pub(super) fn spent(pid: u32) -> Option<Spent> {
    let client = run_time(std::process::id())?;
    let children = children_by_parent();
    let mut spent = Spent {
        client,
        ..Spent::default()
    };
    let mut todo = vec![pid];
    while let Some(pid) = todo.pop() {
        let time = run_time(pid).unwrap_or_default();
        if is_mock(pid) {
            spent.server += time;
        } else {
            spent.middle += time;
        }
        todo.extend(children.get(&pid).into_iter().flatten());
    }
    Some(spent)
}

/// The time every thread of `pid` has run (`schedstat`: nanoseconds, unlike the clock ticks
/// of `stat`, too coarse for runs of a fraction of a second).
fn run_time(pid: u32) -> Option<Duration> {
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let nanos = threads
        .flatten()
        .filter_map(|thread| std::fs::read_to_string(thread.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Some(Duration::from_nanos(nanos))
}

/// Every process's children, from each one's parent in `stat`.
fn children_by_parent() -> HashMap<u32, Vec<u32>> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return children;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command's name in parentheses (which may hold anything): state, parent.
        let parent = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().nth(1))
            .and_then(|parent| parent.parse::<u32>().ok());
        if let Some(parent) = parent {
            children.entry(parent).or_default().push(pid);
        }
    }
    children
}

/// Whether `pid` runs `… mock` (the benchmark's server).
fn is_mock(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).nth(1) == Some(b"mock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_run() {
        if !std::path::Path::new("/proc/self/task").exists() {
            return;
        }
        let spent = spent(std::process::id()).expect("this process's run time");
        // This process is both the client and (as the path's first process) the middle.
        assert!(spent.client > Duration::ZERO);
        assert!(spent.middle >= spent.client);
        assert_eq!(spent.server, Duration::ZERO);
    }
}
