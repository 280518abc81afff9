//! `mcpr-bench --relay-target CMD ARGS...`: the physical floor of any gateway. A process in
//! the middle that does nothing but pass bytes on: it spawns the server and copies its own
//! stdin to the server's stdin and the server's stdout to its own stdout, each read written
//! and flushed at once, one blocking thread per direction. Section 4 puts it where
//! `mcpr serve` sits: what it adds per call is what a second process hop costs on this
//! machine (two more pipe writes and two more wake-ups per call), before any gateway work.

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

/// Bytes read at once; a line of the bench's `echo` calls fits many times over.
const CHUNK: usize = 64 * 1024;

/// Copy `from` to `to` until `from` ends, flushing after each read.
fn pump(mut from: impl Read, mut to: impl Write) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return;
                }
            }
        }
    }
}

pub(crate) fn relay_target(args: &[String]) -> ExitCode {
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: mcpr-bench --relay-target CMD [ARGS...]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("relay: cannot start {program}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (Some(server_in), Some(server_out)) = (child.stdin.take(), child.stdout.take()) else {
        eprintln!("relay: no pipes to the server");
        return ExitCode::FAILURE;
    };
    // The client's end closes the server's stdin (dropped when the pump ends), as a
    // gateway's would.
    std::thread::spawn(move || pump(std::io::stdin().lock(), server_in));
    pump(server_out, std::io::stdout().lock());
    let _ = child.wait();
    ExitCode::SUCCESS
}

/// `mcpr-bench --tcp-relay-target HOST:PORT`: the same floor for HTTP. It listens on a
/// loopback port of its own (printed as `listening on http://ADDR`), and copies bytes between
/// each connection it accepts and a new connection to `HOST:PORT`, one thread per direction.
pub(crate) fn tcp_relay_target(args: &[String]) -> ExitCode {
    use std::net::{Shutdown, TcpListener, TcpStream};
    let [target] = args else {
        eprintln!("usage: mcpr-bench --tcp-relay-target HOST:PORT");
        return ExitCode::from(2);
    };
    let listener = match TcpListener::bind("127.0.0.1:0").and_then(|l| Ok((l.local_addr()?, l))) {
        Ok((address, listener)) => {
            eprintln!("listening on http://{address}");
            listener
        }
        Err(e) => {
            eprintln!("relay: cannot listen: {e}");
            return ExitCode::FAILURE;
        }
    };
    for client in listener.incoming().map_while(Result::ok) {
        let Ok(server) = TcpStream::connect(target.as_str()) else {
            continue;
        };
        let _ = (client.set_nodelay(true), server.set_nodelay(true));
        let (Ok(client_out), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        std::thread::spawn(move || {
            pump(&client, &server);
            let _ = server.shutdown(Shutdown::Write);
        });
        std::thread::spawn(move || {
            pump(&server_out, &client_out);
            let _ = client_out.shutdown(Shutdown::Write);
        });
    }
    ExitCode::SUCCESS
}
