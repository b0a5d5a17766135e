//! One writer per owner id: the planner lease. Two planners with the same `owner_id`
//! would each delete the records only the other desires, so a planner sends batches
//! only while it holds the lease; the others stand by (they still answer reads) and
//! take over when the holder dies.
//!
//! - [`LeaseBackend`]: where the lease lives, three operations keyed by the holder's
//!   identity. [`RedisBackend`] (`[lease] redis`: planners on several machines) and
//!   [`FileBackend`] (an exclusive lock on `<state_dir>/lease.lock`: planners sharing
//!   one state directory).
//! - [`Lease`]: the driver loop. A standby tries to acquire every `retry_interval`; the
//!   leader renews every `renew_interval` and steps down when a renewal is refused, or
//!   when its window closes without one.
//! - [`LeaseHandle`]: what the engine reads: [`LeaseHandle::permit`] before every
//!   batch, and the role (a `watch` channel) to hold zone syncs while standby and to
//!   sync every zone at once on becoming leader.
//!
//! **The safety rule.** A lease that lapses by itself (Redis) is the leader's only
//! until `start of its last successful renewal + ttl − margin`: that instant is
//! before the backend can let the lease go (the backend's own `ttl` starts later,
//! when it handles the renewal), so the old leader's window has closed before a
//! standby can acquire. The window is checked at each batch, not only by the loop, so
//! a stalled loop cannot stretch it; and each batch's deadline is capped to it, so an
//! applier will not start work for it later (a provider call already under way at
//! that instant may still finish: the margin, `ttl / 5`, is there for it).
//!
//! **Fencing at the appliers.** Each applier keeps one writer per owner id, its
//! *claim* (holder, epoch, backend, last seen): batches carry it, and the leader
//! refreshes it with a `Claim` heartbeat at every renewal ([`Claimer`]). A planner that
//! an applier refuses (another holder's claim is fresh: two planners with no shared
//! lease, or this one lost the lease) becomes [`Role::Fenced`]: it sends nothing,
//! status says why (failing), and it asks again at every renewal; once the other has
//! been silent for its ttl the claim is granted, and it takes a new epoch from the
//! backend and leads again ([`fence`](LeaseHandle::fence), the driver).
//!
//! **A third backend.** A Kubernetes `coordination.k8s.io/v1` Lease maps onto the
//! trait as it is: `try_acquire` reads the Lease and, when `renewTime +
//! leaseDurationSeconds` has passed (or the holder is us), replaces it with our
//! `holderIdentity` and `leaseTransitions + 1` (the epoch) under its
//! `resourceVersion`, so that of two racing standbys one gets 409 Conflict and stays
//! standby; `renew` writes `renewTime` under the `resourceVersion`, `Ok(false)` when
//! the holder is someone else; `release` clears `holderIdentity`. It would be one file
//! here and one arm in [`backend`].
use crate::config::PlannerConfig;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;
use tokio::time::Instant;

mod advert;
mod driver;
mod file;
mod redis;
#[cfg(test)]
mod tests;

pub use self::advert::{ADDRESS_FILE, Advert, advertised};
pub use self::driver::Lease;
pub use self::file::FileBackend;
pub use self::redis::RedisBackend;

/// This planner process as a lease holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub host: String,
    pub pid: u32,
    /// Random per process; batch ids carry it too (`<zone>-<run>-<sync>-<batch>`), so a
    /// batch in an applier's log names the planner that sent it.
    pub run: String,
}

impl Identity {
    /// This process: the host name (`HOSTNAME`, the pod name in Kubernetes, else the
    /// kernel's), the pid and a fresh run id.
    pub fn new() -> Identity {
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        Identity {
            host,
            pid: std::process::id(),
            run: format!("{:06x}", rand::random::<u32>() & 0xff_ffff),
        }
    }
}

impl Default for Identity {
    fn default() -> Self {
        Identity::new()
    }
}

/// `host/pid/run`.
impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.host, self.pid, self.run)
    }
}

/// The answer to [`LeaseBackend::try_acquire`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    /// The lease is ours, under a new `epoch` (larger than any before it).
    Acquired { epoch: u64 },
    /// Someone else holds it.
    Held { holder: String, epoch: u64 },
}

/// Why a backend could not answer. The lease is then not ours (standby) or, for a
/// leader, ours only until its window closes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("Redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    #[error("Redis answered something unexpected: {0}")]
    Protocol(String),
    #[error(
        "state_dir {path}: {source} (the lease's lock file lives there: make it a writable directory, or use [lease] redis)"
    )]
    StateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where the lease lives. Every operation names the holder, so that renewing or
/// releasing is a compare-and-set on it: a planner can never renew or drop a lease
/// someone else has taken.
#[async_trait::async_trait]
pub trait LeaseBackend: Send + Sync + fmt::Debug {
    /// `redis`, `file` (for status, logs and metrics).
    fn kind(&self) -> &'static str;
    /// Where, for status: `host:port` (never credentials), a path.
    fn location(&self) -> String;
    /// Whether a grant lapses by itself `ttl` after its last renewal (Redis, a
    /// Kubernetes Lease), or is held until released or the process dies (a file lock):
    /// only the first kind bounds the leader's window.
    fn expires(&self) -> bool;
    /// Takes the lease for `holder` if nobody holds it (or `holder` does), for `ttl`.
    async fn try_acquire(&self, holder: &str, ttl: Duration) -> Result<Acquire, LeaseError>;
    /// Extends `holder`'s lease by `ttl` from now; `Ok(false)` when `holder` does not
    /// hold it (any more).
    async fn renew(&self, holder: &str, ttl: Duration) -> Result<bool, LeaseError>;
    /// Lets the lease go if `holder` holds it, so a standby need not wait for it to
    /// lapse.
    async fn release(&self, holder: &str) -> Result<(), LeaseError>;
    /// A new epoch, larger than every one before, for `holder` while it holds the
    /// lease (`None` when it does not): a fenced leader takes one when it takes over
    /// at the appliers again.
    async fn bump(&self, holder: &str, ttl: Duration) -> Result<Option<u64>, LeaseError>;
    /// The backend as the appliers tell backends apart (`redis host:port`,
    /// `file host:/path`): epochs of different backends are never compared.
    fn claim_id(&self) -> String {
        format!("{} {}", self.kind(), self.location())
    }
}

/// What a planner's batches and heartbeats tell the appliers about its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimInfo {
    pub epoch: u64,
    /// This planner as a holder (`host/pid/run`).
    pub holder: String,
    /// [`LeaseBackend::claim_id`].
    pub backend: String,
    pub ttl: Duration,
}

/// An applier refused this planner's batch or claim: another holds the owner's claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedBy {
    pub epoch: u64,
    pub holder: String,
    /// The two planners share a lease backend (this one lost the lease).
    pub shared_backend: bool,
    /// The applier's words: what happened, what to do.
    pub message: String,
}

/// Claims this planner's lease at the appliers (the pool, in the planner).
#[async_trait::async_trait]
pub trait Claimer: Send + Sync + fmt::Debug {
    /// Claims `claim` at every applier; `Some` when one of them refused it. An applier
    /// that does not answer refuses nothing (its batches will carry the claim).
    async fn claim(&self, claim: &ClaimInfo) -> Option<FencedBy>;
}

/// The backend `config` asks for: Redis when `[lease] redis` is set, else the lock
/// file in the state directory (created if missing).
pub fn backend(config: &PlannerConfig) -> Result<Box<dyn LeaseBackend>, LeaseError> {
    let settings = LeaseSettings::from_config(config);
    Ok(match &config.lease.redis {
        Some(url) => Box::new(RedisBackend::new(
            url,
            &config.owner_id,
            settings.op_timeout(),
        )?),
        None => Box::new(FileBackend::new(&config.state_dir)?),
    })
}

/// The lease's timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseSettings {
    pub ttl: Duration,
    pub renew_interval: Duration,
    pub retry_interval: Duration,
}

impl LeaseSettings {
    pub fn from_config(config: &PlannerConfig) -> LeaseSettings {
        LeaseSettings {
            ttl: config.lease.ttl,
            renew_interval: config.lease.renew_interval(),
            retry_interval: config.lease.retry_interval,
        }
    }

    /// How much of the `ttl` the leader gives up: its window closes this long before
    /// the backend can let the lease go.
    pub fn margin(&self) -> Duration {
        self.ttl / 5
    }

    /// How long after the start of a successful renewal the leader may write.
    pub fn window(&self) -> Duration {
        self.ttl - self.margin()
    }

    /// The longest one backend operation may take.
    fn op_timeout(&self) -> Duration {
        self.renew_interval
    }
}

/// Leader (may write), standby (must not), or fenced: holds its lease, but an applier
/// serves another writer of the owner (it must not write either).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Standby,
    Fenced,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Standby => "standby",
            Role::Fenced => "fenced",
        }
    }
}

/// The lease as status shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseStatus {
    pub role: Role,
    /// `redis`, `file`; `none` for an engine that was built as the sole writer.
    pub backend: &'static str,
    /// Where the lease lives (`host:port`, a path).
    pub location: String,
    /// This planner as a holder.
    pub identity: String,
    /// Who holds it, as last seen: this planner when leader; another (if known) on
    /// standby.
    pub holder: Option<String>,
    /// The holder's epoch, as last seen (0: unknown).
    pub epoch: u64,
    /// When this planner took its current role.
    pub since: SystemTime,
    /// The backend's last error, until an operation succeeds again.
    pub last_error: String,
    /// While [`Role::Fenced`]: who fenced this planner, and the applier's words.
    pub fenced: Option<FencedBy>,
}

/// Leave to write, for one batch: the epoch under which it is sent, and until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permit {
    pub epoch: u64,
    /// The leader's window closes here; `None`: the lease does not lapse by itself.
    until: Option<Instant>,
}

impl Permit {
    /// `deadline`, cut to the end of the leader's window: an applier answers DEFERRED
    /// rather than start work past it.
    pub fn cap(&self, deadline: SystemTime) -> SystemTime {
        match self.until {
            Some(u) => {
                let left = u.saturating_duration_since(Instant::now());
                deadline.min(SystemTime::now() + left)
            }
            None => deadline,
        }
    }
}

/// The leader's window and whether an applier fenced it, under one lock: a renewal
/// moves the window on, but only [`LeaseHandle::unfence`] reopens a fenced one.
#[derive(Debug, Default)]
struct Window {
    /// `Some` only while leader.
    permit: Option<Permit>,
    fenced: bool,
}

/// What the driver and the engine share.
#[derive(Debug)]
struct Shared {
    identity: Identity,
    window: Mutex<Window>,
    status: watch::Sender<LeaseStatus>,
    /// The claim's ttl and the backend's [`LeaseBackend::claim_id`].
    ttl: Duration,
    backend_id: String,
    metrics: Option<crate::metrics::PlannerMetrics>,
}

/// The engine's view of the lease. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LeaseHandle {
    shared: Arc<Shared>,
}

impl LeaseHandle {
    fn new(
        identity: Identity,
        status: LeaseStatus,
        window: Option<Permit>,
        (ttl, backend_id): (Duration, String),
        metrics: Option<crate::metrics::PlannerMetrics>,
    ) -> LeaseHandle {
        LeaseHandle {
            shared: Arc::new(Shared {
                identity,
                window: Mutex::new(Window {
                    permit: window,
                    fenced: false,
                }),
                status: watch::Sender::new(status),
                ttl,
                backend_id,
                metrics,
            }),
        }
    }

    /// A lease that is always held and never lapses, for an engine that is known to be
    /// the only writer of its owner id (benchmarks, in-process tests). `run` never
    /// uses it.
    pub fn sole_writer() -> LeaseHandle {
        let identity = Identity::new();
        let status = LeaseStatus {
            role: Role::Leader,
            backend: "none",
            location: String::new(),
            identity: identity.to_string(),
            holder: Some(identity.to_string()),
            epoch: 0,
            since: SystemTime::now(),
            last_error: String::new(),
            fenced: None,
        };
        LeaseHandle::new(
            identity,
            status,
            Some(Permit {
                epoch: 0,
                until: None,
            }),
            (Duration::from_secs(10), "none".into()),
            None,
        )
    }

    pub fn identity(&self) -> &Identity {
        &self.shared.identity
    }

    /// Leave to send one batch now: `None` on standby, and once the leader's window
    /// has closed (even before the driver notices).
    pub fn permit(&self) -> Option<Permit> {
        let w = self.window();
        w.permit
            .filter(|_| !w.fenced)
            .filter(|p| p.until.is_none_or(|u| Instant::now() < u))
    }

    /// What batches sent under `permit` tell the appliers.
    pub fn claim_info(&self, permit: &Permit) -> ClaimInfo {
        ClaimInfo {
            epoch: permit.epoch,
            holder: self.shared.identity.to_string(),
            backend: self.shared.backend_id.clone(),
            ttl: self.shared.ttl,
        }
    }

    /// An applier refused a batch sent under `epoch`: another planner writes for the
    /// owner. Closes the window (no batch passes [`LeaseHandle::permit`] from here on)
    /// until the driver takes over again; said once, however many batches come back
    /// refused. A refusal of an epoch this planner no longer leads under is old news.
    pub fn fence(&self, epoch: u64, by: FencedBy) {
        {
            let mut w = self.window();
            if w.permit.is_none_or(|p| p.epoch != epoch) {
                return;
            }
            w.fenced = true;
        }
        let mut first = false;
        self.shared.status.send_if_modified(|st| {
            first = st.role != Role::Fenced;
            let changed = first || st.fenced.as_ref() != Some(&by);
            st.role = Role::Fenced;
            st.holder = Some(by.holder.clone());
            st.epoch = by.epoch;
            if first {
                st.since = SystemTime::now();
            }
            st.fenced = Some(by.clone());
            changed
        });
        if first {
            crate::events::LeaseFenced {
                identity: &self.shared.identity.to_string(),
                epoch,
                by_holder: &by.holder,
                by_epoch: by.epoch,
                shared_backend: by.shared_backend,
                reason: &by.message,
            }
            .emit(self.shared.metrics.as_ref());
        }
    }

    /// Whether an applier has fenced this planner (and it has not taken over since).
    pub fn is_fenced(&self) -> bool {
        self.window().fenced
    }

    fn window(&self) -> std::sync::MutexGuard<'_, Window> {
        self.shared
            .window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn status(&self) -> LeaseStatus {
        self.shared.status.borrow().clone()
    }

    /// The status, to wait on: it changes on every role change (and when a standby
    /// sees a new holder).
    pub fn subscribe(&self) -> watch::Receiver<LeaseStatus> {
        self.shared.status.subscribe()
    }

    /// Moves the window (`None`: closes it); a fenced one stays fenced.
    fn set_window(&self, window: Option<Permit>) {
        self.window().permit = window;
    }

    /// Holds `permit` but fenced from the start: nothing passes until [`Self::unfence`].
    fn open_fenced(&self, permit: Permit) {
        let mut w = self.window();
        w.permit = Some(permit);
        w.fenced = true;
    }

    /// Closes the window and forgets any fencing (standing by).
    fn close(&self) {
        let mut w = self.window();
        w.permit = None;
        w.fenced = false;
    }

    /// Opens the window under `permit` and forgets any fencing (leading anew).
    fn unfence(&self, permit: Permit) {
        let mut w = self.window();
        w.permit = Some(permit);
        w.fenced = false;
    }
}
