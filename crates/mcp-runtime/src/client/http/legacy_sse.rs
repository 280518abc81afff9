//! The legacy HTTP+SSE transport (protocol 2024-11-05), which rmcp no longer ships.
//!
//! The client opens one long `GET` event stream. Its first `endpoint` event names the URL to
//! which every client message is then `POST`ed; the server's messages arrive as `message`
//! events on the stream. The endpoint must have the stream's origin: otherwise a server (or
//! anyone who can inject an event) could make us send the configured headers, often
//! credentials, to another host.

use futures::StreamExt;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};

use super::plumbing::{HttpError, status_error};
use super::sse::{self, Events};
use super::streamable_http::MAX_RESPONSE_BYTES;

/// One legacy HTTP+SSE connection.
pub(crate) struct LegacySse {
    client: reqwest::Client,
    /// Where messages are POSTed (from the `endpoint` event).
    endpoint: Url,
    headers: HeaderMap,
    events: Events,
    /// Sees every message before it is parsed (tool results are kept as sent).
    raw: crate::client::raw::RawResults,
}

impl LegacySse {
    /// Open the event stream at `url` and wait for its `endpoint` event. The caller bounds the
    /// wait (the server's startup timeout).
    pub(crate) async fn connect(
        client: reqwest::Client,
        url: &Url,
        headers: HeaderMap,
        raw: crate::client::raw::RawResults,
    ) -> Result<LegacySse, HttpError> {
        let response = client
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?;
        if !response.status().is_success() {
            return Err(status_error(response).await);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if !content_type.as_deref().is_some_and(|ct| {
            ct.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        }) {
            return Err(HttpError::ContentType(content_type));
        }
        let mut events = sse::events(response.bytes_stream(), MAX_RESPONSE_BYTES, None);
        while let Some(event) = events.next().await {
            let event = event?;
            if event.event.as_deref() != Some("endpoint") {
                // Nothing else may come before the endpoint; skip rather than fail.
                tracing::debug!(event = ?event.event, "legacy SSE: event before `endpoint` ignored");
                continue;
            }
            let endpoint = endpoint_url(url, event.data.as_deref().unwrap_or_default())?;
            return Ok(LegacySse {
                client,
                endpoint,
                headers,
                events,
                raw,
            });
        }
        Err(HttpError::NoEndpoint)
    }
}

/// Resolve the `endpoint` event's data against the stream's URL and check its origin.
fn endpoint_url(stream_url: &Url, data: &str) -> Result<Url, HttpError> {
    let endpoint = stream_url
        .join(data.trim())
        .map_err(|e| HttpError::Endpoint(format!("`{}` is not a URL: {e}", data.trim())))?;
    if endpoint.origin() != stream_url.origin() {
        return Err(HttpError::Endpoint(format!(
            "it points to another origin ({}), refused",
            endpoint.origin().ascii_serialization()
        )));
    }
    Ok(endpoint)
}

impl rmcp::transport::Transport<RoleClient> for LegacySse {
    type Error = HttpError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), HttpError>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request.send().await?;
            // The answer comes on the event stream; the POST only says whether it was taken
            // (202, though some servers say 200 with a short body).
            if response.status().is_success() {
                return Ok(());
            }
            Err(status_error(response).await)
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let event = match self.events.next().await? {
                Ok(event) => event,
                Err(e) => {
                    tracing::warn!("legacy SSE stream failed: {e}");
                    return None;
                }
            };
            if !matches!(event.event.as_deref(), None | Some("message")) {
                continue;
            }
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue;
            };
            self.raw.observe(data.as_bytes());
            match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                Ok(message) => return Some(message),
                Err(e) => tracing::warn!("legacy SSE: unparsable message skipped: {e}"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), HttpError> {
        // Dropping the response stream closes the GET; the server ends the session with it.
        self.events = futures::stream::empty().boxed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_must_share_the_stream_origin() {
        let stream = Url::parse("http://127.0.0.1:3001/sse").unwrap();
        let same = endpoint_url(&stream, "/message?sessionId=abc").unwrap();
        assert_eq!(same.as_str(), "http://127.0.0.1:3001/message?sessionId=abc");
        let absolute = endpoint_url(&stream, "http://127.0.0.1:3001/m").unwrap();
        assert_eq!(absolute.path(), "/m");
        for foreign in [
            "http://evil.example/message",
            "https://127.0.0.1:3001/message",
            "http://127.0.0.1:3002/message",
            "//evil.example/m",
        ] {
            let err = endpoint_url(&stream, foreign).unwrap_err().to_string();
            assert!(err.contains("another origin"), "{foreign}: {err}");
        }
    }
}
