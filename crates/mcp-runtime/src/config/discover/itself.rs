//! Entries that would start mcpr's own gateway over the same configs.
//!
//! The obvious way to give an agent every server through mcpr is to add `mcpr serve` to that
//! agent's config (`claude mcp add gw -- mcpr serve`). mcpr reads that same config, so the
//! gateway would start a gateway, which would start another, without bound. Such an entry is
//! skipped: its command resolves to an mcpr executable (by name, or the running program itself)
//! and it runs `serve` over the host configs. A gateway in front of chosen servers,
//! `mcpr serve --strict-config --config FILE`, reads only FILE and stays, unless FILE is the
//! very file that defines it.
//!
//! This guard reads the command line as written, so a wrapper script or `sh -c` hides the
//! gateway from it; the nesting depth that every process mcpr starts inherits (see
//! [`crate::nesting`]) stops those.

use std::path::{Path, PathBuf};

use super::super::StdioConfig;
use super::super::providers::Ctx;
use super::super::trust::run_files;

/// The name of mcpr's executable.
const MCPR: &str = "mcpr";

/// Whether starting `stdio`, defined in `defined_in`, would run an mcpr gateway that reads the
/// configs this discovery reads.
pub(super) fn starts_gateway_over_same_configs(
    stdio: &StdioConfig,
    defined_in: &Path,
    cx: &Ctx<'_>,
    process_cwd: Option<&Path>,
) -> bool {
    if !runs_mcpr(stdio, cx, process_cwd) {
        return false;
    }
    let args = McprArgs::read(&stdio.args);
    if args.command.as_deref() != Some("serve") {
        return false;
    }
    if !args.strict_config {
        return true;
    }
    // `--config` files are relative to the gateway's own directory.
    let base = match (&stdio.cwd, process_cwd) {
        (Some(cwd), _) if cwd.is_absolute() => cwd.clone(),
        (Some(cwd), Some(dir)) => dir.join(cwd),
        (None, Some(dir)) => dir.to_owned(),
        _ => cx.cwd.to_owned(),
    };
    let defining = std::fs::canonicalize(defined_in).ok();
    args.config
        .iter()
        .any(|file| std::fs::canonicalize(base.join(file)).ok() == defining && defining.is_some())
}

/// Whether the program of `stdio` is an mcpr executable: named `mcpr` as written or once
/// resolved (a symlink named otherwise), or the very program running now.
fn runs_mcpr(stdio: &StdioConfig, cx: &Ctx<'_>, process_cwd: Option<&Path>) -> bool {
    if is_mcpr_name(Path::new(&stdio.command)) {
        return true;
    }
    let running = std::env::current_exe()
        .ok()
        .and_then(|exe| std::fs::canonicalize(exe).ok());
    // Only the program: without a known interpreter, `run_files` names nothing else.
    let program_only = StdioConfig {
        args: Vec::new(),
        ..stdio.clone()
    };
    run_files(&program_only, cx, process_cwd)
        .iter()
        .filter_map(|candidate| std::fs::canonicalize(candidate).ok())
        .any(|real| is_mcpr_name(&real) || running.as_ref() == Some(&real))
}

/// Whether a path's file name is mcpr's (`mcpr`, or `mcpr.exe`).
fn is_mcpr_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name == MCPR || name.strip_suffix(".exe") == Some(MCPR))
}

/// What an mcpr command line says about discovery.
#[derive(Debug, Default, PartialEq, Eq)]
struct McprArgs {
    /// The subcommand (`serve`, `mock`, ...).
    command: Option<String>,
    /// `--strict-config` was given.
    strict_config: bool,
    /// The `--config` files, as written.
    config: Vec<PathBuf>,
}

impl McprArgs {
    /// Read mcpr's arguments the way its parser does for what matters here: the discovery
    /// flags are global (before or after the subcommand), `--cwd` and `--config` take a value
    /// (`--config FILE` or `--config=FILE`), and the subcommand is the first other word.
    fn read(args: &[String]) -> McprArgs {
        let mut read = McprArgs::default();
        let mut words = args.iter();
        while let Some(word) = words.next() {
            if word == "--" {
                break;
            }
            match word.as_str() {
                "--strict-config" => read.strict_config = true,
                "--config" => read.config.extend(words.next().map(PathBuf::from)),
                "--cwd" => {
                    words.next();
                }
                _ => {
                    if let Some(file) = word.strip_prefix("--config=") {
                        read.config.push(PathBuf::from(file));
                    } else if !word.starts_with('-') && read.command.is_none() {
                        read.command = Some(word.clone());
                    }
                }
            }
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(args: &[&str]) -> McprArgs {
        McprArgs::read(&args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn the_subcommand_is_the_first_word_that_is_no_flag_value() {
        assert_eq!(read(&["serve"]).command.as_deref(), Some("serve"));
        assert_eq!(
            read(&["--cwd", "serve", "mock"]).command.as_deref(),
            Some("mock")
        );
        assert_eq!(
            read(&["--config", "a.json", "serve", "--http", "127.0.0.1:1"])
                .command
                .as_deref(),
            Some("serve")
        );
        assert_eq!(
            read(&["mock", "--tool", "serve"]).command.as_deref(),
            Some("mock")
        );
    }

    #[test]
    fn discovery_flags_count_before_and_after_the_subcommand() {
        let scoped = read(&["serve", "--strict-config", "--config=gw.json"]);
        assert!(scoped.strict_config);
        assert_eq!(scoped.config, [PathBuf::from("gw.json")]);
        let before = read(&["--strict-config", "--config", "a.json", "serve"]);
        assert!(before.strict_config);
        assert_eq!(before.config, [PathBuf::from("a.json")]);
        assert!(!read(&["serve", "--", "--strict-config"]).strict_config);
    }

    #[test]
    fn mcpr_is_recognised_by_its_file_name() {
        assert!(is_mcpr_name(Path::new("mcpr")));
        assert!(is_mcpr_name(Path::new("/usr/local/bin/mcpr")));
        assert!(is_mcpr_name(Path::new("mcpr.exe")));
        assert!(!is_mcpr_name(Path::new("mcpr-bench")));
        assert!(!is_mcpr_name(Path::new("/opt/mcpr/bin/node")));
    }
}
