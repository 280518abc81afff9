//! What trust binds to for a file or directory a server loads code from through a loader
//! variable (`PYTHONPATH=./lib`, see [`loaders`](super::loaders)). A file is bound like any
//! file a server runs ([`executable_identity`]). A directory is bound by each file under it in
//! the same way while it holds at most [`MAX_TREE_FILES`] files of at most [`MAX_TREE_BYTES`]
//! in all; past that, by one listing of the names, sizes and modification times of its first
//! [`MAX_TREE_ENTRIES`] entries, so that a start stays cheap while an added, removed, renamed
//! or resized file still asks again.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};
use walkdir::{DirEntry, WalkDir};

use super::{executable_identity, to_hex};

/// A directory with more files than this is bound by its listing instead of their content.
pub const MAX_TREE_FILES: usize = 1_000;

/// A directory whose files hold more bytes than this in all is bound by its listing instead of
/// their content (hashing it would slow every start).
pub const MAX_TREE_BYTES: u64 = 64 * 1024 * 1024;

/// The entries of a directory looked at, at most, when it is bound by its listing: a tree as
/// large as a whole checkout with its dependencies must not make every start walk all of it.
/// Entries past it (in name order) are not bound.
pub const MAX_TREE_ENTRIES: usize = 20_000;

/// Version-control bookkeeping, which no loader searches for code and which changes with
/// every commit or fetch.
const NOT_CODE: &[&str] = &[".git", ".hg", ".svn"];

/// What trust binds to for `path`: `(file, identity)` for a file; for a directory, the same
/// for each file under it (only its own files unless `nested`), or `(directory, listing
/// digest)` past the bounds. Empty when there is nothing readable there.
pub(crate) fn identities(path: &Path, nested: bool) -> Vec<(PathBuf, Vec<u8>)> {
    if !path.is_dir() {
        return executable_identity(path)
            .map(|identity| (path.to_owned(), identity))
            .into_iter()
            .collect();
    }
    let mut walk = WalkDir::new(path)
        .min_depth(1)
        .follow_links(true)
        .sort_by_file_name();
    if !nested {
        walk = walk.max_depth(1);
    }
    let mut files: Vec<(PathBuf, std::fs::Metadata)> = Vec::new();
    let mut seen = 0usize;
    let mut truncated = false;
    for entry in walk.into_iter().filter_entry(|e| !is_bookkeeping(e)) {
        seen += 1;
        if seen > MAX_TREE_ENTRIES {
            truncated = true;
            break;
        }
        // An unreadable entry or a loop of links loads nothing.
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_file() || is_checked_bytecode(entry.path()) {
            continue;
        }
        if let Ok(meta) = entry.metadata() {
            files.push((entry.into_path(), meta));
        }
    }
    let total: u64 = files.iter().map(|(_, meta)| meta.len()).sum();
    if !truncated && files.len() <= MAX_TREE_FILES && total <= MAX_TREE_BYTES {
        return files
            .into_iter()
            .filter_map(|(file, _)| Some((file.clone(), executable_identity(&file)?)))
            .collect();
    }
    let mut listing = Sha256::new();
    for (file, meta) in &files {
        let name = file.strip_prefix(path).unwrap_or(file).to_string_lossy();
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        listing.update((name.len() as u64).to_le_bytes());
        listing.update(name.as_bytes());
        listing.update(meta.len().to_le_bytes());
        listing.update(modified.to_le_bytes());
    }
    if truncated {
        listing.update(b"truncated");
    }
    vec![(path.to_owned(), to_hex(&listing.finalize()).into_bytes())]
}

fn is_bookkeeping(entry: &DirEntry) -> bool {
    entry.file_type().is_dir()
        && entry
            .file_name()
            .to_str()
            .is_some_and(|name| NOT_CODE.contains(&name))
}

/// Whether `path` is bytecode that Python writes into `__pycache__` by itself when it imports,
/// and checks against its source before use: binding it would ask again after every first
/// start. A `.pyc` there that Python would load unchecked (PEP 552 flags: hash-based, source
/// not checked) is never written by an import, so it is bound like any other file.
fn is_checked_bytecode(path: &Path) -> bool {
    let in_cache = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|dir| dir == "__pycache__");
    if !in_cache || path.extension().is_none_or(|ext| ext != "pyc") {
        return false;
    }
    let mut header = [0u8; 8];
    let read = std::fs::File::open(path).and_then(|mut file| file.read_exact(&mut header));
    let flags = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    read.is_ok() && flags & 0b11 != 0b01
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn a_small_tree_is_bound_file_by_file() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        write(&lib.join("a.py"), b"a");
        write(&lib.join("pkg/b.py"), b"b");
        write(&lib.join(".git/HEAD"), b"ref");
        // What an import writes, and what only an attacker would put there.
        let magic = [0x55, 0x0d, 0x0d, 0x0a];
        write(
            &lib.join("pkg/__pycache__/b.cpython-312.pyc"),
            &[&magic[..], &0u32.to_le_bytes()].concat(),
        );
        write(
            &lib.join("pkg/__pycache__/c.cpython-312.pyc"),
            &[&magic[..], &1u32.to_le_bytes()].concat(),
        );
        let names = |nested| -> Vec<PathBuf> {
            identities(&lib, nested)
                .into_iter()
                .map(|(p, _)| p.strip_prefix(&lib).unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            names(true),
            [
                PathBuf::from("a.py"),
                "pkg/__pycache__/c.cpython-312.pyc".into(),
                "pkg/b.py".into()
            ]
        );
        assert_eq!(names(false), [PathBuf::from("a.py")]);
        assert_eq!(
            identities(&lib.join("a.py"), true),
            [(
                lib.join("a.py"),
                executable_identity(&lib.join("a.py")).unwrap()
            )]
        );
        assert!(identities(&dir.path().join("absent"), true).is_empty());
    }

    #[test]
    fn a_large_tree_is_bound_by_its_listing() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        for i in 0..=MAX_TREE_FILES {
            write(&lib.join(format!("m{i}.py")), b"x");
        }
        let first = identities(&lib, true);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].0, lib);
        assert_eq!(identities(&lib, true), first);
        // A rename is seen; renaming it back (the time goes with the file) gives the same.
        std::fs::rename(lib.join("m7.py"), lib.join("m7b.py")).unwrap();
        assert_ne!(identities(&lib, true), first);
        std::fs::rename(lib.join("m7b.py"), lib.join("m7.py")).unwrap();
        assert_eq!(identities(&lib, true), first);
        std::fs::write(lib.join("m7.py"), b"xy").unwrap();
        assert_ne!(identities(&lib, true), first);
    }
}
