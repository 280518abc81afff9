//! Writing a server into another host's own config file (`mcpr add --to HOST`, `mcpr add-from`),
//! in that host's shape, at the place its reader in `config/providers/` reads it from:
//!
//! | Host | user | project | local |
//! |---|---|---|---|
//! | Claude Code | `~/.claude.json` `mcpServers` | `.mcp.json` | `~/.claude.json` `projects["<cwd>"].mcpServers` |
//! | Cursor | `~/.cursor/mcp.json` | `.cursor/mcp.json` | |
//! | VS Code | `<config>/Code/User/mcp.json` `servers` | `.vscode/mcp.json` | |
//! | Codex | `~/.codex/config.toml` `[mcp_servers.NAME]` | `.codex/config.toml` | |
//! | Gemini CLI | `~/.gemini/settings.json` | `.gemini/settings.json` | |
//!
//! Like mcpr's own files, every write is atomic and keeps the rest of the file (other keys,
//! comments, formatting): JSON(C) through the same syntax-tree edit (`json`), TOML through
//! `toml_edit` (`codex`). Unlike them, the file keeps its permissions: it is the host's, and the
//! host decides who may read it. A project file that links outside the project is refused.
//!
//! Values are written as they are: `${VAR}` stays a reference, spelled as the host reads it
//! (`vars`); a value the host cannot express is an error naming the field, and a setting it
//! has no field for is returned as "not carried" for the caller to show.

use std::path::{Path, PathBuf};

use super::super::discover::DiscoveryOptions;
use super::super::providers::{Ctx, claude, codex as codex_reader};
use super::super::{ConfigError, ServerConfig, Transport};

mod codex;
mod json;
mod vars;

/// A host whose config file mcpr can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    /// Claude Code.
    Claude,
    /// Cursor.
    Cursor,
    /// VS Code.
    VsCode,
    /// Codex.
    Codex,
    /// Gemini CLI.
    Gemini,
}

impl Host {
    /// Every host mcpr writes.
    pub const ALL: [Host; 5] = [
        Host::Claude,
        Host::Cursor,
        Host::VsCode,
        Host::Codex,
        Host::Gemini,
    ];

    /// The id of its discovery provider (`claude`, `cursor`, `vscode`, `codex`, `gemini`), as
    /// [`ServerSource::provider_id`](crate::config::ServerSource) names it.
    pub fn id(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Cursor => "cursor",
            Host::VsCode => "vscode",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
        }
    }

    /// Its display name.
    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "Claude Code",
            Host::Cursor => "Cursor",
            Host::VsCode => "VS Code",
            Host::Codex => "Codex",
            Host::Gemini => "Gemini CLI",
        }
    }
}

/// Which of a host's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostScope {
    /// The file in the user's home.
    User,
    /// The file in the project, shared with the repository.
    Project,
    /// Claude Code only: this project's entry in `~/.claude.json` (private to the user).
    Local,
}

/// The file of `host` for `scope`, as its reader finds it.
pub fn host_config_path(
    host: Host,
    scope: HostScope,
    options: &DiscoveryOptions,
    cwd: &Path,
) -> Result<PathBuf, ConfigError> {
    let home = options.home_dir();
    let cwd_real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    let cx = Ctx {
        cwd,
        cwd_real: &cwd_real,
        home: home.as_deref(),
        env: &options.env,
    };
    let no_home = || ConfigError::Discovery {
        path: host.id().into(),
        message: format!(
            "cannot locate {}'s user config: HOME is not set",
            host.name()
        ),
    };
    let path = match (host, scope) {
        (Host::Claude, HostScope::User | HostScope::Local) => claude::user_file(&cx),
        (_, HostScope::Local) => {
            return Err(ConfigError::Discovery {
                path: host.id().into(),
                message: format!(
                    "the local scope is Claude Code's; {} has a user and a project file",
                    host.name()
                ),
            });
        }
        (Host::Claude, HostScope::Project) => Some(cx.project(".mcp.json")),
        (Host::Cursor, HostScope::User) => cx.home(".cursor/mcp.json"),
        (Host::Cursor, HostScope::Project) => Some(cx.project(".cursor/mcp.json")),
        (Host::VsCode, HostScope::User) => cx
            .app_config()
            .map(|dir| dir.join("Code").join("User").join("mcp.json")),
        (Host::VsCode, HostScope::Project) => Some(cx.project(".vscode/mcp.json")),
        (Host::Codex, HostScope::User) => codex_reader::user_file(&cx),
        (Host::Codex, HostScope::Project) => Some(cx.project(".codex/config.toml")),
        (Host::Gemini, HostScope::User) => cx.home(".gemini/settings.json"),
        (Host::Gemini, HostScope::Project) => Some(cx.project(".gemini/settings.json")),
    };
    let path = path.ok_or_else(no_home)?;
    if scope == HostScope::Project {
        super::inside_project(cwd, &path)?;
    }
    Ok(path)
}

/// One host's config file, loaded for adding servers.
#[derive(Debug)]
pub struct HostFile {
    host: Host,
    path: PathBuf,
    body: Body,
}

#[derive(Debug)]
enum Body {
    Json(json::JsonFile),
    Toml(codex::TomlFile),
}

impl HostFile {
    /// Load the file of `host` for `scope` (a missing file is an empty one; one that does not
    /// parse is an error, and is never overwritten).
    pub fn load(
        host: Host,
        scope: HostScope,
        options: &DiscoveryOptions,
        cwd: &Path,
    ) -> Result<Self, ConfigError> {
        let path = host_config_path(host, scope, options, cwd)?;
        let body = match host {
            Host::Codex => Body::Toml(codex::TomlFile::load(&path)?),
            _ => {
                let cwd_real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
                let at = json::servers_key(host, scope, cwd, &cwd_real);
                Body::Json(json::JsonFile::load(&path, at)?)
            }
        };
        Ok(HostFile { host, path, body })
    }

    /// The host.
    pub fn host(&self) -> Host {
        self.host
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file already defines `name` (where this scope keeps servers).
    pub fn contains(&self, name: &str) -> bool {
        match &self.body {
            Body::Json(file) => file.contains(name),
            Body::Toml(file) => file.contains(name),
        }
    }

    /// Add or replace `name`, in the host's shape. Returns the settings the host has no field
    /// for, which are not written (`timeout`, `alwaysLoad`, ...); a value it cannot express (a
    /// variable form it does not read) is an error naming the field, and so is a sandboxed
    /// server (no host but mcpr would confine it).
    pub fn set_server(
        &mut self,
        name: &str,
        config: &ServerConfig,
    ) -> Result<Vec<String>, ConfigError> {
        let edit = |message: String| ConfigError::Edit {
            server: name.to_owned(),
            message: format!("cannot be written for {}: {message}", self.host.name()),
        };
        if let Transport::Stdio(stdio) = &config.transport
            && stdio.sandbox.is_some()
        {
            // Dropping the setting would run the server unconfined: never silently.
            return Err(edit(
                "it runs in mcpr's sandbox, which the host does not have (there it would run \
                 unconfined); run it through mcpr instead"
                    .into(),
            ));
        }
        match &mut self.body {
            Body::Json(file) => {
                let (entry, dropped) = json::entry(self.host, config).map_err(edit)?;
                file.set(&self.path, name, entry)?;
                Ok(dropped)
            }
            Body::Toml(file) => file.set(name, config).map_err(edit),
        }
    }

    /// Write the file back: atomic, with the permissions it had, the rest of it as it was.
    pub fn save(&self) -> Result<(), ConfigError> {
        let text = match &self.body {
            Body::Json(file) => file.text(&self.path)?,
            Body::Toml(file) => file.text(),
        };
        crate::fsutil::write_atomic_keeping_mode(&self.path, text.as_bytes()).map_err(|source| {
            ConfigError::Write {
                path: self.path.clone(),
                source,
            }
        })
    }
}

/// `config` as mcpr's own file writes it (see [`server_to_json`](super::server_to_json)), its
/// references spelled as mcpr reads them: for a server copied from another host, whose
/// `${env:VAR}` becomes `${VAR}` and whose editor variables (`${workspaceFolder}`) or input
/// prompts are an error naming the field.
pub fn mcpr_entry(name: &str, config: &ServerConfig) -> Result<serde_json::Value, ConfigError> {
    let mut entry = super::server_to_json(config);
    vars::respell_all(&mut entry, vars::Spelling::Standard, "mcpr", "").map_err(|message| {
        ConfigError::Edit {
            server: name.to_owned(),
            message: format!("cannot be written for mcpr: {message}"),
        }
    })?;
    Ok(entry)
}
