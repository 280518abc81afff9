//! Shared test helpers: the mock server as a config, process checks, and external peers
//! installed from the package registries into `target/peers` on first use.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mcp_runtime::config::ServerConfig;

/// The `mcpr` binary under test.
pub const MCPR: &str = env!("CARGO_BIN_EXE_mcpr");

/// A stdio config that runs `mcpr mock` with the given flags.
pub fn mock(flags: &[&str]) -> ServerConfig {
    let mut args = vec!["mock".to_owned()];
    args.extend(flags.iter().map(|f| f.to_string()));
    ServerConfig::stdio(MCPR, args)
}

/// A fresh temporary directory for one test.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("mcpr-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create temp dir")
}

/// Whether `pid` is a live process (zombies count as dead: they only wait to be reaped).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Poll until `pid` is gone or `bound` passes; returns whether it is gone.
pub fn wait_dead(pid: u32, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Read a pid written by the mock (`--pid-file`, `--grandchild`), waiting for it to appear.
pub fn read_pid(path: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where external peers are installed (`target/peers`).
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("peers")
}

/// Pinned npm packages used as peers (see shared/PEERS.md).
pub const NPM_PEERS: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
];

/// Install the pinned npm peers once (into `target/peers/npm`) and return the entry point of
/// `server-everything`. Concurrent test processes serialise on a lock file.
pub fn server_everything() -> PathBuf {
    let root = peers_dir().join("npm");
    let entry = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    npm_install_once(&root, &entry);
    entry
}

fn npm_install_once(root: &Path, marker: &Path) {
    std::fs::create_dir_all(root).expect("create peers dir");
    let lock_path = root.join(".install.lock");
    let lock = std::fs::File::create(&lock_path).expect("create lock file");
    // SAFETY: flock on a file descriptor we own; released when `lock` is dropped.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&lock);
    assert_eq!(
        unsafe { libc::flock(fd, libc::LOCK_EX) },
        0,
        "lock {}",
        lock_path.display()
    );
    if marker.exists() {
        return;
    }
    let status = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(root)
        .args(NPM_PEERS)
        .status()
        .expect("run npm (Node.js and npm are needed for the interop tests)");
    assert!(status.success(), "npm install of {NPM_PEERS:?} failed");
    assert!(
        marker.exists(),
        "{} missing after npm install",
        marker.display()
    );
}
