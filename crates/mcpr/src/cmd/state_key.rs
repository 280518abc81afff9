//! `mcpr serve`'s request-state key: `--state-key-file FILE` (or `MCPR_STATE_KEY_FILE`) gives
//! gateway replicas one key for the `requestState`s of their 2026-07-28 clients, and
//! `--generate-state-key` / `--rotate-state-key` make and rotate that file, then exit. The key
//! itself is never printed.

use std::path::PathBuf;

use mcp_runtime::fsutil::display_path;
use mcp_runtime::gateway::{DEFAULT_PARK, ROTATION_SLACK, StateKeyError, StateKeyFile};

use crate::advice::Advise as _;
use crate::exit::{self, Failure, Outcome};

/// The environment variable naming the key file (when no --state-key-file is given).
pub(crate) const STATE_KEY_ENV: &str = "MCPR_STATE_KEY_FILE";

/// The state key flags of `mcpr serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct StateKeyArgs {
    /// Seal the requestState of every input round trip (2026-07-28 clients) with the key in
    /// FILE, so that replicas behind a load balancer that share FILE can each take a client's
    /// retry. FILE must be private to its owner (0600); a rotated FILE is picked up without
    /// a restart. Without it: a key of this process alone.
    #[arg(long, value_name = "FILE", env = STATE_KEY_ENV)]
    pub state_key_file: Option<PathBuf>,
    /// Write a new random state key to FILE (mode 0600) and exit. An existing FILE is never
    /// replaced: rotate it.
    #[arg(long, value_name = "FILE", conflicts_with = "rotate_state_key")]
    pub generate_state_key: Option<PathBuf>,
    /// Put a new random key in FILE and exit; the replaced key is still accepted for the
    /// longest a call waits for its client (--timeout, else 300 s) plus a minute, so calls
    /// under way are not broken. Gateways using FILE pick the new key up by themselves.
    #[arg(long, value_name = "FILE")]
    pub rotate_state_key: Option<PathBuf>,
}

/// `--generate-state-key` or `--rotate-state-key`, if given: done, and `mcpr serve` exits.
pub(crate) fn maintain(args: &StateKeyArgs) -> Option<Outcome> {
    if let Some(path) = &args.generate_state_key {
        return Some(StateKeyFile::generate(path).map_err(usage).map(|file| {
            eprintln!(
                "mcpr serve: wrote a new state key to {} (mode 0600); give every replica this \
                 same file: mcpr serve --http ADDR --state-key-file {}",
                display_path(file.path()),
                display_path(file.path())
            );
            exit::OK
        }));
    }
    let path = args.rotate_state_key.as_ref()?;
    Some(StateKeyFile::rotate(path).map_err(usage).map(|file| {
        eprintln!(
            "mcpr serve: rotated the state key in {}; gateways reading it seal with the new key \
             within seconds, and accept the old one for {} s more (by default: longer with a \
             longer --timeout)",
            display_path(file.path()),
            (DEFAULT_PARK + ROTATION_SLACK).as_secs()
        );
        exit::OK
    }))
}

/// The key file of `--state-key-file` (or `MCPR_STATE_KEY_FILE`), read and checked: a file
/// that cannot be used stops `mcpr serve` before any server starts.
pub(crate) fn load(args: &StateKeyArgs) -> Result<Option<StateKeyFile>, Failure> {
    let Some(path) = &args.state_key_file else {
        return Ok(None);
    };
    StateKeyFile::load(path).map(Some).map_err(usage)
}

fn usage(error: StateKeyError) -> Failure {
    Failure::usage(error.explained())
}
