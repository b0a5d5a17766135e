//! The quota in-process, on tokio's paused clock (virtual time: no wall-clock
//! figures), and through the batch algorithm. Shared mode against a real Redis is
//! tested in `tests/e2e/quota.rs`.
use super::*;
use crate::account::{Account, AccountOptions};
use crate::apply;
use crate::config::ApplierConfig;
use crate::provider::call::CallCx;
use crate::provider::memory::MemoryProvider;
use crate::provider::memory::store::MemoryStore;
use crate::provider::{ErrorClass, ProviderError};
use crate::retry::RetryPolicy;
use dnsplane_common::{Change, ChangeKind, RRSet, RecordKey, RecordType};
use std::path::Path;

fn settings(rate: f64, burst: u32) -> QuotaSettings {
    QuotaSettings::resolve(
        "memory",
        Some(&QuotaConfig {
            rate: Some(rate),
            burst: Some(burst),
            ops: None,
            redis: None,
            replicas: 1,
            key: None,
            max_wait: default_max_wait(),
            recover: Duration::from_secs(10),
            redis_timeout: default_redis_timeout(),
            probe_interval: default_probe_interval(),
            // Exact arithmetic in these tests; the headroom has its own.
            headroom: 0.0,
        }),
    )
    .unwrap()
    .unwrap()
}

use crate::testing::zone;

fn create(label: &str) -> Change {
    let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), RecordType::A);
    Change::new(
        ChangeKind::Create,
        vec![RRSetOp::create(
            RRSet::new(key, 60, &["192.0.2.1"]).unwrap(),
        )],
    )
}

/// A memory account behind `quota`, with optional fault rules (TOML `[[faults]]`).
fn account(dir: &Path, quota: Arc<Quota>, faults: &str) -> (Account, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::open(dir).unwrap());
    let provider = Arc::new(MemoryProvider::new(store.clone(), vec![zone()]).unwrap());
    let options = AccountOptions {
        faults: crate::testing::rules(faults),
        quota: Some(quota),
        ..AccountOptions::default()
    };
    (
        Account::with_options("acct", provider, &[zone()], options),
        store,
    )
}

fn stored(store: &MemoryStore) -> usize {
    store.list(&zone(), None).unwrap().0.len()
}

#[tokio::test(start_paused = true)]
async fn calls_are_paced_the_burst_builds_up_when_quiet_and_a_late_call_is_denied() {
    let q = Arc::new(Quota::new("acct", settings(10.0, 2)).unwrap());
    let t0 = Instant::now();
    // A new bucket starts empty: one call at once, then one per 100 ms.
    assert_eq!(q.acquire(Duration::from_secs(10)).await, Ok(Duration::ZERO));
    for i in 1..=3u32 {
        q.acquire(Duration::from_secs(10)).await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_millis(100) * i);
    }
    // The next token is 100 ms away: a caller that may wait 50 ms is denied and told
    // when to come back; nothing is taken.
    let retry = q.acquire(Duration::from_millis(50)).await.unwrap_err();
    assert_eq!(retry, Duration::from_millis(100));
    assert_eq!(t0.elapsed(), Duration::from_millis(300));
    assert_eq!(q.acquire(Duration::from_millis(100)).await, Ok(retry));
    // After a quiet second the burst (2) goes at once, then pacing again.
    tokio::time::advance(Duration::from_secs(1)).await;
    let t1 = Instant::now();
    for _ in 0..2 {
        assert_eq!(q.acquire(Duration::ZERO).await, Ok(Duration::ZERO));
    }
    assert!(q.acquire(Duration::ZERO).await.is_err());
    assert_eq!(t1.elapsed(), Duration::ZERO);
    let st = q.status();
    assert_eq!(st.mode, Mode::Local);
    assert_eq!((st.granted, st.waited, st.denied), (7, 4, 2));
    assert_eq!(st.wait_total, Duration::from_millis(400));
    assert_eq!(st.current_rate, 10.0);
    assert!(st.reason("acct").is_none());
}

/// Waiters are served in order of arrival, one interval apart, whoever they are.
#[tokio::test(start_paused = true)]
async fn concurrent_waiters_are_served_in_order_at_the_rate() {
    let q = Arc::new(Quota::new("acct", settings(20.0, 1)).unwrap());
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                q.acquire(Duration::from_secs(60)).await.unwrap();
                t0.elapsed()
            })
        })
        .collect();
    let mut at = Vec::new();
    for t in tasks {
        at.push(t.await.unwrap());
    }
    at.sort();
    for (i, w) in at.windows(2).enumerate() {
        assert_eq!(w[1] - w[0], Duration::from_millis(50), "call {i}");
    }
    // 40 calls at 20/s with burst 1: 39 intervals.
    assert_eq!(*at.last().unwrap(), Duration::from_millis(50 * 39));
}

#[tokio::test(start_paused = true)]
async fn a_batch_that_gets_no_token_before_its_deadline_comes_back_deferred_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let q = Arc::new(Quota::new("acct", settings(1.0, 1)).unwrap());
    let (acct, store) = account(dir.path(), q.clone(), "");
    let policy = RetryPolicy::default();
    let run = |changes: Vec<Change>, deadline: Duration| {
        let stack = acct.stack.clone();
        let policy = policy.clone();
        async move {
            let d = Instant::now() + deadline;
            let cx = CallCx::new("acct", Some(zone())).with_deadline(Some(d));
            apply::execute(&stack, &cx, &changes, &policy).await
        }
    };
    let first = run(vec![create("a")], Duration::from_secs(10)).await;
    assert_eq!(first.results[0].outcome, dnsplane_common::Outcome::Applied);
    assert_eq!(first.provider_calls, 1);
    // The next token is a second away; the batch may take half of that.
    let second = run(vec![create("b"), create("c")], Duration::from_millis(500)).await;
    for r in &second.results {
        assert_eq!(
            r.outcome,
            dnsplane_common::Outcome::Deferred,
            "{}",
            r.message
        );
        let after = r.retry_after.unwrap();
        assert_eq!(after, Duration::from_secs(1));
    }
    assert_eq!(second.provider_calls, 0);
    assert_eq!(stored(&store), 1);
    // Nothing reached the provider's counters (the quota is the outermost layer).
    assert_eq!(acct.metrics.calls_by_class().values().sum::<u64>(), 1);
    // With time to wait, the same batch waits for its token and goes through.
    let t0 = Instant::now();
    let third = run(vec![create("b"), create("c")], Duration::from_secs(5)).await;
    assert!(
        third
            .results
            .iter()
            .all(|r| r.outcome == dnsplane_common::Outcome::Applied)
    );
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
    assert_eq!(stored(&store), 3);
    let st = q.status();
    assert_eq!((st.granted, st.denied), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_throttle_answer_waits_out_retry_after_and_halves_the_rate() {
    let dir = tempfile::tempdir().unwrap();
    let q = Arc::new(Quota::new("acct", settings(10.0, 1)).unwrap());
    let (acct, store) = account(
        dir.path(),
        q.clone(),
        "[[faults]]\nop = \"apply\"\naction = \"rate_limited\"\nretry_after = \"2s\"\ntimes = 1\n",
    );
    let t0 = Instant::now();
    let changes = vec![create("a")];
    let cx = CallCx::new("acct", Some(zone()))
        .with_deadline(Some(Instant::now() + Duration::from_secs(30)));
    let report = apply::execute(&acct.stack, &cx, &changes, &RetryPolicy::default()).await;
    assert_eq!(report.results[0].outcome, dnsplane_common::Outcome::Applied);
    assert_eq!(report.provider_calls, 2);
    assert_eq!(stored(&store), 1);
    // The retry waited out the provider's Retry-After (the batch's own wait and the
    // quota's agree: no call before it).
    assert!(t0.elapsed() >= Duration::from_secs(2), "{:?}", t0.elapsed());
    let st = q.status();
    assert_eq!(st.throttled, 1);
    // Halved, then recovering linearly: back to full 10 s after halving to half.
    assert!(
        st.current_rate < 10.0 && st.current_rate >= 5.0,
        "{}",
        st.current_rate
    );
    tokio::time::advance(Duration::from_secs(20)).await;
    assert_eq!(q.status().current_rate, 10.0);
}

/// A throttle answer that says nothing of when (Route 53's `Throttling`) holds the
/// account one slot at the halved rate: 0.4 s at 5/s, where a flat second made a
/// conflict released by another writer on the same account converge in 2.1 s.
#[tokio::test(start_paused = true)]
async fn a_throttle_without_retry_after_holds_one_slot_at_the_halved_rate() {
    let q = Arc::new(Quota::new("acct", settings(5.0, 5)).unwrap());
    q.throttle(None).await;
    let waited = q.acquire(Duration::from_secs(5)).await.expect("a token");
    assert!(
        waited >= Duration::from_millis(399) && waited <= Duration::from_millis(401),
        "{waited:?}"
    );
    // Then the halved rate: the next slot another 0.4 s on, not a burst.
    let next = q.acquire(Duration::from_secs(5)).await.expect("a token");
    assert!(next >= Duration::from_millis(390), "{next:?}");
    // A slow account's slot is capped at a second: 0.5/s halved would be 4 s.
    let slow = Arc::new(Quota::new("slow", settings(0.5, 1)).unwrap());
    slow.throttle(None).await;
    let waited = slow
        .acquire(Duration::from_secs(10))
        .await
        .expect("a token");
    assert!(waited <= Duration::from_secs(1), "{waited:?}");
    assert_eq!(q.status().throttled, 1);
}

/// A call outside any batch (a listing, with `ops = "all"`) waits up to `max_wait`.
#[tokio::test(start_paused = true)]
async fn calls_outside_a_batch_wait_at_most_max_wait() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(1.0, 1);
    s.ops = QuotaOps::All;
    s.max_wait = Duration::from_millis(300);
    let q = Arc::new(Quota::new("acct", s).unwrap());
    let (acct, _store) = account(dir.path(), q.clone(), "");
    let cx = CallCx::new("acct", Some(zone()));
    acct.stack.list(&cx, None).await.unwrap();
    let e = acct.stack.list(&cx, None).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Transient);
    assert_eq!(e.retry_after, Some(Duration::from_secs(1)));
    assert!(e.message.contains("not attempted"), "{}", e.message);
    // Writes-only quotas do not gate reads.
    let q = Arc::new(Quota::new("acct", settings(1.0, 1)).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let (acct, _store) = account(dir.path(), q.clone(), "");
    for _ in 0..5 {
        acct.stack.list(&cx, None).await.unwrap();
    }
    assert_eq!(q.status().granted, 0);
}

/// Redis configured but nothing listening: the quota falls back to its local share
/// at once and says so.
#[tokio::test]
async fn an_unreachable_redis_means_the_local_share() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut s = settings(30.0, 6);
    s.redis = Some(format!("redis://127.0.0.1:{port}").into());
    s.replicas = 3;
    let q = Arc::new(Quota::new("acct", s).unwrap());
    assert_eq!(q.mode(), Mode::Shared);
    // The local bucket starts empty: one at once, the next after 100 ms (10/s).
    q.acquire(Duration::from_secs(5)).await.unwrap();
    q.acquire(Duration::from_secs(5)).await.unwrap();
    let st = q.status();
    assert_eq!(st.mode, Mode::Fallback);
    assert_eq!(st.fallbacks, 1);
    assert_eq!(st.current_rate, 10.0);
    assert_eq!(st.redis, format!("127.0.0.1:{port}"));
    assert!(!st.last_redis_error.is_empty());
    let reason = st.reason("acct").unwrap();
    assert!(
        reason.contains("unreachable") && reason.contains("10.000/s"),
        "{reason}"
    );
    let wire = crate::service::quota_to_pb(&st);
    assert_eq!(
        (wire.mode.as_str(), wire.replicas, wire.ops.as_str()),
        ("fallback", 3, "writes")
    );
    // A third call right away: denied without a wait.
    assert!(q.acquire(Duration::ZERO).await.is_err());
}

fn parse(text: &str) -> Result<ApplierConfig, crate::config::ConfigError> {
    ApplierConfig::from_toml(Path::new("applier.toml"), text)
}

const CONFIG: &str = r#"
[[accounts]]
name = "embedded"
driver = "memory"
zones = ["example.com."]
state_dir = "state"
[accounts.quota]
rate = 10.0
burst = 20
redis = "redis://127.0.0.1:6379"
replicas = 3
"#;

#[test]
fn the_quota_table_parses_validates_and_falls_back_to_driver_defaults() {
    let c = parse(CONFIG).unwrap();
    let opts = crate::account::AccountOptions::build(&c.accounts[0]).unwrap();
    let q = opts.quota.expect("a quota");
    let s = q.settings();
    assert_eq!((s.rate, s.burst, s.replicas), (10.0, 20, 3));
    assert_eq!(s.ops, QuotaOps::Writes);
    assert_eq!(
        s.redis.as_ref().map(|r| r.expose().as_str()),
        Some("redis://127.0.0.1:6379")
    );
    assert_eq!(s.recover, default_recover());
    assert_eq!(q.mode(), Mode::Shared);
    // No table: the driver's default, which the drivers of today do not have.
    let plain = parse(&CONFIG[..CONFIG.find("[accounts.quota]").unwrap()]).unwrap();
    assert!(
        crate::account::AccountOptions::build(&plain.accounts[0])
            .unwrap()
            .quota
            .is_none()
    );
    let r53 = QuotaSettings::resolve("route53", None).unwrap().unwrap();
    assert_eq!((r53.rate, r53.burst, r53.ops), (5.0, 5, QuotaOps::All));
    let azure = QuotaSettings::resolve("azure", None).unwrap().unwrap();
    assert_eq!(
        (azure.rate, azure.burst, azure.ops),
        (10.0, 200, QuotaOps::Writes)
    );
    let partial = QuotaConfig {
        rate: None,
        ..toml::from_str::<QuotaConfig>("redis = \"redis://127.0.0.1\"").unwrap()
    };
    let cf = QuotaSettings::resolve("cloudflare", Some(&partial))
        .unwrap()
        .unwrap();
    assert_eq!((cf.rate, cf.burst), (4.0, 20));
    assert!(cf.redis.is_some());
    for (from, to, want) in [
        (
            "rate = 10.0",
            "rate = 0.0",
            "accounts[0].quota.rate must be",
        ),
        ("rate = 10.0", "", "accounts[0].quota.rate is required"),
        ("burst = 20", "burst = 0", "accounts[0].quota.burst"),
        ("replicas = 3", "replicas = 0", "accounts[0].quota.replicas"),
        (
            "redis://127.0.0.1:6379",
            "http://127.0.0.1:6379",
            "accounts[0].quota.redis is not a Redis URL",
        ),
        ("replicas = 3", "replica = 3", "unknown field `replica`"),
    ] {
        let e = parse(&CONFIG.replace(from, to)).unwrap_err().to_string();
        assert!(e.contains(want), "{want:?} not in: {e}");
    }
}

/// The example in docs/scale.md is a valid config with a shared quota.
#[test]
fn the_documented_quota_example_is_valid() {
    let doc = include_str!("../../../docs/scale.md");
    let block = dnsplane_testing::docs::code_block_with(doc, "toml\n", "[accounts.quota]");
    let c = parse(block).unwrap_or_else(|e| panic!("{e}\n{block}"));
    let q = crate::account::AccountOptions::build(&c.accounts[0])
        .unwrap()
        .quota
        .expect("a quota");
    assert!(q.settings().redis.is_some());
    assert!(q.settings().replicas > 1);
}

/// A provider that counts every HTTP request against a bucket of `burst` 1 refilled
/// at 2 per second, the way a cloud API limits requests, and makes two requests per
/// write (a serial read, then the write), as the `pdns` driver does.
#[derive(Debug)]
struct RequestLimited {
    inner: MemoryProvider,
    /// (tokens, when last refilled).
    bucket: std::sync::Mutex<(f64, Instant)>,
    refused: std::sync::atomic::AtomicU64,
}

impl RequestLimited {
    fn admit(&self) -> Result<(), ProviderError> {
        let mut b = self.bucket.lock().unwrap();
        let now = Instant::now();
        b.0 = (b.0 + (now - b.1).as_secs_f64() * 2.0).min(1.0);
        b.1 = now;
        if b.0 >= 1.0 - 1e-9 {
            b.0 -= 1.0;
            return Ok(());
        }
        self.refused
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Err(ProviderError::from_http_status(429, "Rate limit exceeded")
            .with_retry_after(Duration::from_secs(1)))
    }
}

#[async_trait::async_trait]
impl crate::provider::Provider for RequestLimited {
    fn driver(&self) -> &'static str {
        "memory"
    }
    fn capabilities(&self) -> crate::provider::Capabilities {
        crate::provider::Capabilities {
            max_changes_per_batch: 100,
            ..self.inner.capabilities()
        }
    }
    async fn zones(&self) -> Result<Vec<dnsplane_common::Name>, ProviderError> {
        self.admit()?;
        self.inner.zones().await
    }
    async fn serial(&self, zone: &dnsplane_common::Name) -> Result<Option<u64>, ProviderError> {
        self.admit()?;
        self.inner.serial(zone).await
    }
    async fn list_paced(
        &self,
        zone: &dnsplane_common::Name,
        names: Option<&[dnsplane_common::Name]>,
        pacer: &crate::provider::call::Pacer,
    ) -> Result<crate::provider::Listing, ProviderError> {
        pacer.request(crate::provider::Operation::List).await?;
        self.admit()?;
        self.inner.list(zone, names).await
    }
    async fn apply_paced(
        &self,
        zone: &dnsplane_common::Name,
        ops: &[RRSetOp],
        pacer: &crate::provider::call::Pacer,
    ) -> Result<(), ProviderError> {
        // The precondition read's serial GET, then the PATCH: each its own request.
        pacer.request(crate::provider::Operation::Serial).await?;
        self.admit()?;
        tokio::time::sleep(Duration::from_millis(20)).await;
        pacer.request(crate::provider::Operation::Apply).await?;
        self.admit()?;
        self.inner.apply(zone, ops).await
    }
}

/// A quota of 2 requests per second with a burst of 1 in front of a provider that
/// enforces exactly that on every request: the write's two requests are paced one by
/// one, so 10k records in batches of 100 converge with no 429 and nothing throttled
/// (a token taken for the whole call let the PATCH follow the serial GET at once,
/// which such a provider always refused: the batch never got through).
#[tokio::test(start_paused = true)]
async fn a_burst_of_one_always_progresses_when_a_write_is_two_requests() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    let provider = Arc::new(RequestLimited {
        inner: MemoryProvider::new(store.clone(), vec![zone()]).unwrap(),
        bucket: std::sync::Mutex::new((1.0, Instant::now())),
        refused: std::sync::atomic::AtomicU64::new(0),
    });
    let mut s = settings(2.0, 1);
    s.ops = QuotaOps::All;
    let quota = Arc::new(Quota::new("acct", s).unwrap());
    let options = AccountOptions {
        quota: Some(quota.clone()),
        ..AccountOptions::default()
    };
    let account = Account::with_options("acct", provider.clone(), &[zone()], options);
    let changes: Vec<Change> = (0..10_000).map(|i| create(&format!("r{i}"))).collect();
    for batch in changes.chunks(100) {
        let cx = CallCx::new("acct", Some(zone()))
            .with_deadline(Some(Instant::now() + Duration::from_secs(30)));
        let report = apply::execute(&account.stack, &cx, batch, &RetryPolicy::default()).await;
        let outcomes: std::collections::BTreeSet<_> =
            report.results.iter().map(|r| r.outcome).collect();
        assert_eq!(
            outcomes,
            [dnsplane_common::Outcome::Applied].into(),
            "{:?}",
            report.results.first()
        );
    }
    assert_eq!(stored(&store), 10_000);
    assert_eq!(
        provider.refused.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "the provider answered 429"
    );
    let st = quota.status();
    assert_eq!((st.throttled, st.denied), (0, 0), "{st:?}");
    assert_eq!(st.granted, 200, "two requests per batch, each its token");
}

/// By default calls are paced 2 % under the configured rate, so that a provider
/// enforcing exactly that rate never sees two calls closer than it allows.
#[tokio::test(start_paused = true)]
async fn calls_are_paced_with_headroom_under_the_rate() {
    let mut s = settings(2.0, 1);
    s.headroom = crate::quota::config::default_headroom();
    let q = Arc::new(Quota::new("acct", s).unwrap());
    let t0 = Instant::now();
    q.acquire(Duration::from_secs(10)).await.unwrap();
    let mut last = t0.elapsed();
    for _ in 0..10 {
        q.acquire(Duration::from_secs(10)).await.unwrap();
        let gap = t0.elapsed() - last;
        last = t0.elapsed();
        assert!(gap > Duration::from_millis(500), "{gap:?} apart");
        assert!(gap <= Duration::from_millis(511), "{gap:?} apart");
    }
}
