//! Codex: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`) and `.codex/config.toml`,
//! TOML tables `[mcp_servers.<name>]`.
//!
//! Stdio: `command, args, env, env_vars, cwd`; HTTP: `url, bearer_token_env_var, http_headers,
//! env_http_headers`; both: `enabled, startup_timeout_sec` (float seconds; `startup_timeout_ms`
//! also accepted), `tool_timeout_sec`, `enabled_tools, disabled_tools`. No `${}` expansion.
//! Relative `command` (with a path separator) and `cwd` resolve against the config file's
//! directory. A project is approved by Codex's own `[projects."<cwd>"] trust_level = "trusted"`
//! in the user file.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{
    Approvals, Ctx, Doc, FileSpec, Note, Out, Provider, read_aux, rename, seconds_to_ms, servers_at,
};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "codex",
    name: "Codex",
    priority: 70,
    files,
    parse,
    approvals,
};

/// `$CODEX_HOME/config.toml`, default `~/.codex/config.toml`.
pub(crate) fn user_file(cx: &Ctx<'_>) -> Option<PathBuf> {
    cx.env_dir("CODEX_HOME")
        .or_else(|| cx.home(".codex"))
        .map(|dir| dir.join("config.toml"))
}

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(
        cx.project(".codex/config.toml"),
        Format::Toml,
    )];
    files.extend(user_file(cx).map(|p| FileSpec::user(p, Format::Toml)));
    files
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    let dir = doc.dir();
    for (name, entry) in servers_at(doc, "mcp_servers", out) {
        out.push(
            doc,
            Some("mcp_servers"),
            name,
            normalize(entry, &dir),
            Syntax::NONE,
        );
    }
}

/// Codex fields → the common shape.
pub(crate) fn normalize(entry: &Value, dir: &Path) -> Value {
    let Some(obj) = entry.as_object() else {
        return entry.clone();
    };
    let mut obj: Map<String, Value> = obj.clone();
    rename(&mut obj, "http_headers", "headers");
    seconds_to_ms(&mut obj, "startup_timeout_sec", "startup_timeout_ms");
    seconds_to_ms(&mut obj, "tool_timeout_sec", "tool_timeout_ms");
    if let Some(Value::String(command)) = obj.get("command")
        && command.contains(['/', '\\'])
        && Path::new(command).is_relative()
    {
        let resolved = join_clean(dir, command);
        obj.insert("command".into(), Value::String(resolved));
    }
    if let Some(Value::String(cwd)) = obj.get("cwd")
        && Path::new(cwd).is_relative()
    {
        let resolved = join_clean(dir, cwd);
        obj.insert("cwd".into(), Value::String(resolved));
    }
    Value::Object(obj)
}

/// `dir/rel` without `.` components (`./bin/x` → `<dir>/bin/x`).
fn join_clean(dir: &Path, rel: &str) -> String {
    let joined: PathBuf = dir
        .join(rel)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    joined.to_string_lossy().into_owned()
}

fn approvals(cx: &Ctx<'_>, notes: &mut Vec<(PathBuf, Note)>) -> Approvals {
    let mut approvals = Approvals::default();
    let Some(root) = user_file(cx).and_then(|path| read_aux(&path, Format::Toml, notes)) else {
        return approvals;
    };
    if let Some(projects) = root.get("projects").and_then(Value::as_object) {
        approvals.all = cx.cwd_keys().iter().any(|key| {
            projects
                .get(key)
                .and_then(|p| p.get("trust_level"))
                .and_then(Value::as_str)
                == Some("trusted")
        });
    }
    approvals
}
