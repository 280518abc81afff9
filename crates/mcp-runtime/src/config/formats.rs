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

/// The deepest nesting a config file may have. Real configs stay under ten levels; the bound
/// keeps every parser (the JSON5 one recurses without a limit of its own) and the recursive
/// `Value` code after it far from the end of even a small thread stack.
pub(crate) const MAX_DEPTH: usize = 64;

/// Parse `text` as `format`. Blank text is an empty document (`Value::Null`).
///
/// Text nested deeper than [`MAX_DEPTH`] is refused before any parser sees it.
pub(crate) fn parse(text: &str, format: Format) -> Result<Value, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    check_depth(text, format)?;
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

/// Refuse text nested deeper than [`MAX_DEPTH`], at the position where it gets too deep.
pub(crate) fn check_depth(text: &str, format: Format) -> Result<(), ParseError> {
    let too_deep = match format {
        Format::Json | Format::Jsonc => json_too_deep(text.as_bytes(), MAX_DEPTH),
        Format::Toml => toml_too_deep(text.as_bytes()),
        Format::Yaml => yaml_too_deep(text),
    };
    match too_deep {
        None => Ok(()),
        Some(offset) => {
            let (line, column) = line_col(text, offset);
            Err(ParseError {
                line,
                column,
                message: format!("nested more than {MAX_DEPTH} levels deep"),
            })
        }
    }
}

/// JSON, JSONC and JSON5: brackets outside strings and comments. Returns the offset of the
/// first bracket beyond `max` levels.
pub(crate) fn json_too_deep(bytes: &[u8], max: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'"' | b'\'') => i = skip_quoted(bytes, i + 1, quote, true),
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = skip_json5_line(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = find(bytes, i + 2, b"*/").map_or(bytes.len(), |end| end + 2);
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// TOML: a value is as deep as its table header (`[a.b]`), its dotted key (`c.d = `) and the
/// inline arrays and tables around it (each with its own dotted keys) together.
fn toml_too_deep(bytes: &[u8]) -> Option<usize> {
    // Open inline arrays/tables, each with the levels of the key it is the value of.
    let mut open: Vec<(u8, usize)> = Vec::new();
    let mut outer = 0usize; // levels of the keys around the innermost open bracket
    let mut header = 0usize; // levels of the current `[table]` header
    let mut key = 0usize; // levels of the key being read
    let mut in_key = true;
    let mut in_header = false;
    let mut i = 0;
    while i < bytes.len() {
        if header + outer + open.len() + key > MAX_DEPTH {
            return Some(i);
        }
        let c = bytes[i];
        let mut next = i + 1;
        match c {
            b'#' => next = skip_line(bytes, i),
            b'\n' if open.is_empty() && !in_header => {
                in_key = true;
                key = 0;
            }
            b'"' | b'\'' => {
                next = if bytes[i..].starts_with(&[c; 3]) {
                    find(bytes, i + 3, &[c; 3]).map_or(bytes.len(), |end| end + 3)
                } else {
                    skip_quoted(bytes, i + 1, c, c == b'"')
                };
                if (in_key || in_header) && key == 0 {
                    key = 1;
                }
            }
            b'[' if in_key && open.is_empty() && !in_header => {
                in_header = true;
                header = 0;
                key = 0;
                if bytes.get(i + 1) == Some(&b'[') {
                    next += 1;
                }
            }
            b']' if in_header => {
                in_header = false;
                in_key = false;
                header = key;
                key = 0;
                if bytes.get(i + 1) == Some(&b']') {
                    next += 1;
                }
            }
            b'[' | b'{' => {
                open.push((c, key));
                outer += key;
                key = 0;
                in_key = c == b'{';
            }
            b']' | b'}' => {
                if let Some((_, k)) = open.pop() {
                    outer -= k;
                    key = k;
                }
                in_key = false;
            }
            b'.' if in_key || in_header => key += 1,
            b'=' if !in_header => in_key = false,
            b',' if open.last().is_some_and(|&(kind, _)| kind == b'{') => {
                in_key = true;
                key = 0;
            }
            _ if (in_key || in_header) && key == 0 && !c.is_ascii_whitespace() => key = 1,
            _ => {}
        }
        i = next;
    }
    None
}

/// YAML: indentation levels (a stack of the indents seen), compact block indicators on one line
/// (`- - x`, `? ? x`) and flow brackets outside quotes and comments.
fn yaml_too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    // Inside a `|`/`>` block scalar: lines indented deeper than this are text.
    let mut scalar_above: Option<usize> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let content = body.trim_end();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if let Some(parent) = scalar_above {
            if indent > parent {
                continue;
            }
            scalar_above = None;
        }
        if flow == 0 {
            while indents.last().is_some_and(|&top| top >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let end = start + line.len();
        let mut compact = 0;
        let mut i = start + indent;
        while i < end {
            let c = bytes[i];
            let mut next = i + 1;
            match c {
                b'#' if i == start + indent || bytes[i - 1].is_ascii_whitespace() => break,
                b'"' => next = skip_quoted(&bytes[..end], i + 1, c, true),
                b'\'' => next = skip_quoted(&bytes[..end], i + 1, c, false),
                b'[' | b'{' => flow += 1,
                b']' | b'}' => flow = flow.saturating_sub(1),
                b'-' | b'?' | b':'
                    if flow == 0 && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace) =>
                {
                    compact += 1;
                }
                _ => {}
            }
            if indents.len() + compact + flow > MAX_DEPTH {
                return Some(i);
            }
            i = next;
        }
        if flow == 0 && starts_block_scalar(content) {
            scalar_above = Some(indent);
        }
    }
    None
}

/// Whether a YAML line ends with a block scalar header (`|`, `>-`, `|2+`, ...).
fn starts_block_scalar(line: &str) -> bool {
    let last = line.rsplit([' ', '\t']).next().unwrap_or("");
    last.starts_with(['|', '>'])
        && last[1..]
            .chars()
            .all(|c| c.is_ascii_digit() || c == '+' || c == '-')
}

/// The offset after the closing `quote` of a string starting at `from` (the end of `bytes` when
/// it never closes). Backslash escapes count when `escapes`; a quote doubled inside a
/// non-escaping string (YAML, TOML literal) is simply read as two strings.
fn skip_quoted(bytes: &[u8], mut from: usize, quote: u8, escapes: bool) -> usize {
    while from < bytes.len() {
        match bytes[from] {
            b'\\' if escapes => from += 2,
            c if c == quote => return from + 1,
            _ => from += 1,
        }
    }
    bytes.len()
}

/// The offset of the next newline at or after `from` (the end when none).
fn skip_line(bytes: &[u8], from: usize) -> usize {
    find(bytes, from, b"\n").unwrap_or(bytes.len())
}

/// The offset of the next JSON5 line terminator at or after `from`: JSON5 also ends a `//`
/// comment at a carriage return, U+2028 and U+2029, so the text after one is structure.
fn skip_json5_line(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' | b'\r' => return i,
            // U+2028 and U+2029 in UTF-8.
            0xE2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                return i;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The offset of `needle` at or after `from`.
fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
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
    /// Text `levels` deep in `format`, each level a real nesting of the parsed value.
    fn nested(format: Format, levels: usize) -> String {
        match format {
            Format::Json | Format::Jsonc => "[".repeat(levels),
            Format::Toml => format!("a{} = 1\n", ".a".repeat(levels)),
            Format::Yaml => format!("{}x\n", "- ".repeat(levels)),
        }
    }

    const ALL: [Format; 4] = [Format::Json, Format::Jsonc, Format::Toml, Format::Yaml];

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        // 60,000 levels overflow the stack of the JSON5 parser (and of the recursive code after
        // every parser); each format gets an error with a position instead.
        for format in ALL {
            let err = parse(&nested(format, 60_000), format).unwrap_err();
            assert!(
                err.message.contains("nested more than"),
                "{format:?}: {err:?}"
            );
            assert_eq!(err.line, 1, "{format:?}: {err:?}");
        }
        let toml = format!("[{}]\nx = 1\n", vec!["t"; 70].join("."));
        assert!(parse(&toml, Format::Toml).is_err());
        let toml = format!("x = {}1{}\n", "[".repeat(70), "]".repeat(70));
        assert!(parse(&toml, Format::Toml).is_err());
        let toml = format!("x = {}\n", "{a = ".repeat(70));
        assert!(parse(&toml, Format::Toml).is_err());
        let yaml: String = (0..70).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        assert!(parse(&yaml, Format::Yaml).is_err());
        assert!(parse(&format!("{}1", "[".repeat(70)), Format::Yaml).is_err());
    }

    #[test]
    fn ordinary_nesting_and_brackets_in_text_are_fine() {
        let deep_enough = MAX_DEPTH - 2;
        let json = format!("{}{}", "[".repeat(deep_enough), "]".repeat(deep_enough));
        assert!(parse(&json, Format::Json).is_ok());
        assert!(parse(&json, Format::Jsonc).is_ok());
        assert!(parse(&nested(Format::Toml, deep_enough), Format::Toml).is_ok());
        assert!(parse(&nested(Format::Yaml, deep_enough), Format::Yaml).is_ok());
        // Brackets in strings and comments, dots in values and many siblings do not count.
        let brackets = "[".repeat(500);
        let json = format!(
            "{{\"a\": \"{brackets}\", // {brackets}\n /* {brackets} */ \"b\": '{brackets}'}}"
        );
        let parsed = parse(&json, Format::Jsonc);
        assert!(parsed.is_ok(), "{parsed:?}");
        let many: String = (0..500)
            .map(|i| format!("[t{i}]\nv = [1.5, 2.5, \"{brackets}\"] # {brackets}\n"))
            .collect();
        let parsed = parse(&many, Format::Toml);
        assert!(parsed.is_ok(), "{parsed:?}");
        let toml = format!(
            "s = '''\n{brackets}\n'''\nt = 'a.b.c'\n[x.\"a.b\"]\ny = {{ p.q = 1, r = [{{}}] }}\n"
        );
        let parsed = parse(&toml, Format::Toml);
        assert!(parsed.is_ok(), "{parsed:?}");
        let block: Vec<String> = (0..80)
            .map(|d| format!("      {}z", " ".repeat(d)))
            .collect();
        let block = block.join("\n");
        let yaml: String = (0..200)
            .map(|i| {
                format!(
                    "k{i}:\n  - a: '{brackets}'\n    b: \"x\" # {brackets}\n    c: |\n{block}\n"
                )
            })
            .collect();
        let parsed = parse(&yaml, Format::Yaml);
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
