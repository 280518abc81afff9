use rmcp::model::{JsonRpcMessage, RequestId};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, duplex};

use super::super::answer::{Delivered, NoResult, Wants};
use super::*;

/// A transport over in-memory pipes: `(transport, server's stdout, server's stdin)`.
fn connected(
    pipe_size: usize,
) -> (
    PipeTransport<DuplexStream>,
    DuplexStream,
    BufReader<DuplexStream>,
) {
    let (stdout_server, stdout_client) = duplex(pipe_size);
    let (stdin_client, stdin_server) = duplex(64 * 1024);
    let transport = PipeTransport::new(stdout_client, stdin_client, RawResults::default());
    (transport, stdout_server, BufReader::new(stdin_server))
}

fn request(id: i64, method: &str) -> ClientJsonRpcMessage {
    serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": method})).unwrap()
}

async fn read_line(reader: &mut BufReader<DuplexStream>) -> Value {
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn requests_go_out_as_lines_and_answers_split_across_reads_come_back() {
    let (mut transport, mut stdout, mut stdin) = connected(7);
    transport.send(request(1, "tools/list")).await.unwrap();
    let sent = read_line(&mut stdin).await;
    assert_eq!(sent["method"], "tools/list");
    assert_eq!(sent["id"], 1);
    let answer = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"é\",\"inputSchema\":{}}]}}\n";
    let writer = tokio::spawn(async move {
        stdout.write_all(answer.as_bytes()).await.unwrap();
        stdout
    });
    let Some(JsonRpcMessage::Response(response)) = transport.receive().await else {
        panic!("no response");
    };
    assert_eq!(response.id, RequestId::Number(1));
    let rmcp::model::ServerResult::ListToolsResult(list) = response.result else {
        panic!("not a tool list");
    };
    assert_eq!(list.tools[0].name, "é");
    drop(writer.await.unwrap());
    assert!(transport.receive().await.is_none(), "EOF ends the stream");
}

#[tokio::test]
async fn a_line_too_long_is_dropped_and_the_connection_goes_on() {
    let (mut transport, mut stdout, _stdin) = connected(64 * 1024);
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 1024 * 1024];
        for _ in 0..(MAX_LINE / chunk.len() + 1) {
            stdout.write_all(&chunk).await.unwrap();
        }
        stdout
            .write_all(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n")
            .await
            .unwrap();
        stdout
    });
    let message = transport.receive().await;
    assert!(
        matches!(message, Some(JsonRpcMessage::Notification(_))),
        "{message:?}"
    );
    assert!(
        transport.lines.buf.capacity() <= KEEP_CAPACITY,
        "the long line's memory is given back"
    );
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn a_long_answer_leaves_no_big_buffer_behind() {
    let (mut transport, mut stdout, _stdin) = connected(64 * 1024);
    transport.send(request(1, "tools/list")).await.unwrap();
    let tools: Vec<Value> = (0..2000)
        .map(|i| json!({"name": format!("tool{i}"), "inputSchema": {"type": "object"}}))
        .collect();
    let answer = format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
    );
    assert!(answer.len() > KEEP_CAPACITY);
    let writer = tokio::spawn(async move {
        stdout.write_all(answer.as_bytes()).await.unwrap();
        stdout
    });
    assert!(matches!(
        transport.receive().await,
        Some(JsonRpcMessage::Response(_))
    ));
    assert!(transport.lines.buf.capacity() <= KEEP_CAPACITY);
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn wrong_shapes_are_answered_invalid_and_junk_is_skipped() {
    let (mut transport, mut stdout, mut stdin) = connected(64 * 1024);
    stdout
        .write_all(b"junk\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let Some(JsonRpcMessage::Request(request)) = transport.receive().await else {
        panic!("the ping after the junk is delivered");
    };
    assert_eq!(request.id, RequestId::Number(7));
    let answer = read_line(&mut stdin).await;
    assert_eq!(answer["error"]["code"], -32600);
    assert!(answer.get("id").is_none() || answer["id"].is_null());
}

#[tokio::test]
async fn a_cancelled_receive_loses_no_bytes() {
    let (mut transport, mut stdout, _stdin) = connected(64 * 1024);
    stdout
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/")
        .await
        .unwrap();
    let timed_out =
        tokio::time::timeout(std::time::Duration::from_millis(50), transport.receive()).await;
    assert!(timed_out.is_err(), "half a line is no message");
    stdout.write_all(b"tools/list_changed\"}\n").await.unwrap();
    assert!(matches!(
        transport.receive().await,
        Some(JsonRpcMessage::Notification(_))
    ));
}

#[tokio::test]
async fn close_ends_the_servers_stdin() {
    let (mut transport, _stdout, mut stdin) = connected(1024);
    transport.close().await.unwrap();
    let mut rest = String::new();
    assert_eq!(stdin.read_line(&mut rest).await.unwrap(), 0, "EOF");
    assert!(transport.send(request(1, "ping")).await.is_err());
}

#[tokio::test]
async fn dropping_the_transport_ends_stdin_even_while_the_direct_path_is_held() {
    let (transport, _stdout, mut stdin) = connected(1024);
    let direct = transport.direct();
    drop(transport);
    let mut rest = String::new();
    assert_eq!(stdin.read_line(&mut rest).await.unwrap(), 0, "EOF");
    assert!(
        direct.register(Wants::Text).is_none(),
        "the direct path ended too"
    );
    assert!(direct.write_line(b"{}\n".to_vec()).await.is_err());
}

/// Write `line_start`, then `x` until the line is `total` bytes long, then `line_end` (no line
/// break unless it holds one).
async fn write_long(
    stdout: &mut DuplexStream,
    line_start: &str,
    total: usize,
    line_end: &str,
) -> std::io::Result<()> {
    stdout.write_all(line_start.as_bytes()).await?;
    let chunk = vec![b'x'; 1024 * 1024];
    let mut left = total - line_start.len() - line_end.len();
    while left > 0 {
        let n = left.min(chunk.len());
        stdout.write_all(&chunk[..n]).await?;
        left -= n;
    }
    stdout.write_all(line_end.as_bytes()).await
}

#[tokio::test]
async fn an_answer_past_the_limit_fails_its_request_before_the_line_ends() {
    let (mut transport, mut stdout, _stdin) = connected(64 * 1024);
    let direct = transport.direct();
    let (id, answer) = direct.register(Wants::ToolOutput).unwrap();
    let (other, mut other_answer) = direct.register(Wants::Text).unwrap();
    let start =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
    // The line has not ended when the request fails: the writer is still on it.
    let writer = tokio::spawn(async move {
        write_long(&mut stdout, &start, MAX_LINE + 2 * 1024 * 1024, "")
            .await
            .unwrap();
        stdout
    });
    let reader = tokio::spawn(async move {
        let message = transport.receive().await;
        (transport, message)
    });
    let Err(NoResult::Unreadable(why)) = answer.await.unwrap() else {
        panic!("the request did not fail")
    };
    assert_eq!(why, overlong::too_long());
    assert!(
        other_answer.try_recv().is_err(),
        "request {other} is not touched"
    );
    let mut stdout = writer.await.unwrap();
    stdout.write_all(b"\"}]}}\n").await.unwrap();
    let answer = format!("{{\"jsonrpc\":\"2.0\",\"id\":{other},\"result\":{{}}}}\n");
    stdout.write_all(answer.as_bytes()).await.unwrap();
    assert!(matches!(
        other_answer.await.unwrap(),
        Ok(Delivered::Text(_))
    ));
    assert!(!direct.is_closed());
    drop(stdout);
    let (_transport, message) = reader.await.unwrap();
    assert!(message.is_none(), "{message:?}");
}

#[tokio::test]
async fn an_answer_past_the_limit_with_its_id_last_fails_its_request_when_it_ends() {
    let (mut transport, mut stdout, _stdin) = connected(64 * 1024);
    let direct = transport.direct();
    let (id, answer) = direct.register(Wants::ToolOutput).unwrap();
    let end = format!("\"}}]}},\"jsonrpc\":\"2.0\",\"id\":{id}}}\n");
    let writer = tokio::spawn(async move {
        let start = r#"{"result":{"content":[{"type":"text","text":""#;
        write_long(&mut stdout, start, MAX_LINE + 1024, &end)
            .await
            .unwrap();
        stdout
    });
    let reader = tokio::spawn(async move { transport.receive().await });
    let Err(NoResult::Unreadable(why)) = answer.await.unwrap() else {
        panic!("the request did not fail")
    };
    assert_eq!(why, overlong::too_long());
    drop(writer.await.unwrap());
    assert!(reader.await.unwrap().is_none());
}

#[tokio::test]
async fn an_opening_answer_past_the_limit_is_an_error_for_rmcp() {
    let (mut transport, mut stdout, _stdin) = connected(64 * 1024);
    transport.send(request(0, "initialize")).await.unwrap();
    let writer = tokio::spawn(async move {
        let start = r#"{"jsonrpc":"2.0","id":0,"result":{"serverInfo":{"name":""#;
        write_long(&mut stdout, start, MAX_LINE + 1024, "\"}}}\n")
            .await
            .unwrap();
        stdout
    });
    let Some(JsonRpcMessage::Error(error)) = transport.receive().await else {
        panic!("no error answer");
    };
    assert_eq!(error.id, Some(RequestId::Number(0)));
    assert_eq!(error.error.message, overlong::too_long());
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn a_line_that_never_ends_ends_the_connection_and_fails_every_request() {
    let (mut transport, mut stdout, _stdin) = connected(64 * 1024);
    transport.send(request(0, "initialize")).await.unwrap();
    let direct = transport.direct();
    let (_, answer) = direct.register(Wants::Text).unwrap();
    // No id to be found: every request fails when the connection is given up. The writer
    // fails once the transport is gone.
    let writer = tokio::spawn(async move {
        write_long(&mut stdout, "", ENDLESS_LINE + 2 * 1024 * 1024, "").await
    });
    let Some(JsonRpcMessage::Error(error)) = transport.receive().await else {
        panic!("no error answer for rmcp's request");
    };
    assert_eq!(error.id, Some(RequestId::Number(0)));
    assert_eq!(error.error.message, overlong::endless());
    assert!(transport.receive().await.is_none(), "the stream ends");
    let Err(NoResult::Unreadable(why)) = answer.await.unwrap() else {
        panic!("the direct request did not fail")
    };
    assert_eq!(why, overlong::endless());
    assert!(direct.is_closed());
    assert!(transport.lines.buf.capacity() <= 2 * KEEP_CAPACITY);
    drop(transport);
    assert!(writer.await.unwrap().is_err(), "the rest was never read");
}

#[test]
fn a_tail_keeps_the_last_bytes() {
    let mut tail = Tail::EMPTY;
    tail.push(b"abc");
    tail.push(b"def");
    assert_eq!(tail.bytes(), b"abcdef");
    tail.push(&[b'y'; TAIL - 2]);
    assert_eq!(&tail.bytes()[..2], b"ef");
    assert_eq!(tail.bytes().len(), TAIL);
    tail.push(&[b'z'; 2 * TAIL]);
    assert_eq!(tail.bytes(), &[b'z'; TAIL][..]);
}
