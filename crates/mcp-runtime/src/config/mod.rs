//! Server configuration: what one MCP server is, and how it is read from a config file.
//!
//! This is the first step of the lifecycle (config → client → manager → tools → gateway):
//! nothing here opens a socket, and the only processes it may start are the `!command` values of
//! trusted servers resolved at connect time ([`resolve_connect_values`]).
//!
//! - [`load_all_mcp_configs`] / [`discover_mcp_servers`]: read every AI tool's MCP config
//!   (`docs/hosts.md`), with provenance ([`ServerSource`]), trust and warnings that
//!   name file, line and column.
//! - [`expand`]: `${VAR}` and each host's own value syntax; [`RedactedServer`] shows a
//!   server without its secrets.
//! - [`watch`]: notices when any of those files changes, for a host that reloads by itself.
//! - [`trust`]: project trust, in one place: the store, what trust binds to (config files, files
//!   servers read or run) and the decision for one run; [`writer`]: mcpr's own config files;
//!   [`secrets`]: the values of installed servers kept out of config files.
//!
//! Discovery reads files into definitions (`discover/scan.rs`), then expands, claims, trusts and
//! enables them (`discover/merge.rs`); its public results are in `discover/types.rs`.

mod discover;
mod error;
pub mod expand;
mod formats;
mod level;
mod providers;
mod redact;
pub(crate) mod resolve;
pub mod secrets;
pub mod trust;
mod validate;
pub mod watch;
pub mod writer;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use discover::{
    DiscoveredServer, Discovery, DiscoveryFailure, DiscoveryOptions, EnvSource, HARD_FAILURE_PATH,
    PendingReason, ProviderInfo, ServerSource, ServerState, Warning, config_files,
    discover_mcp_servers, load_all_mcp_configs, provider_list, revoke_project_trust,
    trust_discovered, trust_project,
};
pub use error::ConfigError;
#[cfg(feature = "gateway")] // the gateway's fast path checks a call's arguments with it
pub(crate) use formats::json_too_deep;
pub use level::Level;
pub use redact::RedactedServer;
pub use resolve::{COMMAND_TIMEOUT, resolve_connect_values, resolve_connect_values_with};
pub use trust::{ProjectTrust, ProjectTrustState};
pub use validate::server_from_json;

/// Timeout used when a server's config sets none (30 s).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Environment variable that overrides every timeout of every server, in milliseconds. Read
/// once, the first time a timeout is needed.
pub const TIMEOUT_ENV: &str = "MCPR_TIMEOUT_MS";

/// One configured MCP server, validated and ready to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// How to reach the server.
    pub transport: Transport,
    /// `timeout` (ms) bounding every request; `0` means none.
    pub timeout_ms: Option<u64>,
    /// `startup_timeout_ms`: overrides `timeout` for the handshake and first `tools/list`.
    pub startup_timeout_ms: Option<u64>,
    /// `tool_timeout_ms`: overrides `timeout` for tool calls.
    pub tool_timeout_ms: Option<u64>,
    /// `enabled: false` servers are dropped before any connection attempt.
    pub enabled: bool,
    /// Names of environment variables forwarded from the parent environment to a stdio server
    /// (Codex `env_vars`, goose `env_keys`); filled in by [`resolve_connect_values`].
    pub env_vars: Vec<String>,
    /// An environment variable holding a bearer token, sent as `Authorization: Bearer <token>`
    /// (Codex `bearer_token_env_var`); resolved by [`resolve_connect_values`].
    pub bearer_token_env_var: Option<String>,
    /// Headers whose value comes from an environment variable: header name → variable name
    /// (Codex `env_http_headers`); resolved by [`resolve_connect_values`].
    pub env_headers: BTreeMap<String, String>,
    /// Only these tools are exposed, when set (Codex `enabled_tools`, Gemini `includeTools`).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never exposed (Codex `disabled_tools`, Gemini `excludeTools`).
    pub disabled_tools: Vec<String>,
    /// `alwaysLoad` (Claude Code's spelling; `always_load` also read): in discovery mode this
    /// server's tools stay in the tool list instead of waiting to be found. Default `false`.
    pub always_load: bool,
    /// `pinTools` (default `true`): the first definition seen of each of the server's tools is
    /// pinned, and a tool whose definition later changes is held until accepted (see
    /// [`crate::pins`]). `false` for a server whose tools legitimately change often.
    pub pin_tools: bool,
}

/// The transport of a server and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A local process speaking JSON-RPC over its stdin/stdout.
    Stdio(StdioConfig),
    /// A remote server reached over HTTP.
    Http(HttpConfig),
}

/// A server started as a child process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioConfig {
    /// Program to run (looked up on `PATH` when it has no slash).
    pub command: String,
    /// Arguments, without the program.
    pub args: Vec<String>,
    /// Added to (and overriding) the environment the server starts with (see `inherit_env`).
    pub env: BTreeMap<String, String>,
    /// Working directory; the caller's when absent.
    pub cwd: Option<PathBuf>,
    /// `sandboxEnabled: true` with its `sandbox` object: the server runs confined (see
    /// [`crate::sandbox`]), or not at all.
    pub sandbox: Option<crate::sandbox::SandboxPolicy>,
    /// `inheritEnv: true`: the server receives the host's whole environment (but mcpr's own
    /// `MCPR_*` variables), instead of the allowlist of
    /// [`client::ServerEnvironment`](crate::client::ServerEnvironment).
    pub inherit_env: bool,
}

/// A remote server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Endpoint URL.
    pub url: String,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// Which HTTP flavour of MCP the server speaks.
    pub kind: HttpKind,
    /// OAuth settings (`oauth`, or an `auth` block of `type: oauth`). `None` still allows
    /// OAuth: a server that answers 401 is discovered and registered with the defaults.
    pub oauth: Option<OAuthConfig>,
}

/// How mcpr authorizes itself to an OAuth-protected server (MCP authorization, 2025-11-25).
///
/// Claude Code's `oauth` block (`clientId`, `clientSecret`, `callbackPort`, `scopes`,
/// `authServerMetadataUrl`) plus `clientMetadataUrl` (a client ID metadata document),
/// `grantType` (`authorization_code` or `client_credentials`) and, for `private_key_jwt`,
/// `privateKeyFile` / `privateKey` with `signingAlgorithm`.
///
/// ```
/// use mcp_runtime::config::{OAuthGrant, Transport, server_from_json};
/// let cfg = server_from_json("svc", &serde_json::json!({
///     "url": "https://svc.example/mcp",
///     "oauth": {"clientId": "ci", "clientSecret": "s3cret-value", "grantType": "client_credentials"}
/// })).unwrap();
/// let Transport::Http(http) = &cfg.transport else { unreachable!() };
/// assert_eq!(http.oauth.as_ref().unwrap().grant, OAuthGrant::ClientCredentials);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct OAuthConfig {
    /// A pre-registered client; without one the client registers itself (RFC 7591) or uses
    /// [`OAuthConfig::client_metadata_url`].
    pub client_id: Option<String>,
    /// The pre-registered client's secret (a secret: never shown).
    pub client_secret: Option<String>,
    /// Fixed port of the loopback redirect `http://127.0.0.1:PORT/callback`; an ephemeral
    /// port when absent.
    pub callback_port: Option<u16>,
    /// Scopes to ask for; when empty they come from the server's challenge or metadata.
    pub scopes: Vec<String>,
    /// Where the authorization server's metadata is, when the server does not say.
    pub auth_server_metadata_url: Option<String>,
    /// An HTTPS URL that is this client's ID (a client ID metadata document, SEP-991), used
    /// when the authorization server supports it.
    pub client_metadata_url: Option<String>,
    /// Which grant obtains tokens.
    pub grant: OAuthGrant,
    /// PEM private key for `private_key_jwt` client authentication (a secret).
    pub private_key: Option<PrivateKey>,
    /// JWS algorithm of the `private_key_jwt` assertion (`ES256` when absent).
    pub signing_algorithm: Option<String>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("callback_port", &self.callback_port)
            .field("scopes", &self.scopes)
            .field("auth_server_metadata_url", &self.auth_server_metadata_url)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("grant", &self.grant)
            .field("private_key", &self.private_key)
            .field("signing_algorithm", &self.signing_algorithm)
            .finish()
    }
}

/// OAuth grants mcpr can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// A person logs in once in a browser (`mcpr login`); refreshed from then on.
    #[default]
    AuthorizationCode,
    /// Machine to machine: the client's own credentials, no person involved.
    ClientCredentials,
}

/// Where a `private_key_jwt` key comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum PrivateKey {
    /// A PEM file, read when the key is needed.
    File(PathBuf),
    /// The PEM text itself (usually from `${VAR}`).
    Pem(String),
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrivateKey::File(path) => f.debug_tuple("File").field(path).finish(),
            PrivateKey::Pem(_) => f.write_str("Pem(***)"),
        }
    }
}

/// HTTP flavours of MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpKind {
    /// Streamable HTTP (protocol 2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (protocol 2024-11-05).
    Sse,
}

impl Transport {
    /// Short name shown to users: `stdio`, `http` or `sse`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(HttpConfig {
                kind: HttpKind::StreamableHttp,
                ..
            }) => "http",
            Transport::Http(HttpConfig {
                kind: HttpKind::Sse,
                ..
            }) => "sse",
        }
    }
}

impl ServerConfig {
    /// A stdio server with default settings.
    ///
    /// ```
    /// use mcp_runtime::config::ServerConfig;
    /// let cfg = ServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
    /// assert_eq!(cfg.transport.kind_name(), "stdio");
    /// ```
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ServerConfig {
            transport: Transport::Stdio(StdioConfig {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                ..StdioConfig::default()
            }),
            timeout_ms: None,
            startup_timeout_ms: None,
            tool_timeout_ms: None,
            enabled: true,
            env_vars: Vec::new(),
            bearer_token_env_var: None,
            env_headers: BTreeMap::new(),
            enabled_tools: None,
            disabled_tools: Vec::new(),
            always_load: false,
            pin_tools: true,
        }
    }

    /// Whether the tool `name` may be exposed, after `enabled_tools` / `disabled_tools`.
    ///
    /// ```
    /// use mcp_runtime::config::ServerConfig;
    /// let mut cfg = ServerConfig::stdio("x", Vec::<String>::new());
    /// cfg.disabled_tools = vec!["rm".into()];
    /// assert!(cfg.allows_tool("ls") && !cfg.allows_tool("rm"));
    /// ```
    pub fn allows_tool(&self, name: &str) -> bool {
        let included = self
            .enabled_tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|t| t == name));
        included && !self.disabled_tools.iter().any(|t| t == name)
    }

    /// A display form with secrets replaced by `***`. Call it on the unexpanded
    /// config ([`DiscoveredServer::config`]) so that expanded values never appear.
    pub fn redacted(&self) -> RedactedServer {
        RedactedServer::new(self)
    }

    /// Values of this (expanded) config that may be secrets: environment and header values and
    /// URL query values, at least 6 characters long. Hosts feed them to their log scrubbing,
    /// since third-party crates may log a URL or a value at debug level.
    ///
    /// ```
    /// use mcp_runtime::config::server_from_json;
    /// let cfg = server_from_json("s", &serde_json::json!({"url": "https://h/mcp?key=abcdef123"})).unwrap();
    /// assert_eq!(cfg.secret_values(), ["abcdef123"]);
    /// ```
    pub fn secret_values(&self) -> Vec<String> {
        let mut values: Vec<String> = match &self.transport {
            Transport::Stdio(stdio) => stdio.env.values().cloned().collect(),
            Transport::Http(http) => {
                let query = http.url.split_once('?').map_or("", |(_, q)| q);
                let query = query.split('#').next().unwrap_or("");
                http.headers
                    .values()
                    .cloned()
                    .chain(
                        query
                            .split('&')
                            .filter_map(|pair| pair.split_once('='))
                            .map(|(_, v)| v.to_owned()),
                    )
                    .collect()
            }
        };
        if let Transport::Http(HttpConfig {
            oauth: Some(oauth), ..
        }) = &self.transport
        {
            values.extend(oauth.client_secret.clone());
            if let Some(PrivateKey::Pem(pem)) = &oauth.private_key {
                values.push(pem.clone());
            }
        }
        // Header values like `Bearer <token>`: the token alone is the secret.
        let tokens: Vec<String> = values
            .iter()
            .filter_map(|v| v.split_once(' ').map(|(_, rest)| rest.trim().to_owned()))
            .collect();
        values.extend(tokens);
        values.retain(|v| v.len() >= 6);
        values.sort();
        values.dedup();
        values
    }

    /// Bound on the handshake and first `tools/list`; `None` means unbounded.
    pub fn startup_timeout(&self) -> Option<Duration> {
        resolve_timeout(
            self.startup_timeout_ms.or(self.timeout_ms),
            env_timeout_ms(),
        )
    }

    /// Bound on one tool call; `None` means unbounded.
    pub fn tool_timeout(&self) -> Option<Duration> {
        resolve_timeout(self.tool_timeout_ms.or(self.timeout_ms), env_timeout_ms())
    }

    /// Bound on any other request (`tools/list`, `ping`, ...); `None` means unbounded.
    pub fn request_timeout(&self) -> Option<Duration> {
        resolve_timeout(self.timeout_ms, env_timeout_ms())
    }
}

/// [`TIMEOUT_ENV`], read once per process: the timeouts are asked for on every call, and a
/// read of the environment scans all of it.
fn env_timeout_ms() -> Option<u64> {
    static ENV_TIMEOUT_MS: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *ENV_TIMEOUT_MS.get_or_init(|| std::env::var(TIMEOUT_ENV).ok()?.trim().parse().ok())
}

/// `MCPR_TIMEOUT_MS` beats the config, the config beats the default, and 0 disables the bound.
fn resolve_timeout(configured_ms: Option<u64>, env_ms: Option<u64>) -> Option<Duration> {
    match env_ms.or(configured_ms).unwrap_or(DEFAULT_TIMEOUT_MS) {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_resolution_order() {
        assert_eq!(resolve_timeout(None, None), Some(Duration::from_secs(30)));
        assert_eq!(
            resolve_timeout(Some(500), None),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            resolve_timeout(Some(500), Some(7)),
            Some(Duration::from_millis(7))
        );
        assert_eq!(resolve_timeout(Some(0), None), None);
        assert_eq!(resolve_timeout(Some(500), Some(0)), None);
    }

    #[test]
    fn specific_timeouts_override_the_general_one() {
        let mut cfg = ServerConfig::stdio("x", Vec::<String>::new());
        cfg.timeout_ms = Some(1_000);
        cfg.tool_timeout_ms = Some(2_000);
        assert_eq!(
            resolve_timeout(cfg.tool_timeout_ms.or(cfg.timeout_ms), None),
            Some(Duration::from_millis(2_000))
        );
        assert_eq!(
            resolve_timeout(cfg.startup_timeout_ms.or(cfg.timeout_ms), None),
            Some(Duration::from_millis(1_000))
        );
    }
}
