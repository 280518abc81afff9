//! What a host sets on a manager ([`ManagerOptions`]): the start-up gate, the per-user state
//! (tool cache, logins, tool pins) and what every connection shares.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::DEFAULT_GATE;
#[cfg(feature = "cache")]
use crate::cache::ToolCache;
use crate::pins::PinStore;

/// Settings of a manager.
///
/// [`ManagerOptions::default`] keeps nothing on disk: no tool cache (so no deferred tools) and
/// no credential store (remote servers get no OAuth token). A host that wants the per-user
/// tool cache and stored logins asks for them with [`ManagerOptions::for_user`] or
/// [`ManagerOptions::with_user_state`].
#[derive(Clone)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// The fast-start gate.
    pub gate: Duration,
    /// After the gate, wait for pending servers that have no cached tools (the default:
    /// correctness first). `false` returns at the gate and lets them finish in the background.
    pub wait_for_uncached: bool,
    /// The tool cache; `None` disables deferred tools.
    #[cfg(feature = "cache")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cache")))]
    pub cache: Option<Arc<ToolCache>>,
    /// The project directory: offered to servers as their root, and part of the cache key.
    pub project: PathBuf,
    /// Reconnect automatically when a connection drops.
    pub reconnect: bool,
    /// OAuth for remote servers: the credential store, and whether a 401 may start a login.
    /// `None` sends no token.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub auth: Option<crate::auth::AuthContext>,
    /// Who the manager's connections say they are, and where per-user state lives.
    pub identity: crate::ClientIdentity,
    /// Answers servers that ask the user for input (`elicitation/create`, or embedded in an
    /// `input_required` result); servers are told the client can be asked only when set.
    pub elicitation: Option<crate::client::ElicitationHandler>,
    /// The HTTP client of remote servers (default: the process's shared one); a host passes
    /// its own for a proxy, certificates or headers.
    pub http: crate::net::HttpClient,
    /// Servers' questions about a call go to whoever made it (see
    /// [`ConnectOptions::relay_input`](crate::client::ConnectOptions::relay_input)); a gateway
    /// sets it.
    pub relay_input: bool,
    /// Stdio servers get the host's whole environment: [`ConnectOptions::inherit_env`](crate::client::ConnectOptions::inherit_env).
    pub inherit_env: bool,
    /// Tool pins: a tool whose definition changed since it was first seen, or that shadows
    /// another server's tool, is held (see [`crate::pins`]). `None` (the default) pins nothing;
    /// [`with_user_state`](Self::with_user_state) uses the per-user store.
    pub pins: Option<Arc<PinStore>>,
}

impl std::fmt::Debug for ManagerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("ManagerOptions");
        out.field("gate", &self.gate)
            .field("wait_for_uncached", &self.wait_for_uncached);
        #[cfg(feature = "cache")]
        out.field("cache", &self.cache);
        out.field("project", &self.project)
            .field("reconnect", &self.reconnect)
            .field("identity", &self.identity)
            .field("elicitation", &self.elicitation.is_some())
            .field("http", &self.http)
            .field("relay_input", &self.relay_input)
            .field("inherit_env", &self.inherit_env)
            .field("pins", &self.pins);
        #[cfg(feature = "oauth")]
        out.field("auth", &self.auth);
        out.finish()
    }
}

impl Default for ManagerOptions {
    /// The gate, waiting for uncached servers, reconnects, the current directory as project,
    /// and no persistent state.
    fn default() -> Self {
        ManagerOptions {
            gate: DEFAULT_GATE,
            wait_for_uncached: true,
            #[cfg(feature = "cache")]
            cache: None,
            project: std::env::current_dir().unwrap_or_default(),
            reconnect: true,
            #[cfg(feature = "oauth")]
            auth: None,
            identity: crate::ClientIdentity::default(),
            elicitation: None,
            http: crate::net::HttpClient::shared(),
            relay_input: false,
            inherit_env: false,
            pins: None,
        }
    }
}

impl ManagerOptions {
    /// The defaults plus the per-user state: see [`with_user_state`](Self::with_user_state).
    pub fn for_user() -> Self {
        ManagerOptions::default().with_user_state()
    }

    /// Use the per-user tool cache, credential store and tool pins (opening them in the user's data
    /// directory; either is left off when it cannot be opened). The credential store is used
    /// without ever starting a login: a host at start-up must not block on a browser.
    pub fn with_user_state(mut self) -> Self {
        #[cfg(feature = "cache")]
        {
            self.cache = ToolCache::user_default_in(&self.identity.data_dir).map(Arc::new);
        }
        #[cfg(feature = "oauth")]
        {
            self.auth = crate::auth::AuthContext::user_for(&self.identity);
        }
        self.pins = PinStore::user_default_in(&self.identity.data_dir).map(Arc::new);
        self
    }
}

#[cfg(feature = "oauth")]
crate::setters!(ManagerOptions {
    with_auth => auth: Option<crate::auth::AuthContext>,
});

#[cfg(feature = "cache")]
crate::setters!(ManagerOptions {
    with_cache => cache: Option<Arc<ToolCache>>,
});

crate::setters!(ManagerOptions {
    with_gate => gate: Duration,
    with_wait_for_uncached => wait_for_uncached: bool,
    with_project => project: PathBuf,
    with_reconnect => reconnect: bool,
    with_identity => identity: crate::ClientIdentity,
    with_elicitation => elicitation: Option<crate::client::ElicitationHandler>,
    with_http => http: crate::net::HttpClient,
    with_relay_input => relay_input: bool,
    with_inherit_env => inherit_env: bool,
    with_pins => pins: Option<Arc<PinStore>>,
});
