//! Taking over: a planner that becomes leader plans from what the old leader
//! acknowledged, never from less (issue 28).
//!
//! - Only the leader takes writes: a standby refuses every push, patch, approval and
//!   release with [`NotWritable`] (gRPC `UNAVAILABLE`, the webhook's 503), naming the
//!   leader's address as the leader published it beside the lease
//!   ([`crate::lease::Advert`]), so a client retries there.
//! - On becoming leader (each new epoch), the engine re-reads the push store (the
//!   shared state directory, or Redis) before any zone plans; until that read has
//!   succeeded nothing is planned and writes are refused, and a failed read is
//!   retried every `[lease] retry_interval` and shown in status. Never plan on doubt:
//!   a store that cannot be read is not "nothing pushed".
use super::{Engine, lock};
use crate::lease::{Advert, Role};
use crate::redis_store::Writer;
use crate::store::StoreError;
use std::sync::{Arc, OnceLock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Where the re-read of the push store stands, for the current leadership.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Reload {
    /// Not leader yet, or the read has not finished.
    #[default]
    NotYet,
    /// Read under this epoch: the engine may plan and take writes.
    Done { epoch: u64 },
    /// The read under this epoch failed (retried).
    Failed { epoch: u64, error: String },
}

/// The engine's takeover state.
#[derive(Debug)]
pub(super) struct Takeover {
    state: watch::Sender<Reload>,
    /// Where the leader's address is published, and this planner's address.
    advert: OnceLock<(Advert, String)>,
}

impl Default for Takeover {
    fn default() -> Self {
        Takeover {
            state: watch::Sender::new(Reload::NotYet),
            advert: OnceLock::new(),
        }
    }
}

/// Why a write is refused here.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotWritable {
    #[error("this planner is standby; the leader is {leader}")]
    Standby { leader: String },
    #[error(
        "this planner is taking over and re-reading the pushed desired state ({store}); retry in a moment"
    )]
    TakingOver { store: &'static str },
    #[error(
        "this planner leads but cannot read the pushed desired state ({error}); nothing is accepted or planned until it can"
    )]
    ReloadFailed { error: String },
}

/// The lease holder's identity and epoch, owned: what fences a Redis write.
#[derive(Debug)]
pub(super) struct OwnedWriter {
    holder: String,
    epoch: u64,
}

impl OwnedWriter {
    pub(super) fn get(&self) -> Writer<'_> {
        Writer {
            holder: &self.holder,
            epoch: self.epoch,
        }
    }
}

impl Engine {
    /// Publishes `address` as this planner's gRPC address whenever it becomes
    /// leader, in `advert` (set once, before [`Engine::start`]).
    pub fn set_advert(&self, advert: Advert, address: String) {
        let _ = self.takeover.advert.set((advert, address));
    }

    /// This planner as a writer, while it holds the lease.
    pub(super) fn writer(&self) -> Option<OwnedWriter> {
        let permit = self.lease.permit()?;
        Some(OwnedWriter {
            holder: self.lease.identity().to_string(),
            epoch: permit.epoch,
        })
    }

    /// The re-read's state now.
    pub fn reload_state(&self) -> Reload {
        self.takeover.state.borrow().clone()
    }

    /// Whether the push store was re-read under `epoch` (or there is no lease to
    /// take over: a sole writer).
    pub(super) fn reloaded(&self, epoch: u64) -> bool {
        self.lease.status().backend == "none"
            || matches!(*self.takeover.state.borrow(), Reload::Done { epoch: e } if e == epoch)
    }

    /// Waits until the push store was re-read under `epoch`.
    pub(super) async fn wait_reloaded(&self, epoch: u64) {
        let mut rx = self.takeover.state.subscribe();
        let _ = rx
            .wait_for(|s| matches!(s, Reload::Done { epoch: e } if *e == epoch))
            .await;
    }

    /// `Ok` when this planner may take a write (a push, a patch, an approval, a
    /// release): it leads and has re-read the push store since it took over.
    pub async fn writable(&self) -> Result<(), NotWritable> {
        let st = self.lease.status();
        if st.backend == "none" {
            return Ok(());
        }
        if let Some(permit) = self.lease.permit() {
            return match &*self.takeover.state.borrow() {
                Reload::Done { epoch } if *epoch == permit.epoch => Ok(()),
                Reload::Failed { epoch, error } if *epoch == permit.epoch => {
                    Err(NotWritable::ReloadFailed {
                        error: error.clone(),
                    })
                }
                _ => Err(NotWritable::TakingOver {
                    store: self.pushes.get().map_or("state_dir", |p| p.kind()),
                }),
            };
        }
        let leader = match (&st.holder, st.role) {
            (Some(h), Role::Standby) => {
                let addr = match self.takeover.advert.get() {
                    Some((advert, _)) => advert.read(h).await,
                    None => None,
                };
                match addr {
                    Some(a) => format!("{a} ({h})"),
                    None => format!("{h} (its address is not published yet; retry in a moment)"),
                }
            }
            _ => format!(
                "not known (the {} lease is not held now); retry in a moment",
                st.backend
            ),
        };
        Err(NotWritable::Standby { leader })
    }

    /// Waits (at most `limit`) until this planner takes writes, or stands by behind a
    /// known holder: so that a client calling right after the start is not refused
    /// only because the first lease attempt has not finished.
    pub async fn settled(&self, limit: std::time::Duration) {
        let until = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < until {
            let st = self.lease.status();
            if (st.role == Role::Standby && st.holder.is_some()) || self.writable().await.is_ok() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Re-reads the push store into the desired state (and the zones released to
    /// external-dns); with Redis, first imports the state directory's pushes once.
    fn reload(&self) -> Result<usize, StoreError> {
        let _one = lock(&self.push_lock);
        let Some(pushes) = self.pushes.get() else {
            return Ok(0);
        };
        if let Some(dir) = self.store.get() {
            let writer = self.writer();
            let n = pushes.import_once(dir, writer.as_ref().map(OwnedWriter::get))?;
            if n > 0 {
                tracing::info!(
                    sources = n,
                    store = pushes.kind(),
                    "Pushed sources of the state directory imported into the shared store."
                );
            }
        }
        let mut records = 0;
        for (name, entries) in pushes.read_all()? {
            records += entries.len();
            self.set_source(&name, entries, Vec::new());
        }
        self.restore_releases()?;
        Ok(records)
    }

    /// Runs the takeover: at each new leadership, re-reads the push store (retried
    /// until it succeeds or the leadership ends) and publishes this planner's address.
    pub(super) fn spawn_takeover(self: &Arc<Self>, cancel: CancellationToken) {
        let engine = self.clone();
        self.tasks.spawn(async move {
            let mut lease = engine.lease.subscribe();
            loop {
                let (leader, epoch, backend) = {
                    let st = lease.borrow_and_update();
                    (st.role == Role::Leader, st.epoch, st.backend)
                };
                let done = matches!(*engine.takeover.state.borrow(), Reload::Done { epoch: e } if e == epoch);
                if leader && !done {
                    let result = match backend {
                        "none" => Ok(0),
                        _ => Engine::cpu(|| engine.reload()),
                    };
                    match result {
                        Ok(records) => {
                            tracing::info!(
                                epoch,
                                records,
                                "Taking over: the pushed desired state re-read; planning from it."
                            );
                            engine.takeover.state.send_replace(Reload::Done { epoch });
                            engine.publish_address().await;
                        }
                        Err(e) => {
                            tracing::warn!(epoch, error = %e, "Taking over: cannot read the pushed desired state; nothing is planned until it can be read.");
                            engine.takeover.state.send_replace(Reload::Failed {
                                epoch,
                                error: e.to_string(),
                            });
                            tokio::select! {
                                _ = cancel.cancelled() => return,
                                _ = tokio::time::sleep(engine.config.lease.retry_interval) => {}
                                _ = lease.changed() => {}
                            }
                            continue;
                        }
                    }
                } else if !leader && !matches!(*engine.takeover.state.borrow(), Reload::NotYet) {
                    engine.takeover.state.send_replace(Reload::NotYet);
                }
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    r = lease.changed() => if r.is_err() { return },
                }
            }
        });
    }

    /// The lease as status shows it, with a failed takeover read as its error.
    pub(super) fn lease_with_takeover(&self) -> crate::lease::LeaseStatus {
        let mut st = self.lease.status();
        if let Reload::Failed { error, .. } = &*self.takeover.state.borrow()
            && st.role == Role::Leader
        {
            st.last_error = format!(
                "taking over: cannot read the pushed desired state ({error}); nothing is planned until it can"
            );
        }
        st
    }

    /// Publishes this planner's address beside the lease (a failure is logged: a
    /// standby then names the leader without its address).
    async fn publish_address(&self) {
        let Some((advert, address)) = self.takeover.advert.get() else {
            return;
        };
        let holder = self.lease.identity().to_string();
        if let Err(e) = advert.publish(&holder, address).await {
            tracing::warn!(error = %e, %address, "Cannot publish this leader's address beside the lease; standbys will name it without its address.");
        }
    }
}
