//! The driver loop against an in-memory backend, on paused time: acquisition, renewal,
//! stepping down when renewals fail (at the window's end, never after the backend
//! could hand the lease to someone else), takeover after the holder dies, release on
//! shutdown. Two drivers share one backend, and at no instant do both hold a permit.
use super::*;
use crate::metrics::PlannerMetrics;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

const TTL: Duration = Duration::from_secs(10);

fn settings() -> LeaseSettings {
    LeaseSettings {
        ttl: TTL,
        renew_interval: TTL / 3,
        retry_interval: Duration::from_secs(2),
    }
}

#[derive(Debug, Default)]
struct FakeState {
    holder: Option<String>,
    expires: Option<Instant>,
    epoch: u64,
    /// Every call fails.
    down: bool,
    /// Every call hangs.
    hung: bool,
    /// When the holder's last renewal (or acquisition) was handled.
    last_ok: Option<Instant>,
}

/// A lease backend in memory, shared by the drivers of one test.
#[derive(Debug, Clone, Default)]
struct Fake(Arc<Mutex<FakeState>>);

impl Fake {
    fn state(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.0.lock().unwrap()
    }

    async fn gate(&self) -> Result<(), LeaseError> {
        let (down, hung) = {
            let s = self.state();
            (s.down, s.hung)
        };
        if hung {
            std::future::pending::<()>().await;
        }
        if down {
            return Err(LeaseError::Protocol("down".into()));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl LeaseBackend for Fake {
    fn kind(&self) -> &'static str {
        "fake"
    }
    fn location(&self) -> String {
        "memory".into()
    }
    fn expires(&self) -> bool {
        true
    }
    async fn try_acquire(&self, holder: &str, ttl: Duration) -> Result<Acquire, LeaseError> {
        self.gate().await?;
        let mut s = self.state();
        let now = Instant::now();
        match &s.holder {
            Some(h) if h != holder && s.expires.is_some_and(|e| e > now) => Ok(Acquire::Held {
                holder: h.clone(),
                epoch: s.epoch,
            }),
            _ => {
                s.epoch += 1;
                s.holder = Some(holder.into());
                s.expires = Some(now + ttl);
                s.last_ok = Some(now);
                Ok(Acquire::Acquired { epoch: s.epoch })
            }
        }
    }
    async fn renew(&self, holder: &str, ttl: Duration) -> Result<bool, LeaseError> {
        self.gate().await?;
        let mut s = self.state();
        let now = Instant::now();
        if s.holder.as_deref() != Some(holder) || s.expires.is_none_or(|e| e <= now) {
            return Ok(false);
        }
        s.expires = Some(now + ttl);
        s.last_ok = Some(now);
        Ok(true)
    }
    async fn bump(&self, holder: &str, _ttl: Duration) -> Result<Option<u64>, LeaseError> {
        self.gate().await?;
        let mut s = self.state();
        if s.holder.as_deref() != Some(holder) {
            return Ok(None);
        }
        s.epoch += 1;
        Ok(Some(s.epoch))
    }
    async fn release(&self, holder: &str) -> Result<(), LeaseError> {
        self.gate().await?;
        let mut s = self.state();
        if s.holder.as_deref() == Some(holder) {
            s.holder = None;
            s.expires = None;
        }
        Ok(())
    }
}

struct Driver {
    handle: LeaseHandle,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    registry: Registry,
}

/// [`start`], once it leads (within a second; `what` names the wait).
async fn leader(fake: &Fake, what: &str) -> Driver {
    let a = start(fake);
    until(Duration::from_secs(1), || a.leads(), || {})
        .await
        .expect(what);
    a
}

fn start(fake: &Fake) -> Driver {
    let mut registry = Registry::default();
    let metrics = PlannerMetrics::register(&mut registry);
    let (lease, handle) = Lease::new(Box::new(fake.clone()), Identity::new(), settings(), metrics);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(lease.run(cancel.clone()));
    Driver {
        handle,
        cancel,
        task,
        registry,
    }
}

impl Driver {
    fn leads(&self) -> bool {
        self.handle.status().role == Role::Leader
    }

    fn metrics(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).unwrap();
        text
    }
}

/// Steps paused time by `step` until `done`, at most `limit`; checks `invariant` at
/// every step. Returns the time it took.
async fn until(
    limit: Duration,
    mut done: impl FnMut() -> bool,
    mut invariant: impl FnMut(),
) -> Option<Duration> {
    let step = Duration::from_millis(10);
    let start = Instant::now();
    while start.elapsed() <= limit {
        invariant();
        if done() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(step).await;
    }
    None
}

#[tokio::test(start_paused = true)]
async fn acquires_then_keeps_renewing() {
    let fake = Fake::default();
    let a = leader(&fake, "leader at once").await;
    let p = a.handle.permit().expect("a permit");
    assert_eq!(p.epoch, 1);
    let st = a.handle.status();
    assert_eq!(st.holder.as_deref(), Some(st.identity.as_str()));
    // A minute later it still leads, under the same epoch, by renewing.
    let lost = until(Duration::from_secs(60), || !a.leads(), || {}).await;
    assert!(lost.is_none(), "stepped down although renewals succeed");
    assert_eq!(a.handle.permit().map(|p| p.epoch), Some(1));
    assert!(fake.state().last_ok.unwrap().elapsed() < TTL / 3 + Duration::from_millis(20));
    let m = a.metrics();
    assert!(m.contains("dnsplane_planner_lease_leader 1"), "{m}");
    assert!(
        m.contains("dnsplane_planner_lease_transitions_total{to=\"leader\",reason=\"acquired\"} 1"),
        "{m}"
    );
}

#[tokio::test(start_paused = true)]
async fn failing_renewals_step_down_when_the_window_closes() {
    for hung in [false, true] {
        let fake = Fake::default();
        let a = leader(&fake, "leader").await;
        tokio::time::sleep(TTL / 2).await;
        {
            let mut s = fake.state();
            s.down = !hung;
            s.hung = hung;
        }
        let last_ok = fake.state().last_ok.unwrap();
        let closes = last_ok + settings().window();
        // Leader (and allowed to write) until the window closes, not a moment after.
        let stepped = until(TTL * 2, || a.handle.permit().is_none(), || {})
            .await
            .expect("stepped down");
        let now = Instant::now();
        assert!(now >= closes, "stepped down early (hung: {hung})");
        assert!(
            now <= closes + Duration::from_millis(10),
            "window overran by {:?} (hung: {hung})",
            now - closes
        );
        // ... which is before the backend could give the lease to anyone else.
        assert!(now < last_ok + TTL, "stepped down after {stepped:?}");
        until(Duration::from_millis(100), || !a.leads(), || {})
            .await
            .expect("role follows the window");
        let m = a.metrics();
        assert!(m.contains("dnsplane_planner_lease_leader 0"), "{m}");
        assert!(
            m.contains(
                "dnsplane_planner_lease_transitions_total{to=\"standby\",reason=\"expired\"} 1"
            ),
            "{m}"
        );
        assert!(!a.handle.status().last_error.is_empty() || hung);
    }
}

#[tokio::test(start_paused = true)]
async fn a_standby_takes_over_after_the_holder_dies_and_never_overlaps() {
    let fake = Fake::default();
    let a = leader(&fake, "a leads").await;
    let b = start(&fake);
    until(
        Duration::from_secs(5),
        || b.handle.status().holder.is_some(),
        || {},
    )
    .await
    .expect("b sees the holder");
    let st = b.handle.status();
    assert_eq!(st.role, Role::Standby);
    assert_eq!(st.holder, a.handle.status().holder);
    assert!(b.handle.permit().is_none());

    // a dies without a word: its task is gone, its handle keeps the last window.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    a.task.abort();
    let both = || {
        assert!(
            !(a.handle.permit().is_some() && b.handle.permit().is_some()),
            "two writers at once"
        );
    };
    let took = until(TTL * 3, || b.handle.permit().is_some(), both)
        .await
        .expect("b takes over");
    let s = settings();
    assert!(
        took <= s.ttl + s.retry_interval,
        "takeover took {took:?}, more than ttl + retry_interval"
    );
    assert_eq!(b.handle.permit().unwrap().epoch, 2);
    until(TTL, || false, both).await;
    assert!(a.handle.permit().is_none(), "a's window closed by itself");
}

#[tokio::test(start_paused = true)]
async fn shutdown_releases_and_the_standby_takes_over_at_its_next_try() {
    let fake = Fake::default();
    let mut a = start(&fake);
    until(Duration::from_secs(1), || a.leads(), || {})
        .await
        .expect("a leads");
    let b = start(&fake);
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.cancel.cancel();
    (&mut a.task).await.unwrap();
    assert!(a.handle.permit().is_none());
    assert_eq!(a.handle.status().role, Role::Standby);
    assert!(fake.state().holder.is_none(), "released");
    let took = until(TTL, || b.handle.permit().is_some(), || {})
        .await
        .expect("b takes over");
    assert!(took <= settings().retry_interval, "{took:?}");
    let m = a.metrics();
    assert!(
        m.contains(
            "dnsplane_planner_lease_transitions_total{to=\"standby\",reason=\"released\"} 1"
        ),
        "{m}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_renewal_steps_down_at_once() {
    let fake = Fake::default();
    let a = leader(&fake, "a leads").await;
    // Someone else holds it now (an operator, a split brain the backend resolved).
    {
        let mut s = fake.state();
        s.holder = Some("other".into());
        s.epoch += 1;
    }
    let took = until(TTL, || !a.leads(), || {}).await.expect("steps down");
    assert!(took <= settings().renew_interval + Duration::from_millis(20));
    assert!(a.handle.permit().is_none());
    until(
        Duration::from_secs(1),
        || a.handle.status().holder.as_deref() == Some("other"),
        || {},
    )
    .await
    .expect("shows the new holder");
    assert!(
        a.metrics()
            .contains("dnsplane_planner_lease_transitions_total{to=\"standby\",reason=\"lost\"} 1")
    );
}

#[test]
fn permits_cap_batch_deadlines_to_the_window() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let now = SystemTime::now();
        let far = now + Duration::from_secs(60);
        let p = Permit {
            epoch: 1,
            until: Some(Instant::now() + Duration::from_secs(5)),
        };
        let capped = p.cap(far);
        assert!(capped < now + Duration::from_secs(6), "{capped:?}");
        let none = Permit {
            epoch: 1,
            until: None,
        };
        assert_eq!(none.cap(far), far);
        assert!(LeaseHandle::sole_writer().permit().is_some());
    });
}

#[tokio::test]
async fn a_standby_engine_sends_nothing_and_is_not_behind() {
    use crate::config::{PlannerConfig, ZoneConfig};
    use crate::engine::{Engine, Level, Scope, SyncError};
    let zone = dnsplane_common::Name::parse("example.com.").unwrap();
    let config = PlannerConfig {
        // Nothing listens there: a standby must not even try to read.
        applier: "http://127.0.0.1:1".into(),
        ..PlannerConfig::with_zones(vec![ZoneConfig {
            default_ttl: 60,
            ..ZoneConfig::new(zone.clone(), "a")
        }])
    };
    let fake = Fake::default();
    fake.state().holder = Some("other/1/abcdef".into());
    // Never run: this planner stays standby.
    let (_lease, handle) = Lease::new(
        Box::new(fake),
        Identity::new(),
        settings(),
        PlannerMetrics::unregistered(),
    );
    let engine = Engine::new(config, PlannerMetrics::unregistered(), handle).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let err = engine
        .sync(
            &crate::target::Target::new(zone.clone(), "a", false),
            &Scope::Zone,
            true,
            Some(&tx),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::NotLeader { .. }), "{err}");
    assert!(err.is_lease());
    let p = rx.recv().await.unwrap();
    assert_eq!(p.phase.as_str(), "failed");
    assert!(p.error.contains("standby"), "{}", p.error);
    let snap = engine.snapshot();
    assert_eq!(snap.lease.role, Role::Standby);
    assert!(snap.zones[0].status.last_error.is_empty());
    assert!(snap.zones[0].status.last_sync.is_none(), "no sync ran");
    assert_ne!(snap.health().level, Level::Syncing, "{:?}", snap.health());
}
