//! Who the host is to servers and on disk: the name and version sent as `clientInfo` (and as
//! the OAuth `client_name`), and the directory name its per-user state lives under. The default
//! is mcpr's; a host embedding the library passes its own.

/// The client's name and version, and the directory name of its per-user state.
///
/// ```
/// use mcp_runtime::ClientIdentity;
///
/// let ours = ClientIdentity::new("my-agent", "1.2.0");
/// assert_eq!(ours.data_dir, "my-agent");
/// assert_eq!(ClientIdentity::default().name, "mcpr");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientIdentity {
    /// Sent as `clientInfo.name` and registered as the OAuth `client_name`.
    pub name: String,
    /// Sent as `clientInfo.version`.
    pub version: String,
    /// The directory name under the user's cache and data directories (`~/.cache/<this>`,
    /// `~/.local/share/<this>`).
    pub data_dir: String,
}

impl ClientIdentity {
    /// A host called `name` at `version`, keeping its state in a directory of the same name.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        let name = name.into();
        ClientIdentity {
            data_dir: name.clone(),
            name,
            version: version.into(),
        }
    }

    /// Keep per-user state under `data_dir` instead of the name.
    pub fn with_data_dir(mut self, data_dir: impl Into<String>) -> Self {
        self.data_dir = data_dir.into();
        self
    }
}

impl Default for ClientIdentity {
    /// mcpr, at this library's version.
    fn default() -> Self {
        ClientIdentity::new("mcpr", env!("CARGO_PKG_VERSION"))
    }
}
