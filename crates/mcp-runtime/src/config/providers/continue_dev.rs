//! Continue: `~/.continue/config.yaml` (a YAML **list** `mcpServers: [{name, command, args,
//! env, url, type}]`) and the project's `.continue/mcpServers/*.yaml|*.yml|*.json` block files
//! (a list, or the `{"mcpServers": {name: server}}` map of other tools). `${{ secrets.NAME }}`
//! is looked up in the environment. Hub references (`uses:`) are skipped with a note.

use serde_json::Value;

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, servers_in};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "continue",
    name: "Continue",
    priority: 10,
    files,
    parse,
    approvals: no_approvals,
};

const SYNTAX: Syntax = Syntax {
    continue_secrets: true,
    ..Syntax::STANDARD
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = Vec::new();
    let dir = cx.project(".continue/mcpServers");
    if let Ok(read) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                )
            })
            .collect();
        paths.sort();
        files.extend(paths.into_iter().map(|p| {
            let format = Format::for_path(&p);
            FileSpec::project(p, format)
        }));
    }
    files.extend(
        cx.home(".continue/config.yaml")
            .map(|p| FileSpec::user(p, Format::Yaml)),
    );
    files
}

pub(crate) fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    match doc.value.get("mcpServers") {
        Some(Value::Array(items)) => {
            for (idx, item) in items.iter().enumerate() {
                if item.get("uses").is_some() {
                    let what = item.get("uses").and_then(Value::as_str).unwrap_or("?");
                    out.note(doc, None, None, format!("mcpServers[{idx}]: hub block `{what}` (uses:) is not resolved by mcpr; skipped"));
                    continue;
                }
                let Some(name) = item.get("name").and_then(Value::as_str) else {
                    out.note(
                        doc,
                        None,
                        None,
                        format!("mcpServers[{idx}]: entry without `name`; skipped"),
                    );
                    continue;
                };
                out.push(doc, Some("mcpServers"), name, normalize(item), SYNTAX);
            }
        }
        other => {
            for (name, entry) in servers_in(doc, other, "mcpServers", out) {
                out.push(doc, Some("mcpServers"), name, normalize(entry), SYNTAX);
            }
        }
    }
}

/// `requestOptions.headers` → `headers`; `streamable-http` etc. are understood by validation.
fn normalize(entry: &Value) -> Value {
    let mut value = entry.clone();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("name");
        if let Some(headers) = obj
            .get("requestOptions")
            .and_then(|r| r.get("headers"))
            .cloned()
            && !obj.contains_key("headers")
        {
            obj.insert("headers".into(), headers);
        }
        obj.remove("requestOptions");
    }
    value
}
