//! Credentials that expire (access tokens, temporary AWS keys), as every driver that
//! fetches them keeps them: until shortly before they expire, or, without an expiry,
//! until the provider refuses them ([`Kept::forget`]), so that a rotated file or
//! variable is read again. Also the environment they are read from, which tests
//! replace (changing a running process's environment is unsafe in edition 2024).
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Renew a credential this long before it expires.
pub const RENEW_BEFORE: Duration = Duration::from_secs(300);

/// What a credential chain reads the environment through (the process's, or a
/// test's map).
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment, ignoring empty variables (as the SDKs do).
pub fn process_env() -> EnvReader {
    Arc::new(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
}

/// A credential that may expire.
pub trait Expiring: Clone {
    /// When it stops working (`None`: unknown, kept until refused).
    fn expires(&self) -> Option<SystemTime>;
}

/// The credential in use, if any.
#[derive(Debug)]
pub struct Kept<T> {
    current: tokio::sync::Mutex<Option<T>>,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            current: tokio::sync::Mutex::new(None),
        }
    }
}

impl<T: Expiring> Kept<T> {
    /// The kept credential if it is good for at least [`RENEW_BEFORE`], else `fetch`'s,
    /// kept for the next call. The lock is held while fetching, so that concurrent
    /// callers wait for one fetch rather than each making their own (`fetch` is only
    /// polled when needed).
    pub async fn get<E>(&self, fetch: impl Future<Output = Result<T, E>>) -> Result<T, E> {
        let mut current = self.current.lock().await;
        if let Some(t) = current.as_ref()
            && t.expires()
                .is_none_or(|e| e > SystemTime::now() + RENEW_BEFORE)
        {
            return Ok(t.clone());
        }
        let fresh = fetch.await?;
        *current = Some(fresh.clone());
        Ok(fresh)
    }

    /// The provider refused the credential: the next [`get`](Self::get) fetches anew.
    pub async fn forget(&self) {
        *self.current.lock().await = None;
    }
}
