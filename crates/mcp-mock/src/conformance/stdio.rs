//! `--conformance` over stdio: one JSON-RPC message per line, both eras.
//!
//! Until `initialize` arrives every request is a 2026-07-28 request, checked on its own
//! `_meta` (stdio has no headers to check). After `initialize` the process is one session:
//! requests whose `_meta` names no protocol version are served in it, and the client's answers to the server's own
//! requests are routed back to the call that asked. Requests run concurrently; their output
//! is written whole, one line at a time.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

use super::dispatch;
use super::exchange::{Era, Exchange};
use super::modern::{self, REMOVED};
use super::session::Session;
use super::{Failure, Server, response};

/// Longest line read; a longer one is answered with a parse error and skipped.
const MAX_LINE: usize = 4 * 1024 * 1024;

/// Serves stdin/stdout until stdin closes.
pub(crate) async fn serve(server: Arc<Server>) -> anyhow::Result<()> {
    let (out, mut rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(message) = rx.recv().await {
            let line = format!("{message}\n");
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut session: Option<Arc<Session>> = None;
    while let Some(line) = read_line(&mut stdin).await? {
        let Some(line) = line else {
            let _ = out.send(response(
                &Value::Null,
                &Err(Failure::new(-32700, "Parse error: line too long")),
            ));
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            let _ = out.send(response(
                &Value::Null,
                &Err(Failure::new(-32700, "Parse error")),
            ));
            continue;
        };
        handle(&server, &mut session, message, &out);
    }
    drop(out);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(100), writer).await;
    Ok(())
}

/// One message from the client.
fn handle(
    server: &Arc<Server>,
    session: &mut Option<Arc<Session>>,
    message: Value,
    out: &mpsc::UnboundedSender<Value>,
) {
    let Some(method) = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        // An answer to one of the server's requests.
        if let Some(session) = session {
            session.deliver(message);
        }
        return;
    };
    let Some(id) = message.get("id").cloned() else {
        return; // Notifications need no answer.
    };
    let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    // What makes a request 2026-07-28 is the protocol version in its `_meta`, not `_meta`
    // itself: clients of the session era send `_meta` too (a progress token, or `{}`).
    let modern_meta = params
        .get("_meta")
        .and_then(|meta| meta.get(modern::PROTOCOL_VERSION))
        .is_some();
    let modern_request = modern_meta || session.is_none();
    if !modern_request || (method == "initialize" && !modern_meta) {
        if method == "initialize" {
            let opened = Arc::new(Session::new(String::new()));
            let result = dispatch::initialize(server, &opened, &params);
            *session = Some(opened);
            let _ = out.send(response(&id, &Ok(result)));
            return;
        }
        if let Some(session) = session.clone() {
            spawn(
                server,
                Era::Session(session),
                method,
                params,
                id,
                out,
                false,
            );
        }
        return;
    }
    let meta = match modern::check(&method, &params, None) {
        Ok(meta) => meta,
        Err(failure) => {
            let _ = out.send(response(&id, &Err(failure)));
            return;
        }
    };
    if REMOVED.contains(&method.as_str()) {
        let _ = out.send(response(&id, &Err(Failure::method_not_found(&method))));
        return;
    }
    if method == "subscriptions/listen" {
        listen(server, &params, id, out);
        return;
    }
    spawn(server, Era::Stateless(meta), method, params, id, out, true);
}

/// Runs one request in its own task.
fn spawn(
    server: &Arc<Server>,
    era: Era,
    method: String,
    params: Value,
    id: Value,
    out: &mpsc::UnboundedSender<Value>,
    modern: bool,
) {
    let server = server.clone();
    let out = out.clone();
    tokio::spawn(async move {
        let x = Exchange {
            out: out.clone(),
            era,
            progress_token: params.pointer("/_meta/progressToken").cloned(),
            closer: None,
        };
        let mut reply = dispatch::handle(&server, &method, &params, &x).await;
        if modern && let Ok(result) = &mut reply {
            modern::decorate(&method, result);
        }
        let _ = out.send(response(&id, &reply));
    });
}

/// `subscriptions/listen` on stdio: the acknowledgement, then the changes, all tagged with
/// the subscription id (the request's id), until stdin closes.
fn listen(server: &Server, params: &Value, id: Value, out: &mpsc::UnboundedSender<Value>) {
    let wants =
        |key: &str| params.pointer(&format!("/notifications/{key}")) == Some(&Value::Bool(true));
    let (tools, prompts) = (wants("toolsListChanged"), wants("promptsListChanged"));
    let mut honoured = serde_json::Map::new();
    for (key, on) in [("toolsListChanged", tools), ("promptsListChanged", prompts)] {
        if on {
            honoured.insert(key.into(), Value::Bool(true));
        }
    }
    // Its resources never change, so every subscription is kept, vacuously.
    if let Some(uris) = params
        .pointer("/notifications/resourceSubscriptions")
        .filter(|uris| uris.is_array())
    {
        honoured.insert("resourceSubscriptions".into(), uris.clone());
    }
    let _ = out.send(super::notification(
        "notifications/subscriptions/acknowledged",
        json!({
            "_meta": {"io.modelcontextprotocol/subscriptionId": id},
            "notifications": honoured,
        }),
    ));
    let mut rx = server.listen(id, tools, prompts);
    let out = out.clone();
    tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            if out.send(message).is_err() {
                break;
            }
        }
    });
}

/// The next line: `None` at EOF, `Some(None)` for a line over [`MAX_LINE`] (skipped).
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Option<String>>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(if line.is_empty() && !too_long {
                None
            } else {
                Some(finish(line, too_long))
            });
        }
        let (chunk, found) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = found.unwrap_or(buffer.len());
        reader.consume(used);
        if found.is_some() {
            return Ok(Some(finish(line, too_long)));
        }
    }
}

fn finish(line: Vec<u8>, too_long: bool) -> Option<String> {
    (!too_long).then(|| String::from_utf8_lossy(&line).into_owned())
}
