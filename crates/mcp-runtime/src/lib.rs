//! # mcp-runtime
//!
//! The part of an AI agent that talks to MCP servers: it finds their configuration, connects to
//! them all at once, turns their tools into agent tools, keeps them fresh, and shuts them down
//! without leaving a process behind.
//!
//! The modules follow the lifecycle of a server, and data flows one way through them:
//! [`config`] (which servers exist) → [`client`] (one live connection) → [`manager`] (all of
//! them: start-up gate, cache, health, shutdown) → [`tools`] (names and calls for the model) →
//! [`session`] (a host's tool registry). [`loader`] strings them together for a host, and
//! [`gateway`] serves all the tools again as one MCP server (or hands them to a sub-agent).
//! [`registry`] finds servers in an MCP Registry and turns them into config entries.
//! Four leaf modules serve every step and depend on none: [`net`] (the HTTP client, which a host
//! may replace, and TLS set-up), [`fsutil`] (where mcpr's files live and how they are written),
//! [`json`] (JSON kept as compact text, as tool schemas are) and [`nesting`] (how deep in a
//! chain of mcpr processes this one runs).
//!
//! ## Cargo features
//!
//! All on by default but `otel`. Turning one off removes its dependencies from the build:
//!
//! | Feature | What it adds | Heavy parts it brings |
//! |---|---|---|
//! | `gateway` | [`gateway`]: the tools served again as one MCP server (implies `search`) | axum, rmcp's server side |
//! | `cache` | `cache::ToolCache`: deferred tools at start-up, remembered eras and failures | bundled SQLite |
//! | `oauth` | [`auth`]'s logins, refresh, DPoP and credential store | oauth2, jsonwebtoken, aws-lc-rs, SQLite |
//! | `registry` | `registry`: MCP Registry installs and MCP bundles | zip, semver, PEP 440 |
//! | `search` | `tools::ToolIndex`, `session::HostToolSearch` | the `tool-search` crate |
//! | `otel` (off by default) | [`telemetry`]: OpenTelemetry spans and meters, OTLP/HTTP export, the gateway's `/metrics` | the OpenTelemetry SDK and OTLP exporter, prometheus |
//!
//! Without `cache` every start-up lists tools afresh. Without `oauth` a remote server gets only
//! the headers of its config, and one whose config sets `oauth` fails to connect with a
//! [`client::ClientError::Config`] naming that field. Config discovery is always built.
//!
//! ```no_run
//! # async fn host() {
//! use mcp_runtime::loader::{LoadOptions, discover_and_load_mcp_tools};
//!
//! let loaded = discover_and_load_mcp_tools(std::path::Path::new("."), LoadOptions::default()).await;
//! for tool in &loaded.tools {
//!     println!("{} ({})", tool.name, tool.label);
//! }
//! loaded.manager.disconnect_all().await;
//! # }
//! ```

#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auth;
pub mod cache;
pub mod client;
pub mod config;
pub mod fsutil;
#[cfg(feature = "gateway")]
#[cfg_attr(docsrs, doc(cfg(feature = "gateway")))]
pub mod gateway;
pub mod identity;
pub mod json;
pub mod loader;
pub mod manager;
pub mod nesting;
pub mod net;
pub mod pins;
#[cfg(feature = "registry")]
#[cfg_attr(docsrs, doc(cfg(feature = "registry")))]
pub mod registry;
pub mod sandbox;
pub mod session;
pub mod telemetry;
pub mod tools;

pub use config::{Discovery, discover_mcp_servers, load_all_mcp_configs};
#[cfg(feature = "gateway")]
pub use gateway::{Gateway, GatewayOptions, SubAgentHandle};
pub use identity::ClientIdentity;
pub use loader::{LoadError, LoadFailure, LoadOptions, LoadedTools, discover_and_load_mcp_tools};
pub use manager::{ManagerEvent, ManagerOptions, McpManager};
pub use session::Session;
pub use tools::McpTool;

/// Builder methods for an options struct whose fields are public but which is
/// `#[non_exhaustive]` (so that adding a field is not a breaking change): one `with_FIELD`
/// per field, so hosts write `ManagerOptions::default().with_gate(..)`.
macro_rules! setters {
    ($ty:ident { $($method:ident => $field:ident : $fty:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Set `", stringify!($field), "` (see the field).")]
                #[must_use]
                pub fn $method(mut self, $field: $fty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}
pub(crate) use setters;
