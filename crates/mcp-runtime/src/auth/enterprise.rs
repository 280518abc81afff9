//! Enterprise-managed authorization (SEP-990, "cross-app access"): the enterprise identity
//! provider's ID token is exchanged for an identity assertion grant (ID-JAG), which the MCP
//! server's authorization server exchanges for an access token. No person and no browser.
//!
//! rmcp's `enterprise` module does both exchanges; this finds the MCP server's authorization
//! server first (the same discovery as a login).

use oauth2::ClientSecret;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{AuthorizationManager, default_oauth_http_client};

use super::{AuthFailure, endpoint};

/// The identity side of an enterprise-managed login.
#[derive(Clone)]
pub struct EnterpriseLogin {
    /// The identity provider's issuer.
    pub idp_issuer: String,
    /// Its token endpoint.
    pub idp_token_endpoint: String,
    /// This client's id at the identity provider.
    pub idp_client_id: String,
    /// The user's ID token from the identity provider (a secret).
    pub id_token: String,
    /// This client's id at the MCP server's authorization server.
    pub client_id: String,
    /// Its secret there (`client_secret_basic`), if it is a confidential client.
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for EnterpriseLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseLogin")
            .field("idp_issuer", &self.idp_issuer)
            .field("idp_client_id", &self.idp_client_id)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Exchange `login`'s ID token for an access token to the MCP server at `url`. The token is
/// returned, not stored: its lifetime is the ID token's.
pub async fn enterprise_access_token(
    server: &str,
    url: &str,
    login: &EnterpriseLogin,
) -> Result<String, AuthFailure> {
    let failed = |message: String| AuthFailure::Oauth {
        server: server.to_owned(),
        message,
    };
    crate::net::install_tls_provider();
    // The ID token goes to the identity provider, the grant to the authorization server:
    // neither in the clear.
    endpoint::check(server, "idp_token_endpoint", &login.idp_token_endpoint)?;
    endpoint::check_resource_metadata(server, url, None).await?;
    let manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let metadata = manager
        .resolve_metadata()
        .await
        .map_err(|e| failed(e.to_string()))?
        .metadata;
    endpoint::check_metadata(server, &metadata)?;
    let issuer = metadata
        .issuer
        .clone()
        .ok_or_else(|| failed("the authorization server metadata names no issuer".into()))?;
    let idp = EmaAuthorizationServer::new(
        login.idp_issuer.clone(),
        login.idp_token_endpoint.clone(),
        login.idp_client_id.clone(),
    );
    let mut resource_as = EmaAuthorizationServer::new(
        issuer,
        metadata.token_endpoint.clone(),
        login.client_id.clone(),
    );
    if let Some(secret) = &login.client_secret {
        resource_as = resource_as.with_client_authentication(
            EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.clone())),
        );
    }
    let http = default_oauth_http_client().map_err(|e| failed(e.to_string()))?;
    let token = EmaExchangeRequest::new_with_id_token(idp, resource_as, url, &login.id_token)
        .exchange(&http, &http)
        .await
        .map_err(|e| failed(e.to_string()))?;
    Ok(token.access_token.secret().clone())
}
