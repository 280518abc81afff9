//! Process groups: signals sent to a whole group, and whether a group still has a live
//! process. Groups killed without waiting are remembered until they are seen gone, so that a
//! host that exits right after stopping its servers leaves none of them still dying.

use std::sync::Mutex;
use std::time::Duration;

use super::watchdog;

/// Process groups sent SIGKILL without waiting for them (a dropped server, a grandchild that
/// outlived its leader), until they are seen gone.
static KILLED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Send the group led by `pid` SIGKILL without waiting for it, and remember it (in [`KILLED`])
/// until it is seen gone.
pub(super) fn kill_unwaited(pid: u32) {
    kill_group(pid, libc::SIGKILL);
    let mut killed = KILLED.lock().unwrap_or_else(|e| e.into_inner());
    killed.retain(|pid| group_exists(*pid));
    killed.push(pid);
}

/// Wait at most `bound` until every process group sent SIGKILL without waiting is gone, and
/// every watchdog let go has killed what it held: a host that exits right after stopping its
/// servers then leaves none of their processes still dying.
pub(crate) async fn killed_groups_gone(bound: Duration) {
    let deadline = tokio::time::Instant::now() + bound;
    watchdog::stopped_within(bound).await;
    loop {
        let pending: Vec<libc::pid_t> = {
            let mut killed = KILLED.lock().unwrap_or_else(|e| e.into_inner());
            killed.retain(|pid| group_exists(*pid));
            killed
                .iter()
                .filter_map(|pid| libc::pid_t::try_from(*pid).ok())
                .collect()
        };
        // Zombies are gone for this purpose: their parents (or init) reap them.
        if pending.is_empty()
            || live_groups(&pending).is_empty()
            || tokio::time::Instant::now() >= deadline
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Whether the group led by `pid` still has any process, a zombie included (one system call).
fn group_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    libc::pid_t::try_from(pid).is_ok_and(|pgid| pgid > 1 && unsafe { libc::killpg(pgid, 0) } == 0)
}

/// Send `signal` to the process group led by `pid`.
pub(super) fn kill_group(pid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale group yields ESRCH.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Whether any live process is still in the group led by `pid`. Zombies do not count: they are
/// dead, and are only waiting for a parent (possibly an init that never reaps) to collect them.
pub fn group_alive(pid: u32) -> bool {
    group_exists(pid) && libc::pid_t::try_from(pid).is_ok_and(live_member_in_group)
}

/// Scan `/proc` for a non-zombie member of the group (Linux).
fn live_member_in_group(pgid: libc::pid_t) -> bool {
    !live_groups(&[pgid]).is_empty()
}

/// Which of `pgids` have a non-zombie member, from one scan of `/proc` (Linux).
#[cfg(target_os = "linux")]
fn live_groups(pgids: &[libc::pid_t]) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pgids.to_vec();
    };
    let mut live = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the parenthesised command name: state, ppid, pgrp, ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let group = fields.nth(1).and_then(|g| g.parse::<libc::pid_t>().ok());
        if let Some(group) = group
            && pgids.contains(&group)
            && !matches!(state, "Z" | "X")
            && !live.contains(&group)
        {
            live.push(group);
            if live.len() == pgids.len() {
                break;
            }
        }
    }
    live
}

#[cfg(not(target_os = "linux"))]
fn live_groups(pgids: &[libc::pid_t]) -> Vec<libc::pid_t> {
    pgids.to_vec()
}
