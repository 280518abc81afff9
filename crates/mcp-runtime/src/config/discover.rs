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
//! repository; once trusted, a change of the file's content asks again.
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
//! let options = DiscoveryOptions {
//!     home: Some(home.path().to_owned()),
//!     env: EnvSource::map([("PATH", "/usr/bin")]),
//!     trust_store: Some(home.path().join("trust.json")),
//!     ..DiscoveryOptions::default()
//! };
//! let found = load_all_mcp_configs(project.path(), &options);
//! assert_eq!(found.sources["echo"].provider_name, "Claude Code");
//! assert!(found.configs.contains_key("echo"));
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Component, Path, PathBuf};

use indexmap::IndexMap;

use super::StdioConfig;
pub use super::expand::EnvSource;
use super::expand::{self, Context, FileReads};
use super::formats::{self, Format};
use super::providers::{
    self, Approvals, Ctx, Doc, Lists, Note, Out, PROVIDERS, RawEntry, explicit,
};
use super::trust::{
    INTERPRETERS, TrustStore, default_store_path, executable_identity, file_digest, hash_files,
};
use super::{ConfigError, RedactedServer, ServerConfig, Transport, server_from_json};

/// The path of the synthetic error returned when discovery fails as a whole.
pub const HARD_FAILURE_PATH: &str = ".mcp.json";

/// Whether a definition comes from the user's own files or from the project directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// The user's home (and `--config` files).
    User,
    /// The project (including Claude Code's per-project entries in `~/.claude.json`).
    Project,
}

impl Level {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::User => "user",
            Level::Project => "project",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// Removed by a filter (Exa, handled natively).
    Filtered(String),
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Enabled => f.write_str("enabled"),
            ServerState::Disabled => f.write_str("disabled"),
            ServerState::PendingApproval => f.write_str("pending approval"),
            ServerState::Shadowed { by } => write!(f, "shadowed by {by}"),
            ServerState::Invalid(reason) => write!(f, "invalid: {reason}"),
            ServerState::Filtered(reason) => write!(f, "filtered: {reason}"),
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
    /// given to an interpreter), which trust binds to as well.
    pub runs: Vec<PathBuf>,
    /// Why it waits for approval, when there is more to say than "the project is not trusted".
    pub pending_reason: Option<PendingReason>,
}

/// Why a definition is pending approval, naming the files concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PendingReason {
    /// These files (its config file or files it reads) changed since the project was trusted.
    Changed(Vec<PathBuf>),
    /// A definition outside the project reads these files inside it, and the project is not
    /// trusted: their content must not reach a server before it is.
    ReadsProject(Vec<PathBuf>),
    /// A definition outside the project runs these files inside it (its program, or the script
    /// given to an interpreter), and the project is not trusted: they came with the project.
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
            .map(|p| p.display().to_string())
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
    let mut out = file.map(|f| f.display().to_string()).unwrap_or_default();
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

/// The trust situation of the project directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectTrustState {
    /// The project has no config files of its own.
    NoProjectConfig,
    /// Trusted with exactly these files (`mcpr trust`).
    Trusted,
    /// Trusted for this run only (`--trust-project`).
    TrustedForRun,
    /// The project directory is the home directory: its files are the user's own.
    Home,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but the files changed since.
    Changed,
    /// Project config is off (`enable_project_config = false`).
    Disabled,
}

/// The project's config files and whether they are trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectTrust {
    /// The project directory (symlinks resolved); the key of the trust store.
    pub root: PathBuf,
    /// The files hashed: the project's config files, every file their servers read
    /// (`envFile`, `{file:...}`), and the project's files that servers of the user's own configs
    /// read, and the project's files that any server runs. A file that could not be read is
    /// left out, so its appearance changes the hash.
    pub files: Vec<PathBuf>,
    /// [`file_digest`](super::trust::file_digest) of each of `files`, in the same order.
    pub digests: Vec<String>,
    /// [`hash_files`] of them, when there are any.
    pub hash: Option<String>,
    /// When the state is [`ProjectTrustState::Changed`]: the files added, changed or removed
    /// since the trust was recorded (empty when the record predates per-file digests).
    pub changed: Vec<PathBuf>,
    /// Trusted or not, and why.
    pub state: ProjectTrustState,
    /// The trust store used.
    pub store: Option<PathBuf>,
}

impl ProjectTrust {
    /// Whether project-level servers may start.
    pub fn is_trusted(&self) -> bool {
        matches!(
            self.state,
            ProjectTrustState::Trusted | ProjectTrustState::TrustedForRun | ProjectTrustState::Home
        )
    }
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
    /// Exa API keys extracted from filtered Exa servers, for a native Exa integration.
    pub exa_api_keys: Vec<String>,
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
                ServerState::Shadowed { .. }
                    | ServerState::PendingApproval
                    | ServerState::Filtered(_)
            )
        })
        .or(first)
    }

    /// The first extracted Exa API key.
    pub fn exa_api_key(&self) -> Option<&str> {
        self.exa_api_keys.first().map(String::as_str)
    }

    /// Servers waiting for `mcpr trust`.
    pub fn pending(&self) -> impl Iterator<Item = &DiscoveredServer> {
        self.servers
            .iter()
            .filter(|s| s.state == ServerState::PendingApproval)
    }

    fn failed(cwd: PathBuf, error: String) -> Self {
        Discovery {
            project: ProjectTrust {
                root: cwd.clone(),
                files: Vec::new(),
                digests: Vec::new(),
                hash: None,
                changed: Vec::new(),
                state: ProjectTrustState::NoProjectConfig,
                store: None,
            },
            cwd,
            configs: IndexMap::new(),
            sources: IndexMap::new(),
            servers: Vec::new(),
            errors: IndexMap::new(),
            warnings: Vec::new(),
            exa_api_keys: Vec::new(),
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
    /// Filter Exa servers and extract their keys (default on).
    pub filter_exa: bool,
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
            filter_exa: true,
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

/// The global CLI flags that shape discovery, so every command builds its options the same way.
#[derive(Debug, Clone, Default)]
pub struct CliFlags {
    /// `--cwd DIR`.
    pub cwd: Option<PathBuf>,
    /// `--config FILE` (repeatable).
    pub config: Vec<PathBuf>,
    /// `--strict-config`: `--config` files only.
    pub strict_config: bool,
    /// `--no-project`: ignore project-level config.
    pub no_project: bool,
    /// `--trust-project`: trust the project for this run.
    pub trust_project: bool,
}

impl CliFlags {
    /// The project directory: `--cwd` made absolute, else the process's.
    pub fn cwd(&self) -> PathBuf {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        match &self.cwd {
            Some(dir) => base.join(dir),
            None => base,
        }
    }

    /// Discovery options for these flags (process environment, default home and trust store).
    pub fn options(&self) -> DiscoveryOptions {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        DiscoveryOptions {
            explicit_files: self.config.iter().map(|f| base.join(f)).collect(),
            strict: self.strict_config,
            enable_project_config: !self.no_project,
            trust_project: self.trust_project,
            ..DiscoveryOptions::default()
        }
    }

    /// Run discovery with these flags.
    pub fn discover(&self) -> Discovery {
        load_all_mcp_configs(&self.cwd(), &self.options())
    }
}

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
/// a project without config files is left alone (`NoProjectConfig`).
pub fn trust_project(cwd: &Path, options: &DiscoveryOptions) -> Result<ProjectTrust, ConfigError> {
    let options = DiscoveryOptions {
        enable_project_config: true,
        trust_project: false,
        ..options.clone()
    };
    let found = load_all_mcp_configs(cwd, &options);
    if let Some(failure) = found.failure {
        return Err(ConfigError::Discovery {
            path: failure.path,
            message: failure.error,
        });
    }
    let mut project = found.project;
    let Some(hash) = project.hash.clone() else {
        return Ok(project);
    };
    let store = project
        .store
        .clone()
        .ok_or_else(|| ConfigError::Discovery {
            path: HARD_FAILURE_PATH.into(),
            message: "cannot locate the trust store: neither XDG_DATA_HOME nor HOME is set".into(),
        })?;
    let files: Vec<(String, String)> = project
        .files
        .iter()
        .zip(&project.digests)
        .map(|(f, digest)| (rel_name(&found.cwd, f), digest.clone()))
        .collect();
    TrustStore::new(store).trust_files(&project.root, &hash, &files)?;
    project.state = ProjectTrustState::Trusted;
    project.changed.clear();
    Ok(project)
}

/// Forget the trust of the project; `false` when it was not trusted.
pub fn revoke_project_trust(cwd: &Path, options: &DiscoveryOptions) -> Result<bool, ConfigError> {
    let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    match options.trust_store_path() {
        Some(store) => TrustStore::new(store).revoke(&root),
        None => Ok(false),
    }
}

// ---- the pipeline ---------------------------------------------------------------------------

/// Which provider an entry came from.
#[derive(Clone, Copy)]
struct Origin {
    id: &'static str,
    name: &'static str,
    /// Index into `PROVIDERS` (for approvals); `None` for `--config`.
    provider: Option<usize>,
}

struct Scan<'a> {
    cx: Ctx<'a>,
    warnings: Vec<Warning>,
    seen: HashSet<PathBuf>,
    project_files: Vec<(PathBuf, Vec<u8>)>,
    lists: Lists,
}

impl Scan<'_> {
    fn warn(
        &mut self,
        file: &Path,
        position: Option<(usize, usize)>,
        server: Option<String>,
        message: String,
    ) {
        self.warnings.push(Warning {
            file: Some(file.to_owned()),
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            server,
            message,
        });
    }

    fn notes(&mut self, file: &Path, notes: Vec<Note>) {
        for note in notes {
            self.warn(file, note.position, note.server, note.message);
        }
    }

    /// Read and parse one file; `None` when absent, already read, or broken (then warned).
    fn read(
        &mut self,
        path: &Path,
        format: Format,
        level: Level,
        parse: &dyn Fn(&Ctx<'_>, &Doc<'_>, &mut Out),
    ) -> Option<Out> {
        let bytes = match super::file::read_regular(path, super::file::MAX_CONFIG_FILE) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => return None,
            Err(e) => {
                self.warn(path, None, None, format!("cannot read: {e}"));
                return None;
            }
        };
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        if !self.seen.insert(canonical) {
            return None;
        }
        if level == Level::Project {
            self.project_files.push((path.to_owned(), bytes.clone()));
        }
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let (line, column) = formats::line_col(
                    &String::from_utf8_lossy(e.as_bytes()),
                    e.utf8_error().valid_up_to(),
                );
                self.warn(path, Some((line, column)), None, "not valid UTF-8".into());
                return None;
            }
        };
        let value = match formats::parse(&text, format) {
            Ok(value) => value,
            Err(e) => {
                self.warn(path, Some((e.line, e.column)), None, e.message);
                return None;
            }
        };
        let doc = Doc {
            path,
            text: &text,
            value: &value,
            level,
        };
        let mut out = Out::default();
        parse(&self.cx, &doc, &mut out);
        let notes = std::mem::take(&mut out.notes);
        self.notes(path, notes);
        Some(out)
    }
}

fn run(cwd: &Path, options: &DiscoveryOptions) -> Result<Discovery, String> {
    let cwd = if cwd.is_absolute() {
        cwd.to_owned()
    } else {
        std::env::current_dir()
            .map_err(|e| {
                format!(
                    "cannot resolve the project directory {}: {e}",
                    cwd.display()
                )
            })?
            .join(cwd)
    };
    let cwd_real = std::fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone());
    let home = options.home_dir();
    let home_real = home
        .as_ref()
        .map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.clone()));
    let mut scan = Scan {
        cx: Ctx {
            cwd: &cwd,
            cwd_real: &cwd_real,
            home: home.as_deref(),
            env: &options.env,
        },
        warnings: Vec::new(),
        seen: HashSet::new(),
        project_files: Vec::new(),
        lists: Lists::default(),
    };
    let mut entries: Vec<(Origin, RawEntry)> = Vec::new();
    let mut approvals: Vec<Approvals> = vec![Approvals::default(); PROVIDERS.len()];

    for path in &options.explicit_files {
        let origin = Origin {
            id: explicit::ID,
            name: explicit::NAME,
            provider: None,
        };
        if !path.exists() {
            scan.warn(
                path,
                None,
                None,
                "no such file (named with --config)".into(),
            );
            continue;
        }
        if let Some(out) = scan.read(path, Format::for_path(path), Level::User, &explicit::parse) {
            entries.extend(out.entries.into_iter().map(|e| (origin, e)));
        }
    }

    if !options.strict {
        // A project file that is also some provider's user file (the project is the home
        // directory) is read once, as the user's.
        let user_paths: HashSet<PathBuf> = PROVIDERS
            .iter()
            .flat_map(|p| (p.files)(&scan.cx))
            .filter(|spec| spec.level == Level::User)
            .map(|spec| std::fs::canonicalize(&spec.path).unwrap_or(spec.path))
            .collect();
        for (index, provider) in PROVIDERS.iter().enumerate() {
            let origin = Origin {
                id: provider.id,
                name: provider.name,
                provider: Some(index),
            };
            if options.enable_project_config {
                let mut notes = Vec::new();
                approvals[index] = (provider.approvals)(&scan.cx, &mut notes);
                for (file, note) in notes {
                    scan.notes(&file, vec![note]);
                }
            }
            let mut found: Vec<RawEntry> = Vec::new();
            for spec in (provider.files)(&scan.cx) {
                if spec.level == Level::Project {
                    if !options.enable_project_config {
                        continue;
                    }
                    let canonical =
                        std::fs::canonicalize(&spec.path).unwrap_or_else(|_| spec.path.clone());
                    if user_paths.contains(&canonical) {
                        continue;
                    }
                }
                if let Some(out) = scan.read(&spec.path, spec.format, spec.level, &provider.parse) {
                    if let Some(lists) = out.lists
                        && provider.id == providers::mcpr::PROVIDER.id
                    {
                        scan.lists = lists;
                    }
                    found.extend(out.entries);
                }
            }
            found.sort_by_key(|e| e.rank);
            entries.extend(found.into_iter().map(|e| (origin, e)));
        }
    }

    // Expand every valid definition before trust is decided, recording the files each reads:
    // the trust of the project binds to those files as well as to its config files.
    let homes: Vec<&Path> = home
        .iter()
        .chain(&home_real)
        .map(PathBuf::as_path)
        .collect();
    let mut prepared: Vec<Prepared> = Vec::new();
    let mut extra: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    // A relative program or `cwd` is resolved by the spawn against the process's directory.
    let process_cwd = std::env::current_dir().ok();
    for (origin, entry) in entries {
        if entry.level == Level::Project && !options.enable_project_config {
            continue;
        }
        let in_project = entry.level == Level::Project && !entry.trusted_location;
        let structural =
            server_from_json(&entry.name, &entry.value).map_err(|e| e.in_file(&entry.path));
        let reads = FileReads::new();
        let expanded = structural.as_ref().ok().map(|cfg| {
            let expand_cx = Context {
                env: scan.cx.env,
                home: scan.cx.home,
                workspace: Some(scan.cx.cwd),
                config_dir: entry.path.parent(),
                // A user's file names its `envFile` relative to itself, never to wherever mcpr
                // runs (which may be a cloned repository).
                env_file_dir: in_project.then_some(scan.cx.cwd),
                inputs: entry.inputs.as_deref(),
                reads: Some(&reads),
            };
            expand::expand_server(
                &entry.name,
                cfg,
                entry.syntax,
                entry.env_file.as_deref(),
                &expand_cx,
            )
            .map_err(|e| e.in_file(&entry.path))
        });
        let reads = reads.take();
        let mut project_reads = Vec::new();
        for (path, bytes) in &reads {
            let from_project = is_in_project(path, &scan.cx, &homes);
            if from_project && !in_project {
                project_reads.push(path.clone());
            }
            if (in_project || from_project) && !extra.iter().any(|(p, _)| p == path) {
                extra.push((path.clone(), bytes.clone()));
            }
        }
        let runs = match &expanded {
            Some(Ok(ServerConfig {
                transport: Transport::Stdio(stdio),
                ..
            })) => run_files(stdio, &scan.cx, process_cwd.as_deref())
                .into_iter()
                .filter(|path| is_in_project(path, &scan.cx, &homes))
                .collect(),
            _ => Vec::new(),
        };
        for path in &runs {
            if !extra.iter().any(|(p, _)| p == path)
                && let Some(identity) = executable_identity(path)
            {
                extra.push((path.clone(), identity));
            }
        }
        prepared.push(Prepared {
            origin,
            entry,
            in_project,
            structural,
            expanded,
            reads: reads.into_iter().map(|(p, _)| p).collect(),
            project_reads,
            runs,
        });
    }

    let project = project_trust(&mut scan, options, &cwd_real, home_real.as_deref(), extra);
    let Scan {
        mut warnings,
        lists,
        ..
    } = scan;
    let mut result = Discovery {
        cwd: cwd.clone(),
        configs: IndexMap::new(),
        sources: IndexMap::new(),
        servers: Vec::new(),
        errors: IndexMap::new(),
        warnings: Vec::new(),
        exa_api_keys: Vec::new(),
        project,
        failure: None,
    };
    let mut claimed: HashMap<String, usize> = HashMap::new();

    for Prepared {
        origin,
        entry,
        in_project,
        structural,
        expanded,
        reads,
        project_reads,
        runs,
    } in prepared
    {
        let source = ServerSource {
            provider_id: origin.id.to_owned(),
            provider_name: origin.name.to_owned(),
            path: entry.path.clone(),
            level: entry.level,
        };
        if let Err(err) = &structural {
            warnings.push(Warning {
                file: Some(entry.path.clone()),
                line: entry.position.map(|p| p.0),
                column: entry.position.map(|p| p.1),
                server: Some(entry.name.clone()),
                message: short_reason(err),
            });
        }
        let host = origin.provider.map(|i| &approvals[i]);
        let host_denied = in_project && host.is_some_and(|a| a.disabled.contains(&entry.name));
        let project_trusted = result.project.is_trusted();
        // A value read from an untrusted project never reaches a server, and no file of it runs,
        // whoever's file names it.
        let reads_untrusted = (!project_reads.is_empty() || !runs.is_empty()) && !project_trusted;
        let trusted = if in_project {
            project_trusted || host.is_some_and(|a| a.approves(&entry.name))
        } else {
            !reads_untrusted
        };
        let pending_reason = (!trusted)
            .then(|| {
                let concerned: Vec<PathBuf> = if in_project { &reads } else { &project_reads }
                    .iter()
                    .chain(&runs)
                    .cloned()
                    .collect();
                let outside = reads_untrusted.then(|| {
                    if runs.is_empty() {
                        PendingReason::ReadsProject(project_reads.clone())
                    } else {
                        PendingReason::RunsProject(runs.clone())
                    }
                });
                pending_reason(&result.project, &entry.path, &concerned, outside)
            })
            .flatten();
        let mut shown = DiscoveredServer {
            name: entry.name.clone(),
            source: source.clone(),
            state: ServerState::Enabled,
            config: structural.as_ref().ok().cloned(),
            line: entry.position.map(|p| p.0),
            column: entry.position.map(|p| p.1),
            trusted,
            reads,
            runs,
            pending_reason,
        };
        // Every valid definition was expanded above; `None` cannot occur for one.
        let mut expanded = expanded;
        let mut expand = |_: &ServerConfig| {
            expanded
                .take()
                .unwrap_or_else(|| Err(ConfigError::invalid(&entry.name, "", "not expanded")))
        };

        if options.filter_exa
            && let Ok(cfg) = &structural
            && is_exa(&entry.name, cfg)
        {
            shown.state =
                ServerState::Filtered("Exa is handled by the native Exa integration".into());
            if trusted
                && let Ok(expanded) = expand(cfg)
                && let Some(key) = exa_key(&expanded)
                && !result.exa_api_keys.contains(&key)
            {
                result.exa_api_keys.push(key);
            }
            result.servers.push(shown);
            continue;
        }
        if !trusted {
            shown.state = if host_denied && !lists.enabled.contains(&entry.name) {
                ServerState::Disabled
            } else {
                ServerState::PendingApproval
            };
            result.servers.push(shown);
            continue;
        }
        if let Some(&winner) = claimed.get(&entry.name) {
            shown.state = ServerState::Shadowed {
                by: result.servers[winner].source.provider_name.clone(),
            };
            result.servers.push(shown);
            continue;
        }
        claimed.insert(entry.name.clone(), result.servers.len());
        match structural {
            Err(err) => {
                shown.state = ServerState::Invalid(short_reason(&err));
                result.errors.insert(entry.name.clone(), err);
            }
            Ok(cfg) => {
                let enabled = if lists.disabled.contains(&entry.name) {
                    false
                } else if lists.enabled.contains(&entry.name) {
                    true
                } else {
                    cfg.enabled && !host_denied
                };
                if !enabled {
                    shown.state = ServerState::Disabled;
                } else {
                    match expand(&cfg) {
                        Ok(mut expanded) => {
                            expanded.enabled = true;
                            result.configs.insert(entry.name.clone(), expanded);
                            result.sources.insert(entry.name.clone(), source);
                        }
                        Err(err) => {
                            warnings.push(Warning {
                                file: Some(entry.path.clone()),
                                line: shown.line,
                                column: shown.column,
                                server: Some(entry.name.clone()),
                                message: short_reason(&err),
                            });
                            shown.state = ServerState::Invalid(short_reason(&err));
                            result.errors.insert(entry.name.clone(), err);
                        }
                    }
                }
            }
        }
        result.servers.push(shown);
    }
    result.warnings = warnings;
    Ok(result)
}

fn project_trust(
    scan: &mut Scan<'_>,
    options: &DiscoveryOptions,
    root: &Path,
    home: Option<&Path>,
    extra: Vec<(PathBuf, Vec<u8>)>,
) -> ProjectTrust {
    let mut hashed = std::mem::take(&mut scan.project_files);
    for (path, bytes) in extra {
        if !hashed.iter().any(|(p, _)| *p == path) {
            hashed.push((path, bytes));
        }
    }
    let files: Vec<PathBuf> = hashed.iter().map(|(p, _)| p.clone()).collect();
    let digests: Vec<String> = hashed.iter().map(|(_, b)| file_digest(b)).collect();
    let hash = (!files.is_empty()).then(|| hash_files(scan.cx.cwd, &hashed));
    let store = options.trust_store_path();
    let mut changed = Vec::new();
    let state = if !options.enable_project_config {
        ProjectTrustState::Disabled
    } else if files.is_empty() {
        ProjectTrustState::NoProjectConfig
    } else if home == Some(root) {
        ProjectTrustState::Home
    } else {
        let recorded = match &store {
            Some(path) => match TrustStore::new(path).get(root) {
                Ok(record) => record,
                Err(e) => {
                    scan.warnings.push(Warning {
                        file: Some(path.clone()),
                        line: None,
                        column: None,
                        server: None,
                        message: format!(
                            "trust store unreadable, treating the project as untrusted: {e}"
                        ),
                    });
                    None
                }
            },
            None => None,
        };
        match recorded {
            Some(record) if Some(&record.hash) == hash.as_ref() => ProjectTrustState::Trusted,
            _ if options.trust_project => ProjectTrustState::TrustedForRun,
            Some(record) => {
                changed = changed_files(scan.cx.cwd, &files, &digests, &record.digests);
                ProjectTrustState::Changed
            }
            None => ProjectTrustState::Untrusted,
        }
    };
    ProjectTrust {
        root: root.to_owned(),
        files,
        digests,
        hash,
        changed,
        state,
        store,
    }
}

/// A definition (with the files it reads) before trust is decided.
struct Prepared {
    origin: Origin,
    entry: RawEntry,
    /// From a file of the project itself (not trusted by its location).
    in_project: bool,
    structural: Result<ServerConfig, ConfigError>,
    /// The expanded config, for valid definitions.
    expanded: Option<Result<ServerConfig, ConfigError>>,
    /// Every file its values read.
    reads: Vec<PathBuf>,
    /// For a definition outside the project: the files it reads inside the project.
    project_reads: Vec<PathBuf>,
    /// The files inside the project it would run.
    runs: Vec<PathBuf>,
}

/// How a file is named in the trust store: relative to the project when inside it.
fn rel_name(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The files added, changed or removed since `recorded` (name → digest) was trusted.
fn changed_files(
    root: &Path,
    files: &[PathBuf],
    digests: &[String],
    recorded: &std::collections::BTreeMap<String, String>,
) -> Vec<PathBuf> {
    if recorded.is_empty() {
        return Vec::new();
    }
    let names: Vec<String> = files.iter().map(|f| rel_name(root, f)).collect();
    let mut changed: Vec<PathBuf> = files
        .iter()
        .zip(&names)
        .zip(digests)
        .filter(|((_, name), digest)| recorded.get(*name) != Some(*digest))
        .map(|((file, _), _)| file.clone())
        .collect();
    changed.extend(
        recorded
            .keys()
            .filter(|name| !names.contains(name))
            .map(|name| root.join(name)),
    );
    changed
}

/// `path` with `.` and `..` resolved as written, without looking at symlinks.
fn lexical(path: &Path) -> PathBuf {
    let mut lexical = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other.as_os_str()),
        }
    }
    lexical
}

/// Whether `path` lies inside the project directory: as written (`..` resolved) or once
/// symlinks are resolved, since a link inside a repository points wherever its author chose.
/// When the project directory holds the home directory (mcpr run from `/` or `/home`), files in
/// the home are the user's own.
fn is_in_project(path: &Path, cx: &Ctx<'_>, homes: &[&Path]) -> bool {
    let lexical = lexical(path);
    let real = std::fs::canonicalize(path).ok();
    let candidates: Vec<&Path> = std::iter::once(lexical.as_path())
        .chain(real.as_deref())
        .collect();
    let inside = |p: &Path| p.starts_with(cx.cwd) || p.starts_with(cx.cwd_real);
    let in_home = |p: &Path| {
        homes.iter().any(|home| {
            p.starts_with(home) && *home != cx.cwd && *home != cx.cwd_real && inside(home)
        })
    };
    candidates.iter().any(|p| inside(p)) && !candidates.iter().all(|p| in_home(p))
}

/// The files starting `stdio` would run: its program, resolved the way the spawn resolves it
/// (a path with a separator against the server's `cwd`, else the process's directory and the
/// project's; a bare name on the server's `PATH`), and the script it is given when the program is
/// one of [`INTERPRETERS`]. Paths have `..` resolved but not symlinks: [`is_in_project`] checks
/// both.
fn run_files(stdio: &StdioConfig, cx: &Ctx<'_>, process_cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    let dirs = process_cwd.into_iter().chain(std::iter::once(cx.cwd));
    match &stdio.cwd {
        Some(cwd) if cwd.is_absolute() => bases.push(cwd.clone()),
        Some(cwd) => bases.extend(dirs.map(|d| d.join(cwd))),
        None => bases.extend(dirs.map(Path::to_owned)),
    }
    bases.dedup();
    let against = |name: &str| -> Vec<PathBuf> {
        let path = Path::new(name);
        if path.is_absolute() {
            vec![path.to_owned()]
        } else {
            bases.iter().map(|b| b.join(path)).collect()
        }
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let command = stdio.command.as_str();
    if command.contains('/') || (cfg!(windows) && command.contains('\\')) {
        files.extend(against(command));
    } else if !command.is_empty() {
        let path = stdio
            .env
            .get("PATH")
            .cloned()
            .or_else(|| cx.env.get("PATH"));
        // Without `PATH` the spawn searches the system's default directories, none of them
        // relative.
        for base in bases.iter().filter(|_| path.is_some()) {
            // The first match wins, as for the spawn; an empty entry is the working directory.
            let found = std::env::split_paths(path.as_deref().unwrap_or_default())
                .map(|dir| base.join(dir).join(command))
                .find(|candidate| is_executable(candidate));
            files.extend(found);
        }
    }
    let program = Path::new(command)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let program = program.strip_suffix(".exe").unwrap_or(&program);
    let interpreter = INTERPRETERS.contains(&program)
        || program
            .strip_prefix("python3.")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit()));
    if interpreter {
        let mut args = stdio.args.iter().peekable();
        if matches!(program, "deno" | "bun" | "uv") && args.peek().is_some_and(|a| *a == "run") {
            args.next();
        }
        let mut after_flag = false;
        for arg in args {
            let existing = |value: &str| -> Vec<PathBuf> {
                against(value).into_iter().filter(|c| c.is_file()).collect()
            };
            if let Some(flag) = arg.strip_prefix('-') {
                // A flag's file (`--require=./hook.js`) runs before the script does.
                if let Some((_, value)) = flag.split_once('=') {
                    files.extend(existing(value));
                }
                after_flag = !flag.contains('=');
                continue;
            }
            if arg.is_empty() {
                continue;
            }
            let found = existing(arg);
            let script = !found.is_empty() && !after_flag;
            files.extend(found);
            // The first file that is no flag's value (`-r ./hook.js`) is the script; the
            // arguments after it are its data.
            if script {
                break;
            }
            after_flag = false;
        }
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for file in files.iter().map(|f| lexical(f)) {
        if !unique.contains(&file) {
            unique.push(file);
        }
    }
    unique
}

/// A regular file the spawn could execute.
fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The reason a definition waits, when it can name files: those of its files that changed since
/// the project was trusted, else the project files it reads from outside the project.
fn pending_reason(
    project: &ProjectTrust,
    config: &Path,
    reads: &[PathBuf],
    outside: Option<PendingReason>,
) -> Option<PendingReason> {
    if project.state == ProjectTrustState::Changed {
        let changed: Vec<PathBuf> = std::iter::once(config)
            .chain(reads.iter().map(PathBuf::as_path))
            .filter(|f| project.changed.iter().any(|c| c == f))
            .map(Path::to_owned)
            .collect();
        if !changed.is_empty() {
            return Some(PendingReason::Changed(changed));
        }
    }
    outside
}

/// The reason of a per-server error without the file (shown next to the file anyway).
fn short_reason(err: &ConfigError) -> String {
    match err {
        ConfigError::Invalid { field, message, .. } if field.is_empty() => message.clone(),
        ConfigError::Invalid { field, message, .. } => format!("field `{field}`: {message}"),
        other => other.to_string(),
    }
}

/// Named `exa` (any case), or a URL / stdio argument pointing at `mcp.exa.ai`.
fn is_exa(name: &str, config: &ServerConfig) -> bool {
    name.eq_ignore_ascii_case("exa")
        || match &config.transport {
            Transport::Http(http) => http.url.contains("mcp.exa.ai"),
            Transport::Stdio(stdio) => stdio.args.iter().any(|a| a.contains("mcp.exa.ai")),
        }
}

/// `exaApiKey=` in the URL or an argument, else `env.EXA_API_KEY`.
fn exa_key(config: &ServerConfig) -> Option<String> {
    fn from_query(text: &str) -> Option<String> {
        let lower = text.to_ascii_lowercase();
        let idx = lower.find("exaapikey=")? + "exaapikey=".len();
        let value: String = text[idx..]
            .chars()
            .take_while(|c| !matches!(c, '&' | '#' | ' ' | '"' | '\''))
            .collect();
        (!value.is_empty()).then_some(value)
    }
    match &config.transport {
        Transport::Http(http) => from_query(&http.url),
        Transport::Stdio(stdio) => stdio.args.iter().find_map(|a| from_query(a)).or_else(|| {
            stdio
                .env
                .get("EXA_API_KEY")
                .filter(|k| !k.is_empty())
                .cloned()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HttpConfig;

    #[test]
    fn exa_detection_and_keys() {
        let http = |url: &str| ServerConfig {
            transport: Transport::Http(HttpConfig {
                url: url.into(),
                headers: Default::default(),
                kind: crate::config::HttpKind::StreamableHttp,
                oauth: None,
            }),
            ..ServerConfig::stdio("x", Vec::<String>::new())
        };
        let by_url = http("https://mcp.exa.ai/mcp?exaApiKey=k1&x=1");
        assert!(is_exa("search", &by_url));
        assert_eq!(exa_key(&by_url).as_deref(), Some("k1"));
        let stdio = ServerConfig::stdio(
            "npx",
            ["-y", "mcp-remote", "https://mcp.exa.ai/mcp?exaApiKey=k2"],
        );
        assert!(is_exa("web", &stdio));
        assert_eq!(exa_key(&stdio).as_deref(), Some("k2"));
        let mut named = ServerConfig::stdio("npx", ["exa-mcp-server"]);
        if let Transport::Stdio(s) = &mut named.transport {
            s.env.insert("EXA_API_KEY".into(), "k3".into());
        }
        assert!(is_exa("EXA", &named) && !is_exa("other", &named));
        assert_eq!(exa_key(&named).as_deref(), Some("k3"));
    }

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
