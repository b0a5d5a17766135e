//! The driver loop: a standby tries to acquire every `retry_interval`; the leader
//! renews every `renew_interval`, moves its window on after each successful renewal,
//! and steps down when a renewal is refused or the window closes without one (every
//! backend call is raced against the window's end, so a hung backend cannot stretch
//! it). On shutdown it closes the window, then releases.
use super::{
    Acquire, Claimer, FencedBy, Identity, LeaseBackend, LeaseError, LeaseHandle, LeaseSettings,
    LeaseStatus, Permit, Role,
};
use crate::events;
use crate::metrics::PlannerMetrics;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The lease while this planner holds it.
#[derive(Debug, Clone, Copy)]
struct Held {
    epoch: u64,
    /// The window's end (`None`: the lease does not lapse).
    until: Option<Instant>,
    next_renew: Instant,
}

/// The driver: acquires, renews, steps down; see the module doc.
#[derive(Debug)]
pub struct Lease {
    backend: Box<dyn LeaseBackend>,
    settings: LeaseSettings,
    handle: LeaseHandle,
    metrics: PlannerMetrics,
    /// The appliers, for claims and heartbeats; `None`: batches alone carry the claim.
    claimer: Option<Box<dyn Claimer>>,
}

impl Lease {
    /// A driver for `identity` over `backend`, and the handle the engine reads; the
    /// planner is standby until [`Lease::run`] acquires.
    pub fn new(
        backend: Box<dyn LeaseBackend>,
        identity: Identity,
        settings: LeaseSettings,
        metrics: PlannerMetrics,
    ) -> (Lease, LeaseHandle) {
        let status = LeaseStatus {
            role: Role::Standby,
            backend: backend.kind(),
            location: backend.location(),
            identity: identity.to_string(),
            holder: None,
            epoch: 0,
            since: SystemTime::now(),
            last_error: String::new(),
            fenced: None,
        };
        let handle = LeaseHandle::new(
            identity,
            status,
            None,
            (settings.ttl, backend.claim_id()),
            Some(metrics.clone()),
        );
        let lease = Lease {
            backend,
            settings,
            handle: handle.clone(),
            metrics,
            claimer: None,
        };
        (lease, handle)
    }

    /// Claims at the appliers through `claimer`: before leading, at every renewal (the
    /// heartbeat), and while fenced (to take over again).
    pub fn with_claimer(mut self, claimer: Box<dyn Claimer>) -> Lease {
        self.claimer = Some(claimer);
        self
    }

    /// Asks the appliers for the claim under `epoch`; `None`: granted (or nobody to ask).
    async fn claim(&self, epoch: u64, until: Option<Instant>) -> Option<FencedBy> {
        let claimer = self.claimer.as_ref()?;
        let info = self.handle.claim_info(&Permit { epoch, until });
        claimer.claim(&info).await
    }

    /// Runs until `cancel`; then, if leader, closes the window and releases the lease.
    pub async fn run(self, cancel: CancellationToken) {
        let holder = self.handle.identity().to_string();
        let s = self.settings;
        let mut held: Option<Held> = None;
        loop {
            match held {
                None => {
                    let started = Instant::now();
                    let answer = tokio::select! {
                        _ = cancel.cancelled() => break,
                        a = bounded(s.op_timeout(), self.backend.try_acquire(&holder, s.ttl)) => a,
                    };
                    match answer {
                        Ok(Acquire::Acquired { epoch }) => {
                            let until = self.backend.expires().then(|| started + s.window());
                            // An answer that came too late to use: the next attempt
                            // takes it again (it is ours).
                            if until.is_none_or(|u| Instant::now() < u) {
                                held = Some(Held {
                                    epoch,
                                    until,
                                    next_renew: started + s.renew_interval,
                                });
                                // Another writer the appliers serve: fenced from the start.
                                let refused = tokio::select! {
                                    _ = cancel.cancelled() => break,
                                    f = self.claim(epoch, until) => f,
                                };
                                match refused {
                                    None => self.lead(epoch, until, false),
                                    Some(by) => {
                                        self.handle.open_fenced(Permit { epoch, until });
                                        self.handle.fence(epoch, by);
                                    }
                                }
                                continue;
                            }
                        }
                        Ok(Acquire::Held { holder, epoch }) => self.stand_by_for(holder, epoch),
                        Err(e) => self.failed(&e, false),
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        _ = tokio::time::sleep(s.retry_interval) => {}
                    }
                }
                Some(mut h) => {
                    let wake = h.until.map_or(h.next_renew, |u| u.min(h.next_renew));
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        _ = tokio::time::sleep_until(wake) => {}
                    }
                    let started = Instant::now();
                    if h.until.is_some_and(|u| started >= u) {
                        self.step_down(h.epoch, "expired");
                        held = None;
                        continue;
                    }
                    let renew = bounded(s.op_timeout(), self.backend.renew(&holder, s.ttl));
                    let closes = async {
                        match h.until {
                            Some(u) => tokio::time::sleep_until(u).await,
                            None => std::future::pending().await,
                        }
                    };
                    let answer = tokio::select! {
                        _ = cancel.cancelled() => break,
                        // The window closed while the backend was still answering.
                        _ = closes => None,
                        a = renew => Some(a),
                    };
                    match answer {
                        Some(Ok(true)) => {
                            h.until = self.backend.expires().then(|| started + s.window());
                            h.next_renew = started + s.renew_interval;
                            self.window(Some(Permit {
                                epoch: h.epoch,
                                until: h.until,
                            }));
                            let next = tokio::select! {
                                _ = cancel.cancelled() => { held = Some(h); break }
                                n = self.at_the_appliers(h) => n,
                            };
                            held = next;
                        }
                        Some(Ok(false)) => {
                            self.step_down(h.epoch, "lost");
                            held = None;
                        }
                        Some(Err(e)) => {
                            self.failed(&e, true);
                            h.next_renew = Instant::now() + s.retry_interval.min(s.renew_interval);
                            held = Some(h);
                        }
                        None => {
                            self.step_down(h.epoch, "expired");
                            held = None;
                        }
                    }
                }
            }
        }
        if let Some(h) = held {
            self.step_down(h.epoch, "released");
            if let Err(e) = bounded(s.op_timeout(), self.backend.release(&holder)).await {
                self.failed(&e, false);
            }
        }
    }

    /// After a renewal: the leader's heartbeat (a refused one fences it), or, while
    /// fenced, a try to take over: when the appliers grant the claim again, a new epoch
    /// from the backend and leading under it. `None`: the lease is lost.
    async fn at_the_appliers(&self, mut h: Held) -> Option<Held> {
        if !self.handle.is_fenced() {
            if let Some(by) = self.claim(h.epoch, h.until).await {
                self.handle.fence(h.epoch, by);
            }
            return Some(h);
        }
        if self.claim(h.epoch, h.until).await.is_some() {
            return Some(h);
        }
        let holder = self.handle.identity().to_string();
        match bounded(
            self.settings.op_timeout(),
            self.backend.bump(&holder, self.settings.ttl),
        )
        .await
        {
            Ok(Some(epoch)) => {
                h.epoch = epoch;
                if let Some(by) = self.claim(epoch, h.until).await {
                    // Someone came back in between: still fenced, under the new epoch.
                    self.handle.set_window(Some(Permit {
                        epoch,
                        until: h.until,
                    }));
                    self.handle.fence(epoch, by);
                    return Some(h);
                }
                self.lead(epoch, h.until, true);
                Some(h)
            }
            Ok(None) => {
                self.step_down(h.epoch, "lost");
                None
            }
            Err(e) => {
                self.failed(&e, true);
                Some(h)
            }
        }
    }

    /// Opens the window, then tells everyone; `took_over`: after being fenced.
    fn lead(&self, epoch: u64, until: Option<Instant>, took_over: bool) {
        let was = self.handle.status().fenced;
        self.handle.unfence(Permit { epoch, until });
        let identity = self.handle.identity().to_string();
        self.handle.shared.status.send_modify(|st| {
            st.role = Role::Leader;
            st.holder = Some(identity.clone());
            st.epoch = epoch;
            st.since = SystemTime::now();
            st.last_error.clear();
            st.fenced = None;
        });
        if took_over {
            events::LeaseTookOver {
                identity: &identity,
                epoch,
                from: was.as_ref().map_or("", |f| f.holder.as_str()),
            }
            .emit(&self.metrics);
        }
        events::LeaseChanged {
            backend: self.backend.kind(),
            identity: &identity,
            leader: true,
            epoch,
            reason: if took_over { "took_over" } else { "acquired" },
        }
        .emit(&self.metrics);
    }

    /// A renewal: the window moves on, the role does not change (nobody is woken).
    fn window(&self, permit: Option<Permit>) {
        self.handle.set_window(permit);
        self.handle.shared.status.send_if_modified(|st| {
            st.last_error.clear();
            false
        });
    }

    /// Closes the window first (no batch passes [`LeaseHandle::permit`] from here on),
    /// then tells everyone.
    fn step_down(&self, epoch: u64, reason: &'static str) {
        self.handle.close();
        self.handle.shared.status.send_modify(|st| {
            st.role = Role::Standby;
            st.holder = None;
            st.since = SystemTime::now();
            st.fenced = None;
        });
        events::LeaseChanged {
            backend: self.backend.kind(),
            identity: &self.handle.shared.identity.to_string(),
            leader: false,
            epoch,
            reason,
        }
        .emit(&self.metrics);
    }

    /// A standby learns who holds the lease.
    fn stand_by_for(&self, holder: String, epoch: u64) {
        let kind = self.backend.kind();
        self.handle.shared.status.send_if_modified(|st| {
            st.last_error.clear();
            if st.holder.as_deref() == Some(holder.as_str()) && st.epoch == epoch {
                return false;
            }
            events::LeaseHeldElsewhere {
                backend: kind,
                holder: &holder,
                epoch,
            }
            .emit();
            st.holder = Some(holder);
            st.epoch = epoch;
            true
        });
    }

    /// The backend failed; logged when the error is new.
    fn failed(&self, e: &LeaseError, leader: bool) {
        let text = e.to_string();
        let kind = self.backend.kind();
        self.handle.shared.status.send_if_modified(|st| {
            if st.last_error != text {
                events::LeaseBackendFailed {
                    backend: kind,
                    leader,
                    error: &text,
                }
                .emit();
                st.last_error = text;
            }
            false
        });
    }
}

async fn bounded<T>(
    timeout: Duration,
    f: impl Future<Output = Result<T, LeaseError>>,
) -> Result<T, LeaseError> {
    tokio::time::timeout(timeout, f)
        .await
        .unwrap_or(Err(LeaseError::Timeout(timeout)))
}
