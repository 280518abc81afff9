//! The filtering proxy of a sandboxed server that may reach `allowedDomains`: it runs in the
//! host, on a Unix socket the launcher relays a loopback port of the sandbox to, and connects
//! only to allowed hosts.
//!
//! It speaks HTTP `CONNECT host:port` (HTTPS and any TCP protocol) and plain-HTTP requests with
//! an absolute URI (`GET http://host/path`), which it forwards as one request per connection so
//! that a second request cannot name another host. Anything else, and every host the policy
//! refuses, gets an error response and no connection.

use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use super::SandboxPolicy;

/// The longest request head read before the request is refused.
const MAX_HEAD: usize = 16 * 1024;

/// Listen on `socket` for the server `server`; the task runs until aborted.
pub(super) fn start(
    server: &str,
    socket: &Path,
    policy: SandboxPolicy,
) -> std::io::Result<tokio::task::AbortHandle> {
    let listener = UnixListener::bind(socket)?;
    let server = server.to_owned();
    let task = tokio::spawn(async move {
        let policy = std::sync::Arc::new(policy);
        while let Ok((stream, _)) = listener.accept().await {
            let policy = policy.clone();
            let server = server.clone();
            tokio::spawn(async move {
                if let Err(e) = serve(stream, &policy, &server).await {
                    tracing::debug!(server, "sandbox proxy connection ended: {e}");
                }
            });
        }
    });
    Ok(task.abort_handle())
}

/// One request from the sandbox.
async fn serve(
    mut client: UnixStream,
    policy: &SandboxPolicy,
    server: &str,
) -> std::io::Result<()> {
    let (head, rest) = match read_head(&mut client).await? {
        Some(read) => read,
        None => return refuse(&mut client, "400 Bad Request", "request head too long").await,
    };
    let Some(request) = Request::parse(&head) else {
        return refuse(&mut client, "400 Bad Request", "not an HTTP proxy request").await;
    };
    if !policy.allows_host(&request.host) {
        tracing::warn!(
            server,
            host = request.host,
            "sandbox: refused a connection to a host not in allowedDomains"
        );
        let why = format!(
            "mcpr sandbox: `{}` is not in this server's allowedDomains",
            request.host
        );
        return refuse(&mut client, "403 Forbidden", &why).await;
    }
    let mut upstream = match TcpStream::connect((request.host.as_str(), request.port)).await {
        Ok(upstream) => upstream,
        Err(e) => {
            let why = format!("mcpr sandbox: cannot reach `{}`: {e}", request.host);
            return refuse(&mut client, "502 Bad Gateway", &why).await;
        }
    };
    match request.forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
        }
        Some(head) => upstream.write_all(head.as_bytes()).await?,
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// The request head (up to the blank line) and what was read after it; `None` when it is too
/// long.
async fn read_head(client: &mut UnixStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok(Some((String::from_utf8_lossy(&buf).into_owned(), rest)));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn refuse(client: &mut UnixStream, status: &str, why: &str) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{why}\n",
        why.len() + 1
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

/// What the proxy was asked for.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    host: String,
    port: u16,
    /// For plain HTTP, the head to send upstream; `None` for `CONNECT`.
    forward: Option<String>,
}

impl Request {
    fn parse(head: &str) -> Option<Request> {
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target, version) = (first.next()?, first.next()?, first.next()?);
        if first.next().is_some() || !version.starts_with("HTTP/1.") {
            return None;
        }
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = split_authority(target, None)?;
            return Some(Request {
                host,
                port,
                forward: None,
            });
        }
        let rest = target.strip_prefix("http://")?;
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return None;
        }
        let (host, port) = split_authority(authority, Some(80))?;
        // One request per connection: the upstream closes after answering it.
        let mut forward = format!("{method} {path} {version}\r\n");
        for line in lines.filter(|line| !line.is_empty()) {
            let name = line.split(':').next().unwrap_or("").trim();
            if name.eq_ignore_ascii_case("connection")
                || name.eq_ignore_ascii_case("keep-alive")
                || name.to_ascii_lowercase().starts_with("proxy-")
            {
                continue;
            }
            forward.push_str(line);
            forward.push_str("\r\n");
        }
        forward.push_str("Connection: close\r\n\r\n");
        Some(Request {
            host,
            port,
            forward: Some(forward),
        })
    }
}

/// `host:port` (or `[v6]:port`); `default` when the port is absent.
fn split_authority(authority: &str, default: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => default?,
    };
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_name_their_host() {
        let connect = Request::parse("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x").unwrap();
        assert_eq!(
            (connect.host.as_str(), connect.port),
            ("api.example.com", 443)
        );
        assert_eq!(connect.forward, None);
        let get = Request::parse(
            "GET http://h.example:8080/a?b HTTP/1.1\r\nHost: h.example\r\nProxy-Connection: keep-alive",
        )
        .unwrap();
        assert_eq!((get.host.as_str(), get.port), ("h.example", 8080));
        assert_eq!(
            get.forward.unwrap(),
            "GET /a?b HTTP/1.1\r\nHost: h.example\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(Request::parse("GET http://h/ HTTP/1.1").unwrap().port, 80);
        assert!(Request::parse("GET /local HTTP/1.1").is_none());
        assert!(Request::parse("CONNECT h HTTP/1.1").is_none());
        assert!(Request::parse("GET http://user@h/ HTTP/1.1").is_none());
    }
}
