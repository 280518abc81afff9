//! Tab completion of the shell: tool names and commands first, `/mcp` subcommands after
//! `/mcp`, server names after the subcommands that take one.
//!
//! The words come from a [`Vocabulary`] the shell updates whenever its tools or servers
//! change; the editor thread only reads it.

use std::sync::{Arc, PoisonError, RwLock};

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// Commands that start a line.
pub(super) const COMMANDS: &[&str] = &["/mcp", "/help", "/exit"];

/// What may follow `/mcp`.
pub(super) const MCP_SUBCOMMANDS: &[&str] = &[
    "list",
    "status",
    "reload",
    "reconnect",
    "enable",
    "disable",
    "test",
    "login",
    "logout",
    "resources",
    "prompts",
    "trust",
];

/// `/mcp` subcommands whose argument is a server name.
const TAKES_SERVER: &[&str] = &["reconnect", "enable", "disable", "test", "login", "logout"];

/// The words the shell can complete right now.
#[derive(Debug, Default, Clone)]
pub(super) struct Vocabulary {
    /// Exposed tool names (`mcp_<server>_<tool>`).
    pub tools: Vec<String>,
    /// Configured server names, including disabled ones (so `/mcp enable` completes).
    pub servers: Vec<String>,
}

/// The rustyline helper: completion only (no hints, highlighting or validation).
pub(super) struct ShellHelper {
    vocabulary: Arc<RwLock<Vocabulary>>,
}

impl ShellHelper {
    /// A helper reading the words from `vocabulary`.
    pub(super) fn new(vocabulary: Arc<RwLock<Vocabulary>>) -> Self {
        ShellHelper { vocabulary }
    }
}

impl Completer for ShellHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        // A poisoned lock only means a writer panicked; the words are still usable.
        let vocabulary = self
            .vocabulary
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(complete(line, pos, &vocabulary))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Validator for ShellHelper {}

impl Helper for ShellHelper {}

/// Candidates for the word that ends at `pos` in `line`: where that word starts, and the
/// words that extend it, sorted.
pub(super) fn complete(line: &str, pos: usize, vocabulary: &Vocabulary) -> (usize, Vec<String>) {
    let Some(head) = line.get(..pos) else {
        return (pos, Vec::new());
    };
    let start = head
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &head[start..];
    let before: Vec<&str> = head[..start].split_whitespace().collect();
    let pool: Vec<&str> = match before.as_slice() {
        [] => COMMANDS
            .iter()
            .copied()
            .chain(vocabulary.tools.iter().map(String::as_str))
            .collect(),
        ["/mcp"] => MCP_SUBCOMMANDS.to_vec(),
        ["/mcp", sub] if TAKES_SERVER.contains(sub) => {
            vocabulary.servers.iter().map(String::as_str).collect()
        }
        // Tool arguments are JSON: nothing to offer.
        _ => Vec::new(),
    };
    let mut candidates: Vec<String> = pool
        .into_iter()
        .filter(|candidate| candidate.starts_with(word))
        .map(str::to_owned)
        .collect();
    candidates.sort();
    candidates.dedup();
    (start, candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> Vocabulary {
        Vocabulary {
            tools: vec!["mcp_github_search".into(), "mcp_fs_read".into()],
            servers: vec!["github".into(), "fs".into()],
        }
    }

    #[test]
    fn first_word_completes_tools_and_commands() {
        let v = vocabulary();
        assert_eq!(
            complete("mcp_g", 5, &v),
            (0, vec!["mcp_github_search".to_owned()])
        );
        assert_eq!(complete("/m", 2, &v), (0, vec!["/mcp".to_owned()]));
        let (_, all) = complete("", 0, &v);
        assert!(all.contains(&"/help".to_owned()) && all.contains(&"mcp_fs_read".to_owned()));
    }

    #[test]
    fn mcp_subcommands_then_server_names() {
        let v = vocabulary();
        assert_eq!(
            complete("/mcp re", 7, &v),
            (
                5,
                vec!["reconnect".into(), "reload".into(), "resources".into()]
            )
        );
        assert_eq!(
            complete("/mcp enable g", 13, &v),
            (12, vec!["github".into()])
        );
        assert_eq!(complete("/mcp test ", 10, &v).1, vec!["fs", "github"]);
        assert!(complete("/mcp list x", 11, &v).1.is_empty());
    }

    #[test]
    fn arguments_and_odd_positions_complete_nothing() {
        let v = vocabulary();
        assert!(complete("mcp_fs_read {\"pa", 16, &v).1.is_empty());
        // A position inside a multi-byte character is not a word boundary.
        assert!(complete("é", 1, &v).1.is_empty());
    }
}
