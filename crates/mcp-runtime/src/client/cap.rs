//! The cap on what one tool result may carry into an agent's context ([`OutputCap`]): past it
//! the result is cut on a content-block and character boundary, the whole result is written
//! to a private file, and the cut result says where.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::model::types::{Content, ToolOutput};
use crate::fsutil::PrivateDir;

/// The cap agent-facing paths use by default, in bytes: about 25,000 tokens at ~4 bytes per
/// token, which is what today's agents allow one tool result before they cut it themselves.
pub const DEFAULT_MAX_OUTPUT: usize = 100_000;

/// The environment variable that sets the cap of agent-facing paths, in bytes (`0`: no cap).
pub const MAX_OUTPUT_VARIABLE: &str = "MCPR_MAX_OUTPUT";

/// Spill files older than this are removed when the next one is written.
const SPILL_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Every spill file's name starts with this and ends with [`SPILL_SUFFIX`]; only such files
/// are ever removed.
const SPILL_PREFIX: &str = "mcpr-output-";

/// The end of every spill file's name.
const SPILL_SUFFIX: &str = ".json";

/// Cap on what a tool result may carry into the conversation.
///
/// A result over `max_bytes` keeps its content blocks in order for as long as they fit; the
/// first one that does not is cut if it is text (on a character boundary, its annotations
/// kept) and left out otherwise, and so are the blocks after it. `structuredContent` is kept
/// whole if it still fits, else left out: no JSON value is ever cut. The whole result (wire
/// format JSON) goes to a file of mode 0600 in `spill_dir`, and a last text block says how much
/// was shown and where the rest is. Spill files older than a day are removed when the next one
/// is written.
///
/// `spill_dir` is created mode 0700, and made 0700 again if it exists. A `spill_dir` that is a
/// symbolic link or belongs to another user is refused: the result is still cut, and the last
/// block says that the whole result could not be kept, and why. The clean-up removes only this
/// user's regular files named as spill files, and follows no link.
///
/// The gateway (`mcpr serve`), sub-agent handles and `Session` apply
/// [`OutputCap::for_agents`] unless told otherwise; a bare [`McpClient`](super::McpClient),
/// the manager and `mcpr call` return results whole.
///
/// ```
/// use mcp_runtime::client::{Content, OutputCap, ToolOutput};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let cap = OutputCap::new(2, dir.path());
/// let output = ToolOutput { content: vec![Content::text("héllo")], ..Default::default() };
/// let cut = cap.apply("mcp_demo_tool", output);
/// // "hé" would be 3 bytes: the cut falls before the "é", never inside it.
/// assert!(cut.text().starts_with("h\n[output truncated: 1 of 6 bytes shown"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputCap {
    /// Most bytes kept: text bytes of text blocks, the JSON of other blocks and of
    /// `structuredContent`.
    pub max_bytes: usize,
    /// Where the whole result is written when it is cut (created 0700 if missing, made 0700
    /// if not; never a symbolic link).
    pub spill_dir: PathBuf,
}

impl OutputCap {
    /// A cap of `max_bytes`, spilling into `spill_dir`.
    pub fn new(max_bytes: usize, spill_dir: impl Into<PathBuf>) -> Self {
        OutputCap {
            max_bytes,
            spill_dir: spill_dir.into(),
        }
    }

    /// The cap of agent-facing paths: [`MAX_OUTPUT_VARIABLE`] bytes if set (`0`: none), else
    /// [`DEFAULT_MAX_OUTPUT`], spilling into [`OutputCap::default_spill_dir`]. An unreadable
    /// value is reported in the log and the default is used.
    pub fn for_agents() -> Option<OutputCap> {
        match Self::from_env() {
            Ok(cap) => cap,
            Err(e) => {
                tracing::warn!("{e}; using the default of {DEFAULT_MAX_OUTPUT} bytes");
                Some(Self::with_limit(DEFAULT_MAX_OUTPUT))
            }
        }
    }

    /// The cap [`MAX_OUTPUT_VARIABLE`] asks for (the default when unset; `None` for `0`), or
    /// why its value is not a number of bytes.
    pub fn from_env() -> Result<Option<OutputCap>, String> {
        match std::env::var(MAX_OUTPUT_VARIABLE) {
            Ok(value) => Self::parse_limit(&value)
                .map(|limit| limit.map(Self::with_limit))
                .map_err(|e| format!("{MAX_OUTPUT_VARIABLE}: {e}")),
            Err(_) => Ok(Some(Self::with_limit(DEFAULT_MAX_OUTPUT))),
        }
    }

    /// A limit as a user writes it: a number of bytes, `0` for none.
    ///
    /// ```
    /// use mcp_runtime::client::OutputCap;
    /// assert_eq!(OutputCap::parse_limit("20000"), Ok(Some(20000)));
    /// assert_eq!(OutputCap::parse_limit("0"), Ok(None));
    /// assert!(OutputCap::parse_limit("lots").is_err());
    /// ```
    pub fn parse_limit(value: &str) -> Result<Option<usize>, String> {
        match value.trim().parse::<usize>() {
            Ok(0) => Ok(None),
            Ok(limit) => Ok(Some(limit)),
            Err(_) => Err(format!(
                "`{}` is not a number of bytes (0 for no cap)",
                value.escape_debug()
            )),
        }
    }

    /// A cap of `max_bytes` spilling into the default directory.
    pub fn with_limit(max_bytes: usize) -> Self {
        Self::new(max_bytes, Self::default_spill_dir().unwrap_or_default())
    }

    /// `$XDG_CACHE_HOME/mcpr/outputs` (default `~/.cache/mcpr/outputs`); `None` when neither
    /// the variable nor a home directory is known.
    pub fn default_spill_dir() -> Option<PathBuf> {
        crate::fsutil::default_cache_dir().map(|dir| dir.join("outputs"))
    }

    /// Cut `output` to the cap, writing the whole of it to a file and saying where in a last
    /// text block. An output within the cap is returned unchanged.
    pub fn apply(&self, tool: &str, mut output: ToolOutput) -> ToolOutput {
        let structured = output.structured_content.as_ref().map(json_size);
        let total = output.content.iter().map(block_size).sum::<usize>() + structured.unwrap_or(0);
        if total <= self.max_bytes {
            return output;
        }
        let spilled = self.spill(tool, &output);
        let mut budget = self.max_bytes;
        let mut kept = Vec::new();
        for block in output.content.drain(..) {
            let size = block_size(&block);
            if size <= budget {
                budget -= size;
                kept.push(block);
                continue;
            }
            if let Content::Text { text, extra } = block {
                let room = budget.saturating_sub(extra_size(&extra));
                let cut = floor_char_boundary(&text, room);
                if cut > 0 {
                    let mut text = text;
                    text.truncate(cut);
                    budget -= cut + extra_size(&extra);
                    kept.push(Content::Text { text, extra });
                }
            }
            break;
        }
        if let Some(size) = structured {
            if size <= budget {
                budget -= size;
            } else {
                output.structured_content = None;
            }
        }
        let shown = self.max_bytes - budget;
        let marker = match spilled {
            Ok(path) => format!(
                "[output truncated: {shown} of {total} bytes shown; the whole result is in {}]",
                path.display()
            ),
            Err(e) => format!(
                "[output truncated: {shown} of {total} bytes shown; the whole result could not be kept: {e}]"
            ),
        };
        kept.push(Content::text(marker));
        output.content = kept;
        output
    }

    /// Write the whole `output` to a new private file; first remove spill files older than
    /// [`SPILL_MAX_AGE`]. The error says why the output could not be kept.
    fn spill(&self, tool: &str, output: &ToolOutput) -> std::io::Result<PathBuf> {
        if self.spill_dir.as_os_str().is_empty() {
            return Err(std::io::Error::other(
                "no cache directory is known (set XDG_CACHE_HOME or HOME)",
            ));
        }
        // Refuses a folder that is a link or someone else's: its clean-up would delete, and
        // its files would land, wherever the link points.
        let dir = PrivateDir::open(&self.spill_dir)?;
        remove_old_spills(&dir);
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let name: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let name = format!(
            "{SPILL_PREFIX}{name}-{}-{:09}-{}{SPILL_SUFFIX}",
            stamp.as_secs(),
            stamp.subsec_nanos(),
            std::process::id()
        );
        let json = serde_json::to_vec_pretty(output).map_err(std::io::Error::other)?;
        let path = dir.path().join(&name);
        dir.create_new(&name)
            .and_then(|mut file| file.write_all(&json))
            .map_err(|e| {
                let shown = crate::fsutil::display_path(&path);
                std::io::Error::new(e.kind(), format!("cannot write {shown}: {e}"))
            })?;
        Ok(path)
    }
}

/// Remove the folder's spill files older than [`SPILL_MAX_AGE`] (best effort): only regular
/// files of this user named as spill files, never through a link.
fn remove_old_spills(dir: &PrivateDir) {
    let Some(limit) = SystemTime::now().checked_sub(SPILL_MAX_AGE) else {
        return;
    };
    dir.remove_files_older_than(limit, |name| {
        name.starts_with(SPILL_PREFIX) && name.ends_with(SPILL_SUFFIX)
    });
}

/// Bytes a block contributes: a text block's text plus its other fields' JSON; any other
/// block's JSON.
fn block_size(block: &Content) -> usize {
    match block {
        Content::Text { text, extra } => text.len() + extra_size(extra),
        other => serde_json::to_vec(other).map_or(0, |json| json.len()),
    }
}

fn extra_size(extra: &Map<String, Value>) -> usize {
    if extra.is_empty() {
        return 0;
    }
    serde_json::to_vec(extra).map_or(0, |json| json.len())
}

fn json_size(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |json| json.len())
}

/// The largest index `<= index` that is a character boundary of `text`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn cap(max_bytes: usize, dir: &Path) -> OutputCap {
        OutputCap::new(max_bytes, dir)
    }

    fn spill_path(output: &ToolOutput) -> PathBuf {
        let text = output.text();
        let path = text
            .rsplit("the whole result is in ")
            .next()
            .unwrap()
            .trim_end_matches(']');
        PathBuf::from(path)
    }

    #[test]
    fn multi_byte_text_is_cut_on_a_character_boundary_and_spilled_whole() {
        let dir = tempfile::tempdir().unwrap();
        // 2, 3 and 4 byte characters: no cut point may fall inside one.
        for (ch, max) in [("é", 11), ("€", 10), ("𝄞", 9), ("𝄞", 5)] {
            let output = ToolOutput {
                content: vec![Content::text(ch.repeat(20))],
                ..ToolOutput::default()
            };
            let cut = cap(max, dir.path()).apply("mcp_x_big", output.clone());
            let Content::Text { text, .. } = &cut.content[0] else {
                panic!("{cut:?}")
            };
            let whole = max / ch.len() * ch.len();
            assert!(
                text.len() <= max && text.len() == whole,
                "{ch} {max}: {text:?}"
            );
            assert!(text.chars().all(|c| c.to_string() == ch), "{text:?}");
            let marker = cut.text();
            assert!(
                marker.contains(&format!("{whole} of {} bytes shown", ch.len() * 20)),
                "{marker}"
            );
            let path = spill_path(&cut);
            let saved: ToolOutput = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert_eq!(saved, output);
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn blocks_and_structured_content_are_never_cut_inside() {
        let dir = tempfile::tempdir().unwrap();
        let annotations = json!({"audience": ["user"], "priority": 0.5});
        let mut first = Map::new();
        first.insert("annotations".into(), annotations.clone());
        let output = ToolOutput {
            content: vec![
                Content::Text {
                    text: "a".repeat(50),
                    extra: first,
                },
                Content::Image {
                    data: "A".repeat(500),
                    mime_type: "image/png".into(),
                    extra: Map::new(),
                },
                Content::text("never shown"),
            ],
            structured_content: Some(json!({"rows": vec!["x"; 100]})),
            ..ToolOutput::default()
        };
        let cut = cap(200, dir.path()).apply("t", output);
        assert_eq!(cut.content.len(), 2, "{cut:?}");
        assert_eq!(cut.content[0].annotations(), Some(&annotations));
        assert!(
            matches!(&cut.content[1], Content::Text { text, .. } if text.contains("output truncated"))
        );
        assert_eq!(
            cut.structured_content, None,
            "a JSON value is kept whole or left out"
        );
    }

    #[test]
    fn small_outputs_are_unchanged_and_old_spills_go() {
        let dir = tempfile::tempdir().unwrap();
        let small = ToolOutput {
            content: vec![Content::text("ok")],
            ..Default::default()
        };
        assert_eq!(cap(10, dir.path()).apply("t", small.clone()), small);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing spilled"
        );

        let old = dir.path().join(format!("{SPILL_PREFIX}old.json"));
        let foreign = dir.path().join("notes.json");
        std::fs::write(&old, "{}").unwrap();
        std::fs::write(&foreign, "{}").unwrap();
        let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 24 * 60 * 60);
        for path in [&old, &foreign] {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(two_days_ago)
                .unwrap();
        }
        let big = ToolOutput {
            content: vec![Content::text("x".repeat(100))],
            ..Default::default()
        };
        let cut = cap(10, dir.path()).apply("t", big);
        assert!(spill_path(&cut).exists());
        assert!(!old.exists(), "an old spill file is removed");
        assert!(foreign.exists(), "only spill files are ever removed");
    }

    fn make_old(path: &Path) {
        let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 24 * 60 * 60);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(two_days_ago)
            .unwrap();
    }

    fn big() -> ToolOutput {
        ToolOutput {
            content: vec![Content::text("x".repeat(100))],
            ..Default::default()
        }
    }

    #[test]
    fn a_spill_folder_that_is_a_link_is_refused_and_nothing_behind_it_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        // The link's target: someone's directory holding an old file named like a spill file.
        let target = dir.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        let victim = target.join(format!("{SPILL_PREFIX}precious{SPILL_SUFFIX}"));
        std::fs::write(&victim, "keep me").unwrap();
        make_old(&victim);
        let link = dir.path().join("outputs");
        std::os::unix::fs::symlink(&target, &link).unwrap();

        let cut = cap(10, &link).apply("t", big());

        assert!(
            victim.exists(),
            "the clean-up deleted a file behind the link"
        );
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            1,
            "nothing written there"
        );
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "the link's target is left as it was");
        let text = cut.text();
        assert!(text.starts_with(&"x".repeat(10)), "{text}");
        assert!(
            text.contains("10 of 100 bytes shown; the whole result could not be kept:")
                && text.contains("outputs is a symbolic link"),
            "{text}"
        );
    }

    #[test]
    fn a_spill_folder_that_is_a_file_is_named_in_the_note() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("outputs");
        std::fs::write(&file, "not a folder").unwrap();
        let text = cap(10, &file).apply("t", big()).text();
        assert!(
            text.contains("the whole result could not be kept: cannot create")
                && text.contains(&*file.to_string_lossy()),
            "{text}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
    }

    #[test]
    fn a_spill_folder_of_another_user_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = dir.path().join("outputs");
        std::fs::create_dir(&outputs).unwrap();
        std::fs::set_permissions(&outputs, std::fs::Permissions::from_mode(0o777)).unwrap();
        // Giving a folder away takes privileges: where the test has none, there is no case.
        const NOBODY: u32 = 65534;
        if std::os::unix::fs::chown(&outputs, Some(NOBODY), None).is_err() {
            eprintln!("not run: cannot give a folder to another user here");
            return;
        }
        let text = cap(10, &outputs).apply("t", big()).text();
        assert!(
            text.contains("the whole result could not be kept:")
                && text.contains("outputs belongs to another user"),
            "{text}"
        );
        assert_eq!(std::fs::read_dir(&outputs).unwrap().count(), 0);
        let mode = std::fs::metadata(&outputs).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o777, "someone else's folder is not changed");
    }

    #[test]
    fn an_existing_spill_folder_is_made_private_again() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = dir.path().join("outputs");
        std::fs::create_dir(&outputs).unwrap();
        std::fs::set_permissions(&outputs, std::fs::Permissions::from_mode(0o755)).unwrap();

        let cut = cap(10, &outputs).apply("t", big());

        let mode = std::fs::metadata(&outputs).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(spill_path(&cut).starts_with(&outputs), "{}", cut.text());

        // A new folder is private from the start.
        let fresh = dir.path().join("new/outputs");
        cap(10, &fresh).apply("t", big());
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn the_clean_up_removes_only_old_regular_spill_files_and_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = dir.path().join("outputs");
        std::fs::create_dir(&outputs).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let victim = elsewhere.join("notes.json");
        std::fs::write(&victim, "keep me").unwrap();
        make_old(&victim);
        // An entry named like a spill file that is a link to a file elsewhere, and one that is
        // a directory holding an old spill-named file.
        let linked = outputs.join(format!("{SPILL_PREFIX}link{SPILL_SUFFIX}"));
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        let subdir = outputs.join(format!("{SPILL_PREFIX}dir{SPILL_SUFFIX}"));
        std::fs::create_dir(&subdir).unwrap();
        let inside = subdir.join(format!("{SPILL_PREFIX}inside{SPILL_SUFFIX}"));
        std::fs::write(&inside, "{}").unwrap();
        make_old(&inside);
        let old = outputs.join(format!("{SPILL_PREFIX}old{SPILL_SUFFIX}"));
        std::fs::write(&old, "{}").unwrap();
        make_old(&old);

        cap(10, &outputs).apply("t", big());

        assert!(!old.exists(), "an old spill file is removed");
        assert!(victim.exists(), "a link's target is never removed");
        assert!(
            std::fs::symlink_metadata(&linked).is_ok(),
            "a link is not a spill file"
        );
        assert!(
            inside.exists() && subdir.is_dir(),
            "directories are left alone"
        );
    }
}
