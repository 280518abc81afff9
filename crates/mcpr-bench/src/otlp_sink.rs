//! A loopback OTLP/HTTP sink for section 8's export-on path: it accepts every `POST` (kept
//! alive, one thread per connection), reads and drops its body, and answers `200` with an
//! empty body (an empty OTLP response). It parses nothing else: the figure is what exporting
//! costs the gateway, not what a collector costs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A running sink; it stops with the bench.
pub(crate) struct Sink {
    /// Its base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub(crate) url: String,
    requests: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
}

impl Sink {
    /// Listen on a free loopback port.
    pub(crate) fn start() -> std::io::Result<Sink> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let requests = Arc::new(AtomicUsize::new(0));
        let bytes = Arc::new(AtomicUsize::new(0));
        let (counted, weighed) = (requests.clone(), bytes.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (counted, weighed) = (counted.clone(), weighed.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &counted, &weighed);
                });
            }
        });
        Ok(Sink {
            url,
            requests,
            bytes,
        })
    }

    /// Export requests received so far, and their body bytes.
    pub(crate) fn received(&self) -> (usize, usize) {
        (
            self.requests.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

/// Answer one connection's requests until it closes.
fn serve(stream: TcpStream, requests: &AtomicUsize, bytes: &AtomicUsize) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        let mut length = 0usize;
        // The request line and headers, up to the empty line.
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        std::io::copy(&mut (&mut reader).take(length as u64), &mut std::io::sink())?;
        requests.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(length, Ordering::Relaxed);
        writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")?;
    }
}
