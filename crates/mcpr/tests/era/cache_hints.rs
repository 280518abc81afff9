//! Caching hints of protocol 2026-07-28 (`ttlMs`, `cacheScope`) against `mcpr mock --ttl-ms
//! --cache-scope`: a fresh `server/discover` result is replayed so a later start-up sends
//! none, a fresh tool list stands in for a new `tools/list`, a private discovery is never
//! written to the shared cache, and a private tool list only as deferred tools. What was sent is read from the mock's `--record` file, never
//! from a clock (the one wait makes a 1 ms `ttlMs` certainly past).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::client::{Era, McpClient};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};

use super::support::{HttpMock, mock, temp_dir};
use super::{options, use_server};

const HOUR_MS: &str = "3600000";

/// A 2026-07-28 mock with these caching hints, recording what it reads to `record`.
fn hinted(ttl_ms: &str, scope: &str, record: &Path) -> ServerConfig {
    mock(&[
        "--era",
        "2026-07-28",
        "--ttl-ms",
        ttl_ms,
        "--cache-scope",
        scope,
        "--record",
        &record.to_string_lossy(),
    ])
}

/// How many requests of `method` the mock recorded.
fn sent(record: &Path, method: &str) -> usize {
    let recorded = std::fs::read_to_string(record).unwrap_or_default();
    recorded
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["method"] == method)
        .count()
}

#[tokio::test]
async fn a_fresh_discovery_is_replayed_so_a_second_startup_sends_no_server_discover() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let record = dir.path().join("record.jsonl");
    let server = hinted(HOUR_MS, "public", &record);

    let (version, first) = use_server(&server, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2026-07-28");
    assert!(!first.discovery_cached);
    assert_eq!(first.probes, 1);
    assert!(cache.discovery("mock", &server).is_some());

    let (version, second) = use_server(&server, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2026-07-28");
    assert!(second.discovery_cached, "{second:?}");
    assert_eq!(second.probes, 0);
    assert_eq!(second.era, Era::Modern);
    assert_eq!(
        sent(&record, "server/discover"),
        1,
        "the second start-up asked nothing"
    );
}

#[tokio::test]
async fn past_its_ttl_a_discovery_is_asked_again() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let record = dir.path().join("record.jsonl");
    let server = hinted("1", "public", &record);
    let (_, first) = use_server(&server, &options(Some(cache.clone()))).await;
    assert!(!first.discovery_cached);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (_, second) = use_server(&server, &options(Some(cache.clone()))).await;
    assert!(!second.discovery_cached);
    assert!(second.cached, "the era is still remembered");
    assert_eq!(second.probes, 1);
    assert_eq!(sent(&record, "server/discover"), 2);
}

#[tokio::test]
async fn a_private_discovery_is_not_written_to_the_shared_cache() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let record = dir.path().join("record.jsonl");
    let server = hinted(HOUR_MS, "private", &record);
    use_server(&server, &options(Some(cache.clone()))).await;
    assert_eq!(cache.discovery("mock", &server), None);
    let (_, second) = use_server(&server, &options(Some(cache.clone()))).await;
    assert!(!second.discovery_cached);
    assert_eq!(sent(&record, "server/discover"), 2);
}

#[tokio::test]
async fn a_discovery_is_replayed_over_streamable_http_too() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let server = HttpMock::http(&[
        "--era",
        "2026-07-28",
        "--ttl-ms",
        HOUR_MS,
        "--cache-scope",
        "public",
    ]);
    let config = server.config(None);
    let (_, first) = use_server(&config, &options(Some(cache.clone()))).await;
    assert!(!first.discovery_cached);
    let (version, second) = use_server(&config, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2026-07-28");
    assert!(second.discovery_cached, "{second:?}");
    assert_eq!(second.probes, 0);
}

/// A start-up that replays its discovery sends nothing in the opening, so its first request
/// over streamable HTTP must not be `subscriptions/listen`: rmcp's transport reads the first
/// request's stream as the opening's answer, and a listen stream never answers, which held
/// every later call.
#[tokio::test]
async fn calls_go_through_after_a_replayed_discovery_over_streamable_http() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let server = HttpMock::http(&[
        "--era",
        "2026-07-28",
        "--ttl-ms",
        HOUR_MS,
        "--cache-scope",
        "public",
    ]);
    let config = server.config(None);
    for start in ["cold", "replayed"] {
        let manager = started(&cache, dir.path(), &config).await;
        let arguments = serde_json::json!({"text": start}).as_object().cloned();
        let call = manager.call_tool("mock", "echo", arguments, Default::default());
        let output = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .unwrap_or_else(|_| panic!("{start}: the call never came back"))
            .unwrap_or_else(|e| panic!("{start}: {e}"));
        assert_eq!(output.text(), start);
        manager.disconnect_all().await;
    }
}

#[tokio::test]
async fn a_replayed_discovery_of_a_server_gone_away_falls_back_to_a_live_probe() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let record = dir.path().join("record.jsonl");
    let server = hinted(HOUR_MS, "public", &record);
    use_server(&server, &options(Some(cache.clone()))).await;
    // The same config now names a server that no longer starts: the replayed opening fails,
    // the entry is forgotten.
    let gone = ServerConfig::stdio("/nonexistent/mcp-server", Vec::<String>::new());
    let result = cache.discovery("mock", &server).expect("kept");
    cache.put_era("gone", &gone, Era::Modern);
    cache.put_discovery(
        "gone",
        &gone,
        &result,
        mcp_runtime::cache::CacheHints::new(Some(3_600_000), false),
    );
    let error = McpClient::connect("gone", &gone, &options(Some(cache.clone())))
        .await
        .expect_err("nothing to start");
    assert!(error.to_string().contains("gone"), "{error}");
    assert_eq!(cache.discovery("gone", &gone), None);
}

/// A manager with `cache` that started `server` as `mock`, without errors.
async fn started(cache: &Arc<ToolCache>, project: &Path, server: &ServerConfig) -> McpManager {
    let manager = McpManager::new(
        ManagerOptions::default()
            .with_cache(Some(cache.clone()))
            .with_project(project.to_owned()),
    );
    let configs: IndexMap<String, ServerConfig> = [("mock".to_owned(), server.clone())].into();
    let report = manager.connect_servers(configs, IndexMap::new()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    manager
}

/// Start `server` under a manager with `cache`, check its tools are live, shut it down.
async fn start_up(cache: &Arc<ToolCache>, project: &Path, server: &ServerConfig) {
    let manager = started(cache, project, server).await;
    let tools = manager.server_tools();
    let mock = tools.iter().find(|s| s.server == "mock").expect("mock");
    assert!(!mock.deferred, "live tools");
    assert!(mock.tools.iter().any(|t| t.name == "echo"));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a_fresh_tool_list_stands_in_for_tools_list_and_a_stale_one_does_not() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let record = dir.path().join("fresh.jsonl");
    let fresh = hinted(HOUR_MS, "public", &record);
    // (A first start-up may list twice: once more when the subscription to tool list changes
    // is acknowledged after the first list.)
    start_up(&cache, dir.path(), &fresh).await;
    let first = sent(&record, "tools/list");
    assert!(first >= 1);
    start_up(&cache, dir.path(), &fresh).await;
    assert_eq!(
        sent(&record, "tools/list"),
        first,
        "within ttl: not listed again"
    );
    assert_eq!(sent(&record, "server/discover"), 1);

    let record = dir.path().join("stale.jsonl");
    let stale = hinted("1", "public", &record);
    start_up(&cache, dir.path(), &stale).await;
    let first = sent(&record, "tools/list");
    tokio::time::sleep(Duration::from_millis(20)).await;
    start_up(&cache, dir.path(), &stale).await;
    assert!(
        sent(&record, "tools/list") > first,
        "past ttl: listed again"
    );
}

/// A private list may not be shared across authorization contexts. A stdio server's context
/// is its command line and environment, which the cache key hashes, so its list is kept as the
/// stand-in shown at the start-up gate (the Python SDK 2.x marks every list private) — but never
/// as fresh: each start-up lists again, whatever the `ttlMs`.
#[tokio::test]
async fn a_private_tool_list_of_a_stdio_server_is_kept_as_a_stand_in_only() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let record = dir.path().join("record.jsonl");
    let private = hinted(HOUR_MS, "private", &record);
    start_up(&cache, dir.path(), &private).await;
    let key = CacheKey::new("mock", dir.path(), &private);
    let entry = cache.get_entry(&key).expect("kept as deferred tools");
    assert!(!entry.fresh, "a private list is never fresh");
    assert!(entry.tools.iter().any(|t| t.name == "echo"));
    let first = sent(&record, "tools/list");
    start_up(&cache, dir.path(), &private).await;
    assert!(
        sent(&record, "tools/list") > first,
        "not fresh: listed again"
    );
}
