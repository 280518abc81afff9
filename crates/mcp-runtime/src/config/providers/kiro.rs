//! Kiro: `~/.kiro/settings/mcp.json` and `.kiro/settings/mcp.json`, `mcpServers` with
//! `disabled`, `disabledTools`, `autoApprove`.

use super::{
    Ctx, Doc, FileSpec, Out, Provider, json_project_and_home, no_approvals,
    standard_with_disabled_tools,
};
use crate::config::expand::Syntax;

pub(crate) const PROVIDER: Provider = Provider {
    id: "kiro",
    name: "Kiro",
    priority: 10,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    json_project_and_home(cx, ".kiro/settings/mcp.json", ".kiro/settings/mcp.json")
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard_with_disabled_tools(doc, out, Syntax::STANDARD);
}
