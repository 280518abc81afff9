//! Protocol 2026-07-28 has no sessions and no resumption: when the response stream of a request
//! breaks before its answer (`mcpr mock --drop-answer`, over real HTTP), a request that is
//! safe to repeat is sent again, once; a tool call that may have changed something is not,
//! and its error says the answer was lost. What the server received is read from its
//! `--record` file.

use std::path::Path;

use mcp_runtime::client::{ClientError, McpClient};
use serde_json::json;

use super::options;
use super::support::{HttpMock, args, temp_dir};

/// Two tools: `lookup` says it is read-only, `charge` says nothing (so it may change things).
fn tool_file(dir: &Path) -> String {
    let tools = json!([
        {"name": "lookup", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": true}},
        {"name": "charge", "inputSchema": {"type": "object"}},
        {"name": "upsert", "inputSchema": {"type": "object"},
         "annotations": {"idempotentHint": true}},
    ]);
    let path = dir.join("tools.json");
    std::fs::write(&path, tools.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

/// A 2026-07-28 mock over HTTP with `drops`, recording into `dir`.
fn server(dir: &Path, drops: &[&str]) -> HttpMock {
    let record = dir.join("record.jsonl").to_string_lossy().into_owned();
    let tools = tool_file(dir);
    let mut flags = vec![
        "--era",
        "2026-07-28",
        "--tool-file",
        &tools,
        "--record",
        &record,
    ];
    for drop in drops {
        flags.extend(["--drop-answer", drop]);
    }
    HttpMock::http(&flags)
}

/// How many requests of `method` (and tool `name`) the server received.
fn received(dir: &Path, method: &str, name: Option<&str>) -> usize {
    let recorded = std::fs::read_to_string(dir.join("record.jsonl")).unwrap_or_default();
    recorded
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| line["body"]["method"] == method)
        .filter(|line| name.is_none_or(|name| line["body"]["params"]["name"] == name))
        .count()
}

async fn connect(server: &HttpMock) -> McpClient {
    McpClient::connect("lossy", &server.config(None), &options(None))
        .await
        .expect("connect")
}

#[tokio::test]
async fn a_list_whose_answer_was_lost_is_asked_again_once() {
    let dir = temp_dir();
    let server = server(dir.path(), &["tools/list"]);
    let client = connect(&server).await;
    let tools = client.list_tools().await.expect("tools/list, asked again");
    assert!(tools.iter().any(|t| t.name == "lookup"));
    assert_eq!(
        received(dir.path(), "tools/list", None),
        2,
        "{}",
        std::fs::read_to_string(dir.path().join("record.jsonl")).unwrap_or_default()
    );
    client.close().await;
}

#[tokio::test]
async fn a_request_whose_answer_is_lost_twice_fails_after_one_repeat() {
    let dir = temp_dir();
    let server = server(dir.path(), &["tools/list", "tools/list"]);
    let client = connect(&server).await;
    let error = client.list_tools().await.expect_err("lost twice");
    assert!(matches!(error, ClientError::AnswerLost { .. }), "{error}");
    assert_eq!(received(dir.path(), "tools/list", None), 2);
    client.close().await;
}

#[tokio::test]
async fn a_call_of_a_read_only_or_idempotent_tool_is_repeated() {
    let dir = temp_dir();
    let server = server(dir.path(), &["tools/call:lookup", "tools/call:upsert"]);
    let client = connect(&server).await;
    client.list_tools().await.expect("tools/list");
    for tool in ["lookup", "upsert"] {
        let output = client
            .call_tool(tool, args(json!({"q": 1})), Default::default())
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(output.text().contains("\"q\""), "{tool}: {}", output.text());
        assert_eq!(received(dir.path(), "tools/call", Some(tool)), 2, "{tool}");
    }
    client.close().await;
}

#[tokio::test]
async fn a_call_that_may_have_changed_something_is_not_repeated_and_says_so() {
    let dir = temp_dir();
    let server = server(dir.path(), &["tools/call:charge"]);
    let client = connect(&server).await;
    client.list_tools().await.expect("tools/list");
    let error = client
        .call_tool("charge", args(json!({"amount": 5})), Default::default())
        .await
        .expect_err("the answer was lost");
    assert!(matches!(error, ClientError::AnswerLost { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("lossy"), "{text}");
    assert!(text.contains("may or may not have run"), "{text}");
    assert_eq!(received(dir.path(), "tools/call", Some("charge")), 1);
    // The connection is still usable.
    let output = client
        .call_tool("charge", args(json!({"amount": 6})), Default::default())
        .await
        .expect("the next call");
    assert!(output.text().contains('6'), "{}", output.text());
    client.close().await;
}
