//! The launcher: the host's executable started again with [`LAUNCHER_ARG`], between the
//! watchdog and a sandboxed server. It sets up the namespaces and mounts (`namespaces`), forks
//! the server, which confines itself further and runs the program (`confine`), and stays as its
//! parent: it relays the sandbox's proxy port (`forward`), and reports an early exit in terms of
//! the sandbox.
//!
//! It writes `mcpr sandbox: ...` to stderr and exits with [`SETUP_FAILED`] when the sandbox
//! cannot be set up: the server then never runs.

mod confine;
mod forward;
mod namespaces;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use super::LAUNCHER_ARG;
use super::host::{DIR_PREFIX, PLAN_ENV, Plan};

/// The exit status of a launcher that could not set up the sandbox.
pub(crate) const SETUP_FAILED: i32 = 125;

/// Run as the launcher when started as one (never returns then).
pub(super) fn run_if_launcher() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref().map(|arg| arg.as_bytes()) != Some(LAUNCHER_ARG.as_bytes()) {
        return;
    }
    let rest: Vec<OsString> = args.collect();
    let code = match launch(rest) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("mcpr sandbox: {why}; the server was not started");
            SETUP_FAILED
        }
    };
    std::process::exit(code)
}

/// Set up the sandbox, start the server in it, and wait for it; returns the exit code.
fn launch(mut command: Vec<OsString>) -> Result<i32, String> {
    if command.is_empty() {
        return Err("no program to run".into());
    }
    let program = command.remove(0);
    let plan = std::env::var(PLAN_ENV).map_err(|_| format!("{PLAN_ENV} is not set"))?;
    let plan: Plan =
        serde_json::from_str(&plan).map_err(|e| format!("{PLAN_ENV} is not a plan: {e}"))?;
    let ids = namespaces::Ids::current();
    namespaces::enter(ids)?;
    namespaces::hide(&plan.deny_read)?;
    namespaces::read_only(&plan.deny_write)?;
    let relay = match &plan.proxy {
        Some(_) => Some(forward::Relay::bind()?),
        None => None,
    };
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| name != PLAN_ENV)
        .collect();
    env.push(("TMPDIR".into(), plan.tmp.clone().into()));
    if let Some(relay) = &relay {
        let url = format!("http://127.0.0.1:{}", relay.port());
        for name in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            env.retain(|(existing, _)| existing != name);
            env.push((name.into(), url.clone().into()));
        }
        for name in ["NO_PROXY", "no_proxy"] {
            env.retain(|(existing, _)| existing != name);
        }
    }
    let server = confine::Server {
        program: &program,
        args: &command,
        env: &env,
        ids,
        // Landlock needs each path to exist; one that does not cannot be written anyway.
        writable: plan
            .allow_write
            .iter()
            .chain([&plan.tmp])
            .filter(|path| path.exists())
            .collect(),
    };
    // SAFETY: this process is single-threaded (run_if_launcher runs first in main, and nothing
    // above starts a thread), so the child may do anything before it execs.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "cannot start the server: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        drop(relay);
        let why = server.run();
        eprintln!("mcpr sandbox: {why}; the server was not started");
        std::process::exit(SETUP_FAILED);
    }
    supervise(pid, relay, &program, &plan)
}

/// Stay the server's parent: relay the proxy port, pass signals' effect on, and exit as it did.
fn supervise(
    pid: libc::pid_t,
    relay: Option<forward::Relay>,
    program: &OsString,
    plan: &Plan,
) -> Result<i32, String> {
    // The server reads and writes the MCP pipes alone; stderr stays for the note below.
    quiet_stdio();
    // A signal to the process group reaches the server, which decides; this process follows.
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGPIPE] {
        // SAFETY: setting a signal to be ignored.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
    if let (Some(relay), Some(socket)) = (relay, &plan.proxy) {
        relay.serve(socket.clone());
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        if waited == pid {
            break;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err("lost track of the server".into());
        }
    }
    remove_private_dir(plan);
    let program = program.to_string_lossy();
    if libc::WIFEXITED(status) {
        let code = libc::WEXITSTATUS(status);
        if code != 0 && code != SETUP_FAILED {
            note_exit(&program, &format!("exit status {code}"), plan);
        }
        return Ok(code);
    }
    let signal = libc::WTERMSIG(status);
    if signal != libc::SIGTERM && signal != libc::SIGKILL {
        note_exit(&program, &format!("signal {signal}"), plan);
    }
    // Die of the same signal, so the host sees what the server did.
    // SAFETY: restoring the default action and raising a signal at ourselves.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    Ok(128 + signal)
}

/// Remove the server's private directory once it has exited. The host removes it too when it
/// learns of the exit, but may exit first (a one-shot command), and nothing removes it after a
/// SIGKILL.
fn remove_private_dir(plan: &Plan) {
    let dir = plan.tmp.parent().filter(|dir| {
        dir.file_name()
            .is_some_and(|name| name.as_bytes().starts_with(DIR_PREFIX.as_bytes()))
    });
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Say, on the server's stderr, what the sandbox withheld: the usual reason an otherwise
/// working server exits at once inside one.
fn note_exit(program: &str, how: &str, plan: &Plan) {
    let network = if plan.proxy.is_some() {
        "network only to its allowedDomains, through a proxy"
    } else {
        "no network (a server that downloads at start, like `npx -y` or `uvx`, needs its \
         registry in allowedDomains)"
    };
    eprintln!(
        "mcpr sandbox: `{program}` ended with {how} inside the sandbox: {network}; writes only \
         to allowWrite and TMPDIR; denyRead paths hidden"
    );
}

fn quiet_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let null = std::os::fd::AsRawFd::as_raw_fd(&null);
        // SAFETY: replacing our own stdin and stdout with /dev/null.
        unsafe {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
        }
    }
}
