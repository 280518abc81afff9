//! Zed: `~/.config/zed/settings.json` and `.zed/settings.json` (JSONC), **`context_servers`** →
//! `{command, args, env, enabled}` or `{url, headers}`; the older nesting
//! `command: {path, args, env}`; `source: "extension"` entries have no command and are skipped
//! with a note (the Zed extension starts them).

use serde_json::{Map, Value};

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, servers_at};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "zed",
    name: "Zed",
    priority: 12,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(
        cx.project(".zed/settings.json"),
        Format::Jsonc,
    )];
    if let Some(dir) = cx.xdg_config() {
        files.push(FileSpec::user(dir.join("zed/settings.json"), Format::Jsonc));
    }
    files
}

const SECTION: &str = "context_servers";

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    for (name, entry) in servers_at(doc, SECTION, out) {
        let Some(obj) = entry.as_object() else {
            out.push(doc, Some(SECTION), name, entry.clone(), Syntax::STANDARD);
            continue;
        };
        let from_extension = obj.get("source").and_then(Value::as_str) == Some("extension");
        let has_transport = obj.contains_key("command") || obj.contains_key("url");
        if from_extension || !has_transport {
            out.note(
                doc,
                Some(name),
                Some(SECTION),
                format!("`{name}` is provided by a Zed extension (no command); skipped"),
            );
            continue;
        }
        out.push(doc, Some(SECTION), name, normalize(obj), Syntax::STANDARD);
    }
}

fn normalize(obj: &Map<String, Value>) -> Value {
    let mut obj = obj.clone();
    obj.remove("source");
    obj.remove("settings");
    if let Some(Value::Object(nested)) = obj.get("command").cloned() {
        obj.remove("command");
        // Older Zed: `command: {path, args, env}`.
        if let Some(path) = nested.get("path") {
            obj.insert("command".into(), path.clone());
        }
        for key in ["args", "env"] {
            if let Some(value) = nested.get(key)
                && !obj.contains_key(key)
            {
                obj.insert(key.into(), value.clone());
            }
        }
    }
    Value::Object(obj)
}
