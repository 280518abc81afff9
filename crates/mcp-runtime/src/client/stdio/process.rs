//! The child process behind a stdio server: started in its own process group (see `spawn`),
//! stderr kept in a bounded ring buffer, and shut down on our own deadline (stdin EOF, then
//! SIGTERM to the group, then SIGKILL) so that neither it nor its grandchildren outlive the
//! client. The processes below it that left its group are noted while it runs (see
//! `watchdog::Descendants`) and get the same TERM-then-KILL. If the host itself dies, its
//! watchdog kills them all.

use std::collections::VecDeque;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

use super::group::{group_alive, kill_group, kill_unwaited};
use super::spawn::{self, Guard, Spawned};
use super::watchdog::Descendants;
use crate::client::ClientError;
use crate::config::StdioConfig;

/// How long a server gets to exit by itself after its stdin closes (server-everything needs
/// ~350 ms), and then again after SIGTERM, before the group is killed; see
/// [`McpClient::close_within`](crate::client::McpClient::close_within) for a shorter one.
pub const DEFAULT_EXIT_GRACE: Duration = Duration::from_millis(1000);

/// The least time a server gets after SIGTERM before SIGKILL, however short the grace after
/// stdin EOF: a server that handles SIGTERM gets to clean up (one that does not dies at once,
/// so this costs nothing then).
pub const MIN_TERM_GRACE: Duration = Duration::from_millis(200);

/// Lines of stderr kept per server.
const STDERR_LINES: usize = 200;
/// Longest stderr line kept; longer lines are cut (a server flooding one endless line must not
/// grow memory).
const STDERR_LINE_BYTES: usize = 2048;
/// The stderr read buffer: small, since most servers write little there and every connection
/// holds one for as long as it lives.
const STDERR_READ_BYTES: usize = 1024;

/// A running server process.
pub(crate) struct ServerProcess {
    pid: u32,
    /// Exit status once the process has been reaped; `None` while it runs.
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr: Arc<StderrRing>,
    /// Becomes `true` when the stderr pipe reached EOF (everything the process wrote is in the
    /// ring).
    stderr_done: watch::Receiver<bool>,
    /// Keeps the processes from outliving the host; dropped once the group is gone.
    guard: Mutex<Option<Guard>>,
    /// Processes below the server, noted while it runs, that a signal to the group may miss.
    below: Mutex<Descendants>,
    /// Host variables kept from its environment (names only), for a start-up error.
    held_back: Vec<String>,
}

/// The pipes the MCP transport talks over.
pub(crate) struct ServerPipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
}

impl ServerProcess {
    /// Start the server. `server` names it in errors and logs.
    pub(crate) async fn spawn(
        server: &str,
        cfg: &StdioConfig,
    ) -> Result<(ServerProcess, ServerPipes), ClientError> {
        let Spawned {
            pid,
            stdin,
            stdout,
            stderr,
            exit,
            guard,
            below,
            held_back,
        } = spawn::start(server, cfg)
            .await
            .map_err(|source| ClientError::Spawn {
                server: server.to_owned(),
                command: cfg.command.clone(),
                source,
            })?;
        let ring = Arc::new(StderrRing::default());
        let (stderr_done_tx, stderr_done) = watch::channel(false);
        tokio::spawn(drain_stderr(
            server.to_owned(),
            stderr,
            ring.clone(),
            stderr_done_tx,
        ));

        let process = ServerProcess {
            pid,
            exit,
            stderr: ring,
            stderr_done,
            guard: Mutex::new(Some(guard)),
            below: Mutex::new(below),
            held_back,
        };
        Ok((process, ServerPipes { stdin, stdout }))
    }

    /// Names of host variables kept from its environment that inheriting would have passed.
    pub(crate) fn held_back(&self) -> Vec<String> {
        super::environment::shown(&self.held_back)
    }

    /// OS process id (also the process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The exit status, if the process has exited.
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Wait until the process has exited.
    pub(crate) async fn exited(&self) -> ExitStatus {
        let mut exit = self.exit.clone();
        loop {
            if let Some(status) = *exit.borrow_and_update() {
                return status;
            }
            if exit.changed().await.is_err() {
                // The reaper is gone without a status (wait failed); treat as exited.
                return ExitStatus::default();
            }
        }
    }

    /// Wait at most `bound` for the process to exit.
    pub(crate) async fn exited_within(&self, bound: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(bound, self.exited()).await.ok()
    }

    /// The last `n` stderr lines. Waits briefly for the pipe to drain when the process has
    /// exited, so a message printed just before dying is not missed.
    pub(crate) async fn stderr_tail(&self, n: usize) -> Vec<String> {
        if self.exit_status().is_some() {
            let mut done = self.stderr_done.clone();
            let _ = tokio::time::timeout(Duration::from_millis(250), done.wait_for(|d| *d)).await;
        }
        self.stderr.tail(n)
    }

    /// The last `n` stderr lines, without waiting.
    pub(crate) fn stderr_tail_now(&self, n: usize) -> Vec<String> {
        self.stderr.tail(n)
    }

    /// Note the processes now below the server (while it still runs: once it has exited,
    /// its children are no longer found below it). Called before its stdin closes, and again
    /// before each signal.
    pub(crate) fn note_descendants(&self) {
        if self.exit_status().is_none() {
            lock(&self.below).note(self.pid);
        }
    }

    /// Stop the process and its group. The caller has already closed stdin (the polite
    /// request); this waits `grace` for the exit, escalates to SIGTERM (then waits `grace`, at
    /// least [`MIN_TERM_GRACE`]) and then SIGKILL for the whole group, and finally makes sure
    /// no member of the group (a grandchild), and no process noted below the server that left
    /// the group, survives.
    pub(crate) async fn terminate(&self, grace: Duration) -> ExitStatus {
        let term_grace = grace.max(MIN_TERM_GRACE);
        let status = match self.exited_within(grace).await {
            Some(status) => status,
            None => {
                self.note_descendants();
                kill_group(self.pid, libc::SIGTERM);
                match self.exited_within(term_grace).await {
                    Some(status) => status,
                    None => {
                        self.note_descendants();
                        kill_group(self.pid, libc::SIGKILL);
                        self.exited().await
                    }
                }
            }
        };
        // The leader is gone; grandchildren that stayed in its group are not, nor those that
        // left it. Give them the same TERM-then-KILL treatment.
        let mut below = std::mem::take(&mut *lock(&self.below));
        // The leader's death handed its children to the watchdog: those that carry its mark.
        below.note_orphans(self.pid);
        if group_alive(self.pid) || below.any_running() {
            kill_group(self.pid, libc::SIGTERM);
            below.signal(false);
            let deadline = tokio::time::Instant::now() + term_grace;
            while (group_alive(self.pid) || below.any_running())
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if group_alive(self.pid) {
                kill_unwaited(self.pid);
            }
            if below.any_running() {
                below.signal(true);
            }
        }
        // Every member is gone or has been sent SIGKILL: the watchdog may let the server go.
        drop(lock(&self.guard).take());
        status
    }
}

impl Drop for ServerProcess {
    /// A client dropped without `close` (a panic, a cancelled task) must not leak processes.
    fn drop(&mut self) {
        let running = self.exit_status().is_none();
        let below = self.below.get_mut().unwrap_or_else(|e| e.into_inner());
        if running {
            below.note(self.pid);
        }
        if running || group_alive(self.pid) {
            kill_unwaited(self.pid);
        }
        below.note_orphans(self.pid);
        if !below.is_empty() {
            below.signal(true);
        }
        // The guard drops after this, once the group has been sent SIGKILL.
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The last lines a server wrote on stderr.
#[derive(Default)]
struct StderrRing {
    lines: Mutex<VecDeque<String>>,
}

impl StderrRing {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn tail(&self, n: usize) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .skip(lines.len().saturating_sub(n))
            .cloned()
            .collect()
    }
}

/// Read stderr until EOF, keeping the last lines and logging each at debug level. Reading
/// continuously matters: a server blocked on a full stderr pipe stops answering.
async fn drain_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    ring: Arc<StderrRing>,
    done: watch::Sender<bool>,
) {
    let mut reader = BufReader::with_capacity(STDERR_READ_BYTES, stderr);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match read_bounded_line(&mut reader, &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']);
                if line.is_empty() {
                    continue;
                }
                tracing::debug!(server = %server, "stderr: {line}");
                ring.push(line.to_owned());
            }
        }
    }
    let _ = done.send(true);
}

/// Read one line, keeping at most `STDERR_LINE_BYTES` of it (the rest is consumed and dropped).
/// Returns the number of bytes consumed; 0 at EOF.
async fn read_bounded_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(idx) => (idx + 1, true),
            None => (available.len(), false),
        };
        let room = STDERR_LINE_BYTES.saturating_sub(buf.len());
        buf.extend_from_slice(&available[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_only_the_last_lines() {
        let ring = StderrRing::default();
        for i in 0..(STDERR_LINES + 10) {
            ring.push(format!("line {i}"));
        }
        let tail = ring.tail(3);
        assert_eq!(
            tail,
            vec![
                format!("line {}", STDERR_LINES + 7),
                format!("line {}", STDERR_LINES + 8),
                format!("line {}", STDERR_LINES + 9)
            ]
        );
        assert_eq!(ring.tail(usize::MAX).len(), STDERR_LINES);
    }

    #[tokio::test]
    async fn long_lines_are_cut_not_buffered() {
        let data = format!("{}\nshort\n", "x".repeat(STDERR_LINE_BYTES * 3));
        let mut reader = BufReader::new(data.as_bytes());
        let mut buf = Vec::new();
        let n = read_bounded_line(&mut reader, &mut buf).await.unwrap();
        assert_eq!(n, STDERR_LINE_BYTES * 3 + 1);
        assert_eq!(buf.len(), STDERR_LINE_BYTES);
        buf.clear();
        read_bounded_line(&mut reader, &mut buf).await.unwrap();
        assert_eq!(buf, b"short\n");
    }
}
