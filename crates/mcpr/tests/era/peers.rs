//! Both eras of MCP against servers written by others, over real pipes and sockets: the
//! Python SDK 2.3.0 (it speaks 2026-07-28 and the older revisions), the Python SDK 1.30 and
//! server-everything (older revisions only), over stdio and streamable HTTP; multi round-trip
//! requests, `subscriptions/listen`, logs, and the CLI's answer when a server asks the user.

use super::*;

use support::python_sdk_2;

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

/// The Python SDK 2.3.0 server script of `dir` serving streamable HTTP on a free port, and
/// a config for it; the server stops when the guard drops.
fn python_sdk_2_over_http(dir: &tempfile::TempDir) -> (support::ChildGuard, ServerConfig) {
    let script = python_script(dir);
    let port = support::free_port();
    let server = support::ChildGuard::spawn(
        std::process::Command::new(python_sdk_2())
            .arg(&script)
            .args(["http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    support::wait_for_port(port, std::time::Duration::from_secs(30));
    let config = support::remote(&format!("http://127.0.0.1:{port}/mcp"), None);
    (server, config)
}

#[tokio::test]
async fn the_python_sdk_2_3_server_speaks_2026_07_28_over_streamable_http() {
    let dir = temp_dir();
    let (_server, config) = python_sdk_2_over_http(&dir);
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
    let answering = options(None).with_elicitation(Some(Arc::new(move |request| {
        seen.lock().unwrap().push(request.message.clone());
        Box::pin(async move {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            mcp_runtime::client::ElicitationResponse {
                action: mcp_runtime::client::ElicitationAction::Accept,
                content: Some(content),
            }
        })
    })));
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
    let declining = options(None).with_elicitation(Some(Arc::new(|_| {
        Box::pin(async { mcp_runtime::client::ElicitationResponse::decline() })
    })));
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

/// Call `grow` and wait (bounded, against hangs) for the tool list change to arrive.
async fn tool_list_changes_arrive_live(config: &ServerConfig) {
    let (events, mut notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let listening = options(None).with_events(Some(events));
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
    let dir = temp_dir();
    let (_server, config) = python_sdk_2_over_http(&dir);
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
async fn a_host_listening_for_events_gets_the_logs_of_2026_07_28_calls() {
    let python = python_sdk_2();
    let dir = temp_dir();
    let script = python_script(&dir);
    let config = ServerConfig::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    let (events, mut notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let listening = options(None).with_events(Some(events));
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
