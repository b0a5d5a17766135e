//! The durable desired state: what each source last had accepted, kept under the
//! planner's `state_dir` so that a restart with a broken file, or after pushes,
//! deletes nothing.
//!
//! One file per source (`<state_dir>/desired/<hash of the source key>.json`), replaced
//! whole on every accepted change by write-to-temporary, `fsync`, `rename`, `fsync` of
//! the directory: a `kill -9` at any point leaves either the previous or the new state,
//! never a torn one. A source's state is only ever replaced whole, so a per-source file
//! is all the transaction this needs; unlike an embedded database (redb, sled) it takes
//! no process-wide lock, so a standby planner sharing the state directory (see the
//! lease) can read it, and it costs no dependency.
//!
//! A pushed source's `PatchDesired` is not a whole state: it is appended to the
//! source's journal (`<hash>.journal`, one JSON line per patch, `fsync`ed) and replayed
//! over the snapshot when read, so a one-record patch costs O(patch) on disk. Each
//! journal line names the snapshot it follows (its `generation`): a crash between a
//! new snapshot's rename and the old journal's removal leaves lines that no longer
//! apply, and they are skipped. A line torn by a crash mid-append was never
//! acknowledged and is cut off. Once the journal outgrows its snapshot, the caller
//! writes a new snapshot (amortised O(1) per patch).
//! Planners sharing the state directory (a standby beside its leader) read the
//! journal without ever rewriting it; an append keeps every whole line another one
//! appended, and is refused (the caller writes a whole state) once the snapshot it
//! follows was replaced.
//!
//! A write that fails is an error the caller must act on: the new state is then not
//! acknowledged (a push answers `UNAVAILABLE`; a file source keeps its previous state).
use serde::{Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Errors of the store. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a desired-state file this planner can read: {message}")]
    Corrupt { path: PathBuf, message: String },
    /// The Redis-backed store ([`crate::redis_store`]) did not answer or refused.
    #[error("Redis {addr}: {message}")]
    Redis { addr: String, message: String },
    /// A write refused because this planner no longer holds the lease it was made
    /// under: another planner leads now (and read the store when it took over).
    #[error("not written: this planner no longer holds the lease ({message})")]
    Fenced { message: String },
}

/// The on-disk envelope of one source's state.
#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope<T> {
    version: u32,
    key: String,
    /// Which snapshot this is: the journal lines that follow it carry the same.
    #[serde(default)]
    generation: u64,
    state: T,
}

/// One change appended to a key's journal.
#[derive(serde::Serialize, serde::Deserialize)]
struct JournalLine<P> {
    generation: u64,
    change: P,
}

/// What the store knows of a key's files, so that an append needs no read.
#[derive(Debug, Clone, Copy)]
struct Book {
    generation: u64,
    snapshot_bytes: u64,
    journal_bytes: u64,
    /// The snapshot file as this store last wrote or read it: if another planner
    /// sharing the state directory has replaced it since, appending to the journal
    /// under the old generation would lose the line, so the caller writes a whole
    /// state instead.
    snapshot: Option<FileId>,
}

/// A file's identity and version: inode (on Unix), modification time, length.
type FileId = (u64, Option<std::time::SystemTime>, u64);

fn file_id(path: &Path) -> Option<FileId> {
    let meta = fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some((inode, meta.modified().ok(), meta.len()))
}

/// A journal shorter than this is never worth a new snapshot.
const MIN_COMPACT_BYTES: u64 = 64 << 10;

const VERSION: u32 = 1;

/// The durable desired state of every source.
#[derive(Debug, Clone)]
pub struct DesiredStore {
    dir: PathBuf,
    books: Arc<Mutex<HashMap<String, Book>>>,
    /// The last write's error, cleared by the next write that succeeds: status reports
    /// it (`failing`), since accepted desired state no longer survives a restart.
    write_error: Arc<Mutex<Option<String>>>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl DesiredStore {
    /// Opens (creating it if needed) the store under `state_dir`, and checks that it
    /// can be written, so that a read-only or missing volume fails at start, not at the
    /// first push.
    pub fn open(state_dir: &Path) -> Result<DesiredStore, StoreError> {
        let dir = state_dir.join("desired");
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        let probe = dir.join(".write-probe");
        fs::write(&probe, b"ok").map_err(io(&probe))?;
        fs::remove_file(&probe).map_err(io(&probe))?;
        Ok(DesiredStore {
            dir,
            books: Arc::default(),
            write_error: Arc::default(),
        })
    }

    fn books(&self) -> std::sync::MutexGuard<'_, HashMap<String, Book>> {
        self.books
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where `key`'s whole state is stored (`<dir>/<hash>.json`); other layouts of a
    /// key's state live beside it under the same name (the file source's per-file
    /// state: `<hash>.files/`).
    pub(crate) fn path_of(&self, key: &str) -> PathBuf {
        self.path(key)
    }

    /// Removes `key`'s whole state (a source that moved to another layout), durably.
    pub(crate) fn remove_whole(&self, key: &str) -> std::io::Result<()> {
        match fs::remove_file(self.path(key)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            r => r?,
        }
        File::open(&self.dir)?.sync_all()
    }

    fn path(&self, key: &str) -> PathBuf {
        let h = Sha256::digest(key.as_bytes());
        let name: String = h[..10].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    /// Why the last write failed, until a write succeeds again.
    pub fn write_error(&self) -> Option<String> {
        self.write_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Remembers how a write ended, for [`Self::write_error`].
    pub(crate) fn noted<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        *self
            .write_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            r.as_ref().err().map(ToString::to_string);
        r
    }

    /// Replaces `key`'s state, durably, before returning.
    pub fn put<T: Serialize>(&self, key: &str, state: &T) -> Result<(), StoreError> {
        let r = self.put_inner(key, state);
        self.noted(r)
    }

    fn put_inner<T: Serialize>(&self, key: &str, state: &T) -> Result<(), StoreError> {
        let path = self.path(key);
        let tmp = path.with_extension("json.tmp");
        let generation = self
            .books()
            .get(key)
            .map_or_else(fresh_generation, |b| b.generation + 1);
        let bytes = serde_json::to_vec(&Envelope {
            version: VERSION,
            key: key.to_string(),
            generation,
            state,
        })
        .map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let written = (|| {
            let mut f = File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()
        })()
        .and_then(|()| fs::rename(&tmp, &path));
        if let Err(e) = written {
            // A full disk leaves a partial temporary file: never let it outlive the
            // failed write (it holds space the next write needs).
            let _ = fs::remove_file(&tmp);
            return Err(io(&path)(e));
        }
        // The rename itself is durable only once the directory is.
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))?;
        // Its lines follow the previous snapshot: skipped by generation if this
        // removal is lost.
        let journal = path.with_extension("journal");
        match fs::remove_file(&journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                // Its lines must not be appended to: the next change writes a whole
                // state again.
                self.books().remove(key);
                return Err(io(&journal)(e));
            }
            _ => {}
        }
        self.books().insert(
            key.to_string(),
            Book {
                generation,
                snapshot_bytes: bytes.len() as u64,
                journal_bytes: 0,
                snapshot: file_id(&path),
            },
        );
        Ok(())
    }

    /// Appends `change` to `key`'s journal, durably, before returning. `None` when the
    /// store has not read or written `key`'s snapshot in this run (the caller writes a
    /// whole state instead); `Some(true)` when the journal has outgrown the snapshot
    /// and the caller should write a new one.
    pub fn append<P: Serialize>(&self, key: &str, change: &P) -> Result<Option<bool>, StoreError> {
        let r = self.append_inner(key, change);
        self.noted(r)
    }

    fn append_inner<P: Serialize>(
        &self,
        key: &str,
        change: &P,
    ) -> Result<Option<bool>, StoreError> {
        let Some(book) = self.books().get(key).copied() else {
            return Ok(None);
        };
        let snapshot = self.path(key);
        if file_id(&snapshot) != book.snapshot {
            self.books().remove(key);
            return Ok(None);
        }
        let path = snapshot.with_extension("journal");
        let mut line = serde_json::to_vec(&JournalLine {
            generation: book.generation,
            change,
        })
        .map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        let mut start = book.journal_bytes;
        let written = (|| {
            let mut f = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            let len = f.metadata()?.len();
            if len != book.journal_bytes {
                // A line torn by a crash mid-append (never acknowledged), or lines
                // another planner sharing the state directory appended: keep every
                // whole line, cut a torn tail, so this line starts on its own.
                let bytes = fs::read(&path)?;
                let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                if whole < bytes.len() {
                    f.set_len(whole as u64)?;
                }
                start = whole as u64;
            }
            f.write_all(&line)?;
            f.sync_data()?;
            if start == 0 {
                File::open(&self.dir)?.sync_all()?;
            }
            Ok(())
        })();
        if let Err(e) = written {
            // Not acknowledged: cut off whatever part of the line was written, and
            // have the next change rewrite the whole state.
            if let Ok(f) = fs::OpenOptions::new().write(true).open(&path) {
                let _ = f.set_len(start);
            }
            self.books().remove(key);
            return Err(io(&path)(e));
        }
        let journal_bytes = start + line.len() as u64;
        self.books().insert(
            key.to_string(),
            Book {
                journal_bytes,
                ..book
            },
        );
        Ok(Some(
            journal_bytes > book.snapshot_bytes.max(MIN_COMPACT_BYTES),
        ))
    }

    /// `key`'s last stored state and the changes appended to it since, in order.
    pub fn get_journaled<T: DeserializeOwned, P: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<(T, Vec<P>)>, StoreError> {
        let path = self.path(key);
        let Some((env, size)) = self.envelope::<T>(&path)? else {
            return Ok(None);
        };
        let changes = self.read_journal(key, &path, env.generation, size)?;
        Ok(Some((env.state, changes)))
    }

    /// The envelope stored at `path` and its size in bytes, if there is one.
    fn envelope<T: DeserializeOwned>(
        &self,
        path: &Path,
    ) -> Result<Option<(Envelope<T>, u64)>, StoreError> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(path)(e)),
        };
        Ok(Some((decode(path, &bytes)?, bytes.len() as u64)))
    }

    /// The journal lines of `key` that follow snapshot `generation`; remembers the
    /// key's files for [`append`](Self::append).
    fn read_journal<P: DeserializeOwned>(
        &self,
        key: &str,
        snapshot: &Path,
        generation: u64,
        snapshot_bytes: u64,
    ) -> Result<Vec<P>, StoreError> {
        let path = snapshot.with_extension("journal");
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(&path)(e)),
        };
        let mut changes = Vec::new();
        let mut read = 0;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            if !line.ends_with(b"\n") {
                break; // torn by a crash mid-append: never acknowledged
            }
            let parsed: JournalLine<P> =
                serde_json::from_slice(line).map_err(|e| StoreError::Corrupt {
                    path: path.clone(),
                    message: format!("journal line at byte {read}: {e}"),
                })?;
            read += line.len();
            // Lines of an older snapshot are left by a crash before its journal was
            // removed: they no longer apply.
            if parsed.generation == generation {
                changes.push(parsed.change);
            }
        }
        // Never rewritten here (a standby sharing the state directory reads it too):
        // the next append cuts a torn tail off, and stale lines stay skipped.
        let good = read;
        self.books().insert(
            key.to_string(),
            Book {
                generation,
                snapshot_bytes,
                journal_bytes: good as u64,
                snapshot: file_id(snapshot),
            },
        );
        Ok(changes)
    }

    /// `key`'s last stored state, if any.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        Ok(self
            .envelope::<T>(&self.path(key))?
            .map(|(env, _)| env.state))
    }

    /// Every stored state whose key starts with `prefix`, by key, with the changes
    /// journaled since.
    pub fn all_journaled<T: DeserializeOwned, P: DeserializeOwned>(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, T, Vec<P>)>, StoreError> {
        let mut out = Vec::new();
        for (path, env, size) in self.envelopes::<T>(prefix)? {
            let changes = self.read_journal(&env.key, &path, env.generation, size)?;
            out.push((env.key, env.state, changes));
        }
        Ok(out)
    }

    /// Every stored state whose key starts with `prefix`, by key (the journals left
    /// out: for tests of the snapshots alone).
    #[cfg(test)]
    pub fn all<T: DeserializeOwned>(&self, prefix: &str) -> Result<Vec<(String, T)>, StoreError> {
        Ok(self
            .envelopes::<T>(prefix)?
            .into_iter()
            .map(|(_, env, _)| (env.key, env.state))
            .collect())
    }

    /// The envelopes whose key starts with `prefix`, by key, each file read once, with
    /// its path and size.
    fn envelopes<T: DeserializeOwned>(
        &self,
        prefix: &str,
    ) -> Result<Vec<(PathBuf, Envelope<T>, u64)>, StoreError> {
        let mut out = Vec::new();
        let mut paths: Vec<PathBuf> = fs::read_dir(&self.dir)
            .map_err(io(&self.dir))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let bytes = fs::read(&path).map_err(io(&path))?;
            // Parsed once; only the states under `prefix` are then read as `T`.
            let env: Envelope<serde_json::Value> = decode(&path, &bytes)?;
            if env.key.starts_with(prefix) {
                let state = T::deserialize(env.state).map_err(|e| StoreError::Corrupt {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                let env = Envelope {
                    version: env.version,
                    key: env.key,
                    generation: env.generation,
                    state,
                };
                out.push((path, env, bytes.len() as u64));
            }
        }
        out.sort_by(|a, b| a.1.key.cmp(&b.1.key));
        Ok(out)
    }
}

/// A generation for a key whose snapshot this run has not seen: the time, so that it
/// differs from whatever an earlier run wrote.
fn fresh_generation() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

fn decode<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<Envelope<T>, StoreError> {
    let env: Envelope<T> = serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if env.version != VERSION {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            message: format!(
                "format version {} (this planner reads {VERSION})",
                env.version
            ),
        });
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_all_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let store = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(store.get::<Vec<String>>("push:a").unwrap(), None);
        store.put("push:a", &vec!["x".to_string()]).unwrap();
        store.put("push:b", &vec!["y".to_string()]).unwrap();
        store.put("file:/p", &7u32).unwrap();
        store.put("push:a", &vec!["z".to_string()]).unwrap();
        assert_eq!(
            store.get::<Vec<String>>("push:a").unwrap(),
            Some(vec!["z".to_string()])
        );
        let pushes: Vec<(String, Vec<String>)> = store.all("push:").unwrap();
        assert_eq!(
            pushes,
            vec![
                ("push:a".to_string(), vec!["z".to_string()]),
                ("push:b".to_string(), vec!["y".to_string()]),
            ]
        );
        // A reopened store sees the same; no temporary files are left behind.
        let again = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(again.get::<u32>("file:/p").unwrap(), Some(7));
        let leftovers: Vec<_> = fs::read_dir(dir.path().join("desired"))
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    /// A failed write is remembered (status reports it) until a write succeeds.
    #[test]
    fn a_failed_write_is_remembered_until_one_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let store = DesiredStore::open(dir.path()).unwrap();
        store.put("push:a", &1u32).unwrap();
        assert_eq!(store.write_error(), None);
        fs::remove_dir_all(dir.path().join("desired")).unwrap();
        assert!(store.put("push:a", &2u32).is_err());
        let why = store.write_error().expect("the failure is remembered");
        assert!(why.contains("desired"), "names the file: {why}");
        fs::create_dir_all(dir.path().join("desired")).unwrap();
        store.put("push:a", &3u32).unwrap();
        assert_eq!(store.write_error(), None, "cleared by a good write");
    }

    #[test]
    fn a_torn_temporary_is_ignored_and_a_corrupt_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = DesiredStore::open(dir.path()).unwrap();
        store.put("push:a", &1u32).unwrap();
        // A crash between write and rename leaves only a temporary file.
        fs::write(store.path("push:a").with_extension("json.tmp"), b"{\"vers").unwrap();
        assert_eq!(store.get::<u32>("push:a").unwrap(), Some(1));
        fs::write(store.path("push:b"), b"garbage").unwrap();
        let e = store.get::<u32>("push:b").unwrap_err().to_string();
        assert!(
            e.contains(".json") && e.contains("not a desired-state file"),
            "{e}"
        );
    }

    /// Patches are appended and replayed in order; a new snapshot ends the journal
    /// (and stale lines a crash left behind are skipped); a torn last line is cut
    /// off; a key this run has not seen takes a whole state first.
    #[test]
    fn a_journal_replays_its_changes_over_its_snapshot_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(
            store.append("push:a", &1u32).unwrap(),
            None,
            "no snapshot yet"
        );
        store.put("push:a", &vec![0u32]).unwrap();
        assert_eq!(store.append("push:a", &1u32).unwrap(), Some(false));
        assert_eq!(store.append("push:a", &2u32).unwrap(), Some(false));
        let again = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(
            again.get_journaled::<Vec<u32>, u32>("push:a").unwrap(),
            Some((vec![0], vec![1, 2]))
        );
        assert_eq!(
            again.all_journaled::<Vec<u32>, u32>("push:").unwrap(),
            vec![("push:a".to_string(), vec![0], vec![1, 2])]
        );

        // A crash mid-append leaves a torn line: never acknowledged, skipped, and cut
        // off by the next append, which starts on a line of its own.
        let journal = store.path("push:a").with_extension("journal");
        let mut f = fs::OpenOptions::new().append(true).open(&journal).unwrap();
        f.write_all(b"{\"generation\":").unwrap();
        drop(f);
        let after_crash = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(
            after_crash
                .get_journaled::<Vec<u32>, u32>("push:a")
                .unwrap(),
            Some((vec![0], vec![1, 2]))
        );
        assert_eq!(after_crash.append("push:a", &3u32).unwrap(), Some(false));
        assert_eq!(
            after_crash
                .get_journaled::<Vec<u32>, u32>("push:a")
                .unwrap(),
            Some((vec![0], vec![1, 2, 3]))
        );

        // A new snapshot ends the journal; lines of the old one, had their removal
        // been lost in a crash, are skipped.
        let old = fs::read(&journal).unwrap();
        after_crash.put("push:a", &vec![9u32]).unwrap();
        assert!(!journal.exists());
        fs::write(&journal, &old).unwrap();
        let fresh = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(
            fresh.get_journaled::<Vec<u32>, u32>("push:a").unwrap(),
            Some((vec![9], vec![]))
        );
        assert_eq!(
            fs::read(&journal).unwrap(),
            old,
            "a read never rewrites the journal"
        );
        assert_eq!(fresh.append("push:a", &4u32).unwrap(), Some(false));
        assert_eq!(
            DesiredStore::open(dir.path())
                .unwrap()
                .get_journaled::<Vec<u32>, u32>("push:a")
                .unwrap(),
            Some((vec![9], vec![4]))
        );
    }

    /// Two planners sharing a state directory: one's append keeps the lines the other
    /// appended, and an append under a snapshot the other has replaced is refused
    /// (the caller writes a whole state), never written under a stale generation.
    #[test]
    fn a_shared_store_never_loses_the_other_writers_lines() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            DesiredStore::open(dir.path()).unwrap(),
            DesiredStore::open(dir.path()).unwrap(),
        );
        a.put("push:s", &vec![0u32]).unwrap();
        assert_eq!(
            b.get_journaled::<Vec<u32>, u32>("push:s").unwrap(),
            Some((vec![0], vec![]))
        );
        assert_eq!(a.append("push:s", &1u32).unwrap(), Some(false));
        assert_eq!(b.append("push:s", &2u32).unwrap(), Some(false));
        assert_eq!(a.append("push:s", &3u32).unwrap(), Some(false));
        let fresh = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(
            fresh.get_journaled::<Vec<u32>, u32>("push:s").unwrap(),
            Some((vec![0], vec![1, 2, 3]))
        );
        a.put("push:s", &vec![9u32]).unwrap();
        assert_eq!(
            b.append("push:s", &4u32).unwrap(),
            None,
            "b's snapshot is gone"
        );
        assert_eq!(
            DesiredStore::open(dir.path())
                .unwrap()
                .get_journaled::<Vec<u32>, u32>("push:s")
                .unwrap(),
            Some((vec![9], vec![]))
        );
    }

    /// Once the journal holds more than its snapshot (and at least 64 KiB), the
    /// caller is told to write a new snapshot.
    #[test]
    fn a_journal_that_outgrows_its_snapshot_asks_for_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = DesiredStore::open(dir.path()).unwrap();
        store.put("push:a", &"x".repeat(100_000)).unwrap();
        let big = "y".repeat(30_000);
        let asks: Vec<bool> = (0..5)
            .map(|_| store.append("push:a", &big).unwrap().unwrap())
            .collect();
        assert_eq!(asks, [false, false, false, true, true]);
    }

    #[test]
    fn an_unwritable_state_dir_fails_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        fs::write(&file, b"x").unwrap();
        let e = DesiredStore::open(&file).unwrap_err().to_string();
        assert!(e.contains("not-a-dir"), "{e}");
    }
}
