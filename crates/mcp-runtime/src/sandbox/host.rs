//! The host's side of a sandboxed server: its private directory (the server's `TMPDIR` and the
//! proxy's socket), the filtering proxy, and the launcher command that replaces the server's.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::ExitStatus;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::{LAUNCHER_ARG, SandboxError, SandboxPolicy, launcher_wired};
use crate::config::StdioConfig;

/// The environment variable that carries the [`Plan`] to the launcher (removed before the
/// server runs).
pub(super) const PLAN_ENV: &str = "MCPR_SANDBOX_PLAN";

/// The name of a sandbox's private directory starts with it.
pub(super) const DIR_PREFIX: &str = "mcpr-sandbox-";

/// What the launcher sets up, sent as JSON in [`PLAN_ENV`].
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Plan {
    pub(super) allow_write: Vec<PathBuf>,
    pub(super) deny_read: Vec<PathBuf>,
    pub(super) deny_write: Vec<PathBuf>,
    /// The server's private temporary directory.
    pub(super) tmp: PathBuf,
    /// The proxy's Unix socket, when the server may reach `allowedDomains`.
    pub(super) proxy: Option<PathBuf>,
}

/// A sandboxed server ready to start: the launcher's config, and what the host keeps while the
/// server runs.
pub(crate) struct Prepared {
    /// Starts the launcher, which starts the server.
    pub(crate) config: StdioConfig,
    host: HostSide,
}

/// Removed (directory) and stopped (proxy) when dropped.
struct HostSide {
    _dir: tempfile::TempDir,
    proxy: Option<tokio::task::AbortHandle>,
}

impl Drop for HostSide {
    fn drop(&mut self) {
        if let Some(proxy) = &self.proxy {
            proxy.abort();
        }
    }
}

impl Prepared {
    /// Keep the host's side until the server has exited.
    pub(crate) fn hold_until_exit(self, mut exit: watch::Receiver<Option<ExitStatus>>) {
        let host = self.host;
        tokio::spawn(async move {
            let _ = exit.wait_for(Option::is_some).await;
            drop(host);
        });
    }
}

/// Prepare the sandbox of `cfg` (whose `sandbox` is set); `server` names it in the proxy's log.
pub(crate) fn prepare(
    server: &str,
    cfg: &StdioConfig,
    policy: &SandboxPolicy,
) -> Result<Prepared, SandboxError> {
    if !launcher_wired() {
        return Err(SandboxError::NotWired);
    }
    for path in policy
        .allow_write
        .iter()
        .chain(&policy.deny_read)
        .chain(&policy.deny_write)
    {
        if !path.is_absolute() {
            return Err(SandboxError::RelativePath(path.display().to_string()));
        }
    }
    let exe = std::env::current_exe()?;
    // Private to the user: the server's temporary files and the proxy's socket.
    let private = || std::fs::Permissions::from_mode(0o700);
    let dir = tempfile::Builder::new()
        .prefix(DIR_PREFIX)
        .permissions(private())
        .tempdir()?;
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp)?;
    std::fs::set_permissions(&tmp, private())?;
    let (proxy, task) = if policy.has_network() {
        let socket = dir.path().join("proxy.sock");
        let task = super::proxy::start(server, &socket, policy.clone())?;
        (Some(socket), Some(task))
    } else {
        (None, None)
    };
    let plan = Plan {
        allow_write: policy.allow_write.clone(),
        deny_read: policy.deny_read.clone(),
        deny_write: policy.deny_write.clone(),
        tmp,
        proxy,
    };
    let plan = serde_json::to_string(&plan).map_err(std::io::Error::other)?;
    let mut config = cfg.clone();
    config.sandbox = None;
    config.command = exe.to_string_lossy().into_owned();
    config.args = [LAUNCHER_ARG.to_owned(), cfg.command.clone()]
        .into_iter()
        .chain(cfg.args.iter().cloned())
        .collect();
    config.env.insert(PLAN_ENV.to_owned(), plan);
    Ok(Prepared {
        config,
        host: HostSide {
            _dir: dir,
            proxy: task,
        },
    })
}
