//! Starting a stdio server's process: in a process group of its own, with its stdin, stdout
//! and stderr piped to us, and something that makes sure none of it outlives the host.
//!
//! On Linux the host's watchdog starts it (see `watchdog`): the watchdog is its parent, and
//! adopts whatever is orphaned below it. Elsewhere, and on Linux if no watchdog can be started,
//! the host starts it itself (a tokio child, started off the runtime's threads, see `spawner`)
//! with a parent-death signal, and a watchdog of its process group guards it. Either way it
//! gets exactly the environment `environment` builds, nothing inherited besides.

use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};

use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::environment::ServerEnvironment;
use super::group::kill_unwaited;
use super::spawner;
use super::watchdog::{Descendants, GroupWatchdog};
use crate::config::StdioConfig;

/// A server process just started.
pub(super) struct Spawned {
    /// Its pid, which also names its process group.
    pub(super) pid: u32,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
    /// Its exit status, once it has been reaped.
    pub(super) exit: watch::Receiver<Option<ExitStatus>>,
    /// Drop it only once the group is gone or has been sent SIGKILL.
    pub(super) guard: Guard,
    /// Where the processes below it will be noted.
    pub(super) below: Descendants,
    /// Host variables kept from it (names only; see `environment`).
    pub(super) held_back: Vec<String>,
}

/// What keeps a server's processes from outliving the host (by what its drop does).
pub(super) enum Guard {
    /// The host's watchdog started it, and holds it (Linux).
    #[cfg(target_os = "linux")]
    Started { _held: super::watchdog::Held },
    /// The host started it; a watchdog kills its group if the host dies.
    Group { _watchdog: GroupWatchdog },
    /// The host started it, and no watchdog could be started: only a crash of the host could
    /// leave its children behind.
    None,
}

/// Start the server of `cfg`; `server` names it in the log. A sandboxed server starts inside
/// its sandbox (see [`crate::sandbox`]), or not at all.
pub(super) async fn start(server: &str, cfg: &StdioConfig) -> std::io::Result<Spawned> {
    let Some(policy) = &cfg.sandbox else {
        return start_plain(server, cfg).await;
    };
    #[cfg(target_os = "linux")]
    {
        let prepared =
            crate::sandbox::prepare(server, cfg, policy).map_err(std::io::Error::other)?;
        let spawned = start_plain(server, &prepared.config).await?;
        prepared.hold_until_exit(spawned.exit.clone());
        Ok(spawned)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = policy;
        Err(std::io::Error::other(crate::sandbox::unsupported()))
    }
}

/// Start the process of `cfg` as it is.
async fn start_plain(server: &str, cfg: &StdioConfig) -> std::io::Result<Spawned> {
    let environment = ServerEnvironment::of(cfg, false);
    let env = server_env(&environment);
    #[cfg(target_os = "linux")]
    match through_watchdog(cfg, env.clone()).await {
        Ok(mut spawned) => {
            spawned.held_back = environment.held_back;
            return Ok(spawned);
        }
        Err(super::watchdog::Refused::Failed(e)) => return Err(e),
        Err(super::watchdog::Refused::Unavailable(e)) => {
            tracing::warn!(
                server,
                "cannot start the server through the process watchdog ({e}); starting it directly"
            );
        }
    }
    let mut spawned = by_host(server, cfg, env).await?;
    spawned.held_back = environment.held_back;
    Ok(spawned)
}

/// The whole environment of a server (see `environment`), with the nesting count over it
/// (see `nesting`).
fn server_env(environment: &ServerEnvironment) -> Vec<(OsString, OsString)> {
    let nesting = crate::nesting::NESTING_ENV;
    let mut env: Vec<(OsString, OsString)> = environment
        .vars
        .iter()
        .filter(|(name, _)| name != nesting)
        .cloned()
        .collect();
    // After the configured values, so that no config resets the count.
    env.push((nesting.into(), crate::nesting::child_value()));
    env
}

/// Ask the host's watchdog to start the server.
#[cfg(target_os = "linux")]
async fn through_watchdog(
    cfg: &StdioConfig,
    mut env: Vec<(OsString, OsString)>,
) -> Result<Spawned, super::watchdog::Refused> {
    use super::watchdog::{Refused, Request, launch};
    use std::os::fd::OwnedFd;

    let pipes = (|| {
        let (stdin, to_stdin) = std::io::pipe()?;
        let (from_stdout, stdout) = std::io::pipe()?;
        let (from_stderr, stderr) = std::io::pipe()?;
        Ok::<_, std::io::Error>((stdin, to_stdin, from_stdout, stdout, from_stderr, stderr))
    })();
    let (stdin, to_stdin, from_stdout, stdout, from_stderr, stderr) = match pipes {
        Ok(pipes) => pipes,
        Err(e) => return Err(Refused::Unavailable(e)),
    };
    // Marks the server and what it starts: its orphans are found by it (see `watchdog`).
    let instance = super::watchdog::new_instance();
    env.retain(|(name, _)| name != super::watchdog::INSTANCE_ENV);
    env.push((
        super::watchdog::INSTANCE_ENV.into(),
        instance.clone().into(),
    ));
    let request = Request {
        program: &cfg.command,
        args: &cfg.args,
        env,
        cwd: cfg.cwd.as_deref(),
        // Sent to the watchdog, then closed here: the server holds its ends alone.
        stdio: [stdin.into(), stdout.into(), stderr.into()],
    };
    let (started, held) = launch(request).await?;
    let ours = (|| {
        Ok::<_, std::io::Error>((
            ChildStdin::from_std(std::process::ChildStdin::from(OwnedFd::from(to_stdin)))?,
            ChildStdout::from_std(std::process::ChildStdout::from(OwnedFd::from(from_stdout)))?,
            ChildStderr::from_std(std::process::ChildStderr::from(OwnedFd::from(from_stderr)))?,
        ))
    })();
    match ours {
        Ok((stdin, stdout, stderr)) => Ok(Spawned {
            pid: started.pid,
            stdin,
            stdout,
            stderr,
            exit: started.exit,
            below: Descendants::marked(held.watchdog(), &instance),
            guard: Guard::Started { _held: held },
            held_back: Vec::new(),
        }),
        Err(e) => {
            // Cannot happen with pipes; kill rather than leak if it ever does.
            kill_unwaited(started.pid);
            Err(Refused::Failed(e))
        }
    }
}

/// Start the server as a child of the host.
async fn by_host(
    server: &str,
    cfg: &StdioConfig,
    env: Vec<(OsString, OsString)>,
) -> std::io::Result<Spawned> {
    let mut command = Command::new(&cfg.command);
    command
        .args(&cfg.args)
        // Exactly the server's environment, nothing inherited besides it.
        .env_clear()
        .envs(env)
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
    let (mut child, pid, watchdog) = started?.take();
    // Without it the server still works; only a crash of the host could leave orphans.
    let guard = match watchdog {
        Ok(watchdog) => Guard::Group {
            _watchdog: watchdog,
        },
        Err(e) => {
            tracing::warn!(server, pid, "cannot start the process watchdog: {e}");
            Guard::None
        }
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        // Cannot happen with all three piped; kill rather than leak if it ever does.
        kill_unwaited(pid);
        return Err(std::io::Error::other("child pipes unavailable"));
    };
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
    Ok(Spawned {
        pid,
        stdin,
        stdout,
        stderr,
        exit,
        guard,
        below: Descendants::default(),
        held_back: Vec::new(),
    })
}

/// A server process just started by the host, with its watchdog guard. Dropped untaken (the
/// connection gave up while the spawn ran on its thread), it kills the whole group: the child's
/// own kill-on-drop would reach the leader only, and the guard's drop would make the watchdog
/// forget the group.
struct Started {
    child: Option<tokio::process::Child>,
    pid: u32,
    watchdog: Option<std::io::Result<GroupWatchdog>>,
}

impl Started {
    fn start(command: &mut Command) -> std::io::Result<Started> {
        let child = command.spawn()?;
        let pid = child.id().unwrap_or_default();
        Ok(Started {
            child: Some(child),
            pid,
            watchdog: Some(GroupWatchdog::guard(pid)),
        })
    }

    fn take(mut self) -> (tokio::process::Child, u32, std::io::Result<GroupWatchdog>) {
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

#[cfg(test)]
mod tests {
    use super::super::group::group_alive;
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, BufReader};

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

    fn config(command: &str, args: &[&str]) -> StdioConfig {
        StdioConfig {
            command: command.into(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            env: Default::default(),
            cwd: None,
            sandbox: None,
            inherit_env: false,
        }
    }

    /// Start `cfg`, and read its first line of output and its exit status.
    async fn run(cfg: &StdioConfig) -> std::io::Result<(String, ExitStatus)> {
        // Held until the end: letting the watchdog go would kill the server.
        let Spawned {
            stdout,
            mut exit,
            guard: _guard,
            ..
        } = start("test", cfg).await?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).await?;
        let status = *exit.wait_for(Option::is_some).await.unwrap();
        Ok((line, status.unwrap()))
    }

    #[tokio::test]
    async fn a_server_gets_its_arguments_environment_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(
            "sh",
            &[
                "-c",
                r#"echo "$0|$1|$SPAWN_TEST_VALUE|$(pwd)"; exit 3"#,
                "zero",
                "one",
            ],
        );
        cfg.env.insert("SPAWN_TEST_VALUE".into(), "set".into());
        cfg.cwd = Some(dir.path().to_owned());
        let (line, status) = run(&cfg).await.unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(line.trim_end(), format!("zero|one|set|{}", cwd.display()));
        assert_eq!(status.code(), Some(3));
    }

    #[tokio::test]
    async fn a_script_without_an_interpreter_line_runs_through_the_shell() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("server");
        std::fs::write(&script, "echo \"from the script: $1\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (line, status) = run(&config(script.to_str().unwrap(), &["arg"]))
            .await
            .unwrap();
        assert_eq!(line.trim_end(), "from the script: arg");
        assert!(status.success());
    }

    #[tokio::test]
    async fn a_missing_program_or_directory_is_the_systems_error() {
        let missing = match start("test", &config("mcpr-no-such-program", &[])).await {
            Err(e) => e,
            Ok(_) => panic!("a missing program started"),
        };
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound, "{missing}");
        let mut cfg = config("sh", &["-c", "true"]);
        cfg.cwd = Some("/mcpr-no-such-directory".into());
        let Err(no_dir) = start("test", &cfg).await.map(|_| ()) else {
            panic!("started in a missing directory")
        };
        assert_eq!(no_dir.kind(), std::io::ErrorKind::NotFound, "{no_dir}");
    }

    #[test]
    fn the_configured_environment_goes_over_the_hosts() {
        let mut cfg = StdioConfig {
            command: "x".into(),
            args: Vec::new(),
            env: Default::default(),
            cwd: None,
            sandbox: None,
            inherit_env: false,
        };
        cfg.env.insert("PATH".into(), "/configured".into());
        let env = server_env(&ServerEnvironment::of(&cfg, false));
        let paths: Vec<_> = env.iter().filter(|(name, _)| name == "PATH").collect();
        assert_eq!(paths.len(), 1, "{paths:?}");
        assert_eq!(paths[0].1, "/configured");
        let nesting: Vec<_> = env
            .iter()
            .filter(|(name, _)| name == crate::nesting::NESTING_ENV)
            .collect();
        assert_eq!(nesting.len(), 1, "{nesting:?}");
        assert_eq!(nesting[0].1, crate::nesting::child_value());
        if let Some(home) = std::env::var_os("HOME") {
            assert!(
                env.iter()
                    .any(|(name, value)| name == "HOME" && *value == home)
            );
        }
    }
}
