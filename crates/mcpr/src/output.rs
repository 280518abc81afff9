//! What happens when the output cannot be written.
//!
//! Commands print with `println!`, which panics when a write fails: a reader that stops early
//! (`mcpr tools --json | head -1`) or a full disk (`> /dev/full`) would end mcpr with a panic
//! message and status 101. [`guard`] turns those panics into the outcome a user expects: a
//! closed pipe ends mcpr quietly with status 0 (as `head` asked for no more), any other write
//! error prints one line and exits with [`exit::OUTPUT`]. Servers are stopped either way: the
//! command's future, with its manager, is dropped, and a dropped connection kills its server's
//! process group.

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};

use futures::FutureExt as _;

use crate::exit::{self, Failure, Outcome};

/// The prefix of the panic message of `print!`/`println!` on a failed write; the rest is the
/// I/O error.
const STDOUT_FAILED: &str = "failed printing to stdout: ";
/// The same for `eprint!`/`eprintln!`.
const STDERR_FAILED: &str = "failed printing to stderr: ";

/// A failed write to stdout or stderr, as told by a panic message.
#[derive(Debug, PartialEq, Eq)]
enum WriteFailure {
    /// The reader closed the pipe: not an error.
    Closed,
    /// Writing to stdout failed otherwise; the I/O error as text.
    Stdout(String),
    /// Writing to stderr failed: nothing more can be said.
    Stderr,
}

/// Keep the panic hook from printing the panic message of a failed write: [`guard`] reports
/// it in one line instead. Other panics are printed as before.
pub(crate) fn quiet_write_panics() {
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if message(info.payload()).and_then(write_failure).is_none() {
            default_hook(info);
        }
    }));
}

/// Run a command, turning a failed write to stdout or stderr into its outcome; any other
/// panic goes on unwinding.
pub(crate) async fn guard(command: impl Future<Output = Outcome>) -> Outcome {
    match AssertUnwindSafe(command).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(payload) => match message(payload.as_ref()).and_then(write_failure) {
            Some(WriteFailure::Closed) => Ok(exit::OK),
            Some(WriteFailure::Stdout(error)) => Err(Failure {
                code: exit::OUTPUT,
                message: format!("cannot write the output: {error}"),
            }),
            // Nothing can be said when stderr itself fails.
            Some(WriteFailure::Stderr) => Ok(exit::OUTPUT),
            None => panic::resume_unwind(payload),
        },
    }
}

/// The text of a panic's payload.
fn message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
}

/// Which write failed, if the panic says a write failed.
fn write_failure(message: &str) -> Option<WriteFailure> {
    let (error, stdout) = match message.strip_prefix(STDOUT_FAILED) {
        Some(error) => (error, true),
        None => (message.strip_prefix(STDERR_FAILED)?, false),
    };
    // The I/O error's text ends with its OS code: "Broken pipe (os error 32)".
    let closed = format!("(os error {})", libc::EPIPE);
    Some(if error.ends_with(&closed) {
        WriteFailure::Closed
    } else if stdout {
        WriteFailure::Stdout(error.to_owned())
    } else {
        WriteFailure::Stderr
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_failures_are_told_apart_from_other_panics() {
        let pipe = std::io::Error::from_raw_os_error(libc::EPIPE);
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(
            write_failure(&format!("{STDOUT_FAILED}{pipe}")),
            Some(WriteFailure::Closed)
        );
        assert_eq!(
            write_failure(&format!("{STDERR_FAILED}{pipe}")),
            Some(WriteFailure::Closed)
        );
        assert_eq!(
            write_failure(&format!("{STDOUT_FAILED}{full}")),
            Some(WriteFailure::Stdout(full.to_string()))
        );
        assert_eq!(
            write_failure(&format!("{STDERR_FAILED}{full}")),
            Some(WriteFailure::Stderr)
        );
        assert_eq!(write_failure("index out of bounds"), None);
    }
}
