//! Stdin/stdout plumbing for the knobs that need to see raw lines.
//!
//! By default rmcp reads stdin and writes stdout directly (through the reactor when they are
//! pipes, see `readiness_pipe`), so the plain path costs nothing. A
//! pump task is put in between only when a knob needs it:
//! - the stdin pump tees raw lines to the `--record` file, and keeps reading (to notice EOF)
//!   while rmcp is stuck in a delayed or hung `initialize`;
//! - the stdout pump copies whole lines and injects `--garbage` lines between them, so a JSON
//!   frame is never split; with `--endless-answer` it turns the first `tools/call` answer into
//!   a line that never ends.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Capacity of the in-process pipes between a pump and rmcp. Generous so that the stdin pump
/// can keep reading (and notice EOF) while rmcp is not reading, e.g. during `--hang-init`.
const PIPE_CAPACITY: usize = 4 * 1024 * 1024;

/// How long after stdin's EOF the stdin pump signals EOF itself, in case rmcp is not reading.
const EOF_FALLBACK: Duration = Duration::from_millis(25);

/// Which pumps to start.
pub(crate) struct IoOptions {
    /// Tee stdin lines to this file.
    pub record: Option<PathBuf>,
    /// Garbage lines to inject on stdout.
    pub garbage: usize,
    /// Answer the first `tools/call` with a line that never ends.
    pub endless_answer: bool,
    /// Read stdin through a pump even without `record`.
    pub read_pump: bool,
}

/// The streams rmcp should use, plus what the pumps share with the rest of the server.
pub(crate) struct Stdio {
    /// What rmcp reads messages from.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// What rmcp writes messages to.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// Cancelled once stdin reaches EOF (by the stdin pump, or by the transport wrapper).
    pub eof: CancellationToken,
    /// Ids of pending `tools/call` requests, when the stdout pump needs to recognise their
    /// responses.
    pub call_ids: Option<Arc<CallIds>>,
    /// The stdout pump; it ends once rmcp's writer is dropped and everything is written.
    pub out_pump: Option<JoinHandle<()>>,
}

impl Stdio {
    /// Sets up stdin/stdout for `options`, starting the pumps that are needed.
    pub(crate) async fn open(options: &IoOptions) -> anyhow::Result<Stdio> {
        let eof = CancellationToken::new();
        let recorder = match &options.record {
            Some(path) => Some(Recorder::open(path).await?),
            None => None,
        };
        let reader: Box<dyn AsyncRead + Send + Unpin> = if recorder.is_some() || options.read_pump {
            let (to_server, from_pump) = tokio::io::duplex(PIPE_CAPACITY);
            tokio::spawn(pump_stdin(
                tokio::io::stdin(),
                to_server,
                recorder,
                eof.clone(),
            ));
            Box::new(from_pump)
        } else if let Some(stdin) = readiness_pipe(0) {
            Box::new(stdin.reader()?)
        } else {
            Box::new(tokio::io::stdin())
        };
        let (writer, call_ids, out_pump): (Box<dyn AsyncWrite + Send + Unpin>, _, _) =
            if options.garbage > 0 || options.endless_answer {
                let (from_server, to_pump) = tokio::io::duplex(PIPE_CAPACITY);
                let call_ids = Arc::new(CallIds::default());
                let pump = tokio::spawn(pump_stdout(
                    to_pump,
                    tokio::io::stdout(),
                    OutKnobs {
                        garbage: options.garbage,
                        endless_answer: options.endless_answer,
                    },
                    call_ids.clone(),
                ));
                (Box::new(from_server), Some(call_ids), Some(pump))
            } else if let Some(stdout) = readiness_pipe(1) {
                (Box::new(stdout.writer()?), None, None)
            } else {
                (Box::new(tokio::io::stdout()), None, None)
            };
        Ok(Stdio {
            reader,
            writer,
            eof,
            call_ids,
            out_pump,
        })
    }
}

/// Stdin (`fd` 0) or stdout (`fd` 1) to be read or written through the runtime's reactor, when
/// it is a pipe of its own. tokio's `stdin()`/`stdout()` hand every read and write to the
/// blocking thread pool: several thread switches per message, which made the mock the busiest
/// process of a benchmark on two cores. Not for a terminal or a file (tokio's streams serve
/// those), nor for stdout when stderr is the same pipe (`2>&1`): the pipe is made
/// non-blocking, and the mock's own stderr writes must not see `EAGAIN`.
fn readiness_pipe(fd: i32) -> Option<StdPipe> {
    let stat = |fd: i32| {
        // SAFETY: fstat writes one stat structure through the pointer; `fd` is one of the
        // process's standard descriptors.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        (unsafe { libc::fstat(fd, &mut stat) } == 0).then_some(stat)
    };
    let own = stat(fd)?;
    if own.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    if fd == 1 && stat(2).is_some_and(|err| err.st_dev == own.st_dev && err.st_ino == own.st_ino) {
        return None;
    }
    Some(StdPipe(fd))
}

/// A standard descriptor that is a pipe; restored to blocking mode when dropped, as the
/// process's standard streams outlive it.
struct StdPipe(i32);

impl StdPipe {
    /// A duplicate of the descriptor as a file, for tokio's pipe types (which make it
    /// non-blocking).
    fn file(&self) -> std::io::Result<std::fs::File> {
        use std::os::fd::{AsFd as _, BorrowedFd};
        // SAFETY: fds 0 and 1 stay open for the life of the process; borrowed only to
        // duplicate.
        let fd = unsafe { BorrowedFd::borrow_raw(self.0) };
        Ok(std::fs::File::from(fd.as_fd().try_clone_to_owned()?))
    }

    fn reader(self) -> anyhow::Result<RestoringPipe<tokio::net::unix::pipe::Receiver>> {
        let pipe = tokio::net::unix::pipe::Receiver::from_file(self.file()?)
            .context("stdin as a non-blocking pipe")?;
        Ok(RestoringPipe { pipe, _fd: self })
    }

    fn writer(self) -> anyhow::Result<RestoringPipe<tokio::net::unix::pipe::Sender>> {
        let pipe = tokio::net::unix::pipe::Sender::from_file(self.file()?)
            .context("stdout as a non-blocking pipe")?;
        Ok(RestoringPipe { pipe, _fd: self })
    }
}

impl Drop for StdPipe {
    fn drop(&mut self) {
        // SAFETY: fcntl on one of the process's own standard descriptors, which stays open.
        unsafe {
            let flags = libc::fcntl(self.0, libc::F_GETFL);
            if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
                libc::fcntl(self.0, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
}

/// A tokio pipe over a standard descriptor, which is set back to blocking once the pipe is
/// dropped.
struct RestoringPipe<P> {
    pipe: P,
    _fd: StdPipe,
}

impl<P: AsyncRead + Unpin> AsyncRead for RestoringPipe<P> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.pipe).poll_read(cx, buf)
    }
}

impl<P: AsyncWrite + Unpin> AsyncWrite for RestoringPipe<P> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.pipe).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.pipe).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.pipe).poll_shutdown(cx)
    }
}

/// Ids (as compact JSON) of `tools/call` requests whose response has not been written yet.
#[derive(Debug, Default)]
pub(crate) struct CallIds(Mutex<HashSet<String>>);

impl CallIds {
    /// Remembers a `tools/call` request id.
    pub(crate) fn insert(&self, id_json: String) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id_json);
    }

    /// The id (as compact JSON), once, if `line` is the response to a remembered `tools/call`.
    fn take_response(&self, line: &[u8]) -> Option<String> {
        /// Just enough of a JSON-RPC message to tell a response and its id.
        #[derive(Deserialize)]
        struct Head {
            id: Option<serde_json::Value>,
            method: Option<IgnoredAny>,
        }
        let Ok(Head {
            id: Some(id),
            method: None,
        }) = serde_json::from_slice::<Head>(line)
        else {
            return None;
        };
        let id_json = serde_json::to_string(&id).ok()?;
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id_json)
            .then_some(id_json)
    }
}

/// Appends raw stdin lines to the `--record` file, one whole line at a time.
struct Recorder {
    file: tokio::fs::File,
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    path: PathBuf,
}

impl Recorder {
    async fn open(path: &Path) -> anyhow::Result<Recorder> {
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await
            .with_context(|| format!("cannot open the --record file {}", path.display()))?;
        Ok(Recorder {
            file,
            partial: Vec::new(),
            path: path.to_path_buf(),
        })
    }

    /// Records the complete lines in `chunk`; keeps an unfinished last line for later.
    async fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        let Some(last_newline) = chunk.iter().rposition(|b| *b == b'\n') else {
            self.partial.extend_from_slice(chunk);
            return Ok(());
        };
        let (complete, rest) = chunk.split_at(last_newline + 1);
        if !self.partial.is_empty() {
            self.file.write_all(&self.partial).await?;
            self.partial.clear();
        }
        self.file.write_all(complete).await?;
        // Tests read the file while the server runs, so every line must be on disk at once.
        self.file.flush().await?;
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Records a final line that had no newline, then flushes.
    async fn finish(&mut self) -> std::io::Result<()> {
        if !self.partial.is_empty() {
            self.file.write_all(&self.partial).await?;
            self.file.write_all(b"\n").await?;
            self.partial.clear();
        }
        self.file.flush().await
    }
}

/// Copies stdin to rmcp, teeing lines to the recorder; cancels `eof` when stdin ends.
async fn pump_stdin(
    mut stdin: impl AsyncRead + Unpin,
    mut to_server: impl AsyncWrite + Unpin,
    mut recorder: Option<Recorder>,
    eof: CancellationToken,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stdin.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        // Record before forwarding: once the server has answered a later request, everything
        // sent before it is in the file.
        if let Some(rec) = recorder.as_mut()
            && let Err(e) = rec.write(chunk).await
        {
            eprintln!(
                "mcpr mock: cannot write the --record file {}: {e}",
                rec.path.display()
            );
            recorder = None;
        }
        if to_server.write_all(chunk).await.is_err() {
            break;
        }
    }
    if let Some(rec) = recorder.as_mut()
        && let Err(e) = rec.finish().await
    {
        eprintln!(
            "mcpr mock: cannot write the --record file {}: {e}",
            rec.path.display()
        );
    }
    // rmcp gets its EOF once it has read what is still queued; the transport wrapper then
    // signals `eof`, like on the plain path. Only if rmcp is not reading (stuck in a delayed or
    // hung `initialize`) does this fallback signal it.
    drop(to_server);
    tokio::time::sleep(EOF_FALLBACK).await;
    eof.cancel();
}

/// What the stdout pump does to rmcp's output.
#[derive(Clone, Copy)]
struct OutKnobs {
    /// Garbage lines before the first line and before every `tools/call` response.
    garbage: usize,
    /// The first `tools/call` response becomes a line that never ends.
    endless_answer: bool,
}

/// Copies rmcp's output to stdout line by line, as `knobs` say.
async fn pump_stdout(
    from_server: impl AsyncRead + Unpin,
    mut stdout: impl AsyncWrite + Unpin,
    knobs: OutKnobs,
    call_ids: Arc<CallIds>,
) {
    let OutKnobs {
        garbage,
        endless_answer,
    } = knobs;
    let mut reader = BufReader::new(from_server);
    let mut line = Vec::new();
    let mut first = true;
    let mut garbage_count: u64 = 0;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let call_answer = call_ids.take_response(&line);
        if let Some(id) = call_answer.as_deref()
            && endless_answer
        {
            write_endless_answer(&mut stdout, id).await;
            return;
        }
        if first || call_answer.is_some() {
            first = false;
            let mut lines = String::new();
            for _ in 0..garbage {
                garbage_count += 1;
                lines.push_str(&format!("garbage line {garbage_count}: not json {{\n"));
            }
            if stdout.write_all(lines.as_bytes()).await.is_err() {
                break;
            }
        }
        if stdout.write_all(&line).await.is_err() {
            break;
        }
        // Flush only when no further line is already waiting, to batch bursts.
        if reader.buffer().is_empty() && stdout.flush().await.is_err() {
            break;
        }
    }
    let _ = stdout.flush().await;
}

/// The start of the answer to request `id`, then text without end, until stdout fails (the
/// client went away) or the process exits (its stdin closed).
async fn write_endless_answer(stdout: &mut (impl AsyncWrite + Unpin), id: &str) {
    let start =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
    if stdout.write_all(start.as_bytes()).await.is_err() {
        return;
    }
    let filler = vec![b'x'; 64 * 1024];
    while stdout.write_all(&filler).await.is_ok() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_match_only_responses() {
        let ids = CallIds::default();
        ids.insert("7".into());
        ids.insert("\"a\"".into());
        let answer = |line: &[u8]| ids.take_response(line);
        assert_eq!(
            answer(br#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#),
            None
        );
        assert_eq!(
            answer(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(answer(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#), None);
        assert_eq!(
            answer(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1}}"#).as_deref(),
            Some("\"a\"")
        );
        assert_eq!(answer(b"not json"), None);
    }

    #[tokio::test]
    async fn stdout_pump_keeps_frames_whole() {
        let (mut server, pump_in) = tokio::io::duplex(1024);
        let (pump_out, mut client) = tokio::io::duplex(1024 * 1024);
        let ids = Arc::new(CallIds::default());
        ids.insert("2".into());
        let knobs = OutKnobs {
            garbage: 2,
            endless_answer: false,
        };
        let pump = tokio::spawn(pump_stdout(pump_in, pump_out, knobs, ids));
        server
            .write_all(b"{\"id\":1,\"result\":{}}\n{\"id\":2,\"res")
            .await
            .unwrap();
        server.write_all(b"ult\":{}}\n").await.unwrap();
        drop(server);
        pump.await.unwrap();
        let mut out = String::new();
        client.read_to_string(&mut out).await.unwrap();
        assert_eq!(
            out,
            "garbage line 1: not json {\ngarbage line 2: not json {\n{\"id\":1,\"result\":{}}\n\
             garbage line 3: not json {\ngarbage line 4: not json {\n{\"id\":2,\"result\":{}}\n"
        );
    }
}
