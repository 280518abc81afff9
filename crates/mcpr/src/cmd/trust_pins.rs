//! `mcpr trust SERVER [--yes]`: show how a server's tool definitions differ from their pins
//! (description and schema, old beside new) and accept them as they are now, so that held
//! tools are offered again. In a terminal it asks first; `--yes` accepts without asking.

use std::io::{BufRead, IsTerminal, Write};

use mcp_runtime::client::ToolDefinition;
use mcp_runtime::manager::ManagerOptions;
use mcp_runtime::pins::{HeldTool, pin_key};
use serde_json::Value;

use crate::connect::OneShot;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::term;

/// `mcpr trust SERVER`.
pub(crate) async fn run(global: &GlobalArgs, server: &str, yes: bool) -> Outcome {
    let discovery = crate::discovery::discover(global)?;
    let Some(config) = discovery.configs.get(server) else {
        return Err(Failure::usage(format!(
            "no server named `{server}` is configured and enabled (see `mcpr list`)"
        )));
    };
    let Some(store) = ManagerOptions::for_user().pins else {
        return Err(Failure::internal(
            "no data directory for the tool pins ($XDG_DATA_HOME or $HOME)",
        ));
    };
    let project = discovery.cwd.clone();
    let opened = OneShot::open(project.clone(), server, config)
        .await
        .map_err(Failure::internal)?;
    let Some(client) = opened.client() else {
        return Err(Failure::internal("no connection"));
    };
    let listed = client.list_tools().await;
    opened.stop().await;
    let tools: Vec<ToolDefinition> = listed.map_err(Failure::internal)?;
    let key = pin_key(server, &project, config);
    let differences = store.differences(&key, &tools);
    if differences.is_empty() {
        println!(
            "The {} tools of `{}` match their pinned definitions.",
            tools.len(),
            term::line(server)
        );
        return Ok(exit::OK);
    }
    for held in &differences {
        show(held);
    }
    if !yes {
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !interactive {
            return Err(Failure::usage(format!(
                "{} tool definitions of `{server}` differ from their pins; run `mcpr trust \
                 {server} --yes` to accept them",
                differences.len()
            )));
        }
        eprint!(
            "Accept these definitions of `{}`? [y/N] ",
            term::line(server)
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("Nothing accepted; the changed tools stay held.");
            return Ok(exit::OK);
        }
    }
    store.accept(&key, &tools).map_err(|e| {
        Failure::internal(format!(
            "cannot write the tool pins{}: {e}",
            store
                .path()
                .map(|p| format!(" {}", mcp_runtime::fsutil::display_path(p)))
                .unwrap_or_default()
        ))
    })?;
    println!(
        "Accepted the current definitions of {} tools of `{}`.",
        differences.len(),
        term::line(server)
    );
    Ok(exit::OK)
}

/// For a call to one server opened alone, which lists no tools: fail when the server's last
/// listing held `tool`, as a manager's call would.
pub(crate) fn refuse_held(
    project: &std::path::Path,
    server: &str,
    config: &mcp_runtime::config::ServerConfig,
    tool: &str,
) -> Result<(), Failure> {
    let Some(store) = ManagerOptions::for_user().pins.filter(|_| config.pin_tools) else {
        return Ok(());
    };
    if !store.is_held(&pin_key(server, project, config), tool) {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "tool `{tool}` of server `{server}` is held: its definition changed since it was first \
         seen, or it shadows another server's tool; review and accept it with `mcpr trust \
         {server}`"
    )))
}

/// The failure of a call by agent-facing name (`mcp_<server>_<tool>`) to a tool that is held.
pub(crate) fn held_by_name(name: &str, held: &[(String, Vec<HeldTool>)]) -> Option<Failure> {
    held.iter().find_map(|(server, tools)| {
        let tool = tools.iter().find(|t| {
            name.strip_suffix(t.name.as_str())
                .is_some_and(|prefix| prefix.ends_with('_') && prefix.contains(server.as_str()))
        })?;
        Some(Failure::usage(
            mcp_runtime::manager::ManagerError::ToolHeld {
                server: server.clone(),
                tool: tool.name.clone(),
                reason: tool.reason,
            }
            .to_string(),
        ))
    })
}

/// Name each tool the manager holds by its pin, on stderr (`mcpr tools`, `mcpr status`).
pub(crate) fn warn_held(manager: &mcp_runtime::manager::McpManager) {
    for (server, held) in manager.held_tools() {
        for tool in held {
            eprintln!(
                "warning: tool `{}` of server `{}` is held: {}; review and accept it with \
                 `mcpr trust {}`",
                term::line(&tool.name),
                term::line(&server),
                tool.reason,
                term::line(&server)
            );
        }
    }
}

/// One tool's pinned and current definition, description and schemas, old beside new.
fn show(held: &HeldTool) {
    println!("{}", term::line(&format!("tool `{}`", held.name)));
    let Some(pinned) = &held.pinned else {
        println!("  new since the server was first seen");
        print_field("now", &held.current);
        return;
    };
    for field in [
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
    ] {
        let (old, new) = (pinned.get(field), held.current.get(field));
        if old == new {
            continue;
        }
        println!("  {field}:");
        print_value("-", old);
        print_value("+", new);
    }
}

fn print_field(label: &str, value: &Value) {
    println!("  {label}:");
    print_value("+", Some(value));
}

fn print_value(mark: &str, value: Option<&Value>) {
    let text = match value {
        None => "(none)".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    for line in text.lines() {
        print_marked(mark, line);
    }
}

/// One line of a review, old (`-`) or new (`+`). The text comes from a server or a project
/// file: escaped before it reaches the terminal.
pub(crate) fn print_marked(mark: &str, line: &str) {
    println!("    {mark} {}", term::line(line));
}
