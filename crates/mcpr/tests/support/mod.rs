//! Test support of the CLI's tests: the shared helpers of `mcp-testkit`, plus what needs the
//! `mcpr` binary (which cargo builds for this package's tests only).

#![allow(dead_code)] // each test binary uses a different subset

pub(crate) mod pty;
pub(crate) mod sdk;
pub(crate) mod stateless;
pub(crate) mod suite;

pub(crate) use mcp_testkit::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mcp_runtime::config::ServerConfig;

/// The `mcpr` binary under test.
pub(crate) const MCPR: &str = env!("CARGO_BIN_EXE_mcpr");

/// `mcpr ARGS` in an empty home and its `project` directory, so the configs of this machine's
/// AI tools stay out.
pub(crate) fn mcpr_command(args: &[&str]) -> Command {
    let home = isolated_home();
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    isolate_env(&mut command, &home);
    command
}

/// [`mcpr_command`] run to its end with no input.
pub(crate) fn mcpr(args: &[&str]) -> Output {
    mcpr_command(args)
        .stdin(Stdio::null())
        .output()
        .expect("run mcpr")
}

/// Output bytes as text (lossy: a test shows whatever was written).
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Write `dir/mcp.json` (`{"mcpServers": ...}`, pretty-printed) whose servers run `mcpr mock`
/// with the given flags; returns its path.
pub(crate) fn config_file(dir: &Path, servers: &[(&str, &[&str])]) -> PathBuf {
    let mut map = serde_json::Map::new();
    for (name, flags) in servers {
        let mut args = vec!["mock".to_owned()];
        args.extend(flags.iter().map(|f| f.to_string()));
        map.insert(
            name.to_string(),
            serde_json::json!({"command": MCPR, "args": args}),
        );
    }
    let path = dir.join("mcp.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&serde_json::json!({"mcpServers": map})).unwrap(),
    )
    .unwrap();
    path
}

/// A stdio config that runs `mcpr mock` with the given flags (the CLI's own wrapper of the
/// mock, so that these tests cover it too).
pub(crate) fn mock(flags: &[&str]) -> ServerConfig {
    let mut args = vec!["mock".to_owned()];
    args.extend(flags.iter().map(|f| f.to_string()));
    ServerConfig::stdio(MCPR, args)
}
