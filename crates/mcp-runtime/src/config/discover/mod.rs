//! Discovery: every AI tool's MCP config, merged by priority, with provenance,
//! trust, enablement and warnings that name file, line and column.
//!
//! Order: `--config` files, then each provider of `docs/hosts.md` by priority (project files before
//! user files inside a provider; Claude Code: local, project, user). The first *trusted*
//! definition of a name wins; later ones are kept as `shadowed by <provider>` for display. A
//! definition that is pending approval does not claim its name, so a cloned repository can
//! neither start a server nor hide the user's own server of the same name.
//!
//! Trust binds to the project's config files and to every file their servers read (`envFile`,
//! `{file:...}`). A definition from the user's own files that reads a file inside the project
//! waits for the project's trust as well, so a cloned repository cannot reach a server through
//! a `.env` that a user config names with `${workspaceFolder}`.
//!
//! Trust binds as well to the files inside the project that a server runs: its `command` (as
//! written with `..` resolved, against its `cwd` or `PATH`, and once symlinks are resolved), and
//! the script a well-known interpreter is given (see
//! [`INTERPRETERS`](super::trust::INTERPRETERS)). A definition from the user's own files that
//! would run such a file waits for the project's trust, since the file arrived with the
//! repository; once trusted, a change of the file's content asks again. The same holds for the
//! files and directories that a server's loader variables (`NODE_OPTIONS=--require ./hook.js`,
//! `PYTHONPATH=./lib`, see [`LOADER_VARIABLES`](super::trust::LOADER_VARIABLES)) make it load.
//!
//! Enablement of the winner: the mcpr user file's `disabledServers` beats its `enabledServers`,
//! which beats the entry's own `enabled: false` (or a host's rejection such as Claude's
//! `disabledMcpjsonServers`).
//!
//! ```
//! use mcp_runtime::config::{DiscoveryOptions, EnvSource, load_all_mcp_configs};
//! let home = tempfile::tempdir().unwrap();
//! let project = tempfile::tempdir().unwrap();
//! std::fs::write(home.path().join(".claude.json"),
//!     r#"{"mcpServers": {"echo": {"command": "mcpr", "args": ["mock"]}}}"#).unwrap();
//! let options = DiscoveryOptions::default()
//!     .with_home(Some(home.path().to_owned()))
//!     .with_env(EnvSource::map([("PATH", "/usr/bin")]))
//!     .with_trust_store(Some(home.path().join("trust.json")));
//! let found = load_all_mcp_configs(project.path(), &options);
//! assert_eq!(found.sources["echo"].provider_name, "Claude Code");
//! assert!(found.configs.contains_key("echo"));
//! ```

mod itself;
mod merge;
mod scan;
mod types;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use super::ConfigError;
use super::Level;
use super::providers::{Ctx, PROVIDERS};
use super::trust::{Evaluation, ProjectTrust};
pub use types::{
    DiscoveredServer, Discovery, DiscoveryFailure, DiscoveryOptions, EnvSource, HARD_FAILURE_PATH,
    PendingReason, ServerSource, ServerState, Warning,
};

/// A provider of `docs/hosts.md`, for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderInfo {
    /// Stable id.
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// Higher wins a name.
    pub priority: u32,
}

/// Every provider, highest priority first.
pub fn provider_list() -> Vec<ProviderInfo> {
    PROVIDERS
        .iter()
        .map(|p| ProviderInfo {
            id: p.id,
            name: p.name,
            priority: p.priority,
        })
        .collect()
}

/// Discovery for the process's current directory with default options.
pub fn discover_mcp_servers() -> Discovery {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    load_all_mcp_configs(&cwd, &DiscoveryOptions::default())
}

/// Read every config source for the project `cwd`. Never panics: a failure of
/// discovery as a whole returns no servers and a [`DiscoveryFailure`] at [`HARD_FAILURE_PATH`].
pub fn load_all_mcp_configs(cwd: &Path, options: &DiscoveryOptions) -> Discovery {
    match catch_unwind(AssertUnwindSafe(|| run(cwd, options))) {
        Ok(Ok(discovery)) => discovery,
        Ok(Err(error)) => Discovery::failed(cwd.to_owned(), error),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "internal error".to_owned());
            Discovery::failed(cwd.to_owned(), message)
        }
    }
}

/// Trust the project's config files as they are now (`mcpr trust`). Returns the new state;
/// a project without config files is left alone (`NoProjectConfig`). The decision itself is
/// [`super::trust`]'s: this runs discovery to know which files to trust.
pub fn trust_project(cwd: &Path, options: &DiscoveryOptions) -> Result<ProjectTrust, ConfigError> {
    let options = DiscoveryOptions {
        enable_project_config: true,
        trust_project: false,
        ..options.clone()
    };
    trust_discovered(load_all_mcp_configs(cwd, &options))
}

/// Trust the project's files exactly as `found` saw them: what a person reviewed (`mcpr
/// trust` shows the changes, then asks) is what gets trusted, and a file that changed while
/// they read asks again. `found` is a discovery run with project config on and without
/// `--trust-project`.
pub fn trust_discovered(found: Discovery) -> Result<ProjectTrust, ConfigError> {
    if let Some(failure) = found.failure {
        return Err(ConfigError::Discovery {
            path: failure.path,
            message: failure.error,
        });
    }
    if found.project.hash.is_none() {
        return Ok(found.project);
    }
    let store = found
        .project
        .store
        .clone()
        .ok_or_else(|| ConfigError::Discovery {
            path: HARD_FAILURE_PATH.into(),
            message: "cannot locate the trust store: neither XDG_DATA_HOME nor HOME is set".into(),
        })?;
    found.project.record(&found.cwd, &store)
}

/// Forget the trust of the project; `false` when it was not trusted.
pub fn revoke_project_trust(cwd: &Path, options: &DiscoveryOptions) -> Result<bool, ConfigError> {
    super::trust::revoke_project(cwd, options.trust_store_path().as_deref())
}

/// The files discovery reads for the project `cwd` with `options`, whether they exist yet or
/// not: the `--config` files, every host's config files (user and project level, as enabled),
/// and the trust store. What a config watcher polls; the files servers read (`envFile`,
/// `{file:}`) are in each [`DiscoveredServer::reads`].
pub fn config_files(cwd: &Path, options: &DiscoveryOptions) -> Vec<PathBuf> {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_owned());
    let cwd_real = std::fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone());
    let home = options.home_dir();
    let cx = Ctx {
        cwd: &cwd,
        cwd_real: &cwd_real,
        home: home.as_deref(),
        env: &options.env,
    };
    let mut files = options.explicit_files.clone();
    if !options.strict {
        for provider in PROVIDERS {
            for spec in (provider.files)(&cx) {
                if spec.level == Level::Project && !options.enable_project_config {
                    continue;
                }
                files.push(spec.path);
            }
        }
    }
    files.extend(options.trust_store_path());
    let mut seen = std::collections::HashSet::new();
    files.retain(|file| seen.insert(file.clone()));
    files
}

fn run(cwd: &Path, options: &DiscoveryOptions) -> Result<Discovery, String> {
    let cwd = if cwd.is_absolute() {
        cwd.to_owned()
    } else {
        std::env::current_dir()
            .map_err(|e| {
                format!(
                    "cannot resolve the project directory {}: {e}",
                    crate::fsutil::display_path(cwd)
                )
            })?
            .join(cwd)
    };
    let cwd_real = std::fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone());
    let home = options.home_dir();
    let home_real = home
        .as_ref()
        .map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.clone()));
    let cx = Ctx {
        cwd: &cwd,
        cwd_real: &cwd_real,
        home: home.as_deref(),
        env: &options.env,
    };
    let mut scan = scan::scan(cx, options);
    let homes: Vec<&Path> = home
        .iter()
        .chain(&home_real)
        .map(PathBuf::as_path)
        .collect();
    let (prepared, extra, read) = merge::prepare(&mut scan, options, &homes);
    let mut hashed = std::mem::take(&mut scan.project_files);
    // Config files and the files their servers read are shown in a review; code is not.
    let shown: Vec<PathBuf> = hashed.iter().map(|(p, _)| p.clone()).chain(read).collect();
    for (path, bytes) in extra {
        if !hashed.iter().any(|(p, _)| *p == path) {
            hashed.push((path, bytes));
        }
    }
    let evaluation = Evaluation {
        cwd: &cwd,
        root: &cwd_real,
        home: home_real.as_deref(),
        enable_project_config: options.enable_project_config,
        trust_for_run: options.trust_project,
        store: options.trust_store_path(),
    };
    let (project, warning) = evaluation.run(hashed, &shown);
    if let Some((store, message)) = warning {
        scan.warnings.push(Warning {
            file: Some(store),
            line: None,
            column: None,
            server: None,
            message,
        });
    }
    Ok(merge::merge(cwd.clone(), project, scan, prepared))
}
