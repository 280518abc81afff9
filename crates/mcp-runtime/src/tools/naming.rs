//! Tool names the model sees: `mcp_<server>_<tool>` (or Claude Code's
//! `mcp__<server>__<tool>`), always matching `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! Names are assigned to a whole set of (server, tool) pairs at once, because only the whole
//! set shows collisions. A name that is too long, or that two pairs would share, gets a short
//! hash of the raw pair instead of its tail, so the mapping is injective and the same set always
//! gets the same names (stable across restarts and prompt-cache friendly).

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

/// Longest name most model APIs accept for a tool.
pub const MAX_TOOL_NAME: usize = 64;

/// Hex digits of the hash suffix.
const HASH_LEN: usize = 8;

/// How tool names are spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum NamingStyle {
    /// `mcp_<server>_<tool>`.
    #[default]
    Mcpr,
    /// `mcp__<server>__<tool>`, as Claude Code spells them.
    Claude,
    /// The server's own name, unchanged (for a view of one server, such as a gateway that
    /// stands in for it). Only a name over 64 characters, or one two pairs share, is hashed.
    Raw,
}

impl NamingStyle {
    fn prefix(self) -> &'static str {
        match self {
            NamingStyle::Mcpr => "mcp_",
            NamingStyle::Claude => "mcp__",
            NamingStyle::Raw => "",
        }
    }

    fn separator(self) -> &'static str {
        match self {
            NamingStyle::Mcpr => "_",
            NamingStyle::Claude => "__",
            NamingStyle::Raw => "",
        }
    }
}

/// Keep `[A-Za-z0-9_-]`; turn every run of other characters into one `_`.
///
/// ```
/// assert_eq!(mcp_runtime::tools::sanitize("my.server: v2"), "my_server_v2");
/// ```
pub fn sanitize(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    let mut in_run = false;
    for c in part.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

/// The name a pair gets when nothing collides and it fits.
fn base_name(style: NamingStyle, server: &str, tool: &str) -> String {
    if style == NamingStyle::Raw {
        return tool.to_owned();
    }
    let server_part = sanitize(server);
    let mut tool_part = sanitize(tool);
    // `github` + `github_search` reads better as `mcp_github_search`.
    let redundant = format!("{server_part}_");
    if tool_part.len() > redundant.len() && tool_part.starts_with(&redundant) {
        tool_part.drain(..redundant.len());
    }
    if tool_part.is_empty() {
        tool_part.push('_');
    }
    format!(
        "{}{server_part}{}{tool_part}",
        style.prefix(),
        style.separator()
    )
}

/// `base` cut to leave room for `_<hash>`, where the hash is of the raw pair.
fn hashed_name(base: &str, server: &str, tool: &str, hash_len: usize) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    let digest = hasher.finalize();
    let hex = crate::fsutil::hex(&digest);
    let keep = MAX_TOOL_NAME - hash_len - 1;
    let mut head: String = base.chars().take(keep).collect();
    head.push('_');
    head.push_str(&hex[..hash_len]);
    head
}

/// Assign names to a set of `(server, tool)` pairs. Returns one name per input pair, in
/// input order. Duplicated input pairs get the same name.
///
/// ```
/// use mcp_runtime::tools::{NamingStyle, assign_names};
/// let pairs = [("github", "search"), ("files", "read.file")];
/// let names = assign_names(NamingStyle::Mcpr, pairs);
/// assert_eq!(names, ["mcp_github_search", "mcp_files_read_file"]);
/// ```
pub fn assign_names<'a, I>(style: NamingStyle, pairs: I) -> Vec<String>
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
    let bases: Vec<String> = pairs
        .iter()
        .map(|(server, tool)| base_name(style, server, tool))
        .collect();

    // How many distinct raw pairs want each base name.
    let mut claimants: HashMap<&str, HashSet<(&str, &str)>> = HashMap::new();
    for (base, pair) in bases.iter().zip(&pairs) {
        claimants.entry(base.as_str()).or_default().insert(*pair);
    }

    let mut names: Vec<String> = bases
        .iter()
        .zip(&pairs)
        .map(|(base, (server, tool))| {
            if base.len() <= MAX_TOOL_NAME && claimants[base.as_str()].len() == 1 {
                base.clone()
            } else {
                hashed_name(base, server, tool, HASH_LEN)
            }
        })
        .collect();

    // A hashed name could, in theory, equal another pair's plain name or another hashed name
    // (a hash-prefix collision). Lengthen the hash of those until the mapping is injective.
    let mut hash_len = HASH_LEN;
    loop {
        let mut owner: HashMap<&str, (&str, &str)> = HashMap::new();
        let mut clashes = HashSet::new();
        for (name, pair) in names.iter().zip(&pairs) {
            if let Some(previous) = owner.insert(name.as_str(), *pair)
                && previous != *pair
            {
                clashes.insert(name.clone());
            }
        }
        if clashes.is_empty() || hash_len >= 32 {
            break;
        }
        hash_len += 4;
        for (i, (server, tool)) in pairs.iter().enumerate() {
            if clashes.contains(&names[i]) {
                names[i] = hashed_name(&bases[i], server, tool, hash_len);
            }
        }
    }
    names
}

/// The servers among `servers` whose tools could be named `name` in `style`, in input order:
/// every name a server's tool gets starts with the style's prefix and the server's sanitised
/// name (cut short only when a hash replaced its tail). A host resolving a name the model or
/// a user typed needs to start, or read the cache of, only these servers. [`NamingStyle::Raw`]
/// names carry no server, so every server is returned.
///
/// ```
/// use mcp_runtime::tools::{NamingStyle, servers_for_name};
/// let servers = ["github", "git", "files"];
/// assert_eq!(servers_for_name(NamingStyle::Mcpr, "mcp_github_search", servers), ["github"]);
/// assert_eq!(servers_for_name(NamingStyle::Mcpr, "mcp_git_log", servers), ["git"]);
/// assert!(servers_for_name(NamingStyle::Mcpr, "mcp_nope_x", servers).is_empty());
/// ```
pub fn servers_for_name<'a, I>(style: NamingStyle, name: &str, servers: I) -> Vec<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    // The shortest head a hashed name keeps (see `assign_names`: the hash grows to 32 digits).
    const SHORTEST_HEAD: usize = MAX_TOOL_NAME - 32 - 1;
    servers
        .into_iter()
        .filter(|server| {
            if style == NamingStyle::Raw {
                return true;
            }
            let head = format!(
                "{}{}{}",
                style.prefix(),
                sanitize(server),
                style.separator()
            );
            // Compared as bytes: `name` is typed by someone and need not be ASCII.
            name.starts_with(&head)
                || (head.len() > SHORTEST_HEAD
                    && name.len() > SHORTEST_HEAD
                    && head
                        .as_bytes()
                        .starts_with(&name.as_bytes()[..SHORTEST_HEAD]))
        })
        .collect()
}

/// Whether `name` is a valid tool name for model APIs.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, &str)]) -> Vec<String> {
        assign_names(NamingStyle::Mcpr, pairs.iter().copied())
    }

    #[test]
    fn plain_names_and_redundant_prefix() {
        assert_eq!(names(&[("github", "github_search")]), ["mcp_github_search"]);
        assert_eq!(names(&[("a b", "c/d")]), ["mcp_a_b_c_d"]);
        assert_eq!(
            assign_names(NamingStyle::Claude, [("fs", "read")]),
            ["mcp__fs__read"]
        );
    }

    #[test]
    fn collisions_get_distinct_hashed_names() {
        let pairs = [
            ("a", "b_c"),
            ("a_b", "c"),
            ("my.server", "x"),
            ("my_server", "x"),
        ];
        let got = names(&pairs);
        let unique: HashSet<&String> = got.iter().collect();
        assert_eq!(unique.len(), pairs.len(), "{got:?}");
        assert!(got.iter().all(|n| is_valid_tool_name(n)), "{got:?}");
        // Deterministic: same set, same names, whatever the order.
        let mut reversed = pairs;
        reversed.reverse();
        let mut again = names(&reversed);
        again.reverse();
        assert_eq!(got, again);
    }

    #[test]
    fn the_servers_of_a_name_include_those_of_cut_and_hashed_names() {
        let long_server = "s".repeat(70);
        let servers = ["a", "a_b", long_server.as_str(), "other"];
        let pairs = [("a", "b_c"), ("a_b", "c"), (long_server.as_str(), "tool")];
        for (name, (server, _)) in names(&pairs).iter().zip(pairs) {
            let found = servers_for_name(NamingStyle::Mcpr, name, servers);
            assert!(found.contains(&server), "{name}: {found:?}");
            assert!(!found.contains(&"other"), "{name}: {found:?}");
        }
        assert_eq!(
            servers_for_name(NamingStyle::Claude, "mcp__a__x", servers),
            ["a"]
        );
        // A typed name is not ASCII: no panic, no match.
        let odd = format!("mcp_{}é日🙂", "s".repeat(26));
        let long = "s".repeat(40);
        assert!(servers_for_name(NamingStyle::Mcpr, &odd, [long.as_str()]).is_empty());
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let long_tool = "t".repeat(100);
        let got = names(&[("server", &long_tool), ("server", &format!("{long_tool}2"))]);
        assert!(
            got.iter()
                .all(|n| n.len() <= MAX_TOOL_NAME && is_valid_tool_name(n))
        );
        assert_ne!(got[0], got[1]);
    }

    #[test]
    fn adversarial_names_stay_valid_and_injective() {
        // A small deterministic generator (no dependency): many awkward characters and lengths.
        let alphabet: Vec<char> = "aA0_-. :/é日🙂".chars().collect();
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut raw = Vec::new();
        for _ in 0..2000 {
            let mut part = || {
                let len = (next() % 70) as usize;
                (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect::<String>()
            };
            raw.push((part(), part()));
        }
        raw.push(("".into(), "".into()));
        let pairs: Vec<(&str, &str)> = raw.iter().map(|(s, t)| (s.as_str(), t.as_str())).collect();
        let got = assign_names(NamingStyle::Mcpr, pairs.iter().copied());
        let mut by_name: HashMap<&str, (&str, &str)> = HashMap::new();
        for (name, pair) in got.iter().zip(&pairs) {
            assert!(is_valid_tool_name(name), "{name:?} from {pair:?}");
            if let Some(other) = by_name.insert(name, *pair) {
                assert_eq!(other, *pair, "{name} names two different tools");
            }
        }
    }
}
