//! Both eras of MCP against real servers over real pipes and sockets: `mcpr mock --era`
//! (legacy, both, 2026-07-28 only, and legacy servers that never answer `server/discover` or
//! exit on it),
//! over stdio and streamable HTTP (servers written by others: `peers`). The probe's bound is checked by what the opening recorded
//! (era, probes, cache use), never by a clock.

mod cache_hints;
mod listen;
mod lost_answers;
mod peers;
#[path = "../support/mod.rs"]
mod support;

use std::sync::Arc;

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{ConnectOptions, Era, McpClient, Opening};
use mcp_runtime::config::ServerConfig;
use serde_json::json;
use support::{HttpMock, args, mock, temp_dir};

fn options(cache: Option<Arc<ToolCache>>) -> ConnectOptions {
    ConnectOptions::default().with_cache(cache)
}

/// Connect, check that the server works (list, call), close; returns the version and opening.
async fn use_server(config: &ServerConfig, options: &ConnectOptions) -> (String, Opening) {
    let client = McpClient::connect("mock", config, options)
        .await
        .expect("connect");
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let output = client
        .call_tool("echo", args(json!({"text": "hi"})), Default::default())
        .await
        .expect("tools/call");
    assert_eq!(output.text(), "hi");
    let seen = (client.info().protocol_version.clone(), client.opening());
    client.close().await;
    seen
}

#[tokio::test]
async fn a_legacy_server_is_probed_once_then_initialized() {
    let (version, opening) = use_server(&mock(&[]), &options(None)).await;
    assert_eq!(version, "2025-11-25");
    assert_eq!(opening.era, Era::Legacy);
    assert_eq!(opening.probes, 1);
    assert!(!opening.probe_timed_out, "the refusal ends the probe");
    assert_eq!(opening.attempts, 1);
}

#[tokio::test]
async fn a_modern_only_server_speaks_2026_07_28_over_stdio() {
    let (version, opening) = use_server(&mock(&["--era", "2026-07-28"]), &options(None)).await;
    assert_eq!(version, "2026-07-28");
    assert_eq!(opening.era, Era::Modern);
    assert_eq!(opening.probes, 1);
    assert_eq!(opening.attempts, 1);
}

#[tokio::test]
async fn a_server_of_both_eras_is_spoken_to_in_the_new_one() {
    let (version, opening) = use_server(&mock(&["--era", "both"]), &options(None)).await;
    assert_eq!(version, "2026-07-28");
    assert_eq!(opening.era, Era::Modern);
}

#[tokio::test]
async fn a_server_ignoring_the_probe_falls_back_without_waiting_for_the_startup_timeout() {
    // The mock reads `server/discover` and never answers; the probe is bounded from the moment
    // the server took it, so the fallback happens on the first connection, within one probe.
    let (version, opening) = use_server(&mock(&["--ignore-unknown"]), &options(None)).await;
    assert_eq!(version, "2025-11-25");
    assert_eq!(opening.era, Era::Legacy);
    assert_eq!(opening.probes, 1);
    assert!(opening.probe_timed_out);
    assert_eq!(opening.attempts, 1);
}

#[tokio::test]
async fn a_server_that_exits_on_the_probe_is_started_again_and_initialized() {
    // Servers built on the Python SDK before 1.7 (mcp-server-sqlite among them) exit on a
    // method they do not know: the probe costs one process, and the next start goes straight
    // to `initialize` (also on later start-ups, through the cached era).
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let crashing = mock(&["--exit-on-unknown"]);
    let (version, opening) = use_server(&crashing, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2025-11-25");
    assert_eq!(opening.era, Era::Legacy);
    assert_eq!(
        opening.attempts, 2,
        "one process for the probe, one for initialize"
    );
    assert_eq!(cache.era("mock", &crashing), Some(Era::Legacy));
    let (_, later) = use_server(&crashing, &options(Some(cache.clone()))).await;
    assert!(later.cached);
    assert_eq!(later.probes, 0);
    assert_eq!(later.attempts, 1);

    // A cached modern era whose server was replaced by such a server: the same.
    cache.put_era("mock", &crashing, Era::Modern);
    let (version, opening) = use_server(&crashing, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2025-11-25");
    assert_eq!(opening.attempts, 2);
    assert_eq!(cache.era("mock", &crashing), Some(Era::Legacy));
}

#[tokio::test]
async fn the_era_is_cached_so_later_startups_skip_the_probe() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    let ignoring = mock(&["--ignore-unknown"]);
    let (_, first) = use_server(&ignoring, &options(Some(cache.clone()))).await;
    assert!(!first.cached);
    assert!(first.probe_timed_out);
    assert_eq!(cache.era("mock", &ignoring), Some(Era::Legacy));
    let (version, second) = use_server(&ignoring, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2025-11-25");
    assert!(second.cached);
    assert_eq!(
        second.probes, 0,
        "a cached legacy era goes straight to initialize"
    );

    let modern = mock(&["--era", "2026-07-28"]);
    let (_, first) = use_server(&modern, &options(Some(cache.clone()))).await;
    assert!(!first.cached);
    assert_eq!(cache.era("mock", &modern), Some(Era::Modern));
    let (version, second) = use_server(&modern, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2026-07-28");
    assert!(second.cached);
    assert_eq!(second.attempts, 1);
}

#[tokio::test]
async fn a_stale_cached_era_is_corrected_on_the_next_connection() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    // The server moved on to the new revision since it was last seen.
    let modern = mock(&["--era", "2026-07-28"]);
    cache.put_era("mock", &modern, Era::Legacy);
    let (version, opening) = use_server(&modern, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2026-07-28");
    assert_eq!(opening.attempts, 2);
    assert_eq!(cache.era("mock", &modern), Some(Era::Modern));

    // Replaced by an old server that never answers `server/discover`: the recalled opening is
    // bounded like a probe, so this costs one more connection, not the startup timeout.
    let ignoring = mock(&["--ignore-unknown"]);
    cache.put_era("mock", &ignoring, Era::Modern);
    let (version, opening) = use_server(&ignoring, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2025-11-25");
    assert_eq!(opening.attempts, 2);
    assert!(opening.probe_timed_out);
    assert_eq!(cache.era("mock", &ignoring), Some(Era::Legacy));

    // And back.
    let legacy = mock(&[]);
    cache.put_era("mock", &legacy, Era::Modern);
    let (version, opening) = use_server(&legacy, &options(Some(cache.clone()))).await;
    assert_eq!(version, "2025-11-25");
    assert_eq!(opening.attempts, 2);
    assert_eq!(cache.era("mock", &legacy), Some(Era::Legacy));
}

async fn over_http(flags: &[&str], version: &str, era: Era) {
    let server = HttpMock::http(flags);
    let (got, opening) = use_server(&server.config(None), &options(None)).await;
    assert_eq!(got, version);
    assert_eq!(opening.era, era);
    assert_eq!(opening.probes, 1);
}

#[tokio::test]
async fn a_legacy_server_over_streamable_http() {
    over_http(&[], "2025-11-25", Era::Legacy).await;
}

#[tokio::test]
async fn a_server_ignoring_the_probe_over_streamable_http() {
    over_http(&["--ignore-unknown"], "2025-11-25", Era::Legacy).await;
}

#[tokio::test]
async fn a_server_of_both_eras_over_streamable_http() {
    over_http(&["--era", "both"], "2026-07-28", Era::Modern).await;
}

#[tokio::test]
async fn a_modern_only_server_over_streamable_http() {
    over_http(&["--era", "2026-07-28"], "2026-07-28", Era::Modern).await;
}

#[tokio::test]
async fn a_legacy_sse_server_still_connects() {
    let server = HttpMock::sse(&[]);
    let (version, opening) = use_server(&server.config(None), &options(None)).await;
    assert_eq!(version, "2025-11-25");
    assert_eq!(opening.era, Era::Legacy);
}

#[test]
fn status_shows_the_protocol_in_use() {
    let home = temp_dir();
    let config = home.path().join("servers.json");
    let servers = json!({"mcpServers": {
        "modern": {"command": support::MCPR, "args": ["mock", "--era", "2026-07-28"]},
        "legacy": {"command": support::MCPR, "args": ["mock"]},
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    let mut command = std::process::Command::new(support::MCPR);
    support::isolate_env(&mut command, home.path());
    let out = command
        .arg("--strict-config")
        .arg("--config")
        .arg(&config)
        .args(["status", "--json"])
        .current_dir(home.path())
        .output()
        .expect("run mcpr status");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let version = |name: &str| {
        reports
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["protocol_version"].clone())
    };
    assert_eq!(version("modern"), Some(json!("2026-07-28")), "{stdout}");
    assert_eq!(version("legacy"), Some(json!("2025-11-25")), "{stdout}");

    // The table too.
    let mut command = std::process::Command::new(support::MCPR);
    support::isolate_env(&mut command, home.path());
    let out = command
        .arg("--strict-config")
        .arg("--config")
        .arg(&config)
        .arg("status")
        .current_dir(home.path())
        .output()
        .expect("run mcpr status");
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("modern"))
        .unwrap_or_default();
    assert!(row.contains("2026-07-28"), "{table}");
}

/// A tool whose input schema uses JSON Schema 2020-12 references.
fn referencing_tool() -> serde_json::Value {
    json!({
        "name": "place_order",
        "description": "Order items for an address.",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["street", "city"]
                },
                "item": {"type": "object", "properties": {"sku": {"type": "string"}}}
            },
            "properties": {
                "shipping": {"$ref": "#/$defs/address"},
                "billing": {"$ref": "#/$defs/address"},
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}}
            },
            "required": ["shipping", "items"]
        }
    })
}

#[tokio::test]
async fn json_schema_2020_12_reaches_the_host_unchanged_directly_and_through_the_gateway() {
    let dir = temp_dir();
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, json!([referencing_tool()]).to_string()).unwrap();
    let tools_arg = tools.to_string_lossy().into_owned();
    let expected = referencing_tool()["inputSchema"].clone();

    for era in ["legacy", "2026-07-28"] {
        let backend = mock(&["--era", era, "--tool-file", &tools_arg]);
        let client = McpClient::connect("mock", &backend, &options(None))
            .await
            .expect("connect");
        let listed = client.list_tools().await.expect("tools/list");
        let tool = listed
            .iter()
            .find(|t| t.name == "place_order")
            .expect("listed");
        assert_eq!(tool.input_schema, expected, "direct, {era}");
        client.close().await;
    }

    // Through `mcpr serve` (stdio), in front of the same backend.
    let config = dir.path().join("servers.json");
    let servers = json!({"mcpServers": {"shop": {
        "command": support::MCPR,
        "args": ["mock", "--era", "2026-07-28", "--tool-file", tools_arg],
    }}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let mut gateway = ServerConfig::stdio(
        support::MCPR,
        [
            "serve".to_owned(),
            "--strict-config".into(),
            "--config".into(),
            config.to_string_lossy().into_owned(),
            "--cwd".into(),
            dir.path().to_string_lossy().into_owned(),
        ],
    );
    if let mcp_runtime::config::Transport::Stdio(stdio) = &mut gateway.transport {
        for (key, value) in [
            ("HOME", dir.path().to_owned()),
            ("XDG_CONFIG_HOME", dir.path().join(".config")),
            ("XDG_CACHE_HOME", dir.path().join(".cache")),
            ("XDG_DATA_HOME", dir.path().join(".local/share")),
        ] {
            stdio
                .env
                .insert(key.into(), value.to_string_lossy().into_owned());
        }
    }
    let client = McpClient::connect("gateway", &gateway, &options(None))
        .await
        .expect("connect to the gateway");
    let listed = client.list_tools().await.expect("tools/list");
    let tool = listed
        .iter()
        .find(|t| t.name.ends_with("place_order"))
        .unwrap_or_else(|| panic!("not listed: {listed:?}"));
    assert_eq!(tool.input_schema, expected, "through the gateway");
    client.close().await;
}

#[tokio::test]
async fn every_2026_07_28_request_carries_its_own_metadata() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let record_arg = record.to_string_lossy().into_owned();
    let config = mock(&["--era", "2026-07-28", "--record", &record_arg]);
    let (version, _) = use_server(&config, &options(None)).await;
    assert_eq!(version, "2026-07-28");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let requests: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l.get("id").is_some()).collect();
    let methods: Vec<&str> = requests
        .iter()
        .filter_map(|l| l["method"].as_str())
        .collect();
    assert_eq!(methods, ["server/discover", "tools/list", "tools/call"]);
    assert!(!lines.iter().any(|l| l["method"] == "initialize"));
    for request in requests {
        let meta = &request["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{request}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "mcpr",
            "{request}"
        );
        assert!(
            meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
            "{request}"
        );
    }
}

#[tokio::test]
async fn http_requests_of_2026_07_28_carry_the_mcp_headers() {
    let dir = temp_dir();
    let record = dir.path().join("record.jsonl");
    let tools = dir.path().join("tools.json");
    let routed = json!({
        "name": "route",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "text": {"type": "string"}
            }
        }
    });
    std::fs::write(&tools, json!([routed]).to_string()).unwrap();
    let server = HttpMock::http(&[
        "--era",
        "2026-07-28",
        "--record",
        record.to_str().unwrap(),
        "--tool-file",
        tools.to_str().unwrap(),
    ]);
    let client = McpClient::connect("mock", &server.config(None), &options(None))
        .await
        .expect("connect");
    assert_eq!(client.info().protocol_version, "2026-07-28");
    client.list_tools().await.expect("tools/list");
    client
        .call_tool("echo", args(json!({"text": "hi"})), Default::default())
        .await
        .expect("echo");
    client
        .call_tool(
            "route",
            args(json!({"region": "eu-west", "text": "x"})),
            Default::default(),
        )
        .await
        .expect("route");
    client.close().await;

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let post = |method: &str, name: Option<&str>| {
        lines
            .iter()
            .find(|l| {
                l["body"]["method"] == method
                    && name.is_none_or(|name| l["body"]["params"]["name"] == name)
            })
            .unwrap_or_else(|| panic!("no {method} POST in {lines:#?}"))
            .clone()
    };
    for (method, name) in [
        ("server/discover", None),
        ("tools/list", None),
        ("tools/call", Some("echo")),
    ] {
        let line = post(method, name);
        assert_eq!(line["protocolVersion"], "2026-07-28", "{line}");
        assert_eq!(line["mcpMethod"], method, "{line}");
        assert!(line["session"].is_null(), "no sessions in this era: {line}");
    }
    assert_eq!(post("tools/call", Some("echo"))["mcpName"], "echo");
    let routed = post("tools/call", Some("route"));
    assert_eq!(routed["mcpName"], "route");
    assert_eq!(
        routed["mcpParams"]["mcp-param-region"], "eu-west",
        "{routed}"
    );
}

#[tokio::test]
async fn a_stale_modern_era_is_corrected_over_streamable_http() {
    let dir = temp_dir();
    let cache = Arc::new(ToolCache::in_dir(dir.path()));
    for flags in [&[][..], &["--ignore-unknown"][..]] {
        let server = HttpMock::http(flags);
        let config = server.config(None);
        cache.put_era("mock", &config, Era::Modern);
        let (version, opening) = use_server(&config, &options(Some(cache.clone()))).await;
        assert_eq!(version, "2025-11-25", "{flags:?}");
        assert_eq!(opening.era, Era::Legacy, "{flags:?}");
        assert_eq!(cache.era("mock", &config), Some(Era::Legacy), "{flags:?}");
    }
}
