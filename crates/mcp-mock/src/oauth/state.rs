//! What the mock's authorization server remembers: clients, codes, tokens, and the counters
//! of `/__oauth/stats`.

use super::*;

/// How a client authenticates at `/token` (`token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AuthMethod {
    Basic,
    Post,
    None,
}

impl AuthMethod {
    pub(super) fn parse(name: &str) -> Option<AuthMethod> {
        match name {
            "client_secret_basic" => Some(AuthMethod::Basic),
            "client_secret_post" => Some(AuthMethod::Post),
            "none" => Some(AuthMethod::None),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::None => "none",
        }
    }
}

/// A known client.
pub(super) struct Client {
    /// `None` for public clients.
    pub(super) secret: Option<String>,
    /// The registered method; `None` for `--oauth-client` clients, which may use either secret
    /// method (they never said which).
    pub(super) method: Option<AuthMethod>,
    /// The registered redirect URIs; `None` (`--oauth-client`): any http loopback URI.
    pub(super) redirect_uris: Option<Vec<String>>,
}

/// An authorization code waiting for its exchange.
pub(super) struct Code {
    pub(super) client_id: String,
    /// The `redirect_uri` sent to `/authorize`, which `/token` must repeat.
    pub(super) redirect_uri: Option<String>,
    pub(super) challenge: String,
    pub(super) scopes: Vec<String>,
    pub(super) resource: Option<String>,
    pub(super) expires: Instant,
}

pub(super) struct Access {
    pub(super) scopes: Vec<String>,
    /// `None`: a lifetime too long for the clock (`--oauth-token-ttl` near `u64::MAX`).
    pub(super) expires: Option<Instant>,
}

impl Access {
    pub(super) fn live(&self, now: Instant) -> bool {
        self.expires.is_none_or(|expires| expires > now)
    }
}

pub(super) struct Refresh {
    pub(super) client_id: String,
    pub(super) scopes: Vec<String>,
    pub(super) resource: Option<String>,
}

#[derive(Default)]
pub(super) struct Store {
    pub(super) clients: HashMap<String, Client>,
    pub(super) codes: HashMap<String, Code>,
    pub(super) access: HashMap<String, Access>,
    pub(super) refresh: HashMap<String, Refresh>,
}

/// What `GET /__oauth/stats` reports.
#[derive(Default)]
pub(super) struct Stats {
    pub(super) registrations: AtomicUsize,
    /// Valid `/authorize` requests, approved or (`--oauth-deny`) denied.
    pub(super) authorizations: AtomicUsize,
    /// `/token` requests per grant type, whatever their outcome.
    pub(super) authorization_code: AtomicUsize,
    pub(super) refresh_token: AtomicUsize,
    pub(super) client_credentials: AtomicUsize,
    /// 401s sent on `/mcp`.
    pub(super) unauthorized: AtomicUsize,
    /// 403s sent on `/mcp`.
    pub(super) insufficient_scope: AtomicUsize,
    /// `use_dpop_nonce` challenges sent (`--oauth-dpop token|resource`).
    pub(super) dpop_nonce_challenges: AtomicUsize,
    /// JWT-bearer token requests (`--oauth-jwt-bearer`).
    pub(super) jwt_bearer: AtomicUsize,
}

impl Stats {
    pub(super) fn json(&self) -> Value {
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

pub(super) fn bump(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::SeqCst);
}

/// A random token: `prefix` and 32 bytes from the OS, base64url.
pub(super) fn random(prefix: &str) -> Result<String, OAuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| OAuthError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        error: "server_error",
        description: "no randomness from the OS",
    })?;
    Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
