//! [`AuthContext`] (where a connection's credentials are, and whether it may log in) and what
//! `mcpr login`, `mcpr logout` and `mcpr status` do with it: [`login`], [`logout`], [`status`].

use std::sync::Arc;

use super::{
    AuthFailure, AuthStatus, Authorizer, CredentialStore, LoginOutcome, StoreError, flow, store,
    unix_time,
};
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
