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
    /// Use only the `--config` files, not the configs of installed AI tools.
    #[arg(long, global = true)]
    pub strict_config: bool,
    /// Ignore project-level configs (files in the project directory).
    #[arg(long, global = true)]
    pub no_project: bool,
    /// Trust the project's own configs for this run (see `mcpr trust`).
    #[arg(long, global = true)]
    pub trust_project: bool,
}

impl GlobalArgs {
    /// The discovery flags of these arguments.
    pub fn discovery_flags(&self) -> crate::discovery::CliFlags {
        crate::discovery::CliFlags {
            cwd: self.cwd.clone(),
            config: self.config.clone(),
            strict_config: self.strict_config,
            no_project: self.no_project,
            trust_project: self.trust_project,
        }
    }
}

// Parsed once per run: the size of the largest variant (the mock's many knobs) does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start three demo servers, connect, list and call tools, and shut everything down.
    Demo(crate::cmd::demo::DemoArgs),
    /// List the tools of the configured servers.
    Tools(crate::cmd::tools::ToolsArgs),
    /// Call one tool and print its result.
    Call(crate::cmd::call::CallArgs),
    /// List every MCP server of every AI tool, with its source and state.
    Servers(crate::cmd::servers::ServersArgs),
    /// Trust the project's MCP config files so that their servers may start.
    Trust(crate::cmd::trust::TrustArgs),
    /// Find servers in an MCP Registry (`search`, `show`); add one with `add --from-registry`.
    Registry(crate::cmd::registry::RegistryArgs),
    /// Add a server to mcpr's own config (by hand, or from an MCP Registry).
    Add(crate::cmd::edit::AddArgs),
    /// Remove a server from mcpr's own config.
    Remove(crate::cmd::edit::RemoveArgs),
    /// Turn a server on (any tool's; recorded in mcpr's user config).
    Enable(crate::cmd::edit::ToggleArgs),
    /// Turn a server off (any tool's; recorded in mcpr's user config).
    Disable(crate::cmd::edit::ToggleArgs),
    /// Log in to a remote server that uses OAuth (browser flow; tokens stored and renewed).
    Login(crate::cmd::login::LoginArgs),
    /// Forget the stored OAuth login of a server.
    Logout(crate::cmd::login::LogoutArgs),
    /// Show the state of every configured server: connection, tools, protocol, errors.
    Status(crate::cmd::status::StatusArgs),
    /// An interactive session: call tools by name, manage servers with /mcp commands.
    Shell(crate::cmd::shell::ShellArgs),
    /// Serve every configured server's tools as one MCP server (stdio or streamable HTTP).
    Serve(crate::cmd::serve::ServeArgs),
    /// Run a mock MCP server (for tests, benchmarks and trying out agents).
    Mock(crate::mock::MockArgs),
    /// Play a client scenario of the MCP conformance suite against URL (used by the suite).
    #[command(hide = true)]
    Conformance(crate::cmd::conformance::ConformanceArgs),
}
