//! The direct road of a `tools/call` over streamable HTTP: against the mock in 2026-07-28 mode
//! and in the `initialize` era with sessions (its `--record` shows what went out, its header
//! checks refuse what is wrong) and against a loopback server written here that answers each call as a scenario
//! says: an event stream with progress, 401, 404, 500, garbage, a hang, a dropped connection.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use mcp_runtime::auth::{AuthContext, CredentialStore};

use super::*;

/// Ids of the direct road start here (rmcp's counter stays below).
const FIRST_DIRECT_ID: u64 = 1 << 32;

fn modern_mock(flags: &[&str]) -> HttpMock {
    let mut all = vec!["--era", "2026-07-28", "--json-response"];
    all.extend_from_slice(flags);
    HttpMock::http(&all)
}

#[tokio::test]
async fn a_modern_json_call_takes_the_direct_road_with_every_header() {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = modern_mock(&[
            "--require-token",
            "s3cret",
            "--record",
            record.to_str().unwrap(),
        ]);
        let mut config = mock.config(Some("http"));
        if let mcp_runtime::config::Transport::Http(http) = &mut config.transport {
            http.headers
                .insert("Authorization".into(), "Bearer s3cret".into());
        }
        let client = connect(&config).await.unwrap();
        assert_eq!(client.info().protocol_version, "2026-07-28");
        for text in ["one", "two"] {
            let out = client
                .call_tool("echo", args(json!({"text": text})), CallOptions::default())
                .await
                .unwrap();
            assert_eq!(out.text(), text);
        }
        // A result field the client does not model reaches the caller (`resultType`).
        let out = client
            .call_tool("add", args(json!({"a": 2, "b": 3})), CallOptions::default())
            .await
            .unwrap();
        assert_eq!(out.structured_content, Some(json!({"sum": 5})));
        // A server error stays a JSON-RPC error.
        let err = client
            .call_tool("no-such-tool", None, CallOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Rpc { .. }), "{err}");
        client.close().await;

        let lines = recorded(&record);
        let calls = posts(&lines, "tools/call");
        assert_eq!(calls.len(), 4, "{lines:#?}");
        for call in calls {
            let id = call["body"]["id"].as_u64().unwrap();
            assert!(id >= FIRST_DIRECT_ID, "sent by the direct road: {call}");
            assert_eq!(call["mcpMethod"], "tools/call", "{call}");
            assert_eq!(call["mcpName"], call["body"]["params"]["name"], "{call}");
            assert_eq!(call["protocolVersion"], "2026-07-28", "{call}");
            let meta = &call["body"]["params"]["_meta"];
            assert_eq!(
                meta["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
            assert_eq!(meta["progressToken"].as_u64(), Some(id), "{call}");
        }
    })
    .await;
}

/// A server of the `initialize` era: calls go on the session rmcp's worker opened, with the
/// negotiated version and without 2026-07-28's headers, and a request the server asks on a
/// call's stream (`roots/list`) is answered on that session.
#[tokio::test]
async fn a_session_call_takes_the_direct_road_on_rmcps_session() {
    session_calls_take_the_direct_road(None).await;
}

/// As the CLI and the gateway connect: every HTTP connection may log in, and one the store
/// holds no credential for still takes the road.
#[tokio::test]
async fn a_session_call_without_a_stored_credential_takes_the_direct_road() {
    let store = temp_dir();
    let store = CredentialStore::new(store.path().join(mcp_runtime::auth::CREDENTIALS_FILE));
    session_calls_take_the_direct_road(Some(AuthContext::non_interactive(store))).await;
}

async fn session_calls_take_the_direct_road(auth: Option<AuthContext>) {
    bounded(async {
        let dir = temp_dir();
        let record = dir.path().join("record.jsonl");
        let mock = HttpMock::http(&["--record", record.to_str().unwrap()]);
        let root = temp_dir();
        let options = ConnectOptions::default()
            .with_roots(vec![root.path().to_owned()])
            .with_auth(auth);
        let client = McpClient::connect("remote", &mock.config(None), &options)
            .await
            .unwrap();
        let version = client.info().protocol_version.clone();
        assert_ne!(version, "2026-07-28");
        for text in ["one", "two"] {
            let out = client
                .call_tool("echo", args(json!({"text": text})), CallOptions::default())
                .await
                .unwrap();
            assert_eq!(out.text(), text);
        }
        let out = client
            .call_tool("roots", None, CallOptions::default())
            .await
            .unwrap();
        let expected = format!("file://{}", root.path().display());
        assert!(out.text().contains(&expected), "{}", out.text());
        client.close().await;

        let lines = recorded(&record);
        let session = lines
            .iter()
            .find_map(|l| l["session"].as_str())
            .expect("a session was opened");
        let calls = posts(&lines, "tools/call");
        assert_eq!(calls.len(), 3, "{lines:#?}");
        for call in calls {
            let id = call["body"]["id"].as_u64().unwrap();
            assert!(id >= FIRST_DIRECT_ID, "sent by the direct road: {call}");
            assert_eq!(call["session"], session, "{call}");
            assert_eq!(call["protocolVersion"], version.as_str(), "{call}");
            assert!(call["mcpMethod"].is_null(), "{call}");
            assert!(call["mcpName"].is_null(), "{call}");
        }
        // The answer to the server's `roots/list`, POSTed on the session.
        let answered = lines.iter().any(|l| {
            l["http"] == "POST"
                && l["session"] == session
                && l["body"]["result"]["roots"].is_array()
        });
        assert!(answered, "{lines:#?}");
    })
    .await;
}

#[tokio::test]
async fn tools_with_parameter_headers_and_odd_names_are_left_to_rmcp() {
    bounded(async {
        // The conformance server checks every routing and `Mcp-Param-*` header, and refuses a
        // call without them with HTTP 400.
        let mock = HttpMock::http(&["--conformance"]);
        let client = connect(&mock.config(Some("http"))).await.unwrap();
        assert_eq!(client.info().protocol_version, "2026-07-28");
        client.list_tools().await.unwrap();
        let out = client
            .call_tool(
                "test_header_param",
                args(json!({"region": "eu-west"})),
                CallOptions::default(),
            )
            .await
            .unwrap();
        assert!(out.text().contains("eu-west"), "{}", out.text());
        let out = client
            .call_tool("test_simple_text", None, CallOptions::default())
            .await
            .unwrap();
        assert!(!out.text().is_empty());
        client.close().await;
    })
    .await;
}

/// How the loopback server answers a `tools/call`.
#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// An event stream: a progress notification, then the result.
    Events,
    Unauthorized,
    NotFound,
    ServerError,
    /// `200 application/json` that is not JSON-RPC.
    Garbage,
    /// Read the request, never answer.
    Hang,
    /// Read the request, close the connection.
    Drop,
    /// The answer as an event in a chunked body whose end comes a little later.
    LateEnd,
    /// The answer as an event in a chunked body that never ends.
    NoEnd,
}

/// What the loopback server saw.
#[derive(Default)]
struct Seen {
    /// JSON-RPC methods of the POSTs, in order.
    methods: Vec<String>,
    /// The ids named by `notifications/cancelled`.
    cancelled: Vec<Value>,
    /// Headers of the `tools/call` POSTs.
    call_headers: Vec<HashMap<String, String>>,
    /// Connections accepted.
    connections: usize,
    /// Connections open now, and the most open at once.
    open: usize,
    most_open: usize,
}

/// A 2026-07-28 server on a loopback port, written by hand: `server/discover` and the rest
/// answered as JSON, `tools/call` as `scenario` says.
struct Loopback {
    url: String,
    seen: Arc<Mutex<Seen>>,
}

impl Loopback {
    async fn start(scenario: Scenario) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let shared = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                {
                    let mut seen = shared.lock().unwrap();
                    seen.connections += 1;
                    seen.open += 1;
                    seen.most_open = seen.most_open.max(seen.open);
                }
                let shared = shared.clone();
                tokio::spawn(async move {
                    serve(stream, scenario, shared.clone()).await;
                    shared.lock().unwrap().open -= 1;
                });
            }
        });
        Loopback { url, seen }
    }

    /// The id of the first `notifications/cancelled`, waited for (bounded).
    async fn cancelled(&self) -> Value {
        for _ in 0..200 {
            if let Some(id) = self.seen.lock().unwrap().cancelled.first() {
                return id.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "no notifications/cancelled: {:?}",
            self.seen.lock().unwrap().methods
        );
    }

    fn calls(&self) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.methods.iter().filter(|m| *m == "tools/call").count()
    }
}

/// One request: its headers (lower-case names) and body; `None` at the end of the stream.
async fn read_request(stream: &mut TcpStream) -> Option<(HashMap<String, String>, Vec<u8>)> {
    let mut buffer = Vec::new();
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((headers, body))
}

async fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
}

/// Start a chunked event-stream response whose first chunk is the event `data`; its end is
/// the caller's to send (or not).
async fn open_event_stream(stream: &mut TcpStream, data: &str) {
    let event = format!("data: {data}\n\n");
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
    let _ = stream.write_all(format!("{head}{chunk}").as_bytes()).await;
}

async fn serve(mut stream: TcpStream, scenario: Scenario, seen: Arc<Mutex<Seen>>) {
    while let Some((headers, body)) = read_request(&mut stream).await {
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let id = message["id"].clone();
        {
            let mut seen = seen.lock().unwrap();
            seen.methods.push(method.clone());
            if method == "notifications/cancelled" {
                seen.cancelled.push(message["params"]["requestId"].clone());
            }
            if method == "tools/call" {
                seen.call_headers.push(headers.clone());
            }
        }
        let answer =
            |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        match method.as_str() {
            "server/discover" => {
                let result = json!({
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "loopback", "version": "1"}},
                });
                respond(&mut stream, "200 OK", "application/json", &answer(result)).await;
            }
            "tools/call" => match scenario {
                Scenario::Events => {
                    let token = message["params"]["_meta"]["progressToken"].clone();
                    let progress = json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 1, "total": 2},
                    });
                    let result = answer(json!({
                        "resultType": "complete",
                        "content": [{"type": "text", "text": "streamed"}],
                    }));
                    let events = format!("data: \n\ndata: {progress}\n\ndata: {result}\n\n");
                    respond(&mut stream, "200 OK", "text/event-stream", &events).await;
                }
                Scenario::Unauthorized => {
                    respond(&mut stream, "401 Unauthorized", "text/plain", "who are you").await
                }
                Scenario::NotFound => {
                    respond(
                        &mut stream,
                        "404 Not Found",
                        "text/plain",
                        "no such session",
                    )
                    .await
                }
                Scenario::ServerError => {
                    respond(
                        &mut stream,
                        "500 Internal Server Error",
                        "text/plain",
                        "boom",
                    )
                    .await
                }
                Scenario::Garbage => {
                    respond(&mut stream, "200 OK", "application/json", "<html>not json").await
                }
                Scenario::Hang => {
                    tokio::time::sleep(TEST_BOUND).await;
                    return;
                }
                Scenario::Drop => return,
                Scenario::LateEnd => {
                    let result = answer(json!({
                        "resultType": "complete",
                        "content": [{"type": "text", "text": "late"}],
                    }));
                    open_event_stream(&mut stream, &result).await;
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    let _ = stream.write_all(b"0\r\n\r\n").await;
                }
                Scenario::NoEnd => {
                    let result = answer(json!({
                        "resultType": "complete",
                        "content": [{"type": "text", "text": "endless"}],
                    }));
                    open_event_stream(&mut stream, &result).await;
                    // Open until the client closes it.
                    let mut rest = [0u8; 1024];
                    while matches!(stream.read(&mut rest).await, Ok(n) if n > 0) {}
                    return;
                }
            },
            _ if id.is_null() => respond(&mut stream, "202 Accepted", "text/plain", "").await,
            _ => {
                let error = json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": -32601, "message": "method not found"},
                });
                respond(
                    &mut stream,
                    "200 OK",
                    "application/json",
                    &error.to_string(),
                )
                .await;
            }
        }
    }
}

async fn call(
    server: &Loopback,
    options: CallOptions,
) -> Result<mcp_runtime::client::ToolOutput, ClientError> {
    let (events, _notices) = tokio::sync::mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let options_connect = ConnectOptions::default().with_events(Some(events));
    let client = McpClient::connect("loop", &remote(&server.url, Some("http")), &options_connect)
        .await
        .unwrap();
    assert_eq!(client.info().protocol_version, "2026-07-28");
    let outcome = client
        .call_tool("work", args(json!({"n": 1})), options)
        .await;
    client.close().await;
    outcome
}

/// Call `work` `times` times on one connection, `pause` after each, expecting `text`.
async fn call_in_turn(server: &Loopback, times: usize, pause: Duration, text: &str) {
    let client = McpClient::connect(
        "loop",
        &remote(&server.url, Some("http")),
        &ConnectOptions::default(),
    )
    .await
    .unwrap();
    for _ in 0..times {
        let out = client
            .call_tool("work", args(json!({"n": 1})), CallOptions::default())
            .await
            .unwrap();
        assert_eq!(out.text(), text);
        tokio::time::sleep(pause).await;
    }
    client.close().await;
}

#[tokio::test]
async fn a_connection_whose_answer_ends_late_serves_the_next_call() {
    bounded(async {
        let server = Loopback::start(Scenario::LateEnd).await;
        // Each pause outlasts the stream's end: its connection is back in the pool.
        call_in_turn(&server, 3, Duration::from_millis(100), "late").await;
        assert_eq!(server.calls(), 3);
        let seen = server.seen.lock().unwrap();
        // One connection for the discovery and every call: an answered stream is read to
        // its end, not dropped (which closes its connection).
        assert_eq!(seen.connections, 1, "{:?}", seen.methods);
    })
    .await;
}

#[tokio::test]
async fn streams_left_open_after_their_answer_hold_few_connections() {
    bounded(async {
        let server = Loopback::start(Scenario::NoEnd).await;
        call_in_turn(&server, 48, Duration::ZERO, "endless").await;
        let seen = server.seen.lock().unwrap();
        // Each stream read on past its answer holds its connection: 16 being read on and the
        // call under way at most, and a few the server has not yet seen closed (one per
        // stream, 48, without a bound).
        assert!(seen.most_open <= 24, "{} open at once", seen.most_open);
    })
    .await;
}

#[tokio::test]
async fn an_event_stream_answer_brings_its_progress_first() {
    bounded(async {
        let server = Loopback::start(Scenario::Events).await;
        let (progress, mut updates) = tokio::sync::mpsc::channel(8);
        let options = CallOptions::default().with_progress(progress);
        let out = call(&server, options).await.unwrap();
        assert_eq!(out.text(), "streamed");
        let update = updates
            .try_recv()
            .expect("the progress came before the answer");
        assert_eq!(update.progress, 1.0);
        let seen = server.seen.lock().unwrap();
        let headers = &seen.call_headers[0];
        assert_eq!(
            headers.get("mcp-method").map(String::as_str),
            Some("tools/call")
        );
        assert_eq!(headers.get("mcp-name").map(String::as_str), Some("work"));
        assert_eq!(
            headers.get("mcp-protocol-version").map(String::as_str),
            Some("2026-07-28")
        );
        assert!(
            headers
                .get("accept")
                .is_some_and(|a| a.contains("application/json") && a.contains("text/event-stream")),
            "{headers:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn http_refusals_are_typed_as_before_and_not_sent_again() {
    bounded(async {
        let server = Loopback::start(Scenario::Unauthorized).await;
        let err = call(&server, CallOptions::default()).await.unwrap_err();
        assert!(
            matches!(err, ClientError::AuthRequired { status: 401, .. }),
            "{err}"
        );
        assert_eq!(server.calls(), 1);

        let server = Loopback::start(Scenario::NotFound).await;
        let err = call(&server, CallOptions::default()).await.unwrap_err();
        let ClientError::HttpStatus { status, body, .. } = &err else {
            panic!("expected HttpStatus, got {err}");
        };
        assert_eq!((*status, body.as_str()), (404, "no such session"));
        assert_eq!(server.calls(), 1);

        let server = Loopback::start(Scenario::ServerError).await;
        let err = call(&server, CallOptions::default()).await.unwrap_err();
        assert!(
            matches!(err, ClientError::HttpStatus { status: 500, .. }),
            "{err}"
        );
        assert_eq!(
            server.calls(),
            1,
            "a 500 may have run the call: not sent again"
        );
    })
    .await;
}

#[tokio::test]
async fn garbage_is_a_protocol_error_that_shows_the_body() {
    bounded(async {
        let server = Loopback::start(Scenario::Garbage).await;
        let err = call(&server, CallOptions::default()).await.unwrap_err();
        let ClientError::Protocol { message, .. } = &err else {
            panic!("expected Protocol, got {err}");
        };
        assert!(message.contains("<html>not json"), "{message}");
        assert_eq!(server.calls(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_hanging_call_times_out_and_is_cancelled_on_the_server() {
    bounded(async {
        let server = Loopback::start(Scenario::Hang).await;
        let options = CallOptions::default().with_timeout(Duration::from_millis(300));
        let err = call(&server, options).await.unwrap_err();
        assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
        let cancelled = server.cancelled().await;
        assert!(
            cancelled.as_u64().unwrap() >= FIRST_DIRECT_ID,
            "{cancelled}"
        );

        let server = Loopback::start(Scenario::Hang).await;
        let cancel = tokio_util::sync::CancellationToken::new();
        let options = CallOptions::default().with_cancel(cancel.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let err = call(&server, options).await.unwrap_err();
        assert!(matches!(err, ClientError::Cancelled { .. }), "{err}");
        server.cancelled().await;
    })
    .await;
}

#[tokio::test]
async fn a_call_whose_connection_drops_fails_and_is_not_sent_again() {
    bounded(async {
        let server = Loopback::start(Scenario::Drop).await;
        let err = call(&server, CallOptions::default()).await.unwrap_err();
        assert!(matches!(err, ClientError::Transport { .. }), "{err}");
        assert_eq!(
            server.calls(),
            1,
            "the tool is not read-only: not sent again"
        );
    })
    .await;
}
