//! The environment the library gives a stdio server, against the real mock writing its
//! environment to a file: the allowlist by default for a bare client and a manager alike, the
//! `env_vars` names, and everything (but `MCPR_*`) when the host or the server asks for it.
//! The test process runs under cargo, which sets `CARGO_MANIFEST_DIR`: a host variable no
//! allowlist passes.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use mcp_runtime::client::{ConnectOptions, McpClient};
use mcp_runtime::config::{ServerConfig, Transport};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use support::{mock, temp_dir};

const HOST_ONLY: &str = "CARGO_MANIFEST_DIR";

fn dumping(path: &Path) -> ServerConfig {
    mock(&["--env-dump", path.to_str().unwrap()])
}

fn dumped(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no dump at {}: {e}", path.display()))
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

async fn dump_of(
    config: &ServerConfig,
    options: &ConnectOptions,
    path: &Path,
) -> BTreeMap<String, String> {
    let client = McpClient::connect("env", config, options)
        .await
        .expect("connect");
    client.close().await;
    dumped(path)
}

#[tokio::test]
async fn a_client_passes_the_allowlist_and_what_the_config_names() {
    assert!(std::env::var_os(HOST_ONLY).is_some(), "run under cargo");
    let dir = temp_dir();
    let path = dir.path().join("env");

    let env = dump_of(&dumping(&path), &ConnectOptions::default(), &path).await;
    assert!(
        !env.contains_key(HOST_ONLY),
        "a host variable reached the server"
    );
    assert!(env.contains_key("PATH"));
    assert_eq!(env.get("MCPR_NESTING").map(String::as_str), Some("1"));

    let mut named = dumping(&path);
    named.env_vars = vec![HOST_ONLY.into()];
    let env = dump_of(&named, &ConnectOptions::default(), &path).await;
    assert_eq!(
        env.get(HOST_ONLY),
        std::env::var(HOST_ONLY).ok().as_ref(),
        "env_vars did not pass the variable"
    );
}

#[tokio::test]
async fn inheriting_is_a_choice_of_the_host_or_of_the_server() {
    let dir = temp_dir();
    let path = dir.path().join("env");

    let host = ConnectOptions::default().with_inherit_env(true);
    let env = dump_of(&dumping(&path), &host, &path).await;
    assert!(env.contains_key(HOST_ONLY));

    let mut server = dumping(&path);
    if let Transport::Stdio(stdio) = &mut server.transport {
        stdio.inherit_env = true;
    }
    let env = dump_of(&server, &ConnectOptions::default(), &path).await;
    assert!(env.contains_key(HOST_ONLY));
}

#[tokio::test]
async fn a_manager_starts_its_servers_with_the_allowlist() {
    let dir = temp_dir();
    let path = dir.path().join("env");
    let manager = McpManager::new(ManagerOptions::default());
    manager
        .connect_servers(
            [("env".to_owned(), dumping(&path))].into_iter().collect(),
            Default::default(),
        )
        .await;
    let env = dumped(&path);
    manager.disconnect_all().await;
    assert!(
        !env.contains_key(HOST_ONLY),
        "a host variable reached the server"
    );
    assert!(env.contains_key("PATH"));
}
