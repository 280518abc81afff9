//! What the shell prints: tool and server listings, change notes and the help text. The REPL
//! (`mod.rs`) decides what to show; this module decides how it looks.

use std::collections::{BTreeMap, BTreeSet};

use mcp_runtime::client::{ClientError, PromptDefinition, ResourceDefinition};
use mcp_runtime::manager::{ConnectionState, ServerReport};
use mcp_runtime::tools::McpTool;

use crate::advice::Advise;
use crate::term;

/// `/mcp list`: every server with its tools; cached tools of servers still connecting are
/// marked, servers without tools say why.
pub(super) fn print_tool_list(reports: &[ServerReport], all_tools: &[&McpTool]) {
    if reports.is_empty() {
        println!("{}", no_servers());
        return;
    }
    for report in reports {
        let tools: Vec<&McpTool> = all_tools
            .iter()
            .copied()
            .filter(|tool| tool.server == report.name)
            .collect();
        if tools.is_empty() && report.error.is_some() {
            let error = report
                .error
                .as_ref()
                .map(Advise::explained)
                .unwrap_or_default();
            let first = error.lines().next().unwrap_or_default();
            println!(
                "{} ({}: {})",
                term::line(&report.name),
                report.state,
                term::line(first)
            );
            continue;
        }
        let cached = if tools.iter().any(|tool| tool.deferred) {
            ", cached: still connecting"
        } else {
            ""
        };
        println!(
            "{} ({}{cached})",
            term::line(&report.name),
            count(tools.len(), "tool")
        );
        for tool in tools {
            let summary = tool
                .definition
                .description
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("");
            println!("  {:<32} {}", tool.name, term::line(summary));
        }
    }
}

/// "Tools changed: +3 (beta), -2 (alpha); 12 tools now", or `None` when nothing changed.
pub(super) fn describe_change(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Option<String> {
    let side = |from: &BTreeMap<String, String>, to: &BTreeMap<String, String>| {
        let names: Vec<&String> = from.keys().filter(|name| !to.contains_key(*name)).collect();
        let servers: BTreeSet<&str> = names.iter().map(|name| from[*name].as_str()).collect();
        (
            names.len(),
            servers.into_iter().collect::<Vec<_>>().join(", "),
        )
    };
    let (added, added_from) = side(after, before);
    let (removed, removed_from) = side(before, after);
    let mut parts = Vec::new();
    if added > 0 {
        parts.push(format!("+{added} ({added_from})"));
    }
    if removed > 0 {
        parts.push(format!("-{removed} ({removed_from})"));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "tools changed: {}; {} now",
        parts.join(", "),
        count(after.len(), "tool")
    ))
}

/// "1 tool", "3 tools".
pub(super) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// What the shell says when no server is configured.
pub(super) fn no_servers() -> &'static str {
    "no MCP servers; add one with `mcpr add NAME CMD ARGS...`, then /mcp reload"
}

/// One server's answer to a list request.
pub(super) struct Listing<T> {
    pub server: String,
    pub state: ConnectionState,
    /// `None` when the server is not connected.
    pub result: Option<Result<Vec<T>, ClientError>>,
}

/// Print each server's list: its items, "no `NOUN`s", "not connected" or the error.
pub(super) fn print_listings<T>(listings: Vec<Listing<T>>, noun: &str, line: fn(&T) -> String) {
    if listings.is_empty() {
        println!("{}", no_servers());
    }
    for listing in listings {
        // Server names come from config files, maybe a project's.
        let server = term::line(&listing.server);
        match listing.result {
            None => println!("{server}: not connected ({})", listing.state),
            Some(Err(e)) => println!("{server}: error: {}", term::text(&e.to_string())),
            Some(Ok(items)) if items.is_empty() => println!("{server}: no {noun}s"),
            Some(Ok(items)) => {
                println!("{server} ({})", count(items.len(), noun));
                for item in &items {
                    println!("  {}", term::line(&line(item)));
                }
            }
        }
    }
}

/// `uri  name (mime): description`.
pub(super) fn resource_line(resource: &ResourceDefinition) -> String {
    let mut line = format!("{}  {}", resource.uri, resource.name);
    if let Some(mime) = &resource.mime_type {
        line.push_str(&format!(" ({mime})"));
    }
    if let Some(description) = first_line(resource.description.as_deref()) {
        line.push_str(&format!(": {description}"));
    }
    line
}

/// `name(required*, optional): description`.
pub(super) fn prompt_line(prompt: &PromptDefinition) -> String {
    let arguments: Vec<String> = prompt
        .arguments
        .iter()
        .map(|a| format!("{}{}", a.name, if a.required { "*" } else { "" }))
        .collect();
    let mut line = format!("{}({})", prompt.name, arguments.join(", "));
    if let Some(description) = first_line(prompt.description.as_deref()) {
        line.push_str(&format!(": {description}"));
    }
    line
}

/// The first line of `text`, when it has a non-empty one.
fn first_line(text: Option<&str>) -> Option<&str> {
    text.and_then(|t| t.lines().next())
        .filter(|l| !l.is_empty())
}

/// `/help`.
pub(super) fn print_help() {
    println!(
        "\
Call a tool:
  TOOL_NAME [ARGS]        ARGS is a JSON object, @FILE or key=value words (as `mcpr call`),
                          e.g. mcp_fs_read {{\"path\": \"a.txt\"}} or mcp_fs_read path=a.txt
Commands:
  /mcp list               tools by server (cached ones marked while their server connects)
  /mcp status             state of every server (as `mcpr status`)
  /mcp reload             read the configs again; start, stop or restart what changed
  /mcp reconnect NAME     reconnect one server
  /mcp enable NAME        turn a server on (saved in mcpr's user config) and start it
  /mcp disable NAME       turn a server off (saved in mcpr's user config) and stop it
  /mcp test NAME          reconnect, list tools and ping, with timings
  /mcp login NAME         log in to a remote server (browser), then reconnect it
  /mcp logout NAME        forget a remote server's stored login
  /mcp resources          resources of every connected server
  /mcp prompts            prompts of every connected server
  /mcp trust [--yes]      show what changed in the project's config files; --yes trusts them
                          and starts their servers (as `mcpr trust`)
  /help                   this help
  /exit                   quit (also Ctrl-D)
Tab completes tool names, commands and server names; Ctrl-C cancels a running call."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(name, server)| (name.to_string(), server.to_string()))
            .collect()
    }

    #[test]
    fn changes_name_the_servers_and_the_new_total() {
        let before = tools(&[("mcp_a_x", "a"), ("mcp_a_y", "a")]);
        let after = tools(&[("mcp_a_x", "a"), ("mcp_b_x", "b"), ("mcp_c_x", "c")]);
        assert_eq!(
            describe_change(&before, &after).as_deref(),
            Some("tools changed: +2 (b, c), -1 (a); 3 tools now")
        );
        assert_eq!(describe_change(&after, &after), None);
    }

    #[test]
    fn list_lines_show_what_matters() {
        let resource: ResourceDefinition = serde_json::from_value(serde_json::json!({
            "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain", "description": "A file\nmore"
        }))
        .unwrap();
        assert_eq!(
            resource_line(&resource),
            "file:///a.txt  a (text/plain): A file"
        );
        let prompt: PromptDefinition = serde_json::from_value(serde_json::json!({
            "name": "greet", "arguments": [{"name": "who", "required": true}, {"name": "tone"}]
        }))
        .unwrap();
        assert_eq!(prompt_line(&prompt), "greet(who*, tone)");
    }
}
