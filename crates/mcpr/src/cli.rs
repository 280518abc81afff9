//! Command-line definitions (clap). Each subcommand's behaviour lives in its own file under
//! `cmd/`; this file only says what can be typed.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// See, test and call every MCP server from every AI tool you use.
#[derive(Debug, Parser)]
#[command(name = "mcpr", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command understands.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Project directory (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Read MCP servers from this file (`{"mcpServers": {...}}`); repeatable, highest priority.
    #[arg(long = "config", global = true, value_name = "FILE")]
    pub config: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start three demo servers, connect, list and call tools, and shut everything down.
    Demo(crate::cmd::demo::DemoArgs),
    /// List the tools of the configured servers.
    Tools(crate::cmd::tools::ToolsArgs),
    /// Call one tool and print its result.
    Call(crate::cmd::call::CallArgs),
    /// Run a mock MCP server (for tests, benchmarks and trying out agents).
    Mock(crate::mock::MockArgs),
}
