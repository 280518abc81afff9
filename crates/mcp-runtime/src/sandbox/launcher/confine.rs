//! The server's side of the fork: a nested user namespace that maps the user's own uid back
//! (so the server is not root over the mounts and cannot undo them), Landlock, then `exec`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

use super::namespaces::{Ids, map_ids};

/// The program to run, and what it may write.
pub(super) struct Server<'a> {
    pub(super) program: &'a OsString,
    pub(super) args: &'a [OsString],
    pub(super) env: &'a [(OsString, OsString)],
    pub(super) ids: Ids,
    pub(super) writable: Vec<&'a PathBuf>,
}

/// Devices a program writes to as a matter of course.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

impl Server<'_> {
    /// Confine this (forked) process and exec the server; returns only on failure, with why.
    pub(super) fn run(&self) -> String {
        // SAFETY: prctl and getppid; the launcher's death must take the server with it.
        unsafe {
            let parent = libc::getppid();
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() != parent
            {
                return "the launcher went away".into();
            }
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                return format!(
                    "cannot create the server's user namespace ({})",
                    std::io::Error::last_os_error()
                );
            }
        }
        if let Err(why) = map_ids(self.ids.uid, 0, self.ids.gid, 0) {
            return why;
        }
        if let Err(why) = self.landlock() {
            return why;
        }
        let error = std::process::Command::new(self.program)
            .args(self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .exec();
        format!("cannot run `{}`: {error}", self.program.to_string_lossy())
    }

    /// Reads anywhere, writes only beneath the writable paths (and to a few devices). The
    /// filesystem rights are required: a kernel without them refuses the sandbox.
    fn landlock(&self) -> Result<(), String> {
        let abi = ABI::V3;
        let fail = |e: landlock::RulesetError| {
            format!(
                "cannot restrict the server with Landlock (Linux 6.2 or later, with Landlock enabled): {e}"
            )
        };
        let devices: Vec<&str> = DEVICES
            .iter()
            .copied()
            .filter(|device| std::path::Path::new(device).exists())
            .collect();
        let status = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|ruleset| {
                // Signals and abstract sockets outside the sandbox, where the kernel has it.
                ruleset
                    .set_compatibility(CompatLevel::BestEffort)
                    .scope(Scope::from_all(ABI::V6))
            })
            .and_then(|ruleset| ruleset.create())
            .and_then(|ruleset| {
                ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
            })
            .and_then(|ruleset| {
                ruleset.add_rules(path_beneath_rules(&self.writable, AccessFs::from_all(abi)))
            })
            .and_then(|ruleset| {
                ruleset.add_rules(path_beneath_rules(
                    devices,
                    AccessFs::ReadFile | AccessFs::WriteFile,
                ))
            })
            .and_then(|ruleset| ruleset.restrict_self())
            .map_err(fail)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("Landlock is not enforced by this kernel".into());
        }
        Ok(())
    }
}
