//! The physical limit: a minimal hand-written JSON-RPC-over-pipes client. It writes request
//! lines and counts response lines, with no framework, no typed messages and no timers. It
//! answers the few server requests a server may send (`ping`, `roots/list`) so that it also
//! works against server-everything.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::proc::{self, Watchdog};
use crate::rates::{Rates, cpu_time};

const HANDSHAKE_BOUND: Duration = Duration::from_secs(30);

/// A running server with the raw client's two pipes.
pub(crate) struct RawClient {
    group: proc::Group,
    stdin: Option<BufWriter<ChildStdin>>,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
}

/// The `tools/call` request of `echo {message}` with `id`.
fn echo_request(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"hello"}}}}}}"#
    )
}

impl RawClient {
    /// Spawn `command args` and complete the handshake.
    pub(crate) fn connect(command: &str, args: &[String]) -> Result<RawClient, String> {
        let mut spawned = Command::new(command);
        spawned.args(args);
        RawClient::connect_command(spawned)
    }

    /// Spawn `command` (its stdio replaced by pipes) and complete the handshake.
    pub(crate) fn connect_command(mut command: Command) -> Result<RawClient, String> {
        let program = command.get_program().to_string_lossy().into_owned();
        let mut group = proc::spawn(
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )
        .map_err(|e| format!("spawn {program}: {e}"))?;
        let stdin = group.child().stdin.take().expect("stdin");
        let stdout = group.child().stdout.take().expect("stdout");
        // The handshake blocks on the server: bound it.
        let watchdog = Watchdog::new(group.pgid(), HANDSHAKE_BOUND);
        let mut client = RawClient {
            group,
            stdin: Some(BufWriter::new(stdin)),
            stdout: BufReader::new(stdout),
            line: String::new(),
            next_id: 1,
        };
        let handshake = client.handshake();
        if watchdog.disarm() {
            return Err(format!(
                "no initialize answer within {} s",
                HANDSHAKE_BOUND.as_secs()
            ));
        }
        handshake.map(|()| client)
    }

    fn handshake(&mut self) -> Result<(), String> {
        self.send(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        )?;
        self.flush()?;
        self.next_response()?;
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        self.flush()
    }

    pub(crate) fn pgid(&self) -> i32 {
        self.group.pgid()
    }

    /// Send one request line (its `id` chosen by the caller) and return the response line.
    pub(crate) fn request(&mut self, line: &str) -> Result<&str, String> {
        self.send(line)?;
        self.flush()?;
        self.next_response()?;
        Ok(&self.line)
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.write_all(b"\n"))
            .map_err(|e| format!("write to server: {e}"))
    }

    fn flush(&mut self) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.flush().map_err(|e| format!("write to server: {e}"))
    }

    /// Read lines until a response arrives (answering server requests on the way); the
    /// response line is left in `self.line`.
    fn next_response(&mut self) -> Result<(), String> {
        loop {
            self.line.clear();
            let n = self
                .stdout
                .read_line(&mut self.line)
                .map_err(|e| format!("read from server: {e}"))?;
            if n == 0 {
                return Err("the server closed its stdout".into());
            }
            if !self.line.starts_with('{') {
                continue;
            }
            if !self.line.contains("\"method\"") {
                return Ok(());
            }
            // A notification or a request from the server: answer requests.
            let message: serde_json::Value = match serde_json::from_str(&self.line) {
                Ok(message) => message,
                Err(_) => continue,
            };
            if let Some(id) = message.get("id") {
                let answer = match message["method"].as_str() {
                    Some("roots/list") => {
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}})
                    }
                    Some("ping") => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                    _ => {
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
                    }
                };
                self.send(&answer.to_string())?;
                self.flush()?;
            }
        }
    }

    /// One call, checking that the answer is an echo (used for the warm-up).
    pub(crate) fn checked_call(&mut self) -> Result<(), String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&echo_request(id))?;
        self.flush()?;
        self.next_response()?;
        if self.line.contains("\"error\"") || !self.line.contains("hello") {
            return Err(format!(
                "unexpected echo answer: {}",
                proc::clip(&self.line, 200)
            ));
        }
        Ok(())
    }

    /// `calls` echo calls with at most `window` in flight; returns the elapsed time.
    pub(crate) fn calls(&mut self, calls: usize, window: usize) -> Result<Duration, String> {
        let started = Instant::now();
        let mut sent = 0;
        let mut received = 0;
        while sent < calls.min(window) {
            self.send(&echo_request(self.next_id))?;
            self.next_id += 1;
            sent += 1;
        }
        self.flush()?;
        while received < calls {
            self.next_response()?;
            received += 1;
            if sent < calls {
                self.send(&echo_request(self.next_id))?;
                self.next_id += 1;
                sent += 1;
                self.flush()?;
            }
        }
        Ok(started.elapsed())
    }

    /// Close stdin and SIGTERM the server's group at once, then wait for the server to exit
    /// (bounded; SIGKILL after `bound`).
    pub(crate) fn terminate(mut self, bound: Duration) {
        drop(self.stdin.take());
        // SAFETY: signalling the process group this client started and has not reaped.
        unsafe { libc::killpg(self.group.pgid(), libc::SIGTERM) };
        let watchdog = Watchdog::new(self.group.pgid(), bound);
        let _ = self.group.wait();
        watchdog.disarm();
    }

    /// Close stdin and wait for the server to exit (bounded).
    pub(crate) fn close(mut self, bound: Duration) {
        drop(self.stdin.take());
        let watchdog = Watchdog::new(self.group.pgid(), bound);
        let _ = self.group.wait();
        watchdog.disarm();
    }
}

/// Sequential and `in_flight` echo calls/s of the raw client against `command args`, with the
/// CPU time this process spent per call.
pub(crate) fn rates(
    command: &str,
    args: &[String],
    calls: usize,
    warmup: usize,
    in_flight: usize,
    bound: Duration,
) -> Result<Rates, String> {
    let mut client = RawClient::connect(command, args)?;
    // Every read below blocks on the server; the watchdog kills it if the bound passes, which
    // turns the blocked read into an error.
    let watchdog = Watchdog::new(client.pgid(), bound);
    let result = (|| {
        for _ in 0..warmup {
            client.checked_call()?;
        }
        let cpu = cpu_time();
        let sequential = client.calls(calls, 1)?;
        let cpu_seq = cpu_time() - cpu;
        let cpu = cpu_time();
        let parallel = client.calls(calls, in_flight)?;
        let cpu_par = cpu_time() - cpu;
        Ok(Rates::new(calls, sequential, parallel, cpu_seq, cpu_par))
    })();
    if watchdog.disarm() {
        return Err(format!("no result within {} s", bound.as_secs()));
    }
    client.close(Duration::from_secs(5));
    result
}

/// `mcpr-bench --oneshot-target CMD ARGS...`: the physical floor of a one-shot client. Spawns
/// the server, sends `initialize` at once, then `notifications/initialized` and one `echo`
/// call, prints the call's text, and stops the server (stdin closed and SIGTERM to its group
/// at once, then waits for it to be reaped). The phase times, from before the spawn, go to
/// stderr as `phases: initialize=µs call=µs printed=µs stopped=µs` for the bench to read.
pub(crate) fn oneshot_target(args: &[String]) -> std::process::ExitCode {
    let started = Instant::now();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: mcpr-bench --oneshot-target CMD [ARGS...]");
        return std::process::ExitCode::from(2);
    };
    let result = (|| {
        let mut client = RawClient::connect(program, rest)?;
        let initialized = started.elapsed();
        let watchdog = Watchdog::new(client.pgid(), HANDSHAKE_BOUND);
        let answer = client.request(&echo_request(1)).map(str::to_owned);
        let called = started.elapsed();
        if watchdog.disarm() {
            return Err(format!(
                "no call answer within {} s",
                HANDSHAKE_BOUND.as_secs()
            ));
        }
        let answer: serde_json::Value =
            serde_json::from_str(&answer?).map_err(|e| format!("call answer: {e}"))?;
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .ok_or_else(|| format!("no text in the call answer: {answer}"))?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{text}")
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("stdout: {e}"))?;
        let printed = started.elapsed();
        client.terminate(Duration::from_secs(5));
        let stopped = started.elapsed();
        Ok([initialized, called, printed, stopped])
    })();
    match result {
        Ok([initialized, called, printed, stopped]) => {
            eprintln!(
                "phases: initialize={} call={} printed={} stopped={}",
                initialized.as_micros(),
                called.as_micros(),
                printed.as_micros(),
                stopped.as_micros()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("raw one-shot client: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
