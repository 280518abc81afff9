//! Value expansion at discovery time: `${VAR}`, `${VAR:-default}`, `${env:VAR}` and
//! each host's own syntax (Gemini `$VAR` in `env`, OpenCode `{env:VAR}` / `{file:path}`, VS Code
//! `${workspaceFolder}` / `${userHome}` / `${input:id}`, Continue `${{ secrets.NAME }}`).
//!
//! An unset variable without a default is an error naming the variable; the caller adds the
//! server and field. Expanded values are secrets as far as display goes: show the unexpanded
//! config through [`RedactedServer`](super::RedactedServer).
//!
//! ```
//! use mcp_runtime::config::expand::{Context, EnvSource, Syntax, expand_str};
//! let env = EnvSource::map([("TOKEN", "s3cret")]);
//! let cx = Context::new(&env);
//! assert_eq!(expand_str("Bearer ${TOKEN}", Syntax::STANDARD, &cx).unwrap(), "Bearer s3cret");
//! assert_eq!(expand_str("${PORT:-8080}", Syntax::STANDARD, &cx).unwrap(), "8080");
//! assert!(expand_str("${NOPE}", Syntax::STANDARD, &cx).is_err());
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ConfigError, ServerConfig, Transport};

/// A variable lookup function.
pub type EnvFn = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where environment variables are looked up: the process environment, a fixed map (tests), or
/// any function.
#[derive(Clone, Default)]
pub enum EnvSource {
    /// `std::env::var`.
    #[default]
    Process,
    /// A fixed set of variables; everything else is unset.
    Map(BTreeMap<String, String>),
    /// Any lookup function.
    Fn(EnvFn),
}

impl EnvSource {
    /// A fixed map of variables.
    pub fn map<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        EnvSource::Map(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// The value of `name`, if set (and valid Unicode).
    pub fn get(&self, name: &str) -> Option<String> {
        match self {
            EnvSource::Process => std::env::var(name).ok(),
            EnvSource::Map(map) => map.get(name).cloned(),
            EnvSource::Fn(f) => f(name),
        }
    }
}

impl fmt::Debug for EnvSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvSource::Process => f.write_str("EnvSource::Process"),
            // Names only: values may be secrets.
            EnvSource::Map(map) => f.debug_set().entries(map.keys()).finish(),
            EnvSource::Fn(_) => f.write_str("EnvSource::Fn(..)"),
        }
    }
}

/// Which value syntaxes a host understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Syntax {
    /// `${VAR}`, `${VAR:-default}`, `${env:VAR}`.
    pub braces: bool,
    /// `$VAR` (bare) inside `env` values (Gemini CLI). Left as written when unset.
    pub bare_in_env: bool,
    /// `{env:VAR}` and `{file:path}` (OpenCode).
    pub opencode: bool,
    /// `${workspaceFolder}`, `${userHome}`, `${input:id}` (VS Code, Cursor).
    pub editor: bool,
    /// `${{ secrets.NAME }}` / `${{ inputs.NAME }}` (Continue), looked up in the environment.
    pub continue_secrets: bool,
}

impl Syntax {
    /// No expansion at all (Codex).
    pub const NONE: Syntax = Syntax {
        braces: false,
        bare_in_env: false,
        opencode: false,
        editor: false,
        continue_secrets: false,
    };
    /// `${VAR}`, `${VAR:-default}`, `${env:VAR}` (mcpr, Claude Code, Cursor, Windsurf, ...).
    pub const STANDARD: Syntax = Syntax {
        braces: true,
        ..Syntax::NONE
    };
    /// The standard forms plus the editor variables (VS Code, Cursor).
    pub const EDITOR: Syntax = Syntax {
        braces: true,
        editor: true,
        ..Syntax::NONE
    };
}

/// A VS Code `inputs` entry (`{type: "promptString", id, description, password}`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputSpec {
    /// Shown when the input is missing.
    pub description: Option<String>,
    /// Whether the host would mask it.
    pub password: bool,
}

/// What expansion needs besides the value.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// Variable lookup.
    pub env: &'a EnvSource,
    /// `${userHome}`, and `~/` in `{file:~/...}`.
    pub home: Option<&'a Path>,
    /// `${workspaceFolder}`: the project directory.
    pub workspace: Option<&'a Path>,
    /// Relative `{file:...}` paths resolve against it (the config file's directory).
    pub config_dir: Option<&'a Path>,
    /// Relative `envFile` paths resolve against it; `None` means [`Context::config_dir`]. A
    /// project's file sets the project directory; a user's file leaves it `None`, so that its
    /// `envFile` never depends on the directory mcpr happens to run in.
    pub env_file_dir: Option<&'a Path>,
    /// VS Code `inputs` of the file, by id.
    pub inputs: Option<&'a BTreeMap<String, InputSpec>>,
    /// When set, every file read (`{file:...}`, `envFile`) is recorded here, so that trust can
    /// bind to exactly the bytes that went into the values.
    pub reads: Option<&'a FileReads>,
}

/// The files read while expanding values, with the bytes read.
#[derive(Debug, Default)]
pub struct FileReads(RefCell<Vec<(PathBuf, Vec<u8>)>>);

impl FileReads {
    /// Nothing read yet.
    pub fn new() -> Self {
        FileReads::default()
    }

    /// The files read so far, in order, with their bytes (each path once).
    pub fn take(&self) -> Vec<(PathBuf, Vec<u8>)> {
        std::mem::take(&mut *self.0.borrow_mut())
    }

    fn record(&self, path: &Path, bytes: &[u8]) {
        let mut reads = self.0.borrow_mut();
        if !reads.iter().any(|(p, _)| p == path) {
            reads.push((path.to_owned(), bytes.to_vec()));
        }
    }
}

/// The largest file `{file:...}` or `envFile` may read: these hold a token or a few variables,
/// and a bound keeps a hostile path (a huge file, `/dev/zero`) from exhausting memory.
pub const MAX_REFERENCED_FILE: u64 = 1024 * 1024;

/// Read a file named by a config value: a regular file of at most [`MAX_REFERENCED_FILE`]
/// bytes (a FIFO or device would block or never end), recorded in `cx.reads`.
fn read_referenced(path: &Path, cx: &Context<'_>) -> Result<Vec<u8>, String> {
    let bytes = crate::fsutil::read_regular(path, MAX_REFERENCED_FILE).map_err(|e| {
        if e.kind() == std::io::ErrorKind::IsADirectory {
            "not a regular file".to_owned()
        } else {
            e.to_string()
        }
    })?;
    if let Some(reads) = cx.reads {
        reads.record(path, &bytes);
    }
    Ok(bytes)
}

impl<'a> Context<'a> {
    /// A context with only an environment.
    pub fn new(env: &'a EnvSource) -> Self {
        Context {
            env,
            home: None,
            workspace: None,
            config_dir: None,
            env_file_dir: None,
            inputs: None,
            reads: None,
        }
    }
}

/// Why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// `${VAR}` with `VAR` unset and no default.
    #[error("environment variable `{0}` is not set and has no default")]
    Unset(String),
    /// `${input:id}` that no environment variable provides.
    #[error("needs input `{id}`{}: set the environment variable `{env}`", description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    NeedsInput {
        /// The input's id.
        id: String,
        /// Its description, from `inputs`.
        description: Option<String>,
        /// The variable that would provide it.
        env: String,
    },
    /// `{file:path}` that cannot be read.
    #[error("cannot read `{path}`: {message}")]
    File {
        /// The path as resolved.
        path: String,
        /// The I/O error.
        message: String,
    },
    /// `${` without a closing `}`.
    #[error("unterminated `${{` reference")]
    Unterminated,
}

/// Expand one value (not an `env` value: bare `$VAR` is not recognised here).
pub fn expand_str(value: &str, syntax: Syntax, cx: &Context<'_>) -> Result<String, ExpandError> {
    expand_value(value, syntax, false, cx)
}

/// Expand one value; `in_env` enables bare `$VAR` for hosts that expand it in `env` only.
pub fn expand_value(
    value: &str,
    syntax: Syntax,
    in_env: bool,
    cx: &Context<'_>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(idx) = rest.find(['$', '{']) {
        out.push_str(&rest[..idx]);
        rest = &rest[idx..];
        if syntax.continue_secrets && rest.starts_with("${{") {
            let end = rest.find("}}").ok_or(ExpandError::Unterminated)?;
            let inner = rest[3..end].trim();
            let name = inner
                .strip_prefix("secrets.")
                .or_else(|| inner.strip_prefix("inputs."))
                .unwrap_or(inner);
            out.push_str(
                &cx.env
                    .get(name)
                    .ok_or_else(|| ExpandError::Unset(name.to_owned()))?,
            );
            rest = &rest[end + 2..];
        } else if syntax.braces && rest.starts_with("${") {
            let end = matching_brace(rest, 2).ok_or(ExpandError::Unterminated)?;
            let inner = &rest[2..end];
            match expand_reference(inner, syntax, cx)? {
                Some(text) => out.push_str(&text),
                None => out.push_str(&rest[..=end]),
            }
            rest = &rest[end + 1..];
        } else if syntax.opencode && (rest.starts_with("{env:") || rest.starts_with("{file:")) {
            let end = rest.find('}').ok_or(ExpandError::Unterminated)?;
            let inner = &rest[1..end];
            if let Some(name) = inner.strip_prefix("env:") {
                let name = name.trim();
                out.push_str(
                    &cx.env
                        .get(name)
                        .ok_or_else(|| ExpandError::Unset(name.to_owned()))?,
                );
            } else if let Some(path) = inner.strip_prefix("file:") {
                out.push_str(&read_file_ref(path.trim(), cx)?);
            }
            rest = &rest[end + 1..];
        } else if syntax.bare_in_env && in_env && rest.starts_with('$') {
            let name_len = var_name_len(&rest[1..]);
            if name_len == 0 {
                out.push('$');
                rest = &rest[1..];
                continue;
            }
            let name = &rest[1..=name_len];
            match cx.env.get(name) {
                Some(v) => out.push_str(&v),
                None => out.push_str(&rest[..=name_len]),
            }
            rest = &rest[1 + name_len..];
        } else {
            let c = rest.chars().next().unwrap_or('$');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The text of `${inner}`, or `None` to leave it as written (a form this host does not know).
fn expand_reference(
    inner: &str,
    syntax: Syntax,
    cx: &Context<'_>,
) -> Result<Option<String>, ExpandError> {
    if syntax.editor {
        match inner {
            "workspaceFolder" | "workspaceRoot" => {
                return Ok(cx.workspace.map(|p| p.to_string_lossy().into_owned()));
            }
            "workspaceFolderBasename" => {
                return Ok(cx
                    .workspace
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned()));
            }
            "userHome" => return Ok(cx.home.map(|p| p.to_string_lossy().into_owned())),
            "pathSeparator" | "/" => return Ok(Some(std::path::MAIN_SEPARATOR.to_string())),
            _ => {}
        }
        if let Some(id) = inner.strip_prefix("input:") {
            return resolve_input(id.trim(), cx).map(Some);
        }
    }
    let spec = inner.strip_prefix("env:").unwrap_or(inner);
    let (name, default) = match spec.find(":-") {
        Some(idx) => (&spec[..idx], Some(&spec[idx + 2..])),
        None => (spec, None),
    };
    if name.is_empty() || var_name_len(name) != name.len() {
        // `${config:...}`, `${command:...}`: not ours to interpret.
        return Ok(None);
    }
    match (
        cx.env
            .get(name)
            .filter(|v| default.is_none() || !v.is_empty()),
        default,
    ) {
        (Some(value), _) => Ok(Some(value)),
        (None, Some(default)) => expand_value(default, syntax, false, cx).map(Some),
        (None, None) => Err(ExpandError::Unset(name.to_owned())),
    }
}

/// `${input:id}`: the variable `id` itself, or `MCPR_INPUT_<ID>`; else "needs input".
fn resolve_input(id: &str, cx: &Context<'_>) -> Result<String, ExpandError> {
    let upper: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let env_name = format!("MCPR_INPUT_{upper}");
    for candidate in [env_name.as_str(), id, upper.as_str()] {
        if let Some(value) = cx.env.get(candidate) {
            return Ok(value);
        }
    }
    Err(ExpandError::NeedsInput {
        id: id.to_owned(),
        description: cx
            .inputs
            .and_then(|inputs| inputs.get(id))
            .and_then(|spec| spec.description.clone()),
        env: env_name,
    })
}

fn read_file_ref(path: &str, cx: &Context<'_>) -> Result<String, ExpandError> {
    let resolved: PathBuf = if let Some(rest) = path.strip_prefix("~/") {
        cx.home
            .map_or_else(|| PathBuf::from(path), |home| home.join(rest))
    } else {
        let p = Path::new(path);
        match cx.config_dir {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.to_owned(),
        }
    };
    let file_err = |message: String| ExpandError::File {
        path: crate::fsutil::display_path(&resolved),
        message,
    };
    let bytes = read_referenced(&resolved, cx).map_err(file_err)?;
    String::from_utf8(bytes)
        .map(|text| text.trim().to_owned())
        .map_err(|_| file_err("not valid UTF-8".into()))
}

/// Index of the `}` closing the `${` whose body starts at `from`, counting nested braces.
fn matching_brace(s: &str, from: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s[from..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(from + i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Length of the variable name (`[A-Za-z_][A-Za-z0-9_]*`) at the start of `s`.
fn var_name_len(s: &str) -> usize {
    let mut len = 0;
    for (i, c) in s.char_indices() {
        let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
        if !ok {
            break;
        }
        len = i + 1;
    }
    len
}

/// Whether a value contains a reference of any syntax (used for display: such a value is shown
/// as written, since it holds a name rather than a secret).
pub fn has_reference(value: &str) -> bool {
    value.contains("${") || value.contains("{env:") || value.contains("{file:")
}

/// Expand every string field of a server (command, args, env values, cwd, url, header values).
/// `env_file` (VS Code `envFile`) adds variables not already in `env`.
pub(crate) fn expand_server(
    name: &str,
    config: &ServerConfig,
    syntax: Syntax,
    env_file: Option<&str>,
    cx: &Context<'_>,
) -> Result<ServerConfig, ConfigError> {
    let field_err =
        |field: String, e: ExpandError| ConfigError::invalid(name, &field, e.to_string());
    let one = |field: &str, value: &str| {
        expand_value(value, syntax, false, cx).map_err(|e| field_err(field.to_owned(), e))
    };
    let map = |field: &str, values: &BTreeMap<String, String>, in_env: bool| {
        values
            .iter()
            .map(|(k, v)| {
                expand_value(v, syntax, in_env, cx)
                    .map(|v| (k.clone(), v))
                    .map_err(|e| field_err(format!("{field}.{k}"), e))
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
    };
    let mut out = config.clone();
    match &mut out.transport {
        Transport::Stdio(stdio) => {
            stdio.command = one("command", &stdio.command)?;
            stdio.args = stdio
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| one(&format!("args[{i}]"), a))
                .collect::<Result<_, _>>()?;
            stdio.env = map("env", &stdio.env, true)?;
            if let Some(cwd) = &stdio.cwd {
                stdio.cwd = Some(PathBuf::from(one("cwd", &cwd.to_string_lossy())?));
            }
            if let Some(sandbox) = &mut stdio.sandbox {
                // VS Code's variables (`${workspaceFolder}`, `${userHome}`) in every config.
                let paths = Syntax {
                    braces: true,
                    editor: true,
                    ..syntax
                };
                let expand = |field: &str, value: &str| {
                    expand_value(value, paths, false, cx)
                        .map_err(|e| field_err(field.to_owned(), e))
                };
                let invalid =
                    |field: &str, message: String| ConfigError::invalid(name, field, message);
                sandbox.expand_paths(&expand, cx.home, &invalid)?;
            }
            if let Some(file) = env_file {
                let path = one("envFile", file)?;
                let path = match cx.env_file_dir.or(cx.config_dir) {
                    Some(dir) if Path::new(&path).is_relative() => dir.join(&path),
                    _ => PathBuf::from(&path),
                };
                let invalid = |e: String| {
                    ConfigError::invalid(
                        name,
                        "envFile",
                        format!("cannot read {}: {e}", crate::fsutil::display_path(&path)),
                    )
                };
                let bytes = read_referenced(&path, cx).map_err(invalid)?;
                let text =
                    String::from_utf8(bytes).map_err(|_| invalid("not valid UTF-8".into()))?;
                for (key, value) in parse_env_file(&text) {
                    stdio.env.entry(key).or_insert(value);
                }
            }
        }
        Transport::Http(http) => {
            http.url = one("url", &http.url)?;
            http.headers = map("headers", &http.headers, false)?;
            if let Some(oauth) = &mut http.oauth {
                let optional = |field: &str, value: &Option<String>| {
                    value.as_deref().map(|v| one(field, v)).transpose()
                };
                oauth.client_id = optional("oauth.clientId", &oauth.client_id)?;
                oauth.client_secret = optional("oauth.clientSecret", &oauth.client_secret)?;
                if let Some(super::PrivateKey::Pem(pem)) = &oauth.private_key {
                    oauth.private_key = Some(super::PrivateKey::Pem(one("oauth.privateKey", pem)?));
                }
            }
        }
    }
    Ok(out)
}

/// `KEY=VALUE` lines of a dotenv file (`export` prefixes, quotes and `#` comments allowed).
pub(crate) fn parse_env_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let (key, value) = line.split_once('=')?;
            let value = value.trim();
            let value = if let Some(v) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
                v.replace("\\n", "\n")
            } else if let Some(v) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
                v.to_owned()
            } else {
                value.split(" #").next().unwrap_or(value).trim().to_owned()
            };
            Some((key.trim().to_owned(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> EnvSource {
        EnvSource::map([
            ("A", "1"),
            ("EMPTY", ""),
            ("TOKEN", "tok"),
            ("MCPR_INPUT_GH_PAT", "pat"),
        ])
    }

    fn run(value: &str, syntax: Syntax) -> Result<String, ExpandError> {
        let env = env();
        let home = PathBuf::from("/home/u");
        let ws = PathBuf::from("/work/proj");
        let cx = Context {
            home: Some(&home),
            workspace: Some(&ws),
            ..Context::new(&env)
        };
        expand_value(value, syntax, true, &cx)
    }

    #[test]
    fn standard_forms() {
        let s = Syntax::STANDARD;
        assert_eq!(run("x${A}y", s).unwrap(), "x1y");
        assert_eq!(run("${env:A}", s).unwrap(), "1");
        assert_eq!(run("${B:-d${A}}", s).unwrap(), "d1");
        assert_eq!(run("${EMPTY:-d}", s).unwrap(), "d");
        assert_eq!(run("${EMPTY}", s).unwrap(), "");
        assert_eq!(run("${B}", s).unwrap_err(), ExpandError::Unset("B".into()));
        assert_eq!(run("${config:x.y}", s).unwrap(), "${config:x.y}");
        assert_eq!(run("$A {env:A}", s).unwrap(), "$A {env:A}");
        assert_eq!(run("${A", s).unwrap_err(), ExpandError::Unterminated);
        assert_eq!(run("${A}", Syntax::NONE).unwrap(), "${A}");
        assert_eq!(run("é${A}é", s).unwrap(), "é1é");
    }

    #[test]
    fn host_forms() {
        let gemini = Syntax {
            bare_in_env: true,
            ..Syntax::STANDARD
        };
        assert_eq!(run("$A-$NOPE-$", gemini).unwrap(), "1-$NOPE-$");
        let opencode = Syntax {
            opencode: true,
            ..Syntax::NONE
        };
        assert_eq!(run("Bearer {env:TOKEN}", opencode).unwrap(), "Bearer tok");
        assert!(run("{env:NOPE}", opencode).is_err());
        assert!(matches!(
            run("{file:/nonexistent/x}", opencode),
            Err(ExpandError::File { .. })
        ));
        let editor = Syntax::EDITOR;
        assert_eq!(
            run("${workspaceFolder}/x ${userHome}", editor).unwrap(),
            "/work/proj/x /home/u"
        );
        assert_eq!(run("${input:gh-pat}", editor).unwrap(), "pat");
        let err = run("${input:other}", editor).unwrap_err().to_string();
        assert!(
            err.contains("needs input `other`") && err.contains("MCPR_INPUT_OTHER"),
            "{err}"
        );
        let cont = Syntax {
            continue_secrets: true,
            ..Syntax::STANDARD
        };
        assert_eq!(run("${{ secrets.TOKEN }}", cont).unwrap(), "tok");
    }

    #[test]
    fn server_errors_name_the_field() {
        let env = env();
        let cx = Context::new(&env);
        let mut cfg = ServerConfig::stdio("npx", ["${A}", "${MISSING}"]);
        let err = expand_server("s", &cfg, Syntax::STANDARD, None, &cx)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`s`") && err.contains("`args[1]`") && err.contains("`MISSING`"),
            "{err}"
        );
        if let Transport::Stdio(s) = &mut cfg.transport {
            s.args.pop();
            s.env.insert("KEY".into(), "${TOKEN}".into());
        }
        let out = expand_server("s", &cfg, Syntax::STANDARD, None, &cx).unwrap();
        let Transport::Stdio(s) = out.transport else {
            panic!()
        };
        assert_eq!(s.args, vec!["1"]);
        assert_eq!(s.env["KEY"], "tok");
    }

    #[test]
    fn referenced_files_are_recorded_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "tok\n").unwrap();
        std::fs::write(dir.path().join(".env"), "K=v\n").unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_REFERENCED_FILE as usize + 1]).unwrap();
        let env = env();
        let reads = FileReads::new();
        let cx = Context {
            config_dir: Some(dir.path()),
            reads: Some(&reads),
            ..Context::new(&env)
        };
        let opencode = Syntax {
            opencode: true,
            ..Syntax::NONE
        };
        let cfg = ServerConfig::stdio("x", ["{file:token}"]);
        let out = expand_server("s", &cfg, opencode, Some(".env"), &cx).unwrap();
        let Transport::Stdio(s) = out.transport else {
            panic!()
        };
        assert_eq!((s.args[0].as_str(), s.env["K"].as_str()), ("tok", "v"));
        let read: Vec<PathBuf> = reads.take().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            read,
            vec![dir.path().join("token"), dir.path().join(".env")]
        );

        let err = expand_value(&format!("{{file:{}}}", big.display()), opencode, false, &cx)
            .unwrap_err()
            .to_string();
        assert!(err.contains("larger than"), "{err}");
        let err = expand_value("{file:/dev/zero}", opencode, false, &cx)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
        assert!(reads.take().is_empty());
    }

    #[test]
    fn env_files() {
        let vars = parse_env_file("# c\nexport A=1\nB=\"x y\"\nC='z' \nD=v # note\nbad\n");
        assert_eq!(
            vars,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "x y".into()),
                ("C".into(), "z".into()),
                ("D".into(), "v".into())
            ]
        );
    }
}
