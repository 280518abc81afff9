//! Parsing the command line, with advice for the common mistakes in place of clap's generic
//! error: a server's command given without `--`, tool arguments written as options, a
//! command name from another tool (`ls`, `rm`, `install`). Also the completion scripts.

use clap::Parser;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::cli::Cli;
use crate::exit;

/// Parse the process's arguments; on a mistake we recognise, print what to type instead and
/// exit with the usage code (clap's own error otherwise).
pub(crate) fn parse() -> Cli {
    let words: Vec<String> = std::env::args().skip(1).collect();
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            if let Some(advice) = advise(&error, &words) {
                eprintln!("error: {}\n\n{advice}", advice_headline(&error));
                std::process::exit(i32::from(exit::USAGE));
            }
            error.exit()
        }
    }
}

/// Print the completion script for `shell` on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> u8 {
    use std::io::Write as _;
    // The script asks mcpr for candidates as they are typed (see `complete`): server names
    // from the configs, tool names from the tool cache.
    match crate::complete::registration(shell) {
        Ok(script) if std::io::stdout().write_all(&script).is_ok() => exit::OK,
        _ => exit::OUTPUT,
    }
}

/// Commands of other tools (and plurals) that users type for one of ours.
const SYNONYMS: &[(&str, &str, &str)] = &[
    ("ls", "list", "mcpr list"),
    ("rm", "remove", "mcpr remove NAME"),
    ("delete", "remove", "mcpr remove NAME"),
    ("uninstall", "remove", "mcpr remove NAME"),
    (
        "install",
        "add",
        "mcpr add NAME CMD ARGS...  (or --from-registry)",
    ),
    ("new", "add", "mcpr add NAME CMD ARGS..."),
    ("show", "get", "mcpr get NAME"),
    ("info", "get", "mcpr get NAME"),
    ("inspect", "tools", "mcpr tools SERVER --long"),
    ("tool", "tools", "mcpr tools [SERVER]"),
    ("server", "servers", "mcpr servers"),
    ("run", "call", "mcpr call SERVER TOOL key=value..."),
    ("invoke", "call", "mcpr call SERVER TOOL key=value..."),
    ("exec", "call", "mcpr call SERVER TOOL key=value..."),
    ("repl", "shell", "mcpr shell"),
    ("health", "status", "mcpr status"),
    ("doctor", "status", "mcpr status"),
    ("check", "status", "mcpr status"),
    ("test", "status", "mcpr status"),
    ("resources", "resource", "mcpr resource SERVER URI"),
    ("read", "resource", "mcpr resource SERVER URI"),
    ("prompts", "prompt", "mcpr prompt SERVER NAME key=value..."),
    (
        "completion",
        "completions",
        "mcpr completions bash|zsh|fish",
    ),
    (
        "add-from-claude-desktop",
        "add-from",
        "mcpr add-from claude-desktop [NAME...] [--to claude]",
    ),
    ("addjson", "add-json", "mcpr add-json NAME JSON"),
    ("add_json", "add-json", "mcpr add-json NAME JSON"),
    ("approve", "trust", "mcpr trust"),
    ("auth", "login", "mcpr login NAME"),
];

/// Commands whose positional words stop early, so that a server's command needs `--` before it.
const INLINE_COMMANDS: &[&str] = &["tools", "status", "shell"];

/// The first line of the error, in clap's words without its `error:` prefix and usage lines.
fn advice_headline(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_owned()
}

/// What to type instead, for the mistakes we recognise.
fn advise(error: &clap::Error, words: &[String]) -> Option<String> {
    let invalid = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let clap_has_a_tip = error.get(ContextKind::SuggestedArg).is_some()
        || error.get(ContextKind::SuggestedSubcommand).is_some();
    match error.kind() {
        ErrorKind::InvalidSubcommand => {
            let typed = match error.get(ContextKind::InvalidSubcommand) {
                Some(ContextValue::String(s)) => s.as_str(),
                _ => return None,
            };
            SYNONYMS
                .iter()
                .find(|(word, _, _)| *word == typed)
                .map(|(_, ours, usage)| format!("mcpr calls it `{ours}`:\n  {usage}"))
        }
        ErrorKind::UnknownArgument if !clap_has_a_tip => {
            let typed = invalid?;
            let (position, command) = command_word(words)?;
            let after: Vec<&str> = words[position + 1..].iter().map(String::as_str).collect();
            if after.contains(&"--") {
                return None;
            }
            if command == "call" && typed.starts_with("--") {
                let key = typed.trim_start_matches('-');
                return Some(format!(
                    "tool arguments are `key=value` words (or one JSON object), not options:\n  \
                     mcpr call SERVER TOOL {key}=VALUE\n\
                     To try a server without a config file, give its command after `--`:\n  \
                     mcpr call TOOL key=value -- CMD ARGS..."
                ));
            }
            if INLINE_COMMANDS.contains(&command.as_str()) {
                // Options of ours before the first word stay where they are.
                let (ours, theirs): (Vec<&str>, Vec<&str>) = {
                    let split = after
                        .iter()
                        .position(|w| !w.starts_with('-'))
                        .unwrap_or(after.len());
                    (after[..split].to_vec(), after[split..].to_vec())
                };
                let mut suggestion = vec!["mcpr", command.as_str()];
                suggestion.extend(ours);
                suggestion.push("--");
                suggestion.extend(theirs);
                return Some(format!(
                    "to try a server without a config file, give its command after `--`:\n  {}",
                    shell_words(&suggestion)
                ));
            }
            if command == "call" {
                return Some(
                    "to try a server without a config file, give its command after `--`:\n  \
                     mcpr call TOOL key=value -- CMD ARGS..."
                        .to_owned(),
                );
            }
            None
        }
        _ => None,
    }
}

/// The subcommand's word and its position: the first word that is neither an option nor the
/// value of `--config` / `--cwd`.
fn command_word(words: &[String]) -> Option<(usize, &String)> {
    let mut skip = false;
    for (position, word) in words.iter().enumerate() {
        if skip {
            skip = false;
        } else if word == "--config" || word == "--cwd" {
            skip = true;
        } else if !word.starts_with('-') {
            return Some((position, word));
        }
    }
    None
}

/// `words` joined for a shell, quoting those that need it.
fn shell_words(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./@=:,+%".contains(c));
            if plain {
                (*w).to_owned()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice(line: &str) -> Option<String> {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let error = Cli::try_parse_from(std::iter::once("mcpr".to_owned()).chain(words.clone()))
            .expect_err("a mistake");
        advise(&error, &words)
    }

    #[test]
    fn a_server_command_without_double_dash_gets_the_line_to_type() {
        let first = advice("tools --json npx -y @scope/server").unwrap();
        assert!(
            first.ends_with("mcpr tools --json -- npx -y @scope/server"),
            "{first}"
        );
        let second = advice("status node server.js extra").unwrap();
        assert!(
            second.ends_with("mcpr status -- node server.js extra"),
            "{second}"
        );
    }

    #[test]
    fn other_tools_command_names_point_to_ours() {
        assert!(advice("rm foo").unwrap().contains("mcpr remove NAME"));
        assert!(advice("ls").unwrap().contains("mcpr list"));
        assert!(advice("install x").unwrap().contains("mcpr add NAME"));
    }

    #[test]
    fn tool_arguments_given_as_options_get_key_value() {
        let given = advice("call srv echo --message hi").unwrap();
        assert!(
            given.contains("mcpr call SERVER TOOL message=VALUE"),
            "{given}"
        );
    }

    #[test]
    fn clap_keeps_its_own_tips() {
        assert_eq!(advice("tools --jsn"), None);
    }
}
