//! Resources and prompts of the connected servers in scope, namespaced by server, scoped by the
//! view's patterns, and routed back to the server they come from.
//!
//! Unlike tools, the manager does not keep these: each listing asks the connected servers
//! (concurrently; one failing server only loses its own entries) and remembers where each entry
//! came from, so that a later read or get goes to the right server.
//!
//! - Resources keep their URI (clients may understand `file://` and friends); their name
//!   becomes `<server>/<name>` and their description says the server. When two servers list the
//!   same URI, the first in config order serves it. MCP Apps' `ui://` URIs are the exception:
//!   each is namespaced by its server (see `apps`), so that every server serves its own.
//! - A read reaches a server only for a URI that server listed, or that one of its resource
//!   templates produces, and only when the view offers `<server>/<uri>`: a client cannot make
//!   the gateway ask servers for anything else.
//! - Prompts are named like tools, `mcp_<server>_<prompt>`, and scoped by the tools' patterns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::apps;
use super::template::UriTemplate;
use super::view::ScopedTools;
use crate::client::{
    McpClient, PromptDefinition, ResourceDefinition, ResourceTemplateDefinition, TraceContext,
};
use crate::manager::ServerStatus;
use crate::tools::{NamingStyle, assign_names};

/// Why a resource read or a prompt could not be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// No server in scope offers it (the message names it).
    #[error("{0}")]
    Unknown(String),
    /// The server failed to answer (the message names it).
    #[error("{0}")]
    Failed(String),
    /// The sub-agent handle was aborted.
    #[error("aborted")]
    Aborted,
}

/// Where listed resources and prompts come from.
#[derive(Default)]
pub(crate) struct Catalog {
    routes: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    /// Offered URI → (server, the URI the server listed): the same URI but for `ui://` ones.
    resources: HashMap<String, (String, String)>,
    /// Every resource template of the servers in scope, in config order (offered or not: a
    /// URI a template produces is still checked against the view on its own).
    templates: Vec<(String, UriTemplate)>,
    /// Exposed prompt name → (server, prompt).
    prompts: HashMap<String, (String, String)>,
}

impl Catalog {
    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every resource the view offers, in the wire format.
    pub(super) async fn resources(&self, scope: &ScopedTools) -> Vec<Value> {
        let listed = gather(scope, |client| async move { client.list_resources().await }).await;
        self.remember_resources(scope, &listed)
            .into_iter()
            .map(|(server, resource)| resource_wire(scope.naming, server, resource))
            .map(|(_, wire)| wire)
            .collect()
    }

    /// Every resource the view offers, as the servers describe them (named `<server>/<name>`).
    pub(super) async fn resource_definitions(
        &self,
        scope: &ScopedTools,
    ) -> Vec<ResourceDefinition> {
        from_wire(self.resources(scope).await)
    }

    /// Remember where each offered resource comes from; returns the offered ones.
    fn remember_resources<'a>(
        &self,
        scope: &ScopedTools,
        listed: &'a [(String, Vec<ResourceDefinition>)],
    ) -> Vec<(&'a str, &'a ResourceDefinition)> {
        let mut routes = HashMap::new();
        let mut offered = Vec::new();
        for (server, resources) in listed {
            for resource in resources {
                let uri =
                    apps::presented(server, &resource.uri).unwrap_or_else(|| resource.uri.clone());
                if routes.contains_key(&uri) || !scope.filter.allows_resource(server, &resource.uri)
                {
                    continue;
                }
                routes.insert(uri, (server.clone(), resource.uri.clone()));
                offered.push((server.as_str(), resource));
            }
        }
        self.lock().resources = routes;
        offered
    }

    /// Every resource template the view offers, in the wire format.
    pub(super) async fn templates(&self, scope: &ScopedTools) -> Vec<Value> {
        let listed = gather(scope, |client| async move {
            client.list_resource_templates().await
        })
        .await;
        self.remember_templates(&listed);
        listed
            .iter()
            .flat_map(|(server, templates)| templates.iter().map(move |t| (server.as_str(), t)))
            .filter(|(server, template)| {
                scope.filter.allows_resource(server, &template.uri_template)
            })
            .map(|(server, template)| template_wire(scope.naming, server, template))
            .collect()
    }

    /// Every resource template the view offers (named `<server>/<name>`).
    pub(super) async fn template_definitions(
        &self,
        scope: &ScopedTools,
    ) -> Vec<ResourceTemplateDefinition> {
        from_wire(self.templates(scope).await)
    }

    fn remember_templates(&self, listed: &[(String, Vec<ResourceTemplateDefinition>)]) {
        let templates = listed
            .iter()
            .flat_map(|(server, templates)| {
                templates.iter().filter_map(move |t| {
                    let parsed = UriTemplate::parse(&t.uri_template);
                    if parsed.is_none() {
                        tracing::warn!(
                            "gateway: resource template `{}` of server `{server}` is not a valid \
                             URI template; no URI is read through it",
                            t.uri_template
                        );
                    }
                    parsed.map(|parsed| (server.clone(), parsed))
                })
            })
            .collect();
        self.lock().templates = templates;
    }

    /// The server to read `uri` from and the URI it knows, by what is remembered: the server
    /// that listed it, else the first whose template produces it, provided the view offers
    /// `<server>/<uri>`. A `ui://` URI is one the gateway presented (see `apps`), read from the
    /// server it names: never from the listing of another.
    fn route(&self, scope: &ScopedTools, uri: &str) -> Option<(String, String)> {
        if apps::is_ui(uri) {
            return self.ui_route(scope, uri);
        }
        let routes = self.lock();
        if let Some(route) = routes.resources.get(uri) {
            return Some(route.clone());
        }
        routes
            .templates
            .iter()
            .find(|(server, template)| {
                scope.filter.allows_resource(server, uri) && template.matches(uri)
            })
            .map(|(server, _)| (server.clone(), uri.to_owned()))
    }

    /// The route of a presented `ui://` URI: to the server it names, for a URI that server
    /// listed, that one of its templates produces, or that one of its tools in the view names
    /// as its app, provided the view offers `<server>/<uri>`.
    fn ui_route(&self, scope: &ScopedTools, presented: &str) -> Option<(String, String)> {
        let (server, uri) = apps::original(presented)?;
        if !scope.filter.allows_resource(&server, &uri) {
            return None;
        }
        let routes = self.lock();
        let listed = routes.resources.get(presented) == Some(&(server.clone(), uri.clone()));
        let templated = || {
            routes
                .templates
                .iter()
                .any(|(owner, template)| *owner == server && template.matches(&uri))
        };
        let a_tools_app = || {
            scope.view().tools.iter().any(|tool| {
                tool.server == server && tool.definition.ui_resource_uri() == Some(uri.as_str())
            })
        };
        (listed || templated() || a_tools_app()).then_some((server, uri))
    }

    /// Read `uri` from the server that offers it (listing again if it is not known yet).
    pub(super) async fn read(
        &self,
        scope: &ScopedTools,
        uri: &str,
        trace: &TraceContext,
    ) -> Result<Value, CatalogError> {
        let (server, uri) = self.owner(scope, uri).await?;
        connected(scope, &server)?
            .read_resource_traced(&uri, trace)
            .await
            .map_err(|e| CatalogError::Failed(format!("MCP error: {e}")))
    }

    /// The server in scope that offers `uri` and the URI it knows it by (listing again if it
    /// is not known yet): what a read or a subscription of `uri` goes to.
    pub(super) async fn owner(
        &self,
        scope: &ScopedTools,
        uri: &str,
    ) -> Result<(String, String), CatalogError> {
        match self.route(scope, uri) {
            Some(route) => Ok(route),
            None => {
                // Both listings at once: a URI may have been listed, or a template added, since.
                let (resources, templates) = futures::future::join(
                    gather(scope, |client| async move { client.list_resources().await }),
                    gather(scope, |client| async move {
                        client.list_resource_templates().await
                    }),
                )
                .await;
                self.remember_resources(scope, &resources);
                self.remember_templates(&templates);
                self.route(scope, uri).ok_or_else(|| {
                    CatalogError::Unknown(format!(
                        "unknown resource: {uri} (no server in this view lists it or has a \
                         template for it)"
                    ))
                })
            }
        }
    }

    /// Ask the server that owns a completion's reference (a prompt by its exposed name, or a
    /// resource template by its URI template) to complete an argument. `params` is the
    /// request in the wire format; the reference is renamed to the server's own name.
    pub(super) async fn complete(
        &self,
        scope: &ScopedTools,
        mut params: Value,
    ) -> Result<Value, CatalogError> {
        let text = |pointer: &str| {
            params
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let kind = text("/ref/type");
        let server = match kind.as_str() {
            "ref/prompt" => {
                let name = text("/ref/name");
                if !self.lock().prompts.contains_key(&name) {
                    self.prompts(scope).await;
                }
                let route = self.lock().prompts.get(&name).cloned();
                let Some((server, prompt)) = route else {
                    return Err(CatalogError::Unknown(format!("unknown prompt: {name}")));
                };
                if let Some(reference) = params.get_mut("ref").and_then(Value::as_object_mut) {
                    reference.insert("name".into(), Value::String(prompt));
                }
                server
            }
            "ref/resource" => {
                let presented = text("/ref/uri");
                // A `ui://` template was presented namespaced by its server (see `apps`): it
                // is that server's, under the template it listed; no other `ui://` is known.
                let (wanted_server, uri) = if apps::is_ui(&presented) {
                    let Some((server, uri)) = apps::original(&presented) else {
                        return Err(CatalogError::Unknown(format!(
                            "unknown resource template: {presented}"
                        )));
                    };
                    (Some(server), uri)
                } else {
                    (None, presented.clone())
                };
                let listed = gather(scope, |client| async move {
                    client.list_resource_templates().await
                })
                .await;
                let server = listed
                    .iter()
                    .find(|(server, templates)| {
                        wanted_server.as_ref().is_none_or(|wanted| wanted == server)
                            && templates.iter().any(|t| {
                                t.uri_template == uri && scope.filter.allows_resource(server, &uri)
                            })
                    })
                    .map(|(server, _)| server.clone())
                    .ok_or_else(|| {
                        CatalogError::Unknown(format!("unknown resource template: {presented}"))
                    })?;
                if let Some(reference) = params.get_mut("ref").and_then(Value::as_object_mut) {
                    reference.insert("uri".into(), Value::String(uri));
                }
                server
            }
            other => {
                return Err(CatalogError::Unknown(format!(
                    "unknown completion reference type `{other}`"
                )));
            }
        };
        // The client's own request metadata is not the gateway's to pass on.
        if let Some(object) = params.as_object_mut() {
            object.remove("_meta");
        }
        connected(scope, &server)?
            .complete(params)
            .await
            .map_err(|e| CatalogError::Failed(format!("MCP error: {e}")))
    }

    /// Every prompt the view offers, in the wire format.
    pub(super) async fn prompts(&self, scope: &ScopedTools) -> Vec<Value> {
        let listed = gather(scope, |client| async move { client.list_prompts().await }).await;
        let pairs: Vec<(&str, &PromptDefinition)> = listed
            .iter()
            .flat_map(|(server, prompts)| prompts.iter().map(move |p| (server.as_str(), p)))
            .collect();
        // Named over everything listed, so that a prompt's name does not depend on the view.
        let names = assign_names(
            scope.naming,
            pairs.iter().map(|(s, p)| (*s, p.name.as_str())),
        );
        let mut routes = HashMap::new();
        let mut wire = Vec::new();
        for ((server, prompt), name) in pairs.iter().zip(names) {
            if !scope.filter.allows_prompt(&name, server, &prompt.name) {
                continue;
            }
            routes.insert(name.clone(), (server.to_string(), prompt.name.clone()));
            wire.push(prompt_wire(&name, server, prompt));
        }
        wire.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        self.lock().prompts = routes;
        wire
    }

    /// Every prompt the view offers (named as exposed, `mcp_<server>_<prompt>`).
    pub(super) async fn prompt_definitions(&self, scope: &ScopedTools) -> Vec<PromptDefinition> {
        from_wire(self.prompts(scope).await)
    }

    /// Get the prompt exposed as `name` from its server.
    pub(super) async fn get_prompt(
        &self,
        scope: &ScopedTools,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, CatalogError> {
        if !self.lock().prompts.contains_key(name) {
            self.prompts(scope).await;
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

    /// The connection that serves the prompt `request` names, and the request as that server
    /// knows it (its own prompt name, none of the client's `_meta`).
    pub(crate) async fn prompt_route(
        &self,
        scope: &ScopedTools,
        mut request: rmcp::model::GetPromptRequestParams,
    ) -> Result<(Arc<McpClient>, rmcp::model::GetPromptRequestParams), CatalogError> {
        if !self.lock().prompts.contains_key(request.name.as_str()) {
            self.prompts(scope).await;
        }
        let route = self.lock().prompts.get(request.name.as_str()).cloned();
        let Some((server, prompt)) = route else {
            return Err(CatalogError::Unknown(format!(
                "unknown prompt: {}",
                request.name
            )));
        };
        request.name = prompt;
        request.meta = None;
        Ok((connected(scope, &server)?, request))
    }
}

/// Wire entries as typed ones (every entry the catalog writes has the typed shape).
fn from_wire<T: serde::de::DeserializeOwned>(entries: Vec<Value>) -> Vec<T> {
    entries
        .into_iter()
        .filter_map(|entry| serde_json::from_value(entry).ok())
        .collect()
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
fn clients(scope: &ScopedTools) -> Vec<(String, Arc<McpClient>)> {
    scope
        .manager
        .server_names()
        .into_iter()
        .filter(|name| scope.filter.allows_server(name))
        .filter_map(|name| scope.manager.client(&name).map(|client| (name, client)))
        .collect()
}

fn connected(scope: &ScopedTools, server: &str) -> Result<Arc<McpClient>, CatalogError> {
    scope.manager.client(server).ok_or_else(|| {
        CatalogError::Failed(format!("MCP error: server `{server}` is not connected"))
    })
}

/// Ask every connected server in scope at once; a failure only loses that server's entries.
async fn gather<T, F, Fut>(scope: &ScopedTools, list: F) -> Vec<(String, Vec<T>)>
where
    F: Fn(Arc<McpClient>) -> Fut,
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

/// `<server>/<name>`, or the name as it is under [`NamingStyle::Raw`].
fn exposed(naming: NamingStyle, server: &str, name: &str) -> String {
    match naming {
        NamingStyle::Raw => name.to_owned(),
        _ => format!("{server}/{name}"),
    }
}

/// A resource as the gateway lists it, with its presented URI first.
fn resource_wire(
    naming: NamingStyle,
    server: &str,
    resource: &ResourceDefinition,
) -> (String, Value) {
    let uri = apps::presented(server, &resource.uri).unwrap_or_else(|| resource.uri.clone());
    let mut wire = json!({
        "uri": uri,
        "name": exposed(naming, server, &resource.name),
        "description": described(server, resource.description.as_deref()),
    });
    if let Some(mime) = &resource.mime_type {
        wire["mimeType"] = json!(mime);
    }
    if let Value::Object(fields) = &mut wire {
        for (key, value) in &resource.extra {
            fields.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    (uri, wire)
}

fn template_wire(
    naming: NamingStyle,
    server: &str,
    template: &ResourceTemplateDefinition,
) -> Value {
    let uri_template = apps::presented(server, &template.uri_template)
        .unwrap_or_else(|| template.uri_template.clone());
    let mut wire = json!({
        "uriTemplate": uri_template,
        "name": exposed(naming, server, &template.name),
        "description": described(server, template.description.as_deref()),
    });
    if let Some(mime) = &template.mime_type {
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
