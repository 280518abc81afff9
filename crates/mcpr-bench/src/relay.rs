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

pub fn relay_target(args: &[String]) -> ExitCode {
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
