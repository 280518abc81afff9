//! `mcpr mock --http ADDR --oauth`: `/mcp` becomes an OAuth 2.1 protected resource, and the mock
//! is its own authorization server on the same origin, so a client's whole authorization flow
//! can be tested against one process.
//!
//! - `GET /.well-known/oauth-protected-resource/mcp`: protected resource metadata (RFC 9728);
//! - `GET /.well-known/oauth-authorization-server`: authorization server metadata (RFC 8414);
//! - `POST /register`: dynamic client registration (RFC 7591), http loopback redirect URIs only;
//! - `GET /authorize`: approves at once (no UI) and redirects back with a code; PKCE S256 only;
//! - `POST /token`: `authorization_code`, `refresh_token` (rotated on every use) and
//!   `client_credentials`, each client authenticating the way it registered;
//! - `GET /__oauth/stats`: counters for tests (no authorization needed);
//! - [`guard`], in front of `/mcp`: every request needs a live bearer token from `/token`;
//! - with `--oauth-endpoint FIELD=URL` and `--oauth-authorization-server URL`, metadata that
//!   names other endpoints or another authorization server (a hostile server);
//! - with `--oauth-jwt-bearer`, the JWT-bearer grant for one assertion;
//! - with `--oauth-iss`, the `iss` authorization response parameter (right, missing or wrong);
//! - with `--oauth-dpop`, DPoP-bound tokens (and, as a hostile server, endless nonce
//!   challenges);
//! - with `--oauth-migrate-to`, a second authorization server under `/as2` (its own clients
//!   and tokens), which the resource moves to once a first token has been used.
//!
//! URLs in metadata and challenges are built from the request's `Host` header (the bound address
//! if it has none), so a client that connects to `localhost` sees `localhost` URLs, one that
//! connects to `127.0.0.1` sees `127.0.0.1` URLs, and issuer checks pass either way.
//!
//! The layers: [`metadata`] (the two documents), [`register`] (clients), [`authorize`],
//! [`token`] (grants and client authentication), [`resource`] (the checks in front of `/mcp`),
//! [`state`] (what is remembered) and [`reply`] (the shapes of answers). This file holds the
//! knobs, the server itself and its routes.
//!
//! Everything lives in memory and ends with the process. Tokens, secrets and codes are never
//! printed or logged, and no error message repeats one: the project scrubs secrets, and a test
//! asserts that none appears in any output.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};
use url::Url;

mod authorize;
mod metadata;
mod register;
mod reply;
mod resource;
mod state;
#[cfg(test)]
mod tests;
mod token;

// The layers share one namespace here, so each file names what it uses from the others
// through `use super::*`.
use self::authorize::*;
use self::metadata::*;
use self::register::*;
use self::reply::*;
pub(crate) use self::resource::guard;
use self::state::*;
use self::token::*;

/// Where the protected resource metadata of `/mcp` is served (RFC 9728 §3.1, path-based).
const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// How long an authorization code may wait for its exchange.
const CODE_TTL: Duration = Duration::from_secs(600);

/// Largest `/mcp` body read to find its JSON-RPC method (only with `--oauth-call-scope`).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// The grant types `/token` knows.
const GRANT_TYPES: [&str; 3] = ["authorization_code", "refresh_token", "client_credentials"];

/// The `--oauth*` flags.
#[derive(Debug, Clone)]
pub(crate) struct OAuthKnobs {
    /// `scopes_supported`, and what a token gets when no scope is requested.
    pub scopes: Vec<String>,
    /// Confidential clients known from the start (`--oauth-client`).
    pub clients: Vec<ClientCredentials>,
    /// Whether `/register` exists (`--oauth-no-registration` turns it off).
    pub registration: bool,
    /// `--oauth-deny`: every authorization ends in `error=access_denied`.
    pub deny: bool,
    /// `--oauth-refresh-invalid`: every refresh fails with `invalid_grant`.
    pub refresh_invalid: bool,
    /// Lifetime of access tokens (`expires_in` is this in whole seconds, rounded up).
    pub token_ttl: Duration,
    /// `--oauth-refreshed-token-ttl`: lifetime of the access tokens a refresh issues, when it
    /// differs from `token_ttl`.
    pub refreshed_token_ttl: Option<Duration>,
    /// `--oauth-hide-expiry`: token responses carry no `expires_in` (tokens still expire), so
    /// a client learns of the expiry only from a 401.
    pub hide_expiry: bool,
    /// `--oauth-call-scope`: a scope `tools/call` needs on top of a valid token.
    pub call_scope: Option<String>,
    /// `--oauth-authorize-endpoint`: the `authorization_endpoint` advertised instead of
    /// `/authorize`, whatever its scheme.
    pub authorize_endpoint: Option<String>,
    /// `--oauth-endpoint`: metadata fields advertised as given (`token_endpoint`, `issuer`,
    /// ...), after everything else.
    pub endpoints: Vec<(String, String)>,
    /// `--oauth-authorization-server`: the authorization server the resource metadata names
    /// instead of this one.
    pub authorization_server: Option<String>,
    /// `--oauth-token-scope`: the `scope` of every token response, verbatim.
    pub token_scope: Option<String>,
    /// `--oauth-migrate-to`: the host name under which the second authorization server is
    /// named (with the mock's port) once the resource has moved to it.
    pub migrate_to: Option<String>,
    /// `--oauth-dpop`: DPoP-bound tokens, or endless nonce challenges.
    pub dpop: Option<DpopKnob>,
    /// `--oauth-iss`: the `iss` parameter of authorization responses.
    pub iss: Option<IssKnob>,
    /// `--oauth-jwt-bearer`: the one assertion the JWT-bearer grant accepts.
    pub jwt_bearer: Option<String>,
}

/// The grant type of workload identity federation (RFC 7523 §2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What `--oauth-dpop` makes of the mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DpopKnob {
    /// Tokens asked for with a proof are DPoP-bound; `/mcp` takes them with a proof.
    On,
    /// Every token request with a proof gets a new `use_dpop_nonce` challenge.
    Token,
    /// Every `/mcp` request with a DPoP-bound token gets a new `use_dpop_nonce` challenge.
    Resource,
}

/// What `--oauth-iss` puts in authorization responses (support is advertised in all cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IssKnob {
    /// The issuer.
    Right,
    /// No `iss` at all.
    Missing,
    /// Another issuer, with a terminal escape sequence in it.
    Wrong,
}

/// The issuer `--oauth-iss wrong` claims to be.
const WRONG_ISSUER: &str = "https://evil.example\u{1b}]0;pwned\u{7}";

/// A pre-registered confidential client, `ID:SECRET` on the command line. Its `Debug` output
/// leaves the secret out.
#[derive(Clone)]
pub struct ClientCredentials {
    pub id: String,
    pub secret: String,
}

impl std::str::FromStr for ClientCredentials {
    type Err = String;

    fn from_str(text: &str) -> Result<ClientCredentials, String> {
        match text.split_once(':') {
            Some((id, secret)) if !id.is_empty() && !secret.is_empty() => Ok(ClientCredentials {
                id: id.to_owned(),
                secret: secret.to_owned(),
            }),
            _ => Err("expected ID:SECRET, both non-empty".to_owned()),
        }
    }
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The scopes of a space-separated list, each once, in order; `None` if one has a character
/// RFC 6749 §3.3 does not allow (such as `"` or `\`, which would break the challenge header).
pub(crate) fn parse_scopes(text: &str) -> Option<Vec<String>> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in text.split(' ').filter(|s| !s.is_empty()) {
        let allowed = |b: u8| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b);
        if !scope.bytes().all(allowed) {
            return None;
        }
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    Some(scopes)
}

/// The authorization server and resource guard: knobs, clients, grants and tokens.
pub(crate) struct OAuth {
    knobs: OAuthKnobs,
    /// Used for URLs when a request has no usable `Host` header.
    bound: SocketAddr,
    store: Mutex<Store>,
    stats: Stats,
    /// `--oauth-migrate-to`: the second authorization server, and whether the resource has
    /// moved to it.
    next: Option<Next2>,
}

/// The authorization server a resource moves to (`--oauth-migrate-to`).
struct Next2 {
    authority: String,
    server: Arc<OAuth>,
    moved: std::sync::atomic::AtomicBool,
    /// Requests at the second server that presented a client or refresh token of the first.
    foreign_credentials: AtomicUsize,
}

impl OAuth {
    /// A server for the mock bound at `bound`, knowing the `--oauth-client` clients.
    pub(crate) fn new(knobs: OAuthKnobs, bound: SocketAddr) -> OAuth {
        let mut store = Store::default();
        for client in &knobs.clients {
            store.clients.insert(
                client.id.clone(),
                Client {
                    secret: Some(client.secret.clone()),
                    method: None,
                    redirect_uris: None,
                },
            );
        }
        let next = knobs.migrate_to.clone().map(|host| {
            let knobs = OAuthKnobs {
                migrate_to: None,
                ..knobs.clone()
            };
            Next2 {
                authority: format!("{host}:{}", bound.port()),
                server: Arc::new(OAuth::new(knobs, bound)),
                moved: std::sync::atomic::AtomicBool::new(false),
                foreign_credentials: AtomicUsize::new(0),
            }
        });
        OAuth {
            knobs,
            bound,
            store: Mutex::new(store),
            stats: Stats::default(),
            next,
        }
    }

    /// The server that answers for `/mcp` now: the second one once the resource has moved.
    fn current(&self) -> &OAuth {
        match &self.next {
            Some(next) if next.moved.load(Ordering::SeqCst) => &next.server,
            _ => self,
        }
    }

    /// Whether a request at the second server presents a client id (in `params` or HTTP
    /// Basic) or a refresh token that the first one issued.
    fn is_foreign(&self, headers: &HeaderMap, params: &[u8]) -> bool {
        let Ok(params) = self::params(params) else {
            return false;
        };
        let basic = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_basic)
            .map(|(id, _)| id);
        let store = self.lock();
        params
            .get("client_id")
            .into_iter()
            .chain(basic.as_ref())
            .any(|id| store.clients.contains_key(id))
            || params
                .get("refresh_token")
                .is_some_and(|t| store.refresh.contains_key(t))
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `http://HOST` from the request's `Host` header, or the bound address.
    fn origin(&self, headers: &HeaderMap) -> String {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .filter(|host| is_authority(host));
        match host {
            Some(host) => format!("http://{host}"),
            None => format!("http://{}", self.bound),
        }
    }

    /// Whether `resource` names our `/mcp`: http, our port, path `/mcp`. Any host is fine,
    /// since the client may know the server as `localhost` or by its address.
    fn is_resource(&self, resource: &str) -> bool {
        Url::parse(resource).is_ok_and(|url| {
            url.scheme() == "http"
                && url.port_or_known_default() == Some(self.bound.port())
                && url.path() == "/mcp"
                && url.query().is_none()
                && url.fragment().is_none()
        })
    }
}

/// The authorization server's routes, to merge next to `/mcp`.
pub(crate) fn router(oauth: Arc<OAuth>) -> Router {
    let router = Router::new()
        .route(RESOURCE_METADATA_PATH, get(resource_metadata))
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/__oauth/stats", get(stats));
    let router = if oauth.knobs.registration {
        router.route("/register", post(register))
    } else {
        router.route("/register", any(no_registration))
    };
    let router = if oauth.next.is_some() {
        router
            .route(
                "/.well-known/oauth-authorization-server/as2",
                get(next_metadata),
            )
            .route("/as2/register", post(next_register))
            .route("/as2/authorize", get(next_authorize))
            .route("/as2/token", post(next_token))
    } else {
        router
    };
    router.with_state(oauth)
}

async fn stats(State(oauth): State<Arc<OAuth>>) -> Response {
    let mut stats = oauth.stats.json();
    if oauth.knobs.jwt_bearer.is_some() {
        stats["token_requests"]["jwt_bearer"] =
            oauth.stats.jwt_bearer.load(Ordering::SeqCst).into();
    }
    if oauth.knobs.dpop.is_some() {
        stats["dpop_nonce_challenges"] = oauth
            .stats
            .dpop_nonce_challenges
            .load(Ordering::SeqCst)
            .into();
    }
    if let Some(next) = &oauth.next {
        stats["migration"] = json!({
            "moved": next.moved.load(Ordering::SeqCst),
            "foreign_credentials": next.foreign_credentials.load(Ordering::SeqCst),
            "second": next.server.stats.json(),
        });
    }
    json_response(StatusCode::OK, &stats)
}

/// The second authorization server (`--oauth-migrate-to`); its routes exist only with it.
fn next(oauth: &OAuth) -> &Next2 {
    oauth
        .next
        .as_ref()
        .expect("routed only with --oauth-migrate-to")
}

async fn next_metadata(State(oauth): State<Arc<OAuth>>, headers: HeaderMap) -> Response {
    let origin = oauth.origin(&headers);
    metadata_of(&next(&oauth).server, &format!("{origin}/as2"))
}

async fn next_register(State(oauth): State<Arc<OAuth>>, body: Bytes) -> Response {
    match next(&oauth).server.register(&body) {
        Ok(answer) => json_response(StatusCode::CREATED, &answer),
        Err(e) => e.into_response(),
    }
}

async fn next_authorize(State(oauth): State<Arc<OAuth>>, headers: HeaderMap, uri: Uri) -> Response {
    let query = uri.query().unwrap_or_default();
    if oauth.is_foreign(&headers, query.as_bytes()) {
        bump(&next(&oauth).foreign_credentials);
    }
    let issuer = format!("{}/as2", oauth.origin(&headers));
    next(&oauth).server.authorize(query, Some(&issuer))
}

async fn next_token(State(oauth): State<Arc<OAuth>>, headers: HeaderMap, body: Bytes) -> Response {
    if oauth.is_foreign(&headers, &body) {
        bump(&next(&oauth).foreign_credentials);
    }
    match next(&oauth).server.token(&headers, &body) {
        Ok(answer) => json_response(StatusCode::OK, &answer),
        Err(e) => e.into_response(),
    }
}

/// Whether `host` is a plain `host[:port]` that is safe to put in URLs and headers.
fn is_authority(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:[]".contains(&b))
}

type Params = HashMap<String, String>;

/// The parameters of a query string or form body. Empty values count as absent; a parameter
/// given twice is an error (RFC 6749 §3.1).
fn params(bytes: &[u8]) -> Result<Params, &'static str> {
    let mut params = Params::new();
    for (name, value) in url::form_urlencoded::parse(bytes) {
        if value.is_empty() {
            continue;
        }
        if params
            .insert(name.into_owned(), value.into_owned())
            .is_some()
        {
            return Err("a parameter is given more than once");
        }
    }
    Ok(params)
}
