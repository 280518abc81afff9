//! Kiro: `~/.kiro/settings/mcp.json` and `.kiro/settings/mcp.json`, `mcpServers` with
//! `disabled`, `disabledTools`, `autoApprove`.

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, rename, servers_at};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "kiro",
    name: "Kiro",
    priority: 10,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(
        cx.project(".kiro/settings/mcp.json"),
        Format::Json,
    )];
    files.extend(
        cx.home(".kiro/settings/mcp.json")
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
