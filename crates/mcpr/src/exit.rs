//! Exit codes of the CLI, shared by every subcommand so scripts can rely on them.
//!
//! | Code | Meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | the tool ran and returned `isError: true` |
//! | 2 | bad usage or a config error |
//! | 3 | a server could not be connected, or its connection failed |
//! | 4 | a failure of mcpr itself |
//! | 5 | the call timed out (its server was told to cancel it) |
//! | 6 | the output could not be written (a full disk, say); a closed pipe is not an error |
//! | 128+N | interrupted by signal N (the call is cancelled and every server stopped) |
//!
//! A listing of several servers (`mcpr tools`, `mcpr status`) did its job when at least one
//! server answered: it exits 0 and reports the failed ones on stderr (and in its JSON), so that
//! one unreachable server among ten does not fail every script. It exits 3 when no server
//! answered, or with `--strict` when any failed ([`listing`]).

use std::fmt;

/// Success.
pub(crate) const OK: u8 = 0;
/// The tool ran and returned `isError: true`.
pub(crate) const TOOL_ERROR: u8 = 1;
/// Bad usage or a config error (clap also exits with 2 on usage errors).
pub(crate) const USAGE: u8 = 2;
/// A server could not be connected or the connection failed.
pub(crate) const CONNECTION: u8 = 3;
/// A failure of mcpr itself.
pub(crate) const INTERNAL: u8 = 4;
/// A call did not finish within its time limit. Distinct from [`CONNECTION`]: the server is
/// up, so retrying with a longer `--timeout` may help.
pub(crate) const TIMEOUT: u8 = 5;
/// Writing the output failed for another reason than a closed pipe (a full disk, say). A
/// reader that stops early (`| head`) is no failure: mcpr then exits quietly with [`OK`].
pub(crate) const OUTPUT: u8 = 6;

/// The exit codes as `--help` lists them.
pub(crate) const HELP: &str = "Exit codes: 0 ok, 1 the tool returned isError, 2 usage or config error, \
3 connection failure, 4 internal error, 5 the call timed out, 6 the output could not be written, \
128+N interrupted by signal N. A listing (tools, status) exits 0 when any server answered, \
3 when none did or, with --strict, when any failed.";

/// The exit code of a listing of `total` servers of which `failed` could not be reached:
/// [`OK`] while one answered, [`CONNECTION`] when none did, or with `strict` when any failed.
pub(crate) fn listing(failed: usize, total: usize, strict: bool) -> u8 {
    if failed == 0 || (!strict && failed < total) {
        OK
    } else {
        CONNECTION
    }
}

/// What a command returns on success: an exit code (0, or 1 for a tool error).
pub(crate) type Outcome = Result<u8, Failure>;

/// A command failure: the message printed on stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub(crate) fn usage(message: impl fmt::Display) -> Self {
        Failure {
            code: USAGE,
            message: message.to_string(),
        }
    }

    pub(crate) fn connection(message: impl fmt::Display) -> Self {
        Failure {
            code: CONNECTION,
            message: message.to_string(),
        }
    }

    pub(crate) fn timeout(message: impl fmt::Display) -> Self {
        Failure {
            code: TIMEOUT,
            message: message.to_string(),
        }
    }

    pub(crate) fn internal(message: impl fmt::Display) -> Self {
        Failure {
            code: INTERNAL,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_fails_only_when_nothing_answered_or_when_strict() {
        assert_eq!(listing(0, 3, false), OK);
        assert_eq!(listing(1, 3, false), OK);
        assert_eq!(listing(3, 3, false), CONNECTION);
        assert_eq!(listing(1, 3, true), CONNECTION);
        assert_eq!(listing(0, 3, true), OK);
        assert_eq!(listing(0, 0, false), OK);
    }
}
