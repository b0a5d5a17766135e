//! Which files the source reads and whether they changed: walking the configured paths
//! (recursively, sorted, hidden entries skipped, symlink loops cut), what counts as a
//! manifest, and the per-file stamps (metadata and a content hash, re-hashed while a
//! file is inside the racy window of coarse timestamps) that make up a fingerprint.
//!
//! Nothing in a watched directory is trusted: only regular files are ever read (a FIFO
//! would block the reader forever, a device such as `/dev/zero` never ends), a symlink
//! is followed only while it stays inside the configured directory (a Kubernetes
//! ConfigMap mount's `web.yaml -> ..data/web.yaml` does; a link to `/etc` does not),
//! and no read takes more than [`MAX_MANIFEST_BYTES`] + 1 bytes, whatever the file's
//! size claims.
use super::super::SourceError;
use super::format::FileFormat;
use crate::source::dnsendpoint::file_error;
use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::Read;
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

pub(super) fn hash_content(path: &Path, max: usize) -> u64 {
    let mut h = DefaultHasher::new();
    match read_manifest(path, max) {
        Ok(bytes) => bytes.hash(&mut h),
        Err(e) => e.hash(&mut h),
    }
    h.finish()
}

/// What a special file is, for the error that skips it.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Why a path that is not a regular file is not read.
fn not_regular(meta: &std::fs::Metadata) -> String {
    format!("{}, not a regular file; skipped", kind_of(meta))
}

/// Opens `path` for reading if it is a regular file, without ever blocking: the open
/// is non-blocking (a FIFO put in the file's place after the scan would otherwise wait
/// for a writer forever), and the type is checked again on the open file itself.
fn open_regular(path: &Path) -> Result<File, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| format!("cannot read: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    Ok(file)
}

/// The bytes of the manifest at `path`: a regular file of at most `max` bytes (its
/// format's limit). Never reads more than one byte past the limit, so a file that
/// lies about its size (or grows while read) costs no more memory than that.
pub(super) fn read_manifest(path: &Path, max: usize) -> Result<Vec<u8>, String> {
    let file = open_regular(path)?;
    let limit = max as u64;
    let too_big = |size: String| {
        format!(
            "{size} bytes, above the limit of {} MiB for a manifest file",
            max >> 20
        )
    };
    let claimed = file.metadata().map(|m| m.len()).unwrap_or(0);
    if claimed > limit {
        return Err(too_big(claimed.to_string()));
    }
    let mut bytes = Vec::with_capacity(claimed.min(limit) as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(format!("more than {limit}")));
    }
    Ok(bytes)
}

// ---------------------------------------------------------------------------------------
// Scanning

#[derive(Debug, Default, Clone)]
pub(super) struct Scan {
    /// Regular files to read, sorted, without duplicates.
    pub(super) files: Vec<PathBuf>,
    /// Paths where a manifest would be but that are not read (a FIFO, a device, a
    /// symlink out of the directory, a dangling symlink), with the reason: each keeps
    /// the entries it had, and is reported.
    pub(super) rejected: Vec<(PathBuf, String)>,
    pub(super) errors: Vec<SourceError>,
    /// Paths that exist but could not be listed or inspected: files below them keep
    /// their last accepted entries.
    pub(super) unlisted: Vec<PathBuf>,
    /// Configured paths that are missing, unreadable or hold no manifest: the source
    /// is not ready, and everything below them keeps its last accepted entries (a
    /// vanished or emptied directory is never "no records").
    pub(super) unready: Vec<(PathBuf, String)>,
}

pub(super) fn scan(paths: &[PathBuf], format: FileFormat) -> Scan {
    let mut scan = Scan::default();
    let mut visited = HashSet::new();
    for path in paths {
        let found = scan.files.len();
        let problem = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                let (listed, rejected) = (scan.unlisted.len(), scan.rejected.len());
                // Links below are followed only while they stay inside this directory.
                let root = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                walk(path, &root, format, &mut scan, &mut visited);
                (scan.files.len() == found
                    && scan.unlisted.len() == listed
                    && scan.rejected.len() == rejected)
                    .then(|| format!("matches no manifest ({})", format.pattern()))
            }
            // Named explicitly: read wherever it is, if it is a regular file.
            Ok(m) if m.is_file() => {
                scan.files.push(path.clone());
                None
            }
            Ok(m) => {
                scan.rejected.push((path.clone(), not_regular(&m)));
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
    scan.rejected.sort();
    scan.rejected.dedup();
    scan
}

/// Walks `dir`, below the configured directory `root` (canonical).
pub(super) fn walk(
    dir: &Path,
    root: &Path,
    format: FileFormat,
    scan: &mut Scan,
    visited: &mut HashSet<PathBuf>,
) {
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
        let is_link = std::fs::symlink_metadata(&child).is_ok_and(|m| m.file_type().is_symlink());
        let meta = std::fs::metadata(&child);
        if is_link {
            match std::fs::canonicalize(&child) {
                Ok(target) if !target.starts_with(root) => {
                    if format.reads(&child) || meta.as_ref().is_ok_and(|m| m.is_dir()) {
                        scan.rejected.push((
                            child,
                            format!(
                                "a symlink to {}, outside {}; skipped",
                                target.display(),
                                root.display()
                            ),
                        ));
                    }
                    continue;
                }
                Ok(_) => {}
                // A dangling symlink, e.g. in the middle of a ConfigMap update.
                Err(e) => {
                    if format.reads(&child) {
                        scan.rejected.push((child, format!("cannot read: {e}")));
                    }
                    continue;
                }
            }
        }
        match meta {
            Ok(m) if m.is_dir() => walk(&child, root, format, scan, visited),
            Ok(m) if format.reads(&child) && m.is_file() => scan.files.push(child),
            Ok(m) if format.reads(&child) => scan.rejected.push((child, not_regular(&m))),
            Ok(_) => {}
            Err(e) if format.reads(&child) => {
                scan.rejected.push((child, format!("cannot read: {e}")));
            }
            Err(_) => {}
        }
    }
}
