//! Nothing a stdio server starts outlives the host: not the server, not its children, not a
//! child that left the server's process group (`setsid`, `setpgid`) or was orphaned (a daemon
//! that forked twice), whether the host closes the server, exits, or is killed outright
//! (SIGKILL, the OOM killer), after which it runs no more code.
//!
//! # Linux: the watchdog starts the servers
//!
//! When the first server starts, the host forks one watchdog process for all of them
//! (`launcher`). The watchdog makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), and the
//! host asks it to start every server (`reaper`): the servers are its children, so any process
//! orphaned below them comes to it, not to init, wherever it moved. The host keeps its side of
//! a socket to it, which the kernel closes however the host ends; then, or when the host lets it
//! go after its last server closed, the watchdog kills everything it holds: each server's group,
//! then its children, and the children their deaths hand it, until none is left.
//!
//! Why this design:
//! - A subreaper only adopts the orphans of its own descendants, so the one that outlives the
//!   host must be the servers' parent. Making the host itself the subreaper would change an
//!   embedder's process-wide state, and the orphans would still go to init when it is killed.
//! - Starting a server costs less than a spawn by the host: the watchdog's `clone` shares its
//!   memory with the new process until `exec` (`exec`), where a fork of the host copies the
//!   host's page tables for every server. One round trip over the socket is added; the servers
//!   of a start-up still start at once, one `exec` after another.
//! - Forking, rather than running a helper program, keeps this working in any host that embeds
//!   the library: no mcpr executable, no shell, no `PATH`. The fork of a multithreaded host may
//!   only make async-signal-safe calls: the watchdog makes plain system calls on memory it maps
//!   for itself, and never allocates.
//! - One watchdog rather than one per server: every fork of the host costs its page tables, and
//!   makes each page the host writes afterwards a copy-on-write fault.
//!
//! The host still signals a server's group itself on an orderly close, and also the processes
//! below the server that left the group, noted from `/proc` while the server runs (`tree`).
//! A server's exit status comes from the watchdog, which reaps it. The servers die with the
//! watchdog (parent-death signal); if someone kills the watchdog, the host kills what is left of
//! their groups, and the next server starts a new watchdog.
//!
//! # Elsewhere, and when no watchdog can be started
//!
//! The host starts the servers itself, and a watchdog that only kills their process groups
//! guards them (`groups`): children that left a group, or were orphaned, are not reached.

mod groups;
mod tree;

#[cfg(target_os = "linux")]
mod exec;
#[cfg(target_os = "linux")]
mod launcher;
#[cfg(target_os = "linux")]
mod reaper;
#[cfg(target_os = "linux")]
mod wire;

pub(crate) use groups::Watchdog as GroupWatchdog;
#[cfg(target_os = "linux")]
pub(crate) use launcher::{Held, Refused, Request, launch, stopped_within};
pub(crate) use tree::Descendants;
#[cfg(target_os = "linux")]
pub(crate) use tree::{INSTANCE_ENV, new_instance};

/// Wait at most `bound` until every watchdog let go has killed what it held (Linux; at once
/// elsewhere).
#[cfg(not(target_os = "linux"))]
pub(crate) async fn stopped_within(_bound: std::time::Duration) {}
