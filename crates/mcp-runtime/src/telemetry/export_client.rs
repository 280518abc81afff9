//! The HTTP client the OTLP exporters send with: the process's shared reqwest client, driven
//! on the tokio runtime that installed telemetry.
//!
//! The SDK's batch processor and periodic reader export from threads of their own, outside
//! any runtime, where reqwest's async client cannot run; each export is therefore spawned on
//! the runtime and awaited from there. Every export is bounded, so a collector that hangs
//! holds one background thread for at most [`EXPORT_BOUND`], never a call.

use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// The longest one export may take, connection included.
const EXPORT_BOUND: Duration = Duration::from_secs(10);

/// The most of a collector's answer that is read (it is only looked at for its status).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Sends OTLP requests with reqwest on a tokio runtime.
#[derive(Debug, Clone)]
pub(super) struct ExportClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl ExportClient {
    pub(super) fn new(client: reqwest::Client, runtime: tokio::runtime::Handle) -> Self {
        ExportClient { client, runtime }
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            tokio::time::timeout(EXPORT_BOUND, send(client, request))
                .await
                .map_err(|_| HttpError::from("the collector did not answer in time"))?
        });
        sent.await.map_err(HttpError::from)?
    }
}

async fn send(
    client: reqwest::Client,
    request: reqwest::Request,
) -> Result<Response<Bytes>, HttpError> {
    let mut response = client.execute(request).await?;
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_ANSWER_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    let mut answer = Response::builder().status(status).body(Bytes::from(body))?;
    *answer.headers_mut() = headers;
    Ok(answer)
}
