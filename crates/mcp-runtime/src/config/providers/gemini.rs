//! Gemini CLI: `~/.gemini/settings.json` and `.gemini/settings.json`, `mcpServers` with
//! `command, args, env, cwd` or `url` (**SSE**) or `httpUrl` (streamable HTTP); `headers`,
//! `timeout` (ms), `includeTools`, `excludeTools`. `$VAR` and `${VAR}` expand in `env`.
//! A project is approved by Gemini's own trusted folders (`~/.gemini/trustedFolders.json`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Approvals, Ctx, Doc, FileSpec, Note, Out, Provider, read_aux, rename, servers_at};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "gemini",
    name: "Gemini CLI",
    priority: 60,
    files,
    parse,
    approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(
        cx.project(".gemini/settings.json"),
        Format::Jsonc,
    )];
    files.extend(
        cx.home(".gemini/settings.json")
            .map(|p| FileSpec::user(p, Format::Jsonc)),
    );
    files
}

const SYNTAX: Syntax = Syntax {
    bare_in_env: true,
    ..Syntax::STANDARD
};

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    for (name, entry) in servers_at(doc, "mcpServers", out) {
        let mut value = entry.clone();
        if let Some(obj) = value.as_object_mut() {
            // `url` alone means SSE in Gemini; `httpUrl` is streamable HTTP.
            if obj.contains_key("url") && !obj.contains_key("type") && !obj.contains_key("httpUrl")
            {
                obj.insert("type".into(), Value::from("sse"));
            }
            rename(obj, "includeTools", "enabled_tools");
            rename(obj, "excludeTools", "disabled_tools");
        }
        out.push(doc, Some("mcpServers"), name, value, SYNTAX);
    }
}

/// `trustedFolders.json`: `{"<path>": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}`.
fn approvals(cx: &Ctx<'_>, notes: &mut Vec<(PathBuf, Note)>) -> Approvals {
    let mut approvals = Approvals::default();
    let Some(root) = cx
        .home(".gemini/trustedFolders.json")
        .and_then(|path| read_aux(&path, Format::Json, notes))
    else {
        return approvals;
    };
    let Some(rules) = root.as_object() else {
        return approvals;
    };
    let mut best: Option<(usize, bool)> = None;
    for (path, rule) in rules {
        let path = Path::new(path);
        let (scope, trust) = match rule.as_str() {
            Some("TRUST_FOLDER") => (Some(path), true),
            Some("TRUST_PARENT") => (path.parent(), true),
            Some("DO_NOT_TRUST") => (Some(path), false),
            _ => continue,
        };
        let Some(scope) = scope else { continue };
        if cx.cwd.starts_with(scope) || cx.cwd_real.starts_with(scope) {
            // The most specific rule wins.
            let depth = scope.components().count();
            if best.is_none_or(|(d, _)| depth >= d) {
                best = Some((depth, trust));
            }
        }
    }
    approvals.all = best.is_some_and(|(_, trust)| trust);
    approvals
}
