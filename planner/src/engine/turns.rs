//! Whole-zone reads take turns: at most [`WHOLE_READS_AT_ONCE`] at once, and a read
//! that stalls gives its turn back.
//!
//! Why a bound: a read holds its zone's records as they arrive until its view is
//! built, and at start every target of every zone reads. Unbounded, the planner's peak
//! (and what the allocator keeps after it) grew with the number of targets, not with
//! what it keeps. Reads are paced by the appliers' quotas anyway, so the bound costs a
//! start little time.
//!
//! Why a stall, not a wait: the bound is on memory, never on progress, so a read stuck
//! elsewhere (an applier that never answers) must not keep others waiting. An earlier
//! rule let a read go ahead after waiting 5 s for its turn; at start, with hundreds of
//! targets, most reads waited that long behind reads that were merely busy, and all
//! went at once (a 3-target planner peaked at 138 MB of heap for 38 MB kept). A turn
//! is given back only by a read that has received nothing for
//! [`WHOLE_READ_STALL`]: while reads progress, they keep the bound; when they stall,
//! they free it.
use super::Engine;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::SemaphorePermit;
use tokio::time::Instant;

/// How many targets read their whole zone at once.
pub(super) const WHOLE_READS_AT_ONCE: usize = 8;

/// How long a read holding a turn may receive nothing before it gives the turn back.
pub(super) const WHOLE_READ_STALL: Duration = Duration::from_secs(5);

/// When a read last received something, for [`Engine::in_turn`].
#[derive(Debug)]
pub(super) struct ReadProgress {
    began: Instant,
    /// Milliseconds from `began` to the last page.
    last: AtomicU64,
}

impl ReadProgress {
    pub fn new() -> ReadProgress {
        ReadProgress {
            began: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    /// A page arrived.
    pub fn tick(&self) {
        let ms = u64::try_from(self.began.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, Ordering::Relaxed);
    }

    /// When the read stalls if nothing more arrives.
    fn stalls_at(&self, stall: Duration) -> Instant {
        self.began + Duration::from_millis(self.last.load(Ordering::Relaxed)) + stall
    }
}

impl Engine {
    /// Runs `read` in a whole-read turn: waits for one, and gives it back if `progress`
    /// shows nothing received for [`WHOLE_READ_STALL`]. Returns what `read` gave and
    /// the turn if still held (kept until the view is built).
    pub(super) async fn in_turn<T>(
        &self,
        progress: &ReadProgress,
        read: impl Future<Output = T>,
    ) -> (T, Option<SemaphorePermit<'_>>) {
        // The read begins once it has a turn; its stall counts from then. (The
        // semaphore is never closed.)
        let mut turn = self.whole_reads.acquire().await.ok();
        progress.tick();
        tokio::pin!(read);
        let stall = self.whole_read_stall();
        loop {
            tokio::select! {
                r = &mut read => return (r, turn),
                () = tokio::time::sleep_until(progress.stalls_at(stall)), if turn.is_some() => {
                    if Instant::now() >= progress.stalls_at(stall) {
                        tracing::debug!(
                            stalled_for = ?stall,
                            "A zone read received nothing for a while; it gives its turn back."
                        );
                        turn = None;
                    }
                }
            }
        }
    }

    fn whole_read_stall(&self) -> Duration {
        Duration::from_millis(self.whole_read_stall_ms.load(Ordering::Relaxed))
    }
}
