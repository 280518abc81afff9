//! Reading the file formats hosts write (JSON, JSONC, TOML, YAML) into one [`Value`] tree, with
//! errors that carry a 1-based line and column.

use std::path::Path;

use serde_json::Value;

/// The syntax of a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Strict JSON; comments and trailing commas are tolerated all the same.
    Json,
    /// JSON with comments and trailing commas (VS Code, Zed, OpenCode); parsed as JSON5.
    Jsonc,
    /// TOML (Codex).
    Toml,
    /// YAML (goose, Continue).
    Yaml,
}

impl Format {
    /// The format a file name suggests: `.toml`, `.yaml`/`.yml`, `.jsonc`, anything else JSON.
    pub(crate) fn for_path(path: &Path) -> Format {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("toml") => Format::Toml,
            Some("yaml" | "yml") => Format::Yaml,
            Some("jsonc" | "json5") => Format::Jsonc,
            _ => Format::Json,
        }
    }
}

/// A syntax error at a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What is wrong, without the position.
    pub message: String,
}

/// Parse `text` as `format`. Blank text is an empty document (`Value::Null`).
pub(crate) fn parse(text: &str, format: Format) -> Result<Value, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    match format {
        Format::Json => serde_json::from_str(text).or_else(|strict| {
            // Hand-edited files often carry a trailing comma or a comment; the host may reject
            // them, but there is no ambiguity in what they mean. Report the strict error
            // when the lenient reader fails too.
            json5::from_str(text).map_err(|_| ParseError {
                line: strict.line().max(1),
                column: strict.column().max(1),
                message: strip_position(&strict.to_string()),
            })
        }),
        Format::Jsonc => json5::from_str(text).map_err(|e| {
            let (line, column) = e.position().map_or((1, 1), |p| (p.line + 1, p.column + 1));
            ParseError {
                line,
                column,
                message: strip_position(&e.to_string()),
            }
        }),
        Format::Toml => toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |span| line_col(text, span.start));
            ParseError {
                line,
                column,
                message: e.message().trim().to_owned(),
            }
        }),
        Format::Yaml => serde_yaml_ng::from_str(text).map_err(|e| {
            let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
            ParseError {
                line,
                column,
                message: strip_position(&e.to_string()),
            }
        }),
    }
}

/// serde_json, json5 and serde_yaml put " at line L column C" in their messages; we print
/// positions ourselves.
fn strip_position(message: &str) -> String {
    let Some(idx) = message.find(" at line ") else {
        return message.to_owned();
    };
    let rest = &message[idx + " at line ".len()..];
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest
        .strip_prefix(" column ")
        .map_or(rest, |r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
    format!("{}{}", &message[..idx], rest)
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

/// Best-effort position of the key `key` (a server name) in a config file, looking only after
/// the first occurrence of `section` when given (e.g. `mcpServers`). Understands JSON keys
/// (`"key":`), TOML table headers (`[mcp_servers.key]`) and YAML keys (`key:`, `name: key`).
pub(crate) fn locate_key(text: &str, key: &str, section: Option<&str>) -> Option<(usize, usize)> {
    let start = section
        .and_then(|s| {
            [format!("\"{s}\""), format!("{s}:"), format!("{s}.")]
                .iter()
                .filter_map(|needle| text.find(needle.as_str()))
                .min()
        })
        .unwrap_or(0);
    let hay = &text[start..];
    let quoted = serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""));
    let candidates = [
        find_followed_by(hay, &quoted, ':'),
        find_followed_by(hay, &format!(".{key}"), ']').map(|i| i + 1),
        find_followed_by(hay, &format!(".{quoted}"), ']').map(|i| i + 1),
        find_line_key(hay, key),
    ];
    let found = candidates.into_iter().flatten().min()?;
    Some(line_col(text, start + found))
}

/// Offset of `needle` where the next non-blank character after it is `next`.
fn find_followed_by(hay: &str, needle: &str, next: char) -> Option<usize> {
    let mut from = 0;
    while let Some(idx) = hay[from..].find(needle) {
        let at = from + idx;
        let rest = hay[at + needle.len()..].trim_start_matches([' ', '\t']);
        if rest.starts_with(next) {
            return Some(at);
        }
        from = at + needle.len();
    }
    None
}

/// YAML: a line `key:` or `name: key` (possibly as a list item `- name: key`).
fn find_line_key(hay: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in hay.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let item = trimmed.strip_prefix("- ").unwrap_or(trimmed);
        let item_at = indent + (trimmed.len() - item.len());
        if item.strip_prefix(key).is_some_and(|r| r.starts_with(':')) {
            return Some(offset + item_at);
        }
        if let Some(value) = item.strip_prefix("name:") {
            let value = value.trim().trim_matches(['"', '\'']);
            if value == key {
                return Some(offset + item_at);
            }
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_positions_in_every_format() {
        let e = parse("{\n  \"a\": [1,\n}", Format::Json).unwrap_err();
        assert_eq!(e.line, 3, "{e:?}");
        let e = parse("{\n  // c\n  a: ,\n}", Format::Jsonc).unwrap_err();
        assert_eq!((e.line, e.column), (3, 6), "{e:?}");
        let e = parse("[a]\nx = 1\ny = = 2\n", Format::Toml).unwrap_err();
        assert_eq!(e.line, 3, "{e:?}");
        let e = parse("a:\n  b: [1, 2\nc: d\n", Format::Yaml).unwrap_err();
        assert!(e.line >= 2, "{e:?}");
        assert!(
            e.message
                .starts_with("did not find expected ',' or ']', while"),
            "{e:?}"
        );
    }

    #[test]
    fn lenient_json_and_blank_files() {
        assert_eq!(parse("{\"a\": 1,}", Format::Json).unwrap()["a"], 1);
        assert_eq!(parse(" \n", Format::Json).unwrap(), Value::Null);
        assert_eq!(
            parse("\u{feff}{}", Format::Json).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn keys_are_located() {
        let json = "{\n  \"other\": {\"x\": 1},\n  \"mcpServers\": {\n    \"x\": {}\n  }\n}";
        assert_eq!(locate_key(json, "x", Some("mcpServers")), Some((4, 5)));
        let toml = "[mcp_servers.docs]\ncommand = \"d\"\n\n[mcp_servers.\"a.b\"]\n";
        assert_eq!(locate_key(toml, "docs", None), Some((1, 14)));
        assert_eq!(locate_key(toml, "a.b", None), Some((4, 14)));
        let yaml =
            "mcpServers:\n  - name: fs\n    command: x\nextensions:\n  github:\n    cmd: y\n";
        assert_eq!(locate_key(yaml, "fs", None), Some((2, 5)));
        assert_eq!(locate_key(yaml, "github", Some("extensions")), Some((5, 3)));
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé d", 7), (2, 4));
        assert_eq!(line_col("x", 99), (1, 2));
    }
}
