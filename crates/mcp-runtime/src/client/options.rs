//! What a host sets on a connection ([`ConnectOptions`]) and on one tool call
//! ([`CallOptions`], the one call-options type of the client, the manager, the tool bridge,
//! the session and the gateway), and where the cap on a tool result is set.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ClientEvent, ElicitationHandler, OutputCap, ProgressUpdate};

/// Settings of a connection that do not come from the server's config.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// Directories offered to the server in `roots/list` (default: the current directory).
    pub roots: Vec<PathBuf>,
    /// Where to send server notifications (tool list changes, logs, progress). The channel is
    /// bounded so that a flooding server cannot grow the host's memory: when it is full, log
    /// and progress events are dropped, while a tool-list change waits for room (merged with
    /// later ones), so it is never lost. [`EVENT_BUFFER`](super::EVENT_BUFFER) is a fitting capacity.
    pub events: Option<mpsc::Sender<ClientEvent>>,
    /// Answers the server's `elicitation/create` requests. Servers are told the client
    /// supports elicitation only when this is set.
    pub elicitation: Option<ElicitationHandler>,
    /// OAuth for remote servers: stored credentials, and whether a 401 may start a login.
    /// `None` (the default) sends no token; [`ConnectOptions::with_user_state`] uses the
    /// per-user credential store without ever starting a login.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub auth: Option<crate::auth::AuthContext>,
    /// Sent as `clientInfo` in the handshake (default: mcpr's).
    pub identity: crate::ClientIdentity,
    /// The HTTP client of remote servers (streamable HTTP and legacy SSE). The default is the
    /// process's shared one; a host passes its own for a proxy, certificates or headers.
    pub http: crate::net::HttpClient,
    /// Where the era each server speaks is remembered, so that a later connection opens the
    /// right way at once; `None` probes every time.
    #[cfg(feature = "cache")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cache")))]
    pub cache: Option<std::sync::Arc<crate::cache::ToolCache>>,
    /// The server's questions about a call go to whoever made the call (a gateway relays
    /// them to its own client), so 2025-11-25 servers are told in `initialize` that the client
    /// can elicit and sample; a question whose caller cannot answer it is declined (an
    /// elicitation) or refused (sampling). Off (the default), `elicitation` decides.
    pub relay_input: bool,
    /// Every stdio server receives the host's whole environment (but mcpr's own `MCPR_*`
    /// variables), as if each had `inheritEnv: true`. Off (the default), a server receives
    /// the allowlist of [`ServerEnvironment`](super::ServerEnvironment) and its configured
    /// values only.
    pub inherit_env: bool,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("ConnectOptions");
        out.field("roots", &self.roots)
            .field("events", &self.events.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("identity", &self.identity)
            .field("http", &self.http)
            .field("relay_input", &self.relay_input)
            .field("inherit_env", &self.inherit_env);
        #[cfg(feature = "cache")]
        out.field("cache", &self.cache.is_some());
        #[cfg(feature = "oauth")]
        out.field("auth", &self.auth);
        out.finish()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            roots: std::env::current_dir().into_iter().collect(),
            events: None,
            elicitation: None,
            #[cfg(feature = "oauth")]
            auth: None,
            identity: crate::ClientIdentity::default(),
            http: crate::net::HttpClient::shared(),
            #[cfg(feature = "cache")]
            cache: None,
            relay_input: false,
            inherit_env: false,
        }
    }
}

impl ConnectOptions {
    /// Use the per-user credential store for remote servers (never starting a login). The
    /// default opens nothing in the user's home.
    #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
    pub fn with_user_state(mut self) -> Self {
        #[cfg(feature = "oauth")]
        {
            self.auth = crate::auth::AuthContext::user_for(&self.identity);
        }
        self
    }
}

/// Settings of one tool call, wherever it is made: [`McpClient::call_tool`],
/// [`McpManager::call_tool`], [`McpTool::call`], a session, or a sub-agent handle.
///
/// A connection honours `timeout`, `cancel` and `progress`; the tool bridge (and so the
/// session and the gateway) also applies `cap` and `output_cap`.
///
/// ```
/// use std::time::Duration;
/// use mcp_runtime::client::CallOptions;
///
/// let options = CallOptions::default().with_timeout(Duration::from_secs(30));
/// assert_eq!(options.timeout, Some(Duration::from_secs(30)));
/// ```
///
/// [`McpClient::call_tool`]: super::McpClient::call_tool
/// [`McpManager::call_tool`]: crate::manager::McpManager::call_tool
/// [`McpTool::call`]: crate::tools::McpTool::call
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Overrides the server's tool timeout for this call.
    pub timeout: Option<Duration>,
    /// A cap on the whole call, waiting for a connecting server included: when it is reached
    /// the call is cancelled and the caller gets an error result.
    pub cap: Option<Duration>,
    /// Cancels the call; the server is sent `notifications/cancelled`.
    pub cancel: Option<CancellationToken>,
    /// Receives the `notifications/progress` the server sends about this call, in the order
    /// they are handled (a gateway forwards them to its own client). Bounded: while it is full,
    /// further updates are dropped (progress is advisory; a later update supersedes them), so a
    /// flooding server cannot grow memory. [`EVENT_BUFFER`](super::EVENT_BUFFER) is a fitting
    /// capacity.
    pub progress: Option<mpsc::Sender<ProgressUpdate>>,
    /// Cut a result over this cap and spill the whole of it to a file (see [`OutputCap`]).
    /// `None` leaves the choice to the path: the gateway, sub-agent handles and sessions
    /// apply their own cap (by default [`OutputCap::for_agents`]); a bare client, the manager
    /// and a tool bridge call without one return results whole.
    pub output_cap: Option<OutputCap>,
    /// The trace context the request carries in its `_meta` (`traceparent`, `tracestate`,
    /// `baggage`), passed on unchanged: a gateway's client's, or a script's.
    pub trace: super::TraceContext,
    /// Receives the state of the call's task each time it is seen (polled or pushed), when
    /// the tool runs as a task. Bounded like `progress`: a full channel drops an update.
    pub task_status: Option<mpsc::Sender<super::TaskState>>,
    /// Where the server's questions about this call go (a gateway's client), instead of the
    /// connection's host handlers.
    pub(crate) input: Option<super::ask::CallInput>,
    /// A task the server makes of the call is handed back as it is (an output whose `extra`
    /// holds the task, `resultType: "task"` included) instead of followed: a gateway passes
    /// it to its client.
    pub(crate) pass_tasks: bool,
    /// The answers and the server's state its first request carries: a call resumed from
    /// scratch after a 2026-07-28 server's `input_required` (see the gateway's `resume`).
    pub(crate) resumed: Option<std::sync::Arc<super::Retry>>,
}

impl CallOptions {
    /// Override the server's tool timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Cap the whole call.
    pub fn with_cap(mut self, cap: Duration) -> Self {
        self.cap = Some(cap);
        self
    }

    /// Cancel the call when `cancel` is cancelled.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Send the server's progress about this call to `progress`.
    pub fn with_progress(mut self, progress: mpsc::Sender<ProgressUpdate>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Cap this call's result (see [`OutputCap`]).
    pub fn with_output_cap(mut self, cap: OutputCap) -> Self {
        self.output_cap = Some(cap);
        self
    }

    /// Send the state of the call's task to `status` each time it is seen.
    pub fn with_task_status(mut self, status: mpsc::Sender<super::TaskState>) -> Self {
        self.task_status = Some(status);
        self
    }

    /// Carry `trace` in the request's `_meta`.
    pub fn with_trace(mut self, trace: super::TraceContext) -> Self {
        self.trace = trace;
        self
    }
}

#[cfg(feature = "oauth")]
crate::setters!(ConnectOptions {
    with_auth => auth: Option<crate::auth::AuthContext>,
});

#[cfg(feature = "cache")]
crate::setters!(ConnectOptions {
    with_cache => cache: Option<std::sync::Arc<crate::cache::ToolCache>>,
});

crate::setters!(ConnectOptions {
    with_roots => roots: Vec<PathBuf>,
    with_events => events: Option<mpsc::Sender<ClientEvent>>,
    with_elicitation => elicitation: Option<ElicitationHandler>,
    with_identity => identity: crate::ClientIdentity,
    with_http => http: crate::net::HttpClient,
    with_relay_input => relay_input: bool,
    with_inherit_env => inherit_env: bool,
});
