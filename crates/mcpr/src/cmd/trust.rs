//! `mcpr trust [--revoke]` (`mcpr trust SERVER` accepts a server's changed tools, see
//! `trust_pins`): trust the project's MCP config files, and the files their servers
//! read (`envFile`, `{file:...}`, or a project file that a user's own config reads), as they are
//! now, so the servers may start; a later change to any of them asks again. Before it trusts,
//! it shows what changed since the last trust (see `trust_review`) and, in a terminal, asks.

use mcp_runtime::config::{
    Discovery, ProjectTrustState, load_all_mcp_configs, revoke_project_trust, trust_discovered,
};

use std::io::IsTerminal;

use crate::flags::GlobalArgs;
use mcp_runtime::fsutil::display_path;

use crate::discovery::print_warnings;
use crate::exit::{self, Failure, Outcome};
use crate::term;

/// Arguments of `mcpr trust`.
#[derive(Debug, clap::Args)]
pub(crate) struct TrustArgs {
    /// A server: show how its tool definitions differ from their pins, and accept them.
    #[arg(add = clap_complete::engine::ArgValueCompleter::new(crate::complete::server_names))]
    pub(crate) server: Option<String>,
    /// Trust (or with SERVER, accept) without asking, after showing what changed.
    #[arg(long)]
    pub(crate) yes: bool,
    /// Forget the trust of this project instead.
    #[arg(long, conflicts_with = "server")]
    pub revoke: bool,
}

/// `mcpr trust`.
pub(crate) async fn run(global: &GlobalArgs, args: TrustArgs) -> Outcome {
    if let Some(server) = &args.server {
        return crate::cmd::trust_pins::run(global, server, args.yes).await;
    }
    let flags = crate::discovery::CliFlags::from(global);
    let cwd = flags.cwd();
    let options = flags.options();
    if args.revoke {
        return match revoke_project_trust(&cwd, &options) {
            Ok(true) => {
                println!(
                    "{} is no longer trusted; its project servers will wait for approval",
                    display_path(&cwd)
                );
                Ok(exit::OK)
            }
            Ok(false) => {
                println!("{} was not trusted", display_path(&cwd));
                Ok(exit::OK)
            }
            Err(e) => Err(Failure::internal(e)),
        };
    }
    let Some(reviewed) = review(global)? else {
        return Ok(exit::OK);
    };
    // Asked only in a terminal: a script that runs `mcpr trust` has decided already.
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !args.yes && interactive && !crate::cmd::trust_review::confirm("Trust these files?") {
        println!("Nothing trusted; the project's servers keep waiting.");
        return Ok(exit::OK);
    }
    record(reviewed)?;
    Ok(exit::OK)
}

/// Show what trusting the project would change (the files that changed since it was last
/// trusted, diffed, or the files to trust, and the servers that would start) and return the
/// discovery it shows; `None` (after saying why) when there is nothing to trust.
pub(crate) fn review(global: &GlobalArgs) -> Result<Option<Discovery>, Failure> {
    let flags = crate::discovery::CliFlags::from(global);
    let cwd = flags.cwd();
    let options = flags.options();
    // What the project would start, as things stand (project config on, not yet trusted).
    let before = load_all_mcp_configs(
        &cwd,
        &options
            .clone()
            .with_enable_project_config(true)
            .with_trust_project(false),
    );
    if let Some(failure) = &before.failure {
        return Err(Failure::usage(format!(
            "{}: {}",
            failure.path, failure.error
        )));
    }
    print_warnings(&before);
    match before.project.state {
        _ if before.project.files.is_empty() => {
            println!(
                "Nothing to trust: {} has no MCP config files of its own.",
                display_path(&cwd)
            );
            return Ok(None);
        }
        ProjectTrustState::Home => {
            println!(
                "{} is your home directory: its config files are already trusted.",
                display_path(&cwd)
            );
            return Ok(None);
        }
        ProjectTrustState::Trusted => {
            println!(
                "{} is already trusted with its current config files.",
                display_path(&cwd)
            );
            return Ok(None);
        }
        _ => {}
    }
    // Names, commands, file names and lines come from the project being reviewed: escaped, so
    // that an escape sequence cannot hide or rewrite what the person is trusting.
    crate::cmd::trust_review::print(&before);
    Ok(Some(before))
}

/// Trust the project's files as `reviewed` saw them, and say which.
pub(crate) fn record(reviewed: Discovery) -> Result<(), Failure> {
    let project = trust_discovered(reviewed).map_err(Failure::internal)?;
    println!(
        "Trusted {} with these files:",
        term::line(&display_path(&project.root))
    );
    for file in &project.files {
        println!("  {}", term::line(&display_path(file)));
    }
    println!(
        "A change to any of these files asks for approval again (`mcpr trust --revoke` to undo)."
    );
    Ok(())
}
