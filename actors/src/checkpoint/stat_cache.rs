//! What a look at a workspace remembers: each file's version by its path
//! and metadata (size, times, inode, mode), so a file whose metadata is
//! unchanged is not read and hashed again. One per workspace, shared by the
//! sessions of a process that work there, and kept in a file of the data
//! directory so the next process (every `agentbus run` is one) starts warm.
//!
//! A stale or unreadable cache file only costs time: an entry is used only
//! when the metadata matches exactly (a change touches the ctime), and a
//! file that does not parse is started over. Never holds file contents.

use crate::store::checkpoint::FileVersion;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a file's metadata said when its version was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    mode: u32,
}

impl Stat {
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        Stat {
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }
}

type Entries = HashMap<String, (Stat, FileVersion)>;

/// The versions taken before, by path and metadata.
#[derive(Debug, Default)]
pub struct StatCache {
    entries: Mutex<Entries>,
    /// Where it is kept between processes (`None`: in memory only).
    file: Option<PathBuf>,
    /// The file was read (or there is none).
    loaded: AtomicBool,
    /// Entries changed since it was last written.
    dirty: AtomicBool,
}

impl StatCache {
    /// A cache kept in `file` (read on the first look, written after a look
    /// that learnt something).
    pub fn kept_in(file: PathBuf) -> StatCache {
        StatCache {
            file: Some(file),
            ..StatCache::default()
        }
    }

    /// The cache file of `workspace` under `dir`: one per workspace,
    /// named by a hash of its path.
    pub fn file_for(dir: &Path, workspace: &Path) -> PathBuf {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(workspace.as_os_str().as_encoded_bytes());
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        dir.join(format!("{name}.json"))
    }

    /// Read the file once, before the first look.
    pub fn load(&self) {
        if self.loaded.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(file) = &self.file else { return };
        let Ok(text) = std::fs::read(file) else {
            return;
        };
        let Ok(read) = serde_json::from_slice::<Entries>(&text) else {
            tracing::debug!(file = %file.display(), "checkpoint cache unreadable: started over");
            return;
        };
        if let Ok(mut entries) = self.entries.lock() {
            for (path, entry) in read {
                entries.entry(path).or_insert(entry);
            }
        }
    }

    /// Write the file if a look learnt something since (atomically: a
    /// temporary file renamed into place). A failure is logged and costs
    /// only time.
    pub fn save(&self) {
        let Some(file) = &self.file else { return };
        if !self.dirty.swap(false, Ordering::SeqCst) {
            return;
        }
        let text = match self.entries.lock() {
            Ok(entries) => serde_json::to_vec(&*entries),
            Err(_) => return,
        };
        let written = text.map_err(std::io::Error::other).and_then(|text| {
            let dir = file.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)?;
            let mut temporary = tempfile::NamedTempFile::new_in(dir)?;
            std::io::Write::write_all(&mut temporary, &text)?;
            temporary.persist(file).map_err(|e| e.error)?;
            Ok(())
        });
        if let Err(e) = written {
            tracing::debug!(file = %file.display(), "checkpoint cache not written: {e}");
        }
    }

    pub fn get(&self, path: &str, stat: &Stat) -> Option<FileVersion> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(path)
            .filter(|(known, _)| known == stat)
            .map(|(_, version)| version.clone())
    }

    pub fn put(&self, path: &str, stat: Stat, version: &FileVersion) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(path.to_string(), (stat, version.clone()));
            self.dirty.store(true, Ordering::SeqCst);
        }
    }

    /// Forget the paths a whole look at the workspace did not see.
    pub fn keep_only(&self, seen: &HashSet<String>) {
        if let Ok(mut entries) = self.entries.lock() {
            let before = entries.len();
            entries.retain(|path, _| seen.contains(path));
            if entries.len() != before {
                self.dirty.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// The caches of the workspaces of one process, shared by their sessions.
#[derive(Debug, Default)]
pub struct StatCaches {
    /// Where the cache files are (`None`: in memory only).
    dir: Option<PathBuf>,
    caches: Mutex<HashMap<PathBuf, std::sync::Arc<StatCache>>>,
}

impl StatCaches {
    /// Caches kept in files under `dir`.
    pub fn kept_in(dir: PathBuf) -> StatCaches {
        StatCaches {
            dir: Some(dir),
            caches: Mutex::default(),
        }
    }

    /// The cache of `workspace`.
    pub fn of(&self, workspace: &Path) -> std::sync::Arc<StatCache> {
        let make = || {
            std::sync::Arc::new(match &self.dir {
                Some(dir) => StatCache::kept_in(StatCache::file_for(dir, workspace)),
                None => StatCache::default(),
            })
        };
        match self.caches.lock() {
            Ok(mut caches) => caches
                .entry(workspace.to_path_buf())
                .or_insert_with(make)
                .clone(),
            Err(_) => make(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::checkpoint::FileKind;

    #[test]
    fn a_cache_file_carries_the_versions_to_the_next_process() {
        let dir = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a"), "one").unwrap();
        let meta = std::fs::symlink_metadata(ws.path().join("a")).unwrap();
        let file = StatCache::file_for(dir.path(), ws.path());
        let version = FileVersion {
            hash: "h".into(),
            kind: FileKind::File,
            size: 3,
        };
        let first = StatCache::kept_in(file.clone());
        first.load();
        first.put("a", Stat::of(&meta), &version);
        first.save();
        let next = StatCache::kept_in(file.clone());
        next.load();
        assert_eq!(next.get("a", &Stat::of(&meta)), Some(version));
        // A changed file does not match; garbage in the file only costs time.
        std::fs::write(ws.path().join("a"), "changed").unwrap();
        let changed = std::fs::symlink_metadata(ws.path().join("a")).unwrap();
        assert_eq!(next.get("a", &Stat::of(&changed)), None);
        std::fs::write(&file, "not json").unwrap();
        let garbled = StatCache::kept_in(file);
        garbled.load();
        assert_eq!(garbled.get("a", &Stat::of(&meta)), None);
    }
}
