//! OAuth 2.1 for remote servers (MCP authorization, 2025-03-26 … 2026-07-28): log in once,
//! refresh from then on.
//!
//! rmcp's `auth` feature implements the protocol (discovery, registration, PKCE, token
//! exchange, refresh, client credentials); this module puts it behind mcpr's own layer:
//!
//! - [`CredentialStore`]: tokens and client secrets in one private SQLite file, keyed by the
//!   server URL.
//! - [`Authorizer`]: the person's part of a login — [`LoopbackBrowser`] (browser + loopback
//!   redirect) or [`Headless`] (an authorization server that approves by itself).
//! - [`login`] / [`logout`] / [`status`]: what `mcpr login`, `mcpr logout` and `mcpr status`
//!   do.
//! - [`AuthContext`] in [`crate::client::ConnectOptions`]: every streamable HTTP request of a
//!   connection carries the stored token, refreshed ahead of expiry and once after a 401. Without
//!   an authorizer (the default: `tools`, `call`, `serve`, a library host at start-up) nothing
//!   ever waits for a browser; a server that needs a login fails with
//!   [`crate::client::ClientError::AuthRequired`], whose [`AuthFailure`] says what a login
//!   would fix (and which scopes it must ask for).
//! - Credentials belong to the issuer that issued them: the authorization response must name
//!   it where it says it will (`iss`, RFC 9207), and when a server moves to another
//!   authorization server the next 401 leads to a login there; nothing the old one issued is
//!   presented to the new one.
//! - Nothing is sent in the clear: every endpoint a flow reaches (the resource's
//!   `authorization_servers`, the authorization server's `issuer`, `token_endpoint`,
//!   `registration_endpoint` and `authorization_endpoint`, a configured metadata URL) must be
//!   `https:`, or `http:` on loopback ([`ENDPOINT_RULE`]), before the first request to it;
//!   otherwise the flow fails with [`AuthFailure::InsecureEndpoint`] naming the field.
//! - Where the authorization server offers it, tokens are DPoP-bound (RFC 9449) to a key of
//!   the login's own, and every request carries a proof.
//! - Without a person: client credentials (in the config), enterprise-managed authorization
//!   ([`enterprise_access_token`]) and workload identity federation
//!   ([`workload_access_token`], the JWT-bearer grant).
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_runtime::auth::AuthFailure> {
//! use std::sync::Arc;
//! use mcp_runtime::auth::{AuthContext, CredentialStore, LoopbackBrowser, login};
//! use mcp_runtime::config::server_from_json;
//!
//! let config = server_from_json("linear", &serde_json::json!({"url": "https://mcp.linear.app/mcp"})).unwrap();
//! let store = CredentialStore::user_default().expect("a home directory");
//! let context = AuthContext::interactive(store, Arc::new(LoopbackBrowser::default()));
//! let outcome = login("linear", &config, &context, &[]).await?;
//! println!("logged in, token expires at {:?}", outcome.expires_at);
//! # Ok(()) }
//! ```

mod authorizer;
pub(crate) mod credential;
mod dpop;
mod endpoint;
mod enterprise;
mod flow;
mod store;
mod workload;

use std::sync::Arc;
use std::time::SystemTime;

use rmcp::transport::auth::AuthError;

pub use authorizer::{
    AuthorizeError, Authorizer, BoxFuture, CALLBACK_PATH, Headless, LOGIN_TIMEOUT, LoopbackBrowser,
    Redirect, WEB_PAGE_RULE, web_page,
};
pub use endpoint::ENDPOINT_RULE;
pub use enterprise::{EnterpriseLogin, enterprise_access_token};
pub use store::{CREDENTIALS_FILE, CredentialStore, StoreError};
pub use workload::{JWT_BEARER_GRANT, WorkloadLogin, workload_access_token};

use crate::config::{HttpConfig, OAuthGrant, ServerConfig, Transport};

/// How connections authorize themselves: where credentials are, and whether a person (or a
/// stand-in) can log in when the server asks.
#[derive(Clone)]
pub struct AuthContext {
    /// The credential store.
    pub store: CredentialStore,
    /// `Some`: a 401 without a usable credential starts a login. `None`: it is an error.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Who registers with authorization servers (the OAuth `client_name`) and introduces
    /// itself when probing a server.
    pub identity: crate::ClientIdentity,
}

impl std::fmt::Debug for AuthContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthContext")
            .field("store", &self.store)
            .field("interactive", &self.authorizer.is_some())
            .finish()
    }
}

impl AuthContext {
    /// Use stored credentials, never start a login.
    pub fn non_interactive(store: CredentialStore) -> Self {
        AuthContext {
            store,
            authorizer: None,
            identity: crate::ClientIdentity::default(),
        }
    }

    /// Use stored credentials and log in with `authorizer` when the server asks.
    pub fn interactive(store: CredentialStore, authorizer: Arc<dyn Authorizer>) -> Self {
        AuthContext {
            store,
            authorizer: Some(authorizer),
            identity: crate::ClientIdentity::default(),
        }
    }

    /// The per-user store, non-interactive (the default of every connection).
    pub fn user_default() -> Option<Self> {
        CredentialStore::user_default().map(Self::non_interactive)
    }

    /// The per-user store of `identity` (under its data directory), non-interactive, with
    /// `identity` as the OAuth client name.
    pub fn user_for(identity: &crate::ClientIdentity) -> Option<Self> {
        CredentialStore::user_default_in(&identity.data_dir)
            .map(|store| Self::non_interactive(store).with_identity(identity.clone()))
    }

    /// Register and introduce ourselves as `identity`.
    pub fn with_identity(mut self, identity: crate::ClientIdentity) -> Self {
        self.identity = identity;
        self
    }
}

/// Why a server's authorization failed. Never contains a token or a secret.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFailure {
    /// The server needs a login and there is no credential.
    #[error("not logged in")]
    LoginRequired {
        /// Server name.
        server: String,
    },
    /// The server wants credentials and does not say it uses OAuth.
    #[error("authorization required; set an `Authorization` header or log in")]
    Unauthorized {
        /// Server name.
        server: String,
    },
    /// The stored credential expired and could not be refreshed.
    #[error("the login expired and could not be renewed")]
    Expired {
        /// Server name.
        server: String,
    },
    /// The server wants scopes the token does not have.
    #[error("the server requires more access (scope `{scope}`)")]
    InsufficientScope {
        /// Server name.
        server: String,
        /// The scopes it asked for.
        scope: String,
    },
    /// The interactive step failed (no redirect, refused, timeout).
    #[error("login to `{server}` failed: {message}")]
    Interactive {
        /// Server name.
        server: String,
        /// What happened.
        message: String,
    },
    /// Discovery, registration or a token request failed.
    #[error("OAuth with `{server}` failed: {message}")]
    Oauth {
        /// Server name.
        server: String,
        /// What happened.
        message: String,
    },
    /// An endpoint named by an authorization server's or a resource's metadata, or by the
    /// config, is not one OAuth requests may go to ([`ENDPOINT_RULE`]). Nothing was sent to it.
    #[error("OAuth with `{server}` refused: {field} {url}: {ENDPOINT_RULE}")]
    InsecureEndpoint {
        /// Server name.
        server: String,
        /// Which endpoint: the metadata field (`token_endpoint`, `issuer`, ...) or config key.
        field: String,
        /// The URL, without query or user info.
        url: String,
    },
    /// The credential store failed.
    #[error("{0}")]
    Store(String),
    /// The server is not a remote server.
    #[error("`{0}` is a stdio server; only http and sse servers use OAuth")]
    NotRemote(String),
}

impl AuthFailure {
    fn from_rmcp(server: &str, error: AuthError) -> Self {
        AuthFailure::Oauth {
            server: server.to_owned(),
            // rmcp's messages quote what the authorization server answered.
            message: printable(&error.to_string()),
        }
    }

    /// Whether a person can fix this by logging in again (with [`needed_scope`] on top, when
    /// set).
    ///
    /// [`needed_scope`]: AuthFailure::needed_scope
    pub fn needs_login(&self) -> bool {
        matches!(
            self,
            AuthFailure::LoginRequired { .. }
                | AuthFailure::Unauthorized { .. }
                | AuthFailure::Expired { .. }
                | AuthFailure::InsufficientScope { .. }
        )
    }

    /// The scopes a new login must ask for, when the server asked for more access.
    pub fn needed_scope(&self) -> Option<&str> {
        match self {
            AuthFailure::InsufficientScope { scope, .. } => Some(scope),
            _ => None,
        }
    }

    /// The server concerned, when the failure names one.
    pub fn server(&self) -> Option<&str> {
        match self {
            AuthFailure::LoginRequired { server }
            | AuthFailure::Unauthorized { server }
            | AuthFailure::Expired { server }
            | AuthFailure::InsufficientScope { server, .. }
            | AuthFailure::Interactive { server, .. }
            | AuthFailure::Oauth { server, .. }
            | AuthFailure::InsecureEndpoint { server, .. } => Some(server),
            AuthFailure::NotRemote(server) => Some(server),
            AuthFailure::Store(_) => None,
        }
    }
}

/// What a login produced (no secret).
#[derive(Debug, Clone)]
pub struct LoginOutcome {
    /// When the access token expires, if the server said.
    pub expires_at: Option<SystemTime>,
    /// Scopes granted.
    pub scopes: Vec<String>,
    /// Whether the token can be refreshed without a person.
    pub refreshable: bool,
}

/// A server's login state, as `mcpr servers` / `mcpr status` show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AuthStatus {
    /// No stored credential.
    NotLoggedIn,
    /// A stored credential.
    LoggedIn {
        /// When the access token expires (Unix seconds), if known.
        expires_at: Option<u64>,
        /// Whether it renews by itself.
        refreshable: bool,
    },
}

impl AuthStatus {
    /// When the access token expires, if known.
    pub fn expires_at(&self) -> Option<SystemTime> {
        match self {
            AuthStatus::LoggedIn {
                expires_at: Some(secs),
                ..
            } => unix_time(*secs),
            _ => None,
        }
    }
}

/// Text from an authorization server, fit for a terminal: control characters, which could
/// make up escape sequences that rewrite the screen or the window title, are dropped.
pub(crate) fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// Unix seconds as a time; `None` past what the clock can represent.
fn unix_time(secs: u64) -> Option<SystemTime> {
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs))
}

fn remote(server: &str, config: &ServerConfig) -> Result<HttpConfig, AuthFailure> {
    match &config.transport {
        Transport::Http(http) => Ok(http.clone()),
        Transport::Stdio(_) => Err(AuthFailure::NotRemote(server.to_owned())),
    }
}

/// Log in to `server` (an expanded config): ask it how it is protected (an unauthenticated
/// request yields its `WWW-Authenticate` challenge), then run the configured grant — the
/// authorization-code flow through `context`'s authorizer, or client credentials — and store
/// the result. `extra_scopes` are asked for on top of the selected ones.
pub async fn login(
    server: &str,
    config: &ServerConfig,
    context: &AuthContext,
    extra_scopes: &[String],
) -> Result<LoginOutcome, AuthFailure> {
    let http = remote(server, config)?;
    let oauth = http.oauth.clone().unwrap_or_default();
    let target = flow::Target {
        server,
        url: &http.url,
        oauth: &oauth,
        store: &context.store,
        client_name: &context.identity.name,
    };
    // Nothing a login gets could be kept: say so before sending anyone to a browser. A
    // row that does not decode is fine, the login replaces it.
    match context.store.get(&store::key_of(&http.url)) {
        Ok(_) | Err(StoreError::Corrupt { .. }) => {}
        Err(e) => return Err(AuthFailure::Store(e.to_string())),
    }
    let probed = probe(&http, &context.identity).await;
    let challenge = match &probed {
        Probe::Challenge(challenge) => challenge.clone(),
        Probe::Open | Probe::Unknown => None,
    };
    let result = if oauth.grant == OAuthGrant::ClientCredentials {
        flow::client_credentials(&target, challenge.as_deref()).await
    } else {
        let Some(authorizer) = &context.authorizer else {
            return Err(AuthFailure::LoginRequired {
                server: server.to_owned(),
            });
        };
        let request = flow::LoginRequest {
            challenge: challenge.as_deref(),
            extra_scopes: extra_scopes.to_vec(),
        };
        flow::login(&target, authorizer, request).await
    };
    let record = match (result, probed) {
        (Ok(record), _) => record,
        // Some servers protect only some requests; one that answered `initialize` without
        // credentials and publishes no OAuth setup most likely needs no login at all.
        (Err(AuthFailure::Oauth { message, .. }), Probe::Open) => {
            return Err(AuthFailure::Oauth {
                server: server.to_owned(),
                message: format!(
                    "the server answered without credentials, so it may not need a login ({message})"
                ),
            });
        }
        (Err(e), _) => return Err(e),
    };
    Ok(LoginOutcome {
        expires_at: record.expires_at().and_then(unix_time),
        scopes: record.granted_scopes.clone(),
        refreshable: record.has_refresh_token(),
    })
}

/// Forget the stored credential of `server`. Returns whether there was one.
pub fn logout(
    server: &str,
    config: &ServerConfig,
    store: &CredentialStore,
) -> Result<bool, AuthFailure> {
    let http = remote(server, config)?;
    store
        .remove(&http.url)
        .map_err(|e| AuthFailure::Store(e.to_string()))
}

/// The login state of `server` (stdio servers are never logged in).
pub fn status(config: &ServerConfig, store: &CredentialStore) -> AuthStatus {
    let Transport::Http(http) = &config.transport else {
        return AuthStatus::NotLoggedIn;
    };
    match store.get(&store::key_of(&http.url)) {
        Ok(Some(record)) => AuthStatus::LoggedIn {
            expires_at: record.expires_at(),
            refreshable: record.has_refresh_token(),
        },
        Ok(None) => AuthStatus::NotLoggedIn,
        Err(e) => {
            store.warn_once(&e);
            AuthStatus::NotLoggedIn
        }
    }
}

/// What an unauthenticated `initialize` tells about a server's protection.
enum Probe {
    /// 401, with the `WWW-Authenticate` challenge if any (some servers name their resource
    /// metadata only there).
    Challenge(Option<String>),
    /// A success: the server does not require credentials.
    Open,
    /// Anything else (unreachable, another status): discovery will tell.
    Unknown,
}

async fn probe(http: &HttpConfig, identity: &crate::ClientIdentity) -> Probe {
    let Ok(client) = crate::net::shared_client() else {
        return Probe::Unknown;
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": identity.name, "version": identity.version}
        }
    });
    let mut request = client
        .post(&http.url)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .json(&body);
    for (name, value) in &http.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response =
        match tokio::time::timeout(std::time::Duration::from_secs(10), request.send()).await {
            Ok(Ok(response)) => response,
            _ => return Probe::Unknown,
        };
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        return Probe::Challenge(
            response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        );
    }
    if status.is_success() {
        // A session may have been opened for this probe: end it.
        if let Some(session) = response.headers().get("mcp-session-id").cloned() {
            let _ = client
                .delete(&http.url)
                .header("mcp-session-id", session)
                .send()
                .await;
        }
        return Probe::Open;
    }
    Probe::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorization_servers_words_carry_no_escape_sequence() {
        let failure = AuthFailure::from_rmcp(
            "svc",
            AuthError::TokenExchangeFailed("invalid_grant\u{1b}]0;owned\u{7}\r\nok".into()),
        );
        let shown = failure.to_string();
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(shown.contains("invalid_grant]0;ownedok"), "{shown:?}");
    }

    #[test]
    fn an_expiry_past_the_clock_is_unknown() {
        let far = AuthStatus::LoggedIn {
            expires_at: Some(u64::MAX),
            refreshable: false,
        };
        assert_eq!(far.expires_at(), None);
        let near = AuthStatus::LoggedIn {
            expires_at: Some(60),
            refreshable: false,
        };
        assert_eq!(
            near.expires_at(),
            Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(60))
        );
    }
}
