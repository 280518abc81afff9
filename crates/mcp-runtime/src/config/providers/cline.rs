//! Cline: `cline_mcp_settings.json` in VS Code's global storage
//! (`~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/`), `mcpServers` with
//! `disabled: true`, `type` (or the older `transportType`), and `timeout` in **seconds**.

use serde_json::Value;

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, rename, seconds_to_ms, servers_at};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "cline",
    name: "Cline",
    priority: 10,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    cx.app_config()
        .map(|dir| {
            let path = dir.join(
                "Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
            );
            vec![FileSpec::user(path, Format::Json)]
        })
        .unwrap_or_default()
}

pub(crate) fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    for (name, entry) in servers_at(doc, "mcpServers", out) {
        out.push(
            doc,
            Some("mcpServers"),
            name,
            normalize(entry),
            Syntax::STANDARD,
        );
    }
}

/// The Cline/Roo spellings: `transportType`, `timeout` in seconds, `disabledTools`.
pub(crate) fn normalize(entry: &Value) -> Value {
    let mut value = entry.clone();
    if let Some(obj) = value.as_object_mut() {
        rename(obj, "transportType", "type");
        seconds_to_ms(obj, "timeout", "timeout");
        rename(obj, "disabledTools", "disabled_tools");
    }
    value
}
