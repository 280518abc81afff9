//! Ctrl-C and SIGTERM: stop what is running and leave no server process behind.
//!
//! Dropping an unfinished connect or call drops its clients, and a dropped client kills its
//! server's process group, so returning early here is enough to clean up.

use std::future::Future;

use tokio::signal::unix::{SignalKind, signal};

use crate::exit::Failure;

/// Run `work` unless SIGINT or SIGTERM arrives first; then fail with exit code 128 + signal.
pub(crate) async fn until_signal<F: Future>(work: F) -> Result<F::Output, Failure> {
    tokio::select! {
        output = work => Ok(output),
        code = interrupted() => Err(Failure { code, message: "interrupted".into() }),
    }
}

/// Resolves with the conventional exit code when SIGINT or SIGTERM arrives.
pub(crate) async fn interrupted() -> u8 {
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without signal handlers the default action (exit) applies; never resolve.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => 128 + libc::SIGINT as u8,
        _ = term.recv() => 128 + libc::SIGTERM as u8,
    }
}
