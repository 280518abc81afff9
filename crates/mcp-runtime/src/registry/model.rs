//! The `server.json` format of the MCP Registry and the shapes of its v0.1 read API.
//!
//! Unknown fields are ignored (the format grows); fields every entry must have (`name`,
//! `version`, a package's `registryType` and `identifier`, a transport's `type`) are required,
//! so an entry without them is a decoding error naming the field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The key of the registry's own metadata in an entry's `_meta`.
pub const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";

/// One server as published (`server.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerJson {
    /// Reverse-DNS name, e.g. `io.github.owner/server`.
    pub name: String,
    /// What the server does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The published version.
    pub version: String,
    /// Ways to run it locally.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<Package>,
    /// Hosted endpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remotes: Vec<RemoteTransport>,
    /// The project's home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

/// A package that runs the server locally.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// `npm`, `pypi`, `oci`, `mcpb` (others are refused when installing).
    pub registry_type: String,
    /// The package registry (e.g. `https://registry.npmjs.org`), when not the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_base_url: Option<String>,
    /// Package name, image reference, or (for `mcpb`) the download URL.
    pub identifier: String,
    /// The package version (an image tag for OCI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// SHA-256 of the file (hex), for downloaded bundles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sha256: Option<String>,
    /// The runner the publisher suggests (`npx`, `uvx`, `docker`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_hint: Option<String>,
    /// How to talk to it once it runs.
    pub transport: PackageTransport,
    /// Arguments for the runner (before the package).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_arguments: Vec<Argument>,
    /// Arguments for the package itself (after it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub package_arguments: Vec<Argument>,
    /// Environment variables the server reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment_variables: Vec<KeyValueInput>,
}

/// The transport of a package: `stdio`, or an HTTP one the started process listens on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageTransport {
    /// `stdio`, `streamable-http` or `sse`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The URL of an HTTP transport (may hold `{var}` templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Request headers of an HTTP transport.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<KeyValueInput>,
    /// Values of the `{var}` templates of `url`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// A hosted endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTransport {
    /// `streamable-http` or `sse`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The endpoint (may hold `{var}` templates).
    pub url: String,
    /// Request headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<KeyValueInput>,
    /// Values of the `{var}` templates of `url`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// A value the user may (or must) supply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the server cannot run without it.
    #[serde(default)]
    pub is_required: bool,
    /// Whether it is a secret (never written to a config file).
    #[serde(default)]
    pub is_secret: bool,
    /// `string`, `number`, `boolean` or `filepath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A fixed value (may hold `{var}` templates filled from `variables`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The value used when the user gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The allowed values, when limited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

/// A named input: an environment variable or a header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyValueInput {
    /// The variable or header name.
    pub name: String,
    /// Its value and how to get it.
    #[serde(flatten)]
    pub input: Input,
    /// Values of the `{var}` templates of `value`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// Whether an argument is a bare value or a `--flag value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArgumentKind {
    /// A bare value.
    Positional,
    /// The flag `name` followed by the value as the next argument.
    Named,
}

/// A command-line argument of the runner or the package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Argument {
    /// Positional or named.
    #[serde(rename = "type")]
    pub kind: ArgumentKind,
    /// The flag of a named argument (`--port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A short name for the value of a positional argument (used when asking for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_hint: Option<String>,
    /// Whether it may be given several times.
    #[serde(default)]
    pub is_repeated: bool,
    /// Its value and how to get it.
    #[serde(flatten)]
    pub input: Input,
    /// Values of the `{var}` templates of `value`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// The registry's metadata of an entry (`_meta["io.modelcontextprotocol.registry/official"]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OfficialMeta {
    /// `active`, `deprecated` or `deleted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Whether this is the newest version.
    #[serde(default)]
    pub is_latest: bool,
    /// When it was published (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<String>,
    /// When it was last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// One entry of an answer: the server and the registry's metadata about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResponse {
    /// The published `server.json`.
    pub server: ServerJson,
    /// Metadata, keyed by who wrote it.
    #[serde(rename = "_meta", default)]
    pub meta: BTreeMap<String, serde_json::Value>,
}

/// How an entry stands in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Usable.
    Active,
    /// Still listed, but its publisher asks people to move on.
    Deprecated,
    /// Withdrawn (often for security reasons).
    Deleted,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Active => "active",
            Status::Deprecated => "deprecated",
            Status::Deleted => "deleted",
        })
    }
}

impl ServerResponse {
    /// The registry's own metadata (empty when absent or unreadable).
    pub fn official(&self) -> OfficialMeta {
        self.meta
            .get(OFFICIAL_META)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// The entry's status; an unknown or missing one counts as active.
    pub fn status(&self) -> Status {
        match self.official().status.as_deref() {
            Some("deprecated") => Status::Deprecated,
            Some("deleted") => Status::Deleted,
            _ => Status::Active,
        }
    }
}

/// Paging information of a list answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMetadata {
    /// Pass as `cursor` for the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Entries on this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

/// A page of `GET /v0.1/servers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerList {
    /// The entries.
    pub servers: Vec<ServerResponse>,
    /// Paging.
    #[serde(default)]
    pub metadata: ListMetadata,
}

impl ServerJson {
    /// How each of its packages and remotes runs, e.g. `["npm", "remote"]`.
    pub fn kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = Vec::new();
        for package in &self.packages {
            let kind = package.registry_type.to_ascii_lowercase();
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        if !self.remotes.is_empty() {
            kinds.push("remote".into());
        }
        kinds
    }
}
