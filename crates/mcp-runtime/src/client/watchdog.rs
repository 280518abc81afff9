//! A small process per stdio server that kills the server's process group if the host dies.
//!
//! Why: when the host is killed outright (SIGKILL, OOM killer), the kernel kills a stdio server
//! through its parent-death signal, but not the server's own children. Those are often the real
//! server (`npx`/`uvx` start it as a grandchild), and they would live on, reparented to init.
//! A process that has been SIGKILLed runs no more code, so the cleanup must live elsewhere.
//!
//! Design: right after spawning a server, the host forks a watchdog. The watchdog keeps the
//! read end of a pipe whose write end only the host holds (close-on-exec, so servers never
//! inherit it, and every watchdog closes all the descriptors it inherited, so watchdogs do not
//! hold each other's pipes open). It waits in `read`: when the host exits, however it exits,
//! the kernel closes the write end, `read` returns 0, and the watchdog SIGKILLs the server's
//! process group and exits. On an orderly shutdown the host kills and reaps the watchdog once
//! the group is gone, so a watchdog never outlives its server (and never signals a group id that
//! was reused since).
//!
//! Forking, rather than running a helper program, keeps this working in any host that embeds
//! the library: no mcpr executable, no shell, no `PATH` needed. The child of a fork in a
//! multithreaded process may only make async-signal-safe calls; it makes plain system calls only
//! (setpgid, dup2, close_range/close, read, killpg, _exit) on values prepared before the fork,
//! and never allocates. It leaves the host's process group so that a Ctrl-C at the terminal
//! goes to the host, not to it. A subreaper was not chosen because it dies with the host, and a
//! cgroup needs privileges or a systemd session that a host cannot count on.

use std::io::PipeWriter;
use std::os::fd::{AsRawFd, OwnedFd};

/// A watchdog guarding one process group. Dropping it stops the watchdog without it touching the
/// group; call that only once the group is gone or has been sent SIGKILL.
pub(crate) struct Watchdog {
    pid: libc::pid_t,
    /// The write end of the pipe; the watchdog acts when it closes.
    _pipe: PipeWriter,
}

impl Watchdog {
    /// Start a watchdog for the process group `pgid`.
    pub(crate) fn guard(pgid: u32) -> std::io::Result<Watchdog> {
        let pgid = libc::pid_t::try_from(pgid)
            .ok()
            .filter(|pgid| *pgid > 1)
            .ok_or_else(|| std::io::Error::other("invalid process group id"))?;
        // Both ends are close-on-exec: no exec'd child inherits either.
        let (reader, writer) = std::io::pipe()?;
        let reader = OwnedFd::from(reader);
        let read_fd = reader.as_raw_fd();
        let last_fd = highest_fd();
        // SAFETY: the child runs `watch`, which makes only async-signal-safe system calls on
        // plain integers and never returns; the parent continues normally.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => unsafe { watch(read_fd, pgid, last_fd) },
            pid => {
                drop(reader);
                Ok(Watchdog { pid, _pipe: writer })
            }
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Killed before the pipe closes (the fields drop after this), so it never sees EOF
        // and never signals the group. Reaped at once: it is our child, and would stay a zombie.
        // SAFETY: `pid` is our own unreaped child, so the id cannot have been reused.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut status = 0;
            while libc::waitpid(self.pid, &mut status, 0) == -1
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
        }
    }
}

/// The highest descriptor number a watchdog may have inherited (for closing them one by one
/// where `close_range` is unavailable).
fn highest_fd() -> libc::c_int {
    // SAFETY: sysconf has no preconditions.
    let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    libc::c_int::try_from(max.clamp(64, 1 << 20)).unwrap_or(1 << 20)
}

/// The watchdog's whole life, in the forked child.
///
/// # Safety
/// Must only be called in the child right after `fork`; it never returns.
unsafe fn watch(read_fd: libc::c_int, pgid: libc::pid_t, last_fd: libc::c_int) -> ! {
    // SAFETY (whole body): only async-signal-safe system calls on integers and a stack byte.
    unsafe {
        // Out of the host's process group: terminal signals are for the host.
        libc::setpgid(0, 0);
        // The pipe becomes descriptor 0 and everything else is closed: the host's stdio,
        // other servers' pipes and other watchdogs' write ends are not held open by us.
        if read_fd != 0 && libc::dup2(read_fd, 0) == -1 {
            libc::_exit(1);
        }
        close_from(1, last_fd);
        let mut byte = 0u8;
        loop {
            let read = libc::read(0, (&raw mut byte).cast(), 1);
            if read == 0 {
                // End of file: the host is gone.
                libc::killpg(pgid, libc::SIGKILL);
                libc::_exit(0);
            }
            if read < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                // Cannot happen on a pipe we own; leave the group alone rather than guess.
                libc::_exit(1);
            }
        }
    }
}

/// Close every descriptor from `first` on.
///
/// # Safety
/// Only for the forked watchdog, which owns nothing that other code still uses.
unsafe fn close_from(first: libc::c_int, last_fd: libc::c_int) {
    #[cfg(target_os = "linux")]
    {
        const NO_FLAGS: libc::c_long = 0;
        // Read by the kernel as an unsigned int: the highest descriptor there is.
        const TO_THE_LAST: libc::c_long = -1;
        // SAFETY: close_range takes plain integers.
        if unsafe {
            // Passed as longs, the width `syscall` reads.
            libc::syscall(
                libc::SYS_close_range,
                libc::c_long::from(first),
                TO_THE_LAST,
                NO_FLAGS,
            )
        } == 0
        {
            return;
        }
    }
    for fd in first..=last_fd {
        // SAFETY: closing a descriptor we may not have is harmless (EBADF).
        unsafe {
            libc::close(fd);
        }
    }
}
