//! Claude Code: `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`) top-level `mcpServers`
//! (user scope) and `projects["<abs cwd>"].mcpServers` (local scope: project level, but trusted
//! since it lives in the user's home), and the project's `.mcp.json`, which needs approval.
//! Local beats project beats user.
//!
//! Approval keys (`enableAllProjectMcpServers`, `enabledMcpjsonServers`,
//! `disabledMcpjsonServers`) grant trust only when read from the user's home: `~/.claude.json`
//! (where Claude Code records the answer to its approval dialog, per project) and
//! `~/.claude/settings*.json`. The project's own `.claude/settings*.json` can arrive with a
//! cloned repository, so there they may only *reject* servers: a repository must not be able
//! to approve itself.

use std::path::PathBuf;

use serde_json::Value;

use super::{
    Approvals, Ctx, Doc, FileSpec, Note, Out, Provider, read_aux, servers_in, string_set, truthy,
};
use crate::config::Level;
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "claude",
    name: "Claude Code",
    priority: 80,
    files,
    parse,
    approvals,
};

fn config_dir(cx: &Ctx<'_>) -> Option<PathBuf> {
    cx.env_dir("CLAUDE_CONFIG_DIR")
}

/// `~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json` when that is set.
pub(crate) fn user_file(cx: &Ctx<'_>) -> Option<PathBuf> {
    match config_dir(cx) {
        Some(dir) => Some(dir.join(".claude.json")),
        None => cx.home(".claude.json"),
    }
}

fn settings_dir(cx: &Ctx<'_>) -> Option<PathBuf> {
    config_dir(cx).or_else(|| cx.home(".claude"))
}

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(cx.project(".mcp.json"), Format::Json)];
    files.extend(user_file(cx).map(|p| FileSpec::user(p, Format::Json)));
    files
}

/// This project's entry in `~/.claude.json` `projects`, with the key it was found under.
fn project_entry<'v>(cx: &Ctx<'_>, root: &'v Value) -> Option<(String, &'v Value)> {
    let projects = root.get("projects")?.as_object()?;
    cx.cwd_keys()
        .into_iter()
        .find_map(|key| projects.get(&key).map(|entry| (key, entry)))
}

fn push_all(
    doc: &Doc<'_>,
    out: &mut Out,
    servers: Vec<(&String, &Value)>,
    section: &str,
) -> Vec<usize> {
    let mut added = Vec::new();
    for (name, entry) in servers {
        if entry.get("headersHelper").is_some() {
            out.note(
                doc,
                Some(name),
                Some(section),
                "`headersHelper` is not supported by mcpr; headers come from `headers` only",
            );
        }
        out.push(doc, Some(section), name, entry.clone(), Syntax::STANDARD);
        added.push(out.entries.len() - 1);
    }
    added
}

fn parse(cx: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    let top = servers_in(doc, doc.value.get("mcpServers"), "mcpServers", out);
    push_all(doc, out, top, "mcpServers");
    if doc.level == Level::User
        && let Some((key, project)) = project_entry(cx, doc.value)
    {
        let local = servers_in(doc, project.get("mcpServers"), "mcpServers", out);
        for idx in push_all(doc, out, local, &key) {
            let entry = &mut out.entries[idx];
            entry.level = Level::Project;
            entry.trusted_location = true;
            entry.rank = 0;
        }
    }
}

fn approvals(cx: &Ctx<'_>, notes: &mut Vec<(PathBuf, Note)>) -> Approvals {
    let mut approvals = Approvals::default();
    let mut grant = |value: &Value, may_approve: bool| {
        if may_approve {
            approvals.all |= truthy(value.get("enableAllProjectMcpServers"));
            approvals
                .enabled
                .extend(string_set(value.get("enabledMcpjsonServers")));
        }
        approvals
            .disabled
            .extend(string_set(value.get("disabledMcpjsonServers")));
    };
    if let Some(path) = user_file(cx)
        && let Some(root) = read_aux(&path, Format::Json, notes)
    {
        grant(&root, true);
        if let Some((_, project)) = project_entry(cx, &root) {
            grant(project, true);
        }
    }
    if let Some(dir) = settings_dir(cx) {
        for file in ["settings.json", "settings.local.json"] {
            if let Some(value) = read_aux(&dir.join(file), Format::Json, notes) {
                grant(&value, true);
            }
        }
    }
    for file in [".claude/settings.json", ".claude/settings.local.json"] {
        if let Some(value) = read_aux(&cx.project(file), Format::Json, notes) {
            grant(&value, false);
        }
    }
    approvals
}
