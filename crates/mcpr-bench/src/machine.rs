//! The machine and the versions a run used.

use std::fmt::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::peers::Peers;
use crate::proc;

/// The first line printed by `program args`, or why there is none.
pub(crate) fn version_of(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> String {
    match proc::run_bounded(Command::new(program).args(args), Duration::from_secs(20)) {
        Ok(outcome) if outcome.success() => {
            let text = if outcome.stdout.trim().is_empty() {
                outcome.stderr
            } else {
                outcome.stdout
            };
            text.lines().next().unwrap_or("?").trim().to_owned()
        }
        Ok(outcome) => outcome.failure("version"),
        Err(e) => format!("not found ({e})"),
    }
}

fn proc_field(file: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':').or_else(|| l.split_once('=')))
        .map(|(_, v)| v.trim().trim_matches('"').to_owned())
}

/// The 1-, 5- and 15-minute load averages.
pub(crate) fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// A markdown description of the machine and every version involved.
pub(crate) fn describe(mcpr: &Path, peers: &Peers) -> String {
    let cpu = proc_field("/proc/cpuinfo", "model name").unwrap_or_else(|| "?".into());
    let logical = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| t.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0);
    let usable = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let ram = proc_field("/proc/meminfo", "MemTotal")
        .and_then(|v| {
            v.split_whitespace()
                .next()
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map(|kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0))
        .unwrap_or_else(|| "?".into());
    let os = proc_field("/etc/os-release", "PRETTY_NAME").unwrap_or_else(|| "Linux".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|t| t.trim().to_owned())
        .unwrap_or_else(|_| "?".into());
    let date = version_of("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);

    let mut out = String::new();
    let _ = writeln!(out, "- Date: {date}");
    let _ = writeln!(
        out,
        "- CPU: {cpu}; {usable} usable cores ({logical} logical CPUs in /proc/cpuinfo)"
    );
    let _ = writeln!(out, "- RAM: {ram}; OS: {os}, Linux {kernel}");
    let _ = writeln!(
        out,
        "- mcpr: `{}` ({}), built with {}",
        mcpr.display(),
        version_of(mcpr, &["--version"]),
        version_of("rustc", &["--version"])
    );
    let _ = writeln!(
        out,
        "- Node {}, npm {}, {}, {}",
        version_of("node", &["--version"]),
        version_of("npm", &["--version"]),
        version_of("python3", &["--version"]),
        version_of("valgrind", &["--version"])
    );
    match &peers.npm {
        Ok(npm) => {
            let _ = writeln!(
                out,
                "- Peers (npm, in `{}`): @modelcontextprotocol/sdk {}, server-everything {}, \
                 inspector-cli {}",
                npm.root.display(),
                npm.version("@modelcontextprotocol/sdk"),
                npm.version("@modelcontextprotocol/server-everything"),
                npm.version("@modelcontextprotocol/inspector-cli")
            );
        }
        Err(why) => {
            let _ = writeln!(out, "- Peers (npm): not installed: {why}");
        }
    }
    match &peers.python {
        Ok(python) => {
            let mcp = version_of(
                python,
                &[
                    "-c",
                    "import importlib.metadata as m; print(m.version('mcp'))",
                ],
            );
            let _ = writeln!(
                out,
                "- Peers (Python, in `{}`): mcp {mcp}",
                python
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(python)
                    .display()
            );
        }
        Err(why) => {
            let _ = writeln!(out, "- Peers (Python): not installed: {why}");
        }
    }
    match &peers.fastmcp {
        Ok(fastmcp) => {
            let _ = writeln!(
                out,
                "- Peer proxy (Python, in `{}`): {}",
                fastmcp
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(fastmcp)
                    .display(),
                crate::peers::PYTHON_FASTMCP
            );
        }
        Err(why) => {
            let _ = writeln!(out, "- Peer proxy (FastMCP): not installed: {why}");
        }
    }
    out
}
