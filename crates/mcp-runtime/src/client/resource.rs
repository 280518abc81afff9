//! Reading a resource (`resources/read`) and completing an argument (`completion/complete`):
//! requests whose results come back in the wire format, as the server sent them.

use rmcp::model::{ClientRequest, ServerResult};
use serde_json::Value;

use super::{ClientError, McpClient, TraceContext};

impl McpClient {
    /// Read one resource (`resources/read`). The result comes back as the server sent it, in
    /// the wire format (`{"contents": [{"uri", "mimeType"?, "text" | "blob"}, ...]}`).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, ClientError> {
        self.read_resource_traced(uri, &TraceContext::default())
            .await
    }

    /// [`read_resource`](Self::read_resource) as part of the trace `trace` (a gateway's
    /// client's, say): the server is sent it in `_meta`, continued by the read's own span when
    /// telemetry makes one.
    pub async fn read_resource_traced(
        &self,
        uri: &str,
        trace: &TraceContext,
    ) -> Result<Value, ClientError> {
        let operation =
            crate::telemetry::start(crate::telemetry::Kind::Resource, self.place(trace));
        let trace = match operation.traceparent() {
            Some(traceparent) => trace.continued_by(traceparent),
            None => trace.clone(),
        };
        let result = self.send_read_resource(uri, &trace).await;
        super::finish(operation, &result);
        result
    }

    async fn send_read_resource(
        &self,
        uri: &str,
        trace: &TraceContext,
    ) -> Result<Value, ClientError> {
        let mut params = rmcp::model::ReadResourceRequestParams::new(uri);
        if !trace.is_empty() {
            trace.write_into(&mut params.meta.get_or_insert_with(Default::default).0.0);
        }
        let request =
            ClientRequest::ReadResourceRequest(rmcp::model::ReadResourceRequest::new(params));
        let method = "resources/read";
        match self
            .request(request, method, self.config.request_timeout(), None)
            .await?
        {
            ServerResult::ReadResourceResult(result) => serde_json::to_value(&result)
                .map_err(|e| self.protocol_error(method, format!("invalid result: {e}"))),
            _ => Err(self.protocol_error(method, "unexpected response type")),
        }
    }

    /// Ask for completions of a prompt or resource template argument (`completion/complete`).
    /// `params` (`{"ref", "argument", "context"?}`) and the result are in the wire format.
    pub async fn complete(&self, params: Value) -> Result<Value, ClientError> {
        let method = "completion/complete";
        let params: rmcp::model::CompleteRequestParams = serde_json::from_value(params)
            .map_err(|e| self.protocol_error(method, format!("invalid request: {e}")))?;
        let request = ClientRequest::CompleteRequest(rmcp::model::CompleteRequest::new(params));
        match self
            .request(request, method, self.config.request_timeout(), None)
            .await?
        {
            ServerResult::CompleteResult(result) => serde_json::to_value(&result)
                .map_err(|e| self.protocol_error(method, format!("invalid result: {e}"))),
            _ => Err(self.protocol_error(method, "unexpected response type")),
        }
    }
}
