//! Roo Code (a Cline fork): `.roo/mcp.json` (project) and `mcp_settings.json` in VS Code's
//! global storage (`rooveterinaryinc.roo-cline`); the Cline shape (`disabled`, `timeout` in
//! seconds, `disabledTools`).

use super::{Ctx, Doc, FileSpec, Out, Provider, cline, no_approvals};
use crate::config::formats::Format;

pub(crate) const PROVIDER: Provider = Provider {
    id: "roo",
    name: "Roo Code",
    priority: 10,
    files,
    parse,
    approvals: no_approvals,
};

fn files(cx: &Ctx<'_>) -> Vec<FileSpec> {
    let mut files = vec![FileSpec::project(cx.project(".roo/mcp.json"), Format::Json)];
    if let Some(dir) = cx.app_config() {
        let path = dir
            .join("Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json");
        files.push(FileSpec::user(path, Format::Json));
    }
    files
}

fn parse(cx: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    cline::parse(cx, doc, out);
}
