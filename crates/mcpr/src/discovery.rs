//! Which servers a command works on: every AI tool's config (plus `--config` files), as
//! discovered by mcp-runtime. Problems are printed once, with file, line and column, and once
//! per change of their config ([`crate::seen_problems`]); after that a line counts them.
//! `--quiet` prints none of them.

use std::path::PathBuf;

use mcp_runtime::fsutil::display_path;

use mcp_runtime::config::{
    DiscoveredServer, Discovery, DiscoveryOptions, PendingReason, ServerState, Warning,
    load_all_mcp_configs,
};

use mcp_runtime::manager::McpManager;

use crate::exit::Failure;
use crate::flags::GlobalArgs;

/// The global flags that shape discovery (`--cwd`, `--config`, `--strict-config`,
/// `--no-project`, `--trust-project`), so that every command builds its options the same way.
#[derive(Debug, Clone, Default)]
pub(crate) struct CliFlags {
    /// `--cwd DIR`.
    pub cwd: Option<PathBuf>,
    /// `--config FILE` (repeatable).
    pub config: Vec<PathBuf>,
    /// `--strict-config`: `--config` files only.
    pub strict_config: bool,
    /// `--no-project`: ignore project-level config.
    pub no_project: bool,
    /// `--trust-project`: trust the project for this run.
    pub trust_project: bool,
}

impl From<&GlobalArgs> for CliFlags {
    fn from(global: &GlobalArgs) -> CliFlags {
        CliFlags {
            cwd: global.cwd.clone(),
            config: global.config.clone(),
            strict_config: global.strict_config,
            no_project: global.no_project,
            trust_project: global.trust_project,
        }
    }
}

impl CliFlags {
    /// The project directory: `--cwd` made absolute, else the process's.
    pub(crate) fn cwd(&self) -> PathBuf {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        match &self.cwd {
            Some(dir) => base.join(dir),
            None => base,
        }
    }

    /// Discovery options for these flags (process environment, default home and trust store).
    pub(crate) fn options(&self) -> DiscoveryOptions {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        DiscoveryOptions::default()
            .with_explicit_files(self.config.iter().map(|f| base.join(f)).collect())
            .with_strict(self.strict_config)
            .with_enable_project_config(!self.no_project)
            .with_trust_project(self.trust_project)
    }

    /// Run discovery with these flags.
    pub(crate) fn discover(&self) -> Discovery {
        load_all_mcp_configs(&self.cwd(), &self.options())
    }
}

/// Discover the configured servers, printing warnings and per-server errors on stderr. A
/// failure of discovery as a whole is a config error.
pub(crate) fn discover(global: &GlobalArgs) -> Result<Discovery, Failure> {
    let discovery = CliFlags::from(global).discover();
    if let Some(failure) = &discovery.failure {
        return Err(Failure::usage(format!(
            "{}: {}",
            failure.path, failure.error
        )));
    }
    crate::logging::add_secrets(discovery.configs.values().flat_map(|c| c.secret_values()));
    // `--quiet`: the command reports the errors of its own servers, nothing else.
    if global.quiet {
        return Ok(discovery);
    }
    report_problems(&discovery);
    let pending: Vec<String> = discovery
        .pending()
        .map(|s| match pending_detail(s) {
            Some(detail) => format!("{} ({detail})", s.name),
            None => s.name.clone(),
        })
        .collect();
    if !pending.is_empty() {
        eprintln!(
            "note: servers pending approval (run `mcpr trust` or pass --trust-project): {}",
            crate::term::line(&pending.join(", "))
        );
    }
    for server in discovery
        .servers
        .iter()
        .filter(|s| s.state == ServerState::StartsItself)
    {
        eprintln!(
            "note: skipped {} ({}): it runs `mcpr serve` over these same configs, which would \
             start itself again (a gateway in front of chosen servers takes `--strict-config \
             --config FILE`)",
            crate::term::line(&server.name),
            crate::term::line(&display_path(&server.source.path)),
        );
    }
    Ok(discovery)
}

/// Like [`discover`], but having no server to work on is a usage error.
pub(crate) fn discover_some(global: &GlobalArgs) -> Result<Discovery, Failure> {
    let discovery = discover(global)?;
    if discovery.configs.is_empty() {
        return Err(Failure::usage(
            "no MCP servers configured; add one with `mcpr add NAME CMD ARGS...`, or try one \
             without a config file: `mcpr tools -- CMD ARGS...` (see also `mcpr list --all`)",
        ));
    }
    Ok(discovery)
}

/// The config files that gave `manager`'s running servers and now fail to parse and give no
/// server at all, as one line for a message; `None` when there are none. A reload from such a
/// file would stop its servers for a typo (or a save half done), so a reload waits until it
/// parses again.
pub(crate) fn broken_sources(found: &Discovery, manager: &McpManager) -> Option<String> {
    let mut broken: Vec<PathBuf> = manager
        .reports()
        .into_iter()
        .filter_map(|report| report.path)
        .filter(|file| {
            let unparsed = found
                .warnings
                .iter()
                .any(|w| w.server.is_none() && w.line.is_some() && w.file.as_ref() == Some(file));
            unparsed && !found.servers.iter().any(|s| s.source.path == *file)
        })
        .collect();
    broken.sort();
    broken.dedup();
    let files: Vec<String> = broken.iter().map(|f| display_path(f)).collect();
    (!files.is_empty()).then(|| crate::term::line(&files.join(", ")).into_owned())
}

/// The failure of a command that names `name`, which is not among the servers discovery would
/// start: why, when a config defines it (a problem of its config is told here even when the
/// warnings were not shown: `--quiet`, or shown before), else the names there are.
pub(crate) fn not_enabled(found: &Discovery, name: &str) -> Failure {
    if found.errors.contains_key(name) || found.winner(name).is_some() {
        return Failure::usage(format!(
            "server `{name}` cannot start: {}",
            why_not_started(found, name)
        ));
    }
    let names: Vec<&str> = found.configs.keys().map(String::as_str).collect();
    Failure::usage(format!(
        "no enabled server named `{name}` (configured: {})",
        names.join(", ")
    ))
}

/// Why `name` is not among the servers discovery would start: its config error, its state
/// (with what to do when it waits for the project's trust), or that nothing configures it.
pub(crate) fn why_not_started(found: &Discovery, name: &str) -> String {
    if let Some(error) = found.errors.get(name) {
        return error.to_string();
    }
    match found.winner(name) {
        Some(server) if server.state == ServerState::PendingApproval => {
            match pending_detail(server) {
                Some(detail) => format!("it waits for approval: {detail} (run `mcpr trust`)"),
                None => "it comes from the project's config, which is not trusted yet (run `mcpr trust`)"
                    .into(),
            }
        }
        Some(server) => server.state.to_string(),
        None => "not configured".into(),
    }
}

/// Why a pending server waits, naming the files concerned, when discovery knows more than "the
/// project is not trusted".
pub(crate) fn pending_detail(server: &DiscoveredServer) -> Option<String> {
    let reason = server.pending_reason.as_ref()?;
    let files: Vec<String> = reason.files().iter().map(|f| display_path(f)).collect();
    Some(match reason {
        PendingReason::Changed(_) => {
            format!("{} changed since the project was trusted", files.join(", "))
        }
        PendingReason::ReadsProject(_) => {
            format!("reads {} from the untrusted project", files.join(", "))
        }
        PendingReason::RunsProject(_) => {
            format!("runs {} from the untrusted project", files.join(", "))
        }
        _ => format!("depends on {} from the untrusted project", files.join(", ")),
    })
}

/// A problem of the configs as printed: its text, and the server and file it is about.
struct Problem {
    text: String,
    server: Option<String>,
    file: Option<PathBuf>,
}

/// Every problem of `found` once: its warnings (with file, line and column), then the errors
/// of servers that no warning tells already.
fn problems(found: &Discovery) -> Vec<Problem> {
    let mut problems: Vec<Problem> = found
        .warnings
        .iter()
        .map(|warning| Problem {
            text: shorten_warning(warning),
            server: warning.server.clone(),
            file: warning.file.clone(),
        })
        .collect();
    for (name, error) in &found.errors {
        let message = error.to_string();
        let warned = found
            .warnings
            .iter()
            .any(|w| w.server.as_deref() == Some(name.as_str()) && message.contains(&w.message));
        if !warned {
            problems.push(Problem {
                text: message,
                server: Some(name.clone()),
                file: found.sources.get(name).map(|s| s.path.clone()),
            });
        }
    }
    problems
}

/// Print the configs' problems on stderr: each one the first time since its file changed
/// (see [`crate::seen_problems`]), and a count of those shown before, so that every command
/// does not repeat the same warnings about servers it does not use.
fn report_problems(found: &Discovery) {
    let problems = problems(found);
    if problems.is_empty() {
        return;
    }
    let mut seen = crate::seen_problems::SeenProblems::load();
    let mut shown_before: Vec<&Problem> = Vec::new();
    for problem in &problems {
        if seen.first_time(&problem.text, problem.file.as_deref()) {
            eprintln!("warning: {}", crate::term::line(&problem.text));
        } else {
            shown_before.push(problem);
        }
    }
    seen.save();
    if let Some(count) = count_line(&shown_before) {
        eprintln!("note: {count}: `mcpr servers --all`");
    }
}

/// "2 servers have config problems" (or "2 servers and 1 file…") for problems shown before;
/// `None` when there are none.
fn count_line(problems: &[&Problem]) -> Option<String> {
    if problems.is_empty() {
        return None;
    }
    let mut servers: Vec<&str> = problems
        .iter()
        .filter_map(|p| p.server.as_deref())
        .collect();
    servers.sort_unstable();
    servers.dedup();
    let mut files: Vec<Option<&PathBuf>> = problems
        .iter()
        .filter(|p| p.server.is_none())
        .map(|p| p.file.as_ref())
        .collect();
    files.sort_unstable();
    files.dedup();
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let what = match (servers.len(), files.len()) {
        (s, 0) => count(s, "server", "servers"),
        (0, f) => count(f, "file", "files"),
        (s, f) => format!(
            "{} and {}",
            count(s, "server", "servers"),
            count(f, "file", "files")
        ),
    };
    let have = if servers.len() + files.len() == 1 {
        "has"
    } else {
        "have"
    };
    Some(format!("{what} {have} config problems"))
}

/// Print discovery warnings on stderr, every one: for the commands asked about the configs
/// themselves (`mcpr servers`, `mcpr trust`).
pub(crate) fn print_warnings(found: &Discovery) {
    for warning in &found.warnings {
        eprintln!("warning: {}", crate::term::line(&shorten_warning(warning)));
    }
}

fn shorten_warning(warning: &Warning) -> String {
    let mut shown = warning.clone();
    shown.file = shown.file.map(|f| display_path(&f).into());
    shown.to_string()
}
