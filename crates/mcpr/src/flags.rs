//! The discovery flags every command that reads configs takes (`--cwd`, `--config`,
//! `--strict-config`, `--no-project`, `--trust-project`), before or after the command name, and
//! how the two places combine. A leaf: `cli.rs` puts them on the command line, the commands read
//! them, and neither needs the other for it.

use std::path::PathBuf;

use clap::Args;

/// Defines a struct of the discovery flags: where to look for MCP servers. Written once for
/// its two uses: before the command name, and after it (`global` there, so that a command's
/// own subcommands, e.g. `registry search`, take them too). Commands that read no config
/// (`mcpr mock`) do not take them at all.
macro_rules! discovery_flags {
    ($(#[$meta:meta])* $name:ident, global = $global:literal) => {
        $(#[$meta])*
        #[derive(Debug, Args, Clone, Default)]
        pub(crate) struct $name {
            /// Project directory (default: the current directory).
            #[arg(long, global = $global, value_name = "DIR")]
            pub cwd: Option<PathBuf>,
            /// Read MCP servers from this file (`{"mcpServers": {...}}`); repeatable, highest
            /// priority.
            #[arg(long = "config", global = $global, value_name = "FILE")]
            pub config: Vec<PathBuf>,
            /// Use only the `--config` files, not the configs of installed AI tools.
            #[arg(long, global = $global)]
            pub strict_config: bool,
            /// Ignore project-level configs (files in the project directory).
            #[arg(long, global = $global)]
            pub no_project: bool,
            /// Trust the project's own configs for this run (see `mcpr trust`).
            #[arg(long, global = $global)]
            pub trust_project: bool,
            /// Set from the command's own `--quiet`: discovery then says nothing of the
            /// configs' problems and notes (see [`GlobalArgs::with_quiet`]).
            #[arg(skip)]
            pub quiet: bool,
        }
    };
}

discovery_flags!(
    /// The discovery flags given before the command name (`mcpr --config FILE tools`), or
    /// both sets combined (see [`GlobalArgs::merged`]).
    GlobalArgs,
    global = false
);

discovery_flags!(
    /// The discovery flags given after the command name (`mcpr tools --config FILE`).
    CommandGlobalArgs,
    global = true
);

/// A command's own flags plus the discovery flags, which may follow the command name.
#[derive(Debug, Args)]
pub(crate) struct WithGlobal<T: Args> {
    /// The command's own flags.
    #[command(flatten)]
    pub args: T,
    /// The discovery flags given after the command name.
    #[command(flatten)]
    pub global: CommandGlobalArgs,
}

impl GlobalArgs {
    /// Whether any discovery flag is set.
    pub(crate) fn is_set(&self) -> bool {
        self.cwd.is_some()
            || !self.config.is_empty()
            || self.strict_config
            || self.no_project
            || self.trust_project
    }

    /// These flags (given before the command) combined with `after` (given after it), as clap
    /// combines one global flag typed at both places: a value given after the command name
    /// replaces the one given before, a switch is on if typed at either place.
    pub(crate) fn merged(&self, after: &CommandGlobalArgs) -> GlobalArgs {
        GlobalArgs {
            cwd: after.cwd.clone().or_else(|| self.cwd.clone()),
            config: if after.config.is_empty() {
                self.config.clone()
            } else {
                after.config.clone()
            },
            strict_config: self.strict_config || after.strict_config,
            no_project: self.no_project || after.no_project,
            trust_project: self.trust_project || after.trust_project,
            quiet: self.quiet || after.quiet,
        }
    }

    /// These flags for a command given `--quiet` (when `quiet`): it reports only the errors of
    /// the servers it works on, not the config problems of every other server.
    pub(crate) fn with_quiet(mut self, quiet: bool) -> GlobalArgs {
        self.quiet |= quiet;
        self
    }
}
