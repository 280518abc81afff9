//! Scoped views: which servers, tools, prompts and resources a gateway (or a sub-agent) may
//! see and use.

use std::collections::BTreeSet;

use crate::tools::McpTool;

/// What a view offers. The default offers everything.
///
/// Patterns are globs (`*` any run of characters, `?` one character) and match without
/// regard to case, except resource allow patterns (see below), so `!*delete*` hides
/// `Delete_File` and `DELETE-ALL` too.
///
/// - Tools and prompts share one namespace: their patterns match the exposed name
///   (`mcp_github_search`) and `<server>/<name>` (`github/search`).
/// - Resources have patterns of their own, matched against `<server>/<uri>`
///   (`files/file:///docs/readme.md`); resource templates are matched the same way by their
///   URI template. Resource allow patterns match the URI as written, case included: a client
///   chooses the URI it reads through a template, and on most servers `file:///Docs/` is not
///   `file:///docs/`, so a case-blind allow pattern would offer what it does not name.
///
/// An item is offered when its server is in scope, it matches no deny pattern of its kind, and
/// either the view has no allow pattern at all, or one of the allow patterns of its kind names
/// it. So a view given any allow pattern is an allow-list for everything: `--tools 'files/*'`
/// alone offers no resource, and `--resources ...` alone offers no tool or prompt.
///
/// ```
/// use mcp_runtime::gateway::ToolFilter;
///
/// let filter = ToolFilter::default()
///     .with_servers(["github", "files"])
///     .with_pattern("mcp_github_*")
///     .with_pattern("files/read*")
///     .with_pattern("!*delete*")
///     .allow_resource("files/file:///docs/*");
/// assert!(filter.allows_server("github"));
/// assert!(!filter.allows_server("slack"));
/// assert!(filter.allows("mcp_github_search", "github", "search"));
/// assert!(!filter.allows("mcp_github_delete_repo", "github", "delete_repo"));
/// assert!(!filter.allows("mcp_files_write", "files", "write"));
/// assert!(filter.allows_resource("files", "file:///docs/readme.md"));
/// assert!(!filter.allows_resource("files", "file:///home/me/.ssh/id_ed25519"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    servers: Option<BTreeSet<String>>,
    allow: Vec<String>,
    deny: Vec<String>,
    allow_resources: Vec<String>,
    deny_resources: Vec<String>,
}

impl ToolFilter {
    /// Only these servers (by their configured name). Calling it again adds to the set.
    pub fn with_servers<I, S>(mut self, servers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.servers
            .get_or_insert_with(BTreeSet::new)
            .extend(servers.into_iter().map(Into::into));
        self
    }

    /// Allow tools and prompts matching `glob`; a leading `!` makes it a deny pattern instead.
    pub fn with_pattern(self, glob: impl Into<String>) -> Self {
        let glob = glob.into();
        match glob.strip_prefix('!') {
            Some(denied) => self.deny(denied),
            None => self.allow(glob),
        }
    }

    /// Allow tools and prompts matching `glob` (once any allow pattern is given, whatever no
    /// allow pattern names is hidden).
    pub fn allow(mut self, glob: impl Into<String>) -> Self {
        self.allow.push(glob.into());
        self
    }

    /// Hide tools and prompts matching `glob`, whatever the allow patterns say.
    pub fn deny(mut self, glob: impl Into<String>) -> Self {
        self.deny.push(glob.into());
        self
    }

    /// Allow resources whose `<server>/<uri>` matches `glob`; a leading `!` makes it a deny
    /// pattern instead.
    pub fn with_resource_pattern(self, glob: impl Into<String>) -> Self {
        let glob = glob.into();
        match glob.strip_prefix('!') {
            Some(denied) => self.deny_resource(denied),
            None => self.allow_resource(glob),
        }
    }

    /// Allow resources whose `<server>/<uri>` matches `glob` (once any allow pattern is given,
    /// whatever no allow pattern names is hidden).
    pub fn allow_resource(mut self, glob: impl Into<String>) -> Self {
        self.allow_resources.push(glob.into());
        self
    }

    /// Hide resources whose `<server>/<uri>` matches `glob`, whatever the allow patterns say.
    pub fn deny_resource(mut self, glob: impl Into<String>) -> Self {
        self.deny_resources.push(glob.into());
        self
    }

    /// The servers in scope, when restricted.
    pub fn servers(&self) -> Option<&BTreeSet<String>> {
        self.servers.as_ref()
    }

    /// Whether `server` is in scope.
    pub fn allows_server(&self, server: &str) -> bool {
        self.servers.as_ref().is_none_or(|s| s.contains(server))
    }

    /// Whether any allow pattern was given, of any kind: then only what they name is offered.
    pub fn is_allow_list(&self) -> bool {
        !self.allow.is_empty() || !self.allow_resources.is_empty()
    }

    /// Whether the tool exposed as `name` (raw `server` and `tool`) is offered.
    pub fn allows(&self, name: &str, server: &str, tool: &str) -> bool {
        if !self.allows_server(server) {
            return false;
        }
        let raw = format!("{server}/{tool}");
        let matches =
            |glob: &String| glob_match_any_case(glob, name) || glob_match_any_case(glob, &raw);
        self.passes(&self.allow, &self.deny, matches)
    }

    /// Whether the prompt exposed as `name` (raw `server` and `prompt`) is offered: prompts
    /// share the tools' namespace and patterns.
    pub fn allows_prompt(&self, name: &str, server: &str, prompt: &str) -> bool {
        self.allows(name, server, prompt)
    }

    /// Whether the resource `uri` of `server` is offered (also used for the URIs a client reads
    /// through a resource template, and for the templates themselves).
    ///
    /// Deny patterns also match regardless of percent-encoding, case, backslashes and repeated
    /// slashes: a client chooses the URI it reads through a template, and a server may decode
    /// `%73ecret` or `//secret` into what a pattern denies.
    pub fn allows_resource(&self, server: &str, uri: &str) -> bool {
        if !self.allows_server(server) {
            return false;
        }
        let raw = format!("{server}/{uri}");
        let plain = plain_uri(&raw);
        let allowed = !self.is_allow_list()
            || self
                .allow_resources
                .iter()
                .any(|glob| glob_match(glob, &raw));
        allowed
            && !self
                .deny_resources
                .iter()
                .any(|glob| glob_match_any_case(glob, &raw) || glob_match(&plain_uri(glob), &plain))
    }

    /// [`allows`](Self::allows) for a built tool.
    pub fn allows_tool(&self, tool: &McpTool) -> bool {
        self.allows(&tool.name, &tool.server, &tool.tool)
    }

    /// Not denied, and allowed by `allow` (or no allow pattern of any kind was given).
    fn passes(&self, allow: &[String], deny: &[String], matches: impl Fn(&String) -> bool) -> bool {
        let allowed = if self.is_allow_list() {
            allow.iter().any(&matches)
        } else {
            true
        };
        allowed && !deny.iter().any(matches)
    }
}

/// How lenient servers may read `uri`: percent-decoded (repeatedly, for servers that decode
/// twice), lower case, `\\` as `/`, and runs of `/` as one.
pub(crate) fn plain_uri(uri: &str) -> String {
    let decoded = fully_decoded(uri).to_lowercase().replace('\\', "/");
    let mut plain = String::with_capacity(decoded.len());
    for c in decoded.chars() {
        if !(c == '/' && plain.ends_with('/')) {
            plain.push(c);
        }
    }
    plain
}

/// `text` percent-decoded until nothing changes (a few rounds at most).
pub(crate) fn fully_decoded(text: &str) -> String {
    let mut text = text.to_owned();
    // Each round that changes something shortens the text; four rounds cover any server.
    for _ in 0..4 {
        let decoded = percent_encoding::percent_decode_str(&text)
            .decode_utf8_lossy()
            .into_owned();
        if decoded == text {
            break;
        }
        text = decoded;
    }
    text
}

/// `*` matches any run of characters (also none), `?` exactly one; everything else itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    glob_match_by(pattern, text, |p, t| p == t)
}

/// [`glob_match`], where a letter also matches itself in another case (`d` matches `D`).
fn glob_match_any_case(pattern: &str, text: &str) -> bool {
    glob_match_by(pattern, text, |p, t| {
        p == t || p.to_lowercase().eq(t.to_lowercase())
    })
}

/// [`glob_match`] with `same` deciding whether a pattern character matches a text character.
fn glob_match_by(pattern: &str, text: &str, same: impl Fn(char, char) -> bool) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // Greedy matching with backtracking to the last `*`: linear in practice, no recursion.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || same(c, text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*", ""));
        assert!(glob_match("mcp_*", "mcp_a_b"));
        assert!(glob_match("*_b", "mcp_a_b"));
        assert!(glob_match("m?p*b", "mcp_a_b"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(!glob_match("mcp_", "mcp_a"));
        assert!(glob_match("exact", "exact"));
    }

    #[test]
    fn default_allows_everything() {
        let filter = ToolFilter::default();
        assert!(filter.allows("mcp_x_y", "x", "y"));
    }

    #[test]
    fn any_allow_pattern_makes_an_allow_list_for_every_kind() {
        let tools_only = ToolFilter::default().allow("files/list*");
        assert!(tools_only.allows("mcp_files_list", "files", "list"));
        assert!(tools_only.allows_prompt("mcp_files_listing", "files", "listing"));
        assert!(!tools_only.allows_prompt("mcp_files_secret", "files", "secret"));
        assert!(!tools_only.allows_resource("files", "file:///etc/passwd"));

        let resources_only = ToolFilter::default().with_resource_pattern("files/file:///docs/*");
        assert!(resources_only.allows_resource("files", "file:///docs/a.md"));
        assert!(!resources_only.allows_resource("other", "file:///docs/a.md"));
        assert!(!resources_only.allows("mcp_files_list", "files", "list"));
        assert!(!resources_only.allows_prompt("mcp_files_p", "files", "p"));
    }

    #[test]
    fn resource_deny_patterns_apply_without_allow_patterns() {
        let filter = ToolFilter::default().with_resource_pattern("!*/secret*");
        assert!(filter.allows_resource("a", "mock://a/public"));
        assert!(!filter.allows_resource("a", "secret://x"));
        assert!(filter.allows("mcp_a_echo", "a", "echo"));
        // Tool deny patterns do not hide resources, nor the other way round.
        let filter = ToolFilter::default().deny("*");
        assert!(filter.allows_resource("a", "mock://a/public"));
    }

    #[test]
    fn resource_deny_patterns_see_through_encodings() {
        let filter = ToolFilter::default().deny_resource("fs/file:///srv/secret/*");
        for uri in [
            "file:///srv/secret/key",
            "file:///srv//secret/key",
            "file:///srv/%73ecret/key",
            "file:///srv/%2573ecret/key",
            "file:///srv/secret%2Fkey",
            "file:///srv\\secret\\key",
            "FILE:///SRV/Secret/key",
        ] {
            assert!(!filter.allows_resource("fs", uri), "{uri}");
        }
        assert!(filter.allows_resource("fs", "file:///srv/public/key"));
        // Allow patterns stay literal: an encoding never widens what is offered.
        let filter = ToolFilter::default().allow_resource("fs/file:///srv/public/*");
        assert!(!filter.allows_resource("fs", "file:///srv/%70ublic/key"));
    }

    #[test]
    fn tool_and_prompt_patterns_ignore_case() {
        let filter = ToolFilter::default().deny("*delete*");
        for tool in ["Delete_File", "DELETE-ALL", "delete", "unDeLeTe"] {
            let name = format!("mcp_fs_{tool}");
            assert!(!filter.allows(&name, "fs", tool), "{tool}");
            assert!(!filter.allows_prompt(&name, "fs", tool), "{tool}");
        }
        assert!(filter.allows("mcp_fs_read_file", "fs", "read_file"));
        // Allow patterns too, the server's part included; Unicode letters as well.
        let filter = ToolFilter::default().allow("FS/READ_*").deny("*ÉCRIRE*");
        assert!(filter.allows("mcp_fs_read_file", "fs", "read_file"));
        assert!(filter.allows_prompt("mcp_fs_Read_Me", "fs", "Read_Me"));
        assert!(!filter.allows("mcp_fs_read_écrire", "fs", "read_écrire"));
        assert!(!filter.allows("mcp_fs_write", "fs", "write"));
        assert!(glob_match_any_case("a?C*", "Abcdef"));
        assert!(!glob_match_any_case("a?C", "Abcd"));
    }

    #[test]
    fn resource_deny_patterns_ignore_case_and_allow_patterns_do_not() {
        let filter = ToolFilter::default().deny_resource("*SECRET*");
        assert!(!filter.allows_resource("fs", "mock://fs/secret"));
        assert!(!filter.allows_resource("FS", "mock://fs/Secret-1"));
        let filter = ToolFilter::default().allow_resource("fs/file:///docs/*");
        assert!(filter.allows_resource("fs", "file:///docs/a.md"));
        assert!(!filter.allows_resource("fs", "file:///DOCS/a.md"));
    }

    #[test]
    fn deny_wins_over_allow() {
        let filter = ToolFilter::default().allow("*").deny("x/*");
        assert!(!filter.allows("mcp_x_y", "x", "y"));
        assert!(filter.allows("mcp_z_y", "z", "y"));
    }
}
