//! The watchdog process itself (Linux), from the moment the host forks it: it starts the
//! servers the host asks for, reaps them and everything orphaned below them, reports each
//! server's exit, and kills every process it holds when the host is gone or done with it.
//!
//! It is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process below a server whose parent
//! dies (a daemon that forked twice, the child of a server that was killed) is handed to the
//! watchdog rather than to init, however it left the server's process group (`setsid`,
//! `setpgid`). So when it kills on its way out, it needs no record of who is below whom: it
//! kills its children, reaps them, and kills the children that their deaths hand it, until it
//! has none.
//!
//! A child of a multithreaded host may make only async-signal-safe calls: everything here is a
//! plain system call on integers, on this stack, or on memory it maps for itself, and nothing
//! allocates or can panic.

use std::ffi::{c_char, c_int, c_void};

use super::exec::{self, Launch};
use super::wire::{self, EXITED, MAX_PAYLOAD, MAX_STRINGS, REPORT_WORDS, REQUEST_WORDS, STARTED};

/// Servers one watchdog runs at most; a request past this is refused (`EAGAIN`).
const MAX_SERVERS: usize = 4096;

/// The stack of the short-lived child between `clone` and `exec`.
const CHILD_STACK: usize = 256 * 1024;

/// How many times, 1 ms apart, the last sweep looks for children still to kill before it
/// gives up (a process that forks faster than it is killed).
const SWEEP_ROUNDS: usize = 5000;

/// The socket to the host, as the watchdog keeps it.
const HOST: c_int = 0;

/// Memory the watchdog maps for itself once: the child's stack (above a guard page), a request's
/// payload, and the pointer arrays built from it.
struct Memory {
    stack_top: *mut u8,
    payload: *mut u8,
    pointers: *mut *const c_char,
}

/// Pointer slots: two free ones, the arguments and the environment, each null-terminated.
const POINTERS: usize = MAX_STRINGS + 4;

/// The watchdog's whole life, in the forked child: `socket` is its end of the host's socket,
/// `last_fd` the highest descriptor it may have inherited.
///
/// # Safety
/// Must only be called in the child right after `fork`; it never returns.
pub(super) unsafe fn run(socket: c_int, last_fd: c_int) -> ! {
    // SAFETY (whole body): plain system calls on integers and on this stack's values.
    unsafe {
        // Out of the host's process group: terminal signals are for the host.
        libc::setpgid(0, 0);
        // The socket becomes descriptor 0 and everything else is closed: the host's stdio and
        // the servers' pipes are not held open by us. /dev/null takes 1 and 2, so that the
        // descriptors the host sends come above the three a server's become.
        if socket != HOST && libc::dup2(socket, HOST) == -1 {
            libc::_exit(1);
        }
        close_from(1, last_fd);
        let null = c"/dev/null".as_ptr();
        if libc::open(null, libc::O_RDWR) != 1 || libc::open(null, libc::O_RDWR) != 2 {
            libc::_exit(1);
        }
        // Without it (a kernel before 3.4) orphans go to init as before; the rest still holds.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        reset_signal_handlers();
        // Children must stay to be reaped: a host that ignores SIGCHLD would have the kernel
        // reap them unseen (and their exit statuses lost).
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGCHLD, &default, std::ptr::null_mut());
        let mut child_exits: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut child_exits);
        libc::sigaddset(&mut child_exits, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_SETMASK, &child_exits, std::ptr::null_mut());
        let signals = libc::signalfd(-1, &child_exits, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        let Some(memory) = map_memory() else {
            libc::_exit(1);
        };
        if signals < 0 {
            libc::_exit(1);
        }
        let me = libc::getpid();
        let mut servers = Servers {
            pids: [0; MAX_SERVERS],
            count: 0,
        };
        loop {
            let mut ready = [
                libc::pollfd {
                    fd: HOST,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: signals,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            if libc::poll(ready.as_mut_ptr(), 2, -1) < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                sweep(&servers, me);
            }
            if ready[1].revents != 0 {
                let mut info = [0u8; size_of::<libc::signalfd_siginfo>()];
                while libc::read(signals, info.as_mut_ptr().cast(), info.len()) > 0 {}
                reap(&mut servers);
            }
            if ready[0].revents != 0 && !serve(&memory, me, &mut servers) {
                sweep(&servers, me);
            }
        }
    }
}

/// The servers started and not yet reaped.
struct Servers {
    pids: [libc::pid_t; MAX_SERVERS],
    count: usize,
}

impl Servers {
    fn running(&self) -> &[libc::pid_t] {
        &self.pids[..self.count.min(MAX_SERVERS)]
    }

    /// Forget `pid`; whether it was a server.
    fn remove(&mut self, pid: libc::pid_t) -> bool {
        let Some(at) = self.running().iter().position(|p| *p == pid) else {
            return false;
        };
        self.count -= 1;
        self.pids[at] = self.pids[self.count];
        true
    }
}

/// Reap every child that has exited; report the servers among them to the host.
fn reap(servers: &mut Servers) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes one int.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if servers.remove(pid) {
            report([EXITED, 0, pid as u32, status as u32]);
        }
    }
}

/// Take one request from the host and answer it; `false` when the host is gone (end of file,
/// or a stream that can no longer be read).
///
/// # Safety
/// Only in the watchdog, with `memory` mapped.
unsafe fn serve(memory: &Memory, me: libc::pid_t, servers: &mut Servers) -> bool {
    let mut header = [0u8; REQUEST_WORDS * 4];
    // Room for one SCM_RIGHTS message of three descriptors, aligned for `cmsghdr`.
    let mut control = [0u64; 8];
    let mut fds = [-1 as c_int; 3];
    let mut received = 0;
    // SAFETY: recvmsg fills `header` and `control` within the lengths given.
    let read = unsafe {
        let mut iov = libc::iovec {
            iov_base: header.as_mut_ptr().cast(),
            iov_len: header.len(),
        };
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = size_of_val(&control) as _;
        let read = loop {
            let read = libc::recvmsg(HOST, &mut message, libc::MSG_CMSG_CLOEXEC);
            if read >= 0 || errno() != libc::EINTR {
                break read;
            }
        };
        let mut cmsg = libc::CMSG_FIRSTHDR(&message);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<c_int>();
                let bytes = ((*cmsg).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                for at in 0..bytes / size_of::<c_int>() {
                    let fd = data.add(at).read_unaligned();
                    match fds.get_mut(received) {
                        Some(slot) => {
                            *slot = fd;
                            received += 1;
                        }
                        None => {
                            libc::close(fd);
                        }
                    }
                }
            }
            cmsg = libc::CMSG_NXTHDR(&message, cmsg);
        }
        read
    };
    let answered = 'answer: {
        let Ok(read) = usize::try_from(read) else {
            break 'answer false;
        };
        let got = read.min(header.len());
        if read == 0 || !read_exact(&mut header[got..]) {
            break 'answer false;
        }
        let mut words = [0u32; REQUEST_WORDS];
        wire::get(&header, &mut words);
        let [kind, seq, len, argc, envc] = words;
        if kind != wire::SPAWN {
            // Not our host's words: the stream cannot be trusted any more.
            break 'answer false;
        }
        let len = len as usize;
        // SAFETY: `payload` is MAX_PAYLOAD bytes of our own mapping.
        let payload = unsafe { std::slice::from_raw_parts_mut(memory.payload, MAX_PAYLOAD) };
        if len > MAX_PAYLOAD {
            if !discard(len, payload) {
                break 'answer false;
            }
            report([STARTED, seq, 0, libc::E2BIG as u32]);
            break 'answer true;
        }
        let Some(payload) = payload.get_mut(..len) else {
            break 'answer false;
        };
        if !read_exact(payload) {
            break 'answer false;
        }
        let outcome = if received != fds.len() {
            Err(libc::EBADF)
        } else if servers.count >= MAX_SERVERS {
            Err(libc::EAGAIN)
        } else {
            // SAFETY: our mapping, filled with this request.
            unsafe { start(memory, payload, argc as usize, envc as usize, fds, me) }
        };
        match outcome {
            Ok(pid) => {
                servers.pids[servers.count] = pid;
                servers.count += 1;
                report([STARTED, seq, pid as u32, 0]);
            }
            Err(error) => report([STARTED, seq, 0, error as u32]),
        }
        true
    };
    for fd in &fds[..received] {
        // SAFETY: descriptors received for this request; the server has its own copies.
        unsafe {
            libc::close(*fd);
        }
    }
    answered
}

/// Start one server from a request's `payload`; its pid, or the error number.
///
/// # Safety
/// Only in the watchdog; `payload` lies in `memory`.
unsafe fn start(
    memory: &Memory,
    payload: &[u8],
    argc: usize,
    envc: usize,
    stdio: [c_int; 3],
    me: libc::pid_t,
) -> Result<libc::pid_t, c_int> {
    let strings = 3 + argc + envc;
    if argc == 0 || argc + envc + 4 > POINTERS {
        return Err(libc::E2BIG);
    }
    if payload.last() != Some(&0) {
        return Err(libc::EINVAL);
    }
    // SAFETY: `pointers` is POINTERS slots of our mapping, and every index below is checked
    // against the counts, which fit.
    unsafe {
        let slots = std::slice::from_raw_parts_mut(memory.pointers, POINTERS);
        let mut fixed = [std::ptr::null::<c_char>(); 3];
        let mut found = 0;
        let mut start = 0;
        for (at, byte) in payload.iter().enumerate() {
            if *byte != 0 {
                continue;
            }
            let string = payload.as_ptr().add(start).cast::<c_char>();
            let empty = at == start;
            start = at + 1;
            match found {
                0..3 => fixed[found] = if empty { std::ptr::null() } else { string },
                n if n < 3 + argc => slots[2 + n - 3] = string,
                n if n < strings => slots[3 + n - 3] = string,
                _ => return Err(libc::EINVAL),
            }
            found += 1;
        }
        let [program, cwd, path] = fixed;
        if found != strings || program.is_null() {
            return Err(libc::EINVAL);
        }
        slots[2 + argc] = std::ptr::null();
        slots[3 + argc + envc] = std::ptr::null();
        let mut launch = Launch {
            stdio,
            cwd,
            program,
            path,
            argv: slots.as_mut_ptr(),
            envp: slots.as_ptr().add(3 + argc),
            parent: me,
            error: 0,
        };
        let pid = libc::clone(
            exec::launch,
            memory.stack_top.cast::<c_void>(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut launch).cast::<c_void>(),
        );
        if pid < 0 {
            return Err(errno());
        }
        // Written by the child, in this memory, before it exited: it did not run the program
        // (it is reaped as any other child).
        match std::ptr::read_volatile(&raw const launch.error) {
            0 => Ok(pid),
            error => Err(error),
        }
    }
}

/// Send one answer or report to the host (best effort: a host that is gone is noticed by the
/// next read).
fn report(words: [u32; REPORT_WORDS]) {
    let mut bytes = [0u8; REPORT_WORDS * 4];
    wire::put(&words, &mut bytes);
    let mut sent = 0;
    while sent < bytes.len() {
        // SAFETY: send reads within `bytes`.
        let n = unsafe {
            libc::send(
                HOST,
                bytes[sent..].as_ptr().cast(),
                bytes.len() - sent,
                libc::MSG_NOSIGNAL,
            )
        };
        match usize::try_from(n) {
            Ok(n) if n > 0 => sent += n,
            _ if errno() == libc::EINTR => {}
            _ => return,
        }
    }
}

/// Fill `buf` from the host; `false` at end of file or on an error.
fn read_exact(mut buf: &mut [u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: read writes within `buf`.
        let n = unsafe { libc::read(HOST, buf.as_mut_ptr().cast(), buf.len()) };
        match usize::try_from(n) {
            Ok(0) => return false,
            Ok(n) => {
                let n = n.min(buf.len());
                buf = &mut buf[n..];
            }
            Err(_) if errno() == libc::EINTR => {}
            Err(_) => return false,
        }
    }
    true
}

/// Read and drop `len` bytes from the host, through `scratch`.
fn discard(mut len: usize, scratch: &mut [u8]) -> bool {
    while len > 0 {
        let take = len.min(scratch.len());
        if !read_exact(&mut scratch[..take]) {
            return false;
        }
        len -= take;
    }
    true
}

/// The host is gone or done with us: kill every server's group, then every child (servers,
/// and whatever was handed to us below them), reaping them and killing the children their
/// deaths hand us, until none is left; then exit.
fn sweep(servers: &Servers, me: libc::pid_t) -> ! {
    // SAFETY: signals, waits and sleeps on integers; `_exit` ends the process.
    unsafe {
        for pid in servers.running() {
            libc::killpg(*pid, libc::SIGKILL);
        }
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        for _ in 0..SWEEP_ROUNDS {
            kill_children(me);
            loop {
                let mut status = 0;
                match libc::waitpid(-1, &mut status, libc::WNOHANG) {
                    0 => break,
                    pid if pid > 0 => {}
                    // No child left (ECHILD): done.
                    _ => libc::_exit(0),
                }
            }
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::_exit(0)
    }
}

/// SIGKILL every child of `me` (and the group each leads, if any), found in `/proc`.
fn kill_children(me: libc::pid_t) {
    // SAFETY: open/getdents64/close on our own descriptor and this stack's buffer.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut entries = [0u8; 8192];
        loop {
            let len = libc::syscall(
                libc::SYS_getdents64,
                dir,
                entries.as_mut_ptr(),
                entries.len(),
            );
            let Ok(len) = usize::try_from(len) else {
                break;
            };
            if len == 0 {
                break;
            }
            let mut at = 0;
            // Each record: inode (8), offset (8), record length (2), type (1), name (NUL).
            while let Some(record) = entries.get(at..len.min(entries.len())) {
                if record.len() < 20 {
                    break;
                }
                let size = usize::from(u16::from_ne_bytes([record[16], record[17]]));
                if size == 0 {
                    break;
                }
                if let Some(pid) = parse_pid(&record[19..])
                    && parent_of(pid) == Some(me)
                {
                    libc::kill(pid, libc::SIGKILL);
                    libc::kill(-pid, libc::SIGKILL);
                }
                at += size;
            }
        }
        libc::close(dir);
    }
}

/// The number a `/proc` entry's name (NUL-terminated) is, if it is one.
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    let mut digits = 0;
    for byte in name {
        match byte {
            b'0'..=b'9' => {
                pid = pid
                    .checked_mul(10)?
                    .checked_add(libc::pid_t::from(byte - b'0'))?;
                digits += 1;
            }
            0 => break,
            _ => return None,
        }
    }
    (digits > 0 && pid > 0).then_some(pid)
}

/// The parent of process `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = *b"/proc/\0\0\0\0\0\0\0\0\0\0\0\0/stat\0";
    let mut digits = [0u8; 12];
    let mut n = 0;
    let mut rest = pid;
    loop {
        digits[n] = b'0' + (rest % 10) as u8;
        n += 1;
        rest /= 10;
        if rest == 0 || n == digits.len() {
            break;
        }
    }
    let mut len = 6;
    for at in (0..n).rev() {
        path[len] = digits[at];
        len += 1;
    }
    for byte in b"/stat\0" {
        path[len] = *byte;
        len += 1;
    }
    let mut stat = [0u8; 512];
    // SAFETY: a NUL-terminated path on this stack; read within `stat`.
    let read = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let read = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        read
    };
    let stat = stat.get(..usize::try_from(read).ok()?)?;
    // After the command name in parentheses (which may hold anything): " S ppid ...".
    let close = stat.iter().rposition(|b| *b == b')')?;
    let mut fields = stat
        .get(close + 1..)?
        .split(|b| *b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    parse_pid(fields.next()?)
}

/// Map the watchdog's memory: a guard page, the child's stack, the payload, the pointers.
///
/// # Safety
/// Only in the watchdog.
unsafe fn map_memory() -> Option<Memory> {
    const PAGE: usize = 4096;
    let pointers = POINTERS * size_of::<*const c_char>();
    let total = PAGE + CHILD_STACK + MAX_PAYLOAD + pointers;
    // SAFETY: a fresh private anonymous mapping, used only by this process.
    unsafe {
        let base = libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = base.cast::<u8>();
        // A stack overflow in the child faults here instead of writing over the payload.
        libc::mprotect(base.cast(), PAGE, libc::PROT_NONE);
        Some(Memory {
            stack_top: base.add(PAGE + CHILD_STACK),
            payload: base.add(PAGE + CHILD_STACK),
            pointers: base.add(PAGE + CHILD_STACK + MAX_PAYLOAD).cast(),
        })
    }
}

/// Every signal the host had a handler for gets the default back: the host's handlers are
/// not ours to run, nor the servers' to inherit in the moment before `exec`.
///
/// # Safety
/// Only in the watchdog.
unsafe fn reset_signal_handlers() {
    // SAFETY: sigaction on signal numbers; invalid ones fail harmlessly.
    unsafe {
        for signal in 1..=64 {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            if current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

/// Close every descriptor from `first` on.
///
/// # Safety
/// Only in the watchdog, which owns nothing that other code still uses.
unsafe fn close_from(first: c_int, last_fd: c_int) {
    const NO_FLAGS: libc::c_long = 0;
    // Read by the kernel as an unsigned int: the highest descriptor there is.
    const TO_THE_LAST: libc::c_long = -1;
    // SAFETY: close_range and close take plain integers; closing a descriptor we do not have
    // is harmless (EBADF).
    unsafe {
        if libc::syscall(
            libc::SYS_close_range,
            libc::c_long::from(first),
            TO_THE_LAST,
            NO_FLAGS,
        ) == 0
        {
            return;
        }
        for fd in first..=last_fd {
            libc::close(fd);
        }
    }
}

/// The calling thread's last error number.
fn errno() -> c_int {
    // SAFETY: the errno location is the calling thread's own.
    unsafe { *libc::__errno_location() }
}
