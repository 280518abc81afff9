//! Sandboxed stdio servers: VS Code's `sandboxEnabled` / `sandbox` keys, enforced with the
//! kernel's own mechanisms, failing closed.
//!
//! A sandboxed server is not started directly. The host's executable is started again in a
//! hidden launcher mode (the watchdog starts it like any server, so the subreaper and kill
//! guarantees hold), and the launcher, before it runs the server:
//! - enters new user, mount and network namespaces;
//! - hides each `denyRead` path (an empty read-only tmpfs over a directory, `/dev/null` over a
//!   file) and makes each `denyWrite` path read-only (a read-only bind mount);
//! - with `allowedDomains`, brings `lo` up and relays a port on it to the host's filtering
//!   proxy (`proxy`) over a Unix socket; without them the namespace has no network at all;
//! - starts the server in a nested user namespace that maps the user's own uid back (so the
//!   mounts cannot be undone), restricted by Landlock to reading anywhere and writing only
//!   beneath `allowWrite` and a private temporary directory (`TMPDIR`).
//!
//! Where any of this is missing (another OS, a kernel without the features, AppArmor's
//! restriction of user namespaces) the server does not start, and the error names the reason.
//!
//! A host that embeds the library must call [`run_if_launcher`] first thing in `main`, before
//! it starts any thread; without it, a sandboxed server is refused with
//! [`SandboxError::NotWired`].

mod policy;

#[cfg(target_os = "linux")]
mod host;
#[cfg(target_os = "linux")]
mod launcher;
#[cfg(target_os = "linux")]
mod proxy;

use std::sync::atomic::{AtomicBool, Ordering};

pub use policy::SandboxPolicy;
pub(crate) use policy::from_entry;

#[cfg(target_os = "linux")]
pub(crate) use host::prepare;

/// The argument that starts the host's executable as a sandbox launcher.
pub const LAUNCHER_ARG: &str = "__mcpr-sandbox-launcher";

/// Set once the host called [`run_if_launcher`]: its executable can launch sandboxes.
static WIRED: AtomicBool = AtomicBool::new(false);

/// Why a sandboxed server cannot start. The server never runs unsandboxed instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The host's `main` never called [`run_if_launcher`], so its executable cannot launch a
    /// sandbox.
    #[error(
        "the sandbox is not available in this program: its main must call \
         mcp_runtime::sandbox::run_if_launcher() first"
    )]
    NotWired,
    /// This operating system has no sandbox support in mcpr yet.
    #[error("the sandbox is not supported on {0} yet (Linux only); the server was not started")]
    Unsupported(&'static str),
    /// Setting up the host's side (the private directory, the proxy) failed.
    #[error("cannot prepare the sandbox: {0}")]
    Io(#[from] std::io::Error),
    /// A path of the policy is not absolute (it was not expanded).
    #[error("sandbox path `{0}` is not absolute")]
    RelativePath(String),
}

/// Run the sandbox launcher if this process was started as one (it then never returns);
/// otherwise note that this executable can launch sandboxes, and return.
///
/// Call it first thing in `main`, before any thread or async runtime starts: entering a user
/// namespace needs a single-threaded process.
///
/// ```no_run
/// // First in the host's `main`:
/// mcp_runtime::sandbox::run_if_launcher();
/// // ... then the host's own work, its async runtime, its threads.
/// ```
pub fn run_if_launcher() {
    #[cfg(target_os = "linux")]
    launcher::run_if_launcher();
    WIRED.store(true, Ordering::Release);
}

/// Whether the host called [`run_if_launcher`].
pub fn launcher_wired() -> bool {
    WIRED.load(Ordering::Acquire)
}

/// Refuse a sandboxed server where no sandbox can be had (every OS but Linux).
#[cfg(not(target_os = "linux"))]
pub(crate) fn unsupported() -> SandboxError {
    SandboxError::Unsupported(std::env::consts::OS)
}
