//! The gateway's own stdin and stdout as readiness-driven streams.
//!
//! `tokio::io::stdin()`/`stdout()` do every read and write on the blocking thread pool: each
//! message a client sends or receives costs a hand-off to another thread and back, which on
//! a 2-core machine is most of what the gateway adds to a call. When stdin and stdout are a
//! pipe or a socket (as for every host that spawns `mcpr serve`), they are registered with the
//! runtime's reactor instead (non-blocking, woken by epoll), like the pipes of the servers the
//! gateway itself starts. Anything else (a terminal, a file) keeps tokio's blocking streams.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The gateway's end of stdin or stdout.
pub(crate) enum StdStream {
    Pipe(PipeEnd),
    Socket(tokio::net::UnixStream),
}

/// A pipe end: stdin reads, stdout writes.
pub(crate) enum PipeEnd {
    Read(tokio::net::unix::pipe::Receiver),
    Write(tokio::net::unix::pipe::Sender),
}

/// Stdin and stdout as readiness-driven streams, or `None` when either is not a pipe or a
/// socket (or cannot be registered). Must be called within a tokio runtime.
pub(crate) fn stdio_streams() -> Option<(StdStream, StdStream)> {
    let streams = stream_of(0, true).zip(stream_of(1, false));
    if streams.is_none() {
        // One of them may have been made non-blocking already; tokio's blocking streams
        // need both blocking.
        restore_blocking();
    }
    streams
}

/// Restore blocking mode on stdin and stdout (they are shared with whatever else holds them:
/// a shell after `mcpr serve` ends must not find them non-blocking).
pub(crate) fn restore_blocking() {
    for fd in [0, 1] {
        // SAFETY: fcntl on the process's own standard descriptors, which stay open.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
}

fn stream_of(fd: i32, read: bool) -> Option<StdStream> {
    // SAFETY: fds 0 and 1 are open for the life of the process; only borrowed to duplicate.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes one stat structure through the pointer.
    if unsafe { libc::fstat(borrowed.as_raw_fd(), &mut stat) } != 0 {
        return None;
    }
    let kind = stat.st_mode & libc::S_IFMT;
    // A duplicate, so that dropping the stream leaves fd 0 and 1 in place.
    let owned: OwnedFd = borrowed.try_clone_to_owned().ok()?;
    match kind {
        libc::S_IFIFO if read => tokio::net::unix::pipe::Receiver::from_owned_fd(owned)
            .ok()
            .map(|r| StdStream::Pipe(PipeEnd::Read(r))),
        libc::S_IFIFO => tokio::net::unix::pipe::Sender::from_owned_fd(owned)
            .ok()
            .map(|w| StdStream::Pipe(PipeEnd::Write(w))),
        libc::S_IFSOCK => {
            let socket = std::os::unix::net::UnixStream::from(owned);
            socket.set_nonblocking(true).ok()?;
            tokio::net::UnixStream::from_std(socket)
                .ok()
                .map(StdStream::Socket)
        }
        _ => None,
    }
}

impl AsyncRead for StdStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            StdStream::Pipe(PipeEnd::Read(r)) => Pin::new(r).poll_read(cx, buf),
            StdStream::Socket(s) => Pin::new(s).poll_read(cx, buf),
            StdStream::Pipe(PipeEnd::Write(_)) => {
                Poll::Ready(Err(std::io::Error::other("stdout is not for reading")))
            }
        }
    }
}

impl AsyncWrite for StdStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            StdStream::Pipe(PipeEnd::Write(w)) => Pin::new(w).poll_write(cx, buf),
            StdStream::Socket(s) => Pin::new(s).poll_write(cx, buf),
            StdStream::Pipe(PipeEnd::Read(_)) => {
                Poll::Ready(Err(std::io::Error::other("stdin is not for writing")))
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            StdStream::Pipe(PipeEnd::Write(w)) => Pin::new(w).poll_flush(cx),
            StdStream::Socket(s) => Pin::new(s).poll_flush(cx),
            StdStream::Pipe(PipeEnd::Read(_)) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            StdStream::Pipe(PipeEnd::Write(w)) => Pin::new(w).poll_shutdown(cx),
            StdStream::Socket(s) => Pin::new(s).poll_shutdown(cx),
            StdStream::Pipe(PipeEnd::Read(_)) => Poll::Ready(Ok(())),
        }
    }
}
