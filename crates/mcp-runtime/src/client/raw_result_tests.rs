use serde_json::json;

use super::*;
use crate::client::{Content, tool_result};
use crate::config::ServerConfig;

/// Whether `text` is a tool's result the direct path passes on as it is (an object, not a
/// question), as `direct_result` decides.
fn passes_as_sent(text: &str) -> bool {
    tool_result::text_asks_for_input(text) == Some(false)
}

/// A server whose `tools/call` answers with the result text the call passes as `raw`,
/// written on as it is (so the test controls every byte, spacing and order included).
const ECHO_RAW: &str = include_str!("../../tests/fixtures/echo_raw.py");

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

#[test]
fn every_answer_form_becomes_the_result_text() {
    let text = r#"{ "x-later" : {"b":1,"a":2}, "content":[{"type":"text","text":"hi"}] }"#;
    // As sent: the very bytes.
    let as_sent = RawToolResult::from_answer(ToolAnswer::Raw(raw(text))).unwrap();
    assert_eq!(as_sent.json(), text);
    assert_eq!(as_sent.into_raw_value().get(), text);
    // rmcp's path keeps the object as sent: the same JSON, written again.
    let Value::Object(wire) = serde_json::from_str::<Value>(text).unwrap() else {
        unreachable!()
    };
    let written = RawToolResult::from_answer(ToolAnswer::Wire(wire)).unwrap();
    assert_eq!(
        written.json(),
        r#"{"x-later":{"b":1,"a":2},"content":[{"type":"text","text":"hi"}]}"#
    );
    // A decoded output: in the wire format, `isError` always there.
    let output = ToolOutput {
        content: vec![Content::text("hi")],
        ..Default::default()
    };
    let written = RawToolResult::from_answer(ToolAnswer::Output(output.clone())).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(written.json()).unwrap(),
        json!({"content": [{"type": "text", "text": "hi"}], "isError": false})
    );
    assert_eq!(written.decode().unwrap(), output);
}

#[test]
fn a_result_that_passes_as_sent_decodes_as_call_tool_reads_it() {
    let text = r#"{"content":[{"type":"text","text":"a","_meta":{"k":1}}],"isError":true,"x":[]}"#;
    assert!(passes_as_sent(text));
    let decoded = RawToolResult(raw(text)).decode().unwrap();
    let Value::Object(wire) = serde_json::from_str::<Value>(text).unwrap() else {
        unreachable!()
    };
    assert_eq!(decoded, ToolOutput::from_wire(wire).unwrap());
    // One that does not fit `ToolOutput` still passes; decoding it says what is wrong.
    let later = r#"{"content":"a later revision's shape"}"#;
    assert!(passes_as_sent(later));
    let error = RawToolResult(raw(later)).decode().unwrap_err();
    assert!(error.to_string().contains("expected a sequence"), "{error}");
    // Questions and what is no object are not results: rmcp's parse decides.
    for text in [
        r#"{"resultType":"input_required","inputRequests":{}}"#,
        "[]",
        "null",
    ] {
        assert!(!passes_as_sent(text), "{text}");
    }
}

#[tokio::test]
async fn a_call_hands_back_the_result_text_exactly_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.py");
    std::fs::write(&script, ECHO_RAW).unwrap();
    let mut config = ServerConfig::stdio("python3", [script.to_string_lossy().into_owned()]);
    config.timeout_ms = Some(30_000);
    let client = McpClient::connect("echo-raw", &config, &Default::default())
        .await
        .unwrap();
    let call = |text: &str| {
        let arguments = json!({"raw": text}).as_object().cloned();
        (
            client.call_tool_raw("t", arguments.clone(), CallOptions::default()),
            client.call_tool("t", arguments, CallOptions::default()),
        )
    };
    let sent =
        r#"{ "content" : [ {"type":"text", "text":"caf\u00e9"} ], "x-new":{"z":1,"a":[2]} }"#;
    let (raw, decoded) = call(sent);
    let raw = raw.await.unwrap();
    assert_eq!(raw.json(), sent, "byte for byte");
    assert_eq!(raw.decode().unwrap(), decoded.await.unwrap());
    assert_eq!(raw.decode().unwrap().text(), "café");

    // A result `ToolOutput` refuses passes as sent; `call_tool` says what is wrong.
    let later = r#"{"content":{"type":"text","text":"an object"},"isError":"maybe"}"#;
    let (raw, decoded) = call(later);
    assert_eq!(raw.await.unwrap().json(), later);
    let error = decoded.await.unwrap_err();
    assert!(matches!(error, ClientError::Protocol { .. }), "{error}");
    assert!(error.to_string().contains("invalid result"), "{error}");

    // What is no result object is refused by both, as rmcp's parse refuses it.
    let (raw, decoded) = call("[1,2]");
    let (raw, decoded) = (raw.await.unwrap_err(), decoded.await.unwrap_err());
    assert_eq!(raw.to_string(), decoded.to_string());
    client.close().await;
}
