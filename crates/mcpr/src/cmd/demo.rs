//! `mcpr demo`: the whole lifecycle on servers we bring ourselves. This executable runs three
//! times as `mcpr mock` (one fast server, one that needs ~400 ms to initialise, one that fails
//! at start-up with a message on stderr); they are connected in parallel, their tools listed,
//! one tool called, everything shut down, and the absence of leftover processes checked.

use std::time::Instant;

use indexmap::IndexMap;
use mcp_runtime::client::{CallOptions, group_alive};
use mcp_runtime::config::ServerConfig;
use serde_json::json;

use crate::connect::{Progress, StartOptions, start};
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::term;

/// Arguments of `mcpr demo` (none).
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {}

pub(crate) async fn run(_global: &GlobalArgs, _args: DemoArgs) -> Outcome {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::internal(format!("cannot find this executable: {e}")))?;
    let exe = exe.to_string_lossy().into_owned();
    let mock = |args: &[&str]| {
        let mut all = vec!["mock"];
        all.extend_from_slice(args);
        ServerConfig::stdio(exe.clone(), all)
    };
    let servers: IndexMap<String, ServerConfig> = [
        ("fast".to_owned(), mock(&["--name", "fast"])),
        (
            "slow".to_owned(),
            mock(&["--name", "slow", "--init-delay", "400"]),
        ),
        (
            "broken".to_owned(),
            mock(&[
                "--fail-init",
                "fatal: cannot open database ./demo.db: permission denied",
            ]),
        ),
    ]
    .into_iter()
    .collect();

    println!("mcpr demo: starting 3 MCP servers ({exe} mock) and connecting in parallel\n");
    let started = Instant::now();
    let project = std::env::current_dir().unwrap_or_default();
    let options = StartOptions {
        progress: Progress::Show,
        wait: true,
        reconnect: false,
    };
    let started_servers =
        crate::shutdown::until_signal(start(project, servers, IndexMap::new(), options)).await?;
    let manager = started_servers.manager;
    println!(
        "\nall servers settled in {} ms\n",
        started.elapsed().as_millis()
    );

    for server in &started_servers.report.servers {
        let Some(client) = manager.client(&server.server) else {
            continue;
        };
        let info = client.info();
        let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
        println!(
            "{} ({} {}, protocol {}, pid {}): {} tools\n  {}",
            term::line(&server.server),
            term::line(&info.name),
            term::line(&info.version),
            term::line(&info.protocol_version),
            client.pid().unwrap_or_default(),
            server.tools.len(),
            term::line(&names.join(", "))
        );
    }

    let mut demo_ok = true;
    let args = json!({"text": "hello from mcpr"});
    let call_started = Instant::now();
    match manager
        .call_tool(
            "fast",
            "echo",
            args.as_object().cloned(),
            CallOptions::default(),
        )
        .await
    {
        Ok(output) => println!(
            "\ncall fast/echo {{\"text\": \"hello from mcpr\"}} -> {:?} in {} µs",
            output.text(),
            call_started.elapsed().as_micros()
        ),
        Err(e) => {
            demo_ok = false;
            println!("\ncall fast/echo failed: {}", term::text(&e.to_string()));
        }
    }

    for (name, error) in &started_servers.report.errors {
        let error = error.to_string();
        let error = term::text(&error);
        println!("\n{name} failed to start, as intended:\n  {error}");
    }

    let pids: Vec<u32> = manager
        .server_names()
        .iter()
        .filter_map(|name| manager.client(name)?.pid())
        .collect();
    manager.disconnect_all().await;
    let leftover_groups = pids.iter().filter(|pid| group_alive(**pid)).count();
    let leftover_children = children_of_this_process();
    println!("\nshut down {} servers", pids.len());
    if leftover_groups == 0 && leftover_children.is_empty() {
        println!(
            "no child process left (checked {} process groups and this process's children)",
            pids.len()
        );
    } else {
        demo_ok = false;
        println!(
            "LEFTOVER PROCESSES: {leftover_groups} live process groups, children {leftover_children:?}"
        );
    }
    if demo_ok {
        Ok(exit::OK)
    } else {
        Err(Failure::internal("the demo did not go as expected"))
    }
}

/// Pids of live (non-zombie) processes whose parent is this process, from `/proc` (Linux).
fn children_of_this_process() -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the parenthesised command name: state, ppid, ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("");
            let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
            ppid == Some(me) && state != "Z"
        })
        .collect()
}
