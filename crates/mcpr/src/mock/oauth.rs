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
pub struct OAuthKnobs {
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
    /// `--oauth-hide-expiry`: token responses carry no `expires_in` (tokens still expire), so
    /// a client learns of the expiry only from a 401.
    pub hide_expiry: bool,
    /// `--oauth-call-scope`: a scope `tools/call` needs on top of a valid token.
    pub call_scope: Option<String>,
    /// `--oauth-authorize-endpoint`: the `authorization_endpoint` advertised instead of
    /// `/authorize`, whatever its scheme.
    pub authorize_endpoint: Option<String>,
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
pub fn parse_scopes(text: &str) -> Option<Vec<String>> {
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

/// How a client authenticates at `/token` (`token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthMethod {
    Basic,
    Post,
    None,
}

impl AuthMethod {
    fn parse(name: &str) -> Option<AuthMethod> {
        match name {
            "client_secret_basic" => Some(AuthMethod::Basic),
            "client_secret_post" => Some(AuthMethod::Post),
            "none" => Some(AuthMethod::None),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::None => "none",
        }
    }
}

/// A known client.
struct Client {
    /// `None` for public clients.
    secret: Option<String>,
    /// The registered method; `None` for `--oauth-client` clients, which may use either secret
    /// method (they never said which).
    method: Option<AuthMethod>,
    /// The registered redirect URIs; `None` (`--oauth-client`): any http loopback URI.
    redirect_uris: Option<Vec<String>>,
}

/// An authorization code waiting for its exchange.
struct Code {
    client_id: String,
    /// The `redirect_uri` sent to `/authorize`, which `/token` must repeat.
    redirect_uri: Option<String>,
    challenge: String,
    scopes: Vec<String>,
    resource: Option<String>,
    expires: Instant,
}

struct Access {
    scopes: Vec<String>,
    /// `None`: a lifetime too long for the clock (`--oauth-token-ttl` near `u64::MAX`).
    expires: Option<Instant>,
}

impl Access {
    fn live(&self, now: Instant) -> bool {
        self.expires.is_none_or(|expires| expires > now)
    }
}

struct Refresh {
    client_id: String,
    scopes: Vec<String>,
    resource: Option<String>,
}

#[derive(Default)]
struct Store {
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    access: HashMap<String, Access>,
    refresh: HashMap<String, Refresh>,
}

/// What `GET /__oauth/stats` reports.
#[derive(Default)]
struct Stats {
    registrations: AtomicUsize,
    /// Valid `/authorize` requests, approved or (`--oauth-deny`) denied.
    authorizations: AtomicUsize,
    /// `/token` requests per grant type, whatever their outcome.
    authorization_code: AtomicUsize,
    refresh_token: AtomicUsize,
    client_credentials: AtomicUsize,
    /// 401s sent on `/mcp`.
    unauthorized: AtomicUsize,
    /// 403s sent on `/mcp`.
    insufficient_scope: AtomicUsize,
    /// `use_dpop_nonce` challenges sent (`--oauth-dpop token|resource`).
    dpop_nonce_challenges: AtomicUsize,
    /// JWT-bearer token requests (`--oauth-jwt-bearer`).
    jwt_bearer: AtomicUsize,
}

impl Stats {
    fn json(&self) -> Value {
        let get = |counter: &AtomicUsize| counter.load(Ordering::SeqCst);
        json!({
            "registrations": get(&self.registrations),
            "authorizations": get(&self.authorizations),
            "token_requests": {
                "authorization_code": get(&self.authorization_code),
                "refresh_token": get(&self.refresh_token),
                "client_credentials": get(&self.client_credentials),
            },
            "unauthorized": get(&self.unauthorized),
            "insufficient_scope": get(&self.insufficient_scope),
        })
    }
}

fn bump(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::SeqCst);
}

/// The authorization server and resource guard: knobs, clients, grants and tokens.
pub struct OAuth {
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
    pub fn new(knobs: OAuthKnobs, bound: SocketAddr) -> OAuth {
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

    fn register(&self, body: &[u8]) -> Result<Value, OAuthError> {
        let invalid = |why: &'static str| OAuthError::bad("invalid_client_metadata", why);
        let Ok(Value::Object(metadata)) = serde_json::from_slice::<Value>(body) else {
            return Err(invalid("the body must be a JSON object"));
        };
        let redirect_uris = strings(&metadata, "redirect_uris")?.unwrap_or_default();
        let grant_types = strings(&metadata, "grant_types")?
            .unwrap_or_else(|| vec!["authorization_code".to_owned()]);
        let response_types =
            strings(&metadata, "response_types")?.unwrap_or_else(|| vec!["code".to_owned()]);
        // RFC 7591 §2: client_secret_basic when absent.
        let method = match metadata.get("token_endpoint_auth_method") {
            None | Some(Value::Null) => AuthMethod::Basic,
            Some(Value::String(name)) => AuthMethod::parse(name).ok_or_else(|| {
                invalid("token_endpoint_auth_method must be client_secret_basic, client_secret_post or none")
            })?,
            Some(_) => return Err(invalid("token_endpoint_auth_method must be a string")),
        };
        let client_name = match metadata.get("client_name") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => return Err(invalid("client_name must be a string")),
        };
        if !grant_types
            .iter()
            .all(|g| GRANT_TYPES.contains(&g.as_str()))
        {
            return Err(invalid(
                "grant_types may hold authorization_code, refresh_token and client_credentials",
            ));
        }
        if response_types.iter().any(|r| r != "code") {
            return Err(invalid("response_types may only hold code"));
        }
        if method == AuthMethod::None && grant_types.iter().any(|g| g == "client_credentials") {
            return Err(invalid("client_credentials needs a confidential client"));
        }
        if redirect_uris.iter().any(|uri| loopback(uri).is_none()) {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "redirect URIs must be http loopback URLs (127.0.0.1, localhost or [::1])",
            ));
        }
        if redirect_uris.is_empty() && grant_types.iter().any(|g| g == "authorization_code") {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "authorization_code needs at least one redirect URI",
            ));
        }

        let client_id = random("mock-client-")?;
        let secret = match method {
            AuthMethod::None => None,
            AuthMethod::Basic | AuthMethod::Post => Some(random("mock-cs-")?),
        };
        let mut answer = json!({
            "client_id": client_id,
            "client_id_issued_at": unix_now(),
            "token_endpoint_auth_method": method.name(),
            "redirect_uris": redirect_uris,
            "grant_types": grant_types,
            "response_types": response_types,
        });
        if let Some(secret) = &secret {
            answer["client_secret"] = secret.clone().into();
            // RFC 7591 §3.2.1: required with a secret; 0 is "never expires".
            answer["client_secret_expires_at"] = 0.into();
        }
        if let Some(name) = client_name {
            answer["client_name"] = name.into();
        }
        self.lock().clients.insert(
            client_id,
            Client {
                secret,
                method: Some(method),
                redirect_uris: Some(redirect_uris),
            },
        );
        bump(&self.stats.registrations);
        Ok(answer)
    }

    /// `/authorize`: a redirect with a code (or an error), or 400 text when it cannot safely
    /// redirect (unknown client, bad redirect URI) or the request is malformed.
    fn authorize(&self, query: &str, issuer: Option<&str>) -> Response {
        let params = match params(query.as_bytes()) {
            Ok(params) => params,
            Err(why) => return reject(why),
        };
        let param = |name: &str| params.get(name).map(String::as_str);
        let Some(client_id) = param("client_id") else {
            return reject("missing client_id");
        };
        let mut store = self.lock();
        let Some(client) = store.clients.get(client_id) else {
            return reject("unknown client_id");
        };
        let redirect_uri = match (param("redirect_uri"), client.redirect_uris.as_deref()) {
            (Some(uri), _) => uri.to_owned(),
            // OAuth 2.1 §4.1.1: optional when exactly one is registered.
            (None, Some([only])) => only.clone(),
            (None, _) => return reject("missing redirect_uri"),
        };
        let Some(target) = loopback(&redirect_uri) else {
            return reject("redirect_uri must be an http loopback URL");
        };
        if let Some(registered) = &client.redirect_uris
            && !registered.iter().any(|r| same_redirect(r, &target))
        {
            return reject("redirect_uri is not registered for this client");
        }
        if param("response_type") != Some("code") {
            return reject("response_type must be code");
        }
        let Some(challenge) = param("code_challenge") else {
            return reject("missing code_challenge (PKCE is required)");
        };
        if param("code_challenge_method") != Some("S256") {
            return reject("code_challenge_method must be S256");
        }
        if !is_challenge(challenge) {
            return reject("code_challenge must be 43 base64url characters (S256)");
        }

        // From here on, errors go back to the client through the redirect.
        let scopes = match param("scope").map(parse_scopes) {
            None => self.knobs.scopes.clone(),
            Some(Some(scopes)) if scopes.is_empty() => self.knobs.scopes.clone(),
            Some(Some(scopes)) => scopes,
            Some(None) => return redirect(target, &[("error", "invalid_scope")], param("state")),
        };
        let resource = param("resource");
        if resource.is_some_and(|r| !self.is_resource(r)) {
            return redirect(target, &[("error", "invalid_target")], param("state"));
        }
        bump(&self.stats.authorizations);
        if self.knobs.deny {
            return redirect(target, &[("error", "access_denied")], param("state"));
        }
        let Ok(code) = random("mock-code-") else {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness from the OS",
            );
        };
        store.codes.insert(
            code.clone(),
            Code {
                client_id: client_id.to_owned(),
                redirect_uri: param("redirect_uri").map(str::to_owned),
                challenge: challenge.to_owned(),
                scopes,
                resource: resource.map(str::to_owned),
                expires: Instant::now() + CODE_TTL,
            },
        );
        let iss = match self.knobs.iss {
            Some(IssKnob::Right) => issuer,
            Some(IssKnob::Wrong) => Some(WRONG_ISSUER),
            Some(IssKnob::Missing) | None => None,
        };
        let mut params = vec![("code", code.as_str())];
        params.extend(iss.map(|iss| ("iss", iss)));
        redirect(target, &params, param("state"))
    }

    fn token(&self, headers: &HeaderMap, body: &[u8]) -> Result<Value, OAuthError> {
        let is_form = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded"));
        if !is_form {
            return Err(OAuthError::bad(
                "invalid_request",
                "the body must be application/x-www-form-urlencoded",
            ));
        }
        let params = params(body).map_err(|why| OAuthError::bad("invalid_request", why))?;
        let grant = params.get("grant_type").map(String::as_str);
        match grant {
            Some("authorization_code") => bump(&self.stats.authorization_code),
            Some("refresh_token") => bump(&self.stats.refresh_token),
            Some("client_credentials") => bump(&self.stats.client_credentials),
            Some(JWT_BEARER) if self.knobs.jwt_bearer.is_some() => {
                bump(&self.stats.jwt_bearer);
                let mut store = self.lock();
                return self.jwt_bearer(&mut store, &params);
            }
            Some(_) => {
                return Err(OAuthError::bad(
                    "unsupported_grant_type",
                    "grant_type must be authorization_code, refresh_token or client_credentials",
                ));
            }
            None => return Err(OAuthError::bad("invalid_request", "missing grant_type")),
        }
        let proof = headers.contains_key("dpop");
        if proof && self.knobs.dpop == Some(DpopKnob::Token) {
            bump(&self.stats.dpop_nonce_challenges);
            return Err(OAuthError::bad(
                "use_dpop_nonce",
                "use the DPoP-Nonce (mcpr mock --oauth-dpop token)",
            ));
        }
        let mut store = self.lock();
        let client_id = authenticate(&store, headers, &params)?;
        let mut answer = match grant {
            Some("authorization_code") => self.exchange_code(&mut store, client_id, &params),
            Some("refresh_token") => self.refresh(&mut store, client_id, &params),
            _ => self.client_credentials(&mut store, client_id, &params),
        }?;
        if proof && self.knobs.dpop.is_some() {
            answer["token_type"] = "DPoP".into();
        }
        Ok(answer)
    }

    fn exchange_code(
        &self,
        store: &mut Store,
        client_id: String,
        params: &Params,
    ) -> Result<Value, OAuthError> {
        let param = |name: &str| params.get(name).map(String::as_str);
        let Some(code) = param("code") else {
            return Err(OAuthError::bad("invalid_request", "missing code"));
        };
        // Single use: gone at the first attempt, whatever its outcome.
        let Some(grant) = store.codes.remove(code) else {
            return Err(invalid_grant("unknown, expired or already used code"));
        };
        if grant.expires <= Instant::now() {
            return Err(invalid_grant("unknown, expired or already used code"));
        }
        if grant.client_id != client_id {
            return Err(invalid_grant("the code was issued to another client"));
        }
        if grant.redirect_uri.is_some() && param("redirect_uri") != grant.redirect_uri.as_deref() {
            return Err(invalid_grant(
                "redirect_uri differs from the authorization request",
            ));
        }
        let Some(verifier) = param("code_verifier") else {
            return Err(invalid_grant("missing code_verifier"));
        };
        if !pkce_matches(verifier, &grant.challenge) {
            return Err(invalid_grant(
                "code_verifier does not match the code_challenge",
            ));
        }
        if param("resource").is_some_and(|r| grant.resource.as_deref() != Some(r)) {
            return Err(invalid_grant(
                "resource differs from the authorization request",
            ));
        }
        let refresh = Refresh {
            client_id,
            scopes: grant.scopes.clone(),
            resource: grant.resource,
        };
        self.issue(store, grant.scopes, Some(refresh))
    }

    fn refresh(
        &self,
        store: &mut Store,
        client_id: String,
        params: &Params,
    ) -> Result<Value, OAuthError> {
        if self.knobs.refresh_invalid {
            return Err(invalid_grant(
                "refresh tokens are refused (mcpr mock --oauth-refresh-invalid)",
            ));
        }
        let param = |name: &str| params.get(name).map(String::as_str);
        let Some(token) = param("refresh_token") else {
            return Err(OAuthError::bad("invalid_request", "missing refresh_token"));
        };
        let Some(old) = store.refresh.get(token) else {
            return Err(invalid_grant("unknown or already used refresh token"));
        };
        if old.client_id != client_id {
            return Err(invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        // RFC 6749 §6: a narrower scope may be asked for, never a wider one.
        let scopes = match param("scope").map(parse_scopes) {
            None => old.scopes.clone(),
            Some(Some(scopes)) if scopes.iter().all(|s| old.scopes.contains(s)) => scopes,
            Some(_) => {
                return Err(OAuthError::bad(
                    "invalid_scope",
                    "a refresh may only narrow the scopes first granted",
                ));
            }
        };
        if param("resource").is_some_and(|r| old.resource.as_deref() != Some(r)) {
            return Err(invalid_grant(
                "resource differs from the authorization request",
            ));
        }
        // Rotation: the old refresh token dies with this use.
        let Some(old) = store.refresh.remove(token) else {
            return Err(invalid_grant("unknown or already used refresh token"));
        };
        self.issue(store, scopes, Some(old))
    }

    /// The JWT-bearer grant: the `--oauth-jwt-bearer` assertion gets a token (no refresh
    /// token: the workload presents a fresh assertion next time); any other is refused with
    /// a hostile description.
    fn jwt_bearer(&self, store: &mut Store, params: &Params) -> Result<Value, OAuthError> {
        if params.get("assertion") != self.knobs.jwt_bearer.as_ref() {
            return Err(invalid_grant(
                "the assertion is not the one expected\u{1b}]0;pwned\u{7}",
            ));
        }
        if params.get("resource").is_some_and(|r| !self.is_resource(r)) {
            return Err(OAuthError::bad(
                "invalid_target",
                "resource must be this server's /mcp URL",
            ));
        }
        self.issue(store, self.knobs.scopes.clone(), None)
    }

    fn client_credentials(
        &self,
        store: &mut Store,
        client_id: String,
        params: &Params,
    ) -> Result<Value, OAuthError> {
        let confidential = store
            .clients
            .get(&client_id)
            .is_some_and(|c| c.secret.is_some());
        if !confidential {
            return Err(OAuthError::bad(
                "unauthorized_client",
                "client_credentials needs a confidential client",
            ));
        }
        let scopes = match params.get("scope").map(|s| parse_scopes(s)) {
            None => self.knobs.scopes.clone(),
            Some(Some(scopes)) if scopes.is_empty() => self.knobs.scopes.clone(),
            Some(Some(scopes)) => scopes,
            Some(None) => return Err(OAuthError::bad("invalid_scope", "malformed scope")),
        };
        if params.get("resource").is_some_and(|r| !self.is_resource(r)) {
            return Err(OAuthError::bad(
                "invalid_target",
                "resource must be this server's /mcp URL",
            ));
        }
        self.issue(store, scopes, None)
    }

    /// A new access token for `scopes`, and a new refresh token carrying `refresh` if given.
    fn issue(
        &self,
        store: &mut Store,
        scopes: Vec<String>,
        refresh: Option<Refresh>,
    ) -> Result<Value, OAuthError> {
        let now = Instant::now();
        // Expired tokens are only ever refused: forget them.
        store.access.retain(|_, access| access.live(now));
        let access_token = random("mock-at-")?;
        let mut answer = json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": u64::try_from(self.knobs.token_ttl.as_millis().div_ceil(1000))
                .unwrap_or(u64::MAX),
            "scope": self.knobs.token_scope.clone().unwrap_or_else(|| scopes.join(" ")),
        });
        if self.knobs.hide_expiry
            && let Some(fields) = answer.as_object_mut()
        {
            fields.remove("expires_in");
        }
        if let Some(refresh) = refresh {
            let refresh_token = random("mock-rt-")?;
            answer["refresh_token"] = refresh_token.clone().into();
            store.refresh.insert(refresh_token, refresh);
        }
        store.access.insert(
            access_token,
            Access {
                scopes,
                expires: now.checked_add(self.knobs.token_ttl),
            },
        );
        Ok(answer)
    }

    /// The scopes of the request's bearer token, if it has a live one.
    fn bearer(&self, headers: &HeaderMap) -> Bearer {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| {
                scheme.eq_ignore_ascii_case("bearer")
                    || (self.knobs.dpop.is_some()
                        && scheme.eq_ignore_ascii_case("dpop")
                        && headers.contains_key("dpop"))
            })
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty());
        let Some(token) = token else {
            return Bearer::Missing;
        };
        let mut store = self.lock();
        match store.access.get(token) {
            Some(access) if access.live(Instant::now()) => Bearer::Valid(access.scopes.clone()),
            Some(_) => {
                store.access.remove(token);
                Bearer::Invalid
            }
            None => Bearer::Invalid,
        }
    }

    /// 401 with the RFC 9728 challenge; `error="invalid_token"` when a token was sent.
    fn unauthorized(&self, origin: &str, token_sent: bool) -> Response {
        bump(&self.stats.unauthorized);
        let mut challenge =
            format!(r#"Bearer resource_metadata="{origin}{RESOURCE_METADATA_PATH}""#);
        let description = if token_sent {
            challenge.push_str(r#", error="invalid_token""#);
            "the access token is unknown or expired"
        } else {
            "a bearer token is required"
        };
        let body = json!({"error": "invalid_token", "error_description": description});
        challenged(StatusCode::UNAUTHORIZED, &challenge, &body)
    }

    /// 401 asking for a proof with a new nonce (`--oauth-dpop resource`).
    fn dpop_nonce_challenge(&self, origin: &str) -> Response {
        bump(&self.stats.dpop_nonce_challenges);
        let challenge = format!(
            r#"DPoP error="use_dpop_nonce", resource_metadata="{origin}{RESOURCE_METADATA_PATH}""#
        );
        let body = json!({"error": "use_dpop_nonce"});
        let mut response = challenged(StatusCode::UNAUTHORIZED, &challenge, &body);
        with_nonce(&mut response);
        response
    }

    /// 403 naming the scopes that would do: the token's plus `needed`.
    fn insufficient_scope(&self, origin: &str, scopes: &[String], needed: &str) -> Response {
        bump(&self.stats.insufficient_scope);
        let mut wanted = scopes.to_vec();
        if !wanted.iter().any(|s| s == needed) {
            wanted.push(needed.to_owned());
        }
        let challenge = format!(
            r#"Bearer error="insufficient_scope", scope="{}", resource_metadata="{origin}{RESOURCE_METADATA_PATH}""#,
            wanted.join(" ")
        );
        let body = json!({
            "error": "insufficient_scope",
            "error_description": "tools/call needs another scope (mcpr mock --oauth-call-scope)",
        });
        challenged(StatusCode::FORBIDDEN, &challenge, &body)
    }
}

enum Bearer {
    Missing,
    Invalid,
    Valid(Vec<String>),
}

/// The authorization server's routes, to merge next to `/mcp`.
pub fn router(oauth: Arc<OAuth>) -> Router {
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

/// The middleware in front of `/mcp` (`axum::middleware::from_fn_with_state`).
pub async fn guard(State(oauth): State<Arc<OAuth>>, request: Request, next: Next) -> Response {
    let origin = oauth.origin(request.headers());
    let current = oauth.current();
    let scopes = match current.bearer(request.headers()) {
        Bearer::Valid(scopes) => scopes,
        Bearer::Missing => return current.unauthorized(&origin, false),
        Bearer::Invalid => return current.unauthorized(&origin, true),
    };
    if oauth.knobs.dpop == Some(DpopKnob::Resource) && request.headers().contains_key("dpop") {
        return oauth.dpop_nonce_challenge(&origin);
    }
    // `--oauth-migrate-to`: the first token used is the last the first server's are taken.
    if let Some(next) = &oauth.next {
        next.moved.store(true, Ordering::SeqCst);
    }
    let Some(needed) = &oauth.knobs.call_scope else {
        return next.run(request).await;
    };
    if request.method() != Method::POST || scopes.contains(needed) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await else {
        return text(StatusCode::PAYLOAD_TOO_LARGE, "request body too large");
    };
    if calls_a_tool(&body) {
        return oauth.insufficient_scope(&origin, &scopes, needed);
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

async fn resource_metadata(State(oauth): State<Arc<OAuth>>, headers: HeaderMap) -> Response {
    let origin = oauth.origin(&headers);
    let issuer = match &oauth.next {
        Some(next) if next.moved.load(Ordering::SeqCst) => format!("http://{}/as2", next.authority),
        _ => origin.clone(),
    };
    json_response(
        StatusCode::OK,
        &json!({
            "resource": format!("{origin}/mcp"),
            "authorization_servers": [issuer],
            "scopes_supported": oauth.knobs.scopes,
            "bearer_methods_supported": ["header"],
        }),
    )
}

async fn server_metadata(State(oauth): State<Arc<OAuth>>, headers: HeaderMap) -> Response {
    let origin = oauth.origin(&headers);
    metadata_of(&oauth, &origin)
}

/// The metadata of the authorization server `oauth` whose issuer is `origin` (an origin, or
/// one with the path `/as2` for the second server).
fn metadata_of(oauth: &OAuth, origin: &str) -> Response {
    let mut metadata = json!({
        "issuer": origin,
        "authorization_endpoint": oauth
            .knobs
            .authorize_endpoint
            .clone()
            .unwrap_or_else(|| format!("{origin}/authorize")),
        "token_endpoint": format!("{origin}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": GRANT_TYPES,
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "scopes_supported": oauth.knobs.scopes,
    });
    if oauth.knobs.dpop.is_some() {
        metadata["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    if oauth.knobs.iss.is_some() {
        metadata["authorization_response_iss_parameter_supported"] = true.into();
    }
    if oauth.knobs.registration {
        metadata["registration_endpoint"] = format!("{origin}/register").into();
    }
    json_response(StatusCode::OK, &metadata)
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

async fn register(State(oauth): State<Arc<OAuth>>, body: Bytes) -> Response {
    match oauth.register(&body) {
        Ok(answer) => json_response(StatusCode::CREATED, &answer),
        Err(e) => e.into_response(),
    }
}

async fn no_registration() -> Response {
    text(
        StatusCode::NOT_FOUND,
        "no dynamic client registration (--oauth-no-registration)",
    )
}

async fn authorize(State(oauth): State<Arc<OAuth>>, headers: HeaderMap, uri: Uri) -> Response {
    let issuer = oauth.origin(&headers);
    oauth.authorize(uri.query().unwrap_or_default(), Some(&issuer))
}

async fn token(State(oauth): State<Arc<OAuth>>, headers: HeaderMap, body: Bytes) -> Response {
    match oauth.token(&headers, &body) {
        Ok(answer) => json_response(StatusCode::OK, &answer),
        Err(e) => e.into_response(),
    }
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

/// The client a `/token` request authenticates as, which must be the way it registered: HTTP
/// Basic (`client_secret_basic`), `client_id` + `client_secret` in the body
/// (`client_secret_post`), or `client_id` alone (public, `none`). `--oauth-client` clients may
/// use either secret method.
fn authenticate(store: &Store, headers: &HeaderMap, params: &Params) -> Result<String, OAuthError> {
    let basic =
        match headers.get(header::AUTHORIZATION) {
            Some(value) => {
                Some(value.to_str().ok().and_then(parse_basic).ok_or_else(|| {
                    OAuthError::invalid_client("malformed HTTP Basic credentials")
                })?)
            }
            None => None,
        };
    let body_id = params.get("client_id");
    let body_secret = params.get("client_secret");
    let (client_id, secret, used) = match (basic, body_id, body_secret) {
        (Some(_), _, Some(_)) => {
            return Err(OAuthError::bad(
                "invalid_request",
                "more than one client authentication method",
            ));
        }
        (Some((id, secret)), body_id, None) => {
            if body_id.is_some_and(|b| *b != id) {
                return Err(OAuthError::invalid_client(
                    "client_id differs from the HTTP Basic credentials",
                ));
            }
            (id, Some(secret), AuthMethod::Basic)
        }
        (None, Some(id), Some(secret)) => (id.clone(), Some(secret.clone()), AuthMethod::Post),
        (None, Some(id), None) => (id.clone(), None, AuthMethod::None),
        (None, None, _) => return Err(OAuthError::invalid_client("no client authentication")),
    };
    let Some(client) = store.clients.get(&client_id) else {
        return Err(OAuthError::invalid_client("unknown client"));
    };
    match (&client.secret, client.method) {
        (None, _) if used == AuthMethod::None => Ok(client_id),
        (None, _) => Err(OAuthError::invalid_client(
            "a public client authenticates with its client_id alone",
        )),
        (Some(_), Some(method)) if method != used => {
            Err(OAuthError::invalid_client(match method {
                AuthMethod::Post => "this client registered client_secret_post",
                _ => "this client registered client_secret_basic",
            }))
        }
        (Some(_), None) if used == AuthMethod::None => {
            Err(OAuthError::invalid_client("this client needs its secret"))
        }
        (Some(expected), _) if secret.as_ref() == Some(expected) => Ok(client_id),
        (Some(_), _) => Err(OAuthError::invalid_client("wrong client secret")),
    }
}

/// `id` and `secret` from an `Authorization: Basic` value. RFC 6749 §2.3.1 has both
/// form-encoded before base64; text that is not validly encoded is taken as it is.
fn parse_basic(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((form_decode(id), form_decode(secret)))
}

/// Undoes `application/x-www-form-urlencoded` (`+`, `%XX`); `text` as it is if that fails.
fn form_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                let Some(decoded) = hex else {
                    return text.to_owned();
                };
                out.push(decoded);
                i += 2;
            }
            _ => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// Whether `verifier` is a valid PKCE verifier (RFC 7636 §4.1) whose S256 challenge is
/// `challenge`: base64url without padding of its SHA-256.
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
    (43..=128).contains(&verifier.len())
        && verifier.bytes().all(unreserved)
        && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

/// Whether `challenge` can be an S256 challenge: 43 base64url characters (32 bytes, no
/// padding), which catches padded or standard-alphabet encodings early.
fn is_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `uri` parsed, if it is an http URL on a loopback host (127.0.0.0/8, `localhost`, `[::1]`)
/// without credentials or fragment.
fn loopback(uri: &str) -> Option<Url> {
    let url = Url::parse(uri).ok()?;
    let host_ok = match url.host()? {
        url::Host::Domain(domain) => domain.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    let plain = url.username().is_empty() && url.password().is_none() && url.fragment().is_none();
    (url.scheme() == "http" && host_ok && plain).then_some(url)
}

/// Whether `requested` matches the registered redirect URI: exactly, or but for the port, as
/// loopback clients pick theirs at run time (RFC 8252 §7.3).
fn same_redirect(registered: &str, requested: &Url) -> bool {
    let Ok(mut registered) = Url::parse(registered) else {
        return false;
    };
    let mut requested = requested.clone();
    // Both are http URLs with a host, where setting the port cannot fail.
    let _ = registered.set_port(None);
    let _ = requested.set_port(None);
    registered == requested
}

/// Whether a JSON-RPC body (one message or a batch) holds a `tools/call`.
fn calls_a_tool(body: &[u8]) -> bool {
    let is_call = |m: &Value| m.get("method").and_then(Value::as_str) == Some("tools/call");
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch.iter().any(is_call),
        Ok(message) => is_call(&message),
        Err(_) => false,
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

/// A string-array member of the registration metadata.
fn strings(metadata: &Map<String, Value>, name: &str) -> Result<Option<Vec<String>>, OAuthError> {
    match metadata.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| {
                OAuthError::bad("invalid_client_metadata", "arrays must hold strings only")
            }),
        Some(_) => Err(OAuthError::bad(
            "invalid_client_metadata",
            "redirect_uris, grant_types and response_types must be arrays",
        )),
    }
}

/// A random token: `prefix` and 32 bytes from the OS, base64url.
fn random(prefix: &str) -> Result<String, OAuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| OAuthError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        error: "server_error",
        description: "no randomness from the OS",
    })?;
    Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2): `{error, error_description}`.
#[derive(Debug)]
struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: &'static str,
}

impl OAuthError {
    fn bad(error: &'static str, description: &'static str) -> OAuthError {
        OAuthError {
            status: StatusCode::BAD_REQUEST,
            error,
            description,
        }
    }

    fn invalid_client(description: &'static str) -> OAuthError {
        OAuthError {
            status: StatusCode::UNAUTHORIZED,
            error: "invalid_client",
            description,
        }
    }
}

fn invalid_grant(description: &'static str) -> OAuthError {
    OAuthError::bad("invalid_grant", description)
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.error, "error_description": self.description});
        let mut response = json_response(self.status, &body);
        if self.error == "use_dpop_nonce" {
            with_nonce(&mut response);
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 6749 §5.2: a 401 names the scheme the client should authenticate with.
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Basic realm="mcpr-mock""#),
            );
        }
        response
    }
}

/// A new `DPoP-Nonce` on `response`: a different one every time, as a hostile server would.
fn with_nonce(response: &mut Response) {
    if let Ok(nonce) = random("mock-nonce-")
        && let Ok(value) = HeaderValue::from_str(&nonce)
    {
        response.headers_mut().insert("dpop-nonce", value);
    }
}

/// A JSON answer that no cache keeps (RFC 6749 §5.1).
fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

/// A JSON answer with a `WWW-Authenticate` challenge.
fn challenged(status: StatusCode, challenge: &str, body: &Value) -> Response {
    let mut response = json_response(status, body);
    // The origin and scopes in it were checked to be header-safe; should one not be, the
    // status and body still say what is wrong.
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// 302 to `target` with `params` (and `state`, if the client sent one) added to its query.
fn redirect(mut target: Url, params: &[(&str, &str)], state: Option<&str>) -> Response {
    {
        let mut query = target.query_pairs_mut();
        for (name, value) in params {
            query.append_pair(name, value);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
    }
    match HeaderValue::from_str(target.as_str()) {
        Ok(location) => (
            StatusCode::FOUND,
            [
                (header::LOCATION, location),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
        )
            .into_response(),
        Err(_) => reject("redirect_uri cannot be used in a Location header"),
    }
}

/// 400 with a text body: `/authorize` refuses without redirecting.
fn reject(why: &str) -> Response {
    text(StatusCode::BAD_REQUEST, why)
}

fn text(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("mcpr mock: {message}\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn pkce_s256_matches_the_rfc_example_only() {
        assert!(is_challenge(CHALLENGE));
        assert!(pkce_matches(VERIFIER, CHALLENGE));
        assert!(!pkce_matches(
            VERIFIER,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"
        ));
        // The plain method (verifier == challenge) is not accepted.
        assert!(!pkce_matches(CHALLENGE, CHALLENGE));
        // Too short, or with characters outside the unreserved set.
        assert!(!pkce_matches("short", CHALLENGE));
        assert!(!pkce_matches(&format!("{VERIFIER}+"), CHALLENGE));
        // Padded or standard-alphabet challenges are refused at /authorize.
        assert!(!is_challenge(&format!("{CHALLENGE}=")));
        assert!(!is_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw/cM"));
    }

    #[test]
    fn basic_credentials_are_base64_then_form_decoded() {
        let header = format!("Basic {}", STANDARD.encode("my%20client:s3cr+t%3A1"));
        assert_eq!(
            parse_basic(&header),
            Some(("my client".to_owned(), "s3cr t:1".to_owned()))
        );
        let header = format!("basic {}", STANDARD.encode("id:pass:with:colons"));
        assert_eq!(
            parse_basic(&header),
            Some(("id".to_owned(), "pass:with:colons".to_owned()))
        );
        // Not validly form-encoded: taken as it is.
        let header = format!("Basic {}", STANDARD.encode("id:100%"));
        assert_eq!(parse_basic(&header), Some(("id".into(), "100%".into())));
        assert_eq!(parse_basic("Bearer abc"), None);
        assert_eq!(parse_basic("Basic !!!"), None);
        assert_eq!(
            parse_basic(&format!("Basic {}", STANDARD.encode("nocolon"))),
            None
        );
    }

    #[test]
    fn scopes_are_split_deduplicated_and_checked() {
        assert_eq!(
            parse_scopes(" mcp:tools  mcp:admin mcp:tools "),
            Some(vec!["mcp:tools".to_owned(), "mcp:admin".to_owned()])
        );
        assert_eq!(parse_scopes(""), Some(vec![]));
        assert_eq!(parse_scopes(r#"a"b"#), None);
        assert_eq!(parse_scopes(r"a\b"), None);
    }

    #[test]
    fn only_http_loopback_redirects_are_accepted() {
        assert!(loopback("http://127.0.0.1:8765/callback").is_some());
        assert!(loopback("http://localhost/cb?x=1").is_some());
        assert!(loopback("http://[::1]:9/cb").is_some());
        assert!(loopback("https://127.0.0.1/cb").is_none());
        assert!(loopback("http://example.com/cb").is_none());
        assert!(loopback("http://127.0.0.1.example.com/cb").is_none());
        assert!(loopback("http://user@127.0.0.1/cb").is_none());
        assert!(loopback("http://127.0.0.1/cb#frag").is_none());
        assert!(loopback("not a url").is_none());
    }

    #[test]
    fn loopback_redirects_match_whatever_the_port() {
        let requested = loopback("http://127.0.0.1:5555/cb").unwrap();
        assert!(same_redirect("http://127.0.0.1/cb", &requested));
        assert!(same_redirect("http://127.0.0.1:1234/cb", &requested));
        assert!(!same_redirect("http://127.0.0.1/other", &requested));
        assert!(!same_redirect("http://localhost/cb", &requested));
    }

    #[test]
    fn repeated_parameters_are_refused_and_empty_ones_ignored() {
        let p = params(b"a=1&b=&c=x%20y").unwrap();
        assert_eq!(p.get("a").map(String::as_str), Some("1"));
        assert_eq!(p.get("b"), None);
        assert_eq!(p.get("c").map(String::as_str), Some("x y"));
        assert!(params(b"a=1&a=2").is_err());
    }

    #[test]
    fn tools_call_is_found_in_single_messages_and_batches() {
        assert!(calls_a_tool(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#
        ));
        assert!(calls_a_tool(
            br#"[{"method":"ping"},{"method":"tools/call"}]"#
        ));
        assert!(!calls_a_tool(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(!calls_a_tool(b"not json"));
    }

    #[test]
    fn client_credentials_debug_hides_the_secret() {
        let client: ClientCredentials = "ci:hunter2".parse().unwrap();
        assert_eq!(client.secret, "hunter2");
        assert!(!format!("{client:?}").contains("hunter2"));
        assert!("nocolon".parse::<ClientCredentials>().is_err());
        assert!(":secret".parse::<ClientCredentials>().is_err());
    }

    fn server(knobs: impl FnOnce(&mut OAuthKnobs)) -> OAuth {
        let mut k = OAuthKnobs {
            scopes: vec!["mcp:tools".to_owned()],
            clients: vec!["ci:s3cret".parse().unwrap()],
            registration: true,
            deny: false,
            refresh_invalid: false,
            token_ttl: Duration::from_secs(60),
            hide_expiry: false,
            call_scope: None,
            authorize_endpoint: None,
            token_scope: None,
            migrate_to: None,
            dpop: None,
            iss: None,
            jwt_bearer: None,
        };
        knobs(&mut k);
        OAuth::new(k, "127.0.0.1:4000".parse().unwrap())
    }

    fn form_headers(basic: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        if let Some(credentials) = basic {
            let value = format!("Basic {}", STANDARD.encode(credentials));
            headers.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(&value).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn granted_scopes_default_to_the_configured_ones() {
        let oauth = server(|_| {});
        let headers = form_headers(Some("ci:s3cret"));
        let answer = oauth
            .token(&headers, b"grant_type=client_credentials")
            .unwrap();
        assert_eq!(answer["scope"], "mcp:tools");
        assert!(answer.get("refresh_token").is_none());
        let answer = oauth
            .token(&headers, b"grant_type=client_credentials&scope=a+b+a")
            .unwrap();
        assert_eq!(answer["scope"], "a b");
        let err = oauth
            .token(&headers, b"grant_type=client_credentials&scope=a%22b")
            .unwrap_err();
        assert_eq!(err.error, "invalid_scope");
    }

    #[test]
    fn clients_must_authenticate_the_way_they_registered() {
        let oauth = server(|_| {});
        let basic = oauth
            .register(br#"{"redirect_uris":["http://127.0.0.1/cb"]}"#)
            .unwrap();
        let id = basic["client_id"].as_str().unwrap();
        let secret = basic["client_secret"].as_str().unwrap();
        assert_eq!(basic["token_endpoint_auth_method"], "client_secret_basic");

        let store = oauth.lock();
        let form = |pairs: &[(&str, &str)]| -> Params {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let with_basic = form_headers(Some(&format!("{id}:{secret}")));
        assert!(authenticate(&store, &with_basic, &form(&[])).is_ok());
        let wrong = form_headers(Some(&format!("{id}:nope")));
        assert_eq!(
            authenticate(&store, &wrong, &form(&[])).unwrap_err().error,
            "invalid_client"
        );
        let plain = form_headers(None);
        let posted = form(&[("client_id", id), ("client_secret", secret)]);
        assert_eq!(
            authenticate(&store, &plain, &posted).unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
        // Pre-registered clients may use either method.
        assert!(authenticate(&store, &form_headers(Some("ci:s3cret")), &form(&[])).is_ok());
        let posted = form(&[("client_id", "ci"), ("client_secret", "s3cret")]);
        assert!(authenticate(&store, &plain, &posted).is_ok());
        let public = form(&[("client_id", "ci")]);
        assert!(authenticate(&store, &plain, &public).is_err());
        assert!(authenticate(&store, &plain, &form(&[("client_id", "who")])).is_err());
    }

    #[test]
    fn public_registrations_get_no_secret_and_bad_redirects_are_refused() {
        let oauth = server(|_| {});
        let public = oauth
            .register(
                br#"{"redirect_uris":["http://localhost:1/cb"],"token_endpoint_auth_method":"none","client_name":"t"}"#,
            )
            .unwrap();
        assert!(public.get("client_secret").is_none());
        assert_eq!(public["client_name"], "t");
        let err = oauth
            .register(br#"{"redirect_uris":["https://example.com/cb"]}"#)
            .unwrap_err();
        assert_eq!(err.error, "invalid_redirect_uri");
        let err = oauth.register(b"[]").unwrap_err();
        assert_eq!(err.error, "invalid_client_metadata");
        assert_eq!(oauth.stats.json()["registrations"], 1);
    }

    #[test]
    fn the_origin_follows_a_sane_host_header() {
        let oauth = server(|_| {});
        let mut headers = HeaderMap::new();
        assert_eq!(oauth.origin(&headers), "http://127.0.0.1:4000");
        headers.insert(header::HOST, HeaderValue::from_static("localhost:4000"));
        assert_eq!(oauth.origin(&headers), "http://localhost:4000");
        headers.insert(header::HOST, HeaderValue::from_static("evil\"host"));
        assert_eq!(oauth.origin(&headers), "http://127.0.0.1:4000");
        assert!(oauth.is_resource("http://localhost:4000/mcp"));
        assert!(!oauth.is_resource("http://127.0.0.1:4000/"));
        assert!(!oauth.is_resource("http://127.0.0.1:4001/mcp"));
    }
}
