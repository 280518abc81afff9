//! The OAuth exchanges themselves, on rmcp's `AuthorizationManager`: discovery (RFC 9728 →
//! RFC 8414 / OpenID, with the 2025-03-26 fallbacks), client identity (pre-registered, client
//! ID metadata document, or dynamic registration), the authorization-code flow with PKCE and
//! the `resource` indicator, refresh, and the client-credentials grant.
//!
//! rmcp implements the protocol; this module decides which parts to use for a server's config
//! and keeps what a later refresh needs in our [`Record`].

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, JwtSigningAlgorithm, OAuthClientConfig,
};

use super::AuthFailure;
use super::authorizer::{Authorizer, WEB_PAGE_RULE, web_page};
use super::dpop::{self, DpopHttpClient, DpopKey};
use super::endpoint;
use super::store::{CredentialStore, Record, ServerCredentials, key_of};
use crate::config::{OAuthConfig, PrivateKey};

/// The server being authorized to.
pub(crate) struct Target<'a> {
    pub server: &'a str,
    pub url: &'a str,
    pub oauth: &'a OAuthConfig,
    pub store: &'a CredentialStore,
    /// Registered as the OAuth `client_name` (RFC 7591).
    pub client_name: &'a str,
}

impl Target<'_> {
    fn key(&self) -> String {
        key_of(self.url)
    }

    fn failure(&self, error: AuthError) -> AuthFailure {
        AuthFailure::from_rmcp(self.server, error)
    }

    /// A manager for this server with its metadata resolved (from the challenge of a 401 or
    /// 403 when there was one), and that metadata. Every URL on the way is checked before it
    /// is sent a request, and the metadata's issuer and token endpoint before it is returned.
    async fn manager(
        &self,
        challenge: Option<&str>,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthFailure> {
        // rmcp's HTTP clients need the TLS provider our shared client installs.
        crate::net::install_tls_provider();
        let manager = AuthorizationManager::new(self.url)
            .await
            .map_err(|e| self.failure(e))?;
        let metadata = match &self.oauth.auth_server_metadata_url {
            Some(url) => {
                endpoint::check(self.server, "oauth.authServerMetadataUrl", url)?;
                fetch_metadata(self.server, "`oauth.authServerMetadataUrl`", url).await?
            }
            None => {
                endpoint::check_resource_metadata(self.server, self.url, challenge).await?;
                self.discover(&manager, challenge).await?
            }
        };
        endpoint::check_metadata(self.server, &metadata)?;
        let mut manager = manager;
        manager.set_metadata(metadata.clone());
        Ok((manager, metadata))
    }

    /// rmcp's discovery, with the 2025-03-26 fallback.
    async fn discover(
        &self,
        manager: &AuthorizationManager,
        challenge: Option<&str>,
    ) -> Result<AuthorizationMetadata, AuthFailure> {
        match manager.resolve_metadata_from_challenge(challenge).await {
            Ok(resolution) => Ok(resolution.metadata),
            // A 2025-03-26 server (no resource metadata) publishes its authorization server's
            // metadata at its own origin, where the issuer need not be the origin: that
            // revision predates the issuer binding, so take the document as it is.
            Err(AuthError::AuthorizationServerMismatch { .. }) => {
                let mut root = reqwest::Url::parse(self.url)
                    .map_err(|e| self.failure(AuthError::UrlError(e)))?;
                root.set_path("/.well-known/oauth-authorization-server");
                root.set_query(None);
                fetch_metadata(
                    self.server,
                    "the server's authorization metadata",
                    root.as_str(),
                )
                .await
            }
            Err(e) => Err(self.failure(e)),
        }
    }

    /// A manager whose token requests carry DPoP proofs signed with `key`, for the
    /// authorization server of `metadata`.
    async fn dpop_manager(
        &self,
        metadata: &AuthorizationMetadata,
        key: Arc<DpopKey>,
    ) -> Result<AuthorizationManager, AuthFailure> {
        let client = DpopHttpClient::new(key, &metadata.token_endpoint).map_err(|message| {
            AuthFailure::Oauth {
                server: self.server.to_owned(),
                message,
            }
        })?;
        let mut manager =
            AuthorizationManager::new_with_oauth_http_client(self.url, Arc::new(client))
                .await
                .map_err(|e| self.failure(e))?;
        manager.set_metadata(metadata.clone());
        Ok(manager)
    }

    fn template(
        &self,
        client_id: &str,
        secret: Option<String>,
        redirect: &str,
        metadata: AuthorizationMetadata,
    ) -> Record {
        Record {
            server: self.server.to_owned(),
            client_id: client_id.to_owned(),
            client_secret: secret,
            redirect_uri: redirect.to_owned(),
            metadata,
            token: None,
            granted_scopes: Vec::new(),
            received_at: None,
            issuer: None,
            dpop_key: None,
        }
    }

    fn stored(&self) -> Result<Record, AuthFailure> {
        self.store
            .get(&self.key())
            .map_err(|e| AuthFailure::Store(e.to_string()))?
            .ok_or_else(|| AuthFailure::Oauth {
                server: self.server.to_owned(),
                message: "the authorization server issued no token".into(),
            })
    }
}

/// What a login asks for beyond the config.
pub(crate) struct LoginRequest<'a> {
    /// `WWW-Authenticate` of the 401/403 that started it.
    pub challenge: Option<&'a str>,
    /// Scopes to ask for on top of the selected ones (step-up, `mcpr login --scope`).
    pub extra_scopes: Vec<String>,
}

/// The authorization-code flow: discover, identify the client, send the person (or the
/// headless stand-in) to the authorization URL, exchange the code. Stores and returns the
/// credential.
pub(crate) async fn login(
    target: &Target<'_>,
    authorizer: &Arc<dyn Authorizer>,
    request: LoginRequest<'_>,
) -> Result<Record, AuthFailure> {
    let (mut manager, metadata) = target.manager(request.challenge).await?;
    // The person is sent to this endpoint: refuse anything but a web page before registering
    // or opening anything. The URL is not repeated: it is the hostile server's text.
    if web_page(&metadata.authorization_endpoint).is_none() {
        return Err(AuthFailure::Interactive {
            server: target.server.to_owned(),
            message: format!(
                "the authorization server's `authorization_endpoint` is not a web page: \
                 {WEB_PAGE_RULE}"
            ),
        });
    }

    // Scopes: the config's; else the challenge's, else the resource metadata's (rmcp's
    // initial selection, which adds offline_access when the server offers it); plus any
    // step-up scopes.
    let mut scopes = if target.oauth.scopes.is_empty() {
        manager.select_initial_scopes(&[]).await
    } else {
        target.oauth.scopes.clone()
    };
    for scope in request.extra_scopes {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }

    // DPoP-bound tokens where the authorization server issues them: from here on, token
    // requests go through a client that signs each with this login's own key.
    let dpop_key = if dpop::supported(&metadata) {
        let key = Arc::new(DpopKey::generate().map_err(|message| AuthFailure::Oauth {
            server: target.server.to_owned(),
            message,
        })?);
        manager = target.dpop_manager(&metadata, key.clone()).await?;
        Some(key.stored())
    } else {
        None
    };

    let redirect = authorizer
        .redirect(target.oauth.callback_port)
        .await
        .map_err(|e| AuthFailure::Interactive {
            server: target.server.to_owned(),
            message: e.to_string(),
        })?;

    let supports_cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let (client_id, client_secret) =
        match (&target.oauth.client_id, &target.oauth.client_metadata_url) {
            (Some(id), _) => (id.clone(), target.oauth.client_secret.clone()),
            (None, Some(url)) if supports_cimd => (url.clone(), None),
            (None, _) if let Some(registration) = &metadata.registration_endpoint => {
                endpoint::check(target.server, "registration_endpoint", registration)?;
                let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
                let registered = manager
                    .register_client(target.client_name, &redirect.uri, &scope_refs)
                    .await
                    .map_err(|e| target.failure(e))?;
                (
                    registered.client_id.clone(),
                    registered.client_secret.clone(),
                )
            }
            (None, _) => {
                return Err(AuthFailure::Oauth {
                    server: target.server.to_owned(),
                    message:
                        "the authorization server does not offer dynamic client registration; \
                          set `oauth.clientId` (and `oauth.clientSecret`) for this server"
                            .into(),
                });
            }
        };

    let mut template = target.template(&client_id, client_secret.clone(), &redirect.uri, metadata);
    template.dpop_key = dpop_key;
    manager.set_credential_store(ServerCredentials::new(
        target.store.clone(),
        target.key(),
        template,
    ));
    // The client is always known by now (registered above if need be). Initial scope
    // selection keeps an empty selection empty: rmcp's default would fall back to the
    // authorization server's `scopes_supported`, which the MCP scope rules do not ask for.
    let mut auth_request = AuthorizationRequest::new(redirect.uri.clone())
        .with_initial_scope_selection()
        .with_preregistered_client(client_id);
    if let Some(secret) = client_secret {
        auth_request = auth_request.with_client_secret(secret);
    }
    if !scopes.is_empty() {
        auth_request = auth_request.with_scopes(scopes);
    }
    let session = AuthorizationSession::new(manager, auth_request)
        .await
        .map_err(|(_, e)| target.failure(e))?;
    let callback = authorizer
        .authorize(target.server, session.get_authorization_url(), redirect)
        .await
        .map_err(|e| AuthFailure::Interactive {
            server: target.server.to_owned(),
            message: e.to_string(),
        })?;
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|e| target.failure(e))?;
    target.stored()
}

/// Refresh the stored token. `Ok(None)` when the refresh token was definitively rejected
/// (`invalid_grant`): the credential has been removed and a login is needed.
pub(crate) async fn refresh(
    target: &Target<'_>,
    record: &Record,
) -> Result<Option<Record>, AuthFailure> {
    crate::net::install_tls_provider();
    // The record may predate the endpoint rule: the refresh token goes nowhere it forbids.
    endpoint::check(
        target.server,
        "token_endpoint",
        &record.metadata.token_endpoint,
    )?;
    // A DPoP-bound token is refreshed with a proof of the same key.
    let mut manager = match record.dpop_key.as_deref().and_then(DpopKey::from_stored) {
        Some(key) => target.dpop_manager(&record.metadata, Arc::new(key)).await?,
        None => {
            let mut manager = AuthorizationManager::new(target.url)
                .await
                .map_err(|e| target.failure(e))?;
            manager.set_metadata(record.metadata.clone());
            manager
        }
    };
    let mut client = OAuthClientConfig::new(record.client_id.clone(), record.redirect_uri.clone());
    if let Some(secret) = &record.client_secret {
        client = client.with_client_secret(secret.clone());
    }
    manager
        .configure_client(client)
        .map_err(|e| target.failure(e))?;
    manager.set_credential_store(ServerCredentials::new(
        target.store.clone(),
        target.key(),
        record.clone(),
    ));
    match manager.refresh_token().await {
        Ok(_) => target.stored().map(Some),
        Err(AuthError::TokenRefreshRejected(reason)) => {
            // Another process sharing the store may have refreshed first (rotating the
            // refresh token we used): its result is as good as ours.
            let current = target
                .store
                .get(&target.key())
                .map_err(|e| AuthFailure::Store(e.to_string()))?;
            if let Some(row) = current
                && row.access_token().is_some()
                && row.access_token() != record.access_token()
            {
                return Ok(Some(row));
            }
            tracing::info!(server = target.server, "refresh token rejected: {reason}");
            Ok(None)
        }
        Err(AuthError::AuthorizationRequired) => Ok(None),
        Err(e) => Err(target.failure(e)),
    }
}

/// Whether the server now names another authorization server than the one that issued
/// `record`: the challenge of its 401 points at resource metadata whose authorization server
/// has a different issuer. A refresh token and a client registration are only good at the
/// issuer that made them, so the caller logs in afresh instead of presenting them anywhere.
/// Discovery failures count as no change: the refresh then fails or succeeds on its own.
pub(crate) async fn issuer_changed(
    target: &Target<'_>,
    record: &Record,
    challenge: Option<&str>,
) -> bool {
    // A configured metadata URL pins the authorization server; only a challenge that names
    // resource metadata can announce a move.
    if target.oauth.auth_server_metadata_url.is_some()
        || !challenge.is_some_and(|c| c.contains("resource_metadata"))
    {
        return false;
    }
    let Ok((_, metadata)) = target.manager(challenge).await else {
        return false;
    };
    let now = metadata.issuer.as_deref().map(same_issuer);
    let then = record.metadata.issuer.as_deref().map(same_issuer);
    match (now, then) {
        (Some(now), Some(then)) => now != then,
        // Without issuers, the token endpoint identifies the authorization server.
        _ => metadata.token_endpoint != record.metadata.token_endpoint,
    }
}

/// An issuer identifier as compared: a trailing slash is not a different issuer.
fn same_issuer(issuer: &str) -> &str {
    issuer.strip_suffix('/').unwrap_or(issuer)
}

/// The client-credentials grant (machine to machine): `client_secret_basic`/`_post` with the
/// configured secret, or `private_key_jwt` with the configured key.
pub(crate) async fn client_credentials(
    target: &Target<'_>,
    challenge: Option<&str>,
) -> Result<Record, AuthFailure> {
    // rmcp's private_key_jwt exchange holds a non-`Send` value across an await, so it cannot
    // run inside a connection's (`Send`) future: run it to completion on a blocking thread.
    let server = target.server.to_owned();
    let url = target.url.to_owned();
    let oauth = target.oauth.clone();
    let store = target.store.clone();
    let client_name = target.client_name.to_owned();
    let challenge = challenge.map(str::to_owned);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let target = Target {
            server: &server,
            url: &url,
            oauth: &oauth,
            store: &store,
            client_name: &client_name,
        };
        runtime.block_on(client_credentials_here(&target, challenge.as_deref()))
    })
    .await
    .map_err(|e| AuthFailure::Oauth {
        server: target.server.to_owned(),
        message: format!("the token request did not finish: {e}"),
    })?
}

async fn client_credentials_here(
    target: &Target<'_>,
    challenge: Option<&str>,
) -> Result<Record, AuthFailure> {
    let oauth = target.oauth;
    let Some(client_id) = oauth.client_id.clone() else {
        return Err(AuthFailure::Oauth {
            server: target.server.to_owned(),
            message: "`oauth.clientId` is required for the client_credentials grant".into(),
        });
    };
    let (mut manager, metadata) = target.manager(challenge).await?;
    let resource = Some(target.url.to_owned());
    let config = match (&oauth.private_key, &oauth.client_secret) {
        (Some(key), _) => ClientCredentialsConfig::PrivateKeyJwt {
            client_id: client_id.clone(),
            signing_key: read_key(target.server, key)?,
            signing_algorithm: signing_algorithm(
                target.server,
                oauth.signing_algorithm.as_deref(),
            )?,
            token_endpoint_audience: None,
            scopes: oauth.scopes.clone(),
            resource,
        },
        (None, Some(secret)) => ClientCredentialsConfig::ClientSecret {
            client_id: client_id.clone(),
            client_secret: secret.clone(),
            scopes: oauth.scopes.clone(),
            resource,
        },
        (None, None) => {
            return Err(AuthFailure::Oauth {
                server: target.server.to_owned(),
                message: "the client_credentials grant needs `oauth.clientSecret` or \
                          `oauth.privateKeyFile`"
                    .into(),
            });
        }
    };
    manager
        .validate_client_credentials_metadata(&config)
        .map_err(|e| target.failure(e))?;
    manager
        .configure_client_credentials(&config)
        .map_err(|e| target.failure(e))?;
    let template = target.template(&client_id, None, "", metadata);
    manager.set_credential_store(ServerCredentials::new(
        target.store.clone(),
        target.key(),
        template,
    ));
    manager
        .exchange_client_credentials(&config)
        .await
        .map_err(|e| target.failure(e))?;
    target.stored()
}

fn read_key(server: &str, key: &PrivateKey) -> Result<Vec<u8>, AuthFailure> {
    match key {
        PrivateKey::Pem(pem) => Ok(pem.clone().into_bytes()),
        PrivateKey::File(path) => std::fs::read(path).map_err(|e| AuthFailure::Oauth {
            server: server.to_owned(),
            message: format!(
                "cannot read `oauth.privateKeyFile` {}: {e}",
                crate::fsutil::display_path(path)
            ),
        }),
    }
}

fn signing_algorithm(server: &str, name: Option<&str>) -> Result<JwtSigningAlgorithm, AuthFailure> {
    Ok(match name.unwrap_or("ES256") {
        "ES256" => JwtSigningAlgorithm::ES256,
        "ES384" => JwtSigningAlgorithm::ES384,
        "RS256" => JwtSigningAlgorithm::RS256,
        "RS384" => JwtSigningAlgorithm::RS384,
        "RS512" => JwtSigningAlgorithm::RS512,
        other => {
            return Err(AuthFailure::Oauth {
                server: server.to_owned(),
                message: format!(
                    "`oauth.signingAlgorithm` `{other}` is not supported (ES256, ES384, RS256, RS384, RS512)"
                ),
            });
        }
    })
}

/// Authorization server metadata from a known URL; `what` names it in errors.
async fn fetch_metadata(
    server: &str,
    what: &str,
    url: &str,
) -> Result<AuthorizationMetadata, AuthFailure> {
    let failed = |message: String| AuthFailure::Oauth {
        server: server.to_owned(),
        message: format!("{what} {url}: {message}"),
    };
    let client = crate::net::shared_client().map_err(failed)?;
    let response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| failed(crate::net::root_cause(&e)))?;
    if !response.status().is_success() {
        return Err(failed(format!("HTTP {}", response.status())));
    }
    response
        .json()
        .await
        .map_err(|e| failed(format!("not authorization server metadata: {e}")))
}
