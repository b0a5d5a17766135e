//! The file source: external-dns `DNSEndpoint` manifests read from files and directories
//! (parsed by [`super::dnsendpoint`]).
//!
//! ```yaml
//! apiVersion: externaldns.k8s.io/v1alpha1
//! kind: DNSEndpoint
//! metadata: {name: web, namespace: default}
//! spec:
//!   endpoints:
//!     - dnsName: app.example.com
//!       recordType: A
//!       recordTTL: 300          # optional; 0 or absent: the zone's default TTL
//!       targets: [192.0.2.10]
//! ```
//!
//! Files may hold several documents (`---`); documents of other kinds are skipped, and a
//! `List` (or `DNSEndpointList`) is read item by item. Endpoints are read as
//! [`super::dnsendpoint`] says: `setIdentifier` and `providerSpecific` are part of the
//! record, `labels` are kept with it (persisted with what was accepted, reported back
//! by `ListRecordStates`) and never planned.
//!
//! **A typo never deletes a record that was accepted before.** The source remembers, per
//! file, what it last accepted:
//! - a file that cannot be read or parsed keeps all of its last accepted entries;
//! - a document that is recognisably a DNSEndpoint but is broken as a whole (`spec` or
//!   `spec.endpoints` missing, a misspelt `kind` beside `spec.endpoints`) keeps that
//!   resource's last accepted entries;
//! - an invalid endpoint keeps the last accepted entry with the same (name, type) from the
//!   same file; when its name or type itself is unreadable, the entry that sat at the same
//!   position (resource, endpoint index) is kept instead;
//! - an endpoint whose name falls in no configured zone, or whose zone refuses its RRSet
//!   (a typo in the domain: `www.exmaple.com`), keeps its whole resource's last accepted
//!   entries ([`super::zones`]).
//!
//! Every such problem is reported in the snapshot with its file and line. Entries are only
//! dropped by a valid change: an endpoint removed from a valid document, an explicit
//! `endpoints: []`, or a file deleted. What a broken disk, a bad deploy or a hostile
//! user can put in a file's place is never such a change: a file that becomes empty
//! (0 bytes), holds a NUL byte, is over [`super::dnsendpoint::MAX_MANIFEST_BYTES`], is
//! nested too deep,
//! holds no DNSEndpoint at all, or is replaced by a FIFO, a device or a symlink out of
//! the directory keeps its last accepted entries, and the error says so.
//!
//! - [`scan`]: which files, and whether they changed (and what is never read);
//! - [`merge`]: keep-last-good per file;
//! - [`settle`]: a file that loses records is believed once it has stayed so for a
//!   second (a file rewritten in place is briefly short);
//! - [`states`]: what was accepted, persisted per file (a one-record edit writes its
//!   file's part, not the whole source); a write that fails (a full disk) is tried
//!   again on a backoff until it succeeds, without waiting for the files to change.
use super::Snapshot;
use super::dnsendpoint::{Accepted, file_error};
use crate::store::{DesiredStore, StoreError};
use load::{cap_errors, load_files};
use merge::with_kept_note;
use scan::{Stamp, hash_content, hash_of, inode, scan};
use states::FileStates;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub mod format;
mod load;
pub(super) mod merge;
mod scan;
mod settle;
mod states;
pub use self::format::FileFormat;
pub use self::settle::SHRINK_SETTLE;
pub use self::states::stored_counts;

/// The longest wait between two tries to persist a change that could not be
/// persisted (a full disk): it is tried at the next poll, then after twice as long
/// each time, up to this.
pub const PERSIST_RETRY_MAX: Duration = Duration::from_secs(30);

pub use super::dnsendpoint::SOURCE_KIND;

/// Desired state from `DNSEndpoint` manifests in files and directories.
///
/// Each path is a file (read whatever its name) or a directory, scanned recursively for
/// `*.yaml` and `*.yml` files in sorted order. Entries whose name starts with `.` are
/// skipped while scanning: that keeps the `..data` / `..2024_…` directories of a
/// Kubernetes ConfigMap mount from being read twice, and hides editors' temporary files.
#[derive(Debug)]
pub struct FileSource {
    paths: Vec<PathBuf>,
    /// Where the accepted state is persisted (before it is handed on), per file.
    store: Option<FileStates>,
    /// Per file: what the last load accepted (including entries kept from before).
    last_good: LastGood,
    /// Per file: the metadata and content hash seen by the last fingerprint.
    stamps: HashMap<PathBuf, Stamp>,
    /// Hash of the snapshot the last `load` returned: `watch` does not send it again.
    last_loaded: Option<u64>,
    /// The configured zones each endpoint is checked against ([`super::zones`]).
    zones: Option<super::zones::ZoneCheck>,
    /// The last load's accepted state could not be persisted, so it is not in force:
    /// `watch` loads again (on a backoff) even if the files do not change.
    unpersisted: bool,
    /// What the files are ([`format`]).
    format: FileFormat,
    /// Files that lost records too recently to be believed ([`settle`]).
    shrinks: settle::Shrinks,
}

impl FileSource {
    pub fn new<I, P>(paths: I) -> FileSource
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        FileSource {
            paths: paths.into_iter().map(Into::into).collect(),
            store: None,
            last_good: LastGood::default(),
            stamps: HashMap::new(),
            last_loaded: None,
            zones: None,
            unpersisted: false,
            format: FileFormat::Auto,
            shrinks: settle::Shrinks::default(),
        }
    }

    /// Reads the files as `format` ([`format`]; `auto` by default).
    pub fn with_format(mut self, format: FileFormat) -> FileSource {
        self.format = format;
        self
    }

    /// Checks every endpoint against `zones` before its object is accepted: one in no
    /// zone, or that its zone refuses, keeps the object's last accepted version
    /// ([`super::zones`]).
    pub fn with_zones(mut self, zones: super::zones::ZoneCheck) -> FileSource {
        self.zones = Some(zones);
        self
    }

    /// A file that loses records is believed once it has stayed so for `window`
    /// ([`settle`]); `watch` sets [`SHRINK_SETTLE`] or its poll, whichever is longer,
    /// unless this set one first (as the planner does, so that its first load, before
    /// `watch`, holds too).
    pub fn with_shrink_settle(mut self, window: Duration) -> FileSource {
        self.shrinks.settle_unless_set(window);
        self
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The key this source's state is stored under: its paths.
    pub fn store_key(&self) -> String {
        let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        format!("file:{}", paths.join(","))
    }

    /// Restores what this source last accepted from `store` (so that a file broken
    /// across a restart keeps its records) and persists every later accepted state
    /// there before [`load`](Self::load) returns it. Returns how many records were
    /// restored.
    pub fn with_store(&mut self, store: DesiredStore) -> Result<usize, StoreError> {
        let (states, restored) = FileStates::open(store, self.store_key())?;
        let n = restored.values().map(Vec::len).sum();
        self.last_good = LastGood::remember(&restored, false);
        self.store = Some(states);
        Ok(n)
    }

    /// Reads every file now and returns the complete desired state of this source.
    ///
    /// Entries are ordered by file path, then by their place in the file. Problems never
    /// panic or abort the load: they become errors in the snapshot, and the last accepted
    /// entries are kept as described in the module documentation. The one `Err`: the
    /// last accepted entries a broken file must keep could not be read back from the
    /// store; nothing is accepted then (the previous state stays in force).
    pub fn load(&mut self) -> Result<Snapshot, StoreError> {
        let scan = scan(&self.paths, self.format);
        let mut errors = scan.errors;
        let old = Old::new(&self.last_good, self.store.as_ref());
        let mut good: BTreeMap<PathBuf, Vec<Accepted>> = BTreeMap::new();
        // Not read (special files, links out of the tree): they keep what they had.
        for (path, message) in &scan.rejected {
            let label = path.display().to_string();
            errors.push(file_error(
                &label,
                None,
                with_kept_note(message.clone(), old.count(path)),
            ));
            good.insert(path.clone(), old.kept(path)?);
        }
        let loaded = load_files(&scan.files, self.format, &old, self.zones.as_ref());
        for (path, result) in scan.files.iter().zip(loaded) {
            let (kept, mut file_errors) = result?;
            cap_errors(&path.display().to_string(), &mut file_errors);
            errors.append(&mut file_errors);
            good.insert(path.clone(), kept);
        }
        // Files below a directory (or root path) that could not be listed this time:
        // their existence is unknown, so they keep what they had.
        for path in self.last_good.files.keys() {
            if !good.contains_key(path) && scan.unlisted.iter().any(|d| path.starts_with(d)) {
                good.insert(path.clone(), old.kept(path)?);
            }
        }
        for path in self.shrinks.hold(&mut good, &old, &self.stamps)? {
            tracing::debug!(file = %path.display(), "file source: the file lost records; they stay until it has stayed so for the settle window (a file rewritten in place)");
        }
        let stored = self.store.is_some();
        let key = self.store_key();
        self.unpersisted = false;
        if let Some(states) = &mut self.store
            && !self.last_good.same(&good)
        {
            let last = &self.last_good;
            if let Err(e) = states.put(&good, |p| last.changed(p, good.get(p))) {
                // Not persisted, not accepted: the previous state (as stored) stays in
                // force, and the change is tried again (see `watch`).
                errors.push(file_error(
                    &key["file:".len()..],
                    None,
                    format!(
                        "cannot persist the accepted desired state ({e}); keeping the previous state until a write succeeds"
                    ),
                ));
                good = states.all()?;
                self.unpersisted = true;
            }
        }
        self.last_good = LastGood::remember(&good, !stored);
        let unready = scan
            .unready
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.display()))
            .collect();
        let snapshot = Snapshot {
            unready,
            entries: good.into_values().flatten().map(|a| a.entry).collect(),
            errors,
        };
        self.last_loaded = Some(hash_of(&snapshot));
        Ok(snapshot)
    }

    /// Why each configured path cannot be used at start (missing, unreadable, or no
    /// manifest in it): the planner refuses to start rather than run on a source that
    /// only looks empty.
    pub fn preflight(&self) -> Result<(), String> {
        let problems: Vec<String> = scan(&self.paths, self.format)
            .unready
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.display()))
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Polls the paths every `poll` and sends a snapshot on `tx`: one at once (unless
    /// it equals the one the last [`load`](Self::load) returned), then one whenever the
    /// files changed and the snapshot with them. Stops when `cancel` fires
    /// or the receiver is dropped. Must be called inside a Tokio runtime; file I/O runs
    /// on the blocking pool.
    ///
    /// Polling, not inotify, is deliberate: it works the same on every filesystem (NFS,
    /// FUSE, overlay, network volumes), and with the atomic symlink swap by which
    /// Kubernetes updates a mounted ConfigMap (`web.yaml -> ..data/web.yaml`, `..data`
    /// re-pointed to a new timestamped directory), which event-based watchers miss or
    /// report on the wrong path. A poll costs one directory walk and one `stat` per file;
    /// a file's content is hashed again only when its metadata changed or it was
    /// modified in the last two seconds, so same-size rewrites within one timestamp tick
    /// are seen too.
    pub fn watch(
        mut self,
        poll: Duration,
        tx: mpsc::Sender<Snapshot>,
        cancel: CancellationToken,
    ) -> JoinHandle<()> {
        self.shrinks.settle_unless_set(SHRINK_SETTLE.max(poll));
        tokio::spawn(async move {
            let mut last_fingerprint: Option<u64> = None;
            // Compared by hash: a snapshot can be large.
            let mut last_sent: Option<u64> = self.last_loaded.take();
            // Until the accepted state is persisted: the wait before the next try.
            let mut backoff = poll;
            loop {
                let polled = tokio::task::spawn_blocking(move || {
                    let fingerprint = self.fingerprint();
                    let snapshot = match (Some(fingerprint) != last_fingerprint).then(|| self.load()) {
                        Some(Err(e)) => {
                            // Tried again at the next poll; the previous state stays.
                            tracing::error!(error = %e, "file source: cannot accept the files' state now; the previous one stays in force");
                            return (self, None, None);
                        }
                        Some(Ok(s)) => Some(s),
                        None => None,
                    };
                    (self, Some(fingerprint), snapshot)
                })
                .await;
                let (source, fingerprint, snapshot) = match polled {
                    Ok(polled) => polled,
                    Err(e) => {
                        tracing::error!(error = %e, "file source poll failed; the file source stops");
                        return;
                    }
                };
                self = source;
                if fingerprint.is_some() {
                    last_fingerprint = fingerprint;
                }
                if self.shrinks.waiting() {
                    // Read again at the next poll, changed or not, until the shrink
                    // has held for its window (or the file grew back).
                    last_fingerprint = None;
                }
                let wait = if self.unpersisted {
                    // Loaded again after the wait, whether the files change or not: a
                    // change made while the disk was full is applied once it is not.
                    last_fingerprint = None;
                    backoff = (backoff * 2).min(PERSIST_RETRY_MAX.max(poll));
                    backoff
                } else {
                    backoff = poll;
                    poll
                };
                if let Some(snapshot) = snapshot.filter(|s| last_sent != Some(hash_of(s))) {
                    tracing::debug!(
                        entries = snapshot.entries.len(),
                        errors = snapshot.errors.len(),
                        "file source changed"
                    );
                    last_sent = Some(hash_of(&snapshot));
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => return,
                        sent = tx.send(snapshot) => if sent.is_err() { return },
                    }
                }
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        })
    }

    /// A hash of the set of files and of each file's (mtime, size, inode, content hash),
    /// plus the scan's errors. Updates the per-file stamps.
    fn fingerprint(&mut self) -> u64 {
        let scan = scan(&self.paths, self.format);
        let mut h = DefaultHasher::new();
        for e in &scan.errors {
            e.location.hash(&mut h);
            e.message.hash(&mut h);
        }
        scan.rejected.hash(&mut h);
        let now = SystemTime::now();
        let mut stamps = HashMap::with_capacity(scan.files.len());
        for path in scan.files {
            path.hash(&mut h);
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    e.kind().hash(&mut h);
                    continue;
                }
            };
            let (modified, len, inode) = (meta.modified().ok(), meta.len(), inode(&meta));
            let content = match self.stamps.get(&path) {
                Some(s)
                    if s.modified == modified
                        && s.len == len
                        && s.inode == inode
                        && s.settled() =>
                {
                    s.content
                }
                _ => hash_content(&path, self.format.of(&path).max_bytes()),
            };
            (modified, len, inode, content).hash(&mut h);
            stamps.insert(
                path,
                Stamp {
                    modified,
                    len,
                    inode,
                    content,
                    hashed_at: now,
                },
            );
        }
        self.stamps = stamps;
        h.finish()
    }
}

/// What the source remembers of each file's last accepted entries. With a store, only
/// a digest and a count per file: the entries are in the store (persisted before any
/// load returns them) and are read back only when a broken file must keep them. Held
/// here as well, they were a second copy of every record besides the desired index
/// (about 250 bytes per record).
#[derive(Debug, Default)]
struct LastGood {
    files: BTreeMap<PathBuf, FileMemo>,
    /// The entries themselves, when there is no store to read them back from.
    entries: Option<BTreeMap<PathBuf, Vec<Accepted>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileMemo {
    count: usize,
    digest: u64,
}

impl LastGood {
    fn remember(good: &BTreeMap<PathBuf, Vec<Accepted>>, keep_entries: bool) -> LastGood {
        LastGood {
            files: good
                .iter()
                .map(|(p, a)| {
                    (
                        p.clone(),
                        FileMemo {
                            count: a.len(),
                            digest: hash_of(a),
                        },
                    )
                })
                .collect(),
            entries: keep_entries.then(|| good.clone()),
        }
    }

    /// Whether `path`'s entries (`now`) differ from what it last had accepted.
    fn changed(&self, path: &std::path::Path, now: Option<&Vec<Accepted>>) -> bool {
        let now = now.map(|a| FileMemo {
            count: a.len(),
            digest: hash_of(a),
        });
        self.files.get(path) != now.as_ref()
    }

    /// Whether `good` is what was accepted last.
    fn same(&self, good: &BTreeMap<PathBuf, Vec<Accepted>>) -> bool {
        self.files.len() == good.len()
            && good.iter().all(|(p, a)| {
                self.files.get(p)
                    == Some(&FileMemo {
                        count: a.len(),
                        digest: hash_of(a),
                    })
            })
    }
}

/// The last accepted entries during one load, read back from the store at the first
/// file that needs them.
struct Old<'a> {
    last: &'a LastGood,
    store: Option<&'a FileStates>,
}

impl<'a> Old<'a> {
    fn new(last: &'a LastGood, store: Option<&'a FileStates>) -> Old<'a> {
        Old { last, store }
    }

    fn count(&self, path: &std::path::Path) -> usize {
        self.last.files.get(path).map_or(0, |m| m.count)
    }

    /// A copy of what `path` last had accepted (none: nothing), for a file that keeps it.
    fn kept(&self, path: &std::path::Path) -> Result<Vec<Accepted>, StoreError> {
        Ok(self.entries(path)?.unwrap_or_default())
    }

    /// What `path` last had accepted: from memory without a store, else its part read
    /// back (that file's only).
    fn entries(&self, path: &std::path::Path) -> Result<Option<Vec<Accepted>>, StoreError> {
        if let Some(entries) = &self.last.entries {
            return Ok(entries.get(path).cloned());
        }
        if self.count(path) == 0 {
            return Ok(None);
        }
        match self.store {
            Some(states) => states.get(path),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod format_tests;
#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod persist_tests;
#[cfg(test)]
mod settle_tests;
#[cfg(test)]
mod tests;
