//! Windsurf: `~/.codeium/windsurf/mcp_config.json` and `.windsurf/mcp_config.json`,
//! `mcpServers`; a remote URL is **`serverUrl`** (`url` accepted too); `${env:VAR}`;
//! `disabled` and `disabledTools`.

use super::{
    Ctx, Doc, FileSpec, Out, Provider, json_project_and_home, no_approvals,
    standard_with_disabled_tools,
};
use crate::config::expand::Syntax;

pub(crate) const PROVIDER: Provider = Provider {
    id: "windsurf",
    name: "Windsurf",
    priority: 50,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    json_project_and_home(
        cx,
        ".windsurf/mcp_config.json",
        ".codeium/windsurf/mcp_config.json",
    )
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard_with_disabled_tools(doc, out, Syntax::STANDARD);
}
