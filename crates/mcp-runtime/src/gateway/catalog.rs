//! Resources and prompts of the connected servers in scope, namespaced by server, and routed
//! back to the server they come from.
//!
//! Unlike tools, the manager does not keep these: each listing asks the connected servers
//! (concurrently; one failing server only loses its own entries) and remembers where each entry
//! came from, so that a later read or get goes to the right server.
//!
//! - Resources keep their URI (clients may understand `file://` and friends); their name
//!   becomes `<server>/<name>` and their description says the server. When two servers list the
//!   same URI, the first in config order serves it.
//! - Prompts are named like tools, `mcp_<server>_<prompt>`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::view::ScopedTools;
use crate::client::{McpClient, PromptDefinition, ResourceDefinition};
use crate::manager::ServerStatus;
use crate::tools::{NamingStyle, assign_names};

/// Why a read or get could not be served.
#[derive(Debug)]
pub(crate) enum CatalogError {
    /// No server in scope offers it.
    Unknown(String),
    /// The server failed to answer (the message names it).
    Failed(String),
}

/// Where listed resources and prompts come from.
#[derive(Default)]
pub(crate) struct Catalog {
    routes: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    /// URI → server.
    resources: HashMap<String, String>,
    /// Exposed prompt name → (server, prompt).
    prompts: HashMap<String, (String, String)>,
}

impl Catalog {
    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every resource of the connected servers in scope, in the wire format.
    pub async fn resources(&self, scope: &ScopedTools) -> Vec<Value> {
        let listed = gather(scope, |client| async move { client.list_resources().await }).await;
        let mut routes = HashMap::new();
        let mut wire = Vec::new();
        for (server, resources) in listed {
            for resource in resources {
                if routes.contains_key(&resource.uri) {
                    continue;
                }
                routes.insert(resource.uri.clone(), server.clone());
                wire.push(resource_wire(&server, &resource));
            }
        }
        self.lock().resources = routes;
        wire
    }

    /// Read `uri` from the server that listed it (listing again if unknown; a URI from no
    /// listing, e.g. from a template, is tried on each server in scope).
    pub async fn read(&self, scope: &ScopedTools, uri: &str) -> Result<Value, CatalogError> {
        if !self.lock().resources.contains_key(uri) {
            self.resources(scope).await;
        }
        let known = self.lock().resources.get(uri).cloned();
        if let Some(server) = known {
            let client = connected(scope, &server)?;
            return client
                .read_resource(uri)
                .await
                .map_err(|e| CatalogError::Failed(format!("MCP error: {e}")));
        }
        for (_, client) in clients(scope) {
            if let Ok(contents) = client.read_resource(uri).await {
                return Ok(contents);
            }
        }
        Err(CatalogError::Unknown(format!("unknown resource: {uri}")))
    }

    /// Every prompt of the connected servers in scope, in the wire format.
    pub async fn prompts(&self, scope: &ScopedTools, naming: NamingStyle) -> Vec<Value> {
        let listed = gather(scope, |client| async move { client.list_prompts().await }).await;
        let pairs: Vec<(&str, &PromptDefinition)> = listed
            .iter()
            .flat_map(|(server, prompts)| prompts.iter().map(move |p| (server.as_str(), p)))
            .collect();
        let names = assign_names(naming, pairs.iter().map(|(s, p)| (*s, p.name.as_str())));
        let mut routes = HashMap::new();
        let mut wire = Vec::new();
        for ((server, prompt), name) in pairs.iter().zip(names) {
            routes.insert(name.clone(), (server.to_string(), prompt.name.clone()));
            wire.push(prompt_wire(&name, server, prompt));
        }
        wire.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        self.lock().prompts = routes;
        wire
    }

    /// Get the prompt exposed as `name` from its server.
    pub async fn get_prompt(
        &self,
        scope: &ScopedTools,
        naming: NamingStyle,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, CatalogError> {
        if !self.lock().prompts.contains_key(name) {
            self.prompts(scope, naming).await;
        }
        let route = self.lock().prompts.get(name).cloned();
        let Some((server, prompt)) = route else {
            return Err(CatalogError::Unknown(format!("unknown prompt: {name}")));
        };
        connected(scope, &server)?
            .get_prompt(&prompt, arguments)
            .await
            .map_err(|e| CatalogError::Failed(format!("MCP error: {e}")))
    }
}

/// How long a listing waits for servers in scope that are still connecting. Their resources and
/// prompts are not cached, so without waiting a client connecting early would see none; a
/// server that hangs at start-up must not hold the listing for long either.
const CONNECTING_WAIT: Duration = Duration::from_secs(5);

/// Wait (bounded) for the servers in scope that are still connecting.
async fn settle(scope: &ScopedTools) {
    let waits = scope
        .manager
        .server_names()
        .into_iter()
        .filter(|name| {
            scope.filter.allows_server(name)
                && scope.manager.status(name) == ServerStatus::Connecting
        })
        .map(|name| async move {
            let _ = scope.manager.wait_for_connection(&name).await;
        });
    let _ = tokio::time::timeout(CONNECTING_WAIT, futures::future::join_all(waits)).await;
}

/// The live connections of the servers in scope, in config order.
fn clients(scope: &ScopedTools) -> Vec<(String, std::sync::Arc<McpClient>)> {
    scope
        .manager
        .server_names()
        .into_iter()
        .filter(|name| scope.filter.allows_server(name))
        .filter_map(|name| scope.manager.client(&name).map(|client| (name, client)))
        .collect()
}

fn connected(scope: &ScopedTools, server: &str) -> Result<std::sync::Arc<McpClient>, CatalogError> {
    scope.manager.client(server).ok_or_else(|| {
        CatalogError::Failed(format!("MCP error: server `{server}` is not connected"))
    })
}

/// Ask every connected server in scope at once; a failure only loses that server's entries.
async fn gather<T, F, Fut>(scope: &ScopedTools, list: F) -> Vec<(String, Vec<T>)>
where
    F: Fn(std::sync::Arc<McpClient>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>, crate::client::ClientError>>,
{
    settle(scope).await;
    let asks = clients(scope).into_iter().map(|(server, client)| {
        let listing = list(client);
        async move { (server, listing.await) }
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .filter_map(|(server, listing)| match listing {
            Ok(items) => Some((server, items)),
            Err(e) => {
                tracing::warn!("gateway: {e}");
                None
            }
        })
        .collect()
}

fn described(server: &str, description: Option<&str>) -> String {
    match description.map(str::trim) {
        Some(text) if !text.is_empty() => format!("[mcp:{server}] {text}"),
        _ => format!("[mcp:{server}]"),
    }
}

fn resource_wire(server: &str, resource: &ResourceDefinition) -> Value {
    let mut wire = json!({
        "uri": resource.uri,
        "name": format!("{server}/{}", resource.name),
        "description": described(server, resource.description.as_deref()),
    });
    if let Some(mime) = &resource.mime_type {
        wire["mimeType"] = json!(mime);
    }
    wire
}

fn prompt_wire(name: &str, server: &str, prompt: &PromptDefinition) -> Value {
    json!({
        "name": name,
        "description": described(server, prompt.description.as_deref()),
        "arguments": prompt.arguments,
    })
}
