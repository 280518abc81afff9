//! Text from servers made safe for a terminal.
//!
//! Tool descriptions, results, error messages, stderr lines and server info come from programs
//! we do not control. Printed raw, an escape sequence in them could retitle the window, clear
//! the screen, hide text or (with some terminals) do worse. Human-readable output therefore
//! shows every control character as a Rust-style escape (`ESC` as `\u{1b}`), as well as the
//! invisible bidirectional-text controls that can make text read differently than it is.
//! JSON output needs none of this: serde already escapes control characters.
//!
//! Listings on a terminal are cut to its width ([`stdout_width`], [`fit`]; tables also follow
//! `COLUMNS`, [`table_width`]) so that one item
//! stays one line; in a pipe they are kept whole.
//!
//! mcpr's own colour (log levels, the connection spinner) follows one rule,
//! [`colour_on_stderr`]: only on a terminal, and never with `NO_COLOR` set, so that pipes and
//! log files get plain text.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::IsTerminal;

/// Whether mcpr may colour what it writes to stderr: only when stderr is a terminal, and never
/// when `NO_COLOR` holds a non-empty value (<https://no-color.org>).
pub(crate) fn colour_on_stderr() -> bool {
    std::io::stderr().is_terminal() && !no_colour(std::env::var_os("NO_COLOR").as_deref())
}

/// The width in columns of the terminal stdout is, when it is one (`None` for a pipe or a
/// file: there lines are kept whole for whatever reads them).
pub(crate) fn stdout_width() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_rows, columns)| usize::from(columns))
        .filter(|columns| *columns > 0)
}

/// `text` cut to `width` columns of display width (wide characters count twice), ending in `…`
/// when cut; never cut inside a character.
pub(crate) fn fit(text: &str, width: usize) -> Cow<'_, str> {
    console::truncate_str(text, width, "…")
}

/// The width tables on stdout are fitted to: `COLUMNS` when set to a number (so a script can
/// ask for a width), else the terminal's ([`stdout_width`]), else `None` (nothing is wrapped).
pub(crate) fn table_width() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
        .or_else(stdout_width)
}

/// Whether a `NO_COLOR` of `value` turns colour off: set, and not empty.
fn no_colour(value: Option<&OsStr>) -> bool {
    value.is_some_and(|value| !value.is_empty())
}

/// `text` as one line: every control character escaped, newlines and tabs included.
pub(crate) fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` that may span lines: newlines and tabs are kept, every other control character is
/// escaped (a carriage return too: it could overwrite what the line showed).
pub(crate) fn text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| needs_escape(c) && !(keep_lines && matches!(c, '\n' | '\t'));
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// C0 and C1 controls and DEL (Unicode category Cc), and the bidirectional-text controls.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        assert_eq!(
            line("a\u{1b}]0;pwned\u{7}b\u{1b}[2J"),
            "a\\u{1b}]0;pwned\\u{7}b\\u{1b}[2J"
        );
        assert_eq!(line("x\ny\tz"), "x\\u{a}y\\u{9}z");
        assert_eq!(text("x\ny\tz\r"), "x\ny\tz\\u{d}");
        // C1 CSI, DEL and a right-to-left override.
        assert_eq!(line("\u{9b}\u{7f}\u{202e}"), "\\u{9b}\\u{7f}\\u{202e}");
        assert!(matches!(line("plain text, ünïcode"), Cow::Borrowed(_)));
    }

    #[test]
    fn fit_cuts_by_display_width_on_character_boundaries() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("abcdefghij", 5), "abcd…");
        // Each of these takes two columns: four columns hold one and the ellipsis.
        assert_eq!(fit("日本語テキスト", 4), "日…");
        assert_eq!(fit("ünïcødé text", 6), "ünïcø…");
    }

    #[test]
    fn no_color_with_any_value_turns_colour_off() {
        assert!(!no_colour(None));
        assert!(!no_colour(Some(OsStr::new(""))));
        for value in ["1", "0", "false", "yes"] {
            assert!(no_colour(Some(OsStr::new(value))), "{value}");
        }
    }
}
