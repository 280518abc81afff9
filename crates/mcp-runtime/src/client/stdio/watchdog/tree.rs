//! The processes below one server, noted while it runs, so that closing that server also stops
//! those that left its process group (`setsid`, `setpgid`), which no signal to the group
//! reaches.
//!
//! Linux: they are found in `/proc` by their parent links, from the server down, and held by
//! pidfd: a process noted is signalled as itself, never a later one that got its pid. A process
//! orphaned below the server has the watchdog for its parent instead (`reaper`), which cannot
//! tell whose it is: the watchdog starts each server with [`INSTANCE_ENV`] set to a value of
//! its own, which what the server starts inherits, and the watchdog's children that carry the
//! closed server's value are its orphans. (One that cleared its environment is killed when the
//! watchdog is let go, once the last server has closed, or when the host ends.) Elsewhere
//! nothing is noted.

/// The variable set on each server the watchdog starts, to a value of its own: the mark by which
/// the processes orphaned below that server are told from the others the watchdog holds.
#[cfg(target_os = "linux")]
pub(crate) const INSTANCE_ENV: &str = "MCPR_SERVER_INSTANCE";

/// A value of [`INSTANCE_ENV`] no other server of this host has.
#[cfg(target_os = "linux")]
pub(crate) fn new_instance() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let next = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{next}", std::process::id())
}

/// Processes noted below a server (not the server itself).
#[derive(Default)]
pub(crate) struct Descendants {
    #[cfg(target_os = "linux")]
    noted: Vec<Noted>,
    /// The watchdog that started the server, and the `NAME=value` its orphans carry.
    #[cfg(target_os = "linux")]
    mark: Option<(libc::pid_t, Vec<u8>)>,
}

#[cfg(target_os = "linux")]
struct Noted {
    pid: libc::pid_t,
    fd: std::os::fd::OwnedFd,
}

#[cfg(target_os = "linux")]
impl Descendants {
    /// Nothing noted yet, for a server the watchdog `watchdog` started with `instance` as its
    /// value of [`INSTANCE_ENV`].
    pub(crate) fn marked(watchdog: u32, instance: &str) -> Descendants {
        Descendants {
            noted: Vec::new(),
            mark: libc::pid_t::try_from(watchdog)
                .ok()
                .map(|watchdog| (watchdog, format!("{INSTANCE_ENV}={instance}").into_bytes())),
        }
    }

    /// Note every process now below `root` that is not noted yet.
    pub(crate) fn note(&mut self, root: u32) {
        let Ok(root) = libc::pid_t::try_from(root) else {
            return;
        };
        self.note_below(&Children::read(), root);
    }

    /// Note the processes orphaned below the server (the watchdog's children that carry its
    /// mark, other than `server` itself), and every process below them.
    pub(crate) fn note_orphans(&mut self, server: u32) {
        let Some((watchdog, mark)) = self.mark.clone() else {
            return;
        };
        let children = Children::read();
        for pid in children.of(watchdog) {
            if u32::try_from(pid) == Ok(server) || !carries(pid, &mark) {
                continue;
            }
            self.note_one(pid, watchdog);
            self.note_below(&children, pid);
        }
    }

    fn note_below(&mut self, children: &Children, root: libc::pid_t) {
        let mut parents = vec![root];
        while let Some(parent) = parents.pop() {
            for pid in children.of(parent) {
                parents.push(pid);
                self.note_one(pid, parent);
            }
        }
    }

    /// Note `pid`, found as a child of `parent`, unless it is noted already or has exited.
    fn note_one(&mut self, pid: libc::pid_t, parent: libc::pid_t) {
        if self.noted.iter().any(|n| n.pid == pid) {
            return;
        }
        let Some(id) = rustix::process::Pid::from_raw(pid) else {
            return;
        };
        let Ok(fd) = rustix::process::pidfd_open(id, rustix::process::PidfdFlags::empty()) else {
            return;
        };
        // The pid was read before the pidfd was opened: make sure it is still the same process
        // (one below this parent), and still running.
        if stat(pid).is_some_and(|again| again.parent == parent && !again.zombie) {
            self.noted.push(Noted { pid, fd });
        }
    }

    /// Whether nothing is noted (or everything noted has exited).
    pub(crate) fn is_empty(&self) -> bool {
        self.noted.is_empty()
    }

    /// Forget the processes that have exited; whether any is still running.
    pub(crate) fn any_running(&mut self) -> bool {
        self.noted.retain(|noted| {
            use std::os::fd::AsRawFd;
            let mut ready = libc::pollfd {
                fd: noted.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one pidfd we own, without waiting; readable once it has exited.
            let polled = unsafe { libc::poll(&mut ready, 1, 0) };
            polled == 0
        });
        !self.noted.is_empty()
    }

    /// Send SIGTERM (`kill`: SIGKILL) to every process noted.
    pub(crate) fn signal(&self, kill: bool) {
        let signal = if kill {
            rustix::process::Signal::KILL
        } else {
            rustix::process::Signal::TERM
        };
        for noted in &self.noted {
            // One that has exited meanwhile is not signalled (ESRCH).
            let _ = rustix::process::pidfd_send_signal(&noted.fd, signal);
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Descendants {
    /// Nothing is noted on this system.
    pub(crate) fn note(&mut self, _root: u32) {}

    /// Nothing is noted on this system.
    pub(crate) fn note_orphans(&mut self, _server: u32) {}

    /// Always: nothing is noted.
    pub(crate) fn is_empty(&self) -> bool {
        true
    }

    /// Never: nothing is noted.
    pub(crate) fn any_running(&mut self) -> bool {
        false
    }

    /// Nothing to signal.
    pub(crate) fn signal(&self, _kill: bool) {}
}

/// One process as `/proc/<pid>/stat` describes it.
#[cfg(target_os = "linux")]
struct Process {
    pid: libc::pid_t,
    parent: libc::pid_t,
    zombie: bool,
}

/// Where the children of a process are read from.
#[cfg(target_os = "linux")]
enum Children {
    /// The kernel lists each thread's children (`/proc/<pid>/task/<tid>/children`): only the
    /// processes on the way are read.
    Listed,
    /// It does not (a kernel without `CONFIG_PROC_CHILDREN`): every process, read once.
    Scanned(Vec<Process>),
}

#[cfg(target_os = "linux")]
impl Children {
    fn read() -> Children {
        static LISTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let listed = *LISTED.get_or_init(|| {
            let me = std::process::id();
            std::fs::metadata(format!("/proc/{me}/task/{me}/children")).is_ok()
        });
        if listed {
            return Children::Listed;
        }
        Children::scan()
    }

    /// Every process, read from `/proc`.
    fn scan() -> Children {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Children::Scanned(Vec::new());
        };
        Children::Scanned(
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                .filter_map(stat)
                .collect(),
        )
    }

    /// The children of `parent` (zombies among them).
    fn of(&self, parent: libc::pid_t) -> Vec<libc::pid_t> {
        match self {
            Children::Scanned(all) => all
                .iter()
                .filter(|p| p.parent == parent)
                .map(|p| p.pid)
                .collect(),
            Children::Listed => {
                let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
                    return Vec::new();
                };
                tasks
                    .filter_map(Result::ok)
                    .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
                    .flat_map(|listed| {
                        listed
                            .split_whitespace()
                            .filter_map(|pid| pid.parse().ok())
                            .collect::<Vec<_>>()
                    })
                    .collect()
            }
        }
    }
}

/// Whether the environment process `pid` started with holds `entry` (`NAME=value`).
#[cfg(target_os = "linux")]
fn carries(pid: libc::pid_t, entry: &[u8]) -> bool {
    use std::io::Read as _;
    /// Read no more of an environment than this.
    const MOST: u64 = 1 << 20;
    let mut environ = Vec::new();
    let read = std::fs::File::open(format!("/proc/{pid}/environ"))
        .and_then(|file| file.take(MOST).read_to_end(&mut environ));
    read.is_ok() && environ.split(|b| *b == 0).any(|var| var == entry)
}

#[cfg(target_os = "linux")]
fn stat(pid: libc::pid_t) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses (which may hold anything): state, ppid, ...
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Process {
        pid,
        parent,
        zombie: matches!(state, "Z" | "X"),
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_process_that_left_the_group_is_noted_and_stopped_as_itself() {
        // A shell whose child runs in a session of its own.
        let mut shell = Command::new("sh")
            .args(["-c", "setsid sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(shell.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleeper: libc::pid_t = line.trim().parse().unwrap();
        let mut below = Descendants::default();
        below.note(shell.id());
        assert!(below.noted.iter().any(|n| n.pid == sleeper), "{line}");
        assert!(below.any_running());
        below.signal(true);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while below.any_running() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!below.any_running(), "the noted process survived SIGKILL");
        let _ = shell.kill();
        let _ = shell.wait();
    }

    #[test]
    fn children_are_found_listed_or_scanned() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let me = std::process::id() as libc::pid_t;
        let pid = child.id() as libc::pid_t;
        assert!(Children::scan().of(me).contains(&pid));
        assert!(Children::read().of(me).contains(&pid));
        let _ = child.kill();
        let _ = child.wait();
    }
}
