//! The key that seals the gateway's `requestState`s, and the file through which replicas share
//! it.
//!
//! Every `requestState` the gateway gives a 2026-07-28 client is sealed (see `request_state`)
//! under a 256-bit key. Without a key file the key is made for the process, and only that
//! process can open its states. Gateway replicas behind one load balancer share one key
//! through a file ([`StateKeyFile`]), so that a client's retry may reach any of them.
//!
//! The file is JSON, written with mode 0600 by [`StateKeyFile::generate`] and
//! [`StateKeyFile::rotate`]:
//!
//! ```json
//! {"mcprStateKey": 1, "key": "<32 bytes, base64>", "previous": "<32 bytes>", "rotatedAt": 1767225600}
//! ```
//!
//! Rotating makes a new `key` and keeps the old one as `previous`, which is still accepted
//! (never used to seal) until `rotatedAt` plus the gateway's grace: the longest a call waits
//! for its client's answers, plus [`ROTATION_SLACK`]. A running gateway picks a rotated file up
//! without a restart: it looks at the file (size, modification time, inode) at most every
//! [`CHECK_EVERY`] when it seals a state, and at most every [`CHECK_MISSED_EVERY`] when a state
//! names a key it does not hold; it reads the file again only when it changed. A file that
//! became unreadable or malformed meanwhile leaves the keys in memory as they were, with a
//! warning naming the file.
//!
//! At start-up ([`StateKeyFile::load`]) a file that is missing, unreadable, open to other
//! users or malformed is an error naming the file ([`StateKeyError`]). No message shows a key.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{AES_256_GCM, LessSafeKey, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::fsutil::display_path;

/// How long after the gateway's longest wait for a client a rotated-out key is still accepted:
/// time for every replica to notice the rotation, and for clocks that disagree a little.
pub const ROTATION_SLACK: Duration = Duration::from_secs(60);

/// How often, at most, sealing a state looks whether the key file changed.
pub const CHECK_EVERY: Duration = Duration::from_secs(2);

/// How often, at most, a state sealed under a key the gateway does not hold makes it look
/// whether the key file changed (such states may come by the thousand from a hostile client).
pub const CHECK_MISSED_EVERY: Duration = Duration::from_millis(200);

/// Bytes of a key (AES-256).
const KEY_BYTES: usize = 32;

/// Larger files are not key files.
const MAX_FILE_BYTES: u64 = 4 * 1024;

/// The field that names the file's format, and the format this code writes and reads.
const FORMAT_FIELD: &str = "mcprStateKey";
const FORMAT: u64 = 1;

/// Why a state key file cannot be used. Each names the file; none shows a key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateKeyError {
    /// There is no such file.
    #[error("state key file {}: no such file", display_path(path))]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// It cannot be read (permissions, a directory, an I/O error).
    #[error("state key file {}: cannot read it: {reason}", display_path(path))]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Other users may read or write it: whoever reads it can forge states.
    #[error(
        "state key file {}: other users may read or write it (mode {mode:03o}); it must be \
         private to its owner (0600 or 0400)",
        display_path(path)
    )]
    Shared {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Its content is not a state key file.
    #[error("state key file {}: {reason}", display_path(path))]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong (never the key).
        reason: String,
    },
    /// A new key would replace the one in use.
    #[error(
        "state key file {}: exists already (replacing its key would break the calls waiting \
         under it; rotate it instead)",
        display_path(path)
    )]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// It cannot be written.
    #[error("state key file {}: cannot write it: {reason}", display_path(path))]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The system's random generator failed, so no key could be made.
    #[error(
        "state key file {}: the system's random generator failed: {reason}",
        display_path(path)
    )]
    NoRandomness {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl StateKeyError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            StateKeyError::Missing { path }
            | StateKeyError::Unreadable { path, .. }
            | StateKeyError::Shared { path, .. }
            | StateKeyError::Malformed { path, .. }
            | StateKeyError::Exists { path }
            | StateKeyError::Write { path, .. }
            | StateKeyError::NoRandomness { path, .. } => path,
        }
    }
}

/// A state key file, read and checked: give it to
/// [`GatewayOptions::state_key`](super::GatewayOptions::state_key) so that gateway replicas
/// that share the file can each resume the calls of the others' clients. Its `Debug` shows the
/// path only.
///
/// ```no_run
/// use mcp_runtime::gateway::{GatewayOptions, StateKeyFile};
///
/// # fn demo() -> Result<(), mcp_runtime::gateway::StateKeyError> {
/// // Once, then copy the file to every replica (or mount it as a secret).
/// StateKeyFile::generate("/etc/mcpr/state.key")?;
/// // On each replica, at start-up.
/// let key = StateKeyFile::load("/etc/mcpr/state.key")?;
/// let options = GatewayOptions::default().with_state_key(Some(key));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct StateKeyFile {
    path: PathBuf,
    contents: Arc<Contents>,
    /// The file as it was when read, to tell a later change.
    signature: Option<Signature>,
}

impl std::fmt::Debug for StateKeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKeyFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl StateKeyFile {
    /// Read the key file at `path`, refusing one that is missing, unreadable, readable or
    /// writable by other users (any group or other permission bit), or malformed.
    pub fn load(path: impl Into<PathBuf>) -> Result<StateKeyFile, StateKeyError> {
        let path = path.into();
        let signature = Signature::of(&path);
        let contents = read_checked(&path)?;
        Ok(StateKeyFile {
            path,
            contents: Arc::new(contents),
            signature,
        })
    }

    /// Write a new random key to `path` (mode 0600, missing directories 0700) and read it
    /// back. An existing file is never replaced: its key may be in use (see
    /// [`rotate`](Self::rotate)).
    pub fn generate(path: impl Into<PathBuf>) -> Result<StateKeyFile, StateKeyError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = path.into();
        let contents = Contents {
            key: fresh_key(&path)?,
            previous: None,
        };
        let write = |e: std::io::Error| StateKeyError::Write {
            path: path.clone(),
            reason: e.to_string(),
        };
        crate::fsutil::create_private_parent(&path).map_err(write)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => StateKeyError::Exists { path: path.clone() },
                _ => write(e),
            })?;
        file.write_all(contents.to_text().as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(write)?;
        drop(file);
        StateKeyFile::load(path)
    }

    /// Replace the key in the file at `path` by a new random one, keeping the old one as the
    /// previous key (accepted for a grace, see the module), and read it back. The file is
    /// replaced atomically (mode 0600): a gateway reading it meanwhile sees the old file or
    /// the new one. Only one previous key is kept: rotating again drops the oldest.
    pub fn rotate(path: impl Into<PathBuf>) -> Result<StateKeyFile, StateKeyError> {
        let path = path.into();
        let old = read_checked(&path)?;
        let contents = Contents {
            key: fresh_key(&path)?,
            previous: Some(Previous {
                key: old.key,
                rotated_at: unix_now(),
            }),
        };
        crate::fsutil::write_atomic(&path, contents.to_text().as_bytes()).map_err(|e| {
            StateKeyError::Write {
                path: path.clone(),
                reason: e.to_string(),
            }
        })?;
        StateKeyFile::load(path)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file keeps a previous key, and when it was rotated out.
    pub fn rotated_at(&self) -> Option<SystemTime> {
        self.contents
            .previous
            .map(|previous| UNIX_EPOCH + Duration::from_secs(previous.rotated_at))
    }
}

/// What a key file holds.
struct Contents {
    key: [u8; KEY_BYTES],
    previous: Option<Previous>,
}

/// The key a rotation replaced, and when (seconds since the Unix epoch).
#[derive(Clone, Copy)]
struct Previous {
    key: [u8; KEY_BYTES],
    rotated_at: u64,
}

impl Contents {
    /// Read a key file's bytes. The messages name fields, never their values.
    fn parse(bytes: &[u8]) -> Result<Contents, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("not a state key file (JSON expected: {e})"))?;
        let Value::Object(fields) = value else {
            return Err("not a state key file (a JSON object expected)".into());
        };
        if let Some(unknown) = fields
            .keys()
            .find(|k| ![FORMAT_FIELD, "key", "previous", "rotatedAt"].contains(&k.as_str()))
        {
            return Err(format!("unknown field `{unknown}`"));
        }
        match fields.get(FORMAT_FIELD).and_then(Value::as_u64) {
            Some(FORMAT) => {}
            Some(other) => return Err(format!("`{FORMAT_FIELD}` is {other}; this mcpr reads 1")),
            None => return Err(format!("`{FORMAT_FIELD}: 1` is missing")),
        }
        let key = |field: &str| -> Result<[u8; KEY_BYTES], String> {
            let text = fields
                .get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("`{field}` must be a string"))?;
            decode_key(text.trim()).ok_or_else(|| {
                format!("`{field}` must be {KEY_BYTES} bytes in base64 (standard or URL-safe)")
            })
        };
        let previous = match (fields.get("previous"), fields.get("rotatedAt")) {
            (None, None) => None,
            (Some(_), Some(rotated_at)) => Some(Previous {
                key: key("previous")?,
                rotated_at: rotated_at
                    .as_u64()
                    .ok_or("`rotatedAt` must be seconds since 1970 (a whole number)")?,
            }),
            (Some(_), None) => return Err("`previous` comes without `rotatedAt`".into()),
            (None, Some(_)) => return Err("`rotatedAt` comes without `previous`".into()),
        };
        Ok(Contents {
            key: key("key")?,
            previous,
        })
    }

    fn to_text(&self) -> String {
        let mut value = json!({FORMAT_FIELD: FORMAT, "key": URL_SAFE_NO_PAD.encode(self.key)});
        if let Some(previous) = &self.previous {
            value["previous"] = URL_SAFE_NO_PAD.encode(previous.key).into();
            value["rotatedAt"] = previous.rotated_at.into();
        }
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// 32 bytes from base64 of either alphabet, padded or not.
fn decode_key(text: &str) -> Option<[u8; KEY_BYTES]> {
    [URL_SAFE_NO_PAD, URL_SAFE, STANDARD, STANDARD_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
        .and_then(|bytes| bytes.try_into().ok())
}

/// Read `path` as a key file, checking that it is private first.
fn read_checked(path: &Path) -> Result<Contents, StateKeyError> {
    use std::os::unix::fs::PermissionsExt as _;
    let unreadable = |e: std::io::Error| StateKeyError::Unreadable {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    // Follows a symbolic link (secrets are often mounted as links): the file read counts.
    let metadata = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StateKeyError::Missing {
            path: path.to_owned(),
        },
        _ => unreadable(e),
    })?;
    let mode = metadata.permissions().mode() & 0o777;
    if metadata.is_file() && mode & 0o077 != 0 {
        return Err(StateKeyError::Shared {
            path: path.to_owned(),
            mode,
        });
    }
    let bytes = crate::fsutil::read_regular(path, MAX_FILE_BYTES).map_err(unreadable)?;
    Contents::parse(&bytes).map_err(|reason| StateKeyError::Malformed {
        path: path.to_owned(),
        reason,
    })
}

/// A new key from the system's generator, which must not fail here: a key file outlives the
/// process, and a guessable key would let anyone forge states for every replica.
fn fresh_key(path: &Path) -> Result<[u8; KEY_BYTES], StateKeyError> {
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(|e| StateKeyError::NoRandomness {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(key)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// What tells a changed file: where it is on disk, its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Signature {
    device: u64,
    inode: u64,
    len: u64,
    modified: (i64, i64),
}

impl Signature {
    /// `path`'s, following links; `None` when it cannot be looked at.
    fn of(path: &Path) -> Option<Signature> {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::metadata(path).ok()?;
        Some(Signature {
            device: metadata.dev(),
            inode: metadata.ino(),
            len: metadata.len(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
        })
    }
}

/// One key as the gateway seals and opens with it.
pub(crate) struct SealingKey {
    /// Names the key in the states it seals (derived from the key; says nothing of it).
    pub(crate) id: [u8; 4],
    pub(crate) aead: LessSafeKey,
}

impl SealingKey {
    fn new(bytes: &[u8; KEY_BYTES]) -> Option<SealingKey> {
        let mut named = b"mcpr requestState key id\0".to_vec();
        named.extend_from_slice(bytes);
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &named);
        let id = digest.as_ref().get(..4)?.try_into().ok()?;
        let aead = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, bytes).ok()?);
        Some(SealingKey { id, aead })
    }
}

/// The keys in use: the one that seals, and a rotated-out one still accepted until a time.
pub(crate) struct Keys {
    pub(crate) current: SealingKey,
    previous: Option<(SealingKey, SystemTime)>,
}

impl Keys {
    fn of(contents: &Contents, grace: Duration) -> Option<Keys> {
        let previous = match &contents.previous {
            Some(previous) => {
                let until =
                    UNIX_EPOCH + Duration::from_secs(previous.rotated_at) + grace + ROTATION_SLACK;
                Some((SealingKey::new(&previous.key)?, until))
            }
            None => None,
        };
        Some(Keys {
            current: SealingKey::new(&contents.key)?,
            previous,
        })
    }

    /// The key named `id`, if it is accepted now.
    pub(crate) fn get(&self, id: &[u8; 4]) -> Option<&SealingKey> {
        if self.current.id == *id {
            return Some(&self.current);
        }
        self.previous
            .as_ref()
            .filter(|(key, until)| key.id == *id && SystemTime::now() < *until)
            .map(|(key, _)| key)
    }
}

/// The gateway's keys, from its key file (looked at again now and then) or made for the
/// process.
pub(crate) struct Keyring {
    keys: Mutex<Arc<Keys>>,
    file: Option<Watched>,
    grace: Duration,
}

/// The key file and what was last seen of it.
struct Watched {
    path: PathBuf,
    seen: Mutex<Seen>,
}

struct Seen {
    signature: Option<Signature>,
    checked: Instant,
}

impl Keyring {
    /// A key of this process alone, or (with `file`) the file's keys, a rotated-out one
    /// accepted for `grace` after its rotation (plus [`ROTATION_SLACK`]).
    pub(crate) fn new(file: Option<&StateKeyFile>, grace: Duration) -> Keyring {
        let from_file = file.and_then(|file| Some((file, Keys::of(&file.contents, grace)?)));
        match from_file {
            Some((file, keys)) => Keyring {
                keys: Mutex::new(Arc::new(keys)),
                file: Some(Watched {
                    path: file.path.clone(),
                    seen: Mutex::new(Seen {
                        signature: file.signature,
                        checked: Instant::now(),
                    }),
                }),
                grace,
            },
            None => Keyring::for_process(grace),
        }
    }

    fn for_process(grace: Duration) -> Keyring {
        let contents = Contents {
            key: random_bytes(),
            previous: None,
        };
        // AES-256 takes any 32 bytes, and a digest has more than 4.
        let keys = Keys::of(&contents, grace).expect("a 32-byte AES-256 key");
        Keyring {
            keys: Mutex::new(Arc::new(keys)),
            file: None,
            grace,
        }
    }

    /// The keys to seal with (the file looked at first, at most every [`CHECK_EVERY`]).
    pub(crate) fn sealing(&self) -> Arc<Keys> {
        self.look_at_file(CHECK_EVERY);
        self.current()
    }

    /// The keys, if one named `id` is accepted; when none is, the file is looked at first
    /// (at most every [`CHECK_MISSED_EVERY`]): another replica may have read a rotated file
    /// before this one.
    pub(crate) fn holding(&self, id: &[u8; 4]) -> Option<Arc<Keys>> {
        let keys = self.current();
        if keys.get(id).is_some() {
            return Some(keys);
        }
        self.look_at_file(CHECK_MISSED_EVERY);
        let keys = self.current();
        keys.get(id).is_some().then_some(keys)
    }

    fn current(&self) -> Arc<Keys> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Read the key file again if it changed since it was last looked at, unless that was
    /// less than `every` ago.
    fn look_at_file(&self, every: Duration) {
        let Some(file) = &self.file else { return };
        let mut seen = file.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.checked.elapsed() < every {
            return;
        }
        seen.checked = Instant::now();
        let signature = Signature::of(&file.path);
        if signature == seen.signature {
            return;
        }
        // Noted even when the file cannot be used: one warning per change, not per state.
        seen.signature = signature;
        let read = read_checked(&file.path).and_then(|contents| {
            Keys::of(&contents, self.grace).ok_or_else(|| StateKeyError::Malformed {
                path: file.path.clone(),
                reason: "the key cannot be used".into(),
            })
        });
        match read {
            Ok(keys) => {
                *self.keys.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
                tracing::info!(
                    "gateway: state key file {} changed; its keys are in use now",
                    display_path(&file.path)
                );
            }
            Err(e) => tracing::warn!("gateway: {e}; the keys read before stay in use"),
        }
    }
}

/// 32 random bytes (a key of this process, names of calls), from the operating system's generator: aws-lc's
/// own would first seed itself from CPU jitter, some 20 ms of CPU on the gateway's way to its
/// first answer.
pub(crate) fn random_bytes() -> [u8; KEY_BYTES] {
    let mut bytes = [0u8; KEY_BYTES];
    if getrandom::fill(&mut bytes).is_err() {
        // The system's generator failed; the time and address still differ per process.
        let seed = format!("{:?}{:p}", SystemTime::now(), &bytes);
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, seed.as_bytes());
        bytes.copy_from_slice(digest.as_ref());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_generated_file_is_private_and_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/state.key");
        let file = StateKeyFile::generate(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(file.rotated_at().is_none());
        let again = StateKeyFile::generate(&path).unwrap_err();
        assert!(matches!(again, StateKeyError::Exists { .. }), "{again}");
        // The key is never in a message, nor in `Debug`.
        let key = std::fs::read_to_string(&path).unwrap();
        let written: Value = serde_json::from_str(&key).unwrap();
        let key = written["key"].as_str().unwrap();
        assert!(!format!("{file:?} {again}").contains(key));
    }

    #[test]
    fn bad_files_are_refused_naming_the_file_and_never_showing_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.key");
        let missing = StateKeyFile::load(&path).unwrap_err();
        assert!(
            matches!(missing, StateKeyError::Missing { .. }),
            "{missing}"
        );
        assert!(missing.to_string().contains("state.key"), "{missing}");

        StateKeyFile::generate(&path).unwrap();
        chmod(&path, 0o644);
        let shared = StateKeyFile::load(&path).unwrap_err();
        assert!(shared.to_string().contains("mode 644"), "{shared}");
        chmod(&path, 0o400);
        StateKeyFile::load(&path).expect("read-only for its owner is fine");
        chmod(&path, 0o600);

        let secret = URL_SAFE_NO_PAD.encode([9u8; 31]);
        for (text, needle) in [
            ("not json", "JSON expected"),
            ("[1]", "JSON object"),
            (r#"{"key": "x"}"#, "`mcprStateKey: 1` is missing"),
            (r#"{"mcprStateKey": 2, "key": "x"}"#, "this mcpr reads 1"),
            (r#"{"mcprStateKey": 1, "key": 5}"#, "`key` must be a string"),
            (
                &format!(r#"{{"mcprStateKey": 1, "key": "{secret}"}}"#),
                "32 bytes",
            ),
            (r#"{"mcprStateKey": 1, "kee": "x"}"#, "unknown field `kee`"),
            (
                &format!(r#"{{"mcprStateKey": 1, "key": "{secret}", "previous": "{secret}"}}"#),
                "without `rotatedAt`",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let error = StateKeyFile::load(&path).unwrap_err();
            let message = error.to_string();
            assert!(
                matches!(error, StateKeyError::Malformed { .. }),
                "{message}"
            );
            assert!(message.contains(needle), "{text}: {message}");
            assert!(message.contains("state.key"), "{message}");
            assert!(!message.contains(&secret), "{message}");
        }
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let directory = StateKeyFile::load(&path).unwrap_err();
        assert!(
            matches!(directory, StateKeyError::Unreadable { .. }),
            "{directory}"
        );
    }

    #[test]
    fn a_rotated_key_is_accepted_for_the_grace_then_no_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.key");
        let first = StateKeyFile::generate(&path).unwrap();
        let old = Keyring::new(Some(&first), Duration::from_secs(300));
        let old_id = old.sealing().current.id;
        let rotated = StateKeyFile::rotate(&path).unwrap();
        assert!(rotated.rotated_at().is_some());
        let ring = Keyring::new(Some(&rotated), Duration::from_secs(300));
        let keys = ring.sealing();
        assert_ne!(keys.current.id, old_id, "a new key seals");
        assert!(keys.get(&old_id).is_some(), "the old one is still accepted");
        // A grace long past (the rotation a day ago, the grace an hour).
        let mut contents = Contents::parse(&std::fs::read(&path).unwrap()).unwrap();
        if let Some(previous) = &mut contents.previous {
            previous.rotated_at -= 24 * 3600;
        }
        let keys = Keys::of(&contents, Duration::from_secs(3600)).unwrap();
        assert!(keys.get(&old_id).is_none(), "retired");
        // Rotating again drops the oldest key.
        let twice = StateKeyFile::rotate(&path).unwrap();
        let ring = Keyring::new(Some(&twice), Duration::from_secs(300));
        assert!(ring.sealing().get(&old_id).is_none());
    }

    #[test]
    fn a_running_keyring_picks_a_rotated_file_up_when_a_state_names_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.key");
        let file = StateKeyFile::generate(&path).unwrap();
        let ring = Keyring::new(Some(&file), Duration::from_secs(300));
        let old_id = ring.sealing().current.id;
        // Another replica rotates; this one learns of the new key from a state that names it.
        let rotated = StateKeyFile::rotate(&path).unwrap();
        let new_id = Keyring::new(Some(&rotated), Duration::from_secs(300))
            .sealing()
            .current
            .id;
        std::thread::sleep(CHECK_MISSED_EVERY);
        let keys = ring
            .holding(&new_id)
            .expect("re-read on a key it did not hold");
        assert_eq!(keys.current.id, new_id);
        assert!(keys.get(&old_id).is_some());
        // A file broken meanwhile keeps the keys in memory.
        std::fs::write(&path, "garbage").unwrap();
        std::thread::sleep(CHECK_EVERY);
        assert_eq!(ring.sealing().current.id, new_id);
        // A key nobody has is refused.
        assert!(ring.holding(&[0, 1, 2, 3]).is_none());
    }

    #[test]
    fn keys_from_other_tools_are_read_in_either_base64() {
        let bytes = [0xfbu8; KEY_BYTES];
        for engine in [URL_SAFE_NO_PAD, URL_SAFE, STANDARD, STANDARD_NO_PAD] {
            assert_eq!(decode_key(&engine.encode(bytes)), Some(bytes));
        }
        assert_eq!(decode_key("short"), None);
    }
}
