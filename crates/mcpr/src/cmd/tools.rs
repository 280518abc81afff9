//! `mcpr tools`: connect to the configured servers and list their tools.

use serde_json::json;

use crate::cli::GlobalArgs;
use crate::connect::{Progress, close_all, connect_all};
use crate::exit::{self, Failure, Outcome};
use crate::sources::configured_servers;

/// Arguments of `mcpr tools`.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    /// Only this server (default: every configured server).
    pub server: Option<String>,
    /// Print JSON (one object per tool, with its server and full schema) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: ToolsArgs) -> Outcome {
    let mut servers = configured_servers(global)?;
    if let Some(only) = &args.server {
        servers.retain(|(name, _)| name == only);
        if servers.is_empty() {
            return Err(Failure::usage(format!("no enabled server named `{only}`")));
        }
    }
    let progress = if args.json {
        Progress::Quiet
    } else {
        Progress::Show
    };
    let connected = crate::shutdown::until_signal(connect_all(servers, progress)).await?;
    close_all(&connected).await;

    let mut failed = 0;
    let mut listing = Vec::new();
    for server in &connected {
        match &server.result {
            Ok((_, tools)) => {
                if args.json {
                    listing.extend(tools.iter().map(|tool| {
                        json!({
                            "server": server.name,
                            "name": tool.name,
                            "title": tool.title,
                            "description": tool.description,
                            "inputSchema": tool.input_schema,
                            "outputSchema": tool.output_schema,
                            "annotations": tool.annotations,
                        })
                    }));
                } else {
                    println!("{} ({} tools)", server.name, tools.len());
                    for tool in tools {
                        let summary = tool
                            .description
                            .as_deref()
                            .unwrap_or("")
                            .lines()
                            .next()
                            .unwrap_or("");
                        println!("  {:<28} {summary}", tool.name);
                    }
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: {e}");
            }
        }
    }
    if args.json {
        let text = serde_json::to_string_pretty(&listing).map_err(Failure::internal)?;
        println!("{text}");
    }
    Ok(if failed > 0 {
        exit::CONNECTION
    } else {
        exit::OK
    })
}
