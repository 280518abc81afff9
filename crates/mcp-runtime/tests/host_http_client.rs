//! A host's own `reqwest::Client` is the one remote requests go through: a real loopback
//! server records the headers it receives, and a header set only on the host's client must
//! reach it from a connection attempt (direct or through the manager) and from a registry
//! query.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::client::{ConnectOptions, McpClient};
use mcp_runtime::config::{HttpConfig, HttpKind, ServerConfig, Transport};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::net::{HttpClient, client_builder};
use mcp_runtime::registry::RegistryClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Header the host's client adds to every request.
const MARK: &str = "x-host-client";

/// Bound against a hang only; nothing asserts how long anything takes.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A loopback HTTP server that answers every request `404` and keeps each request's head.
async fn recording_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).to_ascii_lowercase());
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    (base, heads)
}

fn host_client() -> HttpClient {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(MARK, "yes".parse().unwrap());
    HttpClient::custom(client_builder().default_headers(headers).build().unwrap())
}

fn marked(heads: &Mutex<Vec<String>>) -> (usize, usize) {
    let heads = heads.lock().unwrap();
    let marked = heads
        .iter()
        .filter(|h| h.contains(&format!("{MARK}: yes")))
        .count();
    (marked, heads.len())
}

#[tokio::test]
async fn a_connection_uses_the_host_client() {
    let (base, heads) = recording_server().await;
    let mut config = ServerConfig::stdio("unused", Vec::<String>::new());
    config.transport = Transport::Http(HttpConfig {
        url: format!("{base}/mcp"),
        headers: Default::default(),
        kind: HttpKind::StreamableHttp,
        oauth: None,
    });
    let options = ConnectOptions::default()
        .with_auth(None)
        .with_http(host_client());
    let attempt = tokio::time::timeout(HANG_GUARD, McpClient::connect("remote", &config, &options))
        .await
        .expect("the connection attempt ended");
    assert!(attempt.is_err(), "the server answers 404 to everything");
    let (marked, all) = marked(&heads);
    assert!(all > 0, "the server saw no request");
    assert_eq!(
        marked, all,
        "every request carried the host client's header"
    );
}

#[tokio::test]
async fn a_managed_connection_uses_the_host_client() {
    let (base, heads) = recording_server().await;
    let mut config = ServerConfig::stdio("unused", Vec::<String>::new());
    config.transport = Transport::Http(HttpConfig {
        url: format!("{base}/mcp"),
        headers: Default::default(),
        kind: HttpKind::StreamableHttp,
        oauth: None,
    });
    let manager = McpManager::new(
        ManagerOptions::default()
            .with_http(host_client())
            .with_reconnect(false),
    );
    let configs = IndexMap::from([("remote".to_owned(), config)]);
    let report = tokio::time::timeout(
        HANG_GUARD,
        manager.connect_servers(configs, IndexMap::new()),
    )
    .await
    .expect("the start-up ended");
    manager.disconnect_all().await;
    assert!(
        report.errors.contains_key("remote"),
        "the server answers 404 to everything: {report:?}"
    );
    let (marked, all) = marked(&heads);
    assert!(all > 0, "the server saw no request");
    assert_eq!(
        marked, all,
        "every request carried the host client's header"
    );
}

#[tokio::test]
async fn the_shared_client_does_not_carry_the_host_header() {
    let (base, heads) = recording_server().await;
    let registry = RegistryClient::new(&base).unwrap();
    let answer = tokio::time::timeout(HANG_GUARD, registry.list("", None))
        .await
        .expect("the registry query ended");
    assert!(answer.is_err());
    let (marked, all) = marked(&heads);
    assert!(all > 0 && marked == 0, "{marked} of {all} marked");
}

#[tokio::test]
async fn a_registry_query_uses_the_host_client() {
    let (base, heads) = recording_server().await;
    let registry = RegistryClient::new(&base)
        .unwrap()
        .with_http_client(host_client());
    let answer = tokio::time::timeout(HANG_GUARD, registry.list("", None))
        .await
        .expect("the registry query ended");
    assert!(answer.is_err(), "the server answers 404 to everything");
    let (marked, all) = marked(&heads);
    assert!(all > 0, "the server saw no request");
    assert_eq!(
        marked, all,
        "every request carried the host client's header"
    );
}
