//! Who may read the HTTP gateway's side routes (`GET /healthz`, `GET /metrics`): the `Origin`
//! and `Host` rules of `/mcp`, so that no web page can read them, and whether the request
//! carries the gateway's bearer token (each route decides what the token is needed for).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{HeaderMap, header};

use super::token::{Token, presented_token};

/// The rules for a gateway bound to one address.
pub(super) struct Guard {
    /// The gateway's own origin (`http://<address>`).
    origin: String,
    /// The host names a request may name, on a loopback address (`None`: any).
    hosts: Option<Vec<String>>,
    token: Option<Arc<Token>>,
}

impl Guard {
    /// The rules of a gateway bound to `local`, with its bearer `token` if it has one.
    pub(super) fn new(local: SocketAddr, token: Option<Arc<Token>>) -> Guard {
        Guard {
            origin: format!("http://{local}"),
            hosts: loopback_hosts(local),
            token,
        }
    }

    /// Why the request with `headers` is refused (`403`), if it is.
    pub(super) fn refusal(&self, headers: &HeaderMap) -> Option<&'static str> {
        refusal(&self.origin, self.hosts.as_deref(), headers)
    }

    /// Whether the request carries the gateway's token; `true` on a gateway without one.
    pub(super) fn token_presented(&self, headers: &HeaderMap) -> bool {
        self.token
            .as_ref()
            .is_none_or(|token| presented_token(headers).is_some_and(|given| token.matches(given)))
    }
}

/// The host names a request to a gateway bound to `local` may name: on a loopback address,
/// the loopback names and the address; elsewhere any (`None`).
fn loopback_hosts(local: SocketAddr) -> Option<Vec<String>> {
    local.ip().is_loopback().then(|| {
        ["localhost", "127.0.0.1", "::1"]
            .map(str::to_owned)
            .into_iter()
            .chain([local.ip().to_string()])
            .collect()
    })
}

/// Why the request is refused, by the rules `/mcp` has for `Origin` and `Host`: `origin` is
/// the gateway's own, `hosts` what `loopback_hosts` allows.
fn refusal(origin: &str, hosts: Option<&[String]>, headers: &HeaderMap) -> Option<&'static str> {
    let own_origin = origin;
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = origin
            .to_str()
            .is_ok_and(|origin| origin.trim().eq_ignore_ascii_case(own_origin));
        if !own {
            return Some("Forbidden: Origin header is not allowed");
        }
    }
    if let (Some(hosts), Some(host)) = (hosts, headers.get(header::HOST)) {
        let named = host
            .to_str()
            .ok()
            .and_then(|host| axum::http::uri::Authority::try_from(host).ok())
            .map(|authority| {
                authority
                    .host()
                    .trim_matches(['[', ']'])
                    .to_ascii_lowercase()
            });
        if !named.is_some_and(|named| hosts.contains(&named)) {
            return Some("Forbidden: Host header is not allowed");
        }
    }
    None
}
