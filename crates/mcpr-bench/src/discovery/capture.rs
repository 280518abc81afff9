//! `mcpr-bench discovery --capture`: install the corpus servers (pinned, from npm and PyPI) into
//! `target/peers/discovery-*`, start each with dummy credentials, list its tools live and write
//! the corpus (`crates/tool-search/data/tool_corpus.json`) with the package versions, so that the
//! evaluation runs offline.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use serde_json::{Value, json};
use tool_search::eval::CORPUS_FILE;

use crate::real_servers;

fn peers_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/mcpr-bench → target/peers
    exe.parent()
        .and_then(Path::parent)
        .map(|target| target.join("peers"))
        .unwrap_or_else(|| PathBuf::from("target/peers"))
}

/// Install the servers (once), list every server's tools live and write the corpus into `data`.
pub(super) fn capture(data: &Path) -> Result<(), String> {
    let peers = peers_dir();
    real_servers::install(&peers)?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    real_servers::prepare_work(work.path())?;
    let mut configs: IndexMap<String, ServerConfig> = IndexMap::new();
    let mut versions: IndexMap<String, (String, String)> = IndexMap::new();
    for server in real_servers::servers(&peers, work.path()) {
        configs.insert(server.name.clone(), server.config(work.path()));
        versions.insert(server.name.clone(), (server.package, server.version));
    }

    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let report = runtime.block_on(async {
        let manager = McpManager::new(
            ManagerOptions::default()
                .with_cache(None)
                .with_project(work.path().to_owned())
                .with_reconnect(false)
                .with_wait_for_uncached(true)
                .with_gate(Duration::from_secs(120)),
        );
        let report = manager.connect_servers(configs, IndexMap::new()).await;
        let _ = tokio::time::timeout(Duration::from_secs(30), manager.disconnect_all()).await;
        report
    });
    for (server, error) in &report.errors {
        eprintln!("  {server}: failed: {error}");
    }
    let mut servers = Vec::new();
    for listed in &report.servers {
        let (package, version) = versions
            .get(&listed.server)
            .cloned()
            .unwrap_or_else(|| ("?".into(), "?".into()));
        eprintln!(
            "  {}: {} tools ({package} {version})",
            listed.server,
            listed.tools.len()
        );
        servers.push(json!({
            "server": listed.server,
            "package": package,
            "version": version,
            "tools": listed.tools.iter().collect::<Vec<_>>(),
        }));
    }
    let failed: Vec<Value> = report
        .errors
        .iter()
        .map(|(server, error)| json!({"server": server, "error": error.to_string()}))
        .collect();
    let corpus = json!({
        "captured_with": "cargo run -p mcpr-bench -- discovery --capture",
        "servers": servers,
        "failed": failed,
    });
    let path = data.join(CORPUS_FILE);
    std::fs::create_dir_all(data).map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&corpus).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("» wrote {}", path.display());
    Ok(())
}
