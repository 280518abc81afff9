//! Which servers a command works on: the servers named in `--config` files, first file first.

use mcp_runtime::config::{ServerConfig, load_config_file};

use crate::cli::GlobalArgs;
use crate::exit::Failure;

/// The enabled, valid servers of the `--config` files. Invalid entries are reported on stderr
/// (file, server and field) and skipped; an unreadable or malformed file is a config error.
pub fn configured_servers(global: &GlobalArgs) -> Result<Vec<(String, ServerConfig)>, Failure> {
    if global.config.is_empty() {
        return Err(Failure::usage(
            "no servers configured: pass --config FILE (a JSON file with {\"mcpServers\": {...}})",
        ));
    }
    let mut servers: Vec<(String, ServerConfig)> = Vec::new();
    for path in &global.config {
        let file = load_config_file(path).map_err(Failure::usage)?;
        for entry in file.servers {
            // The first file that names a server wins.
            if servers.iter().any(|(name, _)| *name == entry.name) {
                continue;
            }
            match entry.config {
                Ok(config) if config.enabled => servers.push((entry.name, config)),
                Ok(_) => {}
                Err(e) => eprintln!("warning: {e}"),
            }
        }
    }
    Ok(servers)
}

/// One server by name, or a config error that says which names exist.
pub fn configured_server(global: &GlobalArgs, name: &str) -> Result<ServerConfig, Failure> {
    let servers = configured_servers(global)?;
    let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
    let known = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    };
    servers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, config)| config.clone())
        .ok_or_else(|| {
            Failure::usage(format!(
                "no enabled server named `{name}` (configured: {known})"
            ))
        })
}
