//! OpenCode: `$XDG_CONFIG_HOME/opencode/opencode.json[c]`, `opencode.json[c]` and
//! `.opencode/opencode.json[c]` (JSONC). Key **`mcp`**: `{type: "local", command: [argv...],
//! environment, enabled, timeout}` or `{type: "remote", url, headers, enabled, timeout}`.
//! `{env:VAR}` and `{file:path}` substitutions.

use serde_json::Value;

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, rename, servers_at};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "opencode",
    name: "OpenCode",
    priority: 55,
    files,
    parse,
    approvals: no_approvals,
};

const NAMES: [&str; 2] = ["opencode.json", "opencode.jsonc"];

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = Vec::new();
    for name in NAMES {
        files.push(FileSpec::project(cx.project(name), Format::Jsonc));
    }
    for name in NAMES {
        files.push(FileSpec::project(
            cx.project(".opencode").join(name),
            Format::Jsonc,
        ));
    }
    if let Some(dir) = cx.xdg_config() {
        for name in NAMES {
            files.push(FileSpec::user(
                dir.join("opencode").join(name),
                Format::Jsonc,
            ));
        }
    }
    files
}

const SYNTAX: Syntax = Syntax {
    opencode: true,
    ..Syntax::STANDARD
};

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    for (name, entry) in servers_at(doc, "mcp", out) {
        out.push(doc, Some("mcp"), name, normalize(entry), SYNTAX);
    }
}

/// `command: [argv...]` → `command` + `args`; `environment` → `env`.
pub(crate) fn normalize(entry: &Value) -> Value {
    let mut value = entry.clone();
    if let Some(obj) = value.as_object_mut() {
        if let Some(Value::Array(argv)) = obj.get("command").cloned() {
            let mut argv = argv.into_iter();
            match argv.next() {
                Some(program) => {
                    obj.insert("command".into(), program);
                    if !obj.contains_key("args") {
                        obj.insert("args".into(), Value::Array(argv.collect()));
                    }
                }
                None => {
                    obj.insert("command".into(), Value::from(""));
                }
            }
        }
        rename(obj, "environment", "env");
    }
    value
}
