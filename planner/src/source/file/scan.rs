//! Which files the source reads and whether they changed: walking the configured paths
//! (recursively, sorted, hidden entries skipped, symlink loops cut), what counts as a
//! manifest, and the per-file stamps (metadata and a content hash, re-hashed while a
//! file is inside the racy window of coarse timestamps) that make up a fingerprint.
use super::super::SourceError;
use crate::source::dnsendpoint::file_error;
use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A file whose modification time is closer than this to the moment it was hashed may
/// still change without its (mtime, size) changing (coarse timestamps): it is re-hashed
/// on the next poll. Older files are only re-read when their metadata changes.
pub(super) const RACY_WINDOW: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub(super) struct Stamp {
    pub(super) modified: Option<SystemTime>,
    pub(super) len: u64,
    pub(super) inode: u64,
    pub(super) content: u64,
    pub(super) hashed_at: SystemTime,
}

impl Stamp {
    /// True when the file was last modified well before it was hashed.
    pub(super) fn settled(&self) -> bool {
        self.modified
            .and_then(|m| self.hashed_at.duration_since(m).ok())
            .is_some_and(|age| age >= RACY_WINDOW)
    }
}

#[cfg(unix)]
pub(super) fn inode(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.ino()
}

#[cfg(not(unix))]
pub(super) fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

pub(super) fn hash_of<T: Hash>(value: &T) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

pub(super) fn hash_content(path: &Path) -> u64 {
    let mut h = DefaultHasher::new();
    match std::fs::read(path) {
        Ok(bytes) => bytes.hash(&mut h),
        Err(e) => e.kind().hash(&mut h),
    }
    h.finish()
}

// ---------------------------------------------------------------------------------------
// Scanning

#[derive(Debug, Default, Clone)]
pub(super) struct Scan {
    /// Files to read, sorted, without duplicates.
    pub(super) files: Vec<PathBuf>,
    pub(super) errors: Vec<SourceError>,
    /// Paths that exist but could not be listed or inspected: files below them keep
    /// their last accepted entries.
    pub(super) unlisted: Vec<PathBuf>,
    /// Configured paths that are missing, unreadable or hold no manifest: the source
    /// is not ready, and everything below them keeps its last accepted entries (a
    /// vanished or emptied directory is never "no records").
    pub(super) unready: Vec<(PathBuf, String)>,
}

pub(super) fn scan(paths: &[PathBuf]) -> Scan {
    let mut scan = Scan::default();
    let mut visited = HashSet::new();
    for path in paths {
        let found = scan.files.len();
        let problem = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                let listed = scan.unlisted.len();
                walk(path, &mut scan, &mut visited);
                (scan.files.len() == found && scan.unlisted.len() == listed)
                    .then(|| "matches no manifest (*.yaml, *.yml)".to_string())
            }
            Ok(_) => {
                scan.files.push(path.clone());
                None
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Some("path does not exist".to_string())
            }
            Err(e) => Some(format!("cannot read: {e}")),
        };
        if let Some(problem) = problem {
            scan.errors.push(file_error(
                &path.display().to_string(),
                None,
                format!(
                    "{problem}; the source is not ready: keeping the records last accepted from it"
                ),
            ));
            scan.unlisted.push(path.clone());
            scan.unready.push((path.clone(), problem));
        }
    }
    scan.files.sort();
    scan.files.dedup();
    scan
}

pub(super) fn walk(dir: &Path, scan: &mut Scan, visited: &mut HashSet<PathBuf>) {
    // Symlinked directories are followed, once each (no loops).
    if let Ok(real) = std::fs::canonicalize(dir)
        && !visited.insert(real)
    {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            scan.errors.push(file_error(
                &dir.display().to_string(),
                None,
                format!("cannot list directory: {e}"),
            ));
            scan.unlisted.push(dir.to_path_buf());
            return;
        }
    };
    let mut children: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        match std::fs::metadata(&child) {
            Ok(m) if m.is_dir() => walk(&child, scan, visited),
            Ok(_) if is_manifest(&child) => scan.files.push(child),
            Ok(_) => {}
            // A dangling symlink, e.g. in the middle of a ConfigMap update.
            Err(e) if is_manifest(&child) => {
                scan.errors.push(file_error(
                    &child.display().to_string(),
                    None,
                    format!("cannot read: {e}"),
                ));
                scan.unlisted.push(child);
            }
            Err(_) => {}
        }
    }
}

pub(super) fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}
