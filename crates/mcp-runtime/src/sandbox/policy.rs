//! What a sandboxed stdio server may do: VS Code's `sandboxEnabled` and `sandbox` keys, read
//! strictly from any config file, their paths expanded, and how a host name is matched against
//! `allowedDomains` and `deniedDomains`.
//!
//! The meaning is VS Code's: reads are allowed except `denyRead`; writes are denied except
//! `allowWrite` (minus `denyWrite`) and a private temporary directory; the network is closed
//! unless `allowedDomains` names hosts, which are then reached through a filtering proxy.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::ConfigError;

/// The sandbox of one stdio server (`sandboxEnabled: true` with its `sandbox` object).
///
/// ```
/// use mcp_runtime::config::{Transport, server_from_json};
/// let cfg = server_from_json("fs", &serde_json::json!({
///     "command": "mcp-fs",
///     "sandboxEnabled": true,
///     "sandbox": {
///         "filesystem": {"allowWrite": ["/srv/data"], "denyRead": ["/home/me/.ssh"]},
///         "network": {"allowedDomains": ["api.example.com", "*.cdn.example.com"]}
///     }
/// })).unwrap();
/// let Transport::Stdio(stdio) = &cfg.transport else { unreachable!() };
/// let sandbox = stdio.sandbox.as_ref().unwrap();
/// assert!(sandbox.allows_host("img.cdn.example.com"));
/// assert!(!sandbox.allows_host("cdn.example.com") && !sandbox.allows_host("example.org"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxPolicy {
    /// `filesystem.allowWrite`: the only places (besides a private temporary directory) the
    /// server may write, with everything beneath them.
    pub allow_write: Vec<PathBuf>,
    /// `filesystem.denyRead`: hidden from the server (an empty directory, an empty file).
    pub deny_read: Vec<PathBuf>,
    /// `filesystem.denyWrite`: read-only even inside `allowWrite`.
    pub deny_write: Vec<PathBuf>,
    /// `network.allowedDomains`: the hosts reachable through the sandbox's proxy; empty means
    /// no network at all. `*.example.com` matches the subdomains of `example.com`, not itself.
    pub allowed_domains: Vec<String>,
    /// `network.deniedDomains`: never reachable, even when `allowedDomains` matches.
    pub denied_domains: Vec<String>,
}

impl SandboxPolicy {
    /// Whether the proxy may connect the server to `host` (a name or an IP address, without
    /// port): a match in `allowedDomains` and none in `deniedDomains`.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let matches = |pattern: &String| match pattern.strip_prefix("*.") {
            Some(parent) => host
                .strip_suffix(parent)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            None => host == *pattern,
        };
        !self.denied_domains.iter().any(matches) && self.allowed_domains.iter().any(matches)
    }

    /// The `sandbox` object as a config file holds it (empty lists left out).
    pub fn to_json(&self) -> Value {
        let mut filesystem = Map::new();
        let mut network = Map::new();
        let paths = |paths: &[PathBuf]| {
            Value::from_iter(paths.iter().map(|path| path.to_string_lossy().into_owned()))
        };
        for (key, list) in [
            ("allowWrite", &self.allow_write),
            ("denyRead", &self.deny_read),
            ("denyWrite", &self.deny_write),
        ] {
            if !list.is_empty() {
                filesystem.insert(key.into(), paths(list));
            }
        }
        for (key, list) in [
            ("allowedDomains", &self.allowed_domains),
            ("deniedDomains", &self.denied_domains),
        ] {
            if !list.is_empty() {
                network.insert(key.into(), Value::from_iter(list.iter().cloned()));
            }
        }
        let mut sandbox = Map::new();
        for (key, section) in [("filesystem", filesystem), ("network", network)] {
            if !section.is_empty() {
                sandbox.insert(key.into(), Value::Object(section));
            }
        }
        Value::Object(sandbox)
    }

    /// Whether the server gets a network at all (through the proxy).
    pub fn has_network(&self) -> bool {
        !self.allowed_domains.is_empty()
    }

    /// Expand each path with `expand` (which names the field on error), then `~/` to `home`;
    /// every path must end up absolute.
    pub(crate) fn expand_paths(
        &mut self,
        expand: &dyn Fn(&str, &str) -> Result<String, ConfigError>,
        home: Option<&Path>,
        invalid: &dyn Fn(&str, String) -> ConfigError,
    ) -> Result<(), ConfigError> {
        for (key, paths) in [
            ("allowWrite", &mut self.allow_write),
            ("denyRead", &mut self.deny_read),
            ("denyWrite", &mut self.deny_write),
        ] {
            for (i, path) in paths.iter_mut().enumerate() {
                let field = format!("sandbox.filesystem.{key}[{i}]");
                let text = expand(&field, &path.to_string_lossy())?;
                let expanded = match (text.as_str(), home) {
                    ("~", Some(home)) => home.to_owned(),
                    (text, Some(home)) if text.starts_with("~/") => home.join(&text[2..]),
                    (text, _) => PathBuf::from(text),
                };
                if !expanded.is_absolute() {
                    return Err(invalid(
                        &field,
                        format!(
                            "`{text}` is not an absolute path (start it with `/`, `~/`, \
                             `${{userHome}}` or `${{workspaceFolder}}`)"
                        ),
                    ));
                }
                *path = expanded;
            }
        }
        Ok(())
    }
}

/// Read `sandboxEnabled` and `sandbox` of one server entry: `None` unless `sandboxEnabled` is
/// `true`. A `sandbox` object is checked even when it does not apply, so that a mistake in it
/// never goes unnoticed.
pub(crate) fn from_entry(
    entry: &Map<String, Value>,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Option<SandboxPolicy>, ConfigError> {
    let enabled = match entry.get("sandboxEnabled") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(enabled)) => *enabled,
        Some(other) => {
            return Err(invalid(
                "sandboxEnabled",
                format!("expected true or false, found {}", kind_of(other)),
            ));
        }
    };
    let policy = match entry.get("sandbox") {
        None | Some(Value::Null) => SandboxPolicy::default(),
        Some(Value::Object(sandbox)) => policy_from(sandbox, invalid)?,
        Some(other) => {
            return Err(invalid(
                "sandbox",
                format!("expected an object, found {}", kind_of(other)),
            ));
        }
    };
    Ok(enabled.then_some(policy))
}

fn policy_from(
    sandbox: &Map<String, Value>,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<SandboxPolicy, ConfigError> {
    let mut policy = SandboxPolicy::default();
    for (key, value) in sandbox {
        let field = format!("sandbox.{key}");
        if !matches!(key.as_str(), "filesystem" | "network") {
            return Err(invalid(
                &field,
                "unknown key (expected filesystem or network)".into(),
            ));
        }
        let section = match value {
            Value::Object(section) => section,
            Value::Null => continue,
            other => {
                return Err(invalid(
                    &field,
                    format!("expected an object, found {}", kind_of(other)),
                ));
            }
        };
        for (name, value) in section {
            let field = format!("{field}.{name}");
            let list = strings(&field, value, invalid)?;
            match (key.as_str(), name.as_str()) {
                ("filesystem", "allowWrite") => policy.allow_write = paths(list),
                ("filesystem", "denyRead") => policy.deny_read = paths(list),
                ("filesystem", "denyWrite") => policy.deny_write = paths(list),
                ("network", "allowedDomains") => {
                    policy.allowed_domains = domains(&field, list, invalid)?;
                }
                ("network", "deniedDomains") => {
                    policy.denied_domains = domains(&field, list, invalid)?;
                }
                ("filesystem", _) => {
                    return Err(invalid(
                        &field,
                        "unknown key (expected allowWrite, denyRead or denyWrite)".into(),
                    ));
                }
                _ => {
                    return Err(invalid(
                        &field,
                        "unknown key (expected allowedDomains or deniedDomains)".into(),
                    ));
                }
            }
        }
    }
    Ok(policy)
}

fn strings(
    field: &str,
    value: &Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<String>, ConfigError> {
    let Value::Array(items) = value else {
        return Err(invalid(
            field,
            format!("expected a list of strings, found {}", kind_of(value)),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
            Value::String(_) => Err(invalid(&format!("{field}[{i}]"), "is empty".into())),
            other => Err(invalid(
                &format!("{field}[{i}]"),
                format!("expected a string, found {}", kind_of(other)),
            )),
        })
        .collect()
}

fn paths(list: Vec<String>) -> Vec<PathBuf> {
    list.into_iter().map(PathBuf::from).collect()
}

/// Host names as VS Code takes them: `api.example.com`, an IPv4 address, `localhost`, or
/// `*.example.com` for every subdomain of `example.com` (and a wildcard over a bare top-level
/// domain is refused as too broad).
fn domains(
    field: &str,
    list: Vec<String>,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<String>, ConfigError> {
    list.into_iter()
        .enumerate()
        .map(|(i, domain)| {
            let domain = domain.to_ascii_lowercase();
            let (wildcard, name) = match domain.strip_prefix("*.") {
                Some(name) => (true, name),
                None => (false, domain.as_str()),
            };
            let label_ok = |label: &str| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            };
            let valid = name.len() <= 253 && name.split('.').all(label_ok);
            if !valid {
                return Err(invalid(
                    &format!("{field}[{i}]"),
                    format!(
                        "`{domain}` is not a host name (write `api.example.com` or \
                         `*.example.com`, without scheme, port or path)"
                    ),
                ));
            }
            if wildcard && !name.contains('.') {
                return Err(invalid(
                    &format!("{field}[{i}]"),
                    format!("`{domain}` is too broad: name a domain below a top-level domain"),
                ));
            }
            Ok(domain)
        })
        .collect()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(entry: Value) -> Result<Option<SandboxPolicy>, String> {
        let invalid = |field: &str, message: String| ConfigError::Invalid {
            file: None,
            server: "s".into(),
            field: field.into(),
            message,
        };
        from_entry(entry.as_object().unwrap(), &invalid).map_err(|e| e.to_string())
    }

    #[test]
    fn the_sandbox_applies_only_when_enabled_but_is_always_checked() {
        let sandbox = json!({"filesystem": {"allowWrite": ["/w"]}});
        assert_eq!(read(json!({"sandbox": sandbox})).unwrap(), None);
        let on = read(json!({"sandboxEnabled": true, "sandbox": sandbox}))
            .unwrap()
            .unwrap();
        assert_eq!(on.allow_write, [PathBuf::from("/w")]);
        assert!(!on.has_network());
        assert_eq!(
            read(json!({"sandboxEnabled": true})).unwrap(),
            Some(SandboxPolicy::default())
        );
        let bad = read(json!({"sandbox": {"filesystem": {"allowWrite": "/w"}}})).unwrap_err();
        assert!(bad.contains("sandbox.filesystem.allowWrite"), "{bad}");
    }

    #[test]
    fn malformed_sandboxes_name_the_field() {
        for (entry, field) in [
            (json!({"sandboxEnabled": "yes"}), "sandboxEnabled"),
            (json!({"sandboxEnabled": true, "sandbox": []}), "`sandbox`"),
            (
                json!({"sandboxEnabled": true, "sandbox": {"filesytem": {}}}),
                "sandbox.filesytem",
            ),
            (
                json!({"sandboxEnabled": true, "sandbox": {"filesystem": {"denyRaed": []}}}),
                "sandbox.filesystem.denyRaed",
            ),
            (
                json!({"sandboxEnabled": true, "sandbox": {"filesystem": {"denyRead": [1]}}}),
                "sandbox.filesystem.denyRead[0]",
            ),
            (
                json!({"sandboxEnabled": true, "sandbox": {"network": {"allowedDomains": ["https://x.com"]}}}),
                "sandbox.network.allowedDomains[0]",
            ),
            (
                json!({"sandboxEnabled": true, "sandbox": {"network": {"allowedDomains": ["*.com"]}}}),
                "too broad",
            ),
            (
                json!({"sandboxEnabled": true, "sandbox": {"network": {"allowedDomains": ["*"]}}}),
                "sandbox.network.allowedDomains[0]",
            ),
        ] {
            let error = read(entry.clone()).unwrap_err();
            assert!(error.contains(field), "{entry}: {error}");
        }
    }

    #[test]
    fn denied_domains_win_and_wildcards_match_subdomains_only() {
        let policy = SandboxPolicy {
            allowed_domains: vec!["*.example.com".into(), "api.github.com".into()],
            denied_domains: vec!["evil.example.com".into()],
            ..SandboxPolicy::default()
        };
        assert!(policy.allows_host("a.example.com"));
        assert!(policy.allows_host("A.B.Example.COM."));
        assert!(!policy.allows_host("example.com"));
        assert!(!policy.allows_host("badexample.com"));
        assert!(!policy.allows_host("evil.example.com"));
        assert!(policy.allows_host("api.github.com"));
        assert!(!policy.allows_host("github.com"));
        assert!(!SandboxPolicy::default().allows_host("api.github.com"));
    }

    #[test]
    fn paths_expand_home_and_must_be_absolute() {
        let invalid = |field: &str, message: String| ConfigError::Invalid {
            file: None,
            server: "s".into(),
            field: field.into(),
            message,
        };
        let expand = |_: &str, value: &str| Ok(value.replace("${userHome}", "/home/u"));
        let mut policy = SandboxPolicy {
            allow_write: vec!["~/work".into(), "${userHome}/w".into()],
            deny_read: vec!["~".into()],
            ..SandboxPolicy::default()
        };
        policy
            .expand_paths(&expand, Some(Path::new("/home/u")), &invalid)
            .unwrap();
        assert_eq!(
            policy.allow_write,
            [PathBuf::from("/home/u/work"), PathBuf::from("/home/u/w")]
        );
        assert_eq!(policy.deny_read, [PathBuf::from("/home/u")]);
        let mut relative = SandboxPolicy {
            deny_write: vec!["data".into()],
            ..SandboxPolicy::default()
        };
        let error = relative
            .expand_paths(&expand, None, &invalid)
            .unwrap_err()
            .to_string();
        assert!(error.contains("sandbox.filesystem.denyWrite[0]"), "{error}");
    }
}
