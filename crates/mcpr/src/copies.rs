//! Servers configured more than once: the same definition (the same command, arguments and
//! environment, or the same URL and headers, with the same tool filters) under several names,
//! typically one per AI tool that lists it. Commands that list tools start one of each such
//! group and name the others, instead of showing every tool once per copy.

use indexmap::IndexMap;
use mcp_runtime::config::{ServerConfig, ServerSource};

/// Another name a server is configured under, and the AI tool whose config says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alias {
    /// The other server name.
    pub name: String,
    /// The display name of the AI tool (`Cursor`), when known.
    pub host: Option<String>,
}

/// For each server kept, the copies folded into it.
#[derive(Debug, Default)]
pub(crate) struct Copies(IndexMap<String, Vec<Alias>>);

impl Copies {
    /// Keep the first of each group of identical definitions in `configs` (the one of highest
    /// priority) and remove the others, remembering them.
    pub(crate) fn fold(
        configs: &mut IndexMap<String, ServerConfig>,
        sources: &IndexMap<String, ServerSource>,
    ) -> Copies {
        let mut copies: IndexMap<String, Vec<Alias>> = IndexMap::new();
        let mut kept: Vec<String> = Vec::new();
        let names: Vec<String> = configs.keys().cloned().collect();
        for name in names {
            let Some(config) = configs.get(&name) else {
                continue;
            };
            let original = kept.iter().find(|kept| {
                configs
                    .get(kept.as_str())
                    .is_some_and(|other| same_server(other, config))
            });
            match original {
                Some(original) => copies.entry(original.clone()).or_default().push(Alias {
                    host: sources.get(&name).map(|s| s.provider_name.clone()),
                    name,
                }),
                None => kept.push(name),
            }
        }
        for copy in copies.values().flatten() {
            configs.shift_remove(&copy.name);
        }
        Copies(copies)
    }

    /// The copies folded into `server`.
    pub(crate) fn of(&self, server: &str) -> &[Alias] {
        self.0.get(server).map(Vec::as_slice).unwrap_or_default()
    }

    /// "`b` (Cursor), `c` (VS Code)": the copies of `server` for a message; `None` when none.
    pub(crate) fn named(&self, server: &str) -> Option<String> {
        let copies = self.of(server);
        (!copies.is_empty()).then(|| {
            copies
                .iter()
                .map(|copy| match &copy.host {
                    Some(host) => format!("`{}` ({host})", copy.name),
                    None => format!("`{}`", copy.name),
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

/// Whether two definitions start the same server with the same tools: the same transport
/// (command, arguments, environment, directory and sandbox; or URL, headers and login), the
/// same variables passed on, and the same tool filters. Names, timeouts and the AI tool they come from do not matter.
fn same_server(a: &ServerConfig, b: &ServerConfig) -> bool {
    a.transport == b.transport
        && a.env_vars == b.env_vars
        && a.bearer_token_env_var == b.bearer_token_env_var
        && a.env_headers == b.env_headers
        && a.enabled_tools == b.enabled_tools
        && a.disabled_tools == b.disabled_tools
}
