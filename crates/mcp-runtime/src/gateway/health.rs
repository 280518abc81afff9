//! The gateway's health: whether it serves, and how each backend stands ([`Gateway::health`]).
//! The HTTP gateway answers it at [`HEALTH_PATH`] (see `wire::healthz`).
//!
//! The gateway serves once start-up is over (the start-up gate released, see
//! [`Gateway::starting`]). A failed backend does not make the gateway unhealthy: every replica
//! has the same backends, and taking them all out of rotation would turn one failed server
//! into a failed service. Its state shows in the report: each backend's name, connection state
//! and the number of tools this gateway serves from it. No URL, path, error, process id,
//! environment or secret.

use std::collections::HashMap;

use serde::Serialize;

use super::Gateway;
use crate::manager::ConnectionState;

/// Where the HTTP gateway answers health checks.
pub const HEALTH_PATH: &str = "/healthz";

/// Whether the gateway serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum HealthStatus {
    /// Start-up is over: clients get the tools of every backend that connected.
    Serving,
    /// Start-up is still in progress (`503` over HTTP).
    Starting,
}

/// What the gateway says of its health.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Health {
    /// Whether it serves.
    pub status: HealthStatus,
    /// Each backend the gateway serves from, in config order (`None`: not shown to this
    /// asker).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<BackendHealth>>,
}

/// One backend, as a health check shows it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct BackendHealth {
    /// The server's name, as configured.
    pub name: String,
    /// Where its connection stands (`connected`, `reconnecting (attempt 2)`, `failed`, ...).
    pub state: ConnectionState,
    /// How many of its tools the gateway serves (live ones, or cached ones while it connects).
    pub tools: usize,
}

impl Gateway {
    /// Whether the gateway serves, and each backend of its view with its connection state and
    /// the number of its tools served. Reads memory only, so that it can be asked often.
    pub fn health(&self) -> Health {
        let status = if *self.inner.started.borrow() {
            HealthStatus::Serving
        } else {
            HealthStatus::Starting
        };
        let scope = &self.inner.scope;
        let view = scope.view();
        let mut tools: HashMap<&str, usize> = HashMap::new();
        for tool in &view.tools {
            *tools.entry(tool.server.as_str()).or_default() += 1;
        }
        let servers = scope
            .manager
            .states()
            .into_iter()
            .filter(|(name, _)| scope.filter.allows_server(name))
            .map(|(name, state)| BackendHealth {
                tools: tools.get(name.as_str()).copied().unwrap_or(0),
                name,
                state,
            })
            .collect();
        Health {
            status,
            servers: Some(servers),
        }
    }
}
