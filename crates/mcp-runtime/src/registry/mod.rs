//! Finding and installing servers from an MCP Registry (the official one at
//! <https://registry.modelcontextprotocol.io>, or a company's own).
//!
//! - [`model`]: the `server.json` format and the v0.1 API answers;
//! - [`RegistryClient`]: `GET /v0.1/servers` (search, paging) and
//!   `GET /v0.1/servers/{name}/versions/{version}`, with a short answer cache;
//! - [`plan`] / [`Plan::build`]: a config entry from an entry (npm, PyPI, OCI, MCP bundles,
//!   remotes), with the values the user must give; what an entry may decide is limited by
//!   [`install::rules`] (a broken rule is [`RegistryError::Refused`]);
//! - [`install_bundle`]: download, check and unpack an MCP bundle;
//! - [`SecretStore`]: secret values, kept out of config files and put in when a server starts.
//!
//! ```no_run
//! # async fn host() -> Result<(), mcp_runtime::registry::RegistryError> {
//! use mcp_runtime::registry::{DEFAULT_REGISTRY, RegistryClient, ValueSource, Values, plan};
//!
//! let registry = RegistryClient::new(DEFAULT_REGISTRY)?;
//! let found = registry.search("filesystem", 20).await?;
//! for entry in &found.servers {
//!     println!("{} {} ({})", entry.server.name, entry.server.version, entry.server.kinds().join(", "));
//! }
//! let entry = registry.server("io.github.example/weather", None).await?;
//! let plan = plan(&entry.server, None)?;
//! let mut values = Values::default();
//! for need in plan.needs() {
//!     println!("{}: {}", need.flag(), need.input.description.unwrap_or_default());
//! }
//! values.set(ValueSource::Env, "WEATHER_API_KEY", "${WEATHER_API_KEY}");
//! let installed = plan.build("weather", &values, None)?;
//! println!("{:?}", installed.config);
//! # Ok(()) }
//! ```

pub mod bundle;
pub mod client;
pub mod install;
pub mod model;
/// The secret store of installed servers (kept by [`crate::config`], which reads it at
/// connect time).
pub use crate::config::secrets;

pub use bundle::{UnpackedBundle, install_bundle, install_bundle_with};
pub use client::{CACHE_TTL, DEFAULT_REGISTRY, RegistryClient};
pub use install::{
    BundleCommand, InstallKind, Installed, Need, Plan, Refusal, Rule, SECRET_PREFIX, ValueSource,
    Values, plan, plans,
};
pub use model::{ServerJson, ServerList, ServerResponse, Status};
pub use secrets::SecretStore;

/// Environment variable naming the registry to use instead of the official one.
pub const REGISTRY_URL_ENV: &str = "MCPR_REGISTRY_URL";

/// What went wrong talking to a registry or installing from it. Messages name the URL, the
/// server or the field, and never contain a secret value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The registry URL is not usable.
    #[error("registry URL `{url}`: {message}")]
    Url {
        /// The URL as given.
        url: String,
        /// Why.
        message: String,
    },
    /// No answer (connection refused, DNS, timeout, TLS).
    #[error("cannot reach the registry at {url}: {message}")]
    Unreachable {
        /// The request.
        url: String,
        /// Why.
        message: String,
    },
    /// An HTTP error status.
    #[error("{url}: the registry answered HTTP {status}")]
    Status {
        /// The request.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The registry has no such server or version.
    #[error("the registry has no server `{name}` (version {version})")]
    NotFound {
        /// The server asked for.
        name: String,
        /// The version asked for.
        version: String,
    },
    /// An answer that is not what the API promises (bad JSON, a missing field).
    #[error("{url}: unexpected answer from the registry: {message}")]
    Invalid {
        /// The request.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The only package is of a kind mcpr cannot run.
    #[error(
        "server `{server}`: unknown package registryType `{registry_type}` (mcpr installs npm, pypi, oci, mcpb and remotes)"
    )]
    UnsupportedPackage {
        /// The server.
        server: String,
        /// Its `registryType`.
        registry_type: String,
    },
    /// A transport mcpr cannot write as a config entry.
    #[error("unsupported transport type `{kind}`")]
    UnsupportedTransport {
        /// The transport's `type`.
        kind: String,
    },
    /// Nothing offered matches.
    #[error("server `{server}`: nothing to install: {message}")]
    NothingToInstall {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// Required values were not given.
    #[error("server `{server}`: required value(s) not given: {}", values.join(", "))]
    Missing {
        /// The server.
        server: String,
        /// The flags that give them (`--env NAME`).
        values: Vec<String>,
    },
    /// The entry asks for something a registry entry may not decide (a privileged container
    /// flag, a runner option, a version range, a loader variable, a plain-http URL, ...). No
    /// value or option of the user's changes this: the entry is not installed.
    #[error("server `{server}`: `{field}`: {rule}; a registry entry cannot decide this")]
    Refused {
        /// The server.
        server: String,
        /// The field of `server.json` (`packages[0].runtimeArguments`, `remotes[0].url`).
        field: String,
        /// The rule it breaks (boxed: it is the largest error of all).
        rule: Box<Rule>,
    },
    /// A given value is not acceptable.
    #[error("server `{server}`: {message}")]
    Value {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// An MCP bundle could not be installed.
    #[error("server `{server}`: bundle: {message}")]
    Bundle {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
}
