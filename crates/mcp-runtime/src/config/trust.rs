//! Project trust: servers from config files inside a project directory (files that can
//! arrive with a cloned repository) start only once the user trusts that project. Trust is
//! recorded per project path and bound to a SHA-256 hash of the project's config files and of
//! every file their servers read (`envFile`, `{file:...}`, and project files that a user's own
//! config reads) or run (a program or interpreter script inside the project, see
//! [`executable_identity`]), so a changed (or added, or removed) file asks again. Each file's
//! own digest is kept too, so that the file that changed can be named.
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
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::ConfigError;
use super::expand::EnvSource;
use super::formats::{self, Format};
use crate::fsutil::{APP_DIR, BaseDir, write_atomic};

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
        self.record(project, hash, &files)
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
        self.record(project, hash, &files)
    }

    fn record(
        &self,
        project: &Path,
        hash: &str,
        files: &[(String, Option<String>)],
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
