//! Where mcpr keeps its files on disk and how it reads and writes them: the XDG base
//! directories, private (0700) directories (and [`PrivateDir`], one held open so that no link
//! is followed in it), private (0600) files, atomic replacement, bounded reads of regular files,
//! hex digests, and the one form in which messages show a path
//! (`~/...` inside the home).
//!
//! A leaf module: it uses nothing else of the crate, so every other module (config, auth,
//! cache, registry, the CLI) can depend on it without an import cycle.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Name of mcpr's directory inside each XDG base directory (`~/.local/share/mcpr`, ...).
pub const APP_DIR: &str = "mcpr";

/// One of the XDG base directories mcpr uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaseDir {
    /// `$XDG_CONFIG_HOME`, default `~/.config`: the user's config files.
    Config,
    /// `$XDG_DATA_HOME`, default `~/.local/share`: credentials, trust, secrets, bundles.
    Data,
    /// `$XDG_CACHE_HOME`, default `~/.cache`: the tool-list cache.
    Cache,
    /// `$XDG_STATE_HOME`, default `~/.local/state`: the shell history.
    State,
}

impl BaseDir {
    /// The environment variable that overrides it.
    pub fn variable(self) -> &'static str {
        match self {
            BaseDir::Config => "XDG_CONFIG_HOME",
            BaseDir::Data => "XDG_DATA_HOME",
            BaseDir::Cache => "XDG_CACHE_HOME",
            BaseDir::State => "XDG_STATE_HOME",
        }
    }

    /// The default, relative to the home directory.
    pub fn under_home(self) -> &'static str {
        match self {
            BaseDir::Config => ".config",
            BaseDir::Data => ".local/share",
            BaseDir::Cache => ".cache",
            BaseDir::State => ".local/state",
        }
    }

    /// The base directory: the variable when it is set and absolute (the XDG spec says a
    /// relative one is invalid and must be ignored), else its default under `home`.
    /// `var` looks a variable up, so that callers can pass a fixed environment in tests.
    pub fn resolve(
        self,
        var: impl Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> Option<PathBuf> {
        var(self.variable())
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| home.map(|home| home.join(self.under_home())))
    }

    /// mcpr's directory inside this base directory, from the process environment.
    pub fn app_dir(self) -> Option<PathBuf> {
        self.dir_of(APP_DIR)
    }

    /// This base directory joined with `app`, for a host whose state lives under its own
    /// directory name, from the process environment.
    pub fn dir_of(self, app: &str) -> Option<PathBuf> {
        let home = process_var("HOME").map(PathBuf::from);
        self.resolve(process_var, home.as_deref())
            .map(|dir| dir.join(app))
    }
}

/// A variable of the process environment, `None` when unset, empty or not Unicode.
fn process_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Where a host that opts into mcpr's per-user state keeps it: `$XDG_DATA_HOME/mcpr`, default
/// `~/.local/share/mcpr` (credentials, trust decisions, installed servers' secrets). `None`
/// when neither the variable nor a home directory is known.
pub fn default_state_dir() -> Option<PathBuf> {
    BaseDir::Data.app_dir()
}

/// Where the tool-list cache lives by default: `$XDG_CACHE_HOME/mcpr`, default `~/.cache/mcpr`.
pub fn default_cache_dir() -> Option<PathBuf> {
    BaseDir::Cache.app_dir()
}

/// Create `dir` and its missing parents, mode 0700 on Unix: the files mcpr keeps are private.
/// An existing directory is left as it is.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Make an existing directory private (0700 on Unix; nothing elsewhere).
pub fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// A private directory held open by a handle: files are created, checked and removed relative
/// to it, so that a symbolic link put in place of the directory, or of an entry in it, is never
/// followed.
///
/// For directories whose files mcpr also deletes on its own (the spill folder of cut tool
/// outputs): a directory reached through a link could delete or expose files elsewhere.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
    fd: std::os::fd::OwnedFd,
}

impl PrivateDir {
    /// Open `dir`, creating it and its missing parents with mode 0700; an existing `dir` is
    /// made 0700 again. Refused, with an error naming `dir`: a `dir` that is itself a symbolic
    /// link (its parents may be links), that is not a directory, or that belongs to another
    /// user.
    pub fn open(dir: &Path) -> std::io::Result<PrivateDir> {
        use rustix::fs::{Mode, OFlags};
        let refuse = |why: &str| {
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{} {why}", display_path(dir)),
            )
        };
        if std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(refuse("is a symbolic link"));
        }
        let failed = |what: &str, e: std::io::Error| {
            std::io::Error::new(
                e.kind(),
                format!("cannot {what} {}: {e}", display_path(dir)),
            )
        };
        create_private_dir(dir).map_err(|e| failed("create", e))?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(rustix::fs::CWD, dir, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Swapped for a link since the check above.
            Err(rustix::io::Errno::LOOP) => return Err(refuse("is a symbolic link")),
            Err(rustix::io::Errno::NOTDIR) => return Err(refuse("is not a directory")),
            Err(e) => return Err(failed("open", e.into())),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| failed("read", e.into()))?;
        if stat.st_uid != rustix::process::geteuid().as_raw() {
            return Err(refuse("belongs to another user"));
        }
        if stat.st_mode & 0o7777 != 0o700 {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700))
                .map_err(|e| failed("make private", e.into()))?;
        }
        Ok(PrivateDir {
            path: dir.to_owned(),
            fd,
        })
    }

    /// The directory's path, as it was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create the new file `name` (one path component) in the directory, mode 0600. An
    /// existing entry of that name, a link included, is an error.
    pub fn create_new(&self, name: &str) -> std::io::Result<std::fs::File> {
        use rustix::fs::{Mode, OFlags};
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{}` is not a file name", name.escape_debug()),
            ));
        }
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o600))?;
        Ok(std::fs::File::from(fd))
    }

    /// Remove the regular files of this directory that belong to this user, were last
    /// modified before `before`, and whose names `wanted` accepts; returns how many went.
    /// Links, directories and anything else are never removed, nor followed (best effort: an
    /// entry that cannot be checked or removed is left).
    pub fn remove_files_older_than(
        &self,
        before: std::time::SystemTime,
        wanted: impl Fn(&str) -> bool,
    ) -> usize {
        use rustix::fs::{AtFlags, FileType};
        let Ok(before) = before.duration_since(std::time::UNIX_EPOCH) else {
            return 0;
        };
        let before = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
        let Ok(entries) = rustix::fs::Dir::read_from(&self.fd) else {
            return 0;
        };
        let me = rustix::process::geteuid().as_raw();
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_str().is_ok_and(&wanted) {
                continue;
            }
            let Ok(stat) = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            // `st_mtime` is a C long, whose width depends on the target.
            #[allow(clippy::unnecessary_cast)]
            let modified = stat.st_mtime as i64;
            let is_file = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile;
            if is_file
                && stat.st_uid == me
                && modified < before
                && rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()).is_ok()
            {
                removed += 1;
            }
        }
        removed
    }
}

/// Create the parent directory of `file` (see [`create_private_dir`]).
pub fn create_private_parent(file: &Path) -> std::io::Result<()> {
    match file.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => create_private_dir(dir),
        None => Ok(()),
    }
}

/// Make `path` readable by its owner only (0600 on Unix; nothing elsewhere).
pub fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Create `path` if missing, mode 0600, without touching an existing file's content; then make
/// sure its mode is 0600. Used before a database opens a file, since its journals copy the mode.
pub fn touch_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?;
    make_private(path)
}

/// Write `bytes` to `path` atomically with mode 0600, creating missing directories (0700).
///
/// A reader sees the old file or the new one, never half of one. When `path` is a symbolic
/// link, the file it points to is replaced and the link is kept (dotfile managers link config
/// files into place).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with_mode(path, bytes, None)
}

/// [`write_atomic`], but the new file keeps the permissions of the one it replaces (another
/// tool's config, which that tool may have made readable to others); a new file is 0600.
pub fn write_atomic_keeping_mode(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(resolve_links(path)?)
            .ok()
            .map(|meta| meta.permissions().mode() & 0o7777)
    };
    #[cfg(not(unix))]
    let mode = None;
    write_atomic_with_mode(path, bytes, mode)
}

/// The temp file is created 0600 (never readable by others while being written), then given
/// `mode` when one is asked for, before it replaces the old file.
fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let target = resolve_links(path)?;
    let path = target.as_path();
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        // Make the rename itself durable; not all platforms can open a directory.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The file a chain of symbolic links ends at (relative targets are taken from the link's
/// directory); `path` itself when it is not a link or does not exist.
pub(crate) fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut path = path.to_owned();
    // Bounded, so that a link cycle is an error rather than a hang.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Read `path` when it is a regular file of at most `max` bytes.
///
/// The file is opened without blocking and checked on the open handle, so that a FIFO (whose
/// open blocks until a writer comes), a device (`/dev/zero` never ends) or a file swapped for
/// one after a check can neither hang the caller nor fill its memory. A directory is an error
/// of kind [`std::io::ErrorKind::IsADirectory`].
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
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

/// A path as messages show it: `~/...` inside the home directory (`$HOME`), absolute
/// otherwise. Every message that names a file uses this one form, in the library and the CLI.
pub fn display_path(path: &Path) -> String {
    let home = process_var("HOME")
        .map(PathBuf::from)
        .or_else(std::env::home_dir);
    display_path_in(path, home.as_deref())
}

fn display_path_in(path: &Path, home: Option<&Path>) -> String {
    match home.filter(|h| !h.as_os_str().is_empty() && h != &Path::new("/")) {
        Some(home) => match path.strip_prefix(home) {
            Ok(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        },
        None => path.display().to_string(),
    }
}

/// Lower-case hex of `bytes` (digests in file names, cache keys and trust records).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_in_the_home_are_shown_with_a_tilde() {
        let home = Some(Path::new("/home/u"));
        let shown = |p: &str| display_path_in(Path::new(p), home);
        assert_eq!(
            shown("/home/u/.config/mcpr/mcp.json"),
            "~/.config/mcpr/mcp.json"
        );
        assert_eq!(shown("/home/u"), "~");
        assert_eq!(shown("/home/user2/x"), "/home/user2/x");
        assert_eq!(shown("/etc/x"), "/etc/x");
        assert_eq!(display_path_in(Path::new("/x"), None), "/x");
    }

    #[test]
    fn base_dirs_take_absolute_variables_and_fall_back_to_home() {
        let home = Path::new("/home/u");
        let env = |value: &'static str| move |_: &str| Some(value.to_owned());
        assert_eq!(
            BaseDir::Data.resolve(env("/x/data"), Some(home)),
            Some(PathBuf::from("/x/data"))
        );
        // A relative value is invalid per the XDG spec and ignored.
        assert_eq!(
            BaseDir::State.resolve(env("rel"), Some(home)),
            Some(PathBuf::from("/home/u/.local/state"))
        );
        assert_eq!(
            BaseDir::Cache.resolve(|_: &str| None, Some(home)),
            Some(PathBuf::from("/home/u/.cache"))
        );
        assert_eq!(BaseDir::Config.resolve(|_: &str| None, None), None);
    }

    #[test]
    fn hex_is_lower_case_and_two_digits_a_byte() {
        assert_eq!(hex(&[0, 15, 16, 255]), "000f10ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn atomic_writes_are_private_and_keep_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("sub/real.json");
        write_atomic(&real, b"one").unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"one");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&real).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(real.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dir_mode & 0o777, 0o700);
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            write_atomic(&link, b"two").unwrap();
            assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
            assert_eq!(std::fs::read(&real).unwrap(), b"two");
        }
    }
}
