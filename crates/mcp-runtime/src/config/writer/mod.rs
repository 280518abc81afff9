//! Editing mcpr's own config files (`docs/hosts.md`): `$XDG_CONFIG_HOME/mcpr/mcp.json` (user)
//! and `.mcpr/mcp.json` (project). Other hosts' files are written by [`hosts`]
//! (`mcpr add --to`), through the same in-place edit.
//!
//! Every write is atomic (a temp file in the same directory, then `rename`) with mode 0600, and
//! keeps the rest of the file (other servers, unknown keys, key order, comments and formatting)
//! as it was; a file that cannot be edited so is refused and left untouched. A file that is a
//! symbolic link (a dotfiles repository) is edited where the link points, and stays a link;
//! a project file that links outside the project is refused. Turning a
//! server owned by another tool on or off edits the user file's `enabledServers` /
//! `disabledServers` lists, never the other tool's file.
//!
//! ```
//! use mcp_runtime::config::writer::McprFile;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("mcp.json");
//! let mut file = McprFile::load(&path).unwrap();
//! file.set_server("echo", serde_json::json!({"command": "mcpr", "args": ["mock"]}));
//! file.save().unwrap();
//! assert!(McprFile::load(&path).unwrap().server("echo").is_some());
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

mod cst;
pub mod hosts;

use super::Level;
use super::discover::{DiscoveryOptions, ServerState};
use super::formats::{self, Format};
use super::providers::Ctx;
use super::providers::mcpr::{PROJECT_FILE, user_file};
use super::{ConfigError, Discovery, HttpKind, ServerConfig, Transport};

/// Which of mcpr's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `$XDG_CONFIG_HOME/mcpr/mcp.json`.
    User,
    /// `.mcpr/mcp.json` in the project.
    Project,
}

/// The user file for these options (`None` when neither `XDG_CONFIG_HOME` nor a home is known).
pub fn user_config_path(options: &DiscoveryOptions) -> Option<PathBuf> {
    let home = options.home_dir();
    let cx = Ctx {
        cwd: Path::new("."),
        cwd_real: Path::new("."),
        home: home.as_deref(),
        env: &options.env,
    };
    user_file(&cx)
}

/// `<cwd>/.mcpr/mcp.json`.
pub fn project_config_path(cwd: &Path) -> PathBuf {
    cwd.join(PROJECT_FILE)
}

/// The file of `scope`.
pub fn config_path(
    options: &DiscoveryOptions,
    cwd: &Path,
    scope: Scope,
) -> Result<PathBuf, ConfigError> {
    match scope {
        Scope::Project => {
            let path = project_config_path(cwd);
            inside_project(cwd, &path)?;
            Ok(path)
        }
        Scope::User => user_config_path(options).ok_or_else(|| ConfigError::Discovery {
            path: "mcp.json".into(),
            message: "cannot locate the user config: neither XDG_CONFIG_HOME nor HOME is set"
                .into(),
        }),
    }
}

/// A project file that is (or lies in) a symbolic link leading out of the project is refused: a
/// repository must not make mcpr write to a file elsewhere (another tool's config, a dotfile).
fn inside_project(cwd: &Path, path: &Path) -> Result<(), ConfigError> {
    let refuse = |target: &Path| ConfigError::Write {
        path: path.to_owned(),
        source: std::io::Error::other(format!(
            "it links to {}, outside the project; mcpr does not write there (edit that file yourself)",
            crate::fsutil::display_path(target)
        )),
    };
    let Ok(target) = crate::fsutil::resolve_links(path) else {
        return Err(refuse(path));
    };
    let Some(dir) = target.parent().and_then(|d| std::fs::canonicalize(d).ok()) else {
        // The directory does not exist yet: it will be created inside the project.
        return Ok(());
    };
    let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    if dir.starts_with(&root) {
        Ok(())
    } else {
        Err(refuse(&dir.join(target.file_name().unwrap_or_default())))
    }
}

/// Write `bytes` to `path` atomically, private (see [`crate::fsutil::write_atomic`]).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ConfigError> {
    crate::fsutil::write_atomic(path, bytes).map_err(|source| ConfigError::Write {
        path: path.to_owned(),
        source,
    })
}

/// The text of a config file about to be edited; a missing file is an empty one.
fn read_or_empty(path: &Path) -> Result<String, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// A JSON(C) file's text and its top-level object; a missing file is an empty one, a file that
/// does not parse (or is not an object) is an error with line and column.
fn load_object(path: &Path) -> Result<(String, Map<String, Value>), ConfigError> {
    let text = read_or_empty(path)?;
    let root = match formats::parse(&text, Format::Json) {
        Ok(Value::Null) => Map::new(),
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            return Err(ConfigError::Parse {
                path: path.to_owned(),
                line: 1,
                column: 1,
                message: "expected a JSON object".into(),
            });
        }
        Err(e) => {
            return Err(ConfigError::Parse {
                path: path.to_owned(),
                line: e.line,
                column: e.column,
                message: e.message,
            });
        }
    };
    Ok((text, root))
}

/// `text` (read from `path`) edited to hold `root`, keeping comments and formatting; an empty
/// file becomes pretty-printed JSON. A file that cannot be edited so is an error.
fn edited_text(path: &Path, text: &str, root: &Map<String, Value>) -> Result<String, ConfigError> {
    if text.trim().is_empty() {
        let text = serde_json::to_string_pretty(&Value::Object(root.clone())).unwrap_or_default();
        return Ok(format!("{text}\n"));
    }
    cst::edit_in_place(text, root).map_err(|reason| ConfigError::Write {
        path: path.to_owned(),
        source: std::io::Error::other(format!(
            "{reason}; the file was left unchanged (edit it by hand)"
        )),
    })
}

/// The two lists of the user file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// `disabledServers`: always off (beats everything).
    Disabled,
    /// `enabledServers`: on even when the defining file says `enabled: false`.
    Enabled,
}

impl List {
    fn key(self) -> &'static str {
        match self {
            List::Disabled => "disabledServers",
            List::Enabled => "enabledServers",
        }
    }
}

/// One of mcpr's config files, loaded for editing.
#[derive(Debug, Clone)]
pub struct McprFile {
    path: PathBuf,
    root: Map<String, Value>,
    /// The text as read: saving edits it in place, so comments and formatting stay.
    text: String,
}

impl McprFile {
    /// Load `path`; a missing file is an empty one. A file that does not parse is an error
    /// (with line and column): it is never overwritten.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let (text, root) = load_object(path)?;
        Ok(McprFile {
            path: path.to_owned(),
            root,
            text,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn servers(&self) -> Option<&Map<String, Value>> {
        self.root.get("mcpServers").and_then(Value::as_object)
    }

    fn servers_mut(&mut self) -> &mut Map<String, Value> {
        let slot = self
            .root
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        match slot {
            Value::Object(map) => map,
            _ => unreachable!("just made an object"),
        }
    }

    /// The raw entry of `name`.
    pub fn server(&self, name: &str) -> Option<&Value> {
        self.servers()?.get(name)
    }

    /// Names of the servers in the file, in file order.
    pub fn server_names(&self) -> Vec<String> {
        self.servers()
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Add or replace `name`; returns the previous entry.
    pub fn set_server(&mut self, name: &str, entry: Value) -> Option<Value> {
        self.servers_mut().insert(name.to_owned(), entry)
    }

    /// Remove `name`; `false` when it was not there.
    pub fn remove_server(&mut self, name: &str) -> bool {
        match self
            .root
            .get_mut("mcpServers")
            .and_then(Value::as_object_mut)
        {
            Some(servers) => servers.shift_remove(name).is_some(),
            None => false,
        }
    }

    /// Set `enabled` of the entry `name` (removing the key when `true`); `false` when absent.
    pub fn set_entry_enabled(&mut self, name: &str, enabled: bool) -> bool {
        let Some(Value::Object(entry)) = self
            .root
            .get_mut("mcpServers")
            .and_then(Value::as_object_mut)
            .and_then(|s| s.get_mut(name))
        else {
            return false;
        };
        entry.remove("disabled");
        if enabled {
            entry.remove("enabled");
        } else {
            entry.insert("enabled".into(), Value::Bool(false));
        }
        true
    }

    /// Whether `list` names `name`.
    pub fn listed(&self, list: List, name: &str) -> bool {
        self.root
            .get(list.key())
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|v| v.as_str() == Some(name)))
    }

    /// Add `name` to `list` or take it out; returns whether the file changed. An emptied list
    /// is removed.
    pub fn set_listed(&mut self, list: List, name: &str, present: bool) -> bool {
        if self.listed(list, name) == present {
            return false;
        }
        let slot = self
            .root
            .entry(list.key())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            *slot = Value::Array(Vec::new());
        }
        if let Value::Array(items) = slot {
            if present {
                items.push(Value::from(name));
            } else {
                items.retain(|v| v.as_str() != Some(name));
            }
            if items.is_empty() {
                self.root.shift_remove(list.key());
            }
        }
        true
    }

    /// Write the file back (atomic, 0600), changing only what was edited: comments, blank
    /// lines and formatting elsewhere stay. A file that cannot be edited so is left as it was.
    pub fn save(&self) -> Result<(), ConfigError> {
        let text = edited_text(&self.path, &self.text, &self.root)?;
        write_atomic(&self.path, text.as_bytes())
    }
}

/// A server in mcpr's file format (the inverse of [`server_from_json`](super::server_from_json)).
///
/// ```
/// use mcp_runtime::config::{ServerConfig, server_from_json, writer::server_to_json};
/// let cfg = ServerConfig::stdio("npx", ["-y", "pkg"]);
/// assert_eq!(server_from_json("x", &server_to_json(&cfg)).unwrap(), cfg);
/// ```
pub fn server_to_json(config: &ServerConfig) -> Value {
    let mut entry = Map::new();
    let non_empty = |map: &BTreeMap<String, String>| json!(map);
    match &config.transport {
        Transport::Stdio(stdio) => {
            entry.insert("command".into(), json!(stdio.command));
            if !stdio.args.is_empty() {
                entry.insert("args".into(), json!(stdio.args));
            }
            if !stdio.env.is_empty() {
                entry.insert("env".into(), non_empty(&stdio.env));
            }
            if let Some(cwd) = &stdio.cwd {
                entry.insert("cwd".into(), json!(cwd.to_string_lossy()));
            }
            if let Some(sandbox) = &stdio.sandbox {
                entry.insert("sandboxEnabled".into(), json!(true));
                entry.insert("sandbox".into(), sandbox.to_json());
            }
        }
        Transport::Http(http) => {
            let kind = match http.kind {
                HttpKind::StreamableHttp => "http",
                HttpKind::Sse => "sse",
            };
            entry.insert("type".into(), json!(kind));
            entry.insert("url".into(), json!(http.url));
            if !http.headers.is_empty() {
                entry.insert("headers".into(), non_empty(&http.headers));
            }
        }
    }
    let optional = [
        ("timeout", config.timeout_ms),
        ("startup_timeout_ms", config.startup_timeout_ms),
        ("tool_timeout_ms", config.tool_timeout_ms),
    ];
    for (key, value) in optional {
        if let Some(ms) = value {
            entry.insert(key.into(), json!(ms));
        }
    }
    if !config.enabled {
        entry.insert("enabled".into(), json!(false));
    }
    if !config.env_vars.is_empty() {
        entry.insert("env_vars".into(), json!(config.env_vars));
    }
    if let Some(var) = &config.bearer_token_env_var {
        entry.insert("bearer_token_env_var".into(), json!(var));
    }
    if !config.env_headers.is_empty() {
        entry.insert("env_http_headers".into(), non_empty(&config.env_headers));
    }
    if let Some(tools) = &config.enabled_tools {
        entry.insert("enabled_tools".into(), json!(tools));
    }
    if !config.disabled_tools.is_empty() {
        entry.insert("disabled_tools".into(), json!(config.disabled_tools));
    }
    if config.always_load {
        entry.insert("alwaysLoad".into(), json!(true));
    }
    Value::Object(entry)
}

/// Add `name` to mcpr's file of `scope`. An existing entry of that name is an error unless
/// `replace`. Returns the file written.
pub fn add_server(
    options: &DiscoveryOptions,
    cwd: &Path,
    scope: Scope,
    name: &str,
    config: &ServerConfig,
    replace: bool,
) -> Result<PathBuf, ConfigError> {
    let path = config_path(options, cwd, scope)?;
    let mut file = McprFile::load(&path)?;
    if !replace && file.server(name).is_some() {
        return Err(ConfigError::AlreadyDefined {
            server: name.to_owned(),
            path,
        });
    }
    file.set_server(name, server_to_json(config));
    file.save()?;
    Ok(path)
}

/// Remove `name` from mcpr's files: from `scope` when given, else from the one file that has
/// it (both having it is an error asking for a scope). A server defined only by another tool is
/// an error that says so (`remove` edits only mcpr's files; `disable` turns it off).
pub fn remove_server(
    options: &DiscoveryOptions,
    cwd: &Path,
    name: &str,
    scope: Option<Scope>,
    discovery: Option<&Discovery>,
) -> Result<PathBuf, ConfigError> {
    let scopes = match scope {
        Some(scope) => vec![scope],
        None => vec![Scope::Project, Scope::User],
    };
    let mut holders = Vec::new();
    for scope in scopes {
        let path = config_path(options, cwd, scope)?;
        let file = McprFile::load(&path)?;
        if file.server(name).is_some() {
            holders.push(file);
        }
    }
    match holders.len() {
        1 => {
            let mut file = holders.remove(0);
            file.remove_server(name);
            file.save()?;
            Ok(file.path)
        }
        0 => {
            let other = discovery.and_then(|d| d.servers.iter().find(|s| s.name == name));
            Err(match other {
                Some(other) => ConfigError::ForeignDefinition {
                    server: name.to_owned(),
                    provider: other.source.provider_name.to_string(),
                    path: other.source.path.clone(),
                },
                None => ConfigError::Edit {
                    server: name.to_owned(),
                    message: "not found in mcpr's config files".into(),
                },
            })
        }
        _ => Err(ConfigError::AmbiguousScope {
            server: name.to_owned(),
        }),
    }
}

/// What [`set_enabled`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnableChange {
    /// The file written (always one of mcpr's).
    pub path: PathBuf,
    /// Whether anything changed (`false`: it already was so).
    pub changed: bool,
    /// What still keeps the server from starting afterwards, if anything.
    pub still_off: Option<StillOff>,
}

/// Why a server that was just turned on still does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StillOff {
    /// It comes from a project's config that is not trusted yet.
    #[error("it comes from the project's config and is pending approval")]
    PendingApproval,
    /// Its entry is invalid.
    #[error("its config is invalid: {0}")]
    Invalid(String),
    /// It runs mcpr's gateway over the same configs, which mcpr never starts.
    #[error(
        "it runs `mcpr serve` over these same configs, which would start itself again; a \
         gateway in front of chosen servers takes `--strict-config --config FILE`"
    )]
    StartsItself,
}

/// Turn `name` on or off. A server in mcpr's user file has its `enabled` field edited; any
/// other server (another tool's, or mcpr's project file, which is shared with the repository)
/// is listed in the user file's `enabledServers` / `disabledServers`.
pub fn set_enabled(
    discovery: &Discovery,
    options: &DiscoveryOptions,
    name: &str,
    enabled: bool,
) -> Result<EnableChange, ConfigError> {
    let entries: Vec<_> = discovery
        .servers
        .iter()
        .filter(|s| s.name == name)
        .collect();
    if entries.is_empty() {
        return Err(ConfigError::NotConfigured {
            server: name.to_owned(),
        });
    }
    // The definition that counts: the winner, else the first one seen.
    let winner = entries
        .iter()
        .find(|s| {
            !matches!(
                s.state,
                ServerState::Shadowed { .. } | ServerState::PendingApproval
            )
        })
        .or_else(|| entries.first())
        .copied()
        .ok_or_else(|| ConfigError::Edit {
            server: name.to_owned(),
            message: "not found".into(),
        })?;
    let user_path = user_config_path(options).ok_or_else(|| ConfigError::Edit {
        server: name.to_owned(),
        message: "cannot locate mcpr's user config (set HOME or XDG_CONFIG_HOME)".into(),
    })?;
    let mut user = McprFile::load(&user_path)?;
    let owned_by_user_file = winner.source.provider_id == "mcpr"
        && winner.source.level == Level::User
        && user.server(name).is_some();
    let mut changed = false;
    if enabled {
        let listed_off = user.listed(List::Disabled, name);
        changed |= user.set_listed(List::Disabled, name, false);
        if owned_by_user_file {
            let was_off = user
                .server(name)
                .is_some_and(|e| e.get("enabled").is_some() || e.get("disabled").is_some());
            if was_off {
                changed |= user.set_entry_enabled(name, true);
            }
        } else {
            // Off by its own file (`enabled: false`) or by a host's rejection
            // (`disabledMcpjsonServers`), not only by our list.
            let defined_off = winner.config.as_ref().is_some_and(|c| !c.enabled)
                || (winner.state == ServerState::Disabled && !listed_off);
            if defined_off {
                changed |= user.set_listed(List::Enabled, name, true);
            }
        }
    } else {
        changed |= user.set_listed(List::Enabled, name, false);
        if owned_by_user_file {
            let was_on =
                user.server(name).and_then(|e| e.get("enabled")) != Some(&Value::Bool(false));
            if was_on {
                changed |= user.set_entry_enabled(name, false);
            }
        } else {
            changed |= user.set_listed(List::Disabled, name, true);
        }
    }
    if changed {
        user.save()?;
    }
    let still_off = if !enabled {
        None
    } else {
        match &winner.state {
            ServerState::PendingApproval => Some(StillOff::PendingApproval),
            ServerState::Invalid(reason) => Some(StillOff::Invalid(reason.clone())),
            ServerState::StartsItself => Some(StillOff::StartsItself),
            _ => None,
        }
    };
    Ok(EnableChange {
        path: user_path,
        changed,
        still_off,
    })
}

#[cfg(test)]
mod tests;
