//! The child process behind a stdio server: spawned in its own process group, stderr kept in a
//! bounded ring buffer, and shut down on our own deadline (stdin EOF, then SIGTERM to the
//! group, then SIGKILL) so that neither it nor its grandchildren outlive the client. If the host
//! itself dies, a [`Watchdog`] kills the group.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::ClientError;
use super::spawner;
use super::watchdog::Watchdog;
use crate::config::StdioConfig;

/// How long a server gets to exit by itself after its stdin closes (server-everything needs
/// ~350 ms), and then again after SIGTERM, before the group is killed; see
/// [`McpClient::close_within`](super::McpClient::close_within) for a shorter one.
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
    /// Kills the group if the host dies; taken (stopped) once the group is gone.
    watchdog: Mutex<Option<Watchdog>>,
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
        let mut command = Command::new(&cfg.command);
        command
            .args(&cfg.args)
            .envs(&cfg.env)
            // After the configured values, so that no config resets the count.
            .env(crate::nesting::NESTING_ENV, crate::nesting::child_value())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A new process group led by the child: shutdown signals reach its grandchildren.
            .process_group(0)
            // Safety net only; `close` is the orderly path and the Drop impl kills the group.
            .kill_on_drop(true);
        if let Some(cwd) = &cfg.cwd {
            command.current_dir(cwd);
        }
        die_with_parent(&mut command);

        // Off the runtime's worker threads (see `spawner`); the watchdog's fork too.
        let started = spawner::spawn_off_runtime(move || Started::start(&mut command)).await;
        let (mut child, pid, watchdog) = started
            .map_err(|source| ClientError::Spawn {
                server: server.to_owned(),
                command: cfg.command.clone(),
                source,
            })?
            .take();
        // Without it the server still works; only a crash of the host could leave orphans.
        let watchdog = watchdog
            .inspect_err(|e| {
                tracing::warn!(server, pid, "cannot start the process watchdog: {e}");
            })
            .ok();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Cannot happen with all three piped; kill rather than leak if it ever does.
            kill_group(pid, libc::SIGKILL);
            return Err(ClientError::Spawn {
                server: server.to_owned(),
                command: cfg.command.clone(),
                source: std::io::Error::other("child pipes unavailable"),
            });
        };

        let ring = Arc::new(StderrRing::default());
        let (stderr_done_tx, stderr_done) = watch::channel(false);
        tokio::spawn(drain_stderr(
            server.to_owned(),
            stderr,
            ring.clone(),
            stderr_done_tx,
        ));

        // The reaper owns the child; everyone else learns about its exit through the watch.
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            match child.wait().await {
                Ok(status) => {
                    let _ = exit_tx.send(Some(status));
                }
                Err(e) => tracing::warn!(pid, "waiting for server process failed: {e}"),
            }
        });

        let process = ServerProcess {
            pid,
            exit,
            stderr: ring,
            stderr_done,
            watchdog: Mutex::new(watchdog),
        };
        Ok((process, ServerPipes { stdin, stdout }))
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

    /// Stop the process and its group. The caller has already closed stdin (the polite
    /// request); this waits `grace` for the exit, escalates to SIGTERM (then waits `grace`, at
    /// least [`MIN_TERM_GRACE`]) and then SIGKILL for the whole group, and finally makes sure
    /// no member of the group (a grandchild) survives.
    pub(crate) async fn terminate(&self, grace: Duration) -> ExitStatus {
        let term_grace = grace.max(MIN_TERM_GRACE);
        let status = match self.exited_within(grace).await {
            Some(status) => status,
            None => {
                kill_group(self.pid, libc::SIGTERM);
                match self.exited_within(term_grace).await {
                    Some(status) => status,
                    None => {
                        kill_group(self.pid, libc::SIGKILL);
                        self.exited().await
                    }
                }
            }
        };
        // The leader is gone; grandchildren that stayed in its group are not. Give them the same
        // TERM-then-KILL treatment.
        if group_alive(self.pid) {
            kill_group(self.pid, libc::SIGTERM);
            let deadline = tokio::time::Instant::now() + term_grace;
            while group_alive(self.pid) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if group_alive(self.pid) {
                kill_unwaited(self.pid);
            }
        }
        // Every member is gone or has been sent SIGKILL: the watchdog has nothing left to do.
        drop(
            self.watchdog
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        status
    }
}

impl Drop for ServerProcess {
    /// A client dropped without `close` (a panic, a cancelled task) must not leak processes.
    fn drop(&mut self) {
        if self.exit_status().is_none() || group_alive(self.pid) {
            kill_unwaited(self.pid);
        }
        // The watchdog field drops after this, once the group has been sent SIGKILL.
    }
}

/// A server process just started, with its watchdog guard. Dropped untaken (the connection
/// gave up while the spawn ran on its thread), it kills the whole group: the child's own
/// kill-on-drop would reach the leader only, and the guard's drop would make the watchdog
/// forget the group.
struct Started {
    child: Option<tokio::process::Child>,
    pid: u32,
    watchdog: Option<std::io::Result<Watchdog>>,
}

impl Started {
    fn start(command: &mut Command) -> std::io::Result<Started> {
        let child = command.spawn()?;
        let pid = child.id().unwrap_or_default();
        Ok(Started {
            child: Some(child),
            pid,
            watchdog: Some(Watchdog::guard(pid)),
        })
    }

    fn take(mut self) -> (tokio::process::Child, u32, std::io::Result<Watchdog>) {
        let child = self.child.take().expect("a started process is taken once");
        let watchdog = self
            .watchdog
            .take()
            .expect("a started process is taken once");
        (child, self.pid, watchdog)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.child.is_some() {
            kill_unwaited(self.pid);
        }
        // The child and the watchdog guard drop after this, once the group has been killed.
    }
}

/// Process groups sent SIGKILL without waiting for them (a dropped server, a grandchild that
/// outlived its leader), until they are seen gone.
static KILLED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Send the group led by `pid` SIGKILL without waiting for it, and remember it (in [`KILLED`])
/// until it is seen gone.
fn kill_unwaited(pid: u32) {
    kill_group(pid, libc::SIGKILL);
    let mut killed = KILLED.lock().unwrap_or_else(|e| e.into_inner());
    killed.retain(|pid| group_exists(*pid));
    killed.push(pid);
}

/// Wait at most `bound` until every process group sent SIGKILL without waiting is gone: a host
/// that exits right after stopping its servers then leaves none of their processes still dying.
pub(crate) async fn killed_groups_gone(bound: Duration) {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let pending: Vec<libc::pid_t> = {
            let mut killed = KILLED.lock().unwrap_or_else(|e| e.into_inner());
            killed.retain(|pid| group_exists(*pid));
            killed
                .iter()
                .filter_map(|pid| libc::pid_t::try_from(*pid).ok())
                .collect()
        };
        // Zombies are gone for this purpose: their parents (or init) reap them.
        if pending.is_empty()
            || live_groups(&pending).is_empty()
            || tokio::time::Instant::now() >= deadline
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Whether the group led by `pid` still has any process, a zombie included (one system call).
fn group_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    libc::pid_t::try_from(pid).is_ok_and(|pgid| pgid > 1 && unsafe { libc::killpg(pgid, 0) } == 0)
}

/// Send `signal` to the process group led by `pid`.
fn kill_group(pid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale group yields ESRCH.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Whether any live process is still in the group led by `pid`. Zombies do not count: they are
/// dead, and are only waiting for a parent (possibly an init that never reaps) to collect them.
pub fn group_alive(pid: u32) -> bool {
    group_exists(pid) && libc::pid_t::try_from(pid).is_ok_and(live_member_in_group)
}

/// Scan `/proc` for a non-zombie member of the group (Linux).
fn live_member_in_group(pgid: libc::pid_t) -> bool {
    !live_groups(&[pgid]).is_empty()
}

/// Which of `pgids` have a non-zombie member, from one scan of `/proc` (Linux).
#[cfg(target_os = "linux")]
fn live_groups(pgids: &[libc::pid_t]) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pgids.to_vec();
    };
    let mut live = Vec::new();
    for entry in entries.filter_map(Result::ok) {
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
        // After the parenthesised command name: state, ppid, pgrp, ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let group = fields.nth(1).and_then(|g| g.parse::<libc::pid_t>().ok());
        if let Some(group) = group
            && pgids.contains(&group)
            && !matches!(state, "Z" | "X")
            && !live.contains(&group)
        {
            live.push(group);
            if live.len() == pgids.len() {
                break;
            }
        }
    }
    live
}

#[cfg(not(target_os = "linux"))]
fn live_groups(pgids: &[libc::pid_t]) -> Vec<libc::pid_t> {
    pgids.to_vec()
}

/// On Linux, ask the kernel to SIGKILL the child when we die, so a crashed host does not leave
/// servers behind. (It fires when the spawning thread exits: the spawn threads live as long as
/// the process.)
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    // SAFETY: getpid is async-signal-safe.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure only calls async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

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

    #[tokio::test]
    async fn a_started_server_nobody_took_is_killed_with_its_group() {
        // A server that has already started a child of its own when the connection that
        // spawned it gives up (its spawn's result is dropped on the spawn thread).
        let mut command = Command::new("sh");
        command
            .args(["-c", "sleep 30 & echo started; wait"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut started = Started::start(&mut command).unwrap();
        let pid = started.pid;
        let stdout = started.child.as_mut().unwrap().stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).await.unwrap();
        assert_eq!(line, "started\n");
        assert!(group_alive(pid));

        drop(started);

        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while group_alive(pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            !group_alive(pid),
            "a process of the dropped server's group is still running"
        );
    }

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
