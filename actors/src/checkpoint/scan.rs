//! Looking at the workspace: which files it holds and each one's version
//! (SHA-256 of its bytes, its kind), for the whole workspace (before and
//! after a command) or for named paths (a file tool's).
//!
//! The whole workspace is walked as git sees it — `.gitignore`d files and
//! `.git` itself are left out — without following a symlink (a link is
//! recorded as a link, its target as its bytes). A file whose size, times
//! and inode are unchanged since the last look is not read again (the
//! [`StatCache`](super::stat_cache::StatCache)). The limits (files, bytes of one file, bytes in all) stop
//! a look early and say so; what was left out is never recorded, never
//! restored. Blocking: run on the blocking pool.

use super::stat_cache::{Stat, StatCache};
use crate::store::checkpoint::{FileKind, FileVersion};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// How much one look at a workspace may take (`[checkpoints]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Files in a workspace look; past it the look stops.
    pub max_files: usize,
    /// A larger file is not recorded.
    pub max_file_bytes: u64,
    /// Bytes of every file a look records; past it the look stops.
    pub max_total_bytes: u64,
}

impl From<&crate::settings::CheckpointSettings> for Limits {
    fn from(settings: &crate::settings::CheckpointSettings) -> Self {
        Limits {
            max_files: settings.max_files,
            max_file_bytes: settings.max_file_bytes,
            max_total_bytes: settings.max_total_bytes,
        }
    }
}

/// The versions one look found, by relative path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub files: BTreeMap<String, FileVersion>,
    /// What a limit left out, said plainly (`None`: nothing).
    pub limited: Option<String>,
}

/// The SHA-256 of `bytes`, lower-case hex.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The version of `bytes` of `kind`.
pub fn version_of(bytes: &[u8], kind: FileKind) -> FileVersion {
    FileVersion {
        hash: hash(bytes),
        kind,
        size: bytes.len() as u64,
    }
}

/// A path relative to `root`, made of normal parts only (`None`: it leads
/// out, or names the root itself).
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let mut parts = Vec::new();
    for part in rel.components() {
        match part {
            Component::Normal(p) => parts.push(p.to_str()?.to_string()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Whether every directory above `rel` is a real directory inside `root`
/// (no symlink leads a read or a write out of the workspace).
pub fn parent_inside(root: &Path, rel: &str) -> bool {
    let Ok(canonical_root) = root.canonicalize() else {
        return false;
    };
    let mut dir = canonical_root.clone();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_dir() => {}
            // Missing: nothing further down exists either.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
            _ => return false,
        }
    }
    true
}

/// The version of `root/rel` now, with its bytes, without following a
/// symlink at its end (`None`: absent, or a directory or other non-file).
pub fn read_now(root: &Path, rel: &str) -> std::io::Result<Option<(FileVersion, Vec<u8>)>> {
    if !parent_inside(root, rel) {
        return Ok(None);
    }
    let path = root.join(rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    read_entry(&path, &meta)
}

fn read_entry(
    path: &Path,
    meta: &std::fs::Metadata,
) -> std::io::Result<Option<(FileVersion, Vec<u8>)>> {
    let kind = if meta.file_type().is_symlink() {
        FileKind::Symlink
    } else if meta.file_type().is_file() {
        if meta.mode() & 0o111 != 0 {
            FileKind::Executable
        } else {
            FileKind::File
        }
    } else {
        return Ok(None);
    };
    let bytes = match kind {
        FileKind::Symlink => std::fs::read_link(path)?.as_os_str().as_bytes().to_vec(),
        _ => std::fs::read(path)?,
    };
    Ok(Some((version_of(&bytes, kind), bytes)))
}

/// The version of one entry, from the cache when its metadata is unchanged.
fn version(
    root: &Path,
    rel: &str,
    meta: &std::fs::Metadata,
    cache: &StatCache,
) -> std::io::Result<Option<FileVersion>> {
    let stat = Stat::of(meta);
    if let Some(known) = cache.get(rel, &stat) {
        return Ok(Some(known));
    }
    let found = read_entry(&root.join(rel), meta)?;
    Ok(found.map(|(version, _)| {
        cache.put(rel, stat, &version);
        version
    }))
}

/// The named paths' versions (a file tool's scope): an absent path is not
/// in the snapshot.
pub fn paths(root: &Path, rels: &[String], cache: &StatCache) -> Snapshot {
    cache.load();
    let mut snapshot = Snapshot::default();
    for rel in rels {
        if !parent_inside(root, rel) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(root.join(rel)) else {
            continue;
        };
        if let Ok(Some(version)) = version(root, rel, &meta, cache) {
            snapshot.files.insert(rel.clone(), version);
        }
    }
    snapshot
}

/// Every file of the workspace as git would see it, within `limits`.
pub fn workspace(root: &Path, limits: &Limits, cache: &StatCache) -> Snapshot {
    cache.load();
    let mut snapshot = Snapshot::default();
    let mut total: u64 = 0;
    let mut too_large: Vec<String> = Vec::new();
    let mut unreadable = 0usize;
    let mut seen: HashSet<String> = HashSet::new();
    let mut whole = true;
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    for entry in walk {
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            continue;
        }
        let path: PathBuf = entry.path().to_path_buf();
        let Some(rel) = relative(root, &path) else {
            unreadable += 1;
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            unreadable += 1;
            continue;
        };
        if meta.file_type().is_file() && meta.len() > limits.max_file_bytes {
            too_large.push(rel);
            continue;
        }
        seen.insert(rel.clone());
        if snapshot.files.len() >= limits.max_files {
            whole = false;
            snapshot.limited = Some(format!(
                "the workspace has more than {} files ([checkpoints] max_files): the rest were not recorded and cannot be restored",
                limits.max_files
            ));
            break;
        }
        if total + meta.len() > limits.max_total_bytes {
            whole = false;
            snapshot.limited = Some(format!(
                "the workspace holds more than {} bytes ([checkpoints] max_total_bytes): the rest were not recorded and cannot be restored",
                limits.max_total_bytes
            ));
            break;
        }
        match version(root, &rel, &meta, cache) {
            Ok(Some(version)) => {
                total += version.size;
                snapshot.files.insert(rel, version);
            }
            Ok(None) => {}
            Err(_) => unreadable += 1,
        }
    }
    if whole {
        cache.keep_only(&seen);
    }
    let mut notes: Vec<String> = snapshot.limited.take().into_iter().collect();
    if !too_large.is_empty() {
        notes.push(format!(
            "{} larger than {} bytes ([checkpoints] max_file_bytes) not recorded: {}",
            crate::text::count(too_large.len() as u64, "file"),
            limits.max_file_bytes,
            crate::text::ellipsize(&too_large.join(", "), 200)
        ));
    }
    if unreadable > 0 {
        notes.push(format!(
            "{unreadable} entries could not be read and were not recorded"
        ));
    }
    snapshot.limited = (!notes.is_empty()).then(|| notes.join("; "));
    snapshot
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_limits() -> Limits {
        Limits::from(&crate::settings::CheckpointSettings::default())
    }

    #[test]
    fn a_walk_sees_files_and_links_but_not_ignored_ones_or_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out"), "x").unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("out")).unwrap();
        let snapshot = workspace(root, &default_limits(), &StatCache::default());
        let names: Vec<&str> = snapshot.files.keys().map(String::as_str).collect();
        assert_eq!(names, [".gitignore", "out", "src/a.rs"]);
        let link = &snapshot.files["out"];
        assert_eq!(link.kind, FileKind::Symlink);
        assert_eq!(link.hash, hash(b"/etc/passwd"));
        assert_eq!(snapshot.files["src/a.rs"].hash, hash(b"fn a() {}\n"));
        assert!(snapshot.limited.is_none());
    }

    #[test]
    fn limits_stop_a_walk_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("f{i}")), "12345").unwrap();
        }
        std::fs::write(dir.path().join("big"), vec![0u8; 100]).unwrap();
        let limits = Limits {
            max_files: 3,
            max_file_bytes: 50,
            max_total_bytes: 1000,
        };
        let snapshot = workspace(dir.path(), &limits, &StatCache::default());
        assert_eq!(snapshot.files.len(), 3);
        let said = snapshot.limited.unwrap();
        assert!(said.contains("max_files"), "{said}");
        let roomy = Limits {
            max_files: 100,
            ..limits
        };
        let snapshot = workspace(dir.path(), &roomy, &StatCache::default());
        assert_eq!(snapshot.files.len(), 5);
        let said = snapshot.limited.unwrap();
        assert!(
            said.contains("max_file_bytes") && said.contains("big"),
            "{said}"
        );
        let tight = Limits {
            max_total_bytes: 12,
            ..roomy
        };
        let said = workspace(dir.path(), &tight, &StatCache::default())
            .limited
            .unwrap();
        assert!(said.contains("max_total_bytes"), "{said}");
    }

    #[test]
    fn a_changed_file_is_read_again_and_an_unchanged_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a"), "one").unwrap();
        let cache = StatCache::default();
        let first = paths(root, &["a".into()], &cache);
        assert_eq!(first.files["a"].hash, hash(b"one"));
        std::fs::write(root.join("a"), "two, longer").unwrap();
        let second = paths(root, &["a".into(), "absent".into()], &cache);
        assert_eq!(second.files["a"].hash, hash(b"two, longer"));
        assert!(!second.files.contains_key("absent"));
    }

    #[test]
    fn paths_outside_or_through_a_link_out_are_not_relative_or_inside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(relative(root, Path::new("../x")), None);
        assert_eq!(relative(root, Path::new("/elsewhere/x")), None);
        assert_eq!(relative(root, &root.join("a/b")), Some("a/b".into()));
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        assert!(!parent_inside(root, "link/file"));
        assert!(parent_inside(root, "new/dir/file"));
    }
}
