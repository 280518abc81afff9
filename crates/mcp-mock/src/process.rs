//! Process-level knobs: pid files, an environment dump, grandchildren (in the mock's process group, in a session of
//! their own, or orphaned), stderr output and SIGTERM handling.
//!
//! These exist to test how clients manage the server *process* (process groups, stderr
//! draining, kill escalation) rather than the protocol.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

/// Process-level knobs, from the flags.
pub(crate) struct ProcessKnobs {
    /// Ignore SIGTERM.
    pub ignore_sigterm: bool,
    /// Write our pid here.
    pub pid_file: Option<PathBuf>,
    /// Write our environment here, `NAME=VALUE` a line.
    pub env_dump: Option<PathBuf>,
    /// Spawn `sleep 3600` and write its pid here.
    pub grandchild: Option<PathBuf>,
    /// Spawn `sleep 3600` in a session of its own and write its pid here.
    pub grandchild_setsid: Option<PathBuf>,
    /// Leave `sleep 3600` behind in a session of its own, its parent gone, and write its pid
    /// here.
    pub orphan: Option<PathBuf>,
    /// One line for stderr at start.
    pub stderr_line: Option<String>,
    /// Flood stderr from a thread.
    pub stderr_flood: bool,
}

/// Applies the process knobs; called once at start, before serving.
pub(crate) fn prepare(knobs: &ProcessKnobs) -> anyhow::Result<()> {
    if let Some(path) = &knobs.pid_file {
        write_pid(path, std::process::id())?;
    }
    if let Some(path) = &knobs.env_dump {
        let dump: String = std::env::vars_os()
            .map(|(name, value)| {
                format!("{}={}\n", name.to_string_lossy(), value.to_string_lossy())
            })
            .collect();
        std::fs::write(path, dump)
            .with_context(|| format!("cannot write --env-dump {}", path.display()))?;
    }
    if let Some(path) = &knobs.grandchild {
        // Same process group on purpose (no setsid): clients must kill the whole group. The
        // child is never reaped by us, like a helper a real server forgot about. Its stdio is
        // detached so that it cannot hold the client's pipes open.
        let child = Command::new("sleep")
            .arg("3600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot spawn the --grandchild process `sleep 3600`")?;
        write_pid(path, child.id())?;
    }
    if let Some(path) = &knobs.grandchild_setsid {
        // Out of the mock's process group and session: a signal to the group misses it.
        let child = detached_sleep()
            .spawn()
            .context("cannot spawn the --grandchild-setsid process `sleep 3600`")?;
        write_pid(path, child.id())?;
    }
    if let Some(path) = &knobs.orphan {
        // As a daemon leaves itself: a shell in a session of its own starts the sleep and
        // exits, so the sleep's parent is gone before the mock serves.
        let mut shell = Command::new("sh");
        shell
            .args([
                "-c",
                "sleep 3600 </dev/null >/dev/null 2>&1 & echo $! > \"$1\"",
                "sh",
            ])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        in_own_session(&mut shell);
        let status = shell
            .status()
            .context("cannot run the --orphan shell (`sh -c 'sleep 3600 &'`)")?;
        if !status.success() {
            anyhow::bail!("the --orphan shell failed: {status}");
        }
    }
    // After spawning the grandchildren: an ignored signal stays ignored across exec, and only
    // the mock itself should be stubborn.
    if knobs.ignore_sigterm {
        ignore_sigterm()?;
    }
    if let Some(line) = &knobs.stderr_line {
        eprintln!("{line}");
    }
    if knobs.stderr_flood {
        std::thread::Builder::new()
            .name("mcpr-mock-stderr-flood".into())
            .spawn(flood_stderr)
            .context("cannot start the --stderr-flood thread")?;
    }
    Ok(())
}

/// `sleep 3600` with its stdio detached, in a session of its own.
fn detached_sleep() -> Command {
    let mut command = Command::new("sleep");
    command
        .arg("3600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    in_own_session(&mut command);
    command
}

/// Start `command` in a new session (`setsid`), hence a new process group.
fn in_own_session(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure makes one async-signal-safe call (setsid) between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Writes `pid` to `path` (the whole file, newline-terminated).
fn write_pid(path: &Path, pid: u32) -> anyhow::Result<()> {
    std::fs::write(path, format!("{pid}\n"))
        .with_context(|| format!("cannot write a pid to {}", path.display()))
}

/// Sets SIGTERM's disposition to "ignore".
fn ignore_sigterm() -> anyhow::Result<()> {
    // SAFETY: `signal` with SIG_IGN installs no handler code; it only changes the disposition
    // of SIGTERM for this process, which nothing else in mcpr relies on.
    let previous = unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    if previous == libc::SIG_ERR {
        anyhow::bail!("cannot ignore SIGTERM: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Writes numbered lines to stderr as fast as the reader lets us, until stderr fails.
fn flood_stderr() {
    let filler = "x".repeat(100);
    let mut n: u64 = 0;
    loop {
        // Take the lock per batch, not for ever, so other stderr writers are not starved.
        let mut stderr = std::io::stderr().lock();
        for _ in 0..64 {
            n += 1;
            if writeln!(stderr, "mcpr-mock stderr flood line {n} {filler}").is_err() {
                // stderr is closed (Rust ignores SIGPIPE, so this is an error): nothing to do.
                return;
            }
        }
    }
}
