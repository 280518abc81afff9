//! The HTTP road: a remote server over streamable HTTP or the legacy HTTP+SSE transport, run by
//! rmcp's service (a 2026-07-28 tool call aside: see `direct`).
//!
//! - `remote`: choosing the transport and opening the connection over it, with the fallbacks.
//! - `streamable_http` and `legacy_sse`: the two transports; `sse`: their event streams, bounded.
//! - `plumbing`: the process's pooled HTTP client, the checks on a server's URL and headers, and
//!   HTTP failures turned into `ClientError`s that say what happened.
//! - `drain`: answers still coming on an expired streamable HTTP session, waited for.
//! - `direct`: a 2026-07-28 `tools/call` sent and answered by the calling task, outside rmcp's
//!   transport worker.
//! - `lost`: 2026-07-28 answers lost with their stream, asked again once when that is safe.

pub(super) mod direct;
pub(super) mod drain;
pub(super) mod legacy_sse;
pub(super) mod lost;
pub(super) mod plumbing;
pub(super) mod remote;
pub(super) mod sse;
pub(super) mod streamable_http;
