//! The stdio road: a server started as a child process and spoken to over its stdin and stdout.
//! rmcp opens the connection; after that, mcpr's own reader and direct request path carry it,
//! not rmcp's service (ARCHITECTURE.md, "Where mcpr leaves rmcp, and why", says what that buys
//! and what a change here must keep).
//!
//! - The process: `process` (the child in its own process group, its stderr, shutdown on our
//!   deadline), `group` (signals to process groups, and whether they still live), `spawn`
//!   (starting it), `spawner` (the threads that start processes, off the runtime's workers),
//!   `watchdog` (on Linux, starts the servers as their subreaper and kills all below them when
//!   the host is gone), `environment` (the variables a server receives: an allowlist, its
//!   configured values, never mcpr's own).
//! - The wire: `pipe` (newline-delimited JSON-RPC, each received line parsed once), `overlong`
//!   (a line past the longest accepted), `decode` (received messages, answers decoded by the
//!   method they answer).
//! - After the opening: `direct` (the client's own requests, written and answered outside
//!   rmcp's service), `answer` (a direct request's answer, read in one pass), `own` (the
//!   connection's one reader, in place of rmcp's service).

pub(super) mod answer;
pub(super) mod decode;
pub(super) mod direct;
pub mod environment;
pub(super) mod group;
pub(super) mod overlong;
pub(super) mod own;
pub(super) mod pipe;
pub(super) mod process;
pub(super) mod spawn;
pub(super) mod spawner;
pub(super) mod watchdog;
