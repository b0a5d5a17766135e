//! The lease as an exclusive advisory lock (`flock`) on `<state_dir>/lease.lock`, held
//! by an open file: the kernel lets it go when the holder dies, however it dies, so
//! it needs no expiry and no renewal. For planners that share one state directory on
//! one machine (a local filesystem: `flock` over NFS is not to be trusted).
//!
//! `std::fs::File::try_lock` (Rust 1.89) is `flock(LOCK_EX | LOCK_NB)` on Unix. Such
//! a lock belongs to the open file description, so two opens of the path exclude each
//! other even inside one process.
//!
//! The file holds `epoch=<n>` and `holder=<identity>`: the epoch is a counter, one up
//! with every acquisition (read and rewritten under the lock; never a clock, which can
//! step back); the holder is what a standby shows.
//! A renewal checks that the path still names the locked file: if the state
//! directory was removed or replaced, another planner could lock a new file there, so
//! the lease counts as lost.
use super::{Acquire, LeaseBackend, LeaseError};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "lease.lock";

/// The lock on one state directory.
#[derive(Debug)]
pub struct FileBackend {
    path: PathBuf,
    /// The locked file and its epoch, while held.
    held: Mutex<Option<(File, u64)>>,
}

impl FileBackend {
    /// The lock in `state_dir` (created if missing); takes nothing yet.
    pub fn new(state_dir: &Path) -> Result<FileBackend, LeaseError> {
        std::fs::create_dir_all(state_dir).map_err(|source| LeaseError::StateDir {
            path: state_dir.to_path_buf(),
            source,
        })?;
        // Named by the directory's canonical path, which exists now: the lock file
        // may not yet, and a claim named `.dnsplane-state/lease.lock` by a first start
        // and `/srv/…/lease.lock` by the next made a restarted planner take its own
        // earlier claim for another planner's and wait out the lease ttl.
        let dir = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
        Ok(FileBackend {
            path: dir.join(LOCK_FILE),
            held: Mutex::new(None),
        })
    }

    fn io(&self, source: std::io::Error) -> LeaseError {
        LeaseError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Option<(File, u64)>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the path still names `file` (not removed, not replaced).
    fn still_there(&self, file: &File) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (file.metadata(), std::fs::metadata(&self.path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            self.path.exists()
        }
    }
}

/// `(epoch, holder)` from the file's text; missing parts are 0 and `None`.
fn read(mut file: &File) -> std::io::Result<(u64, Option<String>)> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_string(&mut text)?;
    let mut epoch = 0;
    let mut holder = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("epoch", v)) => epoch = v.trim().parse().unwrap_or(0),
            Some(("holder", v)) if !v.trim().is_empty() => holder = Some(v.trim().to_string()),
            _ => {}
        }
    }
    Ok((epoch, holder))
}

fn write(mut file: &File, epoch: u64, holder: Option<&str>) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    let mut text = format!("epoch={epoch}\n");
    if let Some(h) = holder {
        text.push_str(&format!("holder={h}\n"));
    }
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

#[async_trait::async_trait]
impl LeaseBackend for FileBackend {
    fn kind(&self) -> &'static str {
        "file"
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn expires(&self) -> bool {
        false
    }

    async fn try_acquire(&self, holder: &str, _ttl: Duration) -> Result<Acquire, LeaseError> {
        let mut held = self.held();
        if let Some((file, epoch)) = held.as_ref() {
            if self.still_there(file) {
                return Ok(Acquire::Acquired { epoch: *epoch });
            }
            *held = None;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        match file.try_lock() {
            Ok(()) => {
                let (last, _) = read(&file).map_err(|e| self.io(e))?;
                let epoch = last.saturating_add(1);
                write(&file, epoch, Some(holder)).map_err(|e| self.io(e))?;
                *held = Some((file, epoch));
                Ok(Acquire::Acquired { epoch })
            }
            Err(TryLockError::WouldBlock) => {
                // The holder may be rewriting it this instant: the text is only shown.
                let (epoch, other) = read(&file).map_err(|e| self.io(e))?;
                Ok(Acquire::Held {
                    holder: other.unwrap_or_else(|| "unknown".into()),
                    epoch,
                })
            }
            Err(TryLockError::Error(e)) => Err(self.io(e)),
        }
    }

    async fn renew(&self, _holder: &str, _ttl: Duration) -> Result<bool, LeaseError> {
        let mut held = self.held();
        match held.as_ref() {
            Some((file, _)) if self.still_there(file) => Ok(true),
            _ => {
                *held = None;
                Ok(false)
            }
        }
    }

    async fn bump(&self, holder: &str, _ttl: Duration) -> Result<Option<u64>, LeaseError> {
        let mut held = self.held();
        match held.as_mut() {
            Some((file, epoch)) if self.still_there(file) => {
                let (last, _) = read(file).map_err(|e| self.io(e))?;
                let next = last.max(*epoch).saturating_add(1);
                write(file, next, Some(holder)).map_err(|e| self.io(e))?;
                *epoch = next;
                Ok(Some(next))
            }
            _ => {
                *held = None;
                Ok(None)
            }
        }
    }

    fn claim_id(&self) -> String {
        // The host too: two machines may have the same path, and never share a lock.
        let path = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        format!("file {}:{}", super::Identity::new().host, path.display())
    }

    async fn release(&self, _holder: &str) -> Result<(), LeaseError> {
        if let Some((file, epoch)) = self.held().take() {
            // Forget the holder (so that nobody shows it), then unlock by closing.
            write(&file, epoch, None).map_err(|e| self.io(e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquired(a: Acquire) -> u64 {
        match a {
            Acquire::Acquired { epoch } => epoch,
            other => panic!("not acquired: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_claim_is_named_the_same_before_and_after_the_lock_file_exists() {
        let dir = tempfile::tempdir().unwrap();
        // A path that is not canonical, as a relative `state_dir` is not.
        let state = dir.path().join("state").join("..").join("state");
        let first = FileBackend::new(&state).unwrap();
        let before = first.claim_id();
        acquired(
            first
                .try_acquire("a", Duration::from_secs(10))
                .await
                .unwrap(),
        );
        first.release("a").await.unwrap();
        let restarted = FileBackend::new(&state).unwrap();
        assert_eq!(before, restarted.claim_id());
        assert_eq!(before, first.claim_id());
    }

    #[tokio::test]
    async fn two_locks_on_one_path_exclude_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let a = FileBackend::new(&dir.path().join("state")).unwrap();
        let b = FileBackend::new(&dir.path().join("state")).unwrap();
        let ttl = Duration::from_secs(10);
        let first = acquired(a.try_acquire("a", ttl).await.unwrap());
        // Held by a: b sees who holds it, and a keeps it.
        assert_eq!(
            b.try_acquire("b", ttl).await.unwrap(),
            Acquire::Held {
                holder: "a".into(),
                epoch: first
            }
        );
        assert!(a.renew("a", ttl).await.unwrap());
        assert!(!b.renew("b", ttl).await.unwrap());
        assert_eq!(acquired(a.try_acquire("a", ttl).await.unwrap()), first);

        // Released: b takes it under a new epoch, and a cannot.
        a.release("a").await.unwrap();
        let second = acquired(b.try_acquire("b", ttl).await.unwrap());
        assert!(second > first);
        assert_eq!(
            a.try_acquire("a", ttl).await.unwrap(),
            Acquire::Held {
                holder: "b".into(),
                epoch: second
            }
        );

        // Dropping the holder (as its death would) frees the lock.
        drop(b);
        assert!(acquired(a.try_acquire("a", ttl).await.unwrap()) > second);
    }

    #[tokio::test]
    async fn epochs_are_a_counter_and_a_bump_takes_the_next() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(LOCK_FILE),
            format!("epoch={}\n", u64::MAX / 2),
        )
        .unwrap();
        let a = FileBackend::new(dir.path()).unwrap();
        let ttl = Duration::from_secs(10);
        assert_eq!(
            acquired(a.try_acquire("a", ttl).await.unwrap()),
            u64::MAX / 2 + 1
        );
        assert_eq!(a.bump("a", ttl).await.unwrap(), Some(u64::MAX / 2 + 2));
        a.release("a").await.unwrap();
        assert_eq!(a.bump("a", ttl).await.unwrap(), None, "not held");
        let b = FileBackend::new(dir.path()).unwrap();
        assert_eq!(
            acquired(b.try_acquire("b", ttl).await.unwrap()),
            u64::MAX / 2 + 3
        );
    }

    #[tokio::test]
    async fn a_replaced_lock_file_is_a_lost_lease() {
        let dir = tempfile::tempdir().unwrap();
        let a = FileBackend::new(dir.path()).unwrap();
        let ttl = Duration::from_secs(10);
        assert!(matches!(
            a.try_acquire("a", ttl).await.unwrap(),
            Acquire::Acquired { .. }
        ));
        std::fs::remove_file(dir.path().join(LOCK_FILE)).unwrap();
        // Someone else could now lock a new file at the path.
        let b = FileBackend::new(dir.path()).unwrap();
        assert!(matches!(
            b.try_acquire("b", ttl).await.unwrap(),
            Acquire::Acquired { .. }
        ));
        assert!(!a.renew("a", ttl).await.unwrap(), "a's lease is lost");
        assert!(matches!(
            a.try_acquire("a", ttl).await.unwrap(),
            Acquire::Held { ref holder, .. } if holder == "b"
        ));
    }
}
