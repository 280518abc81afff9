//! The relay inside the sandbox: a port on its loopback, where the server's proxy variables
//! point, relayed to the host's filtering proxy over the Unix socket the host listens on.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// The bound port, before and after the server starts.
pub(super) struct Relay {
    listener: TcpListener,
}

impl Relay {
    /// Bring `lo` up in the new network namespace and bind a port on it.
    pub(super) fn bind() -> Result<Relay, String> {
        super::namespaces::loopback_up()?;
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| format!("cannot listen on the sandbox's loopback: {e}"))?;
        Ok(Relay { listener })
    }

    pub(super) fn port(&self) -> u16 {
        self.listener.local_addr().map_or(0, |addr| addr.port())
    }

    /// Relay every connection on threads of their own, for as long as this process lives.
    pub(super) fn serve(self, socket: PathBuf) {
        std::thread::spawn(move || {
            for client in self.listener.incoming().flatten() {
                let socket = socket.clone();
                std::thread::spawn(move || {
                    if let Ok(proxy) = UnixStream::connect(&socket) {
                        relay(client, proxy);
                    }
                });
            }
        });
    }
}

/// Copy both ways until both sides are done.
fn relay(client: TcpStream, proxy: UnixStream) {
    let (Ok(client_back), Ok(proxy_back)) = (client.try_clone(), proxy.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || copy(client, proxy, |s| s.shutdown(Shutdown::Write)));
    copy(proxy_back, client_back, |s| s.shutdown(Shutdown::Write));
    let _ = up.join();
}

fn copy<R: Read, W: Write>(mut from: R, mut to: W, done: impl Fn(&W) -> std::io::Result<()>) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = done(&to);
}
