//! Fencing by *claim*: one writer per owner id, as this applier sees it.
//!
//! Per owner the applier keeps the writer it last served: its lease holder identity
//! (`host/pid/run`), the lease epoch and the backend that issued it, its ttl and when
//! it was last seen (a batch, or a `Claim` heartbeat). A batch or claim of another
//! holder is refused while that claim is fresh (seen within its ttl), with two
//! exceptions that keep failover fast and safe:
//!
//! - the same lease backend issued a larger epoch: the backend itself says the old
//!   holder lost the lease, so the new one takes over at once;
//! - the claim is stale: its holder has been silent for its ttl, so anyone may take it.
//!
//! Why not "the largest epoch wins", as before: epochs from two backends (two lock
//! files, a restarted Redis) cannot be compared, so a brief second planner with its own
//! state dir could win for good; and a made-up epoch of 2^64-1 would lock everyone out.
//! A claim cannot strand anyone: at worst a writer that stops talking is replaced one
//! ttl later.
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The ttl of a claim whose planner sent none (an older planner).
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// A planner's lease as a batch or a claim carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub owner: String,
    pub epoch: u64,
    /// The lease holder (`host/pid/run`); empty from an older planner.
    pub holder: String,
    /// The lease backend that issued `epoch` (`redis host:port`, `file host:/path`).
    pub backend: String,
    /// How long the claim lasts without a batch or heartbeat.
    pub ttl: Duration,
}

/// Why a batch or claim was refused: who holds the owner's claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    pub epoch: u64,
    pub holder: String,
    pub backend: String,
    /// The refused planner's lease backend is the holder's: it lost the lease. Else the
    /// two do not share a lease at all.
    pub shared_backend: bool,
    /// For people: what happened and what to do.
    pub message: String,
}

/// What passing the fence did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Passed {
    /// The claim was this holder's already, or nobody's.
    Kept,
    /// The claim was another's: it lapsed (`stale`), or its backend issued a larger
    /// epoch.
    TookOver { from: String, stale: bool },
}

#[derive(Debug, Clone)]
struct Claim {
    epoch: u64,
    holder: String,
    backend: String,
    ttl: Duration,
    seen: Instant,
}

/// Every owner's claim on this applier (in memory: a restarted applier learns the
/// writer from its next batch or heartbeat).
#[derive(Debug, Default)]
pub struct Claims {
    by_owner: Mutex<HashMap<String, Claim>>,
}

impl Claims {
    /// Lets `f` write now (taking or refreshing the owner's claim), or says who holds
    /// it.
    pub fn pass(&self, f: &Fence, now: Instant) -> Result<Passed, Fenced> {
        let mut by_owner = self
            .by_owner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mine = Claim {
            epoch: f.epoch,
            holder: f.holder.clone(),
            backend: f.backend.clone(),
            ttl: f.ttl,
            seen: now,
        };
        let Some(c) = by_owner.get(&f.owner) else {
            by_owner.insert(f.owner.clone(), mine);
            return Ok(Passed::Kept);
        };
        let silent = now.saturating_duration_since(c.seen);
        let stale = silent >= c.ttl;
        let shared = !f.backend.is_empty() && f.backend == c.backend;
        // (Two planners that name no holder, older ones, compare epochs alone.)
        let passed = if c.holder == f.holder {
            // A holder's own older epoch: sent before it lost and took its lease again.
            (f.epoch >= c.epoch || stale).then_some(Passed::Kept)
        } else if stale || (shared && f.epoch > c.epoch) {
            Some(Passed::TookOver {
                from: c.holder.clone(),
                stale,
            })
        } else {
            None
        };
        match passed {
            Some(p) => {
                by_owner.insert(f.owner.clone(), mine);
                Ok(p)
            }
            None => Err(refusal(f, c, silent, shared)),
        }
    }
}

fn refusal(f: &Fence, c: &Claim, silent: Duration, shared: bool) -> Fenced {
    let holder = if c.holder.is_empty() {
        "a planner that names no holder"
    } else {
        c.holder.as_str()
    };
    let wait = c.ttl.saturating_sub(silent);
    let message = if shared || f.holder == c.holder {
        format!(
            "owner {:?} is written by {holder} under lease epoch {} (this batch: epoch {}): this planner lost the lease; it may write again once that writer has been silent for {:?}",
            f.owner, c.epoch, f.epoch, c.ttl
        )
    } else {
        format!(
            "owner {:?} is written by {holder} (lease: {}, epoch {}, seen {:.1}s ago), and this planner's lease ({}) is not shared with it: two planners of one owner_id must share one lease: configure [lease] redis on both, or give them the same state_dir; this planner may write once the other has been silent for {:?} ({:.1}s from now)",
            f.owner,
            if c.backend.is_empty() {
                "unknown"
            } else {
                c.backend.as_str()
            },
            c.epoch,
            silent.as_secs_f64(),
            if f.backend.is_empty() {
                "unknown"
            } else {
                f.backend.as_str()
            },
            c.ttl,
            wait.as_secs_f64(),
        )
    };
    Fenced {
        epoch: c.epoch,
        holder: c.holder.clone(),
        backend: c.backend.clone(),
        shared_backend: shared,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(holder: &str, backend: &str, epoch: u64) -> Fence {
        Fence {
            owner: "o".into(),
            epoch,
            holder: holder.into(),
            backend: backend.into(),
            ttl: Duration::from_secs(10),
        }
    }

    #[test]
    fn another_backend_waits_for_the_holder_to_be_silent_for_its_ttl() {
        let claims = Claims::default();
        let t0 = Instant::now();
        assert_eq!(
            claims.pass(&fence("a", "file x:/a", 1), t0),
            Ok(Passed::Kept)
        );
        // A larger epoch from another backend means nothing.
        let e = claims
            .pass(
                &fence("b", "file x:/b", u64::MAX),
                t0 + Duration::from_secs(9),
            )
            .unwrap_err();
        assert_eq!(
            (e.holder.as_str(), e.epoch, e.shared_backend),
            ("a", 1, false)
        );
        assert!(e.message.contains("[lease] redis"), "{}", e.message);
        assert!(e.message.contains("state_dir"), "{}", e.message);
        // The holder keeps it fresh.
        let t1 = t0 + Duration::from_secs(8);
        assert_eq!(
            claims.pass(&fence("a", "file x:/a", 1), t1),
            Ok(Passed::Kept)
        );
        assert!(
            claims
                .pass(&fence("b", "file x:/b", 1), t1 + Duration::from_secs(9))
                .is_err()
        );
        // Silent for its ttl: b takes over, whatever the epochs; then a is refused.
        let t2 = t1 + Duration::from_secs(10);
        assert_eq!(
            claims.pass(&fence("b", "file x:/b", 1), t2),
            Ok(Passed::TookOver {
                from: "a".into(),
                stale: true
            })
        );
        assert!(claims.pass(&fence("a", "file x:/a", 5), t2).is_err());
    }

    #[test]
    fn the_same_backend_hands_over_at_once_on_a_larger_epoch_and_fences_the_older() {
        let claims = Claims::default();
        let t0 = Instant::now();
        let redis = "redis 127.0.0.1:6379";
        assert!(claims.pass(&fence("a", redis, 4), t0).is_ok());
        assert_eq!(
            claims.pass(&fence("b", redis, 5), t0),
            Ok(Passed::TookOver {
                from: "a".into(),
                stale: false
            })
        );
        let e = claims.pass(&fence("a", redis, 4), t0).unwrap_err();
        assert!(e.shared_backend);
        assert!(e.message.contains("lost the lease"), "{}", e.message);
        // A holder's own older epoch is refused too, while its newer one is fresh.
        assert!(claims.pass(&fence("b", redis, 6), t0).is_ok());
        assert!(claims.pass(&fence("b", redis, 5), t0).is_err());
    }
}
