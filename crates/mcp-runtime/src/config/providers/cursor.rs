//! Cursor: `~/.cursor/mcp.json` and `.cursor/mcp.json`, `mcpServers`; `${env:NAME}`, `${VAR}`,
//! `${workspaceFolder}`, `${userHome}`, and `envFile` for stdio servers.

use super::{
    Ctx, Doc, FileSpec, Out, Provider, json_project_and_home, no_approvals, standard_with_env_file,
};
use crate::config::expand::Syntax;

pub(crate) const PROVIDER: Provider = Provider {
    id: "cursor",
    name: "Cursor",
    priority: 50,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    json_project_and_home(cx, ".cursor/mcp.json", ".cursor/mcp.json")
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard_with_env_file(doc, out, "mcpServers", Syntax::EDITOR);
}
