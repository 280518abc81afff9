use tokio::io::{AsyncReadExt, duplex};

use super::*;

fn direct() -> (Direct, tokio::io::DuplexStream) {
    let (ours, theirs) = duplex(64 * 1024);
    let writer: Writer = Box::new(ours);
    (
        Direct::new(Arc::new(tokio::sync::Mutex::new(Some(writer)))),
        theirs,
    )
}

#[test]
fn only_answers_with_an_id_in_our_range_are_ours() {
    let first = FIRST_ID;
    let ours = |line: String| parse_answer(line.as_bytes(), &|_| Wants::Text).map(|(id, _)| id);
    assert_eq!(
        ours(format!(r#"{{"jsonrpc":"2.0","id":{first},"result":{{}}}}"#)),
        Some(first)
    );
    // Result before id, a byte order mark and a carriage return: still ours.
    assert_eq!(
        ours(format!(
            "\u{feff}{{\"result\":{{\"a\":1}},\"id\":{first},\"jsonrpc\":\"2.0\"}}\r"
        )),
        Some(first)
    );
    let error = parse_answer(
        format!(r#"{{"jsonrpc":"2.0","id":{first},"error":{{"code":-1,"message":"no"}}}}"#)
            .as_bytes(),
        &|_| Wants::Text,
    );
    assert!(matches!(error, Some((_, Err(NoResult::Server(e)))) if e.message == "no"));
    for line in [
        // rmcp's ids, other types, out of every range.
        r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":"{first}","result":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":[{first}],"result":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":{{"n":{first}}},"result":{{}}}}"#),
        r#"{"jsonrpc":"2.0","id":-4294967296,"result":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1e400,"result":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":4294967296.5,"result":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#.to_owned(),
        // Not answers, or not well-formed ones.
        format!(r#"{{"jsonrpc":"2.0","id":{first},"method":"ping"}}"#),
        format!(r#"{{"jsonrpc":"1.0","id":{first},"result":{{}}}}"#),
        format!(r#"{{"id":{first},"result":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":{first}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":{first},"result":{{}},"result":{{}}}}"#),
        format!(
            r#"{{"jsonrpc":"2.0","id":{first},"result":{{}},"error":{{"code":1,"message":""}}}}"#
        ),
        format!(r#"{{"jsonrpc":"2.0","id":{first},"id":{first},"result":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":{first},"result":{{}}}} trailing"#),
        format!(r#"{{"jsonrpc":"2.0","id":{first},"result":{{"#),
        "not json".to_owned(),
        "[]".to_owned(),
        String::new(),
    ] {
        assert_eq!(ours(line.clone()), None, "{line}");
    }
}

#[tokio::test]
async fn an_answer_goes_to_its_call_once_and_later_copies_are_dropped() {
    let (direct, _server) = direct();
    let (id, receiver) = direct.register(Wants::Text).unwrap();
    let (other, _other_receiver) = direct.register(Wants::Text).unwrap();
    assert_ne!(id, other);
    let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"n":1}}}}"#);
    assert!(direct.deliver(line.as_bytes()));
    let Ok(Delivered::Text(result)) = receiver.await.unwrap() else {
        panic!("the result as text");
    };
    assert_eq!(result.get(), r#"{"n":1}"#, "the result's text as sent");
    // A duplicate, and an answer nobody asked for: taken (never rmcp's), dropped.
    assert!(direct.deliver(line.as_bytes()));
    let unknown = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, u64::MAX);
    assert!(direct.deliver(unknown.as_bytes()));
    assert_eq!(direct.waiting(), 1, "the other call still waits");
    // Not ours: left to the decoder.
    assert!(!direct.deliver(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
    assert!(!direct.deliver(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#));
}

#[tokio::test]
async fn a_tool_call_gets_its_output_read_from_the_line_or_else_the_text() {
    let (direct, _server) = direct();
    let answer = |line: &str| {
        let (id, receiver) = direct.register(Wants::ToolOutput).unwrap();
        let line = line.replace("ID", &id.to_string());
        assert!(direct.deliver(line.as_bytes()), "{line}");
        let mut receiver = receiver;
        receiver.try_recv().unwrap().unwrap()
    };
    // The id before the result, as servers write it: one pass, straight into the output.
    let Delivered::Tool(output) = answer(
        r#"{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"hi"}],"isError":true}}"#,
    ) else {
        panic!("read in one pass");
    };
    assert!(output.is_error);
    assert_eq!(output.text(), "hi");
    // The rest comes as the result's text, for the caller's readers, as sent.
    for (line, text) in [
        // The id after the result.
        (
            r#"{"jsonrpc":"2.0","result":{"content":[]},"id":ID}"#,
            r#"{"content":[]}"#,
        ),
        // A question (2026-07-28), no output.
        (
            r#"{"jsonrpc":"2.0","id":ID,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            r#"{"resultType":"input_required","inputRequests":{}}"#,
        ),
        // What the one-pass reader leaves to the slow one: a field twice, a wrong type.
        (
            r#"{"jsonrpc":"2.0","id":ID,"result":{"content":[],"content":[]}}"#,
            r#"{"content":[],"content":[]}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":ID,"result":{"isError":"yes"}}"#,
            r#"{"isError":"yes"}"#,
        ),
        // No object.
        (r#"{"jsonrpc":"2.0","id":ID,"result":7}"#, "7"),
    ] {
        let Delivered::Text(result) = answer(line) else {
            panic!("as text: {line}");
        };
        assert_eq!(result.get(), text);
    }
    // Broken after a result read in one pass: not an answer, as before.
    let (id, _receiver) = direct.register(Wants::ToolOutput).unwrap();
    let broken = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}} x"#);
    assert!(!direct.deliver(broken.as_bytes()));
}

#[tokio::test]
async fn the_end_of_the_connection_wakes_every_call_and_refuses_new_ones() {
    let (direct, _server) = direct();
    let receivers: Vec<_> = (0..10)
        .map(|_| direct.register(Wants::Text).unwrap().1)
        .collect();
    direct.close();
    for receiver in receivers {
        assert!(receiver.await.is_err());
    }
    assert!(direct.register(Wants::Text).is_none());
    assert!(direct.is_closed());
}

#[tokio::test]
async fn a_forgotten_call_is_no_longer_waited_for() {
    let (direct, _server) = direct();
    let (id, _receiver) = direct.register(Wants::Text).unwrap();
    assert!(direct.forget(id));
    assert!(!direct.forget(id), "forgotten once");
    assert_eq!(direct.waiting(), 0);
}

#[tokio::test]
async fn a_line_dropped_half_way_is_still_written_whole() {
    // A pipe of 8 bytes: the first write takes 8, the rest waits for the reader.
    let (ours, mut theirs) = duplex(8);
    let writer: Writer = Box::new(ours);
    let direct = Arc::new(Direct::new(Arc::new(tokio::sync::Mutex::new(Some(writer)))));
    let line = b"0123456789abcdefghij\n".to_vec();
    let written = {
        let direct = direct.clone();
        let line = line.clone();
        tokio::spawn(async move { direct.write_line(line).await })
    };
    let mut first = [0u8; 8];
    theirs.read_exact(&mut first).await.unwrap();
    written.abort();
    let _ = written.await;
    // The next line comes after the whole first one.
    let next = {
        let direct = direct.clone();
        tokio::spawn(async move { direct.write_line(b"next\n".to_vec()).await })
    };
    let mut rest = vec![0u8; line.len() - 8 + 5];
    theirs.read_exact(&mut rest).await.unwrap();
    next.await.unwrap().unwrap();
    let mut all = first.to_vec();
    all.extend(rest);
    assert_eq!(all, [line, b"next\n".to_vec()].concat());
}

#[tokio::test]
async fn lines_written_while_others_wait_arrive_whole_and_in_order() {
    let (direct, mut theirs) = direct();
    let direct = Arc::new(direct);
    let (first, _answer) = direct.register(Wants::Text).unwrap();
    let lines: Vec<Vec<u8>> = (0..60)
        .map(|i| format!("{{\"line\":{i}}}\n").into_bytes())
        .collect();
    let mut others = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match i {
            // Others start waiting: lines from here on join a batch.
            20 => others.extend((0..2).map(|_| direct.register(Wants::Text).unwrap())),
            // They are answered before the batch is written: later lines still come after it.
            40 => {
                for (id, _) in others.drain(..) {
                    direct.forget(id);
                }
            }
            _ => {}
        }
        direct.write_line(line.clone()).await.unwrap();
    }
    assert!(direct.forget(first));
    let expected = lines.concat();
    let mut received = vec![0u8; expected.len()];
    theirs.read_exact(&mut received).await.unwrap();
    assert_eq!(received, expected);
}

#[tokio::test]
async fn a_batch_the_server_cannot_take_ends_the_connection() {
    let (direct, theirs) = direct();
    let direct = Arc::new(direct);
    // The server's stdin is gone.
    drop(theirs);
    let receivers: Vec<_> = (0..2)
        .map(|_| direct.register(Wants::Text).unwrap().1)
        .collect();
    // Accepted into the batch; its write fails on the batch's own task.
    direct.write_line(b"{}\n".to_vec()).await.unwrap();
    for receiver in receivers {
        assert!(receiver.await.is_err(), "the waiting call is woken");
    }
    assert!(direct.is_closed());
}

#[tokio::test]
async fn a_standing_subscription_does_not_hold_lines_back() {
    let (direct, mut theirs) = direct();
    let direct = Arc::new(direct);
    let (_subscription, _ended) = direct.register_standing().unwrap();
    let (_call, _answer) = direct.register(Wants::Text).unwrap();
    // Written by the caller itself, at once: no batch task has to run first.
    direct.write_line(b"{}\n".to_vec()).await.unwrap();
    let mut line = [0u8; 3];
    let read = futures::FutureExt::now_or_never(theirs.read(&mut line));
    assert_eq!(
        read.map(|r| r.unwrap()),
        Some(3),
        "written before write_line returned"
    );
}

#[tokio::test]
async fn a_server_that_stops_reading_holds_writers_back_past_a_full_batch() {
    // A pipe of 8 bytes that nobody reads for now.
    let (ours, mut theirs) = duplex(8);
    let writer: Writer = Box::new(ours);
    let direct = Arc::new(Direct::new(Arc::new(tokio::sync::Mutex::new(Some(writer)))));
    let _waiting: Vec<_> = (0..3)
        .map(|_| direct.register(Wants::Text).unwrap())
        .collect();
    let line = |fill: u8, len: usize| {
        let mut line = vec![fill; len - 1];
        line.push(b'\n');
        line
    };
    // The batch's task takes the first line and blocks on the full pipe.
    let mut sent = vec![line(b'a', 16)];
    direct.write_line(sent[0].clone()).await.unwrap();
    tokio::task::yield_now().await;
    // Lines written meanwhile fill the next batch up to its bound, and are accepted at once.
    for fill in [b'b', b'c'] {
        let big = line(fill, BATCH_MAX / 2);
        direct.write_line(big.clone()).await.unwrap();
        sent.push(big);
    }
    // Past it, a writer waits.
    let last = line(b'd', 16);
    let mut pending = {
        let direct = direct.clone();
        let last = last.clone();
        tokio::spawn(async move { direct.write_line(last).await })
    };
    sent.push(last);
    tokio::task::yield_now().await;
    assert!(
        futures::FutureExt::now_or_never(&mut pending).is_none(),
        "the writer waits for the server to read"
    );
    // Everything arrives, in order, once the server reads.
    let expected = sent.concat();
    let mut received = vec![0u8; expected.len()];
    theirs.read_exact(&mut received).await.unwrap();
    pending.await.unwrap().unwrap();
    assert!(received == expected, "the lines arrive whole and in order");
}

/// `_meta` as the map rmcp builds it: the era's entries, the caller's, the progress token.
fn meta_as_rmcp_builds_it(era: &EraMeta, caller: Option<RequestMetaObject>, id: i64) -> String {
    let mut all = RequestMetaObject::default();
    all.set_protocol_version(era.protocol_version.clone());
    all.set_client_info(era.client_info.clone());
    all.set_client_capabilities(era.capabilities.clone());
    if let Some(caller) = caller {
        all.extend(caller);
    }
    all.set_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(id),
    ));
    serde_json::to_string(&all).unwrap()
}

#[test]
fn the_era_meta_written_as_kept_is_the_json_of_rmcps_map() {
    let mut capabilities = rmcp::model::ClientCapabilities::default();
    capabilities.roots = Some(Default::default());
    let era = EraMeta::new(
        rmcp::model::ProtocolVersion::V_2026_07_28,
        rmcp::model::Implementation::new("mcpr \"quoted\"", "1.0"),
        capabilities,
    );
    let caller = |entries: serde_json::Value| {
        Some(serde_json::from_value::<RequestMetaObject>(entries).unwrap())
    };
    let mut declared = RequestMetaObject::default();
    declared.set_client_capabilities(rmcp::model::ClientCapabilities::default());
    let cases = [
        None,
        Some(RequestMetaObject::default()),
        // The asker's capabilities, as the gateway sends them: in the era's place.
        Some(declared),
        caller(json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})),
        // A token of the caller's is replaced by the call's, where the caller put it.
        caller(json!({"progressToken": "theirs", "x/y": [1, {"z": null}]})),
    ];
    for case in cases {
        let written = write_meta(&era.written, case.as_ref(), 4_294_967_301).unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            meta_as_rmcp_builds_it(&era, case.clone(), 4_294_967_301),
            "{case:?}"
        );
    }
}
