//! One Redis connection, made at first use and bounded in time: what the planner's
//! lease and the applier's shared quota both need. Connecting is one attempt per
//! call (no reconnection retries queued behind it: each caller has its own clock for
//! trying again), and every answer is waited for at most `timeout`.
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::future::Future;
use std::time::Duration;
use tokio::sync::Mutex;

/// A Redis at a URL, connected lazily.
pub struct LazyRedis {
    client: redis::Client,
    conn: Mutex<Option<ConnectionManager>>,
    timeout: Duration,
}

/// Why a bounded call failed.
#[derive(Debug, thiserror::Error)]
pub enum RedisCallError {
    #[error("Redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
}

/// Never the URL: it may carry a password.
impl std::fmt::Debug for LazyRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyRedis")
            .field("addr", &self.addr())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LazyRedis {
    /// Parses `url` (`redis://[user:password@]host:port[/db]`); makes no connection.
    pub fn new(url: &str, timeout: Duration) -> Result<LazyRedis, redis::RedisError> {
        Ok(LazyRedis {
            client: redis::Client::open(url)?,
            conn: Mutex::new(None),
            timeout,
        })
    }

    /// `host:port`, never the credentials: for status and logs.
    pub fn addr(&self) -> String {
        self.client.get_connection_info().addr().to_string()
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The connection (made on first use, one attempt, bounded by `timeout`).
    pub async fn conn(&self) -> Result<ConnectionManager, redis::RedisError> {
        let mut guard = self.conn.lock().await;
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(0)
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let c = ConnectionManager::new_lazy_with_config(self.client.clone(), config)?;
        *guard = Some(c.clone());
        Ok(c)
    }

    /// `f` (a call on the connection), waited for at most `timeout`.
    pub async fn bounded<T>(
        &self,
        f: impl Future<Output = Result<T, redis::RedisError>>,
    ) -> Result<T, RedisCallError> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(RedisCallError::Timeout(self.timeout)),
        }
    }
}
