//! A small process that kills the stdio servers' process groups if the host dies: the
//! watchdog where the host starts the servers itself (other systems than Linux, or a Linux
//! host that could not start the watchdog that starts them; see the parent module).
//!
//! Why: when the host is killed outright (SIGKILL, OOM killer), the kernel kills a stdio server
//! through its parent-death signal, but not the server's own children. Those are often the real
//! server (`npx`/`uvx` start it as a grandchild), and they would live on, reparented to init.
//! A process that has been SIGKILLed runs no more code, so the cleanup must live elsewhere.
//!
//! Design: when the first server starts, the host forks one watchdog for all of them. The
//! watchdog keeps the read end of a pipe whose write end only the host holds (close-on-exec, so
//! servers never inherit it; the watchdog closes every descriptor it inherited). Over that pipe
//! the host names each server's process group as it starts, and again once the group is gone
//! (a 4-byte group id, negated to forget it; writes that small are atomic). The watchdog waits
//! in `read`: when the host exits, however it exits, the kernel closes the write end, `read`
//! returns 0, and the watchdog SIGKILLs every group still named and exits. A group is forgotten
//! only after it is gone or has been sent SIGKILL, and the pipe keeps the host's order, so the
//! watchdog never signals a group id that was reused since. When the last group is forgotten,
//! the host kills and reaps the watchdog; the next server starts a new one.
//!
//! The child of a fork in a multithreaded process may only make async-signal-safe calls; it
//! makes plain system calls only (setpgid, dup2, close_range/close, read, killpg, _exit) on
//! values prepared before the fork, and never allocates. It leaves the host's process group so
//! that a Ctrl-C at the terminal goes to the host, not to it. A process that left its group
//! (`setsid`) is not reached: the servers' parent is the host, so no watchdog can adopt their
//! orphans.

use std::io::{PipeWriter, Write as _};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;

/// Process groups one watchdog guards at most; groups past this many are not guarded (their
/// servers still die with the host through the parent-death signal, their children may not).
const MAX_GROUPS: usize = 4096;

/// The host's one watchdog, while any group is guarded.
static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

struct Shared {
    pid: libc::pid_t,
    /// The write end of the pipe; the watchdog acts when it closes.
    pipe: PipeWriter,
    /// The groups guarded (one entry per guard), to name again to a new watchdog if this one
    /// is gone.
    groups: Vec<libc::pid_t>,
}

impl Shared {
    /// Fork a watchdog that guards nothing yet.
    fn start() -> std::io::Result<Shared> {
        // Both ends are close-on-exec: no exec'd child inherits either.
        let (reader, writer) = std::io::pipe()?;
        let reader = OwnedFd::from(reader);
        let read_fd = reader.as_raw_fd();
        let last_fd = highest_fd();
        // SAFETY: the child runs `watch`, which makes only async-signal-safe system calls on
        // plain integers and its own stack and never returns; the parent continues normally.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => unsafe { watch(read_fd, last_fd) },
            pid => {
                drop(reader);
                Ok(Shared {
                    pid,
                    pipe: writer,
                    groups: Vec::new(),
                })
            }
        }
    }

    /// Tell the watchdog about `pgid`: to guard it (`true`) or forget it.
    fn name(&mut self, pgid: libc::pid_t, guard: bool) -> std::io::Result<()> {
        let message = if guard { pgid } else { -pgid };
        self.pipe.write_all(&message.to_ne_bytes())
    }

    /// Kill and reap the watchdog without it touching any group (it never sees the pipe
    /// close).
    fn stop(self) {
        // SAFETY: `pid` is our own unreaped child, so the id cannot have been reused.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut status = 0;
            while libc::waitpid(self.pid, &mut status, 0) == -1
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
        }
        // The pipe closes after the watchdog is gone.
    }
}

/// One process group guarded by the host's watchdog. Dropping it forgets the group; do that
/// only once the group is gone or has been sent SIGKILL.
pub(crate) struct Watchdog {
    pgid: libc::pid_t,
}

impl Watchdog {
    /// Guard the process group `pgid`, starting the host's watchdog if none runs.
    pub(crate) fn guard(pgid: u32) -> std::io::Result<Watchdog> {
        let pgid = libc::pid_t::try_from(pgid)
            .ok()
            .filter(|pgid| *pgid > 1)
            .ok_or_else(|| std::io::Error::other("invalid process group id"))?;
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = shared.as_mut()
            && running.name(pgid, true).is_ok()
        {
            running.groups.push(pgid);
            return Ok(Watchdog { pgid });
        }
        // None runs, or it is gone (killed by someone): start one with every group still
        // guarded, and this one.
        let mut groups = match shared.take() {
            Some(mut gone) => {
                let groups = std::mem::take(&mut gone.groups);
                gone.stop();
                groups
            }
            None => Vec::new(),
        };
        groups.push(pgid);
        let mut fresh = Shared::start()?;
        if let Err(e) = groups.iter().try_for_each(|group| fresh.name(*group, true)) {
            // Stopped, not dropped: a closed pipe would have it kill the groups named.
            fresh.stop();
            return Err(e);
        }
        fresh.groups = groups;
        *shared = Some(fresh);
        Ok(Watchdog { pgid })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let Some(running) = shared.as_mut() else {
            return;
        };
        if let Some(at) = running.groups.iter().position(|g| *g == self.pgid) {
            running.groups.swap_remove(at);
        }
        if running.groups.is_empty() {
            // Nothing left to guard: no process lingers once every server is closed.
            if let Some(running) = shared.take() {
                running.stop();
            }
        } else if running.name(self.pgid, false).is_err() {
            tracing::debug!(pgid = self.pgid, "the process watchdog is gone");
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

/// The watchdog's whole life, in the forked child: keep the groups the host names, and kill
/// them when the host is gone.
///
/// # Safety
/// Must only be called in the child right after `fork`; it never returns.
unsafe fn watch(read_fd: libc::c_int, last_fd: libc::c_int) -> ! {
    // SAFETY (whole body): only async-signal-safe system calls on integers and stack arrays.
    unsafe {
        // Out of the host's process group: terminal signals are for the host.
        libc::setpgid(0, 0);
        // The pipe becomes descriptor 0 and everything else is closed: the host's stdio and the
        // servers' pipes are not held open by us.
        if read_fd != 0 && libc::dup2(read_fd, 0) == -1 {
            libc::_exit(1);
        }
        close_from(1, last_fd);
        let mut groups = [0 as libc::pid_t; MAX_GROUPS];
        let mut count = 0;
        const ID: usize = size_of::<libc::pid_t>();
        let mut buf = [0u8; 64 * ID];
        // Bytes of a message whose rest has not arrived (never, with whole atomic writes).
        let mut held = 0;
        loop {
            let read = libc::read(0, buf[held..].as_mut_ptr().cast(), buf.len() - held);
            if read == 0 {
                // End of file: the host is gone.
                for group in &groups[..count] {
                    libc::killpg(*group, libc::SIGKILL);
                }
                libc::_exit(0);
            }
            if read < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                // Cannot happen on a pipe we own; leave the groups alone rather than guess.
                libc::_exit(1);
            }
            let have = held + read as usize;
            let whole = have - have % ID;
            for message in buf[..whole].chunks_exact(ID) {
                let mut bytes = [0u8; ID];
                bytes.copy_from_slice(message);
                let named = libc::pid_t::from_ne_bytes(bytes);
                if named > 0 {
                    if count < MAX_GROUPS {
                        groups[count] = named;
                        count += 1;
                    }
                } else if let Some(at) = groups[..count].iter().position(|g| *g == -named) {
                    count -= 1;
                    groups[at] = groups[count];
                }
            }
            buf.copy_within(whole..have, 0);
            held = have - whole;
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
