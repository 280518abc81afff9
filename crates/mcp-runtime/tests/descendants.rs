//! Processes that escape a stdio server's process group die with it all the same (Linux): a
//! grandchild in a session of its own (`setsid`), and one orphaned as a daemon leaves itself
//! (`--grandchild-setsid`, `--orphan` of the mock). Real processes over real pipes; the host's
//! own death is tested against the CLI (`crates/mcpr/tests/cli.rs`).
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{ClientError, ConnectOptions, McpClient};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use support::{alive, echo, mock, read_pid, temp_dir, wait_dead};

async fn connect(config: &ServerConfig) -> Result<McpClient, ClientError> {
    McpClient::connect("mock", config, &ConnectOptions::default()).await
}

/// The flags of a mock that leaves both kinds of escaped process, and their pid files.
fn escaping(dir: &Path, name: &str) -> (Vec<String>, [std::path::PathBuf; 2]) {
    let setsid = dir.join(format!("{name}-setsid.pid"));
    let orphan = dir.join(format!("{name}-orphan.pid"));
    let flags = vec![
        "--grandchild-setsid".to_owned(),
        setsid.display().to_string(),
        "--orphan".to_owned(),
        orphan.display().to_string(),
    ];
    (flags, [setsid, orphan])
}

fn mock_with(flags: &[String]) -> ServerConfig {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    mock(&flags)
}

/// Every one of `pids` is gone within a generous bound; survivors are killed here and fail the
/// test.
fn assert_all_gone(pids: &[u32]) {
    let survivors: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|pid| !wait_dead(*pid, Duration::from_secs(10)))
        .collect();
    for pid in &survivors {
        // SAFETY: the test's own stray process; do not leave it behind.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}

/// The parent of `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn a_server_is_the_child_of_the_hosts_watchdog() {
    let client = connect(&mock(&[])).await.unwrap();
    let server = client.pid().unwrap();
    let watchdog = parent_of(server).unwrap();
    assert_ne!(watchdog, std::process::id(), "started by the host itself");
    assert_eq!(parent_of(watchdog), Some(std::process::id()));
    assert_eq!(echo(&client, "hi").await.unwrap(), "hi");
    client.close().await;
}

#[tokio::test]
async fn close_leaves_no_process_that_left_the_group_or_was_orphaned() {
    let dir = temp_dir();
    let (flags, files) = escaping(dir.path(), "a");
    let client = connect(&mock_with(&flags)).await.unwrap();
    let server = client.pid().unwrap();
    let [setsid, orphan] = files.map(|file| read_pid(&file));
    assert!(alive(setsid) && alive(orphan));
    // The orphan's parent is gone: it was handed to the watchdog, not to init.
    let adopted = parent_of(orphan) == parent_of(server);

    client.close().await;

    assert_all_gone(&[server, setsid, orphan]);
    assert!(adopted, "the orphan was not handed to the server's parent");
}

#[tokio::test]
async fn closing_one_server_stops_what_escaped_its_group_while_another_runs() {
    let dir = temp_dir();
    let (flags, files) = escaping(dir.path(), "a");
    let closed = connect(&mock_with(&flags)).await.unwrap();
    // Another server of the same watchdog, which stays.
    let other = connect(&mock(&[])).await.unwrap();
    let [setsid, orphan] = files.map(|file| read_pid(&file));
    assert!(alive(setsid) && alive(orphan));

    closed.close().await;

    assert_all_gone(&[setsid, orphan]);
    assert_eq!(echo(&other, "still").await.unwrap(), "still");
    other.close().await;
}

#[tokio::test]
async fn disconnect_all_leaves_no_process_that_escaped_a_group() {
    let dir = temp_dir();
    let (flags_a, files_a) = escaping(dir.path(), "a");
    let (flags_b, files_b) = escaping(dir.path(), "b");
    let manager = McpManager::new(
        ManagerOptions::default()
            .with_cache(Some(Arc::new(ToolCache::in_dir(dir.path()))))
            .with_project(dir.path().to_owned()),
    );
    let servers: IndexMap<String, ServerConfig> = [("a", &flags_a), ("b", &flags_b)]
        .into_iter()
        .map(|(name, flags)| (name.to_owned(), mock_with(flags)))
        .collect();
    let report = manager.connect_servers(servers, IndexMap::new()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let pids: Vec<u32> = files_a
        .iter()
        .chain(&files_b)
        .map(|file| read_pid(file))
        .collect();
    assert!(pids.iter().all(|pid| alive(*pid)));

    manager.disconnect_all().await;

    assert_all_gone(&pids);
}
