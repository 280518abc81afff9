//! Tool results reach every caller whole, and agent-facing paths cap them.
//!
//! Fidelity: the JSON a server sent (the mock's `rich` tool, which sets every optional field
//! of every content type plus fields no protocol revision defines; server-everything's
//! `get-annotated-message`, read straight off its stdout) is compared with what reaches
//! `mcpr call --json`, a client of `mcpr serve` over stdio and over HTTP, and the library
//! (`McpClient`, `Session`). Caps: a 2 MB result through `mcpr serve` is cut and spilled to a
//! private file; `mcpr call` stays whole unless `--max-output` is given.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_runtime::client::{
    CallOptions, ConnectOptions, Content, DEFAULT_MAX_OUTPUT, MAX_OUTPUT_VARIABLE, McpClient,
    OutputCap, ToolOutput,
};
use mcp_runtime::config::{ServerConfig, Transport, server_from_json};
use mcp_runtime::gateway::{SubAgentHandle, SubAgentOptions};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::session::Session;
use mcp_runtime::tools::{NamingStyle, mcp_tools};
use serde_json::{Value, json};
use support::MCPR;
use support::sdk::ServeWorld;

/// A result as a caller must see it: what the server sent, with `isError` made explicit (the
/// one field mcpr always writes).
fn as_received(mut sent: Value) -> Value {
    if let Value::Object(fields) = &mut sent {
        fields.entry("isError").or_insert(Value::Bool(false));
    }
    sent
}

/// A world whose config has the mock with the `rich` tool as `mock`, and server-everything as
/// `everything` when asked.
fn world(everything: bool) -> ServeWorld {
    let mut servers = json!({
        "mock": {"command": MCPR, "args": ["mock", "--rich-tool"]}
    });
    if everything {
        servers["everything"] = json!({
            "command": "node",
            "args": [support::server_everything().to_string_lossy(), "stdio"]
        });
    }
    ServeWorld::with_servers(support::temp_dir(), servers)
}

/// `mcpr call` in `world` with `args`; returns stdout and the exit code.
fn call(world: &ServeWorld, args: &[&str]) -> (String, i32) {
    let mut command = Command::new(MCPR);
    command
        .args(world.serve_args(&[]).iter().take(3))
        .arg("call")
        .args(args);
    world.isolate(&mut command);
    let out = command.output().expect("mcpr call runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.len() < 10_000, "{stderr}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// A client of `mcpr serve` over stdio, with this world's home.
async fn gateway_over_stdio(world: &ServeWorld, extra: &[&str]) -> McpClient {
    let mut config = ServerConfig::stdio(MCPR, world.serve_args(extra));
    if let Transport::Stdio(stdio) = &mut config.transport {
        let home = world.path("home");
        for (name, dir) in [
            ("HOME", home.clone()),
            ("XDG_CONFIG_HOME", home.join(".config")),
            ("XDG_CACHE_HOME", home.join(".cache")),
            ("XDG_DATA_HOME", home.join(".local/share")),
        ] {
            stdio
                .env
                .insert(name.into(), dir.to_string_lossy().into_owned());
        }
        stdio.cwd = Some(home.join("project"));
    }
    McpClient::connect("gateway", &config, &ConnectOptions::default())
        .await
        .expect("mcpr serve answers over stdio")
}

async fn gateway_over_http(url: &str) -> McpClient {
    let config = server_from_json("gateway", &json!({"type": "http", "url": url})).unwrap();
    McpClient::connect("gateway", &config, &ConnectOptions::default())
        .await
        .expect("mcpr serve answers over HTTP")
}

async fn call_json(client: &McpClient, tool: &str, args: Value) -> Value {
    let output = client
        .call_tool(tool, args.as_object().cloned(), CallOptions::default())
        .await
        .expect("the call succeeds");
    serde_json::to_value(&output).unwrap()
}

/// Call `tool` straight on a stdio server (`command args`) with hand-written JSON-RPC, and
/// return the `result` exactly as it came off the server's stdout.
fn sent_by_server(command: &str, args: &[&str], tool: &str, arguments: Value) -> Value {
    let mut child = support::ChildGuard::spawn(
        Command::new(command)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut stdin = child.0.stdin.take().unwrap();
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && tx.send(message).is_err()
            {
                return;
            }
        }
    });
    let answer = |id: u64| loop {
        let message = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers");
        if message["id"] == id {
            return message;
        }
    };
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "fidelity-test", "version": "1"}}}),
    );
    answer(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}}));
    let response = answer(2);
    response["result"].clone()
}

#[test]
fn mcpr_call_json_is_the_result_the_server_sent() {
    let world = world(false);
    let expected = as_received(mcp_mock::rich_result());
    let (stdout, code) = call(&world, &["mock", "rich", "--json"]);
    assert_eq!(code, 0, "{stdout}");
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn gateway_clients_over_stdio_and_http_get_the_result_the_server_sent() {
    let world = world(false);
    let expected = as_received(mcp_mock::rich_result());

    let stdio = gateway_over_stdio(&world, &[]).await;
    assert_eq!(
        call_json(&stdio, "mcp_mock_rich", json!({})).await,
        expected
    );
    stdio.close().await;

    let (_gateway, url) = world.http_gateway(&[], &[]);
    let http = gateway_over_http(&url).await;
    assert_eq!(call_json(&http, "mcp_mock_rich", json!({})).await, expected);
    http.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_library_gets_the_result_the_server_sent() {
    let expected = as_received(mcp_mock::rich_result());
    let config = support::mock(&["--rich-tool"]);
    let client = McpClient::connect("mock", &config, &ConnectOptions::default())
        .await
        .unwrap();
    let output = client
        .call_tool("rich", None, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&output).unwrap(), expected);
    // The typed view agrees with the JSON.
    assert_eq!(
        output.meta(),
        Some(&json!({"mock/result": {"trace": "rich-1"}}))
    );
    assert_eq!(
        output.extra["x-mock-future-result"],
        json!({"nested": [1, 2, 3]})
    );
    assert_eq!(output.content.len(), 5);
    for (block, sent) in output
        .content
        .iter()
        .zip(expected["content"].as_array().unwrap())
    {
        assert_eq!(block.annotations(), Some(&sent["annotations"]));
        assert_eq!(block.meta(), Some(&sent["_meta"]));
    }
    assert!(matches!(&output.content[2], Content::Audio { .. }));
    client.close().await;

    // Through a manager and a session (which caps, but this result is small).
    let manager = McpManager::new(ManagerOptions::default());
    let servers: indexmap::IndexMap<_, _> = [("mock".to_owned(), config)].into_iter().collect();
    let report = manager.connect_servers(servers, Default::default()).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let mut session = Session::new(manager.clone(), NamingStyle::Mcpr);
    session.refresh_mcp_tools(mcp_tools(&report.servers, NamingStyle::Mcpr));
    let output = session
        .call("mcp_mock_rich", None, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&output).unwrap(), expected);

    // Agent-facing library paths cap by default; a host can set its own cap.
    if std::env::var_os(MAX_OUTPUT_VARIABLE).is_none() {
        assert_eq!(
            session.output_cap().map(|c| c.max_bytes),
            Some(DEFAULT_MAX_OUTPUT)
        );
        let sub_agent = SubAgentOptions::default();
        assert_eq!(
            sub_agent.output_cap.map(|c| c.max_bytes),
            Some(DEFAULT_MAX_OUTPUT)
        );
    }
    let spill = support::temp_dir();
    session.set_output_cap(Some(OutputCap::new(1000, spill.path())));
    let output = session
        .call(
            "mcp_mock_huge",
            json!({"bytes": 5000}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        output.text().contains("1000 of 5000 bytes shown"),
        "{}",
        output.text()
    );
    assert!(spill_file(&output).starts_with(spill.path()));
    let handle = SubAgentHandle::new(
        manager.clone(),
        mcp_runtime::gateway::SubAgentOptions::default()
            .with_output_cap(Some(OutputCap::new(1000, spill.path()))),
    );
    let output = handle
        .call(
            "mcp_mock_huge",
            json!({"bytes": 5000}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        output.text().contains("1000 of 5000 bytes shown"),
        "{}",
        output.text()
    );
    manager.disconnect_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_annotations_reach_every_path() {
    let world = world(true);
    let arguments = json!({"messageType": "error", "includeImage": true});
    let everything = support::server_everything();
    let sent = sent_by_server(
        "node",
        &[&everything.to_string_lossy(), "stdio"],
        "get-annotated-message",
        arguments.clone(),
    );
    let annotated = sent["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().all(|b| b.get("annotations").is_some()));
    assert!(annotated, "server-everything sent no annotations: {sent}");
    let expected = as_received(sent);

    let (stdout, code) = call(
        &world,
        &[
            "everything",
            "get-annotated-message",
            &arguments.to_string(),
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), expected);

    let stdio = gateway_over_stdio(&world, &["--servers", "everything"]).await;
    let got = call_json(
        &stdio,
        "mcp_everything_get-annotated-message",
        arguments.clone(),
    )
    .await;
    assert_eq!(got, expected);
    stdio.close().await;

    let (_gateway, url) = world.http_gateway(&["--servers", "everything"], &[]);
    let http = gateway_over_http(&url).await;
    let got = call_json(&http, "mcp_everything_get-annotated-message", arguments).await;
    assert_eq!(got, expected);
    http.close().await;
}

/// The path the last text block names, and that block's text.
fn spill_file(output: &ToolOutput) -> std::path::PathBuf {
    let marker = match output.content.last() {
        Some(Content::Text { text, .. }) => text.clone(),
        other => panic!("no marker block: {other:?}"),
    };
    let path = marker
        .rsplit("the whole result is in ")
        .next()
        .unwrap()
        .trim_end_matches(']');
    std::path::PathBuf::from(path)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2_mb_result_through_mcpr_serve_is_cut_and_spilled_to_a_private_file() {
    const BYTES: usize = 2 * 1024 * 1024;
    let world = world(false);
    let client = gateway_over_stdio(&world, &[]).await;
    let output = client
        .call_tool(
            "mcp_mock_huge",
            json!({"bytes": BYTES}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    let Some(Content::Text { text, .. }) = output.content.first() else {
        panic!("{:?}", output.content.first());
    };
    assert_eq!(text.len(), 100_000, "the default cap: about 25k tokens");
    assert!(text.bytes().all(|b| b == b'x'));
    let marker = output.text();
    assert!(
        marker.contains(&format!("100000 of {BYTES} bytes shown")),
        "{}",
        &marker[marker.len() - 300..]
    );
    let path = spill_file(&output);
    assert!(
        path.starts_with(world.path("home/.cache/mcpr/outputs")),
        "{path:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{path:?}");
    }
    let whole: ToolOutput = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(whole.text().len(), BYTES);
    client.close().await;

    // `--max-output` sets the cap; 0 turns it off.
    let client = gateway_over_stdio(&world, &["--max-output", "1000"]).await;
    let output = client
        .call_tool(
            "mcp_mock_huge",
            json!({"bytes": 5000}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        output.text().contains("1000 of 5000 bytes shown"),
        "{}",
        output.text()
    );
    client.close().await;
    let client = gateway_over_stdio(&world, &["--max-output", "0"]).await;
    let output = client
        .call_tool(
            "mcp_mock_huge",
            json!({"bytes": BYTES}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(output.text().len(), BYTES);
    client.close().await;
}

#[test]
fn mcpr_call_is_whole_by_default_and_capped_with_max_output() {
    const BYTES: usize = 2 * 1024 * 1024;
    let world = world(false);
    let args = json!({"bytes": BYTES}).to_string();
    let (stdout, code) = call(&world, &["mock", "huge", &args, "--json"]);
    assert_eq!(code, 0);
    let whole: ToolOutput = serde_json::from_str(&stdout).unwrap();
    assert_eq!(whole.text().len(), BYTES);

    let (stdout, code) = call(
        &world,
        &["mock", "huge", &args, "--json", "--max-output", "4096"],
    );
    assert_eq!(code, 0);
    let cut: ToolOutput = serde_json::from_str(&stdout).unwrap();
    assert!(
        cut.text().contains(&format!("4096 of {BYTES} bytes shown")),
        "{}",
        cut.text()
    );
    let spilled: ToolOutput =
        serde_json::from_slice(&std::fs::read(spill_file(&cut)).unwrap()).unwrap();
    assert_eq!(spilled, whole);
}
