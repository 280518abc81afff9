//! Secret values of installed servers: `$XDG_DATA_HOME/mcpr/secrets.json`, mode 0600, one entry
//! per server name, never in a config file.
//!
//! A config entry holds a marker (`mcpr-secret:env.API_KEY`) where the value belongs; the value
//! is put in when the server starts ([`inject`]). Each entry also records the command line
//! (or URL) it was stored for, so a project config that reuses the name for another program or
//! host gets nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConfigError, EnvSource, ServerConfig, Transport};
use crate::fsutil::{APP_DIR, BaseDir};

/// Marker of a value kept in the secret store: `mcpr-secret:<field>`, where `<field>` is
/// `env.NAME`, `headers.NAME` or `args.INDEX`.
pub const SECRET_PREFIX: &str = "mcpr-secret:";

/// File name of the store inside `$XDG_DATA_HOME/mcpr/`.
pub const SECRETS_FILE: &str = "secrets.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// What the values were stored for ([`target_of`]).
    target: String,
    /// Field (`env.NAME`, `headers.NAME`, `args.INDEX`) → value.
    values: BTreeMap<String, String>,
}

/// The secret store in one file.
#[derive(Debug, Clone)]
pub struct SecretStore {
    path: PathBuf,
}

impl SecretStore {
    /// A store kept in `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SecretStore { path: path.into() }
    }

    /// `$XDG_DATA_HOME/mcpr/secrets.json`, default `~/.local/share/mcpr/secrets.json`.
    pub fn default_path(env: &EnvSource) -> Option<PathBuf> {
        let home = env.get("HOME").map(PathBuf::from);
        let data = BaseDir::Data.resolve(|name| env.get(name), home.as_deref())?;
        Some(data.join(APP_DIR).join(SECRETS_FILE))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn load(&self) -> Result<File, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{}: unreadable: {e}",
                    crate::fsutil::display_path(&self.path)
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
            Err(e) => Err(format!("{}: {e}", crate::fsutil::display_path(&self.path))),
        }
    }

    fn save(&self, file: &File) -> Result<(), String> {
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| e.to_string())?;
        crate::fsutil::write_atomic(&self.path, &bytes).map_err(|source| {
            ConfigError::Write {
                path: self.path.clone(),
                source,
            }
            .to_string()
        })
    }

    /// Store `values` for the server `name` configured as `config`, replacing what it had.
    pub fn put(
        &self,
        name: &str,
        config: &ServerConfig,
        values: BTreeMap<String, String>,
    ) -> Result<(), String> {
        let mut file = self.load()?;
        file.servers.insert(
            name.to_owned(),
            Entry {
                target: target_of(config),
                values,
            },
        );
        self.save(&file)
    }

    /// Forget the secrets of `name`; `false` when it had none.
    pub fn remove(&self, name: &str) -> Result<bool, String> {
        let mut file = self.load()?;
        if file.servers.remove(name).is_none() {
            return Ok(false);
        }
        self.save(&file)?;
        Ok(true)
    }

    /// The stored field of `name`, if stored for this same `config`.
    fn get(
        &self,
        name: &str,
        config: &ServerConfig,
        field: &str,
    ) -> Result<Option<String>, String> {
        let file = self.load()?;
        Ok(file
            .servers
            .get(name)
            .filter(|entry| entry.target == target_of(config))
            .and_then(|entry| entry.values.get(field).cloned()))
    }
}

/// What secrets are bound to: the command line of a local server, the URL of a remote one.
fn target_of(config: &ServerConfig) -> String {
    match &config.transport {
        Transport::Stdio(stdio) => {
            let mut parts = vec![stdio.command.as_str()];
            parts.extend(stdio.args.iter().map(String::as_str));
            parts.join("\u{1f}")
        }
        Transport::Http(http) => http.url.clone(),
    }
}

/// Whether `config` refers to the secret store.
pub fn has_markers(config: &ServerConfig) -> bool {
    let marked = |v: &String| v.starts_with(SECRET_PREFIX);
    match &config.transport {
        Transport::Stdio(stdio) => stdio.env.values().any(marked) || stdio.args.iter().any(marked),
        Transport::Http(http) => http.headers.values().any(marked),
    }
}

/// Replace the markers of `out` (resolved from `config`) by the values stored for the server
/// `name`. A marker without a stored value is an error naming the field, never a value.
pub fn inject(
    name: &str,
    config: &ServerConfig,
    out: &mut ServerConfig,
    env: &EnvSource,
) -> Result<(), ConfigError> {
    if !has_markers(out) {
        return Ok(());
    }
    let store = SecretStore::default_path(env).map(SecretStore::new);
    let lookup = |field: &str| -> Result<String, ConfigError> {
        let store = store.as_ref().ok_or_else(|| {
            ConfigError::invalid(
                name,
                field,
                "no data directory for the secret store (HOME unset)",
            )
        })?;
        store
            .get(name, config, field)
            .map_err(|message| ConfigError::invalid(name, field, message))?
            .ok_or_else(|| {
                ConfigError::invalid(
                    name,
                    field,
                    format!(
                        "no secret stored for this server in {} (add it again to give the value)",
                        crate::fsutil::display_path(store.path())
                    ),
                )
            })
    };
    match &mut out.transport {
        Transport::Stdio(stdio) => {
            for value in stdio.env.values_mut().chain(stdio.args.iter_mut()) {
                if let Some(field) = value.strip_prefix(SECRET_PREFIX) {
                    *value = lookup(field)?;
                }
            }
        }
        Transport::Http(http) => {
            for value in http.headers.values_mut() {
                if let Some(field) = value.strip_prefix(SECRET_PREFIX) {
                    *value = lookup(field)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_bound_to_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let env = EnvSource::map([("XDG_DATA_HOME", data.to_str().unwrap())]);
        let mut config = ServerConfig::stdio("npx", ["-y", "pkg@1"]);
        if let Transport::Stdio(s) = &mut config.transport {
            s.env
                .insert("KEY".into(), format!("{SECRET_PREFIX}env.KEY"));
        }
        let store = SecretStore::new(SecretStore::default_path(&env).unwrap());
        store
            .put(
                "s",
                &config,
                BTreeMap::from([("env.KEY".into(), "v".into())]),
            )
            .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let mut out = config.clone();
        inject("s", &config, &mut out, &env).unwrap();
        let Transport::Stdio(s) = &out.transport else {
            panic!()
        };
        assert_eq!(s.env["KEY"], "v");
        // Same name, another program: nothing is handed out.
        let mut other = config.clone();
        if let Transport::Stdio(s) = &mut other.transport {
            s.args = vec!["-y".into(), "evil@1".into()];
        }
        let mut out = other.clone();
        let err = inject("s", &other, &mut out, &env).unwrap_err().to_string();
        assert!(
            err.contains("env.KEY") && err.contains("no secret stored"),
            "{err}"
        );
        assert!(store.remove("s").unwrap());
    }
}
