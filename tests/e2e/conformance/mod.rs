//! One provider conformance suite that every driver passes unchanged: the same cases,
//! against each driver on its real server (memory in-process, PowerDNS, BIND) or, where
//! none can run here, a server that speaks the API (moto for Route 53's happy path;
//! dnsplane's own emulators for Route 53, Cloud DNS, Cloudflare and Azure DNS, faithful to each
//! provider's documented semantics; for the `webhook` driver, the test tree's
//! reference external-dns webhook server, written from the protocol text, and
//! dnsplane's own webhook server, the planner's `[webhook]`: the protocol's round trip).
//!
//! The cases talk to the driver through the `Provider` trait and, where the outcome
//! per record matters, through the applier's batch algorithm (`execute`). A subject
//! that is not faithful on error paths (moto: not atomic, a CREATE over a set adds a
//! duplicate) runs the happy-path cases only.
use dnsplane_applier::account::Account;
use dnsplane_applier::apply::execute;
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
use std::collections::BTreeMap;
use std::sync::Arc;

pub mod subjects;

/// A driver on a server, ready for the cases.
pub struct Subject {
    pub label: &'static str,
    pub provider: Arc<dyn Provider>,
    pub zone: Name,
    /// Atomic batches and conflicts as the provider documents them (not moto).
    pub faithful: bool,
    /// Servers and directories that must outlive the cases.
    pub _keep: Box<dyn std::any::Any>,
}

impl Subject {
    /// A faithful subject: `provider` serving `zone`, with `keep` (its server, its
    /// directories) kept alive as long as the subject.
    pub fn new(
        label: &'static str,
        provider: impl Provider + 'static,
        zone: Name,
        keep: impl std::any::Any,
    ) -> Subject {
        Subject {
            label,
            provider: Arc::new(provider),
            zone,
            faithful: true,
            _keep: Box::new(keep),
        }
    }

    /// What the subject keeps alive, as a `T` (the server it was started with).
    pub fn kept<T: 'static>(&self) -> &T {
        self._keep.downcast_ref().expect("kept as this type")
    }
}

pub(crate) fn set<V: AsRef<str>>(
    zone: &Name,
    label: &str,
    rtype: RecordType,
    ttl: u32,
    values: &[V],
) -> RRSet {
    let name = if label.is_empty() {
        zone.clone()
    } else {
        zone.prepend(label).expect("name")
    };
    RRSet::new(RecordKey::new(zone.clone(), name, rtype), ttl, values).expect("rrset")
}

fn names(sets: &[RRSet]) -> Vec<Name> {
    let mut n: Vec<Name> = sets.iter().map(|s| s.key.name.clone()).collect();
    n.sort();
    n.dedup();
    n
}

/// What the provider holds at `names`, by key.
async fn held(s: &Subject, names: &[Name]) -> BTreeMap<RecordKey, RRSet> {
    s.provider
        .list(&s.zone, Some(names))
        .await
        .unwrap_or_else(|e| panic!("{}: list: {e}", s.label))
        .rrsets
        .into_iter()
        .filter(|r| names.contains(&r.key.name))
        .map(|r| (r.key.clone(), r))
        .collect()
}

fn assert_holds(s: &Subject, got: &BTreeMap<RecordKey, RRSet>, want: &[RRSet], what: &str) {
    let want: BTreeMap<RecordKey, RRSet> =
        want.iter().map(|r| (r.key.clone(), r.clone())).collect();
    let show =
        |m: &BTreeMap<RecordKey, RRSet>| m.values().map(ToString::to_string).collect::<Vec<_>>();
    assert!(
        got.len() == want.len()
            && got
                .iter()
                .all(|(k, v)| want.get(k).is_some_and(|w| w.same_data(v))),
        "{}: {what}:\n got  {:#?}\n want {:#?}",
        s.label,
        show(got),
        show(&want)
    );
}

pub(crate) async fn apply(s: &Subject, ops: &[RRSetOp]) {
    s.provider
        .apply(&s.zone, ops)
        .await
        .unwrap_or_else(|e| panic!("{}: apply: {e}", s.label));
}

/// Creates each of `sets` (one batch).
pub(crate) async fn create_all(s: &Subject, sets: &[RRSet]) {
    let ops: Vec<RRSetOp> = sets.iter().cloned().map(RRSetOp::create).collect();
    apply(s, &ops).await;
}

/// Updates each of `from` to the set at the same place in `to` (one batch).
pub(crate) async fn update_all(s: &Subject, from: &[RRSet], to: &[RRSet]) {
    let ops: Vec<RRSetOp> = from
        .iter()
        .zip(to)
        .map(|(a, b)| RRSetOp::update(a.clone(), b.clone()))
        .collect();
    apply(s, &ops).await;
}

/// Deletes each of `sets` (one batch).
pub(crate) async fn delete_all(s: &Subject, sets: &[RRSet]) {
    let ops: Vec<RRSetOp> = sets.iter().cloned().map(RRSetOp::delete).collect();
    apply(s, &ops).await;
}

/// The outcome of each change through the applier's batch algorithm.
async fn run(s: &Subject, changes: &[Change]) -> Vec<Outcome> {
    let account = Account::new(
        "conformance",
        s.provider.clone(),
        std::slice::from_ref(&s.zone),
    );
    let cx = CallCx::new("conformance", Some(s.zone.clone()));
    outcomes(&account, &cx, changes).await
}

/// The outcome of each change, executed by the applier's batch algorithm on
/// `account`'s provider stack.
pub(crate) async fn outcomes(account: &Account, cx: &CallCx, changes: &[Change]) -> Vec<Outcome> {
    let executed = execute(&account.stack, cx, changes, &RetryPolicy::default()).await;
    executed.results.iter().map(|r| r.outcome).collect()
}

/// Every record type dnsplane models, created, updated and deleted; a listing of the
/// names shows exactly what was written each time.
async fn every_type_round_trips(s: &Subject) {
    let z = &s.zone;
    let first = vec![
        set(z, "rt-a", RecordType::A, 300, &["192.0.2.1", "192.0.2.2"]),
        set(z, "rt-a", RecordType::Aaaa, 300, &["2001:db8::1"]),
        set(z, "rt-c", RecordType::Cname, 120, &["target.example.net."]),
        set(
            z,
            "rt-t",
            RecordType::Txt,
            60,
            &["\"v=spf1 -all\"", "\"two words\" \"and more\""],
        ),
        set(
            z,
            "rt-m",
            RecordType::Mx,
            300,
            &["10 mail.example.net.", "20 backup.example.net."],
        ),
        set(
            z,
            "_sip._tcp.rt-s",
            RecordType::Srv,
            300,
            &["10 60 5060 sip.example.net."],
        ),
        set(
            z,
            "rt-caa",
            RecordType::Caa,
            300,
            &["0 issue \"letsencrypt.org\""],
        ),
        set(
            z,
            "rt-ns",
            RecordType::Ns,
            3600,
            &["ns1.example.net.", "ns2.example.net."],
        ),
    ];
    let at = names(&first);
    assert_holds(s, &held(s, &at).await, &[], "before");
    create_all(s, &first).await;
    assert_holds(s, &held(s, &at).await, &first, "after the creates");

    let second = vec![
        set(z, "rt-a", RecordType::A, 60, &["192.0.2.3"]),
        set(
            z,
            "rt-a",
            RecordType::Aaaa,
            60,
            &["2001:db8::2", "2001:db8::3"],
        ),
        set(z, "rt-c", RecordType::Cname, 300, &["other.example.net."]),
        set(z, "rt-t", RecordType::Txt, 300, &["\"changed\""]),
        set(z, "rt-m", RecordType::Mx, 60, &["5 mail.example.net."]),
        set(
            z,
            "_sip._tcp.rt-s",
            RecordType::Srv,
            60,
            &["20 0 5061 sip.example.net."],
        ),
        set(z, "rt-caa", RecordType::Caa, 60, &["0 issuewild \";\""]),
        set(z, "rt-ns", RecordType::Ns, 300, &["ns3.example.net."]),
    ];
    update_all(s, &first, &second).await;
    assert_holds(s, &held(s, &at).await, &second, "after the updates");

    delete_all(s, &second).await;
    assert_holds(s, &held(s, &at).await, &[], "after the deletes");
}

/// More sets than one page of any provider's listing: the whole zone lists every one,
/// and a listing of names exactly those present.
async fn listings_page_and_pick(s: &Subject) {
    let z = &s.zone;
    let all: Vec<RRSet> = (0..650)
        .map(|i| {
            set(
                z,
                &format!("pg{i:04}"),
                RecordType::A,
                300,
                &[&format!("198.51.100.{}", i % 250 + 1)],
            )
        })
        .collect();
    let per = s.provider.capabilities().max_changes_per_batch.min(500);
    for chunk in all.chunks(per) {
        create_all(s, chunk).await;
    }
    let listed = s
        .provider
        .list(&s.zone, None)
        .await
        .unwrap_or_else(|e| panic!("{}: list: {e}", s.label));
    let got: BTreeMap<RecordKey, RRSet> = listed
        .rrsets
        .into_iter()
        .filter(|r| r.key.name.as_str().starts_with("pg"))
        .map(|r| (r.key.clone(), r))
        .collect();
    assert_holds(s, &got, &all, "the whole zone");
    let wanted: Vec<Name> = ["pg0003", "pg0333", "pg0649", "pg9999", "absent"]
        .iter()
        .map(|l| z.prepend(l).expect("name"))
        .collect();
    let want: Vec<RRSet> = [3usize, 333, 649].iter().map(|&i| all[i].clone()).collect();
    assert_holds(s, &held(s, &wanted).await, &want, "a listing of five names");
    for chunk in all.chunks(per) {
        delete_all(s, chunk).await;
    }
}

/// Sending the same changes again settles as already applied, changing nothing.
async fn reapplying_is_idempotent(s: &Subject) {
    let z = &s.zone;
    let sets: Vec<RRSet> = (0..5)
        .map(|i| {
            set(
                z,
                &format!("idem{i}"),
                RecordType::Txt,
                300,
                &[&format!("\"owner=conformance {i}\"")],
            )
        })
        .collect();
    let changes: Vec<Change> = sets
        .iter()
        .map(|r| Change::new(ChangeKind::Create, vec![RRSetOp::create(r.clone())]))
        .collect();
    assert_eq!(
        run(s, &changes).await,
        vec![Outcome::Applied; 5],
        "{}",
        s.label
    );
    assert_eq!(
        run(s, &changes).await,
        vec![Outcome::AlreadyApplied; 5],
        "{}",
        s.label
    );
    assert_holds(s, &held(s, &names(&sets)).await, &sets, "after both");
}

/// One change whose precondition fails makes an atomic batch commit nothing, and the
/// answer is a conflict.
async fn a_conflict_in_an_atomic_batch_commits_nothing(s: &Subject) {
    let z = &s.zone;
    let taken = set(z, "at-taken", RecordType::A, 300, &["192.0.2.50"]);
    apply(s, &[RRSetOp::create(taken.clone())]).await;
    let fresh = set(z, "at-fresh", RecordType::A, 300, &["192.0.2.51"]);
    let over = set(z, "at-taken", RecordType::A, 300, &["192.0.2.52"]);
    let err = s
        .provider
        .apply(
            &s.zone,
            &[RRSetOp::create(fresh.clone()), RRSetOp::create(over)],
        )
        .await
        .expect_err("a create over an existing set must fail");
    assert_eq!(err.class, ErrorClass::Conflict, "{}: {err}", s.label);
    if s.provider.capabilities().atomic_batches {
        assert_holds(
            s,
            &held(s, &names(&[taken.clone(), fresh])).await,
            std::slice::from_ref(&taken),
            "nothing of the batch committed",
        );
    }
    // A stale update and a stale delete are conflicts too, and change nothing.
    let stale = set(z, "at-taken", RecordType::A, 300, &["192.0.2.99"]);
    let newer = set(z, "at-taken", RecordType::A, 300, &["192.0.2.53"]);
    for op in [
        RRSetOp::update(stale.clone(), newer),
        RRSetOp::delete(stale),
    ] {
        let err = s
            .provider
            .apply(&s.zone, &[op])
            .await
            .expect_err("a stale precondition must fail");
        assert_eq!(err.class, ErrorClass::Conflict, "{}: {err}", s.label);
    }
    assert_holds(
        s,
        &held(s, &names(std::slice::from_ref(&taken))).await,
        std::slice::from_ref(&taken),
        "after the stale writes",
    );
    apply(s, &[RRSetOp::delete(taken)]).await;
}

/// A batch where another writer holds a few of the names: the rest is applied, those
/// end CONFLICT.
async fn conflicts_are_isolated(s: &Subject) {
    let z = &s.zone;
    let foreign: Vec<RRSet> = [3, 11, 17]
        .iter()
        .map(|i| set(z, &format!("iso{i}"), RecordType::A, 300, &["203.0.113.9"]))
        .collect();
    create_all(s, &foreign).await;
    let changes: Vec<Change> = (0..20)
        .map(|i| {
            let r = set(z, &format!("iso{i}"), RecordType::A, 300, &["192.0.2.7"]);
            Change::new(ChangeKind::Create, vec![RRSetOp::create(r)])
        })
        .collect();
    let out = run(s, &changes).await;
    for (i, o) in out.iter().enumerate() {
        let want = if [3, 11, 17].contains(&i) {
            Outcome::Conflict
        } else {
            Outcome::Applied
        };
        assert_eq!(*o, want, "{}: change {i}: {out:?}", s.label);
    }
}

/// Runs the suite against `s`.
async fn conform(s: Subject) {
    every_type_round_trips(&s).await;
    listings_page_and_pick(&s).await;
    reapplying_is_idempotent(&s).await;
    if s.faithful {
        a_conflict_in_an_atomic_batch_commits_nothing(&s).await;
        conflicts_are_isolated(&s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_conforms() {
    conform(subjects::memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdns_conforms() {
    let Some(s) = subjects::pdns() else { return };
    conform(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rfc2136_conforms() {
    let Some(s) = subjects::rfc2136() else { return };
    conform(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route53_on_its_emulator_conforms() {
    conform(subjects::route53_emulated().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route53_on_moto_conforms_on_the_happy_path() {
    let Some(s) = subjects::route53_moto() else {
        return;
    };
    conform(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_on_its_emulator_conforms() {
    conform(subjects::clouddns().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloudflare_on_its_emulator_conforms() {
    conform(subjects::cloudflare().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_on_its_emulator_conforms() {
    conform(subjects::azure().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_on_the_reference_server_conforms() {
    conform(subjects::webhook().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_on_dnsplanes_own_webhook_server_conforms() {
    conform(subjects::webhook_dnsplane().await).await;
}
