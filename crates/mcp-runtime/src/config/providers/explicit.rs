//! Files named with `--config FILE`: the shape is recognised from the content, so any host's
//! file can be passed — `mcpServers` (Claude and most hosts, object or Continue's list),
//! `servers` (VS Code), `mcp` (OpenCode), `context_servers` (Zed), `mcp_servers` (Codex TOML),
//! `extensions` (goose YAML). Such files are trusted and rank above every provider.

use serde_json::Value;

use super::{Ctx, Doc, Out, codex, continue_dev, goose, opencode, servers_at, servers_in};
use crate::config::expand::Syntax;

/// Provider id of `--config` files.
pub(crate) const ID: &str = "config";
/// Provider name of `--config` files.
pub(crate) const NAME: &str = "--config";

pub(crate) fn parse(cx: &Ctx<'_>, doc: &Doc<'_>, out: &mut Out) {
    let mut known = false;
    if let Some(servers) = doc.value.get("mcpServers") {
        known = true;
        if servers.is_array() {
            continue_dev::parse(cx, doc, out);
        } else {
            for (name, entry) in servers_in(doc, Some(servers), "mcpServers", out) {
                let env_file = entry
                    .get("envFile")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                out.push(doc, Some("mcpServers"), name, entry.clone(), Syntax::EDITOR)
                    .env_file = env_file;
            }
        }
    }
    if doc.value.get("servers").is_some() {
        known = true;
        for (name, entry) in servers_at(doc, "servers", out) {
            let env_file = entry
                .get("envFile")
                .and_then(Value::as_str)
                .map(str::to_owned);
            out.push(doc, Some("servers"), name, entry.clone(), Syntax::EDITOR)
                .env_file = env_file;
        }
    }
    if doc.value.get("mcp").is_some_and(Value::is_object) {
        known = true;
        let syntax = Syntax {
            opencode: true,
            ..Syntax::STANDARD
        };
        for (name, entry) in servers_at(doc, "mcp", out) {
            out.push(doc, Some("mcp"), name, opencode::normalize(entry), syntax);
        }
    }
    if doc.value.get("context_servers").is_some() {
        known = true;
        for (name, entry) in servers_at(doc, "context_servers", out) {
            out.push(
                doc,
                Some("context_servers"),
                name,
                entry.clone(),
                Syntax::STANDARD,
            );
        }
    }
    if doc.value.get("mcp_servers").is_some() {
        known = true;
        let dir = doc.dir();
        for (name, entry) in servers_at(doc, "mcp_servers", out) {
            out.push(
                doc,
                Some("mcp_servers"),
                name,
                codex::normalize(entry, &dir),
                Syntax::NONE,
            );
        }
    }
    if doc.value.get("extensions").is_some() {
        known = true;
        goose::parse(cx, doc, out);
    }
    if !known && !doc.value.is_null() {
        out.note(
            doc,
            None,
            None,
            "no MCP servers found (expected `mcpServers`, `servers`, `mcp`, `context_servers`, `mcp_servers` or `extensions`)",
        );
    }
}
