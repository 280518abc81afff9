//! MCP bundles (`.mcpb`): a zip archive with a `manifest.json` whose `server.mcp_config` says
//! how to start the server. Downloaded, checked against the registry's `fileSha256`, and
//! unpacked into `$XDG_DATA_HOME/mcpr/bundles/`.
//!
//! The archive is unpacked into a temporary directory next to the final one and renamed into
//! place only when complete, so a failure leaves nothing behind. Entries that would land outside
//! the directory, and symbolic links, are refused.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::RegistryError;
use super::install::BundleCommand;
use super::model::Package;

/// Largest bundle downloaded.
pub const MAX_BUNDLE: usize = 256 * 1024 * 1024;

/// Largest total size of the unpacked files (a zip bomb stops here).
const MAX_UNPACKED: u64 = 1024 * 1024 * 1024;

/// An unpacked bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct UnpackedBundle {
    /// Where it was unpacked.
    pub dir: PathBuf,
    /// Whether this call created `dir` (so that a later failure may remove it again).
    pub created: bool,
    /// How to start it.
    pub command: BundleCommand,
}

/// Download the bundle of `package` (its `identifier` is the URL), check its SHA-256 and unpack
/// it under `bundles_dir`; an unpacked copy with the same digest is reused.
///
/// Downloads with the process's shared HTTP client; [`install_bundle_with`] takes another.
pub async fn install_bundle(
    server: &str,
    package: &Package,
    bundles_dir: &Path,
) -> Result<UnpackedBundle, RegistryError> {
    install_bundle_with(
        &crate::net::HttpClient::shared(),
        server,
        package,
        bundles_dir,
    )
    .await
}

/// [`install_bundle`], downloading with `http` (e.g. [`super::RegistryClient::http_client`]).
pub async fn install_bundle_with(
    http: &crate::net::HttpClient,
    server: &str,
    package: &Package,
    bundles_dir: &Path,
) -> Result<UnpackedBundle, RegistryError> {
    let url = &package.identifier;
    let bad = |message: String| RegistryError::Bundle {
        server: server.to_owned(),
        message,
    };
    let expected = package
        .file_sha256
        .as_deref()
        .map(str::to_ascii_lowercase)
        .ok_or_else(|| {
            bad("the registry gives no fileSha256; mcpr does not run an unchecked download".into())
        })?;
    let parsed =
        reqwest::Url::parse(url).map_err(|e| bad(format!("bad download URL `{url}`: {e}")))?;
    if !crate::net::is_secure_url(&parsed) {
        return Err(bad(format!("refusing to download `{url}`: not https")));
    }
    let bytes = super::client::fetch(http, url, MAX_BUNDLE).await?;
    let actual = crate::fsutil::hex(&Sha256::digest(&bytes));
    if actual != expected {
        return Err(bad(format!(
            "fileSha256 mismatch for {url}: the registry says {expected}, the download is {actual}"
        )));
    }
    let slug: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = bundles_dir.join(format!("{slug}-{}", &actual[..16]));
    if dir.join("manifest.json").is_file()
        && let Ok(command) = read_manifest(&dir)
    {
        return Ok(UnpackedBundle {
            dir,
            created: false,
            command,
        });
    }
    std::fs::create_dir_all(bundles_dir).map_err(|e| {
        bad(format!(
            "cannot create {}: {e}",
            crate::fsutil::display_path(bundles_dir)
        ))
    })?;
    let tmp = bundles_dir.join(format!(".{slug}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = unpack(&bytes, &tmp)
        .and_then(|()| read_manifest(&tmp).map(|_| ()))
        .and_then(|()| {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::rename(&tmp, &dir).map_err(|e| format!("cannot move it into place: {e}"))
        });
    if let Err(message) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(bad(message));
    }
    let command = read_manifest(&dir).map_err(bad)?;
    Ok(UnpackedBundle {
        dir,
        created: true,
        command,
    })
}

fn unpack(bytes: &[u8], into: &Path) -> Result<(), String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("not a zip archive: {e}"))?;
    std::fs::create_dir_all(into)
        .map_err(|e| format!("cannot create {}: {e}", crate::fsutil::display_path(into)))?;
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| format!("bad archive entry {i}: {e}"))?;
        let name = entry.name().to_owned();
        let relative = entry
            .enclosed_name()
            .ok_or_else(|| format!("archive entry `{name}` points outside the bundle"))?;
        let mode = entry.unix_mode().unwrap_or(0o644);
        if mode & 0o170000 == 0o120000 {
            return Err(format!("archive entry `{name}` is a symbolic link"));
        }
        let path = into.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| format!("{name}: {e}"))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{name}: {e}"))?;
        }
        let mut data = Vec::new();
        (&mut entry)
            .take(MAX_UNPACKED.saturating_sub(total) + 1)
            .read_to_end(&mut data)
            .map_err(|e| format!("{name}: {e}"))?;
        total += data.len() as u64;
        if total > MAX_UNPACKED {
            return Err(format!("unpacked bundle larger than {MAX_UNPACKED} bytes"));
        }
        std::fs::write(&path, &data).map_err(|e| format!("{name}: {e}"))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let perms =
                std::fs::Permissions::from_mode(if mode & 0o111 != 0 { 0o755 } else { 0o644 });
            let _ = std::fs::set_permissions(&path, perms);
        }
    }
    Ok(())
}

/// `server.mcp_config` of the bundle's `manifest.json`, with `${__dirname}` replaced by `dir`.
fn read_manifest(dir: &Path) -> Result<BundleCommand, String> {
    let text = std::fs::read_to_string(dir.join("manifest.json"))
        .map_err(|e| format!("manifest.json: {e}"))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("manifest.json: {e}"))?;
    let config = manifest
        .pointer("/server/mcp_config")
        .ok_or("manifest.json: no `server.mcp_config`")?;
    let dirname = dir.to_string_lossy();
    let fill = |value: &str| -> Result<String, String> {
        if value.contains("${user_config.") {
            return Err(format!(
                "manifest.json: `{value}` needs a bundle user_config value, which mcpr does not ask for"
            ));
        }
        Ok(value.replace("${__dirname}", &dirname))
    };
    let command = config
        .get("command")
        .and_then(|c| c.as_str())
        .filter(|c| !c.is_empty())
        .ok_or("manifest.json: `server.mcp_config.command` is missing")?;
    let mut args = Vec::new();
    for arg in config
        .get("args")
        .and_then(|a| a.as_array())
        .into_iter()
        .flatten()
    {
        let arg = arg
            .as_str()
            .ok_or("manifest.json: `server.mcp_config.args` must be strings")?;
        args.push(fill(arg)?);
    }
    let mut env = BTreeMap::new();
    for (key, value) in config
        .get("env")
        .and_then(|e| e.as_object())
        .into_iter()
        .flatten()
    {
        let value = value
            .as_str()
            .ok_or("manifest.json: `server.mcp_config.env` values must be strings")?;
        env.insert(key.clone(), fill(value)?);
    }
    Ok(BundleCommand {
        command: fill(command)?,
        args,
        env,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn archive(entries: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut buf);
        for (name, mode, data) in entries {
            let options = zip::write::SimpleFileOptions::default().unix_permissions(*mode);
            if mode & 0o170000 == 0o120000 {
                zip.add_symlink(*name, std::str::from_utf8(data).unwrap(), options)
                    .unwrap();
            } else {
                zip.start_file(*name, options).unwrap();
                zip.write_all(data).unwrap();
            }
        }
        zip.finish().unwrap();
        buf.into_inner()
    }

    #[test]
    fn entries_escaping_the_bundle_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let into = root.path().join("bundle");
        for name in ["../escaped", "/etc/escaped", "a/../../escaped"] {
            let bytes = archive(&[("manifest.json", 0o644, b"{}"), (name, 0o644, b"x")]);
            let err = unpack(&bytes, &into).unwrap_err();
            assert!(err.contains("outside the bundle"), "{name}: {err}");
            assert!(!root.path().join("escaped").exists());
        }
    }

    #[test]
    fn symbolic_links_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let bytes = archive(&[("link", 0o120777, b"/etc/passwd")]);
        let err = unpack(&bytes, &root.path().join("b")).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
    }

    #[test]
    fn the_manifest_gives_the_command() {
        let root = tempfile::tempdir().unwrap();
        let manifest = br#"{"server": {"mcp_config": {"command": "node",
            "args": ["${__dirname}/server/index.js"], "env": {"A": "b"}}}}"#;
        unpack(&archive(&[("manifest.json", 0o644, manifest)]), root.path()).unwrap();
        let command = read_manifest(root.path()).unwrap();
        assert_eq!(command.command, "node");
        assert_eq!(
            command.args,
            [format!("{}/server/index.js", root.path().display())]
        );
        let manifest = br#"{"server": {"mcp_config": {"command": "node",
            "args": ["${user_config.key}"]}}}"#;
        std::fs::write(root.path().join("manifest.json"), manifest).unwrap();
        assert!(
            read_manifest(root.path())
                .unwrap_err()
                .contains("user_config")
        );
    }
}
