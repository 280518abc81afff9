//! `mcpr tools`: start every configured server and list the tools an agent would get.

use mcp_runtime::tools::{NamingStyle, mcp_tools};
use serde_json::json;

use crate::cli::GlobalArgs;
use crate::connect::{Progress, StartOptions, start};
use crate::exit::{self, Failure, Outcome};
use crate::term;

/// Arguments of `mcpr tools`.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    /// Only this server (default: every configured server).
    pub server: Option<String>,
    /// Wait for every server instead of offering cached tools for slow ones.
    #[arg(long)]
    pub wait: bool,
    /// Name tools as Claude Code does (`mcp__server__tool`).
    #[arg(long)]
    pub claude_names: bool,
    /// Print JSON (one object per tool, with its server, raw name and full schema).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: ToolsArgs) -> Outcome {
    let mut discovery = crate::discovery::discover_some(global)?;
    if let Some(only) = &args.server {
        discovery.configs.retain(|name, _| name == only);
        if discovery.configs.is_empty() {
            return Err(Failure::usage(format!("no enabled server named `{only}`")));
        }
    }
    let options = StartOptions {
        progress: if args.json {
            Progress::Quiet
        } else {
            Progress::Show
        },
        wait: args.wait,
        reconnect: false,
    };
    let started = crate::shutdown::until_signal(start(
        discovery.cwd.clone(),
        discovery.configs,
        discovery.sources,
        options,
    ))
    .await?;
    let naming = if args.claude_names {
        NamingStyle::Claude
    } else {
        NamingStyle::Mcpr
    };
    let tools = mcp_tools(&started.report.servers, naming);
    started.manager.disconnect_all().await;

    if args.json {
        let listing: Vec<_> = tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "server": tool.server,
                    "tool": tool.tool,
                    "label": tool.label,
                    "deferred": tool.deferred,
                    "title": tool.definition.title,
                    "description": tool.definition.description,
                    "inputSchema": tool.definition.input_schema,
                    "outputSchema": tool.definition.output_schema,
                    "annotations": tool.definition.annotations,
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&listing).map_err(Failure::internal)?;
        println!("{text}");
    } else {
        for server in &started.report.servers {
            let cached = if server.deferred {
                ", cached: still connecting"
            } else {
                ""
            };
            println!(
                "{} ({} tools{cached})",
                term::line(&server.server),
                server.tools.len()
            );
            for tool in tools.iter().filter(|t| t.server == server.server) {
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
    for (name, error) in &started.report.errors {
        eprintln!("error: {}", term::text(&with_name(name, error)));
    }
    Ok(if started.report.errors.is_empty() {
        exit::OK
    } else {
        exit::CONNECTION
    })
}

/// Errors from the runtime already name their server; make sure the few that do not still do.
pub fn with_name(server: &str, error: &str) -> String {
    if error.contains(&format!("`{server}`")) {
        error.to_owned()
    } else {
        format!("server `{server}`: {error}")
    }
}
