//! A listener standing in for a host that a plain-`http:` URL names: it sits on this machine's
//! non-loopback address, records every request it receives (request line, headers, body) and
//! answers 404. A test points hostile metadata at it and asserts it heard nothing.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest request recorded.
const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// The host used where the machine has no non-loopback address: it never resolves, so no
/// request can reach anyone (and the eavesdropper hears nothing either way).
const NOWHERE: &str = "attacker.invalid";

/// A recording listener on this machine's non-loopback address. Stops when dropped.
#[derive(Debug)]
pub struct Eavesdropper {
    addr: Option<SocketAddr>,
    heard: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Eavesdropper {
    /// Listen on a free port of the address this machine reaches other hosts from.
    pub fn start() -> Eavesdropper {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let listener = outward_ip().and_then(|ip| TcpListener::bind((ip, 0)).ok());
        let Some(listener) = listener else {
            return Eavesdropper {
                addr: None,
                heard,
                stop,
                thread: None,
            };
        };
        let addr = listener.local_addr().ok();
        let thread = {
            let heard = heard.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        let request = record(stream);
                        heard
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(request);
                    }
                }
            })
        };
        Eavesdropper {
            addr,
            heard,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://ADDR:PORT{path}`: plain http to a host that is not loopback.
    pub fn url(&self, path: &str) -> String {
        match self.addr {
            Some(addr) => format!("http://{addr}{path}"),
            None => format!("http://{NOWHERE}{path}"),
        }
    }

    /// Every request received so far, as text.
    pub fn heard(&self) -> Vec<String> {
        self.heard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Eavesdropper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let (Some(addr), Some(thread)) = (self.addr, self.thread.take()) {
            // Wake the accept loop so that it sees the flag.
            let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(2));
            let _ = thread.join();
        }
    }
}

/// The address this machine sends from towards other hosts (no packet is sent: a UDP
/// `connect` only picks the route). `None` without a route or with only loopback.
fn outward_ip() -> Option<IpAddr> {
    // Documentation addresses (RFC 5737, RFC 3849): routed like any other, owned by nobody.
    for (bind, target) in [("0.0.0.0:0", "192.0.2.1:9"), ("[::]:0", "[2001:db8::1]:9")] {
        let Ok(socket) = UdpSocket::bind(bind) else {
            continue;
        };
        if socket.connect(target).is_err() {
            continue;
        }
        if let Ok(local) = socket.local_addr() {
            let ip = local.ip();
            if !ip.is_loopback() && !ip.is_unspecified() {
                return Some(ip);
            }
        }
    }
    None
}

/// Read one request (head, then a `Content-Length` body), answer 404, return what came.
fn record(mut stream: TcpStream) -> String {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut data = Vec::new();
    let mut buffer = [0u8; 8192];
    let mut wanted = None;
    while data.len() < MAX_REQUEST_BYTES {
        let read = match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        data.extend_from_slice(&buffer[..read]);
        if wanted.is_none()
            && let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            wanted = Some(end + 4 + length);
        }
        if wanted.is_some_and(|total| data.len() >= total) {
            break;
        }
    }
    let _ = stream
        .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    String::from_utf8_lossy(&data).into_owned()
}
