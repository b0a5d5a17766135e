use super::partition::Observed;
use super::policy::{Mode, Step, step};
use super::*;
use crate::account::{Account, AccountOptions};
use crate::provider::call::Pacer;
use crate::provider::memory::MemoryProvider;
use crate::provider::memory::store::MemoryStore;
use crate::provider::{Capabilities, Listing, Provider};
use async_trait::async_trait;
use dnsplane_common::{ChangeKind, RRSetOp, RecordKey, RecordType};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;

/// A batch's report and what its calls counted in the account's metrics.
struct Ran {
    report: BatchReport,
    /// Provider calls by answer class, as the stack counted them.
    calls_by_class: BTreeMap<&'static str, u64>,
}

impl std::ops::Deref for Ran {
    type Target = BatchReport;
    fn deref(&self) -> &BatchReport {
        &self.report
    }
}

/// Runs `changes` through the whole stack of `account`.
async fn exec_account(
    account: &Account,
    changes: &[Change],
    deadline: Option<Instant>,
    policy: &RetryPolicy,
) -> Ran {
    let before = account.metrics.calls_by_class();
    let cx = CallCx::new(account.name.as_str(), Some(zone())).with_deadline(deadline);
    let report = execute(&account.stack, &cx, changes, policy).await;
    let mut calls_by_class = account.metrics.calls_by_class();
    for (class, n) in before {
        if let Some(c) = calls_by_class.get_mut(class) {
            *c -= n;
        }
    }
    calls_by_class.retain(|_, n| *n > 0);
    Ran {
        report,
        calls_by_class,
    }
}

/// Runs `changes` on `provider` behind a fresh account's stack.
async fn exec(
    provider: &Arc<Faulty>,
    changes: &[Change],
    deadline: Option<Instant>,
    policy: &RetryPolicy,
) -> Ran {
    let account = Account::new("test", provider.clone(), &[zone()]);
    exec_account(&account, changes, deadline, policy).await
}

use crate::testing::zone;

fn rr(name: &str, t: RecordType, values: &[&str]) -> RRSet {
    let n = Name::parse(&format!("{name}.example.com")).unwrap();
    RRSet::new(RecordKey::new(zone(), n, t), 300, values).unwrap()
}

fn a(name: &str, ip: &str) -> RRSet {
    rr(name, RecordType::A, &[ip])
}

fn create(r: &RRSet) -> Change {
    Change::new(ChangeKind::Create, vec![RRSetOp::create(r.clone())])
}

/// Faults placed in front of a real memory provider.
#[derive(Debug, Default)]
struct Faults {
    /// Values the provider rejects as invalid.
    invalid_values: HashSet<String>,
    /// Values the provider calls conflicting although nothing is there.
    conflict_values: HashSet<String>,
    /// This many apply calls commit and then answer ambiguous.
    commit_then_ambiguous: u32,
    /// This many apply calls answer ambiguous without committing.
    ambiguous_no_commit: u32,
    /// This many calls answer transient (with this Retry-After) without committing.
    transient: u32,
    transient_retry_after: Option<Duration>,
    permanent: bool,
}

#[derive(Debug)]
struct Faulty {
    inner: MemoryProvider,
    faults: Mutex<Faults>,
    applies: Mutex<u32>,
    _dir: tempfile::TempDir,
}

impl Faulty {
    fn new(faults: Faults) -> Arc<Self> {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
        Arc::new(Faulty {
            inner: MemoryProvider::new(store, vec![zone()]).unwrap(),
            faults: Mutex::new(faults),
            applies: Mutex::new(0),
            _dir: dir,
        })
    }

    /// Another writer's change, made directly in the store.
    fn seed(&self, ops: &[RRSetOp]) {
        self.inner.store().apply(&zone(), ops).unwrap();
    }

    fn get(&self, key: &RecordKey) -> Option<RRSet> {
        self.inner
            .store()
            .read(&zone(), |z| z.get(key).cloned())
            .unwrap()
    }
}

#[async_trait]
impl Provider for Faulty {
    fn driver(&self) -> &'static str {
        "faulty"
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        self.inner.zones().await
    }
    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        self.inner.serial(zone).await
    }
    async fn list_paced(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        pacer: &Pacer,
    ) -> Result<Listing, ProviderError> {
        self.inner.list_paced(zone, names, pacer).await
    }
    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        pacer.request(crate::provider::Operation::Apply).await?;
        *self.applies.lock().unwrap() += 1;
        let ambiguous = {
            let mut f = self.faults.lock().unwrap();
            if f.permanent {
                return Err(ProviderError::new(ErrorClass::Permanent, "403 Forbidden"));
            }
            if f.ambiguous_no_commit > 0 {
                f.ambiguous_no_commit -= 1;
                return Err(ProviderError::new(
                    ErrorClass::Ambiguous,
                    "504 Gateway Timeout",
                ));
            }
            if f.transient > 0 {
                f.transient -= 1;
                let mut e = ProviderError::new(ErrorClass::Transient, "429 Too Many Requests");
                e.retry_after = f.transient_retry_after;
                return Err(e);
            }
            for op in ops {
                for v in op.after.iter().flat_map(|r| r.values()) {
                    if f.invalid_values.contains(v) {
                        return Err(ProviderError::new(
                            ErrorClass::Invalid,
                            format!("400: value {v} is not allowed"),
                        )
                        .with_key(op.key.clone()));
                    }
                    if f.conflict_values.contains(v) {
                        return Err(ProviderError::new(ErrorClass::Conflict, "409: conflict"));
                    }
                }
            }
            let amb = f.commit_then_ambiguous > 0;
            f.commit_then_ambiguous = f.commit_then_ambiguous.saturating_sub(1);
            amb
        };
        self.inner.apply(zone, ops).await?;
        if ambiguous {
            return Err(ProviderError::new(ErrorClass::Ambiguous, "502 Bad Gateway"));
        }
        Ok(())
    }
}

fn outcomes(report: &Ran) -> Vec<Outcome> {
    report.results.iter().map(|r| r.outcome).collect()
}

async fn run(p: &Arc<Faulty>, changes: &[Change]) -> Ran {
    let report = exec(p, changes, None, &RetryPolicy::default()).await;
    assert_eq!(report.results.len(), changes.len());
    for (r, c) in report.results.iter().zip(changes) {
        assert_eq!(r.change_id, c.id);
    }
    report
}

#[tokio::test]
async fn success_is_one_call() {
    let p = Faulty::new(Faults::default());
    let changes: Vec<Change> = (0..5)
        .map(|i| create(&a(&format!("h{i}"), "192.0.2.1")))
        .collect();
    let report = run(&p, &changes).await;
    assert_eq!(outcomes(&report), vec![Outcome::Applied; 5]);
    assert_eq!(report.provider_calls, 1);
    assert_eq!(report.calls_by_class.get("success"), Some(&1));
}

#[tokio::test]
async fn conflicts_are_partitioned_in_three_calls() {
    let p = Faulty::new(Faults::default());
    let mine = a("same", "192.0.2.1");
    let theirs = a("taken", "198.51.100.1");
    let old = a("moved", "192.0.2.5");
    let moved = a("moved", "198.51.100.5");
    let host = a("host", "192.0.2.7");
    let gone = a("gone", "192.0.2.8");
    p.seed(&[
        RRSetOp::create(mine.clone()),
        RRSetOp::create(theirs.clone()),
        RRSetOp::create(moved.clone()),
        RRSetOp::create(host.clone()),
        RRSetOp::create(gone.clone()),
    ]);
    let fresh = a("fresh", "192.0.2.2");
    let cname = rr("host", RecordType::Cname, &["elsewhere.example.net"]);
    let changes = vec![
        create(&fresh),
        create(&mine),
        create(&a("taken", "192.0.2.3")),
        Change::new(
            ChangeKind::Update,
            vec![RRSetOp::update(
                a("nothing", "192.0.2.4"),
                a("nothing", "192.0.2.9"),
            )],
        ),
        Change::new(
            ChangeKind::Update,
            vec![RRSetOp::update(old, a("moved", "192.0.2.6"))],
        ),
        create(&cname),
        Change::new(ChangeKind::Delete, vec![RRSetOp::delete(gone.clone())]),
    ];
    let report = run(&p, &changes).await;
    use Outcome::*;
    assert_eq!(
        outcomes(&report),
        vec![
            Applied,
            AlreadyApplied,
            Conflict,
            Conflict,
            Conflict,
            Conflict,
            Applied
        ]
    );
    let reasons: Vec<_> = report.results[2..6]
        .iter()
        .map(|r| r.conflict_reason)
        .collect();
    use ConflictReason as R;
    assert_eq!(
        reasons,
        vec![R::Exists, R::NotFound, R::Changed, R::TypeClash]
    );
    assert_eq!(report.results[2].observed, Some(theirs.clone()));
    assert_eq!(report.results[3].observed, None);
    assert_eq!(report.results[4].observed, Some(moved.clone()));
    assert_eq!(report.results[5].observed, Some(host.clone()));
    assert!(report.results.iter().all(|r| r.observed_owner.is_none()));
    assert_eq!(report.provider_calls, 3, "apply, read back, resubmit");
    assert_eq!(p.get(&fresh.key), Some(fresh));
    assert_eq!(p.get(&gone.key), None);
}

#[tokio::test]
async fn a_commit_answered_ambiguous_comes_back_already_applied() {
    let p = Faulty::new(Faults {
        commit_then_ambiguous: 1,
        ..Faults::default()
    });
    let changes: Vec<Change> = (0..3)
        .map(|i| create(&a(&format!("h{i}"), "192.0.2.1")))
        .collect();
    let report = run(&p, &changes).await;
    assert_eq!(outcomes(&report), vec![Outcome::AlreadyApplied; 3]);
    assert_eq!(report.provider_calls, 2, "apply, read back; nothing resent");
    assert_eq!(report.calls_by_class.get("ambiguous"), Some(&1));

    // A re-dispatched batch (another applier, a retry) is recognised the same way.
    let again = run(&p, &changes).await;
    assert_eq!(outcomes(&again), vec![Outcome::AlreadyApplied; 3]);
}

#[tokio::test]
async fn ambiguous_without_commit_resubmits_the_rest_once() {
    let p = Faulty::new(Faults {
        ambiguous_no_commit: 1,
        ..Faults::default()
    });
    let changes: Vec<Change> = (0..4)
        .map(|i| create(&a(&format!("h{i}"), "192.0.2.1")))
        .collect();
    // The first change was made by another writer; the call itself times out
    // without committing.
    p.seed(&[RRSetOp::create(a("h0", "192.0.2.1"))]);
    let report = run(&p, &changes).await;
    use Outcome::*;
    assert_eq!(
        outcomes(&report),
        vec![AlreadyApplied, Applied, Applied, Applied]
    );
    assert_eq!(
        report.provider_calls, 3,
        "apply, read back, resubmit the rest"
    );
    assert_eq!(report.calls_by_class.get("ambiguous"), Some(&1));
}

/// Calls for `n` changes of which those at `bad` are invalid.
async fn bisect(n: usize, bad: &[usize]) -> u32 {
    let values: Vec<String> = (0..n).map(|i| format!("192.0.2.{}", i % 250 + 1)).collect();
    let p = Faulty::new(Faults {
        invalid_values: bad
            .iter()
            .map(|&i| format!("10.0.{}.{}", i / 250, i % 250))
            .collect(),
        ..Faults::default()
    });
    let changes: Vec<Change> = (0..n)
        .map(|i| {
            let v = if bad.contains(&i) {
                format!("10.0.{}.{}", i / 250, i % 250)
            } else {
                values[i].clone()
            };
            create(&a(&format!("h{i}"), &v))
        })
        .collect();
    let report = run(&p, &changes).await;
    for (i, r) in report.results.iter().enumerate() {
        if bad.contains(&i) {
            assert_eq!(r.outcome, Outcome::Invalid, "change {i}");
            assert!(
                r.message.starts_with("400: value 10.0."),
                "provider text kept: {}",
                r.message
            );
        } else {
            assert_eq!(r.outcome, Outcome::Applied, "change {i}");
        }
    }
    report.provider_calls
}

#[tokio::test]
async fn bisection_isolates_invalid_changes_within_the_bound() {
    for (n, bad) in [
        (64, vec![17]),
        (64, vec![0, 63]),
        (64, vec![3, 20, 40, 60]),
        (100, vec![5, 6, 7]),
        (256, vec![1, 50, 99, 150, 200, 255, 128, 64]),
        (1, vec![0]),
    ] {
        let k = bad.len() as f64;
        let bound = 2.0 * k * (n as f64 / k).log2().ceil() + 2.0 * k + 1.0;
        let calls = bisect(n, &bad).await;
        assert!(
            f64::from(calls) <= bound,
            "n={n} k={k}: {calls} calls > {bound}"
        );
    }
}

#[tokio::test]
async fn an_unexplained_conflict_is_isolated_by_bisection() {
    let p = Faulty::new(Faults {
        conflict_values: HashSet::from(["192.0.2.99".to_string()]),
        ..Faults::default()
    });
    let mut changes: Vec<Change> = (0..8)
        .map(|i| create(&a(&format!("h{i}"), "192.0.2.1")))
        .collect();
    changes[5] = create(&a("odd", "192.0.2.99"));
    let report = run(&p, &changes).await;
    for (i, r) in report.results.iter().enumerate() {
        if i == 5 {
            assert_eq!(r.outcome, Outcome::Conflict);
            assert_eq!(r.conflict_reason, ConflictReason::Unspecified);
            assert_eq!(r.message, "409: conflict");
        } else {
            assert_eq!(r.outcome, Outcome::Applied, "change {i}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn transient_answers_are_retried_with_backoff_honouring_retry_after() {
    let p = Faulty::new(Faults {
        transient: 2,
        transient_retry_after: Some(Duration::from_millis(1500)),
        ..Faults::default()
    });
    let changes = vec![create(&a("h", "192.0.2.1"))];
    let start = Instant::now();
    let report = run(&p, &changes).await;
    assert_eq!(outcomes(&report), vec![Outcome::Applied]);
    assert_eq!(report.provider_calls, 3);
    assert_eq!(report.calls_by_class.get("transient"), Some(&2));
    assert!(
        start.elapsed() >= Duration::from_millis(3000),
        "waited the provider's Retry-After twice"
    );

    let p = Faulty::new(Faults {
        transient: 100,
        ..Faults::default()
    });
    let report = run(&p, &changes).await;
    assert_eq!(outcomes(&report), vec![Outcome::Failed]);
    assert_eq!(report.provider_calls, RetryPolicy::default().max_attempts);
    assert_eq!(report.results[0].message, "429 Too Many Requests");
    assert!(report.results[0].retry_after.is_some());
}

#[tokio::test(start_paused = true)]
async fn deadlines_defer_instead_of_working_past_them() {
    let p = Faulty::new(Faults {
        transient: 1,
        transient_retry_after: Some(Duration::from_secs(2)),
        ..Faults::default()
    });
    let changes = vec![create(&a("h", "192.0.2.1"))];
    let policy = RetryPolicy::default();
    let deadline = Some(Instant::now() + Duration::from_secs(1));
    let report = exec(&p, &changes, deadline, &policy).await;
    assert_eq!(outcomes(&report), vec![Outcome::Deferred]);
    assert_eq!(report.results[0].retry_after, Some(Duration::from_secs(2)));
    assert_eq!(
        report.provider_calls, 1,
        "the retry would have crossed the deadline"
    );

    let past = Some(Instant::now());
    let report = exec(&p, &changes, past, &policy).await;
    assert_eq!(outcomes(&report), vec![Outcome::Deferred]);
    assert_eq!(report.provider_calls, 0);
}

#[tokio::test]
async fn a_permanent_answer_rejects_the_whole_batch() {
    let p = Faulty::new(Faults {
        permanent: true,
        ..Faults::default()
    });
    let changes: Vec<Change> = (0..3)
        .map(|i| create(&a(&format!("h{i}"), "192.0.2.1")))
        .collect();
    let report = run(&p, &changes).await;
    assert_eq!(outcomes(&report), vec![Outcome::RejectedPermanent; 3]);
    assert_eq!(report.results[0].message, "403 Forbidden");
    assert_eq!(report.provider_calls, 1);
}

#[tokio::test]
async fn batches_above_the_provider_limit_are_cut_between_changes() {
    let p = Faulty::new(Faults::default());
    let n = crate::provider::memory::MAX_CHANGES_PER_BATCH + 10;
    let changes: Vec<Change> = (0..n)
        .map(|i| create(&a(&format!("h{i}"), "192.0.2.1")))
        .collect();
    let report = run(&p, &changes).await;
    assert!(report.results.iter().all(|r| r.outcome == Outcome::Applied));
    assert_eq!(report.provider_calls, 2);
    assert_eq!(*p.applies.lock().unwrap(), 2);
}

#[test]
fn partition_sees_a_change_s_own_deletions() {
    let host_a = a("host", "192.0.2.7");
    let cname = rr("host", RecordType::Cname, &["elsewhere.example.net"]);
    let observed = Observed::new(Listing {
        rrsets: vec![host_a.clone()],
        serial: None,
    });
    let replace = Change::new(
        ChangeKind::Update,
        vec![
            RRSetOp::delete(host_a.clone()),
            RRSetOp::create(cname.clone()),
        ],
    );
    assert_eq!(partition(&replace, &observed), None);
    let clash = partition(&create(&cname), &observed).unwrap();
    assert!(matches!(
        clash,
        Verdict::Conflict {
            reason: ConflictReason::TypeClash,
            ..
        }
    ));
    // An assert op (before = after) that holds and is at target.
    let assert_only = Change::new(
        ChangeKind::Adopt,
        vec![RRSetOp::update(host_a.clone(), host_a)],
    );
    assert_eq!(
        partition(&assert_only, &observed),
        Some(Verdict::AlreadyApplied)
    );
}

/// The real memory driver behind the real fault decorator, with rules written as in
/// the config file.
struct Injected {
    account: Account,
    memory: MemoryProvider,
    _dir: tempfile::TempDir,
}

fn injected(rules_toml: &str) -> Injected {
    let rules = crate::testing::rules(rules_toml);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    let memory = MemoryProvider::new(store, vec![zone()]).unwrap();
    let options = AccountOptions {
        faults: rules,
        ..AccountOptions::default()
    };
    let account = Account::with_options("test", Arc::new(memory.clone()), &[zone()], options);
    Injected {
        account,
        memory,
        _dir: dir,
    }
}

#[test]
fn the_policy_has_a_step_for_every_class_mode_and_size() {
    use ErrorClass::{Ambiguous, Conflict, Permanent, Transient};
    use Step::{Bisect, GiveUp, ReadBackAndFail, ReadBackAndReport, ReadBackAndResubmit};
    for class in ErrorClass::ALL {
        for mode in [Mode::First, Mode::Resubmit, Mode::Split] {
            for single in [true, false] {
                let want = match (class, mode, single) {
                    (Transient | Permanent, _, _) => GiveUp,
                    (ErrorClass::Invalid, _, true) => Step::Invalid,
                    (ErrorClass::Invalid, _, false) => Bisect,
                    (Ambiguous | Conflict, Mode::First, _) => ReadBackAndResubmit,
                    (Ambiguous, _, _) => ReadBackAndFail,
                    (Conflict, _, true) => ReadBackAndReport,
                    (Conflict, _, false) => Bisect,
                };
                assert_eq!(
                    step(class, mode, single),
                    want,
                    "{class} {mode:?} single={single}"
                );
            }
        }
    }
}

/// The classifier end to end: one fault of each class on the first write of a
/// one-change batch, and the outcome the change ends with.
#[tokio::test(start_paused = true)]
async fn every_error_class_ends_in_its_outcome() {
    use Outcome::*;
    let cases: &[(&str, Outcome, u32, &str)] = &[
        // Ambiguous without commit: read back, not there, resubmitted once.
        ("action = \"error\"\nstatus = 504", Applied, 3, ""),
        // Ambiguous after commit: the read shows it there, nothing resent.
        ("action = \"ambiguous_after_commit\"", AlreadyApplied, 2, ""),
        ("action = \"reset\"\ncommit = true", AlreadyApplied, 2, ""),
        ("action = \"timeout\"\ndelay = \"1s\"", Applied, 3, ""),
        // A conflict the read cannot explain: reported with the provider's text.
        (
            "action = \"error\"\nstatus = 409",
            Conflict,
            2,
            "409 Conflict",
        ),
        (
            "action = \"error\"\nstatus = 422\nmessage = \"bad value\"",
            Invalid,
            1,
            "bad value",
        ),
        // Transient once: retried, then applied.
        (
            "action = \"rate_limited\"\nretry_after = \"1s\"",
            Applied,
            2,
            "",
        ),
        ("action = \"unavailable\"", Applied, 2, ""),
        (
            "action = \"error\"\nstatus = 401",
            RejectedPermanent,
            1,
            "401 Unauthorized",
        ),
        (
            "action = \"error\"\nstatus = 404\nmessage = \"zone not found\"",
            RejectedPermanent,
            1,
            "zone not found",
        ),
    ];
    for (rule, want, calls, message) in cases {
        let p = injected(&format!("[[faults]]\nop = \"apply\"\ntimes = 1\n{rule}\n"));
        let changes = vec![create(&a("h", "192.0.2.1"))];
        let report = exec_account(&p.account, &changes, None, &RetryPolicy::default()).await;
        let r = &report.results[0];
        assert_eq!(r.outcome, *want, "{rule}: {}", r.message);
        assert_eq!(report.provider_calls, *calls, "{rule}");
        assert!(r.message.contains(message), "{rule}: {:?}", r.message);
    }
    // Transient for ever: the attempt budget ends it, FAILED with a retry hint.
    let p = injected("[[faults]]\nop = \"apply\"\naction = \"unavailable\"\n");
    let changes = vec![create(&a("h", "192.0.2.1"))];
    let policy = RetryPolicy::default();
    let report = exec_account(&p.account, &changes, None, &policy).await;
    assert_eq!(report.results[0].outcome, Failed);
    assert!(report.results[0].retry_after.is_some());
    assert_eq!(report.provider_calls, policy.max_attempts);
    assert_eq!(
        p.account.faults_fired().get("unavailable"),
        Some(&u64::from(policy.max_attempts))
    );
}

#[test]
fn the_bisection_bound_formula() {
    // One bad change in 2^m: a root and two calls per level, exactly.
    assert_eq!(bisection_bound(1024, 1), 21);
    assert_eq!(bisection_bound(1, 1), 1);
    assert_eq!(bisection_bound(2, 1), 3);
    assert_eq!(bisection_bound(10, 0), 1);
    assert_eq!(bisection_bound(0, 0), 0);
    // Everything bad: every node of the tree.
    assert_eq!(bisection_bound(8, 8), 15);
    assert_eq!(bisection_bound(1000, 1000), 1999);
    // Roughly 2k·log2(n/k).
    for (n, k) in [(1000, 1), (1000, 10), (1000, 100)] {
        let approx = 2.0 * k as f64 * (n as f64 / k as f64).log2();
        let b = bisection_bound(n, k) as f64;
        assert!(
            b >= approx && b <= approx + 4.0 * k as f64,
            "n={n} k={k}: {b} vs {approx:.0}"
        );
    }
}

/// Bisection never needs more calls than the bound, wherever the bad values sit
/// (seeded random placements, and the worst case of one bad value per leaf pair),
/// and it meets the bound for a single bad value.
#[tokio::test]
async fn bisection_stays_within_its_bound_for_any_placement() {
    use rand::seq::index::sample;
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut cases: Vec<(usize, Vec<usize>)> =
        vec![(256, vec![77]), (128, (0..128).step_by(2).collect())];
    for _ in 0..12 {
        let n = rng.random_range(1..=300);
        let k = rng.random_range(1..=n.min(20));
        cases.push((n, sample(&mut rng, n, k).into_vec()));
    }
    for (n, bad) in cases {
        let bad_values: Vec<String> = bad
            .iter()
            .map(|i| format!("10.66.{}.{}", i / 250, i % 250))
            .collect();
        let p = injected(&format!(
            "[[faults]]\nop = \"apply\"\naction = \"reject_values\"\nvalues = {bad_values:?}\n"
        ));
        let changes: Vec<Change> = (0..n)
            .map(|i| {
                let v = match bad.iter().position(|&b| b == i) {
                    Some(j) => bad_values[j].clone(),
                    None => format!("192.0.2.{}", i % 250 + 1),
                };
                create(&a(&format!("h{i}"), &v))
            })
            .collect();
        let report = exec_account(&p.account, &changes, None, &RetryPolicy::default()).await;
        for (i, r) in report.results.iter().enumerate() {
            if bad.contains(&i) {
                assert_eq!(r.outcome, Outcome::Invalid, "n={n} change {i}");
                assert!(
                    r.message.contains("is not accepted")
                        && r.message.contains(&format!("h{i}.example.com.")),
                    "{}",
                    r.message
                );
            } else {
                assert_eq!(r.outcome, Outcome::Applied, "n={n} change {i}");
            }
        }
        let bound = bisection_bound(n, bad.len());
        assert!(
            u64::from(report.provider_calls) <= bound,
            "n={n} k={}: {} calls > bound {bound}",
            bad.len(),
            report.provider_calls
        );
        if bad.len() == 1 && n.is_power_of_two() {
            assert_eq!(
                u64::from(report.provider_calls),
                bound,
                "one bad value: the bound is exact"
            );
        }
        assert_eq!(
            p.memory.store().list(&zone(), None).unwrap().0.len(),
            n - bad.len()
        );
    }
}

/// Another writer acting between the plan and the write: the conflicts are found
/// by one read-back and the rest lands in one resubmission, whatever their number.
#[tokio::test]
async fn other_writers_cost_three_calls_however_many_conflicts() {
    for k in [1usize, 7, 50] {
        let records: Vec<String> = (0..k)
            .map(|i| {
                format!(
                    "{{ name = \"h{}.example.com.\", type = \"A\", values = [\"198.51.100.{}\"] }}",
                    i * 3,
                    i % 250 + 1
                )
            })
            .collect();
        let p = injected(&format!(
            "[[faults]]\nop = \"apply\"\naction = \"other_writer\"\ntimes = 1\nrecords = [{}]\n",
            records.join(", ")
        ));
        let changes: Vec<Change> = (0..200)
            .map(|i| create(&a(&format!("h{i}"), "192.0.2.1")))
            .collect();
        let report = exec_account(&p.account, &changes, None, &RetryPolicy::default()).await;
        assert_eq!(report.provider_calls, 3, "k={k}");
        for (i, r) in report.results.iter().enumerate() {
            if i % 3 == 0 && i / 3 < k {
                assert_eq!(r.outcome, Outcome::Conflict, "k={k} change {i}");
                assert_eq!(r.conflict_reason, ConflictReason::Exists);
                let observed = r.observed.as_ref().expect("observed");
                assert_eq!(
                    observed.values(),
                    [format!("198.51.100.{}", i / 3 % 250 + 1)]
                );
            } else {
                assert_eq!(r.outcome, Outcome::Applied, "k={k} change {i}");
            }
        }
        assert_eq!(p.account.faults_fired().get("other_writer"), Some(&1));
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    const INVALID: &str = "10.0.0.66";
    const LABELS: [&str; 4] = ["a", "b", "c", "d"];
    const TYPES: [RecordType; 3] = [RecordType::A, RecordType::Cname, RecordType::Txt];

    fn value(t: RecordType, v: u8) -> RRSet {
        let label = "x";
        match (t, v % 3) {
            (RecordType::A, 2) => rr(label, t, &[INVALID]),
            (RecordType::A, v) => rr(label, t, &[&format!("192.0.2.{v}")]),
            (RecordType::Cname, v) => rr(label, t, &[&format!("t{v}.example.net")]),
            (_, v) => rr(label, t, &[&format!("v{v}")]),
        }
    }

    fn at(label: &str, r: RRSet) -> RRSet {
        let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), r.key.rtype);
        RRSet::from_canonical(key, r.ttl, r.values_vec()).unwrap()
    }

    /// Per key: the seeded value, and the change as (before, after) values.
    type KeyCase = (Option<u8>, Option<(Option<u8>, Option<u8>)>);

    /// Per key (label × type): the seeded state and the change; `before` of updates
    /// and deletes is a guess that may be wrong. Plus: does the first call commit
    /// and answer ambiguous?
    fn case() -> impl Strategy<Value = (Vec<KeyCase>, bool)> {
        let per_key = (
            proptest::option::of(0u8..2),
            proptest::option::of((proptest::option::of(0u8..3), proptest::option::of(0u8..3))),
        );
        (
            proptest::collection::vec(per_key, LABELS.len() * TYPES.len()),
            any::<bool>(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Whatever the state and faults: one result per change; applied changes are
        /// at their target; invalid values never land and come back INVALID (or a
        /// conflict found first); a conflict's `observed` is what the zone holds.
        #[test]
        fn every_change_gets_a_truthful_outcome((keys, ambiguous) in case()) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let p = Faulty::new(Faults {
                invalid_values: HashSet::from([INVALID.to_string()]),
                commit_then_ambiguous: u32::from(ambiguous),
                ..Faults::default()
            });
            let mut changes = Vec::new();
            for (i, (seeded, change)) in keys.iter().enumerate() {
                let (label, t) = (LABELS[i / TYPES.len()], TYPES[i % TYPES.len()]);
                if let Some(v) = seeded {
                    // Seeds that break the CNAME rule are simply not there.
                    let _ = p.inner.store().apply(&zone(), &[RRSetOp::create(at(label, value(t, *v)))]);
                }
                let Some((before, after)) = change else { continue };
                let op = RRSetOp {
                    key: RecordKey::new(zone(), zone().prepend(label).unwrap(), t),
                    before: before.map(|v| at(label, value(t, v))),
                    after: after.map(|v| at(label, value(t, v))),
                };
                if op.before.is_none() && op.after.is_none() {
                    continue;
                }
                changes.push(Change::new(ChangeKind::Update, vec![op]));
            }
            let seeded = p.inner.store().list(&zone(), None).unwrap().0;
            let report = rt.block_on(exec(&p, &changes, None, &RetryPolicy::default()));
            prop_assert_eq!(report.results.len(), changes.len());
            for (r, c) in report.results.iter().zip(&changes) {
                prop_assert_eq!(&r.change_id, &c.id);
                let op = &c.ops[0];
                let now = p.get(&op.key);
                let invalid = op.after.as_ref().is_some_and(|a| a.values().any(|v| v == INVALID));
                match r.outcome {
                    Outcome::Applied | Outcome::AlreadyApplied => {
                        prop_assert!(op.at_target(now.as_ref()), "{:?} not at target: {:?}", c, now);
                        prop_assert!(!invalid || r.outcome == Outcome::AlreadyApplied);
                    }
                    Outcome::Invalid => prop_assert!(invalid, "{:?}: {}", c, r.message),
                    Outcome::Conflict => {
                        let observed = r.observed.as_ref().map(|o| o.key.clone());
                        // What the zone held when read: before the batch, or after it
                        // (another change of the batch may have written that key).
                        let key = observed.unwrap_or_else(|| op.key.clone());
                        let after = p.get(&key);
                        let before = seeded.iter().find(|s| s.key == key).cloned();
                        prop_assert!(r.observed == after || r.observed == before, "{:?}: {:?}", c, r);
                    }
                    other => prop_assert!(false, "unexpected {:?} for {:?}: {}", other, c, r.message),
                }
            }
        }
    }
}
