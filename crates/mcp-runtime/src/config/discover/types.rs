//! The public results of discovery and its options: what was found ([`Discovery`]), where each
//! definition comes from ([`ServerSource`]), what became of it ([`ServerState`]) and why it
//! waits ([`PendingReason`]), and the problems met ([`Warning`]).

use std::fmt;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::super::trust::{ProjectTrust, ProjectTrustState, default_store_path};
use super::super::{ConfigError, Level, RedactedServer, ServerConfig};
pub use crate::config::expand::EnvSource;

/// The path of the synthetic error returned when discovery fails as a whole.
pub const HARD_FAILURE_PATH: &str = ".mcp.json";

/// Where a server definition comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSource {
    /// Stable provider id (`mcpr`, `claude`, `codex`, ..., `config` for `--config`).
    pub provider_id: String,
    /// Display name (`Claude Code`, `Codex`, ...).
    pub provider_name: String,
    /// The file.
    pub path: PathBuf,
    /// User or project level.
    pub level: Level,
}

/// What became of one definition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// Will be started: it is in [`Discovery::configs`].
    Enabled,
    /// Turned off (`enabled: false`, `disabledServers`, a host's rejection).
    Disabled,
    /// From the project's files, which are not trusted yet (`mcpr trust`).
    PendingApproval,
    /// A higher-priority definition of the same name won.
    Shadowed {
        /// The provider name of the winner.
        by: String,
    },
    /// The definition is invalid or cannot be expanded; the reason names the field.
    Invalid(String),
    /// Skipped: it runs an mcpr gateway (`mcpr serve`) over these same configs, which would
    /// start itself again without bound. A gateway in front of chosen servers reads only its
    /// own files: `mcpr serve --strict-config --config FILE`.
    StartsItself,
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Enabled => f.write_str("enabled"),
            ServerState::Disabled => f.write_str("disabled"),
            ServerState::PendingApproval => f.write_str("pending approval"),
            ServerState::Shadowed { by } => write!(f, "shadowed by {by}"),
            ServerState::Invalid(reason) => write!(f, "invalid: {reason}"),
            ServerState::StartsItself => {
                f.write_str("skipped: runs `mcpr serve` over these same configs")
            }
        }
    }
}

/// Every definition seen, for display (`mcpr servers --all`).
#[derive(Debug, Clone)]
pub struct DiscoveredServer {
    /// The name exactly as written.
    pub name: String,
    /// Where it is defined.
    pub source: ServerSource,
    /// What became of it.
    pub state: ServerState,
    /// The validated but **unexpanded** config (`None` when invalid); show it through
    /// [`DiscoveredServer::redacted`], never with `Debug`.
    pub config: Option<ServerConfig>,
    /// 1-based line of the definition, when known.
    pub line: Option<usize>,
    /// 1-based column of the definition, when known.
    pub column: Option<usize>,
    /// Whether its file is trusted (user level, `--config`, or an approved project), and it
    /// neither reads nor runs a file of an untrusted project.
    pub trusted: bool,
    /// The files its values read besides its own config file (`envFile`, `{file:...}`), which
    /// trust binds to as well.
    pub reads: Vec<PathBuf>,
    /// The files inside the project that starting it would run (its program, or the script
    /// given to an interpreter), and the files and directories inside the project that its
    /// loader variables make it load code from (`NODE_OPTIONS=--require ./hook.js`,
    /// `PYTHONPATH=./lib`, see [`LOADER_VARIABLES`](crate::config::trust::LOADER_VARIABLES)),
    /// which trust binds to as well.
    pub runs: Vec<PathBuf>,
    /// Why it waits for approval, when there is more to say than "the project is not trusted".
    pub pending_reason: Option<PendingReason>,
}

/// Why a definition is pending approval, naming the files concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PendingReason {
    /// These files (its config file or files it reads) changed since the project was trusted.
    Changed(Vec<PathBuf>),
    /// A definition outside the project reads these files inside it, and the project is not
    /// trusted: their content must not reach a server before it is.
    ReadsProject(Vec<PathBuf>),
    /// A definition outside the project runs these files inside it (its program, the script
    /// given to an interpreter, or what a loader variable names), and the project is not
    /// trusted: they came with the project.
    RunsProject(Vec<PathBuf>),
}

impl PendingReason {
    /// The files concerned.
    pub fn files(&self) -> &[PathBuf] {
        match self {
            PendingReason::Changed(files)
            | PendingReason::ReadsProject(files)
            | PendingReason::RunsProject(files) => files,
        }
    }
}

impl fmt::Display for PendingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: Vec<String> = self
            .files()
            .iter()
            .map(|p| crate::fsutil::display_path(p))
            .collect();
        match self {
            PendingReason::Changed(_) => {
                write!(
                    f,
                    "changed since the project was trusted: {}",
                    files.join(", ")
                )
            }
            PendingReason::ReadsProject(_) => {
                write!(f, "reads {} from the untrusted project", files.join(", "))
            }
            PendingReason::RunsProject(_) => {
                write!(f, "runs {} from the untrusted project", files.join(", "))
            }
        }
    }
}

impl DiscoveredServer {
    /// The redacted display form, when the definition is valid.
    pub fn redacted(&self) -> Option<RedactedServer> {
        self.config.as_ref().map(RedactedServer::new)
    }

    /// `file:line:column` (or just the file).
    pub fn location(&self) -> String {
        location(Some(&self.source.path), self.line, self.column)
    }
}

fn location(file: Option<&Path>, line: Option<usize>, column: Option<usize>) -> String {
    let mut out = file.map(crate::fsutil::display_path).unwrap_or_default();
    if let Some(line) = line {
        out.push_str(&format!(":{line}"));
        if let Some(column) = column {
            out.push_str(&format!(":{column}"));
        }
    }
    out
}

/// A problem met during discovery; the rest of discovery went on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The file concerned.
    pub file: Option<PathBuf>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The server concerned, if any.
    pub server: Option<String>,
    /// What is wrong (no secret values).
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = location(self.file.as_deref(), self.line, self.column);
        if !at.is_empty() {
            write!(f, "{at}: ")?;
        }
        if let Some(server) = &self.server {
            write!(f, "server `{server}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Discovery failed as a whole: no servers, one synthetic error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryFailure {
    /// Always [`HARD_FAILURE_PATH`].
    pub path: String,
    /// What went wrong.
    pub error: String,
}

/// The result of discovery.
#[derive(Debug)]
pub struct Discovery {
    /// The project directory discovery ran for (absolute).
    pub cwd: PathBuf,
    /// Enabled, trusted, valid servers with values expanded, in priority order.
    pub configs: IndexMap<String, ServerConfig>,
    /// Where each server of `configs` comes from.
    pub sources: IndexMap<String, ServerSource>,
    /// Every definition seen, in priority order, with its state.
    pub servers: Vec<DiscoveredServer>,
    /// Per-server errors of winning definitions (invalid, unset variable, needs input).
    pub errors: IndexMap<String, ConfigError>,
    /// Problems met (parse errors with file:line:column, invalid entries, notes).
    pub warnings: Vec<Warning>,
    /// The project's config files and their trust.
    pub project: ProjectTrust,
    /// Set when discovery failed as a whole; everything else is then empty.
    pub failure: Option<DiscoveryFailure>,
}

impl Discovery {
    /// The definition that counts for `name`: the winner, else the first seen.
    pub fn winner(&self, name: &str) -> Option<&DiscoveredServer> {
        let mut all = self.servers.iter().filter(|s| s.name == name);
        let first = all.clone().next();
        all.find(|s| {
            !matches!(
                s.state,
                ServerState::Shadowed { .. } | ServerState::PendingApproval
            )
        })
        .or(first)
    }

    /// Servers waiting for `mcpr trust`.
    pub fn pending(&self) -> impl Iterator<Item = &DiscoveredServer> {
        self.servers
            .iter()
            .filter(|s| s.state == ServerState::PendingApproval)
    }

    pub(super) fn failed(cwd: PathBuf, error: String) -> Self {
        Discovery {
            project: ProjectTrust {
                root: cwd.clone(),
                files: Vec::new(),
                digests: Vec::new(),
                hash: None,
                changed: Vec::new(),
                texts: Default::default(),
                trusted_texts: Default::default(),
                state: ProjectTrustState::NoProjectConfig,
                store: None,
            },
            cwd,
            configs: IndexMap::new(),
            sources: IndexMap::new(),
            servers: Vec::new(),
            errors: IndexMap::new(),
            warnings: Vec::new(),
            failure: Some(DiscoveryFailure {
                path: HARD_FAILURE_PATH.to_owned(),
                error,
            }),
        }
    }
}

/// How discovery runs. Tests set `home`, `env` and `trust_store` so that nothing of the real
/// machine is read or written.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DiscoveryOptions {
    /// The home directory (default: `$HOME` from `env`, then the OS's idea of it).
    pub home: Option<PathBuf>,
    /// Variable lookup for paths (`XDG_CONFIG_HOME`, `CODEX_HOME`, ...) and `${VAR}` expansion.
    pub env: EnvSource,
    /// `--config` files, highest priority, trusted.
    pub explicit_files: Vec<PathBuf>,
    /// Read `explicit_files` only (`--strict-config`).
    pub strict: bool,
    /// `false` removes every project-level entry (`--no-project`).
    pub enable_project_config: bool,
    /// Trust the project for this run (`--trust-project`).
    pub trust_project: bool,
    /// The trust store file (default `$XDG_DATA_HOME/mcpr/trust.json`).
    pub trust_store: Option<PathBuf>,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        DiscoveryOptions {
            home: None,
            env: EnvSource::Process,
            explicit_files: Vec::new(),
            strict: false,
            enable_project_config: true,
            trust_project: false,
            trust_store: None,
        }
    }
}

impl DiscoveryOptions {
    /// The home directory in effect.
    pub fn home_dir(&self) -> Option<PathBuf> {
        self.home
            .clone()
            .or_else(|| {
                self.env
                    .get("HOME")
                    .filter(|h| !h.is_empty())
                    .map(PathBuf::from)
            })
            .or_else(|| match self.env {
                EnvSource::Process => std::env::home_dir(),
                _ => None,
            })
    }

    /// The trust store in effect.
    pub fn trust_store_path(&self) -> Option<PathBuf> {
        self.trust_store
            .clone()
            .or_else(|| default_store_path(&self.env, self.home_dir().as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_display_positions() {
        let w = Warning {
            file: Some("/p/.mcp.json".into()),
            line: Some(3),
            column: Some(5),
            server: Some("x".into()),
            message: "bad".into(),
        };
        assert_eq!(w.to_string(), "/p/.mcp.json:3:5: server `x`: bad");
    }

    #[test]
    fn a_panicking_discovery_becomes_the_synthetic_error() {
        let failed = Discovery::failed(PathBuf::from("/p"), "boom".into());
        assert_eq!(failed.failure.unwrap().path, HARD_FAILURE_PATH);
        assert!(failed.configs.is_empty());
    }
}

crate::setters!(DiscoveryOptions {
    with_home => home: Option<PathBuf>,
    with_env => env: EnvSource,
    with_explicit_files => explicit_files: Vec<PathBuf>,
    with_strict => strict: bool,
    with_enable_project_config => enable_project_config: bool,
    with_trust_project => trust_project: bool,
    with_trust_store => trust_store: Option<PathBuf>,
});
