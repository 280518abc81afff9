//! One connection's view of its server's credential: the bearer token to send, refreshed ahead
//! of expiry, and what to do when the server answers 401 or 403.
//!
//! Refreshes and logins run one at a time per connection (`flight`), and a task that waited
//! for one first checks whether the token it sent has been replaced meanwhile: when twenty
//! calls race into a 401, the server sees one refresh, not twenty.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::authorizer::Authorizer;
pub(crate) use super::challenge::{challenge_param, challenge_scope, is_insufficient_scope};
use super::dpop::{self, DpopKey};
use super::flow::{self, LoginRequest, Target};
use super::store::{CredentialStore, Record, key_of, now_secs};
use super::{AuthContext, AuthFailure};
use crate::config::{OAuthConfig, OAuthGrant};

/// Refresh this long before expiry (or at half the token's lifetime, if that is shorter).
const REFRESH_MARGIN_SECS: u64 = 60;

/// The token this connection sends.
#[derive(Clone)]
struct Current {
    access: String,
    expires_at: Option<u64>,
    received_at: Option<u64>,
    scopes: Vec<String>,
    /// The key the token is bound to (DPoP), if it is.
    dpop: Option<Arc<DpopKey>>,
}

impl Current {
    fn of(record: &Record) -> Option<Current> {
        Some(Current {
            access: record.access_token()?.to_owned(),
            expires_at: record.expires_at(),
            received_at: record.received_at,
            scopes: record.granted_scopes.clone(),
            dpop: record
                .dpop_key
                .as_deref()
                .and_then(DpopKey::from_stored)
                .map(Arc::new),
        })
    }

    /// Due for a refresh: inside the margin before expiry.
    fn expiring(&self) -> bool {
        let Some(expires_at) = self.expires_at else {
            return false;
        };
        let lifetime = expires_at.saturating_sub(self.received_at.unwrap_or(expires_at));
        let margin = REFRESH_MARGIN_SECS.min(lifetime / 2);
        now_secs().saturating_add(margin) >= expires_at
    }
}

/// The credential of one server for one connection.
pub(crate) struct ServerAuth {
    server: String,
    url: String,
    oauth: OAuthConfig,
    store: CredentialStore,
    authorizer: Option<Arc<dyn Authorizer>>,
    /// Registered as the OAuth `client_name`.
    client_name: String,
    current: Mutex<Option<Current>>,
    /// Held while refreshing or logging in.
    flight: tokio::sync::Mutex<()>,
    /// A refresh ahead of expiry was refused for good: the 401 that follows is an expired
    /// login, not a missing one.
    refresh_rejected: AtomicBool,
    /// The store had no credential for this server: requests go out without one and without
    /// asking the store again (most HTTP servers use no OAuth), until a 401 says otherwise.
    absent: AtomicBool,
}

impl ServerAuth {
    pub(crate) fn new(
        server: &str,
        url: &str,
        oauth: Option<&OAuthConfig>,
        context: &AuthContext,
    ) -> Self {
        ServerAuth {
            server: server.to_owned(),
            url: url.to_owned(),
            oauth: oauth.cloned().unwrap_or_default(),
            store: context.store.clone(),
            authorizer: context.authorizer.clone(),
            client_name: context.identity.name.clone(),
            current: Mutex::new(None),
            flight: tokio::sync::Mutex::new(()),
            refresh_rejected: AtomicBool::new(false),
            absent: AtomicBool::new(false),
        }
    }

    fn target(&self) -> Target<'_> {
        Target {
            server: &self.server,
            url: &self.url,
            oauth: &self.oauth,
            store: &self.store,
            client_name: &self.client_name,
        }
    }

    /// The cached access token, unless it is due for a refresh. Every request asks this, so
    /// it copies the token only.
    fn unexpired(&self) -> Option<String> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        current
            .as_ref()
            .filter(|c| !c.expiring())
            .map(|c| c.access.clone())
    }

    fn cached(&self) -> Option<Current> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn remember(&self, record: &Record) -> Option<String> {
        let current = Current::of(record);
        let access = current.as_ref().map(|c| c.access.clone());
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = current;
        access
    }

    fn forget(&self) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn stored(&self) -> Result<Option<Record>, AuthFailure> {
        self.store
            .get(&key_of(&self.url))
            .map_err(|e| AuthFailure::Store(e.to_string()))
    }

    /// The key `token` is bound to, if it is this connection's DPoP-bound token.
    fn dpop_key(&self, token: &str) -> Option<Arc<DpopKey>> {
        self.cached()
            .filter(|c| c.access == token)
            .and_then(|c| c.dpop)
    }

    /// Put `token` on `request`, a `method` request to `url`: as a bearer token, or, when it
    /// is DPoP-bound, with the `DPoP` scheme and a fresh proof of its key.
    pub(crate) fn authorize_request(
        &self,
        request: reqwest::RequestBuilder,
        method: &str,
        url: &str,
        token: &str,
    ) -> reqwest::RequestBuilder {
        let Some(key) = self.dpop_key(token) else {
            return request.bearer_auth(token);
        };
        match key.proof(method, url, Some(token)) {
            Ok(proof) => request
                .header(reqwest::header::AUTHORIZATION, format!("DPoP {token}"))
                .header(dpop::DPOP_HEADER, proof),
            Err(e) => {
                // Cannot happen with a key that loaded; the server's 401 then says so.
                tracing::warn!(server = %self.server, "{e}");
                request.header(reqwest::header::AUTHORIZATION, format!("DPoP {token}"))
            }
        }
    }

    /// The server answered a request to `url` made with `sent` with a DPoP nonce challenge
    /// (`status`, `challenge`, `DPoP-Nonce`): whether to retry with the nonce, now
    /// remembered. Only a DPoP-bound token, and only a nonce not tried yet, is worth it.
    pub(crate) fn dpop_nonce_retry(
        &self,
        url: &str,
        sent: Option<&str>,
        status: u16,
        challenge: Option<&str>,
        nonce: Option<&[u8]>,
    ) -> bool {
        let Some(key) = sent.and_then(|token| self.dpop_key(token)) else {
            return false;
        };
        dpop::asks_for_nonce(status, challenge.map(str::as_bytes), b"")
            && key.learn_nonce(url, nonce)
    }

    /// The token to send now, refreshed first when it is about to expire; `None` when there
    /// is no credential (the request goes out without one, and a 401 tells what is needed).
    pub(crate) async fn bearer(&self) -> Result<Option<String>, AuthFailure> {
        if let Some(access) = self.unexpired() {
            return Ok(Some(access));
        }
        if self.absent.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let _flight = self.flight.lock().await;
        if let Some(access) = self.unexpired() {
            return Ok(Some(access));
        }
        // Another process may have logged in or refreshed: the store is the truth. A store
        // that cannot be read holds no usable credential either; most HTTP servers need none,
        // and one that does answers 401, whose handling reports the store's error.
        let record = match self.stored() {
            Ok(record) => record,
            Err(e) => {
                tracing::debug!(server = %self.server, "no stored credential: {e}");
                None
            }
        };
        let Some(record) = record else {
            self.forget();
            self.absent.store(true, Ordering::SeqCst);
            return Ok(None);
        };
        let fresh = Current::of(&record);
        match fresh {
            Some(current) if !current.expiring() => Ok(self.remember(&record)),
            Some(_) if record.has_refresh_token() => {
                match flow::refresh(&self.target(), &record).await {
                    Ok(Some(renewed)) => Ok(self.remember(&renewed)),
                    // Rejected: send nothing; the 401 that follows says to log in.
                    Ok(None) => {
                        self.forget();
                        self.refresh_rejected.store(true, Ordering::SeqCst);
                        Ok(None)
                    }
                    // A transient failure: try the old token; the server decides.
                    Err(e) => {
                        tracing::warn!(server = %self.server, "token refresh failed: {e}");
                        Ok(self.remember(&record))
                    }
                }
            }
            Some(_) if self.oauth.grant == OAuthGrant::ClientCredentials => {
                let renewed = flow::client_credentials(&self.target(), None).await?;
                Ok(self.remember(&renewed))
            }
            _ => Ok(self.remember(&record)),
        }
    }

    /// Whether requests go out with a credential: false once the store was found to hold
    /// none for this server (most HTTP servers use no OAuth), until a 401 says otherwise.
    pub(crate) fn in_use(&self) -> bool {
        !self.absent.load(Ordering::SeqCst)
    }

    /// The server refused `sent` with 401: refresh once (or renew client credentials, or log
    /// in when a person can), and return the token to retry with.
    pub(crate) async fn on_unauthorized(
        &self,
        sent: Option<&str>,
        challenge: Option<&str>,
    ) -> Result<String, AuthFailure> {
        let _flight = self.flight.lock().await;
        if let Some(current) = self.cached()
            && Some(current.access.as_str()) != sent
        {
            // Replaced while we waited.
            return Ok(current.access);
        }
        self.absent.store(false, Ordering::SeqCst);
        let record = self.stored()?;
        if let Some(record) = &record
            && let Some(access) = record.access_token()
            && Some(access) != sent
        {
            // Another process refreshed or logged in.
            return Ok(self.remember(record).unwrap_or_default());
        }
        if self.oauth.grant == OAuthGrant::ClientCredentials {
            let renewed = flow::client_credentials(&self.target(), challenge).await?;
            return self.token_of(&renewed);
        }
        let mut expired = self.refresh_rejected.swap(false, Ordering::SeqCst);
        if let Some(record) = &record
            && record.has_refresh_token()
        {
            // The server moved to another authorization server: the refresh token (and the
            // client it was issued to) is never presented to the new one; log in there afresh.
            if flow::issuer_changed(&self.target(), record, challenge).await {
                tracing::info!(server = %self.server, "the authorization server changed");
                expired = true;
            } else {
                match flow::refresh(&self.target(), record).await? {
                    Some(renewed) => return self.token_of(&renewed),
                    None => expired = true,
                }
            }
        }
        self.forget();
        match &self.authorizer {
            Some(authorizer) => {
                let request = LoginRequest {
                    challenge,
                    extra_scopes: Vec::new(),
                };
                let record = flow::login(&self.target(), authorizer, request).await?;
                self.token_of(&record)
            }
            None if expired || record.is_some() => Err(AuthFailure::Expired {
                server: self.server.clone(),
            }),
            // An OAuth server names its resource metadata (MCP 2025-06-18 and later); a
            // bare challenge may as well want a static token.
            None if challenge
                .is_some_and(|c| challenge_param(c, "resource_metadata").is_some()) =>
            {
                Err(AuthFailure::LoginRequired {
                    server: self.server.clone(),
                })
            }
            None => Err(AuthFailure::Unauthorized {
                server: self.server.clone(),
            }),
        }
    }

    /// The server refused `sent` with 403 `insufficient_scope`: log in again asking for the
    /// scopes already granted plus the challenged ones, when a person can.
    pub(crate) async fn on_insufficient_scope(
        &self,
        sent: Option<&str>,
        challenge: &str,
    ) -> Result<String, AuthFailure> {
        let _flight = self.flight.lock().await;
        let current = self.cached();
        if let Some(current) = &current
            && Some(current.access.as_str()) != sent
        {
            return Ok(current.access.clone());
        }
        let wanted = challenge_scope(challenge);
        let Some(authorizer) = &self.authorizer else {
            return Err(AuthFailure::InsufficientScope {
                server: self.server.clone(),
                scope: wanted.join(" "),
            });
        };
        let mut extra_scopes = current.map(|c| c.scopes).unwrap_or_default();
        for scope in wanted {
            if !extra_scopes.contains(&scope) {
                extra_scopes.push(scope);
            }
        }
        let request = LoginRequest {
            challenge: Some(challenge),
            extra_scopes,
        };
        let record = flow::login(&self.target(), authorizer, request).await?;
        self.token_of(&record)
    }

    fn token_of(&self, record: &Record) -> Result<String, AuthFailure> {
        self.remember(record).ok_or_else(|| AuthFailure::Oauth {
            server: self.server.clone(),
            message: "the authorization server issued no access token".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_margin_is_bounded_by_half_the_lifetime() {
        let now = now_secs();
        let long = Current {
            access: "a".into(),
            expires_at: Some(now + 3600),
            received_at: Some(now),
            scopes: Vec::new(),
            dpop: None,
        };
        assert!(!long.expiring());
        let short = Current {
            expires_at: Some(now + 2),
            received_at: Some(now.saturating_sub(2)),
            ..long.clone()
        };
        // Lifetime 4 s: the margin is 2 s, so it is due now.
        assert!(short.expiring());
        let unknown = Current {
            expires_at: None,
            ..long.clone()
        };
        assert!(!unknown.expiring());
        // The far end of the range: not due, and no overflow either way.
        let far = Current {
            expires_at: Some(u64::MAX),
            received_at: Some(u64::MAX),
            ..long.clone()
        };
        assert!(!far.expiring());
        let backwards = Current {
            expires_at: Some(u64::MAX),
            received_at: Some(0),
            ..long
        };
        assert!(!backwards.expiring());
    }
}
