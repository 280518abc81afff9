//! mcpr's own files: `$XDG_CONFIG_HOME/mcpr/mcp.json` (user) and `.mcpr/mcp.json` (project),
//! `{"mcpServers": {...}}` plus the user-file-only `disabledServers` / `enabledServers` lists.

use std::path::PathBuf;

use super::{Ctx, Doc, FileSpec, Lists, Out, Provider, no_approvals, standard, string_set};
use crate::config::Level;
use crate::config::expand::Syntax;
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "mcpr",
    name: "mcpr",
    priority: 100,
    files,
    parse,
    approvals: no_approvals,
};

/// `.mcpr/mcp.json` under the project.
pub(crate) const PROJECT_FILE: &str = ".mcpr/mcp.json";

/// The user file, `$XDG_CONFIG_HOME/mcpr/mcp.json` (default `~/.config/mcpr/mcp.json`).
pub(crate) fn user_file(cx: &Ctx<'_>) -> Option<PathBuf> {
    cx.xdg_config()
        .map(|dir| dir.join(crate::fsutil::APP_DIR).join("mcp.json"))
}

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(cx.project(PROJECT_FILE), Format::Json)];
    files.extend(user_file(cx).map(|p| FileSpec::user(p, Format::Json)));
    files
}

fn parse(_: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    standard(doc, out, Syntax::STANDARD);
    let disabled = doc.value.get("disabledServers");
    let enabled = doc.value.get("enabledServers");
    match doc.level {
        Level::User => {
            out.lists = Some(Lists {
                disabled: string_set(disabled),
                enabled: string_set(enabled),
            });
        }
        Level::Project if disabled.is_some() || enabled.is_some() => {
            out.note(doc, None, None, "`disabledServers` / `enabledServers` are read from the user file only; ignored here");
        }
        Level::Project => {}
    }
}
