//! The host's side of the watchdog (Linux): start it, ask it for servers, learn of their exits,
//! and let it go when no server is left.
//!
//! One watchdog serves every server of the host at a time ([`SHARED`]). A request goes over a
//! socket with the server's three pipe ends attached; a thread per watchdog reads its answers
//! and exit reports and hands them to the waiting spawn and to each server's exit watch. A
//! spawn whose caller has given up by the time its answer comes is killed there.
//!
//! When the last server is let go, the host shuts its side of the socket: the watchdog kills
//! every process it still holds and exits, and the thread reaps it ([`stopped_within`] waits
//! for that). If the watchdog dies on its own (killed by someone), its servers die with it (their
//! parent-death signal); the thread kills what is left of their process groups and tells their
//! watches, and the next spawn starts a new watchdog.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read as _;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::reaper;
use super::wire::{
    self, EXITED, MAX_PAYLOAD, MAX_STRINGS, REPORT_WORDS, REQUEST_WORDS, SPAWN, STARTED,
};

/// The host's watchdog while any server it started is held.
static SHARED: Mutex<Option<Current>> = Mutex::new(None);

/// Watchdogs let go and not yet reaped: they are still killing what they held.
static STOPPING: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

/// The search path a program is looked up on when the server's environment has none (as
/// `execvp` does).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

struct Current {
    link: Arc<Link>,
    /// Servers held (one [`Held`] each).
    held: usize,
}

/// One watchdog, as the host sees it.
struct Link {
    pid: libc::pid_t,
    /// The host's end of the socket, for requests (one at a time).
    socket: Mutex<UnixStream>,
    table: Mutex<Table>,
}

/// What the reader thread hands out.
#[derive(Default)]
struct Table {
    next: u32,
    /// Requests waiting for their answer, by sequence number.
    waiting: HashMap<u32, oneshot::Sender<std::io::Result<Started>>>,
    /// Each running server's exit watch, by pid.
    running: HashMap<libc::pid_t, watch::Sender<Option<ExitStatus>>>,
    /// The watchdog is gone: nothing more will be answered.
    gone: bool,
}

/// A server the watchdog started.
pub(crate) struct Started {
    /// Its pid, which also names its process group.
    pub(crate) pid: u32,
    /// Its exit status, once the watchdog has reaped it.
    pub(crate) exit: watch::Receiver<Option<ExitStatus>>,
}

/// A server's hold on the host's watchdog: while any is held, the watchdog runs. Drop it once
/// the server's group is gone or has been sent SIGKILL.
pub(crate) struct Held {
    link: Arc<Link>,
}

impl Held {
    /// The pid of the watchdog held: the parent of the server, and of its orphans.
    pub(crate) fn watchdog(&self) -> u32 {
        self.link.pid as u32
    }
}

/// Why no server was started.
pub(crate) enum Refused {
    /// No watchdog could be started (or reached): the host may start the server itself.
    Unavailable(std::io::Error),
    /// The server could not be started (its program is missing, say).
    Failed(std::io::Error),
}

/// What a server is started with.
pub(crate) struct Request<'a> {
    pub(crate) program: &'a str,
    pub(crate) args: &'a [String],
    /// The whole environment of the server.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Its working directory; the host's own when `None`.
    pub(crate) cwd: Option<&'a Path>,
    /// What become its stdin, stdout and stderr.
    pub(crate) stdio: [OwnedFd; 3],
}

/// Start a server through the host's watchdog (starting the watchdog first if none runs).
/// The returned hold keeps the watchdog running until it is dropped.
pub(crate) async fn launch(request: Request<'_>) -> Result<(Started, Held), Refused> {
    let payload = payload(&request).map_err(Refused::Failed)?;
    let stdio = request.stdio;
    // Off the runtime: a fork of the host, and a write the watchdog may be slow to read.
    let sent = super::super::spawner::spawn_off_runtime(move || send(&payload, &stdio)).await;
    let (held, answer) = sent.map_err(Refused::Unavailable)?;
    match answer.await {
        Ok(Ok(started)) => Ok((started, held)),
        Ok(Err(error)) => Err(Refused::Failed(error)),
        Err(_) => Err(Refused::Unavailable(std::io::Error::other(
            "the process watchdog ended before it answered",
        ))),
    }
}

/// The request's payload and header counts (see `wire`).
struct Payload {
    bytes: Vec<u8>,
    argc: u32,
    envc: u32,
}

fn payload(request: &Request<'_>) -> std::io::Result<Payload> {
    let mut bytes = Vec::with_capacity(4096);
    let mut push = |value: &[u8]| -> std::io::Result<()> {
        if value.contains(&0) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "nul byte found in provided data",
            ));
        }
        bytes.extend_from_slice(value);
        bytes.push(0);
        Ok(())
    };
    push(request.program.as_bytes())?;
    // The host's directory at this moment, not the one it had when the watchdog was forked
    // (if it has none any more, the watchdog's).
    let cwd = match request.cwd {
        Some(cwd) if cwd.is_absolute() => cwd.to_owned(),
        Some(cwd) => std::env::current_dir()?.join(cwd),
        None => std::env::current_dir().unwrap_or_default(),
    };
    push(cwd.as_os_str().as_bytes())?;
    let search = if request.program.contains('/') {
        OsString::new()
    } else {
        request
            .env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map_or_else(|| DEFAULT_PATH.into(), |(_, value)| value.clone())
    };
    push(search.as_bytes())?;
    push(request.program.as_bytes())?;
    for arg in request.args {
        push(arg.as_bytes())?;
    }
    for (name, value) in &request.env {
        let mut pair = name.as_bytes().to_vec();
        pair.push(b'=');
        pair.extend_from_slice(value.as_bytes());
        push(&pair)?;
    }
    let strings = 1 + request.args.len() + request.env.len();
    if bytes.len() > MAX_PAYLOAD || strings > MAX_STRINGS {
        return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
    }
    Ok(Payload {
        bytes,
        argc: u32::try_from(1 + request.args.len()).unwrap_or(u32::MAX),
        envc: u32::try_from(request.env.len()).unwrap_or(u32::MAX),
    })
}

type Answer = oneshot::Receiver<std::io::Result<Started>>;

/// Hold the host's watchdog (starting one if needed) and send it the request; a watchdog found
/// dead is replaced once.
fn send(payload: &Payload, stdio: &[OwnedFd; 3]) -> std::io::Result<(Held, Answer)> {
    let mut shared = lock(&SHARED);
    for attempt in 0..2 {
        let link = match shared.as_mut() {
            Some(current) => current.link.clone(),
            None => {
                let link = Link::start()?;
                *shared = Some(Current {
                    link: link.clone(),
                    held: 0,
                });
                link
            }
        };
        let (answered, answer) = oneshot::channel();
        let seq = {
            let mut table = lock(&link.table);
            table.next = table.next.wrapping_add(1);
            let seq = table.next;
            table.waiting.insert(seq, answered);
            seq
        };
        match link.write(seq, payload, stdio) {
            Ok(()) => {
                if let Some(current) = shared.as_mut() {
                    current.held += 1;
                }
                return Ok((Held { link }, answer));
            }
            Err(e) => {
                lock(&link.table).waiting.remove(&seq);
                // Gone (killed by someone): its reader thread cleans up; start another.
                *shared = None;
                if attempt == 1 {
                    return Err(e);
                }
            }
        }
    }
    Err(std::io::Error::other(
        "the process watchdog cannot be reached",
    ))
}

impl Link {
    /// Fork a watchdog and start its reader thread.
    fn start() -> std::io::Result<Arc<Link>> {
        let (ours, theirs) = UnixStream::pair()?;
        let reader = ours.try_clone()?;
        let their_fd = theirs.as_raw_fd();
        let last_fd = highest_fd();
        // SAFETY: the child runs `reaper::run`, which makes only async-signal-safe calls on
        // integers and memory of its own and never returns; the parent goes on normally.
        let pid = match unsafe { libc::fork() } {
            -1 => return Err(std::io::Error::last_os_error()),
            0 => unsafe { reaper::run(their_fd, last_fd) },
            pid => pid,
        };
        drop(theirs);
        let link = Arc::new(Link {
            pid,
            socket: Mutex::new(ours),
            table: Mutex::new(Table::default()),
        });
        let thread_link = link.clone();
        let started = std::thread::Builder::new()
            .name("mcp-watchdog".into())
            .stack_size(128 * 1024)
            .spawn(move || thread_link.read_reports(reader));
        if let Err(e) = started {
            // Nothing started yet: kill it outright rather than leave it waiting.
            // SAFETY: our own unreaped child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            return Err(e);
        }
        Ok(link)
    }

    /// Write one request: the header with the three descriptors, then the payload.
    fn write(&self, seq: u32, payload: &Payload, stdio: &[OwnedFd; 3]) -> std::io::Result<()> {
        let mut header = [0u8; REQUEST_WORDS * 4];
        let len = u32::try_from(payload.bytes.len()).unwrap_or(u32::MAX);
        wire::put(&[SPAWN, seq, len, payload.argc, payload.envc], &mut header);
        let fds: [RawFd; 3] = [
            stdio[0].as_raw_fd(),
            stdio[1].as_raw_fd(),
            stdio[2].as_raw_fd(),
        ];
        let socket = lock(&self.socket);
        send_with_fds(socket.as_raw_fd(), &header, &fds)?;
        send_all(socket.as_raw_fd(), &payload.bytes)
    }

    /// The reader thread: answers and exit reports until the watchdog is gone.
    fn read_reports(self: Arc<Link>, mut socket: UnixStream) {
        let mut bytes = [0u8; REPORT_WORDS * 4];
        let ended = loop {
            if let Err(e) = socket.read_exact(&mut bytes) {
                break e.kind() == std::io::ErrorKind::UnexpectedEof;
            }
            let mut words = [0u32; REPORT_WORDS];
            wire::get(&bytes, &mut words);
            let [kind, seq, pid, value] = words;
            let pid = pid as libc::pid_t;
            let mut table = lock(&self.table);
            match kind {
                STARTED if pid > 0 => {
                    let (exited, exit) = watch::channel(None);
                    table.running.insert(pid, exited);
                    let started = Started {
                        pid: pid as u32,
                        exit,
                    };
                    let taken = table
                        .waiting
                        .remove(&seq)
                        .is_some_and(|waiting| waiting.send(Ok(started)).is_ok());
                    if !taken {
                        // Its caller gave up: nobody else will stop it.
                        kill_group(pid);
                    }
                }
                STARTED => {
                    if let Some(waiting) = table.waiting.remove(&seq) {
                        let error = std::io::Error::from_raw_os_error(value as i32);
                        let _ = waiting.send(Err(error));
                    }
                }
                EXITED => {
                    if let Some(exited) = table.running.remove(&pid) {
                        let _ = exited.send(Some(ExitStatus::from_raw(value as i32)));
                    }
                }
                _ => break false,
            }
        };
        if !ended {
            // Not the end of its stream: it may still run, and must not be waited for alive.
            // SAFETY: our own child, not reaped yet (only `gone` reaps it).
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
        self.gone();
    }

    /// The watchdog has exited (let go, or killed): clean up after it and reap it.
    fn gone(self: &Arc<Self>) {
        {
            let mut shared = lock(&SHARED);
            if shared
                .as_ref()
                .is_some_and(|current| Arc::ptr_eq(&current.link, self))
            {
                *shared = None;
            }
        }
        let (waiting, running) = {
            let mut table = lock(&self.table);
            table.gone = true;
            (
                std::mem::take(&mut table.waiting),
                std::mem::take(&mut table.running),
            )
        };
        // Requests not answered fail (their senders drop).
        drop(waiting);
        for (pid, exited) in running {
            // The server died with the watchdog (parent-death signal); what stayed in its
            // group did not.
            kill_group(pid);
            let _ = exited.send(Some(ExitStatus::from_raw(libc::SIGKILL)));
        }
        // SAFETY: our own child, reaped once, here.
        unsafe {
            while libc::waitpid(self.pid, std::ptr::null_mut(), 0) == -1
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
        }
        lock(&STOPPING).retain(|pid| *pid != self.pid);
    }

    /// Let the watchdog go: it kills everything it still holds and exits.
    fn stop(&self) {
        let table = lock(&self.table);
        if table.gone {
            return;
        }
        // Under the table's lock: `gone` cannot have missed it.
        lock(&STOPPING).push(self.pid);
        drop(table);
        // The watchdog reads the end of the stream; a failure means it is gone already.
        let _ = lock(&self.socket).shutdown(std::net::Shutdown::Write);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut shared = lock(&SHARED);
        let Some(current) = shared.as_mut() else {
            return;
        };
        if !Arc::ptr_eq(&current.link, &self.link) {
            return;
        }
        current.held = current.held.saturating_sub(1);
        if current.held == 0 {
            // Nothing left to guard: no process lingers once every server is closed.
            *shared = None;
            drop(shared);
            self.link.stop();
        }
    }
}

/// Wait at most `bound` until every watchdog let go has killed what it held and been reaped.
pub(crate) async fn stopped_within(bound: Duration) {
    let deadline = tokio::time::Instant::now() + bound;
    while !lock(&STOPPING).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `sendmsg` of `bytes` with `fds` attached (`SCM_RIGHTS`), the rest of `bytes` after. Never
/// raises SIGPIPE (a host may not ignore it).
fn send_with_fds(socket: RawFd, bytes: &[u8], fds: &[RawFd; 3]) -> std::io::Result<()> {
    let mut control = [0u64; 8];
    // SAFETY: the message points at `bytes` and `control`, both alive for the call; the
    // control buffer has room for one SCM_RIGHTS header with three descriptors.
    let sent = unsafe {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr().cast_mut().cast(),
            iov_len: bytes.len(),
        };
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        let data = size_of_val(fds) as u32;
        message.msg_controllen = libc::CMSG_SPACE(data) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&message);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(data) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr().cast::<u8>(),
            libc::CMSG_DATA(cmsg),
            size_of_val(fds),
        );
        loop {
            let sent = libc::sendmsg(socket, &message, libc::MSG_NOSIGNAL);
            if sent >= 0
                || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                break sent;
            }
        }
    };
    let sent = usize::try_from(sent).map_err(|_| std::io::Error::last_os_error())?;
    // The descriptors went with the first byte; the rest of the header follows plainly.
    send_all(socket, &bytes[sent.min(bytes.len())..])
}

/// Send all of `bytes`, without raising SIGPIPE.
fn send_all(socket: RawFd, bytes: &[u8]) -> std::io::Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: send reads within `rest`.
        let n = unsafe { libc::send(socket, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) };
        match usize::try_from(n) {
            Ok(n) => rest = &rest[n.min(rest.len())..],
            Err(_) => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// SIGKILL the process group led by `pid`.
fn kill_group(pid: libc::pid_t) {
    if pid > 1 {
        // SAFETY: killpg takes plain integers; a stale group yields ESRCH.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
