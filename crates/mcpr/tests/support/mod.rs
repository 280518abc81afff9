//! Test support of the CLI's tests: the shared helpers of `mcp-testkit`, plus what needs the
//! `mcpr` binary (which cargo builds for this package's tests only).

#![allow(dead_code)] // each test binary uses a different subset

pub mod sdk;
pub mod suite;

pub use mcp_testkit::*;

use mcp_runtime::config::ServerConfig;

/// The `mcpr` binary under test.
pub const MCPR: &str = env!("CARGO_BIN_EXE_mcpr");

/// A stdio config that runs `mcpr mock` with the given flags (the CLI's own wrapper of the
/// mock, so that these tests cover it too).
pub fn mock(flags: &[&str]) -> ServerConfig {
    let mut args = vec!["mock".to_owned()];
    args.extend(flags.iter().map(|f| f.to_string()));
    ServerConfig::stdio(MCPR, args)
}
