//! Windsurf: `~/.codeium/windsurf/mcp_config.json` and `.windsurf/mcp_config.json`,
//! `mcpServers`; a remote URL is **`serverUrl`** (`url` accepted too); `${env:VAR}`;
//! `disabled` and `disabledTools`.

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, rename, servers_at};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "windsurf",
    name: "Windsurf",
    priority: 50,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(
        cx.project(".windsurf/mcp_config.json"),
        Format::Json,
    )];
    files.extend(
        cx.home(".codeium/windsurf/mcp_config.json")
            .map(|p| FileSpec::user(p, Format::Json)),
    );
    files
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    for (name, entry) in servers_at(doc, "mcpServers", out) {
        let mut value = entry.clone();
        if let Some(obj) = value.as_object_mut() {
            rename(obj, "disabledTools", "disabled_tools");
        }
        out.push(doc, Some("mcpServers"), name, value, Syntax::STANDARD);
    }
}
