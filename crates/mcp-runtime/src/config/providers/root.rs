//! Root files of a project: `.mcp.json` and `mcp.json`, `mcpServers` (the Claude Desktop
//! shape). A file already read by a higher provider (Claude Code reads `.mcp.json`) is not
//! read again.

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, standard};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "mcp-json",
    name: "MCP config",
    priority: 5,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    vec![
        FileSpec::project(cx.project(".mcp.json"), Format::Json),
        FileSpec::project(cx.project("mcp.json"), Format::Json),
    ]
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard(doc, out, Syntax::STANDARD);
}
