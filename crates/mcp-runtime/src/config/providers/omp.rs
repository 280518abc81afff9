//! oh-my-pi: `~/.omp/agent/mcp.json`, `~/.omp/agent/.mcp.json` (`PI_CODING_AGENT_DIR` overrides
//! the directory), `.omp/mcp.json`, `.omp/.mcp.json`. `enabled` may be a string, `timeout` a
//! numeric string; both are understood by validation.

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, standard};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "omp",
    name: "oh-my-pi",
    priority: 95,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![
        FileSpec::project(cx.project(".omp/mcp.json"), Format::Json),
        FileSpec::project(cx.project(".omp/.mcp.json"), Format::Json),
    ];
    if let Some(dir) = cx
        .env_dir("PI_CODING_AGENT_DIR")
        .or_else(|| cx.home(".omp/agent"))
    {
        files.push(FileSpec::user(dir.join("mcp.json"), Format::Json));
        files.push(FileSpec::user(dir.join(".mcp.json"), Format::Json));
    }
    files
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard(doc, out, Syntax::STANDARD);
}
