//! Command-line definitions (clap). Each subcommand's behaviour lives in its own file under
//! `cmd/`; this file only says what can be typed.

use clap::{Args, Parser, Subcommand};

use crate::flags::{GlobalArgs, WithGlobal};

/// See, test and call every MCP server from every AI tool you use.
#[derive(Debug, Parser)]
#[command(
    name = "mcpr",
    version,
    about,
    propagate_version = true,
    after_help = crate::exit::HELP
)]
pub(crate) struct Cli {
    /// The discovery flags given before the command (`mcpr --config FILE tools`).
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per run: the size of the largest variant (the mock's many knobs) does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Start three demo servers, connect, list and call tools, and shut everything down.
    Demo(WithGlobal<crate::cmd::demo::DemoArgs>),
    /// List the tools of the configured servers.
    Tools(WithGlobal<crate::cmd::tools::ToolsArgs>),
    /// Call one tool and print its result.
    Call(WithGlobal<crate::cmd::call::CallArgs>),
    /// The tasks of a server: a task's state, its result, cancelling it, or the list.
    Task(WithGlobal<crate::cmd::task::TaskArgs>),
    /// Read one resource of a server and print it.
    Resource(WithGlobal<crate::cmd::read::ResourceArgs>),
    /// Get one prompt of a server, filled with its arguments, and print it.
    Prompt(WithGlobal<crate::cmd::read::PromptArgs>),
    /// List the skills a server offers, or load one (verified against the listing) and print
    /// its SKILL.md.
    Skill(WithGlobal<crate::cmd::read::SkillArgs>),
    /// List every MCP server of every AI tool, with its source and state.
    #[command(visible_alias = "list")]
    Servers(WithGlobal<crate::cmd::servers::ServersArgs>),
    /// Show one server in detail: command or URL, environment, file, state.
    Get(WithGlobal<crate::cmd::servers::GetArgs>),
    /// Trust the project's MCP config files so that their servers may start.
    Trust(WithGlobal<crate::cmd::trust::TrustArgs>),
    /// Find servers in an MCP Registry (`search`, `show`); add one with `add --from-registry`.
    Registry(WithGlobal<crate::cmd::registry::RegistryArgs>),
    /// Add a server to mcpr's own config (by hand, or from an MCP Registry), or with `--to HOST`
    /// to another host's.
    Add(WithGlobal<crate::cmd::edit::AddArgs>),
    /// Add a server to mcpr's own config from its JSON entry.
    AddJson(WithGlobal<crate::cmd::edit::AddJsonArgs>),
    /// Copy servers from another host's config (Claude Code, Cursor, VS Code, Codex, Gemini
    /// CLI) to mcpr's, or to another host's with `--to`.
    AddFrom(WithGlobal<crate::cmd::hosts::AddFromArgs>),
    /// Remove a server from mcpr's own config.
    Remove(WithGlobal<crate::cmd::edit::RemoveArgs>),
    /// Turn a server on (any tool's; recorded in mcpr's user config).
    Enable(WithGlobal<crate::cmd::edit::ToggleArgs>),
    /// Turn a server off (any tool's; recorded in mcpr's user config).
    Disable(WithGlobal<crate::cmd::edit::ToggleArgs>),
    /// Log in to a remote server that uses OAuth (browser flow; tokens stored and renewed).
    Login(WithGlobal<crate::cmd::login::LoginArgs>),
    /// Forget the stored OAuth login of a server.
    Logout(WithGlobal<crate::cmd::login::LogoutArgs>),
    /// Show the state of every configured server: connection, tools, protocol, errors.
    Status(WithGlobal<crate::cmd::status::StatusArgs>),
    /// An interactive session: call tools by name, manage servers with /mcp commands.
    Shell(WithGlobal<crate::cmd::shell::ShellArgs>),
    /// Serve every configured server's tools as one MCP server (stdio or streamable HTTP).
    Serve(WithGlobal<crate::cmd::serve::ServeArgs>),
    /// Run a mock MCP server (for tests, benchmarks and trying out agents).
    Mock(mcp_mock::MockArgs),
    /// Print the completion script of a shell (bash, zsh or fish).
    Completions(CompletionsArgs),
    /// Play a client scenario of the MCP conformance suite against URL (used by the suite).
    #[command(hide = true)]
    Conformance(crate::cmd::conformance::ConformanceArgs),
}

/// Arguments of `mcpr completions`.
#[derive(Debug, Args)]
#[command(
    after_help = "Install:\n  bash: mcpr completions bash > ~/.local/share/bash-completion/completions/mcpr\n  \
zsh:  mcpr completions zsh > ~/.zfunc/_mcpr   (with `fpath+=~/.zfunc` before `compinit` in ~/.zshrc)\n  \
fish: mcpr completions fish > ~/.config/fish/completions/mcpr.fish"
)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete in.
    pub shell: clap_complete::Shell,
}

/// When the shell is asking for completions (`COMPLETE=<shell> mcpr -- ...`), answer from the
/// command line's definition and exit; otherwise return. Here rather than in `complete`, which
/// the commands' arguments use: that keeps `complete` a leaf.
pub(crate) fn answer_completion_if_asked() {
    clap_complete::CompleteEnv::with_factory(|| {
        use clap::CommandFactory as _;
        Cli::command()
    })
    .var(crate::complete::COMPLETE_VAR)
    .complete();
}
