//! The second step of discovery: definitions → servers. Expands each definition (recording
//! the files it reads and runs, which trust binds to), then claims names in priority order,
//! applies trust and enablement, and builds the [`Discovery`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::super::expand::{self, Context, FileReads};
use super::super::providers::{Ctx, RawEntry};
use super::super::trust::{
    ProjectTrust, ProjectTrustState, executable_identity, identities, is_in_project, loaded_paths,
    run_files, working_dirs,
};
use super::super::{ConfigError, ServerConfig, StdioConfig, Transport, server_from_json};
use super::itself;
use super::scan::{Origin, Scan};
use super::{
    DiscoveredServer, Discovery, DiscoveryOptions, Level, PendingReason, ServerSource, ServerState,
    Warning,
};

/// Files that trust binds to, each with what it is bound by (its bytes, or an identity).
pub(super) type BoundFiles = Vec<(PathBuf, Vec<u8>)>;

/// A definition (with the files it reads) before trust is decided.
pub(super) struct Prepared {
    origin: Origin,
    entry: RawEntry,
    /// From a file of the project itself (not trusted by its location).
    in_project: bool,
    structural: Result<ServerConfig, ConfigError>,
    /// The expanded config, for valid definitions.
    expanded: Option<Result<ServerConfig, ConfigError>>,
    /// Every file its values read.
    reads: Vec<PathBuf>,
    /// For a definition outside the project: the files it reads inside the project.
    project_reads: Vec<PathBuf>,
    /// The files inside the project it would run, and the files and directories its loader
    /// variables make it load code from.
    runs: Vec<PathBuf>,
    /// It runs mcpr's gateway over the configs being read (see [`super::itself`]).
    starts_itself: bool,
}

/// Validate and expand every definition, recording the files each reads and, for a local
/// server, the files inside the project it would run. Returns the definitions, the project
/// files (read or run) that the project's trust binds to besides its config files, and which of
/// them are read (as text, not run).
pub(super) fn prepare(
    scan: &mut Scan<'_>,
    options: &DiscoveryOptions,
    homes: &[&Path],
) -> (Vec<Prepared>, BoundFiles, Vec<PathBuf>) {
    let entries = std::mem::take(&mut scan.entries);
    let mut prepared: Vec<Prepared> = Vec::new();
    let mut extra: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut read: Vec<PathBuf> = Vec::new();
    // A relative program or `cwd` is resolved by the spawn against the process's directory.
    let process_cwd = std::env::current_dir().ok();
    for (origin, entry) in entries {
        if entry.level == Level::Project && !options.enable_project_config {
            continue;
        }
        let in_project = entry.level == Level::Project && !entry.trusted_location;
        let structural =
            server_from_json(&entry.name, &entry.value).map_err(|e| e.in_file(&entry.path));
        let reads = FileReads::new();
        let expanded = structural.as_ref().ok().map(|cfg| {
            let expand_cx = Context {
                env: scan.cx.env,
                home: scan.cx.home,
                workspace: Some(scan.cx.cwd),
                config_dir: entry.path.parent(),
                // A user's file names its `envFile` relative to itself, never to wherever mcpr
                // runs (which may be a cloned repository).
                env_file_dir: in_project.then_some(scan.cx.cwd),
                inputs: entry.inputs.as_deref(),
                reads: Some(&reads),
            };
            expand::expand_server(
                &entry.name,
                cfg,
                entry.syntax,
                entry.env_file.as_deref(),
                &expand_cx,
            )
            .map_err(|e| e.in_file(&entry.path))
        });
        let reads = reads.take();
        let mut project_reads = Vec::new();
        for (path, bytes) in &reads {
            let from_project = is_in_project(path, &scan.cx, homes);
            if from_project && !in_project {
                project_reads.push(path.clone());
            }
            if (in_project || from_project) && !extra.iter().any(|(p, _)| p == path) {
                extra.push((path.clone(), bytes.clone()));
                read.push(path.clone());
            }
        }
        let (runs, bound) = match &expanded {
            Some(Ok(ServerConfig {
                transport: Transport::Stdio(stdio),
                ..
            })) => project_code(stdio, &scan.cx, process_cwd.as_deref(), homes),
            _ => (Vec::new(), Vec::new()),
        };
        let starts_itself = match &expanded {
            Some(Ok(ServerConfig {
                transport: Transport::Stdio(stdio),
                ..
            })) => itself::starts_gateway_over_same_configs(
                stdio,
                &entry.path,
                &scan.cx,
                process_cwd.as_deref(),
            ),
            _ => false,
        };
        for (path, identity) in bound {
            if !extra.iter().any(|(p, _)| *p == path) {
                extra.push((path, identity));
            }
        }
        prepared.push(Prepared {
            origin,
            entry,
            in_project,
            structural,
            expanded,
            reads: reads.into_iter().map(|(p, _)| p).collect(),
            project_reads,
            runs,
            starts_itself,
        });
    }

    (prepared, extra, read)
}

/// What starting `stdio` runs or loads from the project: its program, its interpreter's script
/// and that script's flag files, and what its loader variables (`NODE_OPTIONS`, `PYTHONPATH`,
/// ...) name. Returns those paths, and what trust binds to for them: each file's identity, and
/// for a directory its files' (or its listing's, past the bounds).
fn project_code(
    stdio: &StdioConfig,
    cx: &Ctx<'_>,
    process_cwd: Option<&Path>,
    homes: &[&Path],
) -> (Vec<PathBuf>, Vec<(PathBuf, Vec<u8>)>) {
    let mut runs: Vec<PathBuf> = Vec::new();
    let mut bound: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for path in run_files(stdio, cx, process_cwd) {
        if is_in_project(&path, cx, homes) {
            bound.extend(executable_identity(&path).map(|identity| (path.clone(), identity)));
            runs.push(path);
        }
    }
    let dirs = working_dirs(stdio, cx, process_cwd);
    for loaded in loaded_paths(&stdio.env, &dirs) {
        if is_in_project(&loaded.path, cx, homes) && !runs.contains(&loaded.path) {
            bound.extend(identities(&loaded.path, loaded.nested));
            runs.push(loaded.path);
        }
    }
    (runs, bound)
}

/// Decide each definition in priority order: the first trusted definition of a name claims
/// it (later ones are shadowed); an untrusted one waits without claiming; the claimant is then
/// enabled or not (mcpr's lists, its own `enabled`, its host's rejection) and expanded.
pub(super) fn merge(
    cwd: PathBuf,
    project: ProjectTrust,
    scan: Scan<'_>,
    prepared: Vec<Prepared>,
) -> Discovery {
    let Scan {
        mut warnings,
        lists,
        approvals,
        ..
    } = scan;
    let mut result = Discovery {
        cwd,
        configs: IndexMap::new(),
        sources: IndexMap::new(),
        servers: Vec::new(),
        errors: IndexMap::new(),
        warnings: Vec::new(),
        project,
        failure: None,
    };
    let mut claimed: HashMap<String, usize> = HashMap::new();

    for Prepared {
        origin,
        entry,
        in_project,
        structural,
        expanded,
        reads,
        project_reads,
        runs,
        starts_itself,
    } in prepared
    {
        let source = ServerSource {
            provider_id: origin.id.to_owned(),
            provider_name: origin.name.to_owned(),
            path: entry.path.clone(),
            level: entry.level,
        };
        if let Err(err) = &structural {
            warnings.push(Warning {
                file: Some(entry.path.clone()),
                line: entry.position.map(|p| p.0),
                column: entry.position.map(|p| p.1),
                server: Some(entry.name.clone()),
                message: short_reason(err),
            });
        }
        let host = origin.provider.map(|i| &approvals[i]);
        let host_denied = in_project && host.is_some_and(|a| a.disabled.contains(&entry.name));
        // Trust binds per file: a definition is held when its own config file, or a project
        // file it reads or runs, is untrusted or changed since the project was trusted.
        let project_files = project_reads.iter().chain(&runs).map(PathBuf::as_path);
        // A value read from an untrusted project never reaches a server, and no file of it runs,
        // whoever's file names it.
        let reads_untrusted = (!project_reads.is_empty() || !runs.is_empty())
            && !result.project.allows(project_files);
        let trusted = if in_project {
            let own = std::iter::once(entry.path.as_path())
                .chain(reads.iter().map(PathBuf::as_path))
                .chain(runs.iter().map(PathBuf::as_path));
            result.project.allows(own) || host.is_some_and(|a| a.approves(&entry.name))
        } else {
            !reads_untrusted
        };
        let pending_reason = (!trusted)
            .then(|| {
                let concerned: Vec<PathBuf> = if in_project { &reads } else { &project_reads }
                    .iter()
                    .chain(&runs)
                    .cloned()
                    .collect();
                let outside = reads_untrusted.then(|| {
                    if runs.is_empty() {
                        PendingReason::ReadsProject(project_reads.clone())
                    } else {
                        PendingReason::RunsProject(runs.clone())
                    }
                });
                pending_reason(&result.project, &entry.path, &concerned, outside)
            })
            .flatten();
        let mut shown = DiscoveredServer {
            name: entry.name.clone(),
            source: source.clone(),
            state: ServerState::Enabled,
            config: structural.as_ref().ok().cloned(),
            line: entry.position.map(|p| p.0),
            column: entry.position.map(|p| p.1),
            trusted,
            reads,
            runs,
            pending_reason,
        };
        // Every valid definition was expanded above; `None` cannot occur for one.
        let mut expanded = expanded;
        let mut expand = |_: &ServerConfig| {
            expanded
                .take()
                .unwrap_or_else(|| Err(ConfigError::invalid(&entry.name, "", "not expanded")))
        };

        if !trusted {
            // An entry that cannot be read says so whoever trusts it: approving it would not
            // make it start.
            if let Err(err) = &structural {
                shown.state = ServerState::Invalid(short_reason(err));
                shown.pending_reason = None;
                result.servers.push(shown);
                continue;
            }
            shown.state = if host_denied && !lists.enabled.contains(&entry.name) {
                ServerState::Disabled
            } else {
                ServerState::PendingApproval
            };
            result.servers.push(shown);
            continue;
        }
        if let Some(&winner) = claimed.get(&entry.name) {
            shown.state = ServerState::Shadowed {
                by: result.servers[winner].source.provider_name.clone(),
            };
            result.servers.push(shown);
            continue;
        }
        claimed.insert(entry.name.clone(), result.servers.len());
        match structural {
            Err(err) => {
                shown.state = ServerState::Invalid(short_reason(&err));
                result.errors.insert(entry.name.clone(), err);
            }
            Ok(cfg) => {
                let enabled = if lists.disabled.contains(&entry.name) {
                    false
                } else if lists.enabled.contains(&entry.name) {
                    true
                } else {
                    cfg.enabled && !host_denied
                };
                if !enabled {
                    shown.state = ServerState::Disabled;
                } else if starts_itself {
                    shown.state = ServerState::StartsItself;
                } else {
                    match expand(&cfg) {
                        Ok(mut expanded) => {
                            expanded.enabled = true;
                            result.configs.insert(entry.name.clone(), expanded);
                            result.sources.insert(entry.name.clone(), source);
                        }
                        Err(err) => {
                            warnings.push(Warning {
                                file: Some(entry.path.clone()),
                                line: shown.line,
                                column: shown.column,
                                server: Some(entry.name.clone()),
                                message: short_reason(&err),
                            });
                            shown.state = ServerState::Invalid(short_reason(&err));
                            result.errors.insert(entry.name.clone(), err);
                        }
                    }
                }
            }
        }
        result.servers.push(shown);
    }
    result.warnings = warnings;
    result
}

/// The reason a definition waits, when it can name files: those of its files that changed since
/// the project was trusted (a directory it loads code from stands for the files under it), else
/// the project files it reads from outside the project.
fn pending_reason(
    project: &ProjectTrust,
    config: &Path,
    reads: &[PathBuf],
    outside: Option<PendingReason>,
) -> Option<PendingReason> {
    if project.state == ProjectTrustState::Changed {
        let mut changed: Vec<PathBuf> = Vec::new();
        for concerned in std::iter::once(config).chain(reads.iter().map(PathBuf::as_path)) {
            for file in project.changed.iter().filter(|c| c.starts_with(concerned)) {
                if !changed.contains(file) {
                    changed.push(file.clone());
                }
            }
        }
        if !changed.is_empty() {
            return Some(PendingReason::Changed(changed));
        }
    }
    outside
}

/// The reason of a per-server error without the file (shown next to the file anyway).
fn short_reason(err: &ConfigError) -> String {
    match err {
        ConfigError::Invalid { field, message, .. } if field.is_empty() => message.clone(),
        ConfigError::Invalid { field, message, .. } => format!("field `{field}`: {message}"),
        other => other.to_string(),
    }
}
