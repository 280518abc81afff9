//! Claude Desktop: `claude_desktop_config.json` in `~/.config/Claude/` (Linux; `claude` probed
//! too), `~/Library/Application Support/Claude/` (macOS), `%APPDATA%\Claude\` (Windows).
//! `mcpServers` → `{command, args, env}`. User level only.

use super::{Ctx, Doc, FileSpec, Out, Provider, no_approvals, standard};
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "claude-desktop",
    name: "Claude Desktop",
    priority: 15,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = Vec::new();
    if let Some(dir) = cx.app_config() {
        files.push(FileSpec::user(
            dir.join("Claude/claude_desktop_config.json"),
            Format::Json,
        ));
        if !cfg!(target_os = "macos") && !cfg!(windows) {
            files.push(FileSpec::user(
                dir.join("claude/claude_desktop_config.json"),
                Format::Json,
            ));
        }
    }
    files
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard(doc, out, Syntax::STANDARD);
}
