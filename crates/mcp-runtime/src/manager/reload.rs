//! Reloading the configuration in place: the new set of servers is compared with the running
//! one, and only the difference is acted on. Added servers start, removed ones stop, changed
//! ones (a field that shapes the connection, or where the definition comes from, which is
//! what its trust is bound to) restart, and the others keep their process, their connection
//! and their in-flight calls. A server that had failed or was suspended is tried again.
//!
//! Fields that only shape the tool view (`enabled_tools`, `disabled_tools`, `alwaysLoad`) are
//! applied without a restart.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use indexmap::IndexMap;

use super::report::StartupReport;
use super::state::{Entry, Phase};
use super::{DEFAULT_EXIT_GRACE, ManagerEvent, McpManager, shutdown};
use crate::config::{ServerConfig, ServerSource};

/// What a reload did ([`McpManager::reload`]) or would do ([`McpManager::plan_reload`]):
/// server names per kind of change, in the new config's order (removed ones in the old order).
///
/// Its `Display` is one line such as `+m2, ~m3, -m4, 5 unchanged`: `+` added, `~` restarted
/// because its config changed, `-` removed, `retried` for a failed server started again.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ReloadSummary {
    /// Servers that were not running and were started.
    pub added: Vec<String>,
    /// Servers whose connection settings or origin changed: stopped and started again.
    pub restarted: Vec<String>,
    /// Servers no longer configured: stopped (process group included).
    pub removed: Vec<String>,
    /// Servers with the same config that had failed or were suspended: started again.
    pub retried: Vec<String>,
    /// Servers left as they were: same process, same connection, calls in flight untouched
    /// (a change to their tool filters applies at once).
    pub unchanged: Vec<String>,
    /// The start-up gate over the servers started (added, restarted, retried): their tools,
    /// errors and those still connecting. Empty from [`McpManager::plan_reload`].
    pub startup: StartupReport,
}

impl ReloadSummary {
    /// The servers the reload starts: added, restarted and retried.
    pub fn started(&self) -> impl Iterator<Item = &String> {
        self.added
            .iter()
            .chain(&self.restarted)
            .chain(&self.retried)
    }

    /// Whether nothing is started or stopped.
    pub fn is_noop(&self) -> bool {
        self.started().next().is_none() && self.removed.is_empty()
    }
}

impl fmt::Display for ReloadSummary {
    /// `+added, ~restarted, -removed, retried name, N unchanged`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.added.iter().map(|name| format!("+{name}")));
        parts.extend(self.restarted.iter().map(|name| format!("~{name}")));
        parts.extend(self.removed.iter().map(|name| format!("-{name}")));
        parts.extend(self.retried.iter().map(|name| format!("retried {name}")));
        parts.push(format!("{} unchanged", self.unchanged.len()));
        f.write_str(&parts.join(", "))
    }
}

/// What a reload does to one configured server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Not running: start it.
    Add,
    /// Its connection or origin changed: stop it and start it again.
    Restart,
    /// Same config, but it failed or was suspended: start it again.
    Retry,
    /// Only its tool view changed: apply it in place.
    ViewOnly,
    /// Nothing to do.
    Same,
}

/// The change `config` (from `source`) means for the server now in `entry`.
fn classify<K>(
    entry: Option<&Entry<K>>,
    config: &ServerConfig,
    source: Option<&ServerSource>,
) -> Change {
    let Some(entry) = entry else {
        return Change::Add;
    };
    if connection_of(&entry.config) != connection_of(config)
        || origin_differs(entry.source.as_ref(), source)
    {
        Change::Restart
    } else if matches!(entry.phase, Phase::Failed | Phase::Suspended) {
        Change::Retry
    } else if entry.config != *config {
        Change::ViewOnly
    } else {
        Change::Same
    }
}

/// `config` without the fields that only shape the tool view, so that two configs compare
/// equal exactly when their connections would be the same.
fn connection_of(config: &ServerConfig) -> ServerConfig {
    ServerConfig {
        enabled_tools: None,
        disabled_tools: Vec::new(),
        always_load: false,
        ..config.clone()
    }
}

/// Whether the definition now comes from another file or level. Trust is bound to the file a
/// definition is in, so a server that moved is started afresh under its new origin. A host
/// that passes no sources compares configs only.
fn origin_differs(old: Option<&ServerSource>, new: Option<&ServerSource>) -> bool {
    match (old, new) {
        (Some(old), Some(new)) => old.path != new.path || old.level != new.level,
        _ => false,
    }
}

impl McpManager {
    /// What [`reload`](Self::reload) with these configs would do, without doing it.
    pub fn plan_reload(
        &self,
        configs: &IndexMap<String, ServerConfig>,
        sources: &IndexMap<String, ServerSource>,
    ) -> ReloadSummary {
        let state = self.lock();
        let mut summary = ReloadSummary {
            removed: state
                .servers
                .keys()
                .filter(|name| !configs.contains_key(*name))
                .cloned()
                .collect(),
            ..ReloadSummary::default()
        };
        for (name, config) in configs {
            let change = classify(state.servers.get(name), config, sources.get(name));
            summary.list_mut(change).push(name.clone());
        }
        summary
    }

    /// Apply a new configuration by difference: start added servers, stop removed ones,
    /// restart changed ones (a connection field, or the file or level the definition comes
    /// from), start failed or suspended ones again, and leave the others running — same
    /// process, same connection, calls in flight untouched. Returns once the servers started
    /// have passed the start-up gate, as [`connect_servers`](Self::connect_servers) does.
    ///
    /// Every server whose tools change is announced with [`ManagerEvent::ToolsChanged`] (a
    /// [`Gateway`](crate::gateway::Gateway) turns that into `notifications/tools/list_changed`
    /// for its clients); a reload that changes nothing announces nothing.
    pub async fn reload(
        &self,
        configs: IndexMap<String, ServerConfig>,
        sources: IndexMap<String, ServerSource>,
    ) -> ReloadSummary {
        let gate_passed = Arc::new(AtomicBool::new(false));
        let mut summary = ReloadSummary::default();
        let mut stopped = Vec::new();
        let mut replaced = Vec::new();
        let mut retooled = Vec::new();
        {
            let mut state = self.lock();
            let gone: Vec<String> = state
                .servers
                .keys()
                .filter(|name| !configs.contains_key(*name))
                .cloned()
                .collect();
            for name in gone {
                if let Some(entry) = state.servers.shift_remove(&name) {
                    stopped.push(entry);
                    summary.removed.push(name);
                }
            }
            for (name, config) in &configs {
                let source = sources.get(name).cloned();
                let change = classify(state.servers.get(name), config, source.as_ref());
                match change {
                    Change::Add => {
                        let generation = state.bump_generation();
                        let entry = Entry::new(config.clone(), source, generation);
                        state.servers.insert(name.clone(), entry);
                        // Nothing to wait for: it starts now.
                        self.spawn_server(&mut state, name, generation, &gate_passed);
                    }
                    Change::Restart | Change::Retry => {
                        let generation = state.bump_generation();
                        if let Some(entry) = state.servers.get_mut(name) {
                            let source = source.or_else(|| entry.source.clone());
                            let fresh = Entry::new(config.clone(), source, generation);
                            // Started once the old connection is closed (below), so that the
                            // old and the new process never run side by side.
                            replaced.push(std::mem::replace(entry, fresh));
                        }
                    }
                    Change::ViewOnly | Change::Same => {
                        if let Some(entry) = state.servers.get_mut(name) {
                            if change == Change::ViewOnly {
                                entry.config = config.clone();
                                retooled.push(name.clone());
                            }
                            if source.is_some() {
                                entry.source = source;
                            }
                        }
                    }
                }
                summary.list_mut(change).push(name.clone());
            }
            let order: HashMap<&String, usize> =
                configs.keys().enumerate().map(|(i, k)| (k, i)).collect();
            state
                .servers
                .sort_by_cached_key(|name, _| order.get(name).copied().unwrap_or(usize::MAX));
        }
        self.inner.notify();
        let changed = summary
            .removed
            .iter()
            .chain(&summary.restarted)
            .chain(&summary.retried)
            .chain(&retooled);
        for name in changed {
            self.inner.emit(ManagerEvent::ToolsChanged {
                server: name.clone(),
            });
        }

        let stop_removed = async {
            futures::future::join_all(
                stopped
                    .into_iter()
                    .map(|entry| shutdown(entry, DEFAULT_EXIT_GRACE)),
            )
            .await;
            for name in &summary.removed {
                self.inner.emit(ManagerEvent::Disconnected {
                    server: name.clone(),
                });
            }
        };
        let restart = async {
            futures::future::join_all(
                replaced
                    .into_iter()
                    .map(|entry| shutdown(entry, DEFAULT_EXIT_GRACE)),
            )
            .await;
            {
                let mut state = self.lock();
                for name in summary.restarted.iter().chain(&summary.retried) {
                    // Unless something else replaced or removed it meanwhile.
                    let waiting = state
                        .servers
                        .get(name)
                        .filter(|entry| entry.task.is_none() && entry.phase.is_pending())
                        .map(|entry| entry.generation);
                    if let Some(generation) = waiting {
                        self.spawn_server(&mut state, name, generation, &gate_passed);
                    }
                }
            }
            self.inner.notify();
            let started: Vec<String> = summary.started().cloned().collect();
            self.gate(&started, gate_passed.clone()).await
        };
        let ((), startup) = tokio::join!(stop_removed, restart);
        summary.startup = startup;
        summary
    }
}

impl ReloadSummary {
    fn list_mut(&mut self, change: Change) -> &mut Vec<String> {
        match change {
            Change::Add => &mut self.added,
            Change::Restart => &mut self.restarted,
            Change::Retry => &mut self.retried,
            Change::ViewOnly | Change::Same => &mut self.unchanged,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::Level;

    fn entry(config: &ServerConfig, source: Option<ServerSource>) -> Entry<()> {
        Entry::new(config.clone(), source, 1)
    }

    fn source(path: &str, level: Level) -> ServerSource {
        ServerSource {
            provider_id: "mcpr".into(),
            provider_name: "mcpr".into(),
            path: PathBuf::from(path),
            level,
        }
    }

    #[test]
    fn connection_fields_restart_view_fields_do_not() {
        let base = ServerConfig::stdio("srv", ["--a"]);
        let running = entry(&base, None);
        assert_eq!(classify(None::<&Entry<()>>, &base, None), Change::Add);
        assert_eq!(classify(Some(&running), &base, None), Change::Same);

        let args = ServerConfig::stdio("srv", ["--b"]);
        assert_eq!(classify(Some(&running), &args, None), Change::Restart);
        let timeout = ServerConfig {
            startup_timeout_ms: Some(5),
            ..base.clone()
        };
        assert_eq!(classify(Some(&running), &timeout, None), Change::Restart);

        let filtered = ServerConfig {
            disabled_tools: vec!["rm".into()],
            always_load: true,
            ..base.clone()
        };
        assert_eq!(classify(Some(&running), &filtered, None), Change::ViewOnly);
    }

    #[test]
    fn a_definition_from_another_file_or_level_restarts() {
        let base = ServerConfig::stdio("srv", Vec::<String>::new());
        let user = source("/home/u/.config/mcpr/mcp.json", Level::User);
        let running = entry(&base, Some(user.clone()));
        assert_eq!(classify(Some(&running), &base, Some(&user)), Change::Same);
        let project = source("/p/.mcp.json", Level::Project);
        assert_eq!(
            classify(Some(&running), &base, Some(&project)),
            Change::Restart
        );
        // Without sources, only the config counts.
        assert_eq!(classify(Some(&running), &base, None), Change::Same);
    }

    #[test]
    fn failed_servers_are_retried() {
        let base = ServerConfig::stdio("srv", Vec::<String>::new());
        let mut failed = entry(&base, None);
        failed.phase = Phase::Failed;
        assert_eq!(classify(Some(&failed), &base, None), Change::Retry);
        failed.phase = Phase::Suspended;
        assert_eq!(classify(Some(&failed), &base, None), Change::Retry);
    }

    #[test]
    fn the_summary_reads_as_one_line() {
        let summary = ReloadSummary {
            added: vec!["m2".into()],
            restarted: vec!["m3".into()],
            removed: vec!["m4".into()],
            unchanged: (0..5).map(|i| format!("u{i}")).collect(),
            ..ReloadSummary::default()
        };
        assert_eq!(summary.to_string(), "+m2, ~m3, -m4, 5 unchanged");
        assert!(!summary.is_noop());
        let same = ReloadSummary {
            unchanged: vec!["a".into()],
            ..ReloadSummary::default()
        };
        assert_eq!(same.to_string(), "1 unchanged");
        assert!(same.is_noop());
    }
}
