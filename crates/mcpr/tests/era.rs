//! Both eras of MCP against real servers over real pipes and sockets: `mcpr mock --era`
//! (legacy, both, 2026-07-28 only, and a legacy server that never answers `server/discover`),
//! over stdio and streamable HTTP. The probe's bound is checked by what the opening recorded
//! (era, probes, cache use), never by a clock.

mod support;

use std::sync::Arc;

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{ConnectOptions, Era, McpClient, Opening};
use mcp_runtime::config::ServerConfig;
use serde_json::json;
use support::{HttpMock, args, mock, temp_dir};

fn options(cache: Option<Arc<ToolCache>>) -> ConnectOptions {
    ConnectOptions {
        cache,
        ..ConnectOptions::default()
    }
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

/// The MCP Python SDK 2.3.0 (it speaks both eras), installed once into `target/peers/py2`.
/// Returns its `python`.
fn python_sdk_2() -> std::path::PathBuf {
    let root = support::peers_dir().join("py2");
    let python = root.join("bin/python");
    let marker = root.join(".installed-mcp-2.3.0");
    std::fs::create_dir_all(&root).expect("create peers dir");
    let lock = std::fs::File::create(root.join(".install.lock")).expect("lock file");
    // SAFETY: flock on a file we own; released when `lock` is dropped.
    let locked = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
    assert_eq!(locked, 0, "lock the py2 peers dir");
    if marker.exists() {
        return python;
    }
    let run = |command: &mut std::process::Command| {
        let status = command.status().expect("run python3 / pip");
        assert!(status.success(), "{command:?} failed");
    };
    run(std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&root));
    run(std::process::Command::new(root.join("bin/pip")).args(["install", "-q", "mcp==2.3.0"]));
    std::fs::write(&marker, "").expect("write install marker");
    python
}

/// A server on the Python SDK 2.3.0: `echo`, and `greet`, which asks the user for a name.
const PYTHON_SERVER: &str = r#"
import sys
from typing import Annotated
from pydantic import BaseModel
from mcp.server.mcpserver import (
    AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve,
)

mcp = MCPServer("py23")

@mcp.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text

class Name(BaseModel):
    name: str

def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)

@mcp.tool()
def greet(answer: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
    """Ask for a name, then greet."""
    if isinstance(answer, AcceptedElicitation):
        return f"hello {answer.data.name}"
    return f"no name ({answer.action})"

@mcp.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `grown` and tell listeners."""
    mcp.add_tool(lambda: "new", name="grown")
    await ctx.notify_tools_changed()
    return "grown"

@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Log a line, then answer."""
    await ctx.info("working on it")
    return "done"

if sys.argv[1] == "stdio":
    mcp.run()
else:
    mcp.run("streamable-http", port=int(sys.argv[2]))
"#;

fn python_script(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let script = dir.path().join("server.py");
    std::fs::write(&script, PYTHON_SERVER).unwrap();
    script
}

#[tokio::test]
async fn the_python_sdk_2_3_server_speaks_2026_07_28_over_stdio() {
    let python = python_sdk_2();
    let dir = temp_dir();
    let script = python_script(&dir);
    let config = ServerConfig::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    let (version, opening) = use_server(&config, &options(None)).await;
    assert_eq!(version, "2026-07-28");
    assert_eq!(opening.era, Era::Modern);
    assert_eq!(opening.probes, 1);
    assert!(
        !opening.probe_timed_out,
        "a slow start is not an ignored probe"
    );
}

#[tokio::test]
async fn the_python_sdk_2_3_server_speaks_2026_07_28_over_streamable_http() {
    let python = python_sdk_2();
    let dir = temp_dir();
    let script = python_script(&dir);
    let port = support::free_port();
    let _server = support::ChildGuard::spawn(
        std::process::Command::new(python)
            .arg(&script)
            .args(["http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    support::wait_for_port(port, std::time::Duration::from_secs(30));
    let config = support::remote(&format!("http://127.0.0.1:{port}/mcp"), None);
    let (version, opening) = use_server(&config, &options(None)).await;
    assert_eq!(version, "2026-07-28");
    assert_eq!(opening.era, Era::Modern);
}

#[tokio::test]
async fn input_required_results_are_answered_by_the_host_and_the_call_retried() {
    let python = python_sdk_2();
    let dir = temp_dir();
    let script = python_script(&dir);
    let config = ServerConfig::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let answering = ConnectOptions {
        elicitation: Some(Arc::new(move |request| {
            seen.lock().unwrap().push(request.message.clone());
            Box::pin(async move {
                let mut content = serde_json::Map::new();
                content.insert("name".into(), json!("Ada"));
                mcp_runtime::client::ElicitationResponse {
                    action: mcp_runtime::client::ElicitationAction::Accept,
                    content: Some(content),
                }
            })
        })),
        ..options(None)
    };
    let client = McpClient::connect("python", &config, &answering)
        .await
        .expect("connect");
    assert_eq!(client.opening().era, Era::Modern);
    let output = client
        .call_tool("greet", None, Default::default())
        .await
        .expect("tools/call with input");
    assert_eq!(output.text(), "hello Ada");
    assert_eq!(*asked.lock().unwrap(), ["What is your name?"]);

    client.close().await;

    // A host that declines: the tool hears so, and the call still completes.
    let declining = ConnectOptions {
        elicitation: Some(Arc::new(|_| {
            Box::pin(async { mcp_runtime::client::ElicitationResponse::decline() })
        })),
        ..options(None)
    };
    let client = McpClient::connect("python", &config, &declining)
        .await
        .expect("connect");
    let output = client
        .call_tool("greet", None, Default::default())
        .await
        .expect("tools/call declined");
    assert_eq!(output.text(), "no name (decline)");
    client.close().await;
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

/// Call `grow` and wait (bounded, against hangs) for the tool list change to arrive.
async fn tool_list_changes_arrive_live(config: &ServerConfig) {
    let (events, mut notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let listening = ConnectOptions {
        events: Some(events),
        ..options(None)
    };
    let client = McpClient::connect("python", config, &listening)
        .await
        .expect("connect");
    assert_eq!(client.opening().era, Era::Modern);
    let before = client.list_tools().await.expect("tools/list");
    assert!(!before.iter().any(|t| t.name == "grown"));
    let output = client
        .call_tool("grow", None, Default::default())
        .await
        .expect("tools/call grow");
    assert_eq!(output.text(), "grown");
    let changed = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Some(event) = notices.recv().await {
            if event == mcp_runtime::client::ClientEvent::ToolsChanged {
                return true;
            }
        }
        false
    })
    .await
    .expect("no tools/list_changed within 30 s");
    assert!(changed);
    let after = client.list_tools().await.expect("tools/list");
    assert!(after.iter().any(|t| t.name == "grown"), "{after:?}");
    client.close().await;
}

#[tokio::test]
async fn tool_list_changes_arrive_through_subscriptions_listen_over_stdio() {
    let python = python_sdk_2();
    let dir = temp_dir();
    let script = python_script(&dir);
    let config = ServerConfig::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    tool_list_changes_arrive_live(&config).await;
}

#[tokio::test]
async fn tool_list_changes_arrive_through_subscriptions_listen_over_http() {
    let python = python_sdk_2();
    let dir = temp_dir();
    let script = python_script(&dir);
    let port = support::free_port();
    let _server = support::ChildGuard::spawn(
        std::process::Command::new(python)
            .arg(&script)
            .args(["http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    support::wait_for_port(port, std::time::Duration::from_secs(30));
    let config = support::remote(&format!("http://127.0.0.1:{port}/mcp"), None);
    tool_list_changes_arrive_live(&config).await;
}

#[test]
fn the_cli_without_a_terminal_declines_and_says_what_the_server_asked() {
    let python = python_sdk_2();
    let home = temp_dir();
    let script = python_script(&home);
    let config = home.path().join("servers.json");
    let servers = json!({"mcpServers": {"py": {
        "command": python, "args": [script, "stdio"],
    }}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let mut command = std::process::Command::new(support::MCPR);
    support::isolate_env(&mut command, home.path());
    let out = command
        .arg("--strict-config")
        .arg("--config")
        .arg(&config)
        .args(["call", "py", "greet"])
        .current_dir(home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcpr call");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("no name (decline)"), "{stdout}");
    assert!(
        stderr.contains("server `py` asked: What is your name? (fields: name); declined"),
        "{stderr}"
    );
}

/// Connect an old-era peer: it is spoken to with `initialize` after one refused probe.
async fn legacy_peer(name: &str, config: &ServerConfig) {
    let client = McpClient::connect(name, config, &options(None))
        .await
        .expect("connect");
    let opening = client.opening();
    assert_eq!(opening.era, Era::Legacy, "{name}");
    assert_eq!(opening.probes, 1, "{name}");
    assert!(
        !opening.probe_timed_out,
        "{name} refuses the probe, it does not ignore it"
    );
    assert!(client.info().protocol_version.as_str() < "2026-07-28");
    assert!(!client.list_tools().await.expect("tools/list").is_empty());
    client.close().await;
}

#[tokio::test]
async fn old_era_peers_are_probed_once_then_initialized() {
    // server-everything over stdio and streamable HTTP.
    let entry = support::server_everything();
    let stdio = ServerConfig::stdio(
        "node",
        [entry.to_string_lossy().into_owned(), "stdio".into()],
    );
    legacy_peer("everything", &stdio).await;
    let port = support::free_port();
    let _everything = support::ChildGuard::spawn(
        std::process::Command::new("node")
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    support::wait_for_port(port, std::time::Duration::from_secs(30));
    let http = support::remote(&format!("http://127.0.0.1:{port}/mcp"), None);
    legacy_peer("everything", &http).await;

    // The Python SDK 1.30 (FastMCP) over stdio and streamable HTTP.
    let python = support::python_mcp();
    let dir = temp_dir();
    let script = dir.path().join("server.py");
    let port = support::free_port();
    std::fs::write(
        &script,
        format!(
            "import sys\nfrom mcp.server.fastmcp import FastMCP\n\
             mcp = FastMCP('py1', host='127.0.0.1', port={port})\n\
             @mcp.tool()\ndef add(a: int, b: int) -> int:\n    return a + b\n\
             mcp.run(transport=sys.argv[1])\n"
        ),
    )
    .unwrap();
    let stdio = ServerConfig::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    legacy_peer("py1", &stdio).await;
    let _py = support::ChildGuard::spawn(
        std::process::Command::new(&python)
            .arg(&script)
            .arg("streamable-http")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    support::wait_for_port(port, std::time::Duration::from_secs(30));
    let http = support::remote(&format!("http://127.0.0.1:{port}/mcp"), None);
    legacy_peer("py1", &http).await;
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
async fn a_host_listening_for_events_gets_the_logs_of_2026_07_28_calls() {
    let python = python_sdk_2();
    let dir = temp_dir();
    let script = python_script(&dir);
    let config = ServerConfig::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    let (events, mut notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let listening = ConnectOptions {
        events: Some(events),
        ..options(None)
    };
    let client = McpClient::connect("python", &config, &listening)
        .await
        .expect("connect");
    assert_eq!(client.opening().era, Era::Modern);
    let output = client
        .call_tool("chatty", None, Default::default())
        .await
        .expect("tools/call chatty");
    assert_eq!(output.text(), "done");
    let logged = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Some(event) = notices.recv().await {
            if let mcp_runtime::client::ClientEvent::Log { data, .. } = event {
                return Some(data);
            }
        }
        None
    })
    .await
    .expect("no log within 30 s");
    assert_eq!(logged, Some(json!("working on it")));
    client.close().await;
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
