//! The first step of discovery: files → definitions. Reads `--config` files and each
//! provider's files by priority, parses them (with positions for warnings), and collects the
//! raw definitions, the project's config files (which its trust binds to), mcpr's own
//! enable/disable lists and each host's approvals. Nothing is expanded or trusted here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::super::formats::{self, Format};
use super::super::providers::{
    self, Approvals, Ctx, Doc, Lists, Note, Out, PROVIDERS, RawEntry, explicit,
};
use super::{DiscoveryOptions, Level, Warning};

/// The largest config file read (user configs such as `~/.claude.json` also keep history).
const MAX_CONFIG_FILE: u64 = 64 * 1024 * 1024;

/// Which provider an entry came from.
#[derive(Clone, Copy)]
pub(super) struct Origin {
    pub id: &'static str,
    pub name: &'static str,
    /// Index into `PROVIDERS` (for approvals); `None` for `--config`.
    pub provider: Option<usize>,
}

/// What reading the files gave: the definitions in priority order, and what came with them.
pub(super) struct Scan<'a> {
    pub cx: Ctx<'a>,
    /// Problems met so far (unreadable or broken files, providers' notes).
    pub warnings: Vec<Warning>,
    /// Files read already (canonical), so that a file named twice is read once.
    seen: HashSet<PathBuf>,
    /// The project's config files and their bytes, which its trust binds to.
    pub project_files: Vec<(PathBuf, Vec<u8>)>,
    /// mcpr's `enabledServers` / `disabledServers`.
    pub lists: Lists,
    /// Every definition, highest priority first.
    pub entries: Vec<(Origin, RawEntry)>,
    /// Each provider's approvals of project servers (index as `PROVIDERS`).
    pub approvals: Vec<Approvals>,
}

impl Scan<'_> {
    fn warn(
        &mut self,
        file: &Path,
        position: Option<(usize, usize)>,
        server: Option<String>,
        message: String,
    ) {
        let warning = Warning {
            file: Some(file.to_owned()),
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            server,
            message,
        };
        // A file read twice (Codex's config gives both servers and project approvals) is
        // still one problem: a broken file is reported once.
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    fn notes(&mut self, file: &Path, notes: Vec<Note>) {
        for note in notes {
            self.warn(file, note.position, note.server, note.message);
        }
    }

    /// Read and parse one file; `None` when absent, already read, or broken (then warned).
    fn read(
        &mut self,
        path: &Path,
        format: Format,
        level: Level,
        parse: &dyn Fn(&Ctx<'_>, &Doc<'_>, &mut Out),
    ) -> Option<Out> {
        let bytes = match crate::fsutil::read_regular(path, MAX_CONFIG_FILE) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => return None,
            Err(e) => {
                self.warn(path, None, None, format!("cannot read: {e}"));
                return None;
            }
        };
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        if !self.seen.insert(canonical) {
            return None;
        }
        if level == Level::Project {
            self.project_files.push((path.to_owned(), bytes.clone()));
        }
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let (line, column) = formats::line_col(
                    &String::from_utf8_lossy(e.as_bytes()),
                    e.utf8_error().valid_up_to(),
                );
                self.warn(path, Some((line, column)), None, "not valid UTF-8".into());
                return None;
            }
        };
        let value = match formats::parse(&text, format) {
            Ok(value) => value,
            Err(e) => {
                self.warn(path, Some((e.line, e.column)), None, e.message);
                return None;
            }
        };
        let doc = Doc {
            path,
            text: &text,
            value: &value,
            level,
        };
        let mut out = Out::default();
        parse(&self.cx, &doc, &mut out);
        let notes = std::mem::take(&mut out.notes);
        self.notes(path, notes);
        Some(out)
    }
}

/// Read `--config` files, then every provider's files by priority (project files before user
/// files inside a provider), into a [`Scan`]. A file that is absent is skipped; one that cannot
/// be read or parsed is a warning naming it, and the rest goes on.
pub(super) fn scan<'a>(cx: Ctx<'a>, options: &DiscoveryOptions) -> Scan<'a> {
    let mut scan = Scan {
        cx,
        warnings: Vec::new(),
        seen: HashSet::new(),
        project_files: Vec::new(),
        lists: Lists::default(),
        entries: Vec::new(),
        approvals: vec![Approvals::default(); PROVIDERS.len()],
    };

    for path in &options.explicit_files {
        let origin = Origin {
            id: explicit::ID,
            name: explicit::NAME,
            provider: None,
        };
        if !path.exists() {
            scan.warn(
                path,
                None,
                None,
                "no such file (named with --config)".into(),
            );
            continue;
        }
        if let Some(out) = scan.read(path, Format::for_path(path), Level::User, &explicit::parse) {
            scan.entries
                .extend(out.entries.into_iter().map(|e| (origin, e)));
        }
    }

    if !options.strict {
        // A project file that is also some provider's user file (the project is the home
        // directory) is read once, as the user's.
        let user_paths: HashSet<PathBuf> = PROVIDERS
            .iter()
            .flat_map(|p| (p.files)(&scan.cx))
            .filter(|spec| spec.level == Level::User)
            .map(|spec| std::fs::canonicalize(&spec.path).unwrap_or(spec.path))
            .collect();
        for (index, provider) in PROVIDERS.iter().enumerate() {
            let origin = Origin {
                id: provider.id,
                name: provider.name,
                provider: Some(index),
            };
            if options.enable_project_config {
                let mut notes = Vec::new();
                scan.approvals[index] = (provider.approvals)(&scan.cx, &mut notes);
                for (file, note) in notes {
                    scan.notes(&file, vec![note]);
                }
            }
            let mut found: Vec<RawEntry> = Vec::new();
            for spec in (provider.files)(&scan.cx) {
                if spec.level == Level::Project {
                    if !options.enable_project_config {
                        continue;
                    }
                    let canonical =
                        std::fs::canonicalize(&spec.path).unwrap_or_else(|_| spec.path.clone());
                    if user_paths.contains(&canonical) {
                        continue;
                    }
                }
                if let Some(out) = scan.read(&spec.path, spec.format, spec.level, &provider.parse) {
                    if let Some(lists) = out.lists
                        && provider.id == providers::mcpr::PROVIDER.id
                    {
                        scan.lists = lists;
                    }
                    found.extend(out.entries);
                }
            }
            found.sort_by_key(|e| e.rank);
            scan.entries.extend(found.into_iter().map(|e| (origin, e)));
        }
    }
    scan
}
