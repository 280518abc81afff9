//! A client of the registry's v0.1 read API, with a short-lived answer cache on disk.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::RegistryError;
use super::model::{ServerList, ServerResponse};
use crate::net::HttpClient;

/// The official MCP Registry.
pub const DEFAULT_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// How long an answer is reused without asking again.
pub const CACHE_TTL: Duration = Duration::from_secs(300);

/// Bound on one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest answer read (a page of entries, a `server.json`).
const MAX_ANSWER: usize = 8 * 1024 * 1024;

/// A registry at one base URL.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    base: String,
    cache_dir: Option<PathBuf>,
    ttl: Duration,
    http: HttpClient,
}

impl RegistryClient {
    /// A client of the registry at `base` (e.g. [`DEFAULT_REGISTRY`]), without a cache.
    pub fn new(base: &str) -> Result<Self, RegistryError> {
        let parsed = reqwest::Url::parse(base).map_err(|e| RegistryError::Url {
            url: base.to_owned(),
            message: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(RegistryError::Url {
                url: base.to_owned(),
                message: "expected an http:// or https:// URL".into(),
            });
        }
        Ok(RegistryClient {
            base: base.trim_end_matches('/').to_owned(),
            cache_dir: None,
            ttl: CACHE_TTL,
            http: HttpClient::shared(),
        })
    }

    /// Keep answers in `dir` for `ttl` (a failure to write the cache is ignored).
    pub fn with_cache(mut self, dir: impl Into<PathBuf>, ttl: Duration) -> Self {
        self.cache_dir = Some(dir.into());
        self.ttl = ttl;
        self
    }

    /// Send every request with `http` instead of the process's shared client.
    pub fn with_http_client(mut self, http: HttpClient) -> Self {
        self.http = http;
        self
    }

    /// The HTTP client this registry client sends with (also used for bundle downloads).
    pub fn http_client(&self) -> &HttpClient {
        &self.http
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// One page of `GET /v0.1/servers?search=&version=latest&cursor=`.
    pub async fn list(
        &self,
        search: &str,
        cursor: Option<&str>,
    ) -> Result<ServerList, RegistryError> {
        let mut url = reqwest::Url::parse(&format!("{}/v0.1/servers", self.base)).map_err(|e| {
            RegistryError::Url {
                url: self.base.clone(),
                message: e.to_string(),
            }
        })?;
        {
            let mut query = url.query_pairs_mut();
            if !search.is_empty() {
                query.append_pair("search", search);
            }
            query.append_pair("version", "latest");
            if let Some(cursor) = cursor {
                query.append_pair("cursor", cursor);
            }
        }
        self.get(url.as_str()).await
    }

    /// Every page of a search, up to `limit` entries.
    pub async fn search(&self, search: &str, limit: usize) -> Result<ServerList, RegistryError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        // A registry that keeps returning the same cursor must not loop forever.
        let mut seen = std::collections::HashSet::new();
        loop {
            let page = self.list(search, cursor.as_deref()).await?;
            all.extend(page.servers);
            match page.metadata.next_cursor {
                Some(next)
                    if all.len() < limit && !next.is_empty() && seen.insert(next.clone()) =>
                {
                    cursor = Some(next);
                }
                _ => break,
            }
        }
        all.truncate(limit);
        let count = all.len() as u64;
        Ok(ServerList {
            servers: all,
            metadata: super::model::ListMetadata {
                next_cursor: None,
                count: Some(count),
            },
        })
    }

    /// `GET /v0.1/servers/{name}/versions/{version}` (`version` default `latest`).
    pub async fn server(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<ServerResponse, RegistryError> {
        let url = format!(
            "{}/v0.1/servers/{}/versions/{}",
            self.base,
            encode(name),
            encode(version.unwrap_or("latest"))
        );
        let entry: ServerResponse = self.get(&url).await.map_err(|e| match e {
            RegistryError::Status { status: 404, .. } => RegistryError::NotFound {
                name: name.to_owned(),
                version: version.unwrap_or("latest").to_owned(),
            },
            other => other,
        })?;
        if entry.server.name != name {
            return Err(RegistryError::Invalid {
                url,
                message: format!(
                    "asked for `{name}`, the registry answered `{}`",
                    entry.server.name
                ),
            });
        }
        Ok(entry)
    }

    /// The decoded answer of `url`, from the cache when fresh. Only answers that decode are
    /// cached: a bad one is asked for again next time.
    async fn get<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, RegistryError> {
        let cached = self.cache_dir.as_ref().map(|dir| cache_file(dir, url));
        if let Some(path) = &cached
            && let Some(body) = read_fresh(path, self.ttl)
            && let Ok(answer) = serde_json::from_slice(&body)
        {
            return Ok(answer);
        }
        let body = fetch(&self.http, url, MAX_ANSWER).await?;
        let answer = decode(url, &body)?;
        if let Some(path) = &cached {
            let _ = crate::fsutil::write_atomic(path, &body);
        }
        Ok(answer)
    }
}

/// GET `url` with `http`, refusing bodies above `max` bytes.
pub(crate) async fn fetch(
    http: &HttpClient,
    url: &str,
    max: usize,
) -> Result<Vec<u8>, RegistryError> {
    let client = http
        .client()
        .map_err(|message| RegistryError::Unreachable {
            url: url.to_owned(),
            message,
        })?;
    let unreachable = |e: reqwest::Error| RegistryError::Unreachable {
        url: url.to_owned(),
        message: error_chain(&e),
    };
    let mut response = client
        .get(url)
        .header("Accept", "application/json")
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    if !status.is_success() {
        return Err(RegistryError::Status {
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > max {
            return Err(RegistryError::Invalid {
                url: url.to_owned(),
                message: format!("answer larger than {max} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn decode<T: serde::de::DeserializeOwned>(url: &str, body: &[u8]) -> Result<T, RegistryError> {
    serde_json::from_slice(body).map_err(|e| RegistryError::Invalid {
        url: url.to_owned(),
        message: e.to_string(),
    })
}

/// Percent-encode one path segment (server names contain `/`).
fn encode(segment: &str) -> String {
    let mut out = String::new();
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn cache_file(dir: &Path, url: &str) -> PathBuf {
    let digest = Sha256::digest(url.as_bytes());
    dir.join(format!("{}.json", crate::fsutil::hex(&digest)))
}

fn read_fresh(path: &Path, ttl: Duration) -> Option<Vec<u8>> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let age = SystemTime::now().duration_since(modified).ok()?;
    if age > ttl {
        return None;
    }
    std::fs::read(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_path_segment() {
        assert_eq!(encode("io.github.a/b c"), "io.github.a%2Fb%20c");
    }

    #[test]
    fn only_http_registries() {
        assert!(RegistryClient::new("file:///etc").is_err());
        assert!(RegistryClient::new("not a url").is_err());
        assert_eq!(
            RegistryClient::new("http://127.0.0.1:1/").unwrap().base(),
            "http://127.0.0.1:1"
        );
    }
}
