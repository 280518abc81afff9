//! What the trust review shows of a file: its text with the values of secrets masked. The
//! masked text of each config file and each file its servers read is kept with the trust, so
//! that `mcpr trust` can show, line by line, how a file changed since it was last trusted,
//! without a secret ever being written to the trust store or the terminal.
//!
//! The files are JSON, JSONC, TOML, YAML or `.env`; rather than parse each format, each line
//! is read as `key <: or => value` and its quoted strings: a value whose key (or the flag
//! before it, `"--api-key", "..."`) suggests a secret is masked, and so is any word shaped
//! like a credential, as `mcpr servers` masks them.

use super::super::redact::{redact_free, redact_secret, secret_name};

/// Files larger than this are not kept for the review (a config file is a few KiB).
pub const MAX_REVIEW_TEXT: usize = 64 * 1024;

/// The text of `bytes` with secret values masked, when it is UTF-8 text of at most
/// [`MAX_REVIEW_TEXT`] bytes.
///
/// ```
/// use mcp_runtime::config::trust::masked_text;
/// let shown = masked_text(br#"{"env": {"GITHUB_TOKEN": "hunter2", "MODE": "fast"}}"#).unwrap();
/// assert!(!shown.contains("hunter2") && shown.contains("fast"));
/// assert_eq!(masked_text(b"API_KEY=hunter2\nDEBUG=1").unwrap(), "API_KEY=***\nDEBUG=1");
/// ```
pub fn masked_text(bytes: &[u8]) -> Option<String> {
    if bytes.len() > MAX_REVIEW_TEXT {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut secret_flag = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| mask_line(line, &mut secret_flag))
        .collect();
    Some(lines.join("\n"))
}

/// One piece of a line: a quoted string (its contents, without the quotes) or the text between.
enum Piece<'a> {
    Quoted(char, &'a str),
    Plain(&'a str),
}

/// The line cut into quoted strings and the text between them (an unclosed quote runs to the
/// end of the line).
fn pieces(line: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find(['"', '\'']) {
        let quote = rest[start..].chars().next().unwrap_or('"');
        if start > 0 {
            out.push(Piece::Plain(&rest[..start]));
        }
        let body = &rest[start + 1..];
        let mut end = None;
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                '\\' if quote == '"' && !escaped => escaped = true,
                c if c == quote && !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        match end {
            Some(end) => {
                out.push(Piece::Quoted(quote, &body[..end]));
                rest = &body[end + 1..];
            }
            None => {
                out.push(Piece::Quoted(quote, body));
                rest = "";
            }
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Plain(rest));
    }
    out
}

/// `line` with secret values masked. `secret_flag` carries a secret-named flag (`"--token"`)
/// whose value is the next string, possibly on the next line.
fn mask_line(line: &str, secret_flag: &mut bool) -> String {
    let pieces = pieces(line);
    let mut out = String::with_capacity(line.len());
    // The key of the value that follows (`"KEY":`, `KEY =`, `KEY:`).
    let mut key: Option<String> = None;
    for (index, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Quoted(quote, body) => {
                let next_is_separator = matches!(
                    pieces.get(index + 1),
                    Some(Piece::Plain(p)) if p.trim_start().starts_with([':', '='])
                );
                let shown = if next_is_separator {
                    key = Some((*body).to_owned());
                    (*body).to_owned()
                } else if *secret_flag || key.as_deref().is_some_and(secret_name) {
                    redact_secret(body)
                } else if let Some((flag, value)) = body.split_once('=')
                    && flag.starts_with('-')
                    && secret_name(flag.trim_start_matches('-'))
                {
                    format!("{flag}={}", redact_secret(value))
                } else {
                    redact_free(body)
                };
                *secret_flag = !next_is_separator
                    && body.starts_with('-')
                    && !body.contains('=')
                    && secret_name(body.trim_start_matches('-'));
                if !next_is_separator {
                    key = None;
                }
                out.push(*quote);
                out.push_str(&shown);
                out.push(*quote);
            }
            Piece::Plain(text) => out.push_str(&mask_plain(text, &mut key)),
        }
    }
    out
}

/// Unquoted text: `KEY=value` (`.env`, `export KEY=value`) or `key: value` (YAML) masks the
/// value when the key suggests a secret; a key followed by a quoted value is remembered in
/// `key`; credential-shaped words are masked anywhere.
fn mask_plain(text: &str, key: &mut Option<String>) -> String {
    let Some(at) = text.find([':', '=']) else {
        return redact_free(text);
    };
    let (before, after) = text.split_at(at);
    let separator = &after[..1];
    let value = &after[1..];
    let name = before.trim().trim_start_matches("export ").trim();
    let plain_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain_name {
        *key = Some(name.to_owned());
    }
    let value_text = value.trim();
    if value_text.is_empty() || value_text.starts_with(['{', '[']) {
        return format!("{}{separator}{value}", redact_free(before));
    }
    let lead = &value[..value.len() - value.trim_start().len()];
    let trail = value_text.trim_end_matches(',');
    let comma = &value_text[trail.len()..];
    let shown = if plain_name && secret_name(name) {
        redact_secret(trail)
    } else {
        redact_free(trail)
    };
    format!("{before}{separator}{lead}{shown}{comma}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> String {
        masked_text(text.as_bytes()).unwrap()
    }

    #[test]
    fn secret_values_are_masked_in_every_format() {
        let json = r#"{"servers": {"gh": {"env": {"GITHUB_TOKEN": "hunter2", "MODE": "fast"},
            "args": ["--api-key", "plain-secret", "--dir", "/srv/data"],
            "headers": {"Authorization": "Bearer abc.def"}}}}"#;
        let shown = masked(json);
        for secret in ["hunter2", "plain-secret", "abc.def"] {
            assert!(!shown.contains(secret), "{secret}: {shown}");
        }
        for kept in ["GITHUB_TOKEN", "fast", "/srv/data", "Bearer ***"] {
            assert!(shown.contains(kept), "{kept}: {shown}");
        }
        let toml = "[mcp_servers.gh.env]\nGITHUB_TOKEN = \"hunter2\"\nLEVEL = \"debug\"";
        assert_eq!(
            masked(toml),
            "[mcp_servers.gh.env]\nGITHUB_TOKEN = \"***\"\nLEVEL = \"debug\""
        );
        assert_eq!(
            masked("export API_KEY=hunter2\nPASSWORD: hunter2\nDEBUG=1"),
            "export API_KEY=***\nPASSWORD: ***\nDEBUG=1"
        );
        // A flag's value on the next line of an array, and a token shape under any name.
        assert_eq!(masked("\"--token\",\n\"hunter2\""), "\"--token\",\n\"***\"");
        assert!(
            !masked("\"note\": \"ghp_0123456789abcdefghij0123456789abcdef\"").contains("ghp_0")
        );
    }

    #[test]
    fn binary_and_large_files_are_not_kept() {
        assert_eq!(masked_text(&[0xff, 0xfe]), None);
        assert_eq!(masked_text(&vec![b'a'; MAX_REVIEW_TEXT + 1]), None);
    }
}
