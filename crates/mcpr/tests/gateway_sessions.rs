//! The sessions of `mcpr serve --http`, attacked over real sockets from several loopback
//! addresses (`127.0.0.x`, each its own client address on Linux):
//!
//! - a flood of 8,000 `initialize` requests never followed by `notifications/initialized`
//!   keeps the gateway's memory bounded, is refused past the caps with 503 and
//!   `Retry-After`, and does not keep a well-behaved client (mcpr's own, over a session of
//!   its own) from initialising, listing and calling;
//! - sessions never initialised are closed within seconds, initialised ones are not;
//! - `--max-sessions` and `--max-sessions-per-address` set the caps;
//! - a request for a session that is unknown or has just ended gets 404, never 500.

mod support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{CallOptions, ConnectOptions, Era, McpClient};
use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::{MCPR, args, temp_dir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Generous bound on any one exchange; never reached when things work.
const EXCHANGE_BOUND: Duration = Duration::from_secs(30);

/// `mcpr serve --http` of one `mcpr mock`, with `flags`: its world, its process and its
/// address.
fn gateway(flags: &[&str]) -> (ServeWorld, support::ChildGuard, SocketAddr) {
    let servers = json!({"mock": {"command": MCPR, "args": ["mock"]}});
    let world = ServeWorld::with_servers(temp_dir(), servers);
    let (child, url) = world.http_gateway(flags, &[]);
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .and_then(|authority| authority.parse().ok())
        .unwrap_or_else(|| panic!("not a gateway URL: {url}"));
    (world, child, addr)
}

/// One HTTP answer, as far as these tests look at it.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn session(&self) -> String {
        self.header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session id: {self:?}"))
            .to_owned()
    }
}

/// Send `method /mcp` with `body` to `gateway` from the address `source`, in `session` if
/// given; read the answer up to its JSON-RPC response (an event stream may stay open).
async fn exchange(
    source: Ipv4Addr,
    gateway: SocketAddr,
    method: &str,
    session: Option<&str>,
    body: &Value,
) -> std::io::Result<Answer> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source.into(), 0))?;
    let mut stream = socket.connect(gateway).await?;
    let body = if method == "POST" {
        body.to_string()
    } else {
        String::new()
    };
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {gateway}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    if let Some(session) = session {
        request.push_str(&format!(
            "Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
        ));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).await?;
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let read = async {
        loop {
            let n = stream.read(&mut buffer).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            received.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&received);
            if text.contains("\"result\"") || text.contains("\"error\"") {
                return Ok(());
            }
        }
    };
    tokio::time::timeout(EXCHANGE_BOUND, read)
        .await
        .map_err(|_| std::io::Error::other("no answer within the bound"))??;
    let text = String::from_utf8_lossy(&received).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    Ok(Answer {
        status,
        headers,
        body: body.to_owned(),
    })
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

/// `127.0.0.last`.
fn loopback(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

/// The resident memory of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS in its status");
    kib * 1024
}

/// Connect mcpr's own client to the gateway at `addr` with a session of its own
/// (`initialize`, as a client of 2025-11-25 does), list and call `echo`.
async fn well_behaved_client(addr: SocketAddr, dir: &std::path::Path) {
    let config = support::remote(&format!("http://{addr}/mcp"), None);
    // The era remembered for the gateway is the one of sessions: the client opens one with
    // `initialize` instead of asking `server/discover`.
    let cache = ToolCache::in_dir(dir);
    cache.put_era("gateway", &config, Era::Legacy);
    let mut options = ConnectOptions::default();
    options.cache = Some(Arc::new(cache));
    let client = McpClient::connect("gateway", &config, &options)
        .await
        .expect("the client connects during the flood");
    assert_eq!(client.opening().era, Era::Legacy, "a session was opened");
    let tools = client
        .list_tools()
        .await
        .expect("tools/list during the flood");
    assert!(
        tools.iter().any(|tool| tool.name == "mcp_mock_echo"),
        "{tools:?}"
    );
    let output = client
        .call_tool(
            "mcp_mock_echo",
            args(json!({"text": "served"})),
            CallOptions::default(),
        )
        .await
        .expect("tools/call during the flood");
    assert_eq!(output.text(), "served");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_sessions_never_initialised_is_bounded_and_a_client_is_still_served() {
    const FLOOD: usize = 8_000;
    // 127.0.0.2 ..= 127.0.0.25: together past the cap in all, each under its own.
    const SOURCES: usize = 24;
    const WORKERS: usize = 32;
    let (world, gateway, addr) = gateway(&[]);
    let pid = gateway.0.id();
    // Warm up (the backend started, every code path of a session run once), then measure.
    well_behaved_client(addr, &world.path("warm-up")).await;
    let before = rss(pid);

    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let flood: Vec<_> = (0..WORKERS)
        .map(|_| {
            let next = next.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= FLOOD {
                        return answers;
                    }
                    let source = loopback(2 + (index % SOURCES) as u8);
                    let answer = exchange(source, addr, "POST", None, &initialize())
                        .await
                        .unwrap_or_else(|e| panic!("initialize {index} from {source}: {e}"));
                    answers.push((
                        answer.status,
                        answer.header("retry-after").map(str::to_owned),
                    ));
                }
            })
        })
        .collect();

    // A quarter into the flood (its addresses long past their caps), a well-behaved client
    // is served.
    let deadline = Instant::now() + Duration::from_secs(120);
    while next.load(Ordering::Relaxed) < FLOOD / 4 {
        assert!(Instant::now() < deadline, "the flood does not get going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    well_behaved_client(addr, &world.path("client")).await;
    let after_client = next.load(Ordering::Relaxed);
    assert!(
        after_client < FLOOD,
        "the client was served after the flood, not during it"
    );

    let mut answers = Vec::new();
    for worker in flood {
        answers.extend(worker.await.expect("a flood worker"));
    }
    let after = rss(pid);
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for (status, _) in &answers {
        *statuses.entry(*status).or_default() += 1;
    }
    eprintln!(
        "flood answers {statuses:?} in {:?}; resident memory {} MiB -> {} MiB",
        started.elapsed(),
        before >> 20,
        after >> 20
    );
    assert!(
        after.saturating_sub(before) < 100 << 20,
        "the flood grew the gateway from {} MiB to {} MiB",
        before >> 20,
        after >> 20
    );
    assert_eq!(
        statuses.keys().copied().collect::<Vec<_>>(),
        [200, 503],
        "every initialize is opened or refused with 503: {statuses:?}"
    );
    for (status, retry_after) in answers {
        if status == 503 {
            let seconds: u64 = retry_after
                .as_deref()
                .and_then(|value| value.parse().ok())
                .unwrap_or_else(|| panic!("a 503 without a Retry-After: {retry_after:?}"));
            assert!((1..=10).contains(&seconds), "Retry-After: {seconds}");
        }
    }
}

#[tokio::test]
async fn sessions_never_initialised_are_closed_within_seconds() {
    let (_world, _gateway, addr) = gateway(&[]);
    let source = loopback(9);
    let mut first = None;
    // One address's cap, by default.
    for _ in 0..64 {
        let answer = exchange(source, addr, "POST", None, &initialize())
            .await
            .unwrap();
        assert_eq!(answer.status, 200, "{answer:?}");
        first.get_or_insert_with(|| answer.session());
    }
    let refused = exchange(source, addr, "POST", None, &initialize())
        .await
        .unwrap();
    assert_eq!(refused.status, 503, "{refused:?}");
    let retry_after: u64 = refused
        .header("retry-after")
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After: {refused:?}"));
    assert!(
        (1..=10).contains(&retry_after),
        "Retry-After: {retry_after}"
    );
    assert!(refused.body.contains("too many sessions"), "{refused:?}");

    // A session of another address that is initialised stays.
    let kept = exchange(loopback(10), addr, "POST", None, &initialize())
        .await
        .unwrap();
    let kept = kept.session();
    let answer = exchange(loopback(10), addr, "POST", Some(&kept), &initialized())
        .await
        .unwrap();
    assert!(matches!(answer.status, 200 | 202), "{answer:?}");

    // Within seconds (well before the five minutes of an idle session), the address gets in
    // again: its sessions never initialised were closed.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = exchange(source, addr, "POST", None, &initialize())
            .await
            .unwrap();
        if answer.status == 200 {
            break;
        }
        assert_eq!(answer.status, 503, "{answer:?}");
        assert!(
            Instant::now() < deadline,
            "the sessions never initialised were not closed"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let closed = exchange(source, addr, "POST", first.as_deref(), &list(1))
        .await
        .unwrap();
    assert_eq!(closed.status, 404, "a closed session: {closed:?}");
    let listed = exchange(loopback(10), addr, "POST", Some(&kept), &list(2))
        .await
        .unwrap();
    assert_eq!(
        listed.status, 200,
        "the initialised session stays: {listed:?}"
    );
    assert!(listed.body.contains("mcp_mock_echo"), "{listed:?}");
}

#[tokio::test]
async fn the_caps_are_set_on_the_command_line() {
    let (_world, _gateway, addr) =
        gateway(&["--max-sessions", "2", "--max-sessions-per-address", "1"]);
    let answer = exchange(loopback(14), addr, "POST", None, &initialize())
        .await
        .unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
    let refused = exchange(loopback(14), addr, "POST", None, &initialize())
        .await
        .unwrap();
    assert_eq!(refused.status, 503, "one per address: {refused:?}");
    let answer = exchange(
        loopback(14),
        addr,
        "DELETE",
        Some(&answer.session()),
        &Value::Null,
    )
    .await
    .unwrap();
    assert!(matches!(answer.status, 200 | 204), "{answer:?}");
    let mut sessions = Vec::new();
    for last in [11, 12] {
        let answer = exchange(loopback(last), addr, "POST", None, &initialize())
            .await
            .unwrap();
        let session = answer.session();
        let answer = exchange(loopback(last), addr, "POST", Some(&session), &initialized())
            .await
            .unwrap();
        assert!(matches!(answer.status, 200 | 202), "{answer:?}");
        sessions.push(session);
    }
    // Both sessions are in use: none is closed to make room.
    let refused = exchange(loopback(13), addr, "POST", None, &initialize())
        .await
        .unwrap();
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.header("retry-after").is_some(), "{refused:?}");
    // A session ended by its client frees its place.
    let ended = exchange(
        loopback(11),
        addr,
        "DELETE",
        Some(&sessions[0]),
        &Value::Null,
    )
    .await
    .unwrap();
    assert!(matches!(ended.status, 200 | 204), "{ended:?}");
    let admitted = exchange(loopback(13), addr, "POST", None, &initialize())
        .await
        .unwrap();
    assert_eq!(admitted.status, 200, "{admitted:?}");
}

#[tokio::test]
async fn requests_for_unknown_or_ended_sessions_get_404_never_500() {
    let (_world, _gateway, addr) = gateway(&[]);
    let source = loopback(20);
    let unknown = exchange(source, addr, "POST", Some("no-such-session"), &list(1))
        .await
        .unwrap();
    assert_eq!(unknown.status, 404, "{unknown:?}");

    // Sessions end while requests naming them are on their way in.
    let mut statuses = Vec::new();
    for _round in 0..40 {
        let answer = exchange(source, addr, "POST", None, &initialize())
            .await
            .unwrap();
        let session = answer.session();
        exchange(source, addr, "POST", Some(&session), &initialized())
            .await
            .unwrap();
        let requests: Vec<_> = (0..16)
            .map(|id| {
                let session = session.clone();
                tokio::spawn(async move {
                    exchange(source, addr, "POST", Some(&session), &list(id))
                        .await
                        .map(|answer| answer.status)
                })
            })
            .collect();
        let ended = exchange(source, addr, "DELETE", Some(&session), &Value::Null)
            .await
            .unwrap();
        assert!(matches!(ended.status, 200 | 204 | 404), "{ended:?}");
        for request in requests {
            statuses.push(request.await.unwrap().unwrap());
        }
    }
    let unexpected: Vec<_> = statuses
        .iter()
        .filter(|status| **status != 200 && **status != 404)
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    assert!(
        statuses.contains(&404),
        "no request came after the end of its session"
    );
}
