//! Where OAuth credentials live: one SQLite file per user (`$XDG_DATA_HOME/mcpr/credentials.db`,
//! mode 0600), one row per server URL.
//!
//! Credentials are keyed by the server's URL, not its name: a project config that reuses the
//! name `github` for another URL finds no token, so it cannot send someone's credential to a
//! new host. Each row keeps what a refresh needs without a new discovery: the client
//! registration (id and secret), the authorization server's metadata and the token response,
//! and the DPoP key a bound token needs. A row is only ever updated by its own issuer: a token
//! from another authorization server replaces the whole row.
//!
//! [`ServerCredentials`] adapts one row to rmcp's `CredentialStore`, so rmcp's authorization
//! manager reads and writes tokens here while our row keeps the parts rmcp does not store.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::TokenResponse as _;
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialStore as RmcpCredentialStore, OAuthTokenResponse,
    StoredCredentials,
};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::config::EnvSource;
use crate::fsutil::{BaseDir, create_private_parent, make_private_dir, touch_private};

/// File name of the store inside `$XDG_DATA_HOME/mcpr/`.
pub const CREDENTIALS_FILE: &str = "credentials.db";

/// Everything mcpr keeps about its authorization to one server.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The server name that logged in (shown to people; the key is the URL).
    pub server: String,
    /// The client this token was issued to.
    pub client_id: String,
    /// That client's secret, for a confidential client (DCR can return one).
    pub client_secret: Option<String>,
    /// The redirect URI the client was registered with.
    pub redirect_uri: String,
    /// The authorization server's metadata, so a refresh needs no discovery.
    pub metadata: AuthorizationMetadata,
    /// The last token response.
    pub token: Option<OAuthTokenResponse>,
    /// Scopes granted with it.
    pub granted_scopes: Vec<String>,
    /// When it was received (Unix seconds).
    pub received_at: Option<u64>,
    /// The issuer that issued it.
    pub issuer: Option<String>,
    /// The DPoP key the token is bound to (PKCS#8, base64url; a secret), when the
    /// authorization server issues DPoP-bound tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

impl Record {
    /// When the access token expires (Unix seconds), if the server said.
    pub(crate) fn expires_at(&self) -> Option<u64> {
        let expires_in = self.token.as_ref()?.expires_in()?;
        expiry_secs(self.received_at?, expires_in.as_secs())
    }

    /// The access token, if any.
    pub(crate) fn access_token(&self) -> Option<&str> {
        Some(self.token.as_ref()?.access_token().secret())
    }

    /// Whether a refresh token is stored.
    pub(crate) fn has_refresh_token(&self) -> bool {
        self.token
            .as_ref()
            .is_some_and(|token| token.refresh_token().is_some())
    }
}

/// The per-user credential store. Cheap to clone; every clone uses the same file.
#[derive(Clone)]
pub struct CredentialStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    connection: Mutex<Option<Connection>>,
    /// A failure was logged already (see [`CredentialStore::warn_once`]).
    warned: AtomicBool,
}

impl std::fmt::Debug for CredentialStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialStore")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file or its directory could not be created or read.
    #[error("credential store {path}: {source}")]
    Io {
        /// The database file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// SQLite refused.
    #[error("credential store {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What failed.
        source: rusqlite::Error,
    },
    /// A row could not be decoded (it is then ignored, as if absent).
    #[error("credential store {path}: unreadable entry for {url}: {reason}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The row's key.
        url: String,
        /// Why.
        reason: String,
    },
}

impl CredentialStore {
    /// A store kept in `path` (created on the first write).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        CredentialStore {
            inner: Arc::new(Inner {
                path: path.into(),
                connection: Mutex::new(None),
                warned: AtomicBool::new(false),
            }),
        }
    }

    /// `$XDG_DATA_HOME/mcpr/credentials.db`, default `~/.local/share/mcpr/credentials.db`.
    pub fn user_default() -> Option<Self> {
        Self::default_path(&EnvSource::Process).map(Self::new)
    }

    /// The per-user store of a host whose state lives under `data_dir` (see
    /// [`ClientIdentity::data_dir`](crate::ClientIdentity::data_dir)).
    pub fn user_default_in(data_dir: &str) -> Option<Self> {
        Self::default_path_in(&EnvSource::Process, data_dir).map(Self::new)
    }

    /// Where [`CredentialStore::user_default`] keeps its file.
    pub fn default_path(env: &EnvSource) -> Option<PathBuf> {
        Self::default_path_in(env, &crate::ClientIdentity::default().data_dir)
    }

    /// Where [`CredentialStore::user_default_in`] keeps its file.
    pub fn default_path_in(env: &EnvSource, data_dir: &str) -> Option<PathBuf> {
        let home = env.get("HOME").map(PathBuf::from);
        let data = BaseDir::Data.resolve(|name| env.get(name), home.as_deref())?;
        Some(data.join(data_dir).join(CREDENTIALS_FILE))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Log `error` as a warning, the first time only: listings ask the store once per server,
    /// and a broken store is one problem, not one per server.
    pub(crate) fn warn_once(&self, error: &StoreError) {
        if !self.inner.warned.swap(true, Ordering::SeqCst) {
            tracing::warn!("{error}");
        }
    }

    /// Forget the credential of `url`. Returns whether there was one.
    pub fn remove(&self, url: &str) -> Result<bool, StoreError> {
        if !self.exists() {
            return Ok(false);
        }
        let key = key_of(url);
        self.with_connection(|db| {
            Ok(db.execute("DELETE FROM credentials WHERE url = ?1", params![key])? > 0)
        })
    }

    /// Reads do not create the file: a machine that never logged in keeps no store.
    fn exists(&self) -> bool {
        self.inner.path.exists()
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        if !self.exists() {
            return Ok(None);
        }
        let json: Option<String> = self.with_connection(|db| {
            db.query_row(
                "SELECT record FROM credentials WHERE url = ?1",
                params![key],
                |row| row.get(0),
            )
            .optional()
        })?;
        let Some(json) = json else { return Ok(None) };
        serde_json::from_str(&json)
            .map(Some)
            .map_err(|e| StoreError::Corrupt {
                path: self.inner.path.clone(),
                url: key.to_owned(),
                reason: e.to_string(),
            })
    }

    pub(crate) fn put(&self, key: &str, record: &Record) -> Result<(), StoreError> {
        let json = serde_json::to_string(record).map_err(|e| StoreError::Corrupt {
            path: self.inner.path.clone(),
            url: key.to_owned(),
            reason: e.to_string(),
        })?;
        self.with_connection(|db| {
            db.execute(
                "INSERT INTO credentials (url, record, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (url) DO UPDATE SET record = excluded.record,
                                                 updated_at = excluded.updated_at",
                params![key, json, now_secs() as i64],
            )?;
            Ok(())
        })
    }

    fn with_connection<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut slot = self
            .inner
            .connection
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(self.open()?);
        }
        let Some(db) = slot.as_ref() else {
            unreachable!("opened just above")
        };
        let result = work(db).map_err(|source| StoreError::Sqlite {
            path: self.inner.path.clone(),
            source,
        });
        if result.is_err() {
            *slot = None;
        }
        result
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let path = &self.inner.path;
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        // mcpr's own data directory: nobody else needs to list it.
        create_private_parent(path).map_err(io)?;
        if let Some(dir) = path.parent() {
            let _ = make_private_dir(dir);
        }
        // Create the file private before SQLite opens it: its journal files copy its mode.
        touch_private(path).map_err(io)?;
        let sqlite = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let db = Connection::open(path).map_err(sqlite)?;
        db.busy_timeout(Duration::from_secs(2)).map_err(sqlite)?;
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(sqlite)?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS credentials (
                url TEXT PRIMARY KEY,
                record TEXT NOT NULL,
                updated_at INTEGER NOT NULL
            )",
        )
        .map_err(sqlite)?;
        Ok(db)
    }
}

/// The key of a server URL: without fragment and query (a query may hold a secret, and the
/// credential belongs to the endpoint), with the host lower-cased by URL parsing.
pub(crate) fn key_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            parsed.set_query(None);
            parsed.to_string()
        }
        Err(_) => url.to_owned(),
    }
}

/// `received_at + expires_in`, or `None` when that is past what the clock can represent: the
/// server sends `expires_in`, and a value near `u64::MAX` means a token that does not expire in
/// any time that matters, so it is treated like one without an expiry.
pub(crate) fn expiry_secs(received_at: u64, expires_in: u64) -> Option<u64> {
    let at = received_at.checked_add(expires_in)?;
    UNIX_EPOCH.checked_add(Duration::from_secs(at))?;
    Some(at)
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// One server's row, seen through rmcp's `CredentialStore` trait. rmcp saves only the token
/// part; the rest of the row (client secret, metadata) is kept from `template` or the row.
pub(crate) struct ServerCredentials {
    store: CredentialStore,
    key: String,
    /// The row written when rmcp saves a token for a client that has no row yet.
    template: Mutex<Record>,
}

impl ServerCredentials {
    pub(super) fn new(store: CredentialStore, key: String, template: Record) -> Self {
        ServerCredentials {
            store,
            key,
            template: Mutex::new(template),
        }
    }

    fn store_error(e: StoreError) -> AuthError {
        AuthError::CredentialStoreError(e.to_string())
    }
}

#[async_trait::async_trait]
impl RmcpCredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(record) = self.store.get(&self.key).map_err(Self::store_error)? else {
            return Ok(None);
        };
        Ok(Some(
            StoredCredentials::new(
                record.client_id,
                record.token,
                record.granted_scopes,
                record.received_at,
            )
            .with_issuer(record.issuer),
        ))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let existing = self.store.get(&self.key).ok().flatten();
        let mut record = {
            let template = self.template.lock().unwrap_or_else(|e| e.into_inner());
            // A row for another client (a new registration) or of another issuer (the same
            // client metadata document URL is one client id everywhere) is replaced by the
            // template: credentials belong to the issuer that issued them.
            let mut record = match existing {
                Some(row)
                    if row.client_id == template.client_id
                        && row.metadata.issuer == template.metadata.issuer =>
                {
                    row
                }
                _ => template.clone(),
            };
            // The token is bound to the key of the exchange that made it.
            record.dpop_key = template.dpop_key.clone();
            record
        };
        record.client_id = credentials.client_id;
        record.token = credentials.token_response;
        record.granted_scopes = credentials.granted_scopes;
        record.received_at = credentials.token_received_at;
        record.issuer = credentials.issuer.or(record.issuer);
        self.store
            .put(&self.key, &record)
            .map_err(Self::store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store
            .remove(&self.key)
            .map(|_| ())
            .map_err(Self::store_error)
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        // A definitive `invalid_grant`: the stored credential is dead; forget it unless it was
        // replaced meanwhile (another process logged in again).
        let current = self.store.get(&self.key).map_err(Self::store_error)?;
        let same = current.is_some_and(|row| {
            row.client_id == credentials.client_id
                && row.access_token()
                    == credentials
                        .token_response
                        .as_ref()
                        .map(|t| t.access_token().secret().as_str())
        });
        if same {
            self.store.remove(&self.key).map_err(Self::store_error)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(client: &str) -> Record {
        Record {
            server: "svc".into(),
            client_id: client.into(),
            client_secret: Some("client-secret-value".into()),
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            metadata: AuthorizationMetadata::default(),
            token: None,
            granted_scopes: vec!["a".into()],
            received_at: None,
            issuer: None,
            dpop_key: None,
        }
    }

    #[test]
    fn a_huge_expires_in_is_no_expiry() {
        assert_eq!(expiry_secs(1_000, 3_600), Some(4_600));
        assert_eq!(expiry_secs(1_000, u64::MAX), None);
        assert_eq!(expiry_secs(u64::MAX, 1), None);
        // Fits in a u64, not in the clock.
        assert_eq!(expiry_secs(now_secs(), i64::MAX as u64), None);
        let mut row = record("c1");
        row.received_at = Some(now_secs());
        let mut token = OAuthTokenResponse::new(
            oauth2::AccessToken::new("at".into()),
            oauth2::basic::BasicTokenType::Bearer,
            Default::default(),
        );
        token.set_expires_in(Some(&Duration::from_secs(u64::MAX)));
        row.token = Some(token);
        assert_eq!(row.expires_at(), None);
    }

    #[test]
    fn keys_ignore_query_and_fragment() {
        assert_eq!(
            key_of("https://Example.com/mcp?key=secret#x"),
            "https://example.com/mcp"
        );
    }

    #[test]
    fn round_trip_private_file_and_removal() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::new(dir.path().join("mcpr").join(CREDENTIALS_FILE));
        let key = key_of("https://h/mcp");
        store.put(&key, &record("c1")).unwrap();
        let back = store.get(&key).unwrap().unwrap();
        assert_eq!(back.client_id, "c1");
        assert_eq!(back.client_secret.as_deref(), Some("client-secret-value"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(back.server, "svc");
        assert!(store.remove("https://h/mcp?x=1").unwrap());
        assert!(store.get(&key).unwrap().is_none());
        assert!(!store.remove("https://h/mcp").unwrap());
    }

    #[tokio::test]
    async fn rmcp_saves_keep_the_client_secret() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::new(dir.path().join(CREDENTIALS_FILE));
        let key = key_of("https://h/mcp");
        let adapter = ServerCredentials::new(store.clone(), key.clone(), record("c1"));
        assert!(adapter.load().await.unwrap().is_none());
        adapter
            .save(StoredCredentials::new(
                "c1".into(),
                None,
                vec!["b".into()],
                Some(5),
            ))
            .await
            .unwrap();
        let row = store.get(&key).unwrap().unwrap();
        assert_eq!(row.client_secret.as_deref(), Some("client-secret-value"));
        assert_eq!(row.granted_scopes, ["b"]);
        assert_eq!(row.received_at, Some(5));
        let loaded = adapter.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "c1");
        adapter.clear().await.unwrap();
        assert!(adapter.load().await.unwrap().is_none());
    }
}
