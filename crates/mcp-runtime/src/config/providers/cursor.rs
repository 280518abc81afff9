//! Cursor: `~/.cursor/mcp.json` and `.cursor/mcp.json`, `mcpServers`; `${env:NAME}`, `${VAR}`,
//! `${workspaceFolder}`, `${userHome}`, and `envFile` for stdio servers.

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, standard_with_env_file};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "cursor",
    name: "Cursor",
    priority: 50,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(
        cx.project(".cursor/mcp.json"),
        Format::Json,
    )];
    files.extend(
        cx.home(".cursor/mcp.json")
            .map(|p| FileSpec::user(p, Format::Json)),
    );
    files
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard_with_env_file(doc, out, "mcpServers", Syntax::EDITOR);
}
