//! Elicitation: a server asks the user for input in the middle of a request
//! (`elicitation/create`, form mode). The host answers through a callback
//! ([`ConnectOptions::elicitation`](super::ConnectOptions::elicitation)); the capability is
//! declared to servers only when one is set.
//!
//! These types are ours rather than rmcp's, so hosts do not depend on the SDK's API.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// The host's answer to elicitation requests. It may take as long as a person needs; the
/// server bounds its own request.
///
/// ```
/// use std::sync::Arc;
/// use mcp_runtime::client::{ElicitationHandler, ElicitationResponse};
///
/// // Accept every request with the defaults its schema declares.
/// let handler: ElicitationHandler = Arc::new(|request| {
///     Box::pin(async move { ElicitationResponse::accept(request.defaults()) })
/// });
/// # let _ = handler;
/// ```
pub type ElicitationHandler =
    Arc<dyn Fn(ElicitationRequest) -> BoxFuture<'static, ElicitationResponse> + Send + Sync>;

/// A server's request for input from the user.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The server (as configured) that asks.
    pub server: String,
    /// What the server wants, for the user.
    pub message: String,
    /// JSON Schema of the answer, as sent: an object whose properties are strings, numbers,
    /// integers, booleans or enums, each possibly with a `default`.
    pub requested_schema: Value,
}

impl ElicitationRequest {
    /// The `default` of every property that declares one: what a form would be pre-filled
    /// with.
    ///
    /// ```
    /// use mcp_runtime::client::ElicitationRequest;
    /// let request = ElicitationRequest {
    ///     server: "s".into(),
    ///     message: "Who are you?".into(),
    ///     requested_schema: serde_json::json!({"type": "object", "properties": {
    ///         "name": {"type": "string", "default": "Ada"},
    ///         "age": {"type": "integer"}
    ///     }}),
    /// };
    /// assert_eq!(serde_json::Value::Object(request.defaults()), serde_json::json!({"name": "Ada"}));
    /// ```
    pub fn defaults(&self) -> Map<String, Value> {
        self.requested_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .filter_map(|(name, schema)| {
                        Some((name.clone(), schema.get("default")?.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What the user decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElicitationAction {
    /// Submitted the form.
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The answer to an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationResponse {
    /// The decision.
    pub action: ElicitationAction,
    /// The submitted values (with [`ElicitationAction::Accept`] only).
    pub content: Option<Map<String, Value>>,
}

impl ElicitationResponse {
    /// Accept with these values.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitationResponse {
            action: ElicitationAction::Accept,
            content: Some(content),
        }
    }

    /// Decline.
    pub fn decline() -> Self {
        ElicitationResponse {
            action: ElicitationAction::Decline,
            content: None,
        }
    }

    /// Cancel.
    pub fn cancel() -> Self {
        ElicitationResponse {
            action: ElicitationAction::Cancel,
            content: None,
        }
    }
}
