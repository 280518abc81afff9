//! The HTTP client every remote request goes through (streamable HTTP, legacy SSE, OAuth, the
//! MCP Registry), the TLS set-up it needs, and the two helpers that keep secrets out of network
//! errors: the root cause of an error chain and a URL shown without its query.
//!
//! A leaf module: it uses nothing else of the crate, so `auth`, `client` and `registry` all
//! depend on it rather than on each other. A host that wants its own proxy, certificates or
//! headers passes an [`HttpClient`] built from its own `reqwest::Client`.

use std::error::Error as StdError;
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::{StatusCode, Url};

/// Bound on establishing a TCP (and TLS) connection. Requests themselves are bounded by the
/// server's timeouts; this only stops a black-holed address from taking the whole budget.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Idle pooled connections are closed after this long.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Redirects followed for one request (same origin, 307/308 only).
const MAX_REDIRECTS: usize = 10;

/// Install rustls' `ring` provider as the process default unless one is installed already (a
/// provider installed by the host is kept). reqwest panics without one, even for `http://`
/// URLs, so call this before building a `reqwest::Client` yourself.
pub fn install_tls_provider() {
    // Err means a provider is installed already, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A `reqwest` builder with the library's settings: the TLS provider installed, a `mcpr/…`
/// user agent, same-origin 307/308 redirects only, a connect timeout and pooled connections.
/// A host that needs a proxy, extra root certificates or default headers starts here and
/// passes the result as an [`HttpClient`].
pub fn client_builder() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
        .user_agent(concat!("mcpr/", env!("CARGO_PKG_VERSION")))
        .redirect(same_origin_redirects())
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .tcp_nodelay(true)
}

/// The process's HTTP client: one connection pool shared by every remote server, so that
/// reconnects and many servers on one host reuse connections.
pub fn shared_client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            client_builder()
                .build()
                .map_err(|e| format!("cannot set up the HTTP client: {}", root_cause(&e)))
        })
        .clone()
}

/// Which `reqwest::Client` a host's remote requests use: the process's shared one (the
/// default) or one the host built. Cheap to clone (a client is a handle to its pool).
///
/// Taken by MCP connections ([`crate::client::ConnectOptions::http`], streamable HTTP and
/// legacy SSE) and by the MCP Registry (`registry::RegistryClient::with_http_client`,
/// `registry::install_bundle_with`). OAuth requests do not use it yet: the OAuth
/// library builds its own client, which refuses metadata that points at private addresses.
#[derive(Clone, Default)]
pub struct HttpClient {
    custom: Option<reqwest::Client>,
}

impl HttpClient {
    /// The process's shared client ([`shared_client`]).
    pub fn shared() -> Self {
        HttpClient::default()
    }

    /// The host's own client, used as it is (its redirect policy, proxy, headers). Build it
    /// from [`client_builder`] to keep the library's redirect rule: only same-origin
    /// 307/308 redirects, so that credentials never follow a redirect to another host.
    pub fn custom(client: reqwest::Client) -> Self {
        // A host-built client may still lead to code paths that build their own (OAuth).
        install_tls_provider();
        HttpClient {
            custom: Some(client),
        }
    }

    /// Whether this is a host-supplied client.
    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }

    /// The client to send with; fails only when the shared client cannot be set up.
    pub fn client(&self) -> Result<reqwest::Client, String> {
        match &self.custom {
            Some(client) => Ok(client.clone()),
            None => shared_client(),
        }
    }
}

impl From<reqwest::Client> for HttpClient {
    fn from(client: reqwest::Client) -> Self {
        HttpClient::custom(client)
    }
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_custom() {
            "HttpClient(custom)"
        } else {
            "HttpClient(shared)"
        })
    }
}

/// Follow only same-origin 307/308 redirects: they keep the method and body, so a JSON-RPC
/// POST arrives intact, and they do not hand the session id or the configured headers
/// (credentials) to another host. Anything else is returned to us as the response.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// Whether `url` may be sent secrets (codes, tokens, downloads to run): `https:` with a host,
/// or `http:` to a loopback host, which never leaves the machine.
#[cfg(any(feature = "oauth", feature = "registry"))]
pub(crate) fn is_secure_url(url: &Url) -> bool {
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => url.host_str().is_some_and(is_loopback_host),
        _ => false,
    }
}

/// `localhost` or a loopback address (`127.0.0.0/8`, `[::1]`), as a parsed URL spells its host
/// (the parser has normalised IP hosts: `127.1` is `127.0.0.1`, IPv6 is in brackets).
#[cfg(any(feature = "oauth", feature = "registry"))]
pub(crate) fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A URL as shown in messages: scheme, host, port and path. The query and any user info are
/// left out because they often carry credentials (`?apiKey=...`).
pub fn display_url(url: &Url) -> String {
    let mut shown = format!("{}://", url.scheme());
    if let Some(host) = url.host_str() {
        shown.push_str(host);
    }
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    shown
}

/// The innermost message of an error chain: for a refused connection `Connection refused
/// (os error 111)` rather than reqwest's `error sending request for url (...)`, which would
/// also print the URL with its query.
pub fn root_cause(error: &(dyn StdError + 'static)) -> String {
    chain(error)
        .last()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// The error and its sources, outermost first.
pub(crate) fn chain<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&e| e.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_user_info_or_query() {
        let url = Url::parse("https://user:pw@example.com:8443/mcp?apiKey=secret").unwrap();
        assert_eq!(display_url(&url), "https://example.com:8443/mcp");
    }

    #[test]
    fn root_cause_is_the_innermost_error() {
        let inner = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let outer = std::io::Error::other(inner);
        assert_eq!(root_cause(&outer), "refused");
    }

    #[test]
    fn the_default_handle_is_the_shared_client() {
        assert!(!HttpClient::default().is_custom());
        let custom = HttpClient::from(client_builder().build().unwrap());
        assert!(custom.is_custom());
        assert_eq!(format!("{custom:?}"), "HttpClient(custom)");
    }
}
