//! Remote servers written by others: server-everything in both HTTP modes (npm) and a Python
//! FastMCP server (PyPI), installed into `target/peers` on first use.

use super::*;

/// server-everything in `streamableHttp` or `sse` mode on a free port.
fn server_everything(mode: &str) -> (ChildGuard, u16) {
    let entry = support::server_everything();
    let port = support::free_port();
    let child = ChildGuard::spawn(
        std::process::Command::new("node")
            .arg(entry)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    support::wait_for_port(port, Duration::from_secs(30));
    (child, port)
}

/// What every peer must do: list, call, report progress, and get a server→client request
/// (roots or elicitation) answered.
async fn exercise_server_everything(config: &ServerConfig, transport: &str) {
    let root = temp_dir();
    let (events, mut notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let options = ConnectOptions::default()
        .with_roots(vec![root.path().to_owned()])
        .with_events(Some(events))
        .with_elicitation(Some(Arc::new(|request| {
            Box::pin(async move {
                let mut content = request.defaults();
                content.insert("name".into(), json!("Ada Lovelace"));
                ElicitationResponse::accept(content)
            })
        })));
    let client = McpClient::connect("everything", config, &options)
        .await
        .unwrap();
    assert_eq!(client.transport(), transport);
    let tools = client.list_tools().await.unwrap();
    assert!(tools.len() >= 13, "{} tools", tools.len());
    let out = client
        .call_tool(
            "echo",
            args(json!({"message": "hi"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), "Echo: hi");

    let out = client
        .call_tool(
            "trigger-long-running-operation",
            args(json!({"duration": 0.3, "steps": 3})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(out.text().contains("completed"), "{}", out.text());
    let mut progress = 0;
    while let Ok(event) = notices.try_recv() {
        if matches!(event, ClientEvent::Progress { .. }) {
            progress += 1;
        }
    }
    assert_eq!(progress, 3, "progress notifications");

    // Registered after the handshake because we declare elicitation; the server asks us in
    // the middle of the call and returns what we answered.
    let mut answered = String::new();
    for _ in 0..50 {
        let tools = client.list_tools().await.unwrap();
        if tools
            .iter()
            .any(|t| t.name == "trigger-elicitation-request")
        {
            let out = client
                .call_tool("trigger-elicitation-request", None, CallOptions::default())
                .await
                .unwrap();
            answered = out.text();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answered.contains("Ada Lovelace"), "{answered}");
    client.close().await;
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    bounded(async {
        let (_server, port) = server_everything("streamableHttp");
        let config = remote(&format!("http://127.0.0.1:{port}/mcp"), None);
        exercise_server_everything(&config, "http").await;
    })
    .await;
}

#[tokio::test]
async fn server_everything_over_legacy_sse() {
    bounded(async {
        let (_server, port) = server_everything("sse");
        let url = format!("http://127.0.0.1:{port}/sse");
        exercise_server_everything(&remote(&url, Some("sse")), "sse").await;
        // The same URL without a type: streamable HTTP is refused, legacy SSE is used.
        exercise_server_everything(&remote(&url, None), "sse").await;
    })
    .await;
}

/// A FastMCP server (Python SDK 1.30.0) over streamable HTTP: tools, progress, and two
/// requests to the client (roots and elicitation).
const FASTMCP_SERVER: &str = r#"
import sys
from pydantic import BaseModel
from mcp.server.fastmcp import FastMCP, Context

mcp = FastMCP("py-peer", host="127.0.0.1", port=int(sys.argv[1]))

@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@mcp.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    return "finished"

@mcp.tool()
async def roots(ctx: Context) -> str:
    """Ask the client for its roots."""
    result = await ctx.session.list_roots()
    return " ".join(str(root.uri) for root in result.roots)

class Answer(BaseModel):
    colour: str = "blue"

@mcp.tool()
async def ask(ctx: Context) -> str:
    """Ask the user."""
    result = await ctx.elicit("Favourite colour?", schema=Answer)
    return f"{result.action}:{result.data.colour if result.action == 'accept' else ''}"

mcp.run(transport="streamable-http")
"#;

#[tokio::test]
async fn python_fastmcp_over_streamable_http() {
    bounded(async {
        let python = support::python_mcp();
        let dir = temp_dir();
        let script = dir.path().join("server.py");
        std::fs::write(&script, FASTMCP_SERVER).unwrap();
        let port = support::free_port();
        let _server = ChildGuard::spawn(
            std::process::Command::new(python)
                .arg(&script)
                .arg(port.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        support::wait_for_port(port, Duration::from_secs(30));

        let root = temp_dir();
        let (events, mut notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
        let options = ConnectOptions::default()
            .with_roots(vec![root.path().to_owned()])
            .with_events(Some(events))
            .with_elicitation(Some(Arc::new(|request| {
                Box::pin(async move { ElicitationResponse::accept(request.defaults()) })
            })));
        let config = remote(&format!("http://127.0.0.1:{port}/mcp"), None);
        let client = McpClient::connect("python", &config, &options)
            .await
            .unwrap();
        assert_eq!(client.transport(), "http");
        let names: Vec<String> = client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["add", "slow", "roots", "ask"]);

        let out = client
            .call_tool(
                "add",
                args(json!({"a": 2, "b": 40})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "42");

        let out = client
            .call_tool("slow", args(json!({"steps": 3})), CallOptions::default())
            .await
            .unwrap();
        assert_eq!(out.text(), "finished");
        let mut progress = Vec::new();
        while let Ok(event) = notices.try_recv() {
            if let ClientEvent::Progress { progress: p, .. } = event {
                progress.push(p);
            }
        }
        assert_eq!(progress, vec![1.0, 2.0, 3.0]);

        let out = client
            .call_tool("roots", None, CallOptions::default())
            .await
            .unwrap();
        let expected = format!("file://{}", root.path().display());
        assert!(out.text().contains(&expected), "{}", out.text());

        let out = client
            .call_tool("ask", None, CallOptions::default())
            .await
            .unwrap();
        assert_eq!(out.text(), "accept:blue");
        client.close().await;
    })
    .await;
}
