//! The JSON hosts (Claude Code, Cursor, VS Code, Gemini CLI): where in the file each keeps its
//! servers, the shape of one entry, and the file edited in place through the same syntax-tree
//! edit as mcpr's own files (comments and formatting kept, the result read back before it is
//! written).

use std::path::Path;

use serde_json::{Map, Value, json};

use super::super::super::{ConfigError, ServerConfig, Transport};
use super::super::{edited_text, load_object, server_to_json};
use super::vars::{self, Spelling};
use super::{Host, HostScope};

/// The keys leading to the servers' object, most likely first: Claude Code's local scope keys
/// its project by the symlink-free path, but an entry under the path as given is used when it
/// is the one that exists.
pub(super) fn servers_key(
    host: Host,
    scope: HostScope,
    cwd: &Path,
    cwd_real: &Path,
) -> Vec<Vec<String>> {
    let path = |keys: &[&str]| keys.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>();
    match (host, scope) {
        (Host::Claude, HostScope::Local) => {
            let mut keys = vec![cwd_real.to_string_lossy().into_owned()];
            let given = cwd.to_string_lossy().into_owned();
            if !keys.contains(&given) {
                keys.push(given);
            }
            keys.iter()
                .map(|key| path(&["projects", key, "mcpServers"]))
                .collect()
        }
        (Host::VsCode, _) => vec![path(&["servers"])],
        _ => vec![path(&["mcpServers"])],
    }
}

/// A JSON(C) host file loaded for editing.
#[derive(Debug)]
pub(super) struct JsonFile {
    /// The keys leading to the servers' object.
    at: Vec<String>,
    text: String,
    root: Map<String, Value>,
}

impl JsonFile {
    /// Load `path`; the servers are kept at the first of `candidates` whose project entry
    /// exists, else at the first.
    pub(super) fn load(path: &Path, candidates: Vec<Vec<String>>) -> Result<Self, ConfigError> {
        let (text, root) = load_object(path)?;
        let exists = |keys: &[String]| {
            let parent = &keys[..keys.len().saturating_sub(1)];
            let mut node = Some(&root);
            for key in parent {
                node = node.and_then(|n| n.get(key)).and_then(Value::as_object);
            }
            node.is_some()
        };
        let at = candidates
            .iter()
            .find(|keys| exists(keys))
            .or_else(|| candidates.first())
            .cloned()
            .unwrap_or_default();
        Ok(JsonFile { at, text, root })
    }

    fn servers(&self) -> Option<&Map<String, Value>> {
        let mut node = &self.root;
        for key in &self.at {
            node = node.get(key)?.as_object()?;
        }
        Some(node)
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.servers().is_some_and(|s| s.contains_key(name))
    }

    /// Put `entry` under `name`, creating the objects on the way; one that exists but is not
    /// an object is an error (the file is the host's: it is never replaced wholesale).
    pub(super) fn set(&mut self, path: &Path, name: &str, entry: Value) -> Result<(), ConfigError> {
        let mut node = &mut self.root;
        for (depth, key) in self.at.iter().enumerate() {
            let slot = node
                .entry(key.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            node = slot.as_object_mut().ok_or_else(|| ConfigError::Parse {
                path: path.to_owned(),
                line: 1,
                column: 1,
                message: format!(
                    "`{}` is not an object; mcpr will not replace it",
                    self.at[..=depth].join(".")
                ),
            })?;
        }
        node.insert(name.to_owned(), entry);
        Ok(())
    }

    /// The new text of the file: the old one with only the change made.
    pub(super) fn text(&self, path: &Path) -> Result<String, ConfigError> {
        edited_text(path, &self.text, &self.root)
    }
}

/// The fields each host reads, in the order they are written (`type` is handled first).
fn fields(host: Host, stdio: bool) -> &'static [&'static str] {
    match (host, stdio) {
        (Host::Claude, true) => &["command", "args", "env", "cwd", "timeout", "alwaysLoad"],
        (Host::Claude, false) => &["url", "headers", "timeout", "alwaysLoad"],
        (Host::Cursor | Host::VsCode, true) => &["command", "args", "env"],
        (Host::Cursor | Host::VsCode, false) => &["url", "headers"],
        (Host::Gemini, true) => &[
            "command",
            "args",
            "env",
            "cwd",
            "timeout",
            "enabled_tools",
            "disabled_tools",
        ],
        (Host::Gemini, false) => &[
            "url",
            "headers",
            "timeout",
            "enabled_tools",
            "disabled_tools",
        ],
        (Host::Codex, _) => &[],
    }
}

/// Codex's by-name settings as references the JSON hosts expand: `env_vars` → `env`,
/// `bearer_token_env_var` → an `Authorization` header, `env_http_headers` → `headers`.
fn fold_named_variables(entry: &mut Map<String, Value>, stdio: bool) {
    let env_vars = entry.remove("env_vars");
    let bearer = entry.remove("bearer_token_env_var");
    let env_headers = entry.remove("env_http_headers");
    let mut add = |key: &str, name: String, value: String| {
        let slot = entry.entry(key).or_insert_with(|| json!({}));
        if let Some(map) = slot.as_object_mut() {
            map.entry(name).or_insert(Value::String(value));
        }
    };
    if stdio {
        for var in env_vars
            .iter()
            .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        {
            if let Some(var) = var.as_str() {
                add("env", var.to_owned(), format!("${{{var}}}"));
            }
        }
        return;
    }
    if let Some(Value::String(var)) = bearer {
        add(
            "headers",
            "Authorization".into(),
            format!("Bearer ${{{var}}}"),
        );
    }
    if let Some(Value::Object(headers)) = env_headers {
        for (header, var) in headers {
            if let Some(var) = var.as_str() {
                add("headers", header, format!("${{{var}}}"));
            }
        }
    }
}

/// `config` as `host` writes an entry, and the settings it has no field for.
pub(super) fn entry(host: Host, config: &ServerConfig) -> Result<(Value, Vec<String>), String> {
    let Value::Object(mut source) = server_to_json(config) else {
        return Err("the server's entry is not an object".into());
    };
    let stdio = matches!(config.transport, Transport::Stdio(_));
    fold_named_variables(&mut source, stdio);
    let kind = source.remove("type");
    let mut out = Map::new();
    match host {
        Host::Claude | Host::VsCode => {
            out.insert("type".into(), kind.unwrap_or_else(|| json!("stdio")));
        }
        // Cursor reads a URL as streamable HTTP unless told it is SSE.
        Host::Cursor => {
            if kind.as_ref().and_then(Value::as_str) == Some("sse") {
                out.insert("type".into(), json!("sse"));
            }
        }
        // Gemini tells the two HTTP transports apart by the key of the URL.
        Host::Gemini => {
            if kind.as_ref().and_then(Value::as_str) == Some("http")
                && let Some(url) = source.remove("url")
            {
                out.insert("httpUrl".into(), url);
            }
        }
        Host::Codex => return Err("Codex is written as TOML".into()),
    }
    for field in fields(host, stdio) {
        if let Some(value) = source.remove(*field) {
            let key = match (host, *field) {
                (Host::Gemini, "enabled_tools") => "includeTools",
                (Host::Gemini, "disabled_tools") => "excludeTools",
                _ => field,
            };
            out.insert(key.to_owned(), value);
        }
    }
    let spelling = match host {
        Host::VsCode => Spelling::VsCode,
        Host::Cursor => Spelling::Cursor,
        _ => Spelling::Standard,
    };
    let mut value = Value::Object(out);
    vars::respell_all(&mut value, spelling, host.name(), "")?;
    // `sandboxEnabled` goes with `sandbox`: one name for the one setting.
    source.remove("sandboxEnabled");
    let dropped = source
        .into_iter()
        .map(|(key, value)| match value {
            Value::Bool(false) => format!("{key}: false"),
            _ => key,
        })
        .collect();
    Ok((value, dropped))
}
