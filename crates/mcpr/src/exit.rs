//! Exit codes of the CLI, shared by every subcommand so scripts can rely on them.

use std::fmt;

/// Success.
pub const OK: u8 = 0;
/// The tool ran and returned `isError: true`.
pub const TOOL_ERROR: u8 = 1;
/// Bad usage or a config error (clap also exits with 2 on usage errors).
pub const USAGE: u8 = 2;
/// A server could not be connected or the connection failed.
pub const CONNECTION: u8 = 3;
/// A failure of mcpr itself.
pub const INTERNAL: u8 = 4;

/// What a command returns on success: an exit code (0, or 1 for a tool error).
pub type Outcome = Result<u8, Failure>;

/// A command failure: the message printed on stderr and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl fmt::Display) -> Self {
        Failure {
            code: USAGE,
            message: message.to_string(),
        }
    }

    pub fn connection(message: impl fmt::Display) -> Self {
        Failure {
            code: CONNECTION,
            message: message.to_string(),
        }
    }

    pub fn internal(message: impl fmt::Display) -> Self {
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
