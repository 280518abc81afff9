//! Project trust: servers from config files inside a project directory (files that can
//! arrive with a cloned repository) start only once the user trusts that project. Trust is
//! recorded per project path and bound to a SHA-256 hash of the project's config files and of
//! every file their servers read (`envFile`, `{file:...}`, and project files that a user's own
//! config reads) or run (a program or interpreter script inside the project, see
//! [`executable_identity`], and the code a loader variable such as `NODE_OPTIONS` or
//! `PYTHONPATH` names, see [`LOADER_VARIABLES`]), so a changed (or added, or removed) file asks
//! again. Each file's own digest is kept too, so that the file that changed can be named, and
//! so that only the servers that depend on it wait for approval ([`ProjectTrust::allows`]): an
//! edit of `.mcp.json` holds the servers of `.mcp.json`, not those of `.vscode/mcp.json`.
//!
//! The store is one small JSON file, `$XDG_DATA_HOME/mcpr/trust.json` (default
//! `~/.local/share/mcpr/trust.json`), mode 0600, replaced atomically (temp file + rename).
//! JSON rather than SQLite (which the tool cache uses): the data is a handful of records read
//! once per start, a user can read and fix the file by hand, and the atomic rename already
//! makes every write crash-safe; a database would add a schema and locking for nothing. Two
//! processes writing at the same instant can at worst lose one of the two grants (the user runs
//! `mcpr trust` again); nothing can be half-written.
//!
//! ```
//! use mcp_runtime::config::trust::{TrustStore, hash_files};
//! let dir = tempfile::tempdir().unwrap();
//! let store = TrustStore::new(dir.path().join("trust.json"));
//! let project = dir.path().join("proj");
//! let hash = hash_files(&project, &[(project.join(".mcp.json"), b"{}".to_vec())]);
//! store.trust(&project, &hash, &[".mcp.json".into()]).unwrap();
//! assert!(store.is_trusted(&project, &hash).unwrap());
//! assert!(!store.is_trusted(&project, "sha256:other").unwrap());
//! assert!(store.revoke(&project).unwrap());
//! ```

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::expand::EnvSource;
use super::formats::{self, Format};
use super::providers::Ctx;
use super::{ConfigError, StdioConfig};
use crate::fsutil::{APP_DIR, BaseDir, write_atomic};

mod loaders;
mod review;
mod tree;

pub(crate) use loaders::loaded_paths;
pub use loaders::{LOADER_VARIABLES, MAX_LOADER_NAMES};
pub use review::{MAX_REVIEW_TEXT, masked_text};
pub(crate) use tree::identities;
pub use tree::{MAX_TREE_BYTES, MAX_TREE_ENTRIES, MAX_TREE_FILES};

/// File name of the store inside `$XDG_DATA_HOME/mcpr/`.
pub const TRUST_FILE: &str = "trust.json";

/// `$XDG_DATA_HOME/mcpr/trust.json`, default `~/.local/share/mcpr/trust.json`.
pub fn default_store_path(env: &EnvSource, home: Option<&Path>) -> Option<PathBuf> {
    let data = BaseDir::Data.resolve(|name| env.get(name), home)?;
    Some(data.join(APP_DIR).join(TRUST_FILE))
}

/// SHA-256 over the project's config files: each file's path relative to `root` and its bytes,
/// in path order. Returned as `sha256:<hex>`.
pub fn hash_files(root: &Path, files: &[(PathBuf, Vec<u8>)]) -> String {
    let mut sorted: Vec<(String, &[u8])> = files
        .iter()
        .map(|(path, bytes)| {
            let rel = path.strip_prefix(root).unwrap_or(path);
            (rel.to_string_lossy().replace('\\', "/"), bytes.as_slice())
        })
        .collect();
    sorted.sort();
    let mut hasher = Sha256::new();
    for (rel, bytes) in sorted {
        hasher.update((rel.len() as u64).to_le_bytes());
        hasher.update(rel.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    to_hex(&hasher.finalize())
}

/// SHA-256 of one file's bytes, as `sha256:<hex>`.
pub fn file_digest(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// Programs that run the file named by their first argument that is a file (after options, and
/// after a `run` subcommand for `deno`, `bun` and `uv`): starting `node server.js` runs
/// `server.js`. Only this common shape is recognised; a module (`python -m`), a package
/// runner (`npx`, `uvx`) or a file named in an option value is not followed.
pub const INTERPRETERS: &[&str] = &[
    "node", "nodejs", "python", "python3", "deno", "bun", "sh", "bash", "dash", "zsh", "ruby",
    "perl", "uv",
];

/// Files larger than this that a server runs are bound by size and modification time instead
/// of content: discovery hashes them on every start, and a compiled server of tens of MiB would
/// cost every command tens of milliseconds. Scripts, the usual case, are far below it.
pub const MAX_HASHED_EXECUTABLE: u64 = 8 * 1024 * 1024;

/// What trust binds to for a file a server runs (its program or the script an interpreter is
/// given): the SHA-256 of its content (streamed, never held in memory), or its size and
/// modification time when it is larger than [`MAX_HASHED_EXECUTABLE`]. `None` when it is not
/// a readable regular file (nothing can run then, and its later appearance changes the hash).
pub fn executable_identity(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > MAX_HASHED_EXECUTABLE {
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        return Some(format!("size {} modified {modified}", meta.len()).into_bytes());
    }
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match std::io::Read::read(&mut file, &mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(to_hex(&hasher.finalize()).into_bytes())
}

/// A digest as stored in the trust file: `sha256:<hex>`.
fn to_hex(digest: &[u8]) -> String {
    format!("sha256:{}", crate::fsutil::hex(digest))
}

/// The trust situation of the project directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    /// read, and the project's files that any server runs or loads (a directory of code past
    /// [`MAX_TREE_FILES`] or [`MAX_TREE_BYTES`] is one entry, the directory itself). A file that
    /// could not be read is left out, so its appearance changes the hash.
    pub files: Vec<PathBuf>,
    /// [`file_digest`] of each of `files`, in the same order.
    pub digests: Vec<String>,
    /// [`hash_files`] of them, when there are any.
    pub hash: Option<String>,
    /// When the state is [`ProjectTrustState::Changed`]: the files added, changed or removed
    /// since the trust was recorded (empty when the record predates per-file digests).
    pub changed: Vec<PathBuf>,
    /// The text of the config files and of the files their servers read, secrets masked
    /// ([`masked_text`]), for the review of a change (programs and code are not shown).
    pub texts: BTreeMap<PathBuf, String>,
    /// When the state is [`ProjectTrustState::Changed`]: the masked text of each file as it was
    /// when the project was last trusted, where it was kept.
    pub trusted_texts: BTreeMap<PathBuf, String>,
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

    /// Whether a server that depends on `files` (its config file when it is the project's, and
    /// the project files it reads or runs) may start. Trust binds per file: once a project was
    /// trusted with per-file digests, a change to one file holds only the servers that depend
    /// on it (a directory a server loads code from stands for the files under it); the servers
    /// of the project's other, unchanged files keep running. A record from before per-file
    /// digests were kept cannot name the changed file, so it holds the whole project.
    pub fn allows<'p>(&self, files: impl IntoIterator<Item = &'p Path>) -> bool {
        if self.is_trusted() {
            return true;
        }
        if self.state != ProjectTrustState::Changed || self.changed.is_empty() {
            return false;
        }
        !files
            .into_iter()
            .any(|file| self.changed.iter().any(|changed| changed.starts_with(file)))
    }

    /// Record the trust of the files as they are now in `store` (`mcpr trust`) and return the
    /// trusted state. `cwd` is the directory discovery ran for: files are named relative to it.
    pub(crate) fn record(mut self, cwd: &Path, store: &Path) -> Result<Self, ConfigError> {
        let Some(hash) = self.hash.clone() else {
            return Ok(self);
        };
        let files: Vec<(String, String)> = self
            .files
            .iter()
            .zip(&self.digests)
            .map(|(f, digest)| (rel_name(cwd, f), digest.clone()))
            .collect();
        let texts: BTreeMap<String, String> = self
            .texts
            .iter()
            .map(|(f, text)| (rel_name(cwd, f), text.clone()))
            .collect();
        let files: Vec<(String, Option<String>)> =
            files.into_iter().map(|(f, d)| (f, Some(d))).collect();
        TrustStore::new(store).record(&self.root, &hash, &files, &texts)?;
        self.state = ProjectTrustState::Trusted;
        self.changed.clear();
        self.trusted_texts.clear();
        Ok(self)
    }
}

/// How the project's trust is decided for one discovery run.
pub(crate) struct Evaluation<'a> {
    /// The directory discovery runs for (files are named relative to it).
    pub cwd: &'a Path,
    /// The project directory with symlinks resolved: the key of the store.
    pub root: &'a Path,
    /// The home directory with symlinks resolved (a project that is the home is the user's).
    pub home: Option<&'a Path>,
    /// `false` when project config is off.
    pub enable_project_config: bool,
    /// `--trust-project`: trusted for this run whatever the store says.
    pub trust_for_run: bool,
    /// The trust store file, when one can be located.
    pub store: Option<PathBuf>,
}

impl Evaluation<'_> {
    /// The trust of the project whose files (config files, files read, files run) are `hashed`.
    /// An unreadable store counts as no trust, and comes back as a warning (store, message).
    /// Of those, the files in `shown` (config files and files read, not code) keep their
    /// masked text for the review of a later change.
    pub(crate) fn run(
        self,
        hashed: Vec<(PathBuf, Vec<u8>)>,
        shown: &[PathBuf],
    ) -> (ProjectTrust, Option<(PathBuf, String)>) {
        let files: Vec<PathBuf> = hashed.iter().map(|(p, _)| p.clone()).collect();
        let texts: BTreeMap<PathBuf, String> = hashed
            .iter()
            .filter(|(path, _)| shown.contains(path))
            .filter_map(|(path, bytes)| Some((path.clone(), masked_text(bytes)?)))
            .collect();
        let mut trusted_texts = BTreeMap::new();
        let digests: Vec<String> = hashed.iter().map(|(_, b)| file_digest(b)).collect();
        let hash = (!files.is_empty()).then(|| hash_files(self.cwd, &hashed));
        let mut warning = None;
        let mut changed = Vec::new();
        let state = if !self.enable_project_config {
            ProjectTrustState::Disabled
        } else if files.is_empty() {
            ProjectTrustState::NoProjectConfig
        } else if self.home == Some(self.root) {
            ProjectTrustState::Home
        } else {
            let recorded = match &self.store {
                Some(path) => match TrustStore::new(path).get(self.root) {
                    Ok(record) => record,
                    Err(e) => {
                        warning = Some((
                            path.clone(),
                            format!(
                                "trust store unreadable, treating the project as untrusted: {e}"
                            ),
                        ));
                        None
                    }
                },
                None => None,
            };
            match recorded {
                Some(record) if Some(&record.hash) == hash.as_ref() => ProjectTrustState::Trusted,
                _ if self.trust_for_run => ProjectTrustState::TrustedForRun,
                Some(record) => {
                    changed = changed_files(self.cwd, &files, &digests, &record.digests);
                    trusted_texts = record
                        .texts
                        .into_iter()
                        .map(|(name, text)| (self.cwd.join(name), text))
                        .collect();
                    ProjectTrustState::Changed
                }
                None => ProjectTrustState::Untrusted,
            }
        };
        let project = ProjectTrust {
            root: self.root.to_owned(),
            files,
            digests,
            hash,
            changed,
            texts,
            trusted_texts,
            state,
            store: self.store,
        };
        (project, warning)
    }
}

/// Forget the trust of the project at `cwd` in `store`; `false` when it was not trusted.
pub(crate) fn revoke_project(cwd: &Path, store: Option<&Path>) -> Result<bool, ConfigError> {
    let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    match store {
        Some(store) => TrustStore::new(store).revoke(&root),
        None => Ok(false),
    }
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
pub(crate) fn lexical(path: &Path) -> PathBuf {
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
pub(crate) fn is_in_project(path: &Path, cx: &Ctx<'_>, homes: &[&Path]) -> bool {
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
pub(crate) fn run_files(
    stdio: &StdioConfig,
    cx: &Ctx<'_>,
    process_cwd: Option<&Path>,
) -> Vec<PathBuf> {
    let bases = working_dirs(stdio, cx, process_cwd);
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

/// The directories `stdio` may start in, against which its relative paths resolve: its `cwd`
/// when absolute, else (joined with a relative `cwd`) the process's directory and the project's.
pub(crate) fn working_dirs(
    stdio: &StdioConfig,
    cx: &Ctx<'_>,
    process_cwd: Option<&Path>,
) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    let dirs = process_cwd.into_iter().chain(std::iter::once(cx.cwd));
    match &stdio.cwd {
        Some(cwd) if cwd.is_absolute() => bases.push(cwd.clone()),
        Some(cwd) => bases.extend(dirs.map(|d| d.join(cwd))),
        None => bases.extend(dirs.map(Path::to_owned)),
    }
    bases.dedup();
    bases
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

/// One trusted project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustRecord {
    /// [`hash_files`] of the project's config files when it was trusted.
    pub hash: String,
    /// When (seconds since the Unix epoch).
    pub trusted_at: u64,
    /// The files that were hashed, relative to the project (for display).
    pub files: Vec<String>,
    /// [`file_digest`] of each file when it was trusted, by the name in `files` (empty in
    /// records written before digests were kept).
    pub digests: BTreeMap<String, String>,
    /// The masked text ([`masked_text`]) of the config files and files read, by name, when
    /// trusted (empty in records written before texts were kept).
    pub texts: BTreeMap<String, String>,
}

/// The trust store file.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// A store kept in `path` (created on the first grant).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TrustStore { path: path.into() }
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Map<String, Value>, ConfigError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let root = formats::parse(&text, Format::Json).map_err(|e| ConfigError::Parse {
            path: self.path.clone(),
            line: e.line,
            column: e.column,
            message: e.message,
        })?;
        Ok(root
            .get("projects")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default())
    }

    fn write(&self, projects: Map<String, Value>) -> Result<(), ConfigError> {
        let doc = json!({"version": 1, "projects": projects});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
        write_atomic(&self.path, format!("{text}\n").as_bytes()).map_err(|source| {
            ConfigError::Write {
                path: self.path.clone(),
                source,
            }
        })
    }

    fn key(project: &Path) -> String {
        project.to_string_lossy().into_owned()
    }

    /// The record of `project`, if it was ever trusted.
    pub fn get(&self, project: &Path) -> Result<Option<TrustRecord>, ConfigError> {
        let projects = self.read()?;
        Ok(projects.get(&Self::key(project)).and_then(|record| {
            Some(TrustRecord {
                hash: record.get("hash")?.as_str()?.to_owned(),
                trusted_at: record
                    .get("trusted_at")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                files: record
                    .get("files")
                    .and_then(Value::as_array)
                    .map(|f| {
                        f.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                digests: record
                    .get("digests")
                    .and_then(Value::as_object)
                    .map(|d| {
                        d.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect()
                    })
                    .unwrap_or_default(),
                texts: record
                    .get("texts")
                    .and_then(Value::as_object)
                    .map(|t| {
                        t.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        }))
    }

    /// Whether `project` is trusted with exactly these config files.
    pub fn is_trusted(&self, project: &Path, hash: &str) -> Result<bool, ConfigError> {
        Ok(self.get(project)?.is_some_and(|record| record.hash == hash))
    }

    /// Trust `project` as its config files are now (`hash` from [`hash_files`]).
    pub fn trust(&self, project: &Path, hash: &str, files: &[String]) -> Result<(), ConfigError> {
        let files: Vec<(String, Option<String>)> =
            files.iter().map(|f| (f.clone(), None)).collect();
        self.record(project, hash, &files, &BTreeMap::new())
    }

    /// Like [`TrustStore::trust`], also keeping each file's [`file_digest`] (`(name, digest)`),
    /// so that a later change can name the file.
    pub fn trust_files(
        &self,
        project: &Path,
        hash: &str,
        files: &[(String, String)],
    ) -> Result<(), ConfigError> {
        let files: Vec<(String, Option<String>)> = files
            .iter()
            .map(|(f, d)| (f.clone(), Some(d.clone())))
            .collect();
        self.record(project, hash, &files, &BTreeMap::new())
    }

    /// Record `project` as trusted: its files (name, digest when known) and the masked text of
    /// those that can be shown in a later review.
    fn record(
        &self,
        project: &Path,
        hash: &str,
        files: &[(String, Option<String>)],
        texts: &BTreeMap<String, String>,
    ) -> Result<(), ConfigError> {
        let mut projects = self.read()?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let names: Vec<&String> = files.iter().map(|(f, _)| f).collect();
        let digests: Map<String, Value> = files
            .iter()
            .filter_map(|(f, d)| Some((f.clone(), Value::from(d.clone()?))))
            .collect();
        let mut record = json!({"hash": hash, "trusted_at": now, "files": names});
        if !digests.is_empty() {
            record["digests"] = Value::Object(digests);
        }
        if !texts.is_empty() {
            record["texts"] = json!(texts);
        }
        projects.insert(Self::key(project), record);
        self.write(projects)
    }

    /// Forget `project`; `false` when it was not trusted.
    pub fn revoke(&self, project: &Path) -> Result<bool, ConfigError> {
        let mut projects = self.read()?;
        if projects.remove(&Self::key(project)).is_none() {
            return Ok(false);
        }
        self.write(projects)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_names_and_contents_not_order() {
        let root = Path::new("/p");
        let a = (root.join(".mcp.json"), b"a".to_vec());
        let b = (root.join(".cursor/mcp.json"), b"b".to_vec());
        let h1 = hash_files(root, &[a.clone(), b.clone()]);
        assert_eq!(h1, hash_files(root, &[b.clone(), a.clone()]));
        assert!(h1.starts_with("sha256:") && h1.len() == 7 + 64);
        assert_ne!(h1, hash_files(root, std::slice::from_ref(&a)));
        assert_ne!(
            h1,
            hash_files(root, &[a, (root.join(".cursor/mcp.json"), b"c".to_vec())])
        );
    }

    #[test]
    fn executables_are_identified_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server");
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        let first = executable_identity(&path).unwrap();
        assert_eq!(first, executable_identity(&path).unwrap());
        std::fs::write(&path, "#!/bin/sh\nrm -rf ~\n").unwrap();
        assert_ne!(first, executable_identity(&path).unwrap());
        assert_eq!(executable_identity(dir.path()), None);
        assert_eq!(executable_identity(&dir.path().join("absent")), None);
    }

    #[test]
    fn store_round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::new(dir.path().join("sub/trust.json"));
        let p = Path::new("/proj");
        assert_eq!(store.get(p).unwrap(), None);
        store.trust(p, "sha256:1", &[".mcp.json".into()]).unwrap();
        let record = store.get(p).unwrap().unwrap();
        assert_eq!((record.hash.as_str(), record.files.len()), ("sha256:1", 1));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(record.digests.is_empty());
        let digest = file_digest(b"{}");
        store
            .trust_files(p, "sha256:2", &[(".env".into(), digest.clone())])
            .unwrap();
        let record = store.get(p).unwrap().unwrap();
        assert_eq!(record.files, vec![".env".to_owned()]);
        assert_eq!(record.digests[".env"], digest);
        assert!(store.revoke(p).unwrap());
        assert!(!store.revoke(p).unwrap());
        std::fs::write(store.path(), "{\n  \"projects\": [\n").unwrap();
        let err = store.get(p).unwrap_err().to_string();
        assert!(err.contains("trust.json:3:"), "{err}");
    }
}
