//! Reading one config file in the `{"mcpServers": {...}}` shape (Claude Code, Cursor, Claude
//! Desktop, `.mcp.json`), as named with `--config FILE`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ConfigError;
use super::{ServerConfig, server_from_json};

/// The largest config file read (user configs such as `~/.claude.json` also keep history).
pub(crate) const MAX_CONFIG_FILE: u64 = 64 * 1024 * 1024;

/// Read `path` when it is a regular file of at most `max` bytes.
///
/// The file is opened without blocking and checked on the open handle, so that a FIFO (whose
/// open blocks until a writer comes), a device (`/dev/zero` never ends) or a file swapped for
/// one after a check can neither hang the caller nor fill its memory. A directory is an error
/// of kind [`std::io::ErrorKind::IsADirectory`].
pub(crate) fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "larger than {} KiB",
            max / 1024
        )));
    }
    Ok(bytes)
}

/// A parsed config file: every server it names, valid or not, in file order.
#[derive(Debug)]
pub struct ConfigFile {
    /// Where the file was read from.
    pub path: PathBuf,
    /// One entry per server name.
    pub servers: Vec<ServerEntry>,
}

/// One server of a config file; an invalid entry keeps its error so the others still load.
#[derive(Debug)]
pub struct ServerEntry {
    /// The server's name exactly as written (may contain any character).
    pub name: String,
    /// The validated config, or why it is invalid.
    pub config: Result<ServerConfig, ConfigError>,
}

impl ConfigFile {
    /// The entry named `name`, if the file has one.
    pub fn server(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.iter().find(|entry| entry.name == name)
    }
}

/// Read and parse a config file.
///
/// A file that cannot be read or parsed is an error naming the path (and line and column for
/// syntax errors); an invalid server is kept as an error entry and does not fail the file.
pub fn load_config_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let bytes = read_regular(path, MAX_CONFIG_FILE).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| ConfigError::Read {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    parse_config_str(path, &text)
}

/// Parse config text as if read from `path` (used in messages only).
pub fn parse_config_str(path: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
    let root: Value = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })?;
    let servers = match root.get("mcpServers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, entry)| ServerEntry {
                name: name.clone(),
                config: server_from_json(name, entry).map_err(|e| e.in_file(path)),
            })
            .collect(),
        Some(_) => {
            return Err(ConfigError::Parse {
                path: path.to_owned(),
                line: line_of_key(text, "mcpServers"),
                column: 1,
                message: "`mcpServers` must be an object mapping names to servers".into(),
            });
        }
    };
    Ok(ConfigFile {
        path: path.to_owned(),
        servers,
    })
}

/// serde_json appends " at line L column C" to its messages; we print the position ourselves.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(idx) => message[..idx].to_owned(),
        None => message.to_owned(),
    }
}

fn line_of_key(text: &str, key: &str) -> usize {
    let needle = format!("\"{key}\"");
    text.lines()
        .position(|line| line.contains(&needle))
        .map_or(1, |idx| idx + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let err =
            parse_config_str(Path::new("/p/mcp.json"), "{\n  \"mcpServers\": {,}\n}").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("/p/mcp.json:2:"), "{text}");
    }

    #[test]
    fn an_invalid_server_does_not_hide_the_others() {
        let file = parse_config_str(
            Path::new("/p/mcp.json"),
            r#"{"mcpServers": {"good": {"command": "x"}, "bad": {"args": []}}}"#,
        )
        .unwrap();
        assert!(file.server("good").unwrap().config.is_ok());
        let bad = file
            .server("bad")
            .unwrap()
            .config
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("/p/mcp.json") && bad.contains("`bad`") && bad.contains("`command`"),
            "{bad}"
        );
    }
}
