//! The sandbox on the command line: `mcpr add --sandbox` and its path and domain flags, and the
//! rows `mcpr get` shows for a sandboxed server.

use std::path::{Path, PathBuf};

use mcp_runtime::sandbox::SandboxPolicy;

/// The sandbox flags of `mcpr add` (VS Code's `sandboxEnabled` and `sandbox` keys).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct SandboxArgs {
    /// Run the stdio server in a sandbox (Linux): it reads everything but the `--deny-read`
    /// paths, writes only to the `--allow-write` paths and a private TMPDIR, and has no
    /// network unless `--allow-domain` names hosts.
    #[arg(long)]
    pub sandbox: bool,
    /// With `--sandbox`: a directory or file the server may write (repeatable).
    #[arg(long = "allow-write", value_name = "PATH", requires = "sandbox")]
    pub allow_write: Vec<String>,
    /// With `--sandbox`: a directory or file hidden from the server (repeatable).
    #[arg(long = "deny-read", value_name = "PATH", requires = "sandbox")]
    pub deny_read: Vec<String>,
    /// With `--sandbox`: a path kept read-only even inside `--allow-write` (repeatable).
    #[arg(long = "deny-write", value_name = "PATH", requires = "sandbox")]
    pub deny_write: Vec<String>,
    /// With `--sandbox`: a host the server may reach through mcpr's proxy, `*.example.com`
    /// for its subdomains (repeatable).
    #[arg(long = "allow-domain", value_name = "HOST", requires = "sandbox")]
    pub allow_domain: Vec<String>,
    /// With `--sandbox`: a host never reached, even when `--allow-domain` matches it
    /// (repeatable).
    #[arg(long = "deny-domain", value_name = "HOST", requires = "sandbox")]
    pub deny_domain: Vec<String>,
}

impl SandboxArgs {
    /// The policy the flags ask for; relative paths are taken from `cwd`, `~` is kept for
    /// discovery to expand.
    pub(crate) fn policy(&self, cwd: &Path) -> Option<SandboxPolicy> {
        let paths = |list: &[String]| -> Vec<PathBuf> {
            list.iter()
                .map(|path| {
                    let path = Path::new(path);
                    if path.is_absolute() || path.starts_with("~") || path.starts_with("${") {
                        path.to_owned()
                    } else {
                        cwd.join(path)
                    }
                })
                .collect()
        };
        self.sandbox.then(|| SandboxPolicy {
            allow_write: paths(&self.allow_write),
            deny_read: paths(&self.deny_read),
            deny_write: paths(&self.deny_write),
            allowed_domains: self.allow_domain.clone(),
            denied_domains: self.deny_domain.clone(),
        })
    }
}

/// What `mcpr get` shows of a sandbox, one row per rule.
pub(crate) fn rows(policy: &SandboxPolicy) -> Vec<(&'static str, String)> {
    let list = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut rows = vec![(
        "sandbox",
        format!(
            "on; writes only to a private TMPDIR{}",
            if policy.allow_write.is_empty() {
                String::new()
            } else {
                format!(" and {}", list(&policy.allow_write))
            }
        ),
    )];
    if !policy.deny_read.is_empty() {
        rows.push(("sandbox", format!("hidden: {}", list(&policy.deny_read))));
    }
    if !policy.deny_write.is_empty() {
        rows.push((
            "sandbox",
            format!("read-only: {}", list(&policy.deny_write)),
        ));
    }
    let network = if policy.allowed_domains.is_empty() {
        "network: none".to_owned()
    } else {
        format!("network: {}", policy.allowed_domains.join(", "))
    };
    rows.push(("sandbox", network));
    if !policy.denied_domains.is_empty() {
        rows.push((
            "sandbox",
            format!("denied: {}", policy.denied_domains.join(", ")),
        ));
    }
    rows
}
