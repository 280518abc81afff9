//! The manager's bookkeeping: one entry per configured server (config, source, connection
//! phase, generation, live and cached tools, reconnect budget, last error) behind one lock,
//! plus the change signal waiters watch and the event channel hosts subscribe to.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};

use indexmap::IndexMap;
use tokio::sync::{broadcast, watch};

use super::ManagerOptions;
use super::connection::Connector;
use super::events::{ManagerEvent, ServerNotice};
use super::health::ReconnectBudget;
use super::report::{ConnectionState, ServerError, ServerTools};
use crate::client::ToolDefinition;
use crate::config::{ServerConfig, ServerSource};

/// Shared by the API and every supervisor task of one manager.
pub(crate) struct Inner<C: Connector> {
    pub options: ManagerOptions,
    pub connector: C,
    pub state: Mutex<State<C::Conn>>,
    /// Bumped on every state change; waiters watch it.
    pub changed: watch::Sender<u64>,
    pub events: broadcast::Sender<ManagerEvent>,
    /// Logs and resource updates of the connected servers.
    pub notices: broadcast::Sender<ServerNotice>,
}

pub(crate) struct State<K> {
    pub servers: IndexMap<String, Entry<K>>,
    pub next_generation: u64,
}

impl<K> Default for State<K> {
    fn default() -> Self {
        State {
            servers: IndexMap::new(),
            next_generation: 0,
        }
    }
}

/// One configured server.
pub(crate) struct Entry<K> {
    pub config: ServerConfig,
    pub source: Option<ServerSource>,
    pub phase: Phase<K>,
    /// Identifies the current connection sequence; work of an older one is discarded.
    pub generation: u64,
    pub live_tools: Option<Arc<[ToolDefinition]>>,
    /// Tools from the cache, offered while the server is still connecting.
    pub cached_tools: Option<Arc<[ToolDefinition]>>,
    /// The supervisor of the current generation; awaited after an abort so that a connection
    /// still being made is gone (its process group killed) when a shutdown returns.
    pub task: Option<tokio::task::JoinHandle<()>>,
    pub budget: ReconnectBudget,
    pub last_error: Option<ServerError>,
    pub stderr_tail: Vec<String>,
    /// Tools of the server held by their pins (see [`crate::pins`]): not in `live_tools`.
    pub held_tools: Vec<crate::pins::HeldTool>,
    /// The tools left by the config's `enabledTools`/`disabledTools`, kept so that every
    /// reading of the offered tools is the same list (see [`Entry::offered_tools`]).
    filtered: RefCell<Option<Filtered>>,
}

/// One list of tools after the config's tool filter, and what it was made from.
struct Filtered {
    from: Arc<[ToolDefinition]>,
    enabled: Option<Vec<String>>,
    disabled: Vec<String>,
    tools: Arc<[ToolDefinition]>,
}

/// Where one server's connection stands, with the connection itself once there is one.
pub(crate) enum Phase<K> {
    /// Handshake in progress.
    Connecting,
    /// Connected; the first `tools/list` is in progress.
    Loading(Arc<K>),
    Connected(Arc<K>),
    /// The connection dropped; the next attempt starts after a back-off.
    Reconnecting {
        attempt: u32,
    },
    Failed,
    /// Automatic reconnects stopped.
    Suspended,
}

impl<K> Phase<K> {
    /// The public, connection-free view of this phase.
    pub(super) fn state(&self) -> ConnectionState {
        match self {
            Phase::Connecting => ConnectionState::Connecting,
            Phase::Loading(_) => ConnectionState::LoadingTools,
            Phase::Connected(_) => ConnectionState::Connected,
            Phase::Reconnecting { attempt } => ConnectionState::Reconnecting { attempt: *attempt },
            Phase::Failed => ConnectionState::Failed,
            Phase::Suspended => ConnectionState::Suspended,
        }
    }

    /// `true` while a handshake, tool load or reconnect is in progress.
    pub(super) fn is_pending(&self) -> bool {
        self.state().is_pending()
    }

    pub(super) fn client(&self) -> Option<&Arc<K>> {
        match self {
            Phase::Loading(client) | Phase::Connected(client) => Some(client),
            _ => None,
        }
    }
}

impl<K> State<K> {
    pub(super) fn bump_generation(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }
}

impl<K> Entry<K> {
    /// A server about to make its first connection.
    pub(super) fn new(config: ServerConfig, source: Option<ServerSource>, generation: u64) -> Self {
        Entry {
            config,
            source,
            phase: Phase::Connecting,
            generation,
            live_tools: None,
            cached_tools: None,
            task: None,
            budget: ReconnectBudget::default(),
            last_error: None,
            stderr_tail: Vec::new(),
            held_tools: Vec::new(),
            filtered: RefCell::new(None),
        }
    }

    /// The tools this server offers now: live ones, else cached ones while it connects.
    /// The same list (the same `Arc`) as long as neither the tools nor the config's tool
    /// filter changed, so that readers can tell a change by the pointer.
    pub(super) fn offered_tools(&self, name: &str) -> Option<ServerTools> {
        let (tools, deferred) = self.offered_list()?;
        Some(ServerTools {
            server: name.to_owned(),
            source: self.source.clone(),
            tools,
            deferred,
        })
    }

    /// [`offered_tools`](Self::offered_tools) without the server's name and source: the list,
    /// and whether it comes from the cache.
    pub(super) fn offered_list(&self) -> Option<(Arc<[ToolDefinition]>, bool)> {
        let (tools, deferred) = match (&self.live_tools, &self.cached_tools) {
            (Some(live), _) => (live.clone(), false),
            (None, Some(cached)) if self.phase.is_pending() => (cached.clone(), true),
            _ => return None,
        };
        let filters = self.config.enabled_tools.is_some() || !self.config.disabled_tools.is_empty();
        Some((if filters { self.filtered(tools) } else { tools }, deferred))
    }

    /// `tools` after the config's tool filter: made once per list and filter.
    fn filtered(&self, tools: Arc<[ToolDefinition]>) -> Arc<[ToolDefinition]> {
        let mut memo = self.filtered.borrow_mut();
        if let Some(kept) = memo.as_ref()
            && Arc::ptr_eq(&kept.from, &tools)
            && kept.enabled == self.config.enabled_tools
            && kept.disabled == self.config.disabled_tools
        {
            return kept.tools.clone();
        }
        let kept: Arc<[ToolDefinition]> = tools
            .iter()
            .filter(|t| self.config.allows_tool(&t.name))
            .cloned()
            .collect();
        *memo = Some(Filtered {
            from: tools,
            enabled: self.config.enabled_tools.clone(),
            disabled: self.config.disabled_tools.clone(),
            tools: kept.clone(),
        });
        kept
    }
}

impl<C: Connector> Inner<C> {
    pub(super) fn new(options: ManagerOptions, connector: C) -> Self {
        let (changed, _) = watch::channel(0);
        let (events, _) = broadcast::channel(1024);
        let (notices, _) = broadcast::channel(1024);
        Inner {
            options,
            connector,
            state: Mutex::new(State::default()),
            changed,
            events,
            notices,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State<C::Conn>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn notify(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    pub(super) fn emit(&self, event: ManagerEvent) {
        // No subscriber is fine.
        let _ = self.events.send(event);
    }

    /// Apply `update` to the entry of `name` if it still belongs to `generation`. Returns
    /// whether it did.
    pub(super) fn update(
        &self,
        name: &str,
        generation: u64,
        update: impl FnOnce(&mut Entry<C::Conn>),
    ) -> bool {
        let applied = {
            let mut state = self.lock();
            match state.servers.get_mut(name) {
                Some(entry) if entry.generation == generation => {
                    update(entry);
                    true
                }
                _ => false,
            }
        };
        if applied {
            self.notify();
        }
        applied
    }

    pub(super) fn config_of(&self, name: &str, generation: u64) -> Option<ServerConfig> {
        let state = self.lock();
        let entry = state.servers.get(name)?;
        (entry.generation == generation).then(|| entry.config.clone())
    }

    /// Whether `name` still runs the connection sequence `generation`.
    pub(super) fn is_current(&self, name: &str, generation: u64) -> bool {
        self.lock()
            .servers
            .get(name)
            .is_some_and(|e| e.generation == generation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Arc<[ToolDefinition]> {
        names
            .iter()
            .map(|name| serde_json::from_value(serde_json::json!({ "name": name })).unwrap())
            .collect()
    }

    #[test]
    fn a_filtered_list_stays_the_same_list_until_its_tools_or_filter_change() {
        let mut config = ServerConfig::stdio("server", Vec::<String>::new());
        config.disabled_tools = vec!["b".into()];
        let mut entry: Entry<()> = Entry::new(config, None, 1);
        entry.live_tools = Some(tools(&["a", "b"]));
        let first = entry.offered_tools("s").unwrap().tools;
        assert_eq!(first.len(), 1);
        // Readers tell a change by the pointer: an unchanged list is the same `Arc`.
        assert!(Arc::ptr_eq(
            &first,
            &entry.offered_tools("s").unwrap().tools
        ));
        entry.config.disabled_tools = vec!["a".into()];
        assert_eq!(entry.offered_tools("s").unwrap().tools[0].name, "b");
        entry.live_tools = Some(tools(&["a", "b", "c"]));
        let names: Vec<String> = entry
            .offered_list()
            .unwrap()
            .0
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(names, ["b", "c"]);
    }
}
