//! The appliers as the lease's [`Claimer`]: a leader's claim (and heartbeat) goes to
//! every applier of the pool at once, each call bounded; one refusal fences the
//! planner. An applier that cannot be reached refuses nothing: the batches it gets
//! later carry the claim, and it refuses those if need be.
use crate::client;
use crate::lease::{ClaimInfo, Claimer, FencedBy};
use crate::pool::ApplierPool;
use std::sync::Arc;
use std::time::Duration;

/// Claims for `owner` at every applier of `pool`.
#[derive(Debug)]
pub struct PoolClaimer {
    pub pool: Arc<ApplierPool>,
    pub owner: String,
    /// The longest one applier may take to answer.
    pub timeout: Duration,
}

#[async_trait::async_trait]
impl Claimer for PoolClaimer {
    async fn claim(&self, claim: &ClaimInfo) -> Option<FencedBy> {
        let members = self.pool.members();
        let calls = members.iter().map(|m| async move {
            match tokio::time::timeout(self.timeout, client::claim(m, &self.owner, claim)).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(e)) => {
                    tracing::debug!(applier = %e.applier, code = ?e.code, error = %e.message, "Claim not answered.");
                    None
                }
                Err(_) => {
                    tracing::debug!(applier = %m.addr, timeout = ?self.timeout, "Claim not answered in time.");
                    None
                }
            }
        });
        futures::future::join_all(calls)
            .await
            .into_iter()
            .flatten()
            .next()
    }
}
