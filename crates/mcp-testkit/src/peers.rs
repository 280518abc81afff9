//! External peers, installed on first use into `target/peers` from the package registries at
//! pinned versions (npm, PyPI), or from the system's packages (HAProxy): one installation per
//! machine, guarded by a lock file so parallel tests install once.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::target_dir;

/// Where external peers are installed (`target/peers`).
pub fn peers_dir() -> PathBuf {
    target_dir().join("peers")
}

/// Pinned npm packages used as peers.
pub const NPM_PEERS: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "@modelcontextprotocol/sdk@1.32.2",
];

/// Install the pinned npm peers once (into `target/peers/npm`) and return the entry point of
/// `server-everything`. Concurrent test processes serialise on a lock file.
pub fn server_everything() -> PathBuf {
    let root = peers_dir().join("npm");
    let entry = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    npm_install_once(&root, &entry, NPM_PEERS);
    entry
}

/// Install the pinned npm peers once and return the directory of the TypeScript MCP SDK
/// (`@modelcontextprotocol/sdk`), whose `dist/esm/...` modules client scripts import.
pub fn typescript_sdk() -> PathBuf {
    let root = peers_dir().join("npm");
    let sdk = root.join("node_modules/@modelcontextprotocol/sdk");
    npm_install_once(&root, &sdk.join("dist/esm/client/index.js"), NPM_PEERS);
    sdk
}

/// Install `packages` into `root` with npm unless `marker` exists already.
fn npm_install_once(root: &Path, marker: &Path, packages: &[&str]) {
    let _lock = install_lock(root);
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
        .args(packages)
        .status()
        .expect("run npm (Node.js and npm are needed for the interop tests)");
    assert!(status.success(), "npm install of {packages:?} failed");
    assert!(
        marker.exists(),
        "{} missing after npm install",
        marker.display()
    );
}

/// An exclusive lock on `root/.install.lock`, so that concurrent test processes install a
/// peer once; released when dropped.
fn install_lock(root: &Path) -> std::fs::File {
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
    lock
}

/// The MCP conformance suite (pinned).
pub const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.16";

/// Install the conformance suite once (into `target/peers/npm`) and return its entry point.
pub fn conformance_suite() -> PathBuf {
    let root = peers_dir().join("npm");
    let entry = root.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    npm_install_once(&root, &entry, &[CONFORMANCE]);
    entry
}

/// The conformance suite of protocol revision 2026-07-28 (pinned; needs Node 22).
pub const CONFORMANCE_2026: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/// Install the 2026-07-28 conformance suite once (into `target/peers/conformance-2026`, beside
/// the older suite it would otherwise replace) and return its entry point.
pub fn conformance_suite_2026() -> PathBuf {
    let root = peers_dir().join("conformance-2026");
    let entry = root.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    npm_install_once(&root, &entry, &[CONFORMANCE_2026]);
    entry
}

/// Node.js 22 from the npm registry's `node` package (the conformance suite needs Node 22 or
/// later), installed once into `target/peers/node22`. Returns the `bin` directory to put first
/// on `PATH`.
pub fn node22_bin() -> PathBuf {
    let root = peers_dir().join("node22");
    let bin = root.join("node_modules/node/bin");
    npm_install_once(&root, &bin.join("node"), &["node@22.23.3"]);
    bin
}

/// A Python virtualenv with the MCP Python SDK 1.30.0 (classic FastMCP servers), created once
/// in `target/peers/py1`. Returns its `python`.
pub fn python_mcp() -> PathBuf {
    let root = peers_dir().join("py1");
    let python = root.join("bin/python");
    let marker = root.join(".installed-mcp-1.30.0");
    let _lock = install_lock(&root);
    if marker.exists() {
        return python;
    }
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&root)
        .status()
        .expect("run python3 (Python 3.10+ is needed for the Python interop tests)");
    assert!(status.success(), "python3 -m venv failed");
    let status = Command::new(root.join("bin/pip"))
        .args(["install", "-q", "mcp==1.30.0"])
        .status()
        .expect("run pip");
    assert!(status.success(), "pip install mcp==1.30.0 failed");
    std::fs::write(&marker, "").expect("write install marker");
    python
}

/// The MCP Python SDK 2.3.0 (it speaks both eras), installed once into `target/peers/py2`.
/// Returns its `python`.
pub fn python_sdk_2() -> PathBuf {
    let root = peers_dir().join("py2");
    let python = root.join("bin/python");
    let marker = root.join(".installed-mcp-2.3.0");
    std::fs::create_dir_all(&root).expect("create peers dir");
    let _lock = install_lock(&root);
    if marker.exists() {
        return python;
    }
    let run = |command: &mut Command| {
        let status = command.status().expect("run python3 / pip");
        assert!(status.success(), "{command:?} failed");
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&root));
    run(Command::new(root.join("bin/pip")).args(["install", "-q", "mcp==2.3.0"]));
    std::fs::write(&marker, "").expect("write install marker");
    python
}

/// HAProxy, the load balancer (Debian's `haproxy` package, 2.6), installed with `apt-get` if
/// it is not there yet (CI starts clean; installing needs root). Returns the binary.
pub fn haproxy() -> PathBuf {
    let root = peers_dir().join("haproxy");
    let _lock = install_lock(&root);
    if let Some(found) = haproxy_binary() {
        return found;
    }
    let install = || {
        Command::new("apt-get")
            .args([
                "install",
                "-y",
                "-q",
                "-o",
                "DPkg::Lock::Timeout=300",
                "haproxy",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|status| status.success())
    };
    if !install() {
        // A fresh machine may not have the package lists yet.
        let _ = Command::new("apt-get").args(["update", "-q"]).status();
        assert!(
            install(),
            "apt-get install haproxy failed (the load-balancer tests need Debian's haproxy \
             package, installed as root)"
        );
    }
    haproxy_binary().expect("haproxy missing after apt-get install")
}

/// `haproxy` on `PATH` or in the system's `sbin` directories.
fn haproxy_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join("haproxy"))
        .find(|candidate| candidate.is_file())
}
