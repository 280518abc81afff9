//! DPoP (RFC 9449): access tokens bound to a key the client holds, so that a stolen token is
//! useless without it. Used when the authorization server advertises ES256 in
//! `dpop_signing_alg_values_supported`.
//!
//! One P-256 key per login, generated here and kept (private, like the refresh token) in the
//! credential record: every token and refresh of that login is bound to it. Each HTTP request
//! to the token endpoint or to the MCP server carries a fresh proof (a JWT naming the method,
//! the URL and, for the server, the token's hash), with the latest nonce each server gave.
//!
//! A server that asks for a nonce (`use_dpop_nonce`) gets one retry with it per request: a
//! server that asks again and again would otherwise keep the client in a loop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::transport::auth::{
    AuthorizationMetadata, OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRequest,
};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

/// The only proof algorithm mcpr signs with (what every DPoP server must accept in practice).
pub(crate) const DPOP_ALGORITHM: &str = "ES256";

/// The header a proof travels in, and the one a server's nonce comes back in.
pub(crate) const DPOP_HEADER: &str = "DPoP";
pub(crate) const NONCE_HEADER: &str = "DPoP-Nonce";

/// Whether the authorization server issues DPoP-bound tokens that mcpr can ask for.
pub(crate) fn supported(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(|v| v.as_array())
        .is_some_and(|algs| algs.iter().any(|a| a.as_str() == Some(DPOP_ALGORITHM)))
}

/// A login's proof key, and the nonces servers handed out for it.
pub(crate) struct DpopKey {
    pkcs8: Vec<u8>,
    encoding: EncodingKey,
    jwk: Jwk,
    /// The last `DPoP-Nonce` of each origin (the authorization server's and the MCP server's
    /// are distinct).
    nonces: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    jti: String,
    htm: &'a str,
    htu: String,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<String>,
}

impl DpopKey {
    /// A new key.
    pub(super) fn generate() -> Result<DpopKey, String> {
        let rng = SystemRandom::new();
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "cannot generate a DPoP key".to_owned())?;
        DpopKey::from_pkcs8(document.as_ref().to_vec())
    }

    /// The key kept in a credential record ([`DpopKey::stored`]); `None` if it is not one.
    pub(super) fn from_stored(text: &str) -> Option<DpopKey> {
        let pkcs8 = URL_SAFE_NO_PAD.decode(text).ok()?;
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8).ok()?;
        DpopKey::from_pkcs8(pkcs8).ok()
    }

    fn from_pkcs8(pkcs8: Vec<u8>) -> Result<DpopKey, String> {
        let encoding = EncodingKey::from_ec_der(&pkcs8);
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256)
            .map_err(|e| format!("DPoP key: {e}"))?;
        Ok(DpopKey {
            pkcs8,
            encoding,
            jwk,
            nonces: Mutex::new(HashMap::new()),
        })
    }

    /// The private key as kept in the credential record (a secret).
    pub(super) fn stored(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// A fresh proof for `method` on `url`; with `access_token`, bound to it (`ath`).
    pub(super) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let target = reqwest::Url::parse(url).map_err(|e| format!("DPoP proof for {url}: {e}"))?;
        let mut htu = target.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let mut jti = [0u8; 16];
        SystemRandom::new()
            .fill(&mut jti)
            .map_err(|_| "no randomness for a DPoP proof".to_owned())?;
        let claims = Claims {
            jti: URL_SAFE_NO_PAD.encode(jti),
            htm: method,
            htu: htu.to_string(),
            iat: super::store::now_secs(),
            nonce: self.nonce(&target),
            ath: access_token.map(|t| URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes()))),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding)
            .map_err(|e| format!("DPoP proof: {e}"))
    }

    fn nonce(&self, url: &reqwest::Url) -> Option<String> {
        let nonces = self.nonces.lock().unwrap_or_else(|e| e.into_inner());
        nonces.get(&url.origin().ascii_serialization()).cloned()
    }

    /// Remember the `DPoP-Nonce` a response from `url` carried; whether it is a new one.
    pub(super) fn learn_nonce(&self, url: &str, nonce: Option<&[u8]>) -> bool {
        let (Ok(url), Some(nonce)) = (reqwest::Url::parse(url), nonce) else {
            return false;
        };
        // A nonce goes back in a JSON string: keep printable ASCII only (RFC 9449 §8.1
        // allows no more), so a hostile one cannot smuggle anything into the proof.
        let Ok(nonce) = std::str::from_utf8(nonce) else {
            return false;
        };
        if nonce.is_empty() || nonce.len() > 1024 || !nonce.bytes().all(|b| b.is_ascii_graphic()) {
            return false;
        }
        let mut nonces = self.nonces.lock().unwrap_or_else(|e| e.into_inner());
        let previous = nonces.insert(url.origin().ascii_serialization(), nonce.to_owned());
        previous.as_deref() != Some(nonce)
    }
}

/// Whether a response asks for a proof with a (new) nonce: a 400 `use_dpop_nonce` from the
/// token endpoint (RFC 9449 §8) or a 401 whose DPoP challenge says so (§9).
pub(crate) fn asks_for_nonce(status: u16, www_authenticate: Option<&[u8]>, body: &[u8]) -> bool {
    let in_challenge =
        www_authenticate.is_some_and(|c| String::from_utf8_lossy(c).contains("use_dpop_nonce"));
    let in_body = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .is_some_and(|v| v["error"] == "use_dpop_nonce");
    (status == 400 && in_body) || (status == 401 && (in_challenge || in_body))
}

/// Largest token endpoint response read.
const MAX_TOKEN_RESPONSE_BYTES: usize = 1024 * 1024;

/// Bound on one token request.
const TOKEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// rmcp's OAuth HTTP client, except that token requests (to `token_endpoint`) are sent here
/// with a proof, and once more with the nonce when the authorization server asks for one.
pub(crate) struct DpopHttpClient {
    inner: Box<dyn OAuthHttpClient>,
    direct: reqwest::Client,
    key: Arc<DpopKey>,
    token_endpoint: String,
}

impl DpopHttpClient {
    pub(super) fn new(key: Arc<DpopKey>, token_endpoint: &str) -> Result<DpopHttpClient, String> {
        // Installs the TLS provider rmcp's client needs too.
        crate::net::shared_client()?;
        let direct = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TOKEN_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(DpopHttpClient {
            inner: Box::new(
                rmcp::transport::auth::default_oauth_http_client().map_err(|e| e.to_string())?,
            ),
            direct,
            key,
            token_endpoint: token_endpoint.to_owned(),
        })
    }

    async fn token_request(
        &self,
        request: &oauth2::HttpRequest,
    ) -> Result<oauth2::HttpResponse, rmcp::transport::auth::OAuthHttpClientError> {
        let uri = request.uri().to_string();
        let mut retried = false;
        loop {
            let proof = self.key.proof("POST", &uri, None)?;
            let response = self
                .direct
                .post(&uri)
                .headers(request.headers().clone())
                .header(DPOP_HEADER, proof)
                .body(request.body().clone())
                .send()
                .await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = read_bounded(response).await?;
            let fresh = self
                .key
                .learn_nonce(&uri, headers.get(NONCE_HEADER).map(|v| v.as_bytes()));
            let again = asks_for_nonce(
                status.as_u16(),
                headers
                    .get(reqwest::header::WWW_AUTHENTICATE)
                    .map(|v| v.as_bytes()),
                &body,
            );
            // One retry, and only with a nonce not tried yet: a server that keeps asking is
            // answered with its own error.
            if again && fresh && !retried {
                retried = true;
                continue;
            }
            let mut answer = oauth2::HttpResponse::new(body);
            *answer.status_mut() = status;
            *answer.headers_mut() = headers;
            return Ok(answer);
        }
    }
}

async fn read_bounded(
    mut response: reqwest::Response,
) -> Result<Vec<u8>, rmcp::transport::auth::OAuthHttpClientError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
            return Err(
                format!("token response larger than {MAX_TOKEN_RESPONSE_BYTES} bytes").into(),
            );
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl OAuthHttpClient for DpopHttpClient {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let is_token_request = request.request.method() == reqwest::Method::POST
                && request.request.uri().to_string() == self.token_endpoint;
            if is_token_request {
                self.token_request(&request.request).await
            } else {
                self.inner.execute(request).await
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(jwt: &str, index: usize) -> serde_json::Value {
        let text = jwt.split('.').nth(index).expect("three parts");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).expect("base64url")).expect("JSON")
    }

    #[test]
    fn a_proof_names_the_request_and_binds_the_token() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof("POST", "https://mcp.example/mcp?x=1#f", Some("tok"))
            .unwrap();
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert!(header["jwk"].get("d").is_none(), "{header}");
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok"))
        );
        assert!(claims.get("nonce").is_none());
        let again = key.proof("POST", "https://mcp.example/mcp", None).unwrap();
        assert_ne!(part(&again, 1)["jti"], claims["jti"]);
    }

    #[test]
    fn nonces_are_per_origin_and_only_printable() {
        let key = DpopKey::generate().unwrap();
        assert!(key.learn_nonce("https://as.example/token", Some(b"n-1")));
        assert!(!key.learn_nonce("https://as.example/other", Some(b"n-1")));
        assert!(!key.learn_nonce("https://as.example/token", Some(b"bad\"nonce\n")));
        let proof = key.proof("POST", "https://as.example/token", None).unwrap();
        assert_eq!(part(&proof, 1)["nonce"], "n-1");
        let proof = key.proof("POST", "https://mcp.example/mcp", None).unwrap();
        assert!(part(&proof, 1).get("nonce").is_none());
    }

    #[test]
    fn a_stored_key_signs_as_the_same_key() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_stored(&key.stored()).unwrap();
        let a = part(&key.proof("GET", "https://x.example/", None).unwrap(), 0);
        let b = part(&again.proof("GET", "https://x.example/", None).unwrap(), 0);
        assert_eq!(a["jwk"], b["jwk"]);
        assert!(DpopKey::from_stored("not a key").is_none());
    }

    #[test]
    fn nonce_challenges_are_recognised() {
        assert!(asks_for_nonce(400, None, br#"{"error":"use_dpop_nonce"}"#));
        assert!(asks_for_nonce(
            401,
            Some(br#"DPoP error="use_dpop_nonce""#),
            b""
        ));
        assert!(!asks_for_nonce(400, None, br#"{"error":"invalid_grant"}"#));
        assert!(!asks_for_nonce(401, Some(b"Bearer"), b""));
    }
}
