//! VS Code: user `mcp.json` (`~/.config/Code/User/`, macOS `~/Library/Application Support/Code/
//! User/`, also `Code - Insiders`) and `.vscode/mcp.json` (JSONC). Top-level **`servers`** (not
//! `mcpServers`) with `type: stdio|http|sse`, `command, args, env, envFile, url, headers`, and
//! top-level `inputs` referenced as `${input:id}`: never sent literally; taken from the
//! environment (`MCPR_INPUT_<ID>` or `<id>`) or reported as "needs input". Legacy
//! `settings.json` → `"mcp": {"servers": ..., "inputs": ...}`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, servers_in};
use crate::config::expand::{InputSpec, Syntax};
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "vscode",
    name: "VS Code",
    priority: 20,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![
        FileSpec::project(cx.project(".vscode/mcp.json"), Format::Jsonc),
        FileSpec::project(cx.project(".vscode/settings.json"), Format::Jsonc),
    ];
    if let Some(dir) = cx.app_config() {
        for app in ["Code", "Code - Insiders"] {
            let user = dir.join(app).join("User");
            files.push(FileSpec::user(user.join("mcp.json"), Format::Jsonc));
            files.push(FileSpec::user(user.join("settings.json"), Format::Jsonc));
        }
    }
    files
}

fn is_settings(doc: &Doc<'_>) -> bool {
    doc.path.file_name().is_some_and(|n| n == "settings.json")
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    let root = if is_settings(doc) {
        match doc.value.get("mcp") {
            Some(mcp) => mcp,
            None => return,
        }
    } else {
        doc.value
    };
    let inputs = Arc::new(inputs(root.get("inputs")));
    for (name, entry) in servers_in(doc, root.get("servers"), "servers", out) {
        let env_file = entry
            .get("envFile")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let pushed = out.push(doc, Some("servers"), name, entry.clone(), Syntax::EDITOR);
        pushed.env_file = env_file;
        pushed.inputs = Some(Arc::clone(&inputs));
    }
}

fn inputs(value: Option<&Value>) -> BTreeMap<String, InputSpec> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let id = item.get("id")?.as_str()?.to_owned();
                    let spec = InputSpec {
                        description: item
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        password: item
                            .get("password")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    };
                    Some((id, spec))
                })
                .collect()
        })
        .unwrap_or_default()
}
