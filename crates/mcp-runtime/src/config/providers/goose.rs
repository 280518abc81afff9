//! goose: `~/.config/goose/config.yaml`, `extensions` map: `type: stdio|streamable_http|sse`,
//! `cmd`, `args`, `envs`, `env_keys` (forwarded variable names), `uri`, `headers`, `enabled`,
//! `timeout` in **seconds**. `builtin`, `platform`, `frontend` and `inline_python` extensions
//! and `bundled: true` ones live inside goose and are skipped.

use serde_json::Value;

use super::{
    Ctx, Doc, FileSpec, Out, Provider, no_approvals, rename, seconds_to_ms, servers_at, truthy,
};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "goose",
    name: "goose",
    priority: 10,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    cx.xdg_config()
        .map(|dir| vec![FileSpec::user(dir.join("goose/config.yaml"), Format::Yaml)])
        .unwrap_or_default()
}

pub(crate) fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    for (name, entry) in servers_at(doc, "extensions", out) {
        let kind = entry.get("type").and_then(Value::as_str);
        let internal = matches!(
            kind,
            Some("builtin" | "platform" | "frontend" | "inline_python")
        );
        if internal || truthy(entry.get("bundled")) {
            continue;
        }
        let mut value = entry.clone();
        if let Some(obj) = value.as_object_mut() {
            if kind == Some("streamable_http") {
                obj.insert("type".into(), Value::from("http"));
            }
            rename(obj, "cmd", "command");
            rename(obj, "envs", "env");
            rename(obj, "env_keys", "env_vars");
            rename(obj, "uri", "url");
            seconds_to_ms(obj, "timeout", "timeout");
            for key in [
                "name",
                "display_name",
                "description",
                "bundled",
                "available_tools",
            ] {
                obj.remove(key);
            }
        }
        out.push(doc, Some("extensions"), name, value, Syntax::STANDARD);
    }
}
