//! Child processes with a time bound: every external step runs in its own process group, is
//! killed (the whole group) when its bound passes, and is killed at the latest when the bench
//! ends or is interrupted.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Process groups started by the bench and not yet reaped.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn register(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
}

fn unregister(pgid: i32) {
    GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|g| *g != pgid);
}

/// SIGKILL one process group (it may be gone already).
pub(crate) fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: signalling a process group we created; harmless if it no longer exists.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
}

/// Kill every process group the bench started that is still registered (end of run, Ctrl-C).
pub(crate) fn kill_all() {
    let groups: Vec<i32> = std::mem::take(&mut *GROUPS.lock().unwrap_or_else(|e| e.into_inner()));
    for pgid in groups {
        kill_group(pgid);
    }
}

/// Spawn `command` in a new process group, registered for cleanup.
pub(crate) fn spawn(command: &mut Command) -> std::io::Result<Group> {
    use std::os::unix::process::CommandExt;
    let child = command.process_group(0).spawn()?;
    let pgid = child.id() as i32;
    register(pgid);
    Ok(Group {
        child: Some(child),
        pgid,
    })
}

/// A child in its own process group; the group is killed when dropped.
pub(crate) struct Group {
    child: Option<Child>,
    pgid: i32,
}

impl Group {
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }

    pub(crate) fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("child not taken")
    }

    /// Wait for the child to exit on its own (bound it with a [`Watchdog`]).
    pub(crate) fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child().wait()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        kill_group(self.pgid);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        unregister(self.pgid);
    }
}

/// Kills a process group if not disarmed (dropped) within its bound: guards steps that block
/// on a child's pipes.
pub(crate) struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<bool>>,
}

impl Watchdog {
    pub(crate) fn new(pgid: i32, bound: Duration) -> Watchdog {
        let (done, rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(bound) {
                kill_group(pgid);
                return true;
            }
            false
        });
        Watchdog {
            done: Some(done),
            thread: Some(thread),
        }
    }

    /// Disarm; returns whether the bound had passed (and the group was killed).
    pub(crate) fn disarm(mut self) -> bool {
        self.stop()
    }

    fn stop(&mut self) -> bool {
        drop(self.done.take());
        self.thread
            .take()
            .map(|t| t.join().unwrap_or(false))
            .unwrap_or(false)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What a bounded run produced.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// `None` when the bound passed and the process was killed.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    /// Spawn to exit (of the direct child).
    pub elapsed: Duration,
}

impl Outcome {
    pub(crate) fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// A one-line reason for a failed run: the bound, or the status and the last stderr line.
    pub(crate) fn failure(&self, what: &str) -> String {
        match self.status {
            None => format!("{what}: no exit within {:.0} s", self.elapsed.as_secs_f64()),
            Some(status) => {
                let last = self
                    .stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .or_else(|| self.stdout.lines().rev().find(|l| !l.trim().is_empty()))
                    .unwrap_or("no output");
                format!("{what}: {status}: {}", clip(last, 160))
            }
        }
    }
}

/// Shorten `text` to at most `max` characters, on a character boundary.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Run `command` to completion with piped stdout/stderr (stdin as configured by the caller,
/// null by default), killing its process group after `bound`. Whatever it leaves behind in its
/// group is killed once it exits.
pub(crate) fn run_bounded(command: &mut Command, bound: Duration) -> std::io::Result<Outcome> {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut group = spawn(command)?;
    let pgid = group.pgid();
    let stdout = group.child().stdout.take();
    let stderr = group.child().stderr.take();
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let out = read(stdout.map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = read(stderr.map(|p| Box::new(p) as Box<dyn Read + Send>));

    // Wait on another thread so the bound can interrupt the wait.
    let mut child = group.child.take().expect("child");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send((status, Instant::now()));
    });
    let (status, ended) = match rx.recv_timeout(bound) {
        Ok((status, ended)) => (Some(status?), ended),
        Err(_) => {
            kill_group(pgid);
            let _ = rx.recv_timeout(Duration::from_secs(10));
            (None, Instant::now())
        }
    };
    // Leftovers in the group (grandchildren holding the pipes open) go now.
    kill_group(pgid);
    drop(group);
    Ok(Outcome {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        elapsed: ended - started,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_short_text_and_cuts_long_text() {
        assert_eq!(clip(" ok ", 10), "ok");
        assert_eq!(clip("abcdef", 3), "abc…");
    }
}
