//! The gateway's byte plumbing, apart from what it answers: how a client's bytes come in and
//! the answers go out. The semantics (the handler, its catalog, views, search mode, a call's
//! questions) live beside this folder and never import it; the plumbing calls into them.
//!
//! - `front`: the byte-stream front end's fast path for `tools/call`, which reads a call off the
//!   line and writes its answer without rmcp's service (ARCHITECTURE.md, "Where mcpr leaves
//!   rmcp, and why", says what that buys and what a change here must keep); `client_line`
//!   reads a client's line for it in one pass.
//! - `relay`: tool results sent to a client as the backend sent them, on every transport.
//! - `stdio`: the gateway's own stdin and stdout as readiness-driven streams.
//! - `http`: the gateway over streamable HTTP, with its bearer token (`token`), its sessions
//!   (`sessions`, held to the caps and expiries of `admission`), `GET /healthz` (`healthz`)
//!   and `GET /metrics` (`metrics`), both behind `guard`; a stateless 2026-07-28 `tools/call` POST is answered before rmcp's service
//!   (`http_call`), its progress routed back to it by `http_progress`.

pub(super) mod admission;
pub(super) mod client_line;
pub(super) mod front;
pub(super) mod guard;
pub(super) mod healthz;
pub mod http;
pub(super) mod http_call;
pub(super) mod http_progress;
#[cfg(feature = "otel")]
pub(super) mod metrics;
pub(super) mod relay;
pub(super) mod sessions;
#[cfg(unix)]
pub(super) mod stdio;
pub(super) mod token;
