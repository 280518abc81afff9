//! HTTP plumbing shared by the two remote transports (streamable HTTP and legacy HTTP+SSE): the
//! one pooled `reqwest` client of the process, the checks on a server's URL and headers, the
//! transport error type, and the translation of HTTP failures into [`ClientError`]s that say
//! what happened (refused, TLS, status with a body excerpt, authorization required).

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{StatusCode, Url};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::client::ClientError;
use crate::net::chain;
pub(crate) use crate::net::{display_url, root_cause};

/// Bytes of an error response body kept for the error message.
pub(crate) const BODY_EXCERPT_BYTES: usize = 2048;

/// How long reading an error body may take; a server that sends headers and then stalls must
/// not hang the error path.
const BODY_EXCERPT_TIMEOUT: Duration = Duration::from_secs(2);

/// Headers the transports set themselves; a config that sets them would break the protocol.
const RESERVED_HEADERS: &[&str] = &["accept", "mcp-session-id", "last-event-id", "content-type"];

/// A failure of one HTTP exchange with a remote server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    /// The request could not be sent or its response not read (DNS, refused, TLS, reset).
    #[error("{}", root_cause(.0))]
    Request(#[from] reqwest::Error),
    /// The server answered with a non-success status.
    #[error("HTTP {status}")]
    Status {
        /// The status.
        status: StatusCode,
        /// The `WWW-Authenticate` challenge, if any.
        www_authenticate: Option<String>,
        /// The start of the response body.
        body: String,
    },
    /// A response that should have been an event stream was something else.
    #[error("expected an event stream, got content type {}", .0.as_deref().unwrap_or("(none)"))]
    ContentType(Option<String>),
    /// The legacy transport's `endpoint` event was unusable.
    #[error("invalid `endpoint` event: {0}")]
    Endpoint(String),
    /// The legacy event stream ended before it named its endpoint.
    #[error("the event stream ended before the `endpoint` event")]
    NoEndpoint,
    /// The event stream could not be parsed.
    #[error("event stream: {0}")]
    Sse(#[from] sse_stream::Error),
    /// The credential store could not be read when the server asked for credentials.
    #[error("{0}")]
    Store(String),
    /// The server refused our credential and we could not get a better one.
    #[error("HTTP {status}: {failure}")]
    Auth {
        /// 401 or 403.
        status: StatusCode,
        /// The server's challenge.
        www_authenticate: Option<String>,
        /// Why no credential could be had.
        failure: crate::auth::AuthFailure,
    },
}

/// The reason shown for a 401/403 when no OAuth layer handled it.
fn unauthorized(server: &str) -> Box<crate::auth::AuthFailure> {
    Box::new(crate::auth::AuthFailure::Unauthorized {
        server: server.to_owned(),
    })
}

/// The [`HttpError`] for an OAuth failure after a `status` answer (or before a request): a
/// failing credential store is its own error, not the server's refusal.
pub(crate) fn auth_failed(
    status: StatusCode,
    www_authenticate: Option<String>,
    failure: crate::auth::AuthFailure,
) -> HttpError {
    match failure {
        crate::auth::AuthFailure::Store(reason) => HttpError::Store(reason),
        failure => HttpError::Auth {
            status,
            www_authenticate,
            failure,
        },
    }
}

/// A [`ClientError::AuthRequired`] for an OAuth failure ([`ClientError::CredentialStore`] when
/// the store failed).
pub(crate) fn auth_error(
    server: &str,
    url: &Url,
    status: u16,
    www_authenticate: Option<String>,
    failure: &crate::auth::AuthFailure,
) -> ClientError {
    if let crate::auth::AuthFailure::Store(reason) = failure {
        return ClientError::CredentialStore {
            server: server.to_owned(),
            reason: reason.clone(),
        };
    }
    ClientError::AuthRequired {
        server: server.to_owned(),
        url: display_url(url),
        status,
        www_authenticate,
        failure: Box::new(failure.clone()),
    }
}

/// Parse and check a server's URL: absolute, `http` or `https`.
pub(crate) fn parse_url(server: &str, url: &str) -> Result<Url, ClientError> {
    let invalid = |message: String| config_error(server, "url", &message);
    let parsed = Url::parse(url.trim()).map_err(|e| invalid(format!("is not a URL: {e}")))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host().is_some() => Ok(parsed),
        "http" | "https" => Err(invalid("has no host".into())),
        other => Err(invalid(format!(
            "has the unsupported scheme `{other}` (expected http or https)"
        ))),
    }
}

/// The configured headers as an HTTP header map; names and values are checked here so that a
/// bad entry is a config error naming the header rather than a failure deep in a request.
pub(crate) fn header_map(
    server: &str,
    headers: &BTreeMap<String, String>,
) -> Result<HeaderMap, ClientError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let invalid = |message: String| config_error(server, &format!("headers.{name}"), &message);
        let header = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| invalid("is not a valid header name".into()))?;
        if RESERVED_HEADERS.contains(&header.as_str()) {
            return Err(invalid(
                "is set by the MCP transport itself and cannot be configured".into(),
            ));
        }
        // The value may be a secret: never echo it.
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| invalid("has a value that is not a valid header value".into()))?;
        map.append(header, value);
    }
    Ok(map)
}

/// A config value that cannot be used, naming the server and field (never the value, which
/// may be a secret).
fn config_error(server: &str, field: &str, message: &str) -> ClientError {
    ClientError::Config {
        server: server.to_owned(),
        message: format!("server `{server}`: field `{field}` {message}"),
    }
}

/// The error for a non-success response, with the challenge and the start of the body.
pub(crate) async fn status_error(response: reqwest::Response) -> HttpError {
    let status = response.status();
    let www_authenticate = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = tokio::time::timeout(
        BODY_EXCERPT_TIMEOUT,
        body_prefix(response, BODY_EXCERPT_BYTES),
    )
    .await
    .unwrap_or_default();
    HttpError::Status {
        status,
        www_authenticate,
        body,
    }
}

/// At most `limit` bytes of the body, as (lossy) text; the rest is not read.
pub(crate) async fn body_prefix(response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() < limit {
        match chunks.next().await {
            Some(Ok(chunk)) => {
                body.extend_from_slice(&chunk[..chunk.len().min(limit - body.len())])
            }
            Some(Err(_)) | None => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Whether `error` is an HTTP client error (4xx other than 401/403) on the very first request:
/// what a server that only speaks the legacy HTTP+SSE transport answers to a streamable HTTP
/// `initialize` POST (the MCP specification's backwards-compatibility rule).
pub(crate) fn is_legacy_hint(error: &(dyn StdError + 'static)) -> bool {
    let status =
        chain(error).find_map(
            |e| match e.downcast_ref::<StreamableHttpError<HttpError>>() {
                Some(StreamableHttpError::Client(HttpError::Status { status, .. })) => {
                    Some(*status)
                }
                _ => match e.downcast_ref::<HttpError>() {
                    Some(HttpError::Status { status, .. }) => Some(*status),
                    _ => None,
                },
            },
        );
    status.is_some_and(|s| {
        s.is_client_error() && s != StatusCode::UNAUTHORIZED && s != StatusCode::FORBIDDEN
    })
}

/// Translate a transport failure into a [`ClientError`], when it is an HTTP failure we know.
/// `phase` names what was in progress (`initialize`, `tools/call echo`, ...).
pub(crate) fn classify(
    server: &str,
    phase: &str,
    url: &Url,
    error: &(dyn StdError + 'static),
) -> Option<ClientError> {
    for cause in chain(error) {
        if let Some(e) = cause.downcast_ref::<StreamableHttpError<HttpError>>() {
            match e {
                StreamableHttpError::Client(http) => {
                    return Some(from_http(server, phase, url, http));
                }
                StreamableHttpError::AuthRequired(auth) => {
                    return Some(ClientError::AuthRequired {
                        server: server.to_owned(),
                        url: display_url(url),
                        status: 401,
                        www_authenticate: Some(auth.www_authenticate_header.clone()),
                        failure: unauthorized(server),
                    });
                }
                StreamableHttpError::InsufficientScope(scope) => {
                    return Some(ClientError::AuthRequired {
                        server: server.to_owned(),
                        url: display_url(url),
                        status: 403,
                        www_authenticate: Some(scope.www_authenticate_header.clone()),
                        failure: unauthorized(server),
                    });
                }
                StreamableHttpError::SessionExpired => {
                    return Some(ClientError::HttpStatus {
                        server: server.to_owned(),
                        phase: phase.to_owned(),
                        url: display_url(url),
                        status: 404,
                        body: "the session expired and could not be re-established".into(),
                    });
                }
                StreamableHttpError::ResponseBodyTooLarge { max_size } => {
                    return Some(ClientError::Protocol {
                        server: server.to_owned(),
                        method: phase.to_owned(),
                        message: format!("response larger than {max_size} bytes"),
                    });
                }
                _ => {}
            }
        }
        if let Some(http) = cause.downcast_ref::<HttpError>() {
            return Some(from_http(server, phase, url, http));
        }
        if let Some(request) = cause.downcast_ref::<reqwest::Error>() {
            return Some(from_request(server, phase, url, request));
        }
    }
    None
}

fn from_http(server: &str, phase: &str, url: &Url, error: &HttpError) -> ClientError {
    match error {
        HttpError::Request(request) => from_request(server, phase, url, request),
        HttpError::Status {
            status,
            www_authenticate,
            ..
        } if *status == StatusCode::UNAUTHORIZED || *status == StatusCode::FORBIDDEN => {
            ClientError::AuthRequired {
                server: server.to_owned(),
                url: display_url(url),
                status: status.as_u16(),
                www_authenticate: www_authenticate.clone(),
                failure: unauthorized(server),
            }
        }
        HttpError::Auth {
            status,
            www_authenticate,
            failure,
        } => auth_error(
            server,
            url,
            status.as_u16(),
            www_authenticate.clone(),
            failure,
        ),
        HttpError::Store(reason) => ClientError::CredentialStore {
            server: server.to_owned(),
            reason: reason.clone(),
        },
        HttpError::Status { status, body, .. } => ClientError::HttpStatus {
            server: server.to_owned(),
            phase: phase.to_owned(),
            url: display_url(url),
            status: status.as_u16(),
            body: body.clone(),
        },
        other => ClientError::Protocol {
            server: server.to_owned(),
            method: phase.to_owned(),
            message: other.to_string(),
        },
    }
}

fn from_request(server: &str, phase: &str, url: &Url, error: &reqwest::Error) -> ClientError {
    let reason = root_cause(error);
    if let Some(tls) = chain(error).find_map(tls_failure) {
        return ClientError::Tls {
            server: server.to_owned(),
            url: display_url(url),
            reason: tls,
        };
    }
    if error.is_connect() {
        return ClientError::Unreachable {
            server: server.to_owned(),
            url: display_url(url),
            reason,
        };
    }
    ClientError::Transport {
        server: server.to_owned(),
        phase: phase.to_owned(),
        reason,
    }
}

/// A rustls error anywhere in the chain. I/O errors hide what they wrap from `source()`
/// (hyper-rustls nests one in another), so they are opened explicitly.
fn tls_failure(cause: &(dyn StdError + 'static)) -> Option<String> {
    let mut cause = cause;
    loop {
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        let inner: &(dyn StdError + 'static) = cause.downcast_ref::<std::io::Error>()?.get_ref()?;
        cause = inner;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_shown_without_secrets() {
        let url = parse_url("s", "https://user:pw@example.com:8443/mcp?apiKey=secret").unwrap();
        assert_eq!(display_url(&url), "https://example.com:8443/mcp");
        let err = parse_url("s", "ftp://example.com").unwrap_err().to_string();
        assert!(err.contains("scheme `ftp`"), "{err}");
        assert!(parse_url("s", "not a url").is_err());
    }

    #[test]
    fn bad_and_reserved_headers_are_config_errors_that_hide_the_value() {
        let headers =
            |name: &str, value: &str| BTreeMap::from([(name.to_owned(), value.to_owned())]);
        assert!(header_map("s", &headers("Authorization", "Bearer x")).is_ok());
        let err = header_map("s", &headers("Mcp-Session-Id", "1")).unwrap_err();
        assert!(err.to_string().contains("headers.Mcp-Session-Id"), "{err}");
        let err = header_map("s", &headers("X-Key", "secret\nvalue")).unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(header_map("s", &headers("bad name", "v")).is_err());
    }
}
