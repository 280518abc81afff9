//! Start-up for a host in one call: discover every configured server, connect
//! them behind the fast-start gate, and return the tools to register.

use std::path::{Path, PathBuf};

use crate::config::{
    ConfigError, Discovery, DiscoveryOptions, HARD_FAILURE_PATH, load_all_mcp_configs,
};
use crate::manager::{ManagerOptions, McpManager, ServerError};
use crate::tools::{McpTool, NamingStyle, mcp_tools};

/// Settings of [`discover_and_load_mcp_tools`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Where to look for configs and how.
    pub discovery: DiscoveryOptions,
    /// How to run the servers (the project directory is set to `cwd`). The default keeps
    /// nothing on disk; [`ManagerOptions::for_user`] adds the per-user tool cache and logins.
    pub manager: ManagerOptions,
    /// How tool names are spelled.
    pub naming: NamingStyle,
}

/// A problem met while loading, with the file it concerns.
#[derive(Debug, Clone)]
pub struct LoadError {
    /// The config file (`.mcp.json` for a failure of discovery as a whole).
    pub path: PathBuf,
    /// The server, when the problem is one server's.
    pub server: Option<String>,
    /// What went wrong (names the server and field where it can).
    pub error: LoadFailure,
}

/// What went wrong while loading: a config entry (or discovery as a whole), or a server.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LoadFailure {
    /// The server's config is unusable, or discovery failed as a whole.
    #[error(transparent)]
    Config(ConfigError),
    /// The server did not connect.
    #[error(transparent)]
    Server(ServerError),
}

/// What a host gets back.
#[derive(Debug)]
pub struct LoadedTools {
    /// The manager running the servers; keep it, and call `disconnect_all` at the end.
    pub manager: McpManager,
    /// Live and deferred tools, sorted by name.
    pub tools: Vec<McpTool>,
    /// Per-server failures and a discovery failure, if any. The session starts regardless.
    pub errors: Vec<LoadError>,
    /// Servers still connecting in the background (their tools may be deferred).
    pub pending: Vec<String>,
    /// The discovery result (warnings, every server seen), unless discovery failed.
    pub discovery: Option<Discovery>,
}

/// Discover, connect and load. Never fails: a discovery that throws yields no tools and one
/// error for `.mcp.json`, and each failing server is one error among working ones.
pub async fn discover_and_load_mcp_tools(cwd: &Path, options: LoadOptions) -> LoadedTools {
    let mut manager_options = options.manager;
    manager_options.project = cwd.to_owned();
    let manager = McpManager::new(manager_options);

    // Discovery reads many files: keep it off the async threads.
    let discovery = {
        let (cwd, discovery_options) = (cwd.to_owned(), options.discovery);
        tokio::task::spawn_blocking(move || load_all_mcp_configs(&cwd, &discovery_options)).await
    };
    let discovery = match discovery {
        Ok(discovery) => discovery,
        Err(e) => return failed(manager, e.to_string()),
    };
    if let Some(failure) = &discovery.failure {
        return failed(manager, failure.error.clone());
    }

    let mut errors: Vec<LoadError> = discovery
        .errors
        .iter()
        .map(|(name, error)| LoadError {
            path: discovery
                .winner(name)
                .map(|s| s.source.path.clone())
                .unwrap_or_else(|| PathBuf::from(HARD_FAILURE_PATH)),
            server: Some(name.clone()),
            error: LoadFailure::Config(error.clone()),
        })
        .collect();

    let report = manager
        .connect_servers(discovery.configs.clone(), discovery.sources.clone())
        .await;
    errors.extend(report.errors.iter().map(|(name, error)| {
        LoadError {
            path: discovery
                .sources
                .get(name)
                .map(|s| s.path.clone())
                .unwrap_or_else(|| PathBuf::from(HARD_FAILURE_PATH)),
            server: Some(name.clone()),
            error: LoadFailure::Server(error.clone()),
        }
    }));
    LoadedTools {
        tools: mcp_tools(&report.servers, options.naming),
        manager,
        errors,
        pending: report.pending,
        discovery: Some(discovery),
    }
}

fn failed(manager: McpManager, message: String) -> LoadedTools {
    LoadedTools {
        manager,
        tools: Vec::new(),
        errors: vec![LoadError {
            path: PathBuf::from(HARD_FAILURE_PATH),
            server: None,
            error: LoadFailure::Config(ConfigError::Discovery {
                path: HARD_FAILURE_PATH.to_owned(),
                message,
            }),
        }],
        pending: Vec::new(),
        discovery: None,
    }
}

crate::setters!(LoadOptions {
    with_discovery => discovery: DiscoveryOptions,
    with_manager => manager: ManagerOptions,
    with_naming => naming: NamingStyle,
});
