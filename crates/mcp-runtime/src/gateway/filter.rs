//! Scoped views: which servers and tools a gateway (or a sub-agent) may see and call.

use std::collections::BTreeSet;

use crate::tools::McpTool;

/// Which tools a view offers. The default offers everything.
///
/// Patterns are globs (`*` any run of characters, `?` one character) matched against the
/// exposed name (`mcp_github_search`) and against `<server>/<tool>` (`github/search`). A tool
/// is offered when its server is in scope, it matches an allow pattern (or there are none),
/// and it matches no deny pattern.
///
/// ```
/// use mcp_runtime::gateway::ToolFilter;
///
/// let filter = ToolFilter::default()
///     .with_servers(["github", "files"])
///     .with_pattern("mcp_github_*")
///     .with_pattern("files/read*")
///     .with_pattern("!*delete*");
/// assert!(filter.allows_server("github"));
/// assert!(!filter.allows_server("slack"));
/// assert!(filter.allows("mcp_github_search", "github", "search"));
/// assert!(!filter.allows("mcp_github_delete_repo", "github", "delete_repo"));
/// assert!(!filter.allows("mcp_files_write", "files", "write"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    servers: Option<BTreeSet<String>>,
    allow: Vec<String>,
    deny: Vec<String>,
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

    /// Allow tools matching `glob`; a leading `!` makes it a deny pattern instead.
    pub fn with_pattern(self, glob: impl Into<String>) -> Self {
        let glob = glob.into();
        match glob.strip_prefix('!') {
            Some(denied) => self.deny(denied),
            None => self.allow(glob),
        }
    }

    /// Allow tools matching `glob` (once any allow pattern is given, the others are hidden).
    pub fn allow(mut self, glob: impl Into<String>) -> Self {
        self.allow.push(glob.into());
        self
    }

    /// Hide tools matching `glob`, whatever the allow patterns say.
    pub fn deny(mut self, glob: impl Into<String>) -> Self {
        self.deny.push(glob.into());
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

    /// Whether the tool exposed as `name` (raw `server` and `tool`) is offered.
    pub fn allows(&self, name: &str, server: &str, tool: &str) -> bool {
        if !self.allows_server(server) {
            return false;
        }
        let raw = format!("{server}/{tool}");
        let matches = |glob: &String| glob_match(glob, name) || glob_match(glob, &raw);
        (self.allow.is_empty() || self.allow.iter().any(matches)) && !self.deny.iter().any(matches)
    }

    /// [`allows`](Self::allows) for a built tool.
    pub fn allows_tool(&self, tool: &McpTool) -> bool {
        self.allows(&tool.name, &tool.server, &tool.tool)
    }
}

/// `*` matches any run of characters (also none), `?` exactly one; everything else itself.
fn glob_match(pattern: &str, text: &str) -> bool {
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
            Some(&c) if c == '?' || c == text[t] => {
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
    fn deny_wins_over_allow() {
        let filter = ToolFilter::default().allow("*").deny("x/*");
        assert!(!filter.allows("mcp_x_y", "x", "y"));
        assert!(filter.allows("mcp_z_y", "z", "y"));
    }
}
