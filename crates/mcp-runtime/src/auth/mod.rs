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

#[cfg(feature = "oauth")]
mod authorizer;
mod challenge;
#[cfg(feature = "oauth")]
mod context;
#[cfg(feature = "oauth")]
pub(crate) mod credential;
/// Without the `oauth` feature a connection has no credentials; this stands in for them.
#[cfg(not(feature = "oauth"))]
#[path = "credential_off.rs"]
pub(crate) mod credential;
#[cfg(feature = "oauth")]
mod dpop;
#[cfg(feature = "oauth")]
mod endpoint;
#[cfg(feature = "oauth")]
mod enterprise;
#[cfg(feature = "oauth")]
mod flow;
#[cfg(feature = "oauth")]
mod store;
#[cfg(feature = "oauth")]
mod workload;

use std::time::SystemTime;

#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use authorizer::{
    AuthorizeError, Authorizer, BoxFuture, CALLBACK_PATH, Headless, LOGIN_TIMEOUT, LoopbackBrowser,
    Redirect, WEB_PAGE_RULE, web_page,
};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use context::{AuthContext, login, logout, status};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use enterprise::{EnterpriseLogin, enterprise_access_token};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use store::{CREDENTIALS_FILE, CredentialStore, StoreError};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use workload::{JWT_BEARER_GRANT, WorkloadLogin, workload_access_token};

/// The rule every OAuth endpoint must meet, as error messages state it.
pub const ENDPOINT_RULE: &str = "an OAuth endpoint must be https, or http on loopback";

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
    #[cfg(feature = "oauth")]
    fn from_rmcp(server: &str, error: rmcp::transport::auth::AuthError) -> Self {
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
#[cfg(feature = "oauth")]
pub(crate) fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// Unix seconds as a time; `None` past what the clock can represent.
fn unix_time(secs: u64) -> Option<SystemTime> {
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "oauth")]
    fn the_authorization_servers_words_carry_no_escape_sequence() {
        let failure = AuthFailure::from_rmcp(
            "svc",
            rmcp::transport::auth::AuthError::TokenExchangeFailed(
                "invalid_grant\u{1b}]0;owned\u{7}\r\nok".into(),
            ),
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
