//! The cap on what one tool result may carry into an agent's context ([`OutputCap`]): past it
//! the result is cut on a content-block and character boundary, the whole result is written
//! to a private file, and the cut result says where.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::{Content, ToolOutput};

/// The cap agent-facing paths use by default, in bytes: about 25,000 tokens at ~4 bytes per
/// token, which is what today's agents allow one tool result before they cut it themselves.
pub const DEFAULT_MAX_OUTPUT: usize = 100_000;

/// The environment variable that sets the cap of agent-facing paths, in bytes (`0`: no cap).
pub const MAX_OUTPUT_VARIABLE: &str = "MCPR_MAX_OUTPUT";

/// Spill files older than this are removed when the next one is written.
const SPILL_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Every spill file's name starts with this; only such files are ever removed.
const SPILL_PREFIX: &str = "mcpr-output-";

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
    /// Where the whole result is written when it is cut (created 0700 if missing).
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
                "[output truncated: {shown} of {total} bytes shown; the rest could not be saved: {e}]"
            ),
        };
        kept.push(Content::text(marker));
        output.content = kept;
        output
    }

    /// Write the whole `output` to a new private file; first remove spill files older than
    /// [`SPILL_MAX_AGE`].
    fn spill(&self, tool: &str, output: &ToolOutput) -> std::io::Result<PathBuf> {
        if self.spill_dir.as_os_str().is_empty() {
            return Err(std::io::Error::other(
                "no cache directory is known (set XDG_CACHE_HOME or HOME)",
            ));
        }
        crate::fsutil::create_private_dir(&self.spill_dir)?;
        remove_old_spills(&self.spill_dir);
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
        let path = self.spill_dir.join(format!(
            "{SPILL_PREFIX}{name}-{}-{:09}-{}.json",
            stamp.as_secs(),
            stamp.subsec_nanos(),
            std::process::id()
        ));
        let json = serde_json::to_vec_pretty(output).map_err(std::io::Error::other)?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&path)?;
        file.write_all(&json)?;
        Ok(path)
    }
}

/// Remove this directory's spill files older than [`SPILL_MAX_AGE`] (best effort).
fn remove_old_spills(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let Some(limit) = SystemTime::now().checked_sub(SPILL_MAX_AGE) else {
        return;
    };
    for entry in entries.flatten() {
        let is_spill = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(SPILL_PREFIX) && name.ends_with(".json"));
        let old = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|meta| meta.modified().ok())
            .is_some_and(|modified| modified < limit);
        if is_spill && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
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
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
            }
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
}
