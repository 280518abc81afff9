use serde_json::json;

use super::*;

/// A decoder that has sent `requests` (`(id, method, params)`).
fn after_sending(requests: &[(i64, &str, Value)]) -> (Decoder, RawResults) {
    let raw = RawResults::default();
    let mut decoder = Decoder::new(raw.clone());
    for (id, method, params) in requests {
        let message: ClientJsonRpcMessage = serde_json::from_value(
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .unwrap();
        decoder.sent(&message);
    }
    (decoder, raw)
}

fn message(decoded: Decoded) -> ServerJsonRpcMessage {
    match decoded {
        Decoded::Message(message) => message,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// rmcp's own parse of the same text, for comparison.
fn rmcp_parse(line: &str) -> ServerJsonRpcMessage {
    serde_json::from_str(line).unwrap()
}

fn wire(message: &ServerJsonRpcMessage) -> Value {
    serde_json::to_value(message).unwrap()
}

/// Every result type the client asks for, with the method that asks for it.
fn answers() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "tools/call",
            json!({"name": "echo"}),
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false}),
        ),
        (
            "tools/list",
            json!({}),
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                   "nextCursor": "2"}),
        ),
        (
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "mock", "version": "1"}}),
        ),
        (
            "prompts/list",
            json!({}),
            json!({"prompts": [{"name": "p", "description": "d"}]}),
        ),
        (
            "prompts/get",
            json!({"name": "p"}),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]}),
        ),
        (
            "resources/list",
            json!({}),
            json!({"resources": [{"uri": "file:///a", "name": "a"}]}),
        ),
        (
            "resources/templates/list",
            json!({}),
            json!({"resourceTemplates": [{"uriTemplate": "file:///{x}", "name": "x"}]}),
        ),
        (
            "resources/read",
            json!({"uri": "file:///a"}),
            json!({"contents": [{"uri": "file:///a", "text": "body"}]}),
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                   "argument": {"name": "a", "value": "b"}}),
            json!({"completion": {"values": ["bb"], "hasMore": false}}),
        ),
        ("ping", json!({}), json!({})),
    ]
}

#[test]
fn every_result_type_decodes_as_rmcp_decodes_it() {
    for (i, (method, params, result)) in answers().into_iter().enumerate() {
        let id = i as i64 + 1;
        let (mut decoder, _) = after_sending(&[(id, method, params)]);
        for line in [
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            // `result` before `id`, as the TypeScript SDK writes it.
            format!(r#"{{"result":{result},"jsonrpc":"2.0","id":{id}}}"#),
        ] {
            let ours = message(after_sending_answers(method, id, &line));
            assert_eq!(wire(&ours), wire(&rmcp_parse(&line)), "{method}: {line}");
        }
        // Answered: the method is forgotten.
        let line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        message(decoder.decode(line.as_bytes()));
        assert!(decoder.pending.is_empty(), "{method}");
    }
}

/// Decode `line` after sending request `id` of `method` with that method's test params.
fn after_sending_answers(method: &str, id: i64, line: &str) -> Decoded {
    let params = answers()
        .into_iter()
        .find(|(m, ..)| *m == method)
        .map(|(_, params, _)| params)
        .unwrap();
    let (mut decoder, _) = after_sending(&[(id, method, params)]);
    decoder.decode(line.as_bytes())
}

#[test]
fn typed_answers_take_the_variant_of_their_method() {
    let (mut decoder, _) = after_sending(&[(1, "tools/list", json!({}))]);
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
    let JsonRpcMessage::Response(response) = message(decoder.decode(line.as_bytes())) else {
        panic!("not a response");
    };
    assert!(matches!(response.result, ServerResult::ListToolsResult(_)));
}

#[test]
fn tool_results_are_kept_whole_for_the_caller() {
    let (mut decoder, raw) = after_sending(&[(3, "tools/call", json!({"name": "echo"}))]);
    let line = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"é","x-block":1}],"x-new":true,"resultType":"complete"}}"#;
    let JsonRpcMessage::Response(response) = message(decoder.decode(line.as_bytes())) else {
        panic!("not a response");
    };
    let ServerResult::CallToolResult(typed) = response.result else {
        panic!("not a tool result");
    };
    assert_eq!(typed.content.len(), 1);
    let kept = raw.take(&RequestId::Number(3)).unwrap();
    assert_eq!(kept["x-new"], true);
    assert_eq!(kept["content"][0]["x-block"], 1);
    assert!(raw.take(&RequestId::Number(3)).is_none());
}

#[test]
fn tool_answers_that_are_no_tool_result_take_rmcps_parse() {
    for result in [
        // Some servers answer a tool without output with `{}`.
        json!({}),
        json!({"resultType": "input_required", "inputRequests": {}}),
        json!({"content": "not a list"}),
    ] {
        let (mut decoder, raw) = after_sending(&[(1, "tools/call", json!({"name": "t"}))]);
        let line = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
        let decoded = decoder.decode(line.as_bytes());
        match serde_json::from_str::<ServerJsonRpcMessage>(&line) {
            Ok(rmcp) => assert_eq!(wire(&message(decoded)), wire(&rmcp), "{line}"),
            Err(_) => assert!(matches!(decoded, Decoded::Invalid), "{line}"),
        }
        assert!(
            raw.take(&RequestId::Number(1)).is_none(),
            "not kept: {line}"
        );
        assert!(decoder.pending.is_empty());
    }
}

#[test]
fn error_answers_are_decoded_and_forget_the_request() {
    let (mut decoder, _) = after_sending(&[(5, "tools/call", json!({"name": "t"}))]);
    let line = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"unknown tool","data":{"x":1}}}"#;
    let decoded = message(decoder.decode(line.as_bytes()));
    assert_eq!(wire(&decoded), wire(&rmcp_parse(line)));
    let JsonRpcMessage::Error(error) = decoded else {
        panic!("not an error");
    };
    assert_eq!(error.error.code.0, -32602);
    assert!(decoder.pending.is_empty());
    // An error without an id (the server could not read a request).
    let line = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#;
    assert_eq!(
        wire(&message(decoder.decode(line.as_bytes()))),
        wire(&rmcp_parse(line))
    );
}

#[test]
fn server_requests_and_notifications_interleave_with_answers() {
    let (mut decoder, raw) = after_sending(&[
        (1, "tools/call", json!({"name": "slow"})),
        (2, "tools/list", json!({})),
    ]);
    let lines = [
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#,
        r#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
    ];
    for line in lines {
        let ours = message(decoder.decode(line.as_bytes()));
        assert_eq!(wire(&ours), wire(&rmcp_parse(line)), "{line}");
    }
    // The server's request with id 1 did not take the place of our request 1.
    assert!(raw.take(&RequestId::Number(1)).is_some());
    assert!(decoder.pending.is_empty());
}

#[test]
fn other_methods_pass_through_and_wrong_shapes_are_skipped_or_refused_as_rmcp_does() {
    let (mut decoder, _) = after_sending(&[]);
    // rmcp delivers these as custom notifications.
    for line in [
        r#"{"jsonrpc":"2.0","method":"window/logMessage","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/custom/thing"}"#,
    ] {
        let ours = message(decoder.decode(line.as_bytes()));
        assert_eq!(wire(&ours), wire(&rmcp_parse(line)), "{line}");
    }
    for line in [
        "",
        "   ",
        "not json at all",
        r#"{"jsonrpc":"2.0","id":1,"res"#,
    ] {
        assert!(
            matches!(decoder.decode(line.as_bytes()), Decoded::Skip),
            "{line}"
        );
    }
    for line in [
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
        r#"[1,2,3]"#,
        r#""a string""#,
        r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
    ] {
        assert!(
            matches!(decoder.decode(line.as_bytes()), Decoded::Invalid),
            "{line}"
        );
    }
}

#[test]
fn byte_order_mark_and_carriage_return_are_ignored() {
    let (mut decoder, _) = after_sending(&[(1, "tools/list", json!({}))]);
    let line = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\r";
    assert!(matches!(
        message(decoder.decode(line)),
        JsonRpcMessage::Response(_)
    ));
}

#[test]
fn hostile_input_never_panics_and_matches_rmcp() {
    let (mut decoder, raw) = after_sending(&[
        (1, "tools/call", json!({"name": "t"})),
        (2, "tools/list", json!({})),
        (3, "initialize", answers()[2].1.clone()),
    ]);
    let lines = [
        // Wrong types.
        r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"text"}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":"nope"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"result":{"protocolVersion":7}}"#,
        r#"{"jsonrpc":2,"id":2,"result":{"tools":[]}}"#,
        r#"{"jsonrpc":"2.0","id":true,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
        // Huge and odd ids.
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":-9223372036854775808,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1e400,"result":{}}"#,
        // An answer to a request nobody sent.
        r#"{"jsonrpc":"2.0","id":999,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":"999","error":{"code":1,"message":"x"}}"#,
        // Duplicate fields.
        r#"{"jsonrpc":"2.0","id":2,"id":1,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]},"result":{"tools":[]}}"#,
        // Deep nesting (serde_json's recursion limit), stray bytes, invalid UTF-8.
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}1{}}}"#,
            "[".repeat(500),
            "]".repeat(500)
        ),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}} trailing",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"\u{0}\"}}",
    ];
    for line in lines {
        let decoded = decoder.decode(line.as_bytes());
        match (serde_json::from_str::<ServerJsonRpcMessage>(line), decoded) {
            (Ok(rmcp), Decoded::Message(ours)) => assert_eq!(wire(&ours), wire(&rmcp), "{line}"),
            (Err(_), Decoded::Skip | Decoded::Invalid) => {}
            (rmcp, ours) => panic!("{line}: rmcp {rmcp:?}, ours {ours:?}"),
        }
    }
    let invalid_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}";
    assert!(!matches!(decoder.decode(invalid_utf8), Decoded::Message(_)));
    let _ = raw.take(&RequestId::Number(1));
}

#[test]
fn cancelled_requests_are_forgotten_and_memory_is_bounded() {
    let (mut decoder, _) = after_sending(&[(1, "tools/call", json!({"name": "t"}))]);
    let cancel: ClientJsonRpcMessage = serde_json::from_value(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}
    }))
    .unwrap();
    decoder.sent(&cancel);
    assert!(decoder.pending.is_empty());
    for id in 0..(MAX_PENDING as i64 + 10) {
        let request: ClientJsonRpcMessage =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
                .unwrap();
        decoder.sent(&request);
    }
    assert!(decoder.pending.len() <= MAX_PENDING);
    // An answer to a forgotten request still decodes (through rmcp's parse).
    let line = r#"{"jsonrpc":"2.0","id":0,"result":{"tools":[]}}"#;
    assert_eq!(
        wire(&message(decoder.decode(line.as_bytes()))),
        wire(&rmcp_parse(line))
    );
}

#[test]
fn answers_to_known_methods_take_the_fast_path_in_either_field_order() {
    for (i, (method, params, result)) in answers().into_iter().enumerate() {
        if method == "ping" {
            continue;
        }
        let id = i as i64 + 1;
        for line in [
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            format!(r#"{{"result":{result},"jsonrpc":"2.0","id":{id}}}"#),
        ] {
            let (mut decoder, _) = after_sending(&[(id, method, params.clone())]);
            assert!(decoder.fast(line.as_bytes()).is_some(), "{method}: {line}");
        }
    }
}
