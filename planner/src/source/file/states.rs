//! The file source's accepted entries on disk, one part per file, so that a
//! one-record edit rewrites its file's part and a small index, not the whole source
//! (a 160k-record source was 37.7 MB rewritten, 5.1 s, per edit).
//!
//! Layout, under the store's directory: `<hash of the source key>.files/` holds
//! - `<sha256 of the part's bytes>.part`: one file's accepted entries (JSON), named
//!   by its content, so a part is never rewritten in place and unchanged files share
//!   nothing that could tear;
//! - `index.json`: the source key and, per file, its part and entry count.
//!
//! A write puts the new parts (temporary, `fsync`, rename), `fsync`s the directory,
//! then replaces the index the same way: the index's rename is the commit, so a crash
//! at any point leaves the previous index and its parts (or the new ones), never a
//! mix. Parts no index references any more are removed once they are older than
//! [`GRACE`] (a standby sharing the state directory may still be about to reference a
//! part it saw); a failed write removes what it wrote at once, temporary files
//! included, so a full disk is not filled further by leftovers.
//!
//! The state of a planner from before (one `<hash>.json` holding every file) is read
//! at open and rewritten in this layout, then removed.
use super::super::dnsendpoint::Accepted;
use crate::store::{DesiredStore, StoreError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old an unreferenced part must be before it is removed.
const GRACE: Duration = Duration::from_secs(600);
const VERSION: u32 = 1;
const INDEX: &str = "index.json";

/// One file's entry in the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PartRef {
    /// The part's file name.
    part: String,
    count: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct Index {
    version: u32,
    key: String,
    files: BTreeMap<PathBuf, PartRef>,
}

/// A file source's accepted entries, per file, under the state directory.
#[derive(Debug)]
pub(super) struct FileStates {
    store: DesiredStore,
    key: String,
    dir: PathBuf,
    /// The index as this source last wrote or read it.
    files: BTreeMap<PathBuf, PartRef>,
    /// Tests: fail every write (as a full disk does), reads still work.
    #[cfg(test)]
    pub(super) fail_writes: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn corrupt(path: &Path, e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// How many entries each file of the file source `key` has stored in `store`, read
/// as a standby or a tool would: nothing converted or written, every part read and
/// parsed (a torn or missing part is an error, never "no records"). `None`: nothing
/// stored yet.
pub fn stored_counts(
    store: &DesiredStore,
    key: &str,
) -> Result<Option<BTreeMap<PathBuf, usize>>, StoreError> {
    let dir = store.path_of(key).with_extension("files");
    let index = dir.join(INDEX);
    let bytes = match fs::read(&index) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The layout of before: one file for the whole source.
            let old: Option<BTreeMap<PathBuf, Vec<serde_json::Value>>> = store.get(key)?;
            return Ok(old.map(|m| m.into_iter().map(|(p, v)| (p, v.len())).collect()));
        }
        Err(e) => return Err(io(&index)(e)),
    };
    let read: Index = serde_json::from_slice(&bytes).map_err(|e| corrupt(&index, e))?;
    let mut out = BTreeMap::new();
    for (path, r) in read.files {
        let part = dir.join(&r.part);
        let bytes = fs::read(&part).map_err(io(&part))?;
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(&part, e))?;
        out.insert(path, entries.len());
    }
    Ok(Some(out))
}

impl FileStates {
    /// Opens `key`'s state in `store` and reads it back whole; a state in the format
    /// of before (one file for the whole source) is converted. Returns the entries
    /// by file.
    pub(super) fn open(
        store: DesiredStore,
        key: String,
    ) -> Result<(FileStates, BTreeMap<PathBuf, Vec<Accepted>>), StoreError> {
        let dir = store.path_of(&key).with_extension("files");
        let mut me = FileStates {
            store,
            key,
            dir,
            files: BTreeMap::new(),
            #[cfg(test)]
            fail_writes: Default::default(),
        };
        let index = me.dir.join(INDEX);
        match fs::read(&index) {
            Ok(bytes) => {
                let read: Index = serde_json::from_slice(&bytes).map_err(|e| corrupt(&index, e))?;
                if read.version != VERSION || read.key != me.key {
                    return Err(corrupt(
                        &index,
                        format!(
                            "version {} of source {:?}; this planner reads version {VERSION} of {:?}",
                            read.version, read.key, me.key
                        ),
                    ));
                }
                me.files = read.files;
                let all = me.all()?;
                // Left by a crash between a conversion's commit and the old file's removal.
                let _ = me.store.remove_whole(&me.key);
                Ok((me, all))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let old: BTreeMap<PathBuf, Vec<Accepted>> =
                    me.store.get(&me.key)?.unwrap_or_default();
                if !old.is_empty() {
                    me.put(&old, |_| true)?;
                    me.store.remove_whole(&me.key).map_err(io(&me.dir))?;
                }
                Ok((me, old))
            }
            Err(e) => Err(io(&index)(e)),
        }
    }

    /// How many entries `path` last had accepted.
    #[cfg(test)]
    pub(super) fn count(&self, path: &Path) -> usize {
        self.files.get(path).map_or(0, |p| p.count)
    }

    /// What `path` last had accepted (`None`: nothing stored for it).
    pub(super) fn get(&self, path: &Path) -> Result<Option<Vec<Accepted>>, StoreError> {
        let Some(r) = self.files.get(path) else {
            return Ok(None);
        };
        let part = self.dir.join(&r.part);
        let bytes = fs::read(&part).map_err(io(&part))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| corrupt(&part, e))
    }

    /// Every file's last accepted entries.
    pub(super) fn all(&self) -> Result<BTreeMap<PathBuf, Vec<Accepted>>, StoreError> {
        let mut out = BTreeMap::new();
        for path in self.files.keys() {
            out.insert(path.clone(), self.get(path)?.unwrap_or_default());
        }
        Ok(out)
    }

    /// Makes `good` the stored state, durably, before returning; only the parts of
    /// the files `changed` says changed (and of files not stored yet) are written.
    /// On error nothing changed on disk (the previous state stays in force) and
    /// nothing this call wrote is left behind.
    pub(super) fn put(
        &mut self,
        good: &BTreeMap<PathBuf, Vec<Accepted>>,
        changed: impl Fn(&Path) -> bool,
    ) -> Result<(), StoreError> {
        let mut written: Vec<PathBuf> = Vec::new();
        let r = self.put_inner(good, changed, &mut written);
        if r.is_err() {
            for p in &written {
                let _ = fs::remove_file(p);
            }
        }
        self.store.noted(r)
    }

    fn put_inner(
        &mut self,
        good: &BTreeMap<PathBuf, Vec<Accepted>>,
        changed: impl Fn(&Path) -> bool,
        written: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let mut files = BTreeMap::new();
        for (path, entries) in good {
            if let Some(r) = self.files.get(path).filter(|_| !changed(path)) {
                files.insert(path.clone(), r.clone());
                continue;
            }
            let bytes = serde_json::to_vec(entries).map_err(|e| corrupt(&self.dir, e))?;
            let digest = Sha256::digest(&bytes);
            let part: String = format!("{}.part", hex::encode(&digest[..16]));
            let at = self.dir.join(&part);
            if at.exists() {
                // The same entries as a part already there (another file's, or an
                // unreferenced one): refreshed, so that nobody collects it now.
                File::options()
                    .write(true)
                    .open(&at)
                    .and_then(|f| f.set_modified(SystemTime::now()))
                    .map_err(io(&at))?;
            } else {
                self.write_file(&at, &bytes, written)?;
                written.push(at);
            }
            files.insert(
                path.clone(),
                PartRef {
                    part,
                    count: entries.len(),
                },
            );
        }
        self.sync_dir()?;
        let index = Index {
            version: VERSION,
            key: self.key.clone(),
            files,
        };
        let bytes = serde_json::to_vec(&index).map_err(|e| corrupt(&self.dir, e))?;
        self.write_file(&self.dir.join(INDEX), &bytes, written)?;
        // Committed: what this call wrote is in force (and must stay, whatever the
        // directory's `fsync` says).
        written.clear();
        self.files = index.files;
        let synced = self.sync_dir();
        self.collect();
        synced
    }

    /// Writes `bytes` to `path` by a temporary file of its own (two planners sharing
    /// the state directory never write the same temporary), `fsync` and rename.
    fn write_file(
        &self,
        path: &Path,
        bytes: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let tmp = self.dir.join(format!(
            ".{}.{}-{nanos}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("part"),
            std::process::id()
        ));
        written.push(tmp.clone());
        #[cfg(test)]
        if self.fail_writes.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = File::create(&tmp);
            return Err(io(&tmp)(std::io::Error::from_raw_os_error(28)));
        }
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        drop(f);
        fs::rename(&tmp, path).map_err(io(path))?;
        written.pop();
        Ok(())
    }

    fn sync_dir(&self) -> Result<(), StoreError> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))
    }

    /// Removes parts the index no longer references, and temporary files, once they
    /// are older than [`GRACE`]. Best effort: what cannot be removed now is tried at
    /// the next write.
    fn collect(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let used: BTreeSet<&str> = self.files.values().map(|r| r.part.as_str()).collect();
        let now = SystemTime::now();
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let stale = (name.ends_with(".part") && !used.contains(name)) || name.ends_with(".tmp");
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| now.duration_since(m).unwrap_or_default() > GRACE);
            if stale && old {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}
