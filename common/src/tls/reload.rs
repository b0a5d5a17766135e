//! A value built from files and built again when their contents change: read every
//! [`RELOAD_INTERVAL`](super::RELOAD_INTERVAL) (contents, not mtimes: a rotation inside
//! the same second, or a symlink swap as Kubernetes does, is seen all the same). A new
//! set of files that does not build keeps the old value and logs an error naming the
//! file, once per new content; [`Reloading::problem`] says why until the files build
//! again (the planner's status shows it).
use super::TlsError;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

type Build<T> = dyn Fn(&[Vec<u8>]) -> Result<T, TlsError> + Send + Sync;

pub(crate) struct Reloading<T> {
    /// What it is, for logs (`server certificate`, `applier client certificate`).
    what: &'static str,
    paths: Vec<PathBuf>,
    build: Box<Build<T>>,
    current: RwLock<Arc<T>>,
    /// The contents last tried, good or not.
    seen: Mutex<Vec<Vec<u8>>>,
    /// Why the files cannot be used now: the last read failed, or the contents last
    /// tried do not build.
    problem: Mutex<Problem>,
}

/// What is wrong with the files, as last seen.
#[derive(Debug, Default)]
struct Problem {
    /// The last read failed (a file missing or unreadable).
    read: Option<String>,
    /// The contents last tried (`seen`) do not build.
    build: Option<String>,
}

impl<T> std::fmt::Debug for Reloading<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloading")
            .field("what", &self.what)
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

fn read_all(paths: &[PathBuf]) -> Result<Vec<Vec<u8>>, TlsError> {
    paths.iter().map(|p| super::pem::read(p)).collect()
}

impl<T: Send + Sync + 'static> Reloading<T> {
    /// Reads and builds once; an error here is a configuration error.
    pub(crate) fn load(
        what: &'static str,
        paths: Vec<PathBuf>,
        build: impl Fn(&[Vec<u8>]) -> Result<T, TlsError> + Send + Sync + 'static,
    ) -> Result<Arc<Self>, TlsError> {
        let contents = read_all(&paths)?;
        let value = build(&contents)?;
        Ok(Arc::new(Reloading {
            what,
            paths,
            build: Box::new(build),
            current: RwLock::new(Arc::new(value)),
            seen: Mutex::new(contents),
            problem: Mutex::default(),
        }))
    }

    pub(crate) fn current(&self) -> Arc<T> {
        match self.current.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Why the files cannot be (re)loaded now, naming what they are for and the
    /// file; `None` while the value in force is built from the files as they are.
    pub(crate) fn problem(&self) -> Option<String> {
        let p = self.problem.lock().unwrap_or_else(|e| e.into_inner());
        let why = p.read.as_ref().or(p.build.as_ref())?;
        Some(format!(
            "{} files cannot be loaded: {why}; the ones read before stay in use",
            self.what
        ))
    }

    fn note(&self, f: impl FnOnce(&mut Problem)) {
        f(&mut self.problem.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Reads the files; builds and swaps in a new value when they changed. `true` when
    /// a new value is in force.
    pub(crate) fn reload(&self) -> bool {
        let contents = match read_all(&self.paths) {
            Ok(c) => c,
            Err(e) => {
                // Mid-rotation a file may be missing for a moment: keep the old one.
                tracing::warn!(what = self.what, error = %e, "Cannot read a TLS file; keeping the one in use.");
                self.note(|p| p.read = Some(e.to_string()));
                return false;
            }
        };
        self.note(|p| p.read = None);
        {
            let Ok(mut seen) = self.seen.lock() else {
                return false;
            };
            if *seen == contents {
                return false;
            }
            seen.clone_from(&contents);
        }
        match (self.build)(&contents) {
            Ok(value) => {
                if let Ok(mut c) = self.current.write() {
                    *c = Arc::new(value);
                }
                self.note(|p| p.build = None);
                tracing::info!(what = self.what, files = ?self.paths, "TLS files changed; new connections use them.");
                true
            }
            Err(e) => {
                tracing::error!(what = self.what, error = %e, "New TLS files are not usable; keeping the ones in use.");
                self.note(|p| p.build = Some(e.to_string()));
                false
            }
        }
    }

    /// Re-reads the files every `every` until the value is dropped (outside a Tokio
    /// runtime: never; the files stay as read).
    pub(crate) fn watch(self: &Arc<Self>, every: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                what = self.what,
                "No runtime to re-read TLS files on; they are read once."
            );
            return;
        };
        let weak: Weak<Self> = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(this) = weak.upgrade() else { return };
                let _ = tokio::task::spawn_blocking(move || this.reload()).await;
            }
        });
    }
}
