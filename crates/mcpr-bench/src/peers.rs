//! The pinned peers, installed once into `target/peers` with the layout and locking of the
//! integration tests (`crates/mcp-testkit`): one directory per peer set, an exclusive
//! `flock` on `.install.lock` while installing, and a marker file once done. A peer that cannot
//! be installed is an error string that the rows needing it print; the run continues.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::proc;

/// npm packages of the bench (SDK, server, one-shot CLI), pinned.
pub(crate) const NPM_PACKAGES: &[&str] = &[
    "@modelcontextprotocol/sdk@1.32.2",
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/inspector-cli@1.0.3",
];

/// The Python SDK, pinned (same venv and marker as the tests).
pub(crate) const PYTHON_MCP: &str = "mcp==1.30.0";

/// FastMCP, pinned: `fastmcp run mcp.json` is a published stdio proxy of the servers of an MCP
/// config, a peer of `mcpr serve` in section 4. A venv of its own (it brings `mcp` 2).
pub(crate) const PYTHON_FASTMCP: &str = "fastmcp==4.1.6";

/// The installed npm peers.
#[derive(Debug, Clone)]
pub struct Npm {
    /// The npm prefix (`target/peers/bench-npm`); scripts resolve the SDK from here.
    pub root: PathBuf,
    /// `server-everything`'s entry point (`node EVERYTHING stdio`).
    pub everything: PathBuf,
    /// `inspector-cli`'s entry point (`node INSPECTOR ...`).
    pub inspector: PathBuf,
}

impl Npm {
    fn module(&self, name: &str) -> PathBuf {
        self.root.join("node_modules").join(name)
    }

    /// The installed version of npm package `name`.
    pub fn version(&self, name: &str) -> String {
        std::fs::read_to_string(self.module(name).join("package.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|json| json["version"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "?".into())
    }
}

/// Every peer, or why it is missing.
#[derive(Debug, Clone)]
pub struct Peers {
    pub npm: Result<Npm, String>,
    /// The venv's `python` with the MCP Python SDK.
    pub python: Result<PathBuf, String>,
    /// The `fastmcp` command of [`PYTHON_FASTMCP`]'s venv.
    pub fastmcp: Result<PathBuf, String>,
}

/// Install (or find) every peer under `dir`.
pub(crate) fn install(dir: &Path, bound: Duration) -> Peers {
    let npm = install_npm(&dir.join("bench-npm"), bound);
    if let Err(why) = &npm {
        eprintln!("  npm peers unavailable: {why}");
    }
    let python =
        install_venv(&dir.join("py1"), PYTHON_MCP, bound).map(|root| root.join("bin/python"));
    if let Err(why) = &python {
        eprintln!("  Python SDK unavailable: {why}");
    }
    let fastmcp = install_venv(&dir.join("bench-fastmcp"), PYTHON_FASTMCP, bound)
        .map(|root| root.join("bin/fastmcp"));
    if let Err(why) = &fastmcp {
        eprintln!("  FastMCP unavailable: {why}");
    }
    Peers {
        npm,
        python,
        fastmcp,
    }
}

/// `npm install` of [`NPM_PACKAGES`] into `root`, once. A separate prefix from the tests'
/// `target/peers/npm`, so that installing the bench's extra packages never rewrites a
/// `node_modules` a running test is reading.
fn install_npm(root: &Path, bound: Duration) -> Result<Npm, String> {
    let npm = Npm {
        root: root.to_owned(),
        everything: root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        inspector: root.join("node_modules/@modelcontextprotocol/inspector-cli/build/cli.js"),
    };
    let marker = root.join(".installed-bench");
    let wanted = NPM_PACKAGES.join("\n");
    let installed = |npm: &Npm| {
        std::fs::read_to_string(&marker).is_ok_and(|text| text == wanted)
            && npm.everything.exists()
            && npm.inspector.exists()
            && npm.module("@modelcontextprotocol/sdk").exists()
    };
    if installed(&npm) {
        return Ok(npm);
    }
    let _lock = lock(root, bound)?;
    if installed(&npm) {
        return Ok(npm);
    }
    eprintln!(
        "  installing {} into {}",
        NPM_PACKAGES.join(" "),
        root.display()
    );
    let outcome = proc::run_bounded(
        Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(root)
            .args(NPM_PACKAGES),
        bound,
    )
    .map_err(|e| format!("cannot run npm ({e}); Node.js and npm are needed"))?;
    if !outcome.success() {
        return Err(outcome.failure("npm install"));
    }
    for needed in [&npm.everything, &npm.inspector] {
        if !needed.exists() {
            return Err(format!("{} missing after npm install", needed.display()));
        }
    }
    std::fs::write(&marker, &wanted).map_err(|e| format!("write {}: {e}", marker.display()))?;
    Ok(npm)
}

/// A venv in `root` with `package` (`name==version`), once, marked done by the file
/// `.installed-name-version` (for [`PYTHON_MCP`], the tests' `python_mcp` makes the same venv
/// and marker).
fn install_venv(root: &Path, package: &str, bound: Duration) -> Result<PathBuf, String> {
    let marker = root.join(format!(".installed-{}", package.replace("==", "-")));
    if marker.exists() {
        return Ok(root.to_owned());
    }
    let _lock = lock(root, bound)?;
    if marker.exists() {
        return Ok(root.to_owned());
    }
    eprintln!("  installing {package} into {}", root.display());
    let outcome = proc::run_bounded(
        Command::new("python3").args(["-m", "venv"]).arg(root),
        bound,
    )
    .map_err(|e| format!("cannot run python3 ({e}); Python 3.10+ is needed"))?;
    if !outcome.success() {
        return Err(outcome.failure("python3 -m venv"));
    }
    let outcome = proc::run_bounded(
        Command::new(root.join("bin/pip")).args(["install", "-q", package]),
        bound,
    )
    .map_err(|e| format!("cannot run pip: {e}"))?;
    if !outcome.success() {
        return Err(outcome.failure(&format!("pip install {package}")));
    }
    std::fs::write(&marker, "").map_err(|e| format!("write {}: {e}", marker.display()))?;
    Ok(root.to_owned())
}

/// An exclusive lock on `root/.install.lock` (the tests lock the same file), waiting at most
/// `bound`; released when dropped.
fn lock(root: &Path, bound: Duration) -> Result<std::fs::File, String> {
    std::fs::create_dir_all(root).map_err(|e| format!("create {}: {e}", root.display()))?;
    let path = root.join(".install.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let deadline = Instant::now() + bound;
    let mut told = false;
    loop {
        // SAFETY: flock on a descriptor we own; released when `file` is dropped.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} stayed locked for {} s (another install running?)",
                path.display(),
                bound.as_secs()
            ));
        }
        if !told {
            eprintln!(
                "  waiting for {} (another install is running)",
                path.display()
            );
            told = true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
