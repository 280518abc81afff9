//! The first moments of a server process, between the watchdog's `clone` and the `exec` of the
//! server's program.
//!
//! The watchdog starts a server as `posix_spawn` does: `clone` with `CLONE_VM | CLONE_VFORK`,
//! so the new process borrows the watchdog's memory (nothing is copied, however large the host
//! was when it forked the watchdog) and the watchdog waits until it has called `exec` or given
//! up. The child runs on a stack of its own and makes only plain system calls: it joins a new
//! process group, asks to be killed when the watchdog dies, takes its stdin, stdout and
//! stderr, moves to its working directory and runs the program, looking it up on the search
//! path as `execvp` does. Whatever fails, it writes the error number into [`Launch::error`]
//! (shared memory) and exits.

use std::ffi::{c_char, c_int, c_void};

/// Where the shell is, for a file that is no binary and has no `#!` line (as `execvp` runs it).
const SHELL: &std::ffi::CStr = c"/bin/sh";

/// Longest program path tried (the directory, a slash, the name and a NUL).
const PATH_BYTES: usize = 4096;

/// Everything the child needs, prepared by the watchdog on its own stack before `clone`.
#[repr(C)]
pub(super) struct Launch {
    /// The descriptors that become the server's stdin, stdout and stderr (all above 2).
    pub(super) stdio: [c_int; 3],
    /// The directory to start in, or null.
    pub(super) cwd: *const c_char,
    /// The program, as configured.
    pub(super) program: *const c_char,
    /// The `:`-separated search path for a program without a slash, or null.
    pub(super) path: *const c_char,
    /// Two free slots, then the arguments, null-terminated: the slot just before them is room
    /// for running a script through the shell.
    pub(super) argv: *mut *const c_char,
    /// The environment, null-terminated.
    pub(super) envp: *const *const c_char,
    /// The watchdog's pid: if the child's parent is another, the watchdog is already gone.
    pub(super) parent: libc::pid_t,
    /// Set by the child when it could not run the program: the error number.
    pub(super) error: c_int,
}

/// The child's whole life: prepare, `exec`, or record why not and exit.
///
/// # Safety
/// Only as the function of `clone(CLONE_VM | CLONE_VFORK)` from the single-threaded
/// watchdog, with `arg` pointing at a [`Launch`] whose pointers are valid until the child has
/// called `exec` or exited.
pub(super) extern "C" fn launch(arg: *mut c_void) -> c_int {
    let launch = arg.cast::<Launch>();
    // SAFETY: per this function's contract; the watchdog is suspended meanwhile, so the child
    // is the only one touching the `Launch`.
    unsafe {
        let error = run(&*launch);
        std::ptr::write_volatile(&raw mut (*launch).error, error.max(1));
        libc::_exit(127)
    }
}

/// Prepare the process and run the program; returns only with an error number.
///
/// # Safety
/// As [`launch`]: plain system calls on what `launch` points at.
unsafe fn run(launch: &Launch) -> c_int {
    // SAFETY (whole body): system calls on integers, on `launch`'s valid pointers and on
    // buffers of this stack.
    unsafe {
        // The watchdog's dispositions are all the default already, bar an ignored SIGPIPE it
        // may have from the host: a server gets the default, as from any spawn.
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGPIPE, &default, std::ptr::null_mut());
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        // Its own group: the shutdown signals the whole group.
        if libc::setpgid(0, 0) != 0 {
            return errno();
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return errno();
        }
        if libc::getppid() != launch.parent {
            return libc::ESRCH;
        }
        for (target, fd) in launch.stdio.iter().enumerate() {
            // `target` is 0, 1 or 2.
            if libc::dup2(*fd, target as c_int) < 0 {
                return errno();
            }
        }
        if !launch.cwd.is_null() && libc::chdir(launch.cwd) != 0 {
            return errno();
        }
        let argv = launch.argv.add(2);
        if launch.path.is_null() {
            execute(launch.program, launch, argv)
        } else {
            search(launch, argv)
        }
    }
}

/// Run `file`; a file that is no program (`ENOEXEC`) is handed to the shell. Returns the error
/// number.
///
/// # Safety
/// `file` is a NUL-terminated string; `argv` is `launch.argv + 2`.
unsafe fn execute(file: *const c_char, launch: &Launch, argv: *mut *const c_char) -> c_int {
    // SAFETY: valid NUL-terminated strings and null-terminated arrays, per the contract.
    unsafe {
        libc::execve(file, argv.cast_const(), launch.envp);
        let error = errno();
        if error != libc::ENOEXEC {
            return error;
        }
        // `sh file args...`: the free slot before the arguments holds the shell, and the file
        // takes the name's place (put back if the shell cannot run either).
        let shell = launch.argv.add(1);
        *shell = SHELL.as_ptr();
        let name = *argv;
        *argv = file;
        libc::execve(SHELL.as_ptr(), shell.cast_const(), launch.envp);
        *argv = name;
        errno()
    }
}

/// Try the program in each directory of the search path, as `execvp` does: a directory where it
/// is missing or not allowed is passed over; any other failure ends the search.
///
/// # Safety
/// As [`execute`]; `launch.path` is a NUL-terminated string.
unsafe fn search(launch: &Launch, argv: *mut *const c_char) -> c_int {
    // SAFETY: `program` and `path` are NUL-terminated; `buf` is this stack's.
    unsafe {
        let program = std::ffi::CStr::from_ptr(launch.program).to_bytes();
        let path = std::ffi::CStr::from_ptr(launch.path).to_bytes();
        let mut buf = [0u8; PATH_BYTES];
        let mut denied = false;
        for dir in path.split(|b| *b == b':') {
            // An empty entry is the current directory.
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            let len = dir.len() + 1 + program.len();
            if len >= buf.len() {
                continue;
            }
            buf[..dir.len()].copy_from_slice(dir);
            buf[dir.len()] = b'/';
            buf[dir.len() + 1..len].copy_from_slice(program);
            buf[len] = 0;
            match execute(buf.as_ptr().cast(), launch, argv) {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                error => return error,
            }
        }
        if denied { libc::EACCES } else { libc::ENOENT }
    }
}

/// The calling thread's last error number.
fn errno() -> c_int {
    // SAFETY: the errno location is the calling thread's own.
    unsafe { *libc::__errno_location() }
}
