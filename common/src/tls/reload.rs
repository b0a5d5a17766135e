//! A value built from files and built again when their contents change: read every
//! [`RELOAD_INTERVAL`](super::RELOAD_INTERVAL) (contents, not mtimes: a rotation inside
//! the same second, or a symlink swap as Kubernetes does, is seen all the same). A new
//! set of files that does not build keeps the old value and logs an error naming the
//! file, once per new content.
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
        }))
    }

    pub(crate) fn current(&self) -> Arc<T> {
        match self.current.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the files; builds and swaps in a new value when they changed. `true` when
    /// a new value is in force.
    pub(crate) fn reload(&self) -> bool {
        let contents = match read_all(&self.paths) {
            Ok(c) => c,
            Err(e) => {
                // Mid-rotation a file may be missing for a moment: keep the old one.
                tracing::warn!(what = self.what, error = %e, "Cannot read a TLS file; keeping the one in use.");
                return false;
            }
        };
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
                tracing::info!(what = self.what, files = ?self.paths, "TLS files changed; new connections use them.");
                true
            }
            Err(e) => {
                tracing::error!(what = self.what, error = %e, "New TLS files are not usable; keeping the ones in use.");
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
