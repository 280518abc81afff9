//! One discovery provider per AI tool (see `docs/hosts.md`): which files it reads and how its
//! entries map onto the common server shape that [`server_from_json`](super::server_from_json)
//! validates.
//!
//! A provider never decides trust, precedence or enablement; [`super::discover`] does, the same
//! way for all of them.

pub(crate) mod claude;
mod claude_desktop;
mod cline;
pub(crate) mod codex;
mod continue_dev;
mod cursor;
pub(crate) mod explicit;
mod gemini;
mod goose;
mod kiro;
pub(crate) mod mcpr;
mod omp;
mod opencode;
mod roo;
mod root;
mod vscode;
mod windsurf;
mod zed;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::Level;
use super::expand::{EnvSource, InputSpec, Syntax};
use super::formats::{self, Format};

/// What providers may know about the machine and the project.
pub(crate) struct Ctx<'a> {
    /// The project directory (absolute).
    pub cwd: &'a Path,
    /// The project directory after symlinks are resolved (Claude keys projects by it).
    pub cwd_real: &'a Path,
    /// The user's home, when known.
    pub home: Option<&'a Path>,
    /// Variable lookup (`XDG_CONFIG_HOME`, `CODEX_HOME`, ...).
    pub env: &'a EnvSource,
}

impl Ctx<'_> {
    /// `~/<rel>`, when the home is known.
    pub(crate) fn home(&self, rel: &str) -> Option<PathBuf> {
        self.home.map(|h| h.join(rel))
    }

    /// `<project>/<rel>`.
    pub(crate) fn project(&self, rel: &str) -> PathBuf {
        self.cwd.join(rel)
    }

    /// A directory from an environment variable, ignoring empty values.
    pub(crate) fn env_dir(&self, name: &str) -> Option<PathBuf> {
        self.env
            .get(name)
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from)
    }

    /// `$XDG_CONFIG_HOME`, default `~/.config`.
    pub(crate) fn xdg_config(&self) -> Option<PathBuf> {
        crate::fsutil::BaseDir::Config.resolve(|name| self.env.get(name), self.home)
    }

    /// Where desktop apps keep their settings: `~/Library/Application Support` on macOS,
    /// `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` elsewhere.
    pub(crate) fn app_config(&self) -> Option<PathBuf> {
        if cfg!(target_os = "macos") {
            self.home("Library/Application Support")
        } else if cfg!(windows) {
            self.env_dir("APPDATA")
        } else {
            self.xdg_config()
        }
    }

    /// The project keys hosts may use for this directory (as given and symlink-free).
    pub(crate) fn cwd_keys(&self) -> Vec<String> {
        let mut keys = vec![self.cwd.to_string_lossy().into_owned()];
        let real = self.cwd_real.to_string_lossy().into_owned();
        if !keys.contains(&real) {
            keys.push(real);
        }
        keys
    }
}

/// One file a provider may read.
#[derive(Debug, Clone)]
pub(crate) struct FileSpec {
    pub path: PathBuf,
    pub level: Level,
    pub format: Format,
}

impl FileSpec {
    pub(super) fn user(path: PathBuf, format: Format) -> Self {
        FileSpec {
            path,
            level: Level::User,
            format,
        }
    }

    pub(super) fn project(path: PathBuf, format: Format) -> Self {
        FileSpec {
            path,
            level: Level::Project,
            format,
        }
    }
}

/// A parsed file handed to a provider.
pub(crate) struct Doc<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub value: &'a Value,
    pub level: Level,
}

impl Doc<'_> {
    /// The directory holding the file (relative paths in it resolve against this).
    pub(super) fn dir(&self) -> PathBuf {
        self.path.parent().map(Path::to_owned).unwrap_or_default()
    }
}

/// One server entry as a provider found it, mapped onto the common shape.
#[derive(Debug, Clone)]
pub(crate) struct RawEntry {
    pub name: String,
    /// The common (Claude-like) shape accepted by `server_from_json`.
    pub value: Value,
    pub level: Level,
    /// Project level for filtering, yet trusted: it lives in the user's home (Claude's
    /// `projects[<cwd>]`).
    pub trusted_location: bool,
    /// Order inside the provider: lower first (Claude: local 0, project 1, user 2).
    pub rank: u8,
    pub syntax: Syntax,
    pub position: Option<(usize, usize)>,
    /// VS Code / Cursor `envFile`.
    pub env_file: Option<String>,
    /// VS Code `inputs` of the file.
    pub inputs: Option<Arc<BTreeMap<String, InputSpec>>>,
    /// The file (set by discovery).
    pub path: PathBuf,
}

/// Something worth telling the user about a file (skipped entries, unsupported fields).
#[derive(Debug, Clone)]
pub(crate) struct Note {
    pub position: Option<(usize, usize)>,
    pub server: Option<String>,
    pub message: String,
}

/// The user's `disabledServers` / `enabledServers` lists (mcpr user file).
#[derive(Debug, Clone, Default)]
pub(crate) struct Lists {
    pub disabled: BTreeSet<String>,
    pub enabled: BTreeSet<String>,
}

/// What a provider produced from one file.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub entries: Vec<RawEntry>,
    pub notes: Vec<Note>,
    pub lists: Option<Lists>,
}

impl Out {
    /// Add an entry found under `section` (used to locate its line), with the file's level.
    pub(super) fn push(
        &mut self,
        doc: &Doc<'_>,
        section: Option<&str>,
        name: &str,
        value: Value,
        syntax: Syntax,
    ) -> &mut RawEntry {
        self.entries.push(RawEntry {
            name: name.to_owned(),
            value,
            level: doc.level,
            trusted_location: false,
            rank: match doc.level {
                Level::Project => 1,
                Level::User => 2,
            },
            syntax,
            position: formats::locate_key(doc.text, name, section),
            env_file: None,
            inputs: None,
            path: doc.path.to_owned(),
        });
        let last = self.entries.len() - 1;
        &mut self.entries[last]
    }

    /// A note about the file or one of its servers.
    pub(super) fn note(
        &mut self,
        doc: &Doc<'_>,
        server: Option<&str>,
        section: Option<&str>,
        message: impl Into<String>,
    ) {
        self.notes.push(Note {
            position: server.and_then(|s| formats::locate_key(doc.text, s, section)),
            server: server.map(str::to_owned),
            message: message.into(),
        });
    }
}

/// Host approval keys for project-level entries (Claude `enabledMcpjsonServers`, Codex
/// `trust_level`, Gemini trusted folders).
#[derive(Debug, Clone, Default)]
pub(crate) struct Approvals {
    /// Every project entry of the provider is approved.
    pub all: bool,
    /// These names are approved.
    pub enabled: BTreeSet<String>,
    /// These names were rejected by the user in the host.
    pub disabled: BTreeSet<String>,
}

impl Approvals {
    pub(super) fn approves(&self, name: &str) -> bool {
        (self.all || self.enabled.contains(name)) && !self.disabled.contains(name)
    }
}

/// A discovery provider.
pub(crate) struct Provider {
    pub id: &'static str,
    pub name: &'static str,
    pub priority: u32,
    /// Candidate files, in reading order (project before user).
    pub files: fn(&Ctx<'_>) -> Vec<FileSpec>,
    /// Map one parsed file to entries.
    pub parse: fn(&Ctx<'_>, &Doc<'_>, &mut Out),
    /// Host approval keys for project-level entries; problems go to `notes`.
    pub approvals: fn(&Ctx<'_>, &mut Vec<(PathBuf, Note)>) -> Approvals,
}

/// No approval keys.
pub(crate) fn no_approvals(_: &Ctx<'_>, _: &mut Vec<(PathBuf, Note)>) -> Approvals {
    Approvals::default()
}

/// Every provider, highest priority first (`docs/hosts.md`).
pub(crate) const PROVIDERS: &[Provider] = &[
    mcpr::PROVIDER,
    omp::PROVIDER,
    claude::PROVIDER,
    codex::PROVIDER,
    gemini::PROVIDER,
    opencode::PROVIDER,
    cursor::PROVIDER,
    windsurf::PROVIDER,
    vscode::PROVIDER,
    claude_desktop::PROVIDER,
    zed::PROVIDER,
    cline::PROVIDER,
    roo::PROVIDER,
    continue_dev::PROVIDER,
    goose::PROVIDER,
    kiro::PROVIDER,
    root::PROVIDER,
];

// ---- helpers shared by providers ------------------------------------------------------------

/// The `(name, entry)` pairs of the object at `key`; a non-object there is noted.
pub(crate) fn servers_at<'v>(
    doc: &Doc<'v>,
    key: &str,
    out: &mut Out,
) -> Vec<(&'v String, &'v Value)> {
    servers_in(doc, doc.value.get(key), key, out)
}

/// The `(name, entry)` pairs of `value` (an object), named `key` in notes.
pub(crate) fn servers_in<'v>(
    doc: &Doc<'_>,
    value: Option<&'v Value>,
    key: &str,
    out: &mut Out,
) -> Vec<(&'v String, &'v Value)> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map.iter().collect(),
        Some(_) => {
            let position = formats::locate_key(doc.text, key, None);
            out.notes.push(Note {
                position,
                server: None,
                message: format!(
                    "`{key}` must be an object mapping server names to servers; ignored"
                ),
            });
            Vec::new()
        }
    }
}

/// The standard `mcpServers` object: entries taken as they are.
pub(crate) fn standard(doc: &Doc<'_>, out: &mut Out, syntax: Syntax) {
    for (name, entry) in servers_at(doc, "mcpServers", out) {
        out.push(doc, Some("mcpServers"), name, entry.clone(), syntax);
    }
}

/// Like [`standard`], with Windsurf's and Kiro's `disabledTools` list.
pub(crate) fn standard_with_disabled_tools(doc: &Doc<'_>, out: &mut Out, syntax: Syntax) {
    for (name, entry) in servers_at(doc, "mcpServers", out) {
        let mut value = entry.clone();
        if let Some(obj) = value.as_object_mut() {
            rename(obj, "disabledTools", "disabled_tools");
        }
        out.push(doc, Some("mcpServers"), name, value, syntax);
    }
}

/// One JSON file in the project and one in the home, project first (the usual layout).
pub(crate) fn json_project_and_home(cx: &Ctx<'_>, project: &str, home: &str) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(cx.project(project), Format::Json)];
    files.extend(cx.home(home).map(|p| FileSpec::user(p, Format::Json)));
    files
}

/// Like [`standard`], but also reading Cursor/VS Code `envFile`.
pub(crate) fn standard_with_env_file(doc: &Doc<'_>, out: &mut Out, key: &str, syntax: Syntax) {
    for (name, entry) in servers_at(doc, key, out) {
        let env_file = entry
            .get("envFile")
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.push(doc, Some(key), name, entry.clone(), syntax)
            .env_file = env_file;
    }
}

/// Move `from` to `to` in an object entry (when `to` is not already set).
pub(crate) fn rename(obj: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = obj.remove(from)
        && !obj.contains_key(to)
    {
        obj.insert(to.to_owned(), value);
    }
}

/// Seconds (number or numeric string) at `from` → milliseconds at `to`.
pub(crate) fn seconds_to_ms(obj: &mut Map<String, Value>, from: &str, to: &str) {
    let Some(value) = obj.remove(from) else {
        return;
    };
    let secs = match &value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    let converted = match secs {
        Some(s) if s.is_finite() && s >= 0.0 => Value::from((s * 1000.0).round() as u64),
        // Leave the wrong value for validation to report under the target name.
        _ => value,
    };
    if !obj.contains_key(to) {
        obj.insert(to.to_owned(), converted);
    }
}

/// Read a JSON/JSONC file for approval keys; problems become notes. `None` when absent.
pub(crate) fn read_aux(
    path: &Path,
    format: Format,
    notes: &mut Vec<(PathBuf, Note)>,
) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    match formats::parse(&text, format) {
        Ok(value) => Some(value),
        Err(e) => {
            notes.push((
                path.to_owned(),
                Note {
                    position: Some((e.line, e.column)),
                    server: None,
                    message: e.message,
                },
            ));
            None
        }
    }
}

/// A JSON array of strings as a set (non-strings ignored).
pub(crate) fn string_set(value: Option<&Value>) -> BTreeSet<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `true`, `"true"` or `1`.
pub(crate) fn truthy(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.as_str(), "true" | "1"),
        Some(Value::Number(n)) => n.as_u64() == Some(1),
        _ => false,
    }
}
