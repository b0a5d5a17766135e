use super::*;
use crate::account::Account;
use crate::accounts::RunOptions;
use crate::provider::Operation;
use crate::provider::memory::MemoryProvider;
use crate::provider::memory::store::MemoryStore;
use crate::retry::RetryPolicy;
use dnsplane_common::{Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
use std::time::Duration;

fn options() -> RunOptions {
    RunOptions {
        cache_ttl: Duration::from_secs(30),
        max_concurrent_batches: 2,
        retry: RetryPolicy::default(),
    }
}

use crate::testing::zone;

fn service(dir: &std::path::Path, lifecycle: Lifecycle) -> ApplierService {
    let store = Arc::new(MemoryStore::open(dir).unwrap());
    let provider = Arc::new(MemoryProvider::new(store, vec![zone()]).unwrap());
    let account = Arc::new(Account::new("acct", provider, &[zone()]));
    ApplierService::new(Arc::new(Accounts::new(vec![account], options(), lifecycle)))
}

fn request(deadline: Option<SystemTime>) -> pb::ApplyRequest {
    let key = RecordKey::new(zone(), Name::parse("a.example.com").unwrap(), RecordType::A);
    let change = Change::new(
        ChangeKind::Create,
        vec![RRSetOp::create(
            RRSet::new(key, 60, &["192.0.2.1"]).unwrap(),
        )],
    );
    pb::ApplyRequest {
        batch: Some(pb::Batch {
            batch_id: "b".into(),
            account: "acct".into(),
            zone: "example.com.".into(),
            changes: vec![(&change).into()],
            deadline: deadline.map(dnsplane_common::convert::timestamp),
            ..Default::default()
        }),
    }
}

#[tokio::test]
async fn batches_after_shutdown_are_deferred_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let lifecycle = Lifecycle::default();
    let svc = service(dir.path(), lifecycle.clone());
    lifecycle.draining.cancel();
    let resp = svc.run_batch(request(None)).await;
    let r = &resp[0].results[0];
    assert_eq!(r.outcome(), pb::Outcome::Deferred);
    assert_eq!(
        r.retry_after,
        Some(duration(RetryPolicy::default().deferred_retry_after))
    );
    assert!(resp[0].done);
    assert_eq!(resp[0].provider_calls, 0);
}

#[tokio::test]
async fn a_passed_deadline_defers_and_a_missing_batch_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), Lifecycle::default());
    let past = SystemTime::now() - Duration::from_secs(5);
    let resp = svc.run_batch(request(Some(past))).await;
    assert_eq!(resp[0].results[0].outcome(), pb::Outcome::Deferred);
    assert_eq!(resp[0].provider_calls, 0);
    let future = SystemTime::now() + Duration::from_secs(60);
    let resp = svc.run_batch(request(Some(future))).await;
    assert_eq!(resp[0].results[0].outcome(), pb::Outcome::Applied);

    let resp = svc.run_batch(pb::ApplyRequest { batch: None }).await;
    assert_eq!(resp.len(), 1);
    assert!(resp[0].done && resp[0].results.is_empty());
}

/// A create of `label` sent by `owner` under lease `epoch`.
fn fenced(label: &str, owner: &str, epoch: u64) -> pb::ApplyRequest {
    let mut req = batch_for("acct", label);
    if let Some(b) = req.batch.as_mut() {
        b.batch_id = format!("{label}-{epoch}");
        b.owner = owner.into();
        b.lease_epoch = epoch;
    }
    req
}

#[tokio::test]
async fn a_batch_of_an_older_lease_epoch_is_not_attempted() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), Lifecycle::default());
    let outcome =
        |resp: Vec<pb::ApplyResponse>| (resp[0].results[0].outcome(), resp[0].provider_calls);
    // The old leader writes; then the new one (a later epoch).
    let (o, _) = outcome(svc.run_batch(fenced("a", "me", 5)).await);
    assert_eq!(o, pb::Outcome::Applied);
    let (o, _) = outcome(svc.run_batch(fenced("b", "me", 7)).await);
    assert_eq!(o, pb::Outcome::Applied);
    // A batch the old leader sent before it knew: refused without a provider call.
    let resp = svc.run_batch(fenced("c", "me", 5)).await;
    let r = &resp[0].results[0];
    assert_eq!(r.outcome(), pb::Outcome::Deferred);
    assert!(
        r.message.contains("epoch 5") && r.message.contains("epoch 7"),
        "{}",
        r.message
    );
    assert_eq!(resp[0].provider_calls, 0);
    // The new leader goes on; another owner, and an unfenced planner, are not concerned.
    for req in [
        fenced("d", "me", 7),
        fenced("e", "other", 1),
        fenced("f", "me", 0),
    ] {
        let (o, _) = outcome(svc.run_batch(req).await);
        assert_eq!(o, pb::Outcome::Applied);
    }
}

/// `fenced(label, "me", epoch)` from the lease `holder` of `backend`.
fn claimed(label: &str, holder: &str, backend: &str, epoch: u64) -> pb::ApplyRequest {
    let mut req = fenced(label, "me", epoch);
    if let Some(b) = req.batch.as_mut() {
        b.lease_holder = holder.into();
        b.lease_backend = backend.into();
        b.lease_ttl = Some(duration(Duration::from_secs(60)));
    }
    req
}

#[tokio::test]
async fn a_second_writer_without_a_shared_lease_is_told_who_writes_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), Lifecycle::default());
    let resp = svc.run_batch(claimed("a", "h/1/a", "file h:/a", 1)).await;
    assert_eq!(resp[0].results[0].outcome(), pb::Outcome::Applied);
    assert_eq!(resp[0].fenced, None);
    // Another holder of another backend, however large its epoch: fenced.
    let resp = svc
        .run_batch(claimed("b", "h/2/b", "file h:/b", u64::MAX))
        .await;
    let last = resp.last().unwrap();
    assert_eq!(last.results[0].outcome(), pb::Outcome::Deferred);
    assert_eq!(last.provider_calls, 0);
    let f = last.fenced.as_ref().expect("fenced");
    assert_eq!(
        (f.holder.as_str(), f.epoch, f.shared_backend),
        ("h/1/a", 1, false)
    );
    assert!(
        f.message.contains("[lease] redis") && f.message.contains("state_dir"),
        "{}",
        f.message
    );
    // The writer's heartbeat is granted; the other's claim is refused the same way.
    let claim = |holder: &str, backend: &str, epoch: u64| {
        svc.accounts.claim(&Fence {
            owner: "me".into(),
            epoch,
            holder: holder.into(),
            backend: backend.into(),
            ttl: Duration::from_secs(60),
        })
    };
    assert!(claim("h/1/a", "file h:/a", 1).is_ok());
    assert_eq!(claim("h/2/b", "file h:/b", 5).unwrap_err().holder, "h/1/a");
    // The same backend with a larger epoch: the backend says the old holder lost it.
    assert!(claim("h/3/c", "file h:/a", 2).is_ok());
    assert!(claim("h/1/a", "file h:/a", 1).unwrap_err().shared_backend);
}

#[test]
fn large_result_sets_are_split_over_messages() {
    let results = vec![RecordResult::new("c", Outcome::Applied); RESULTS_PER_MESSAGE * 2 + 1];
    let msgs = respond("b".into(), &results, 7, Some((41, 44)));
    assert_eq!(
        msgs.iter().map(|m| m.results.len()).collect::<Vec<_>>(),
        vec![1000, 1000, 1]
    );
    assert_eq!(
        msgs.iter().map(|m| m.done).collect::<Vec<_>>(),
        vec![false, false, true]
    );
    assert_eq!(msgs.iter().map(|m| m.provider_calls).sum::<u32>(), 7);
    // The serials the applier vouches for ride on the last message only.
    assert_eq!(
        msgs.iter()
            .map(|m| (m.serial_before, m.serial_after))
            .collect::<Vec<_>>(),
        vec![(0, 0), (0, 0), (41, 44)]
    );
}

/// Two accounts; `acct` refuses writes as configured by `faults`, `other` works.
fn two_accounts(dir: &std::path::Path, faults: &str) -> ApplierService {
    use crate::account::AccountOptions;
    use crate::circuit::CircuitConfig;
    let mut accounts = Vec::new();
    for (name, faults) in [
        ("acct", crate::testing::rules(faults)),
        ("other", Vec::new()),
    ] {
        let store = Arc::new(MemoryStore::open(dir.join(name)).unwrap());
        let provider = Arc::new(MemoryProvider::new(store, vec![zone()]).unwrap());
        let options = AccountOptions {
            faults,
            circuit: CircuitConfig {
                cool_down: Duration::from_secs(10),
                max_cool_down: Duration::from_secs(60),
                jitter: 0.0,
            },
            ..AccountOptions::default()
        };
        accounts.push(Arc::new(Account::with_options(
            name,
            provider,
            &[zone()],
            options,
        )));
    }
    ApplierService::new(Arc::new(Accounts::new(
        accounts,
        options(),
        Lifecycle::default(),
    )))
}

fn batch_for(account: &str, label: &str) -> pb::ApplyRequest {
    let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), RecordType::A);
    let change = Change::new(
        ChangeKind::Create,
        vec![RRSetOp::create(
            RRSet::new(key, 60, &["192.0.2.1"]).unwrap(),
        )],
    );
    pb::ApplyRequest {
        batch: Some(pb::Batch {
            batch_id: format!("{account}-{label}"),
            account: account.into(),
            zone: "example.com.".into(),
            changes: vec![(&change).into()],
            deadline: None,
            ..Default::default()
        }),
    }
}

async fn status(svc: &ApplierService) -> pb::ApplierStatus {
    use pb::applier_server::Applier as _;
    svc.get_status(Request::new(pb::GetApplierStatusRequest {}))
        .await
        .unwrap()
        .into_inner()
}

#[tokio::test(start_paused = true)]
async fn a_permanent_answer_opens_the_account_circuit_and_a_probe_closes_it() {
    let dir = tempfile::tempdir().unwrap();
    // Two refusals, then the credentials "work again".
    let svc = two_accounts(
        dir.path(),
        "[[faults]]\nop = \"apply\"\naction = \"error\"\nstatus = 401\nmessage = \"401 Unauthorized: bad API key\"\ntimes = 2\n",
    );
    let first = &svc.run_batch(batch_for("acct", "a")).await[0];
    assert_eq!(first.results[0].outcome(), pb::Outcome::RejectedPermanent);
    assert_eq!(first.results[0].message, "401 Unauthorized: bad API key");
    assert_eq!(first.provider_calls, 1);

    let st = status(&svc).await;
    assert_eq!(st.level, "degraded");
    assert!(
        st.reason.contains("\"acct\"") && st.reason.contains("401 Unauthorized: bad API key"),
        "{}",
        st.reason
    );
    let acct = st.accounts.iter().find(|a| a.name == "acct").unwrap();
    assert_eq!(acct.circuit, "open");
    assert_eq!(acct.faults.get("error"), Some(&1));
    let other = st.accounts.iter().find(|a| a.name == "other").unwrap();
    assert_eq!(other.circuit, "closed");

    // While open: rejected without a provider call, however many batches come.
    for i in 0..20 {
        let r = &svc.run_batch(batch_for("acct", &format!("b{i}"))).await[0];
        assert_eq!(r.results[0].outcome(), pb::Outcome::RejectedPermanent);
        assert!(
            r.results[0].message.contains("circuit open"),
            "{}",
            r.results[0].message
        );
        assert_eq!(r.provider_calls, 0);
    }
    // Other accounts are unaffected; reads of the refused account still work.
    let ok = &svc.run_batch(batch_for("other", "a")).await[0];
    assert_eq!(ok.results[0].outcome(), pb::Outcome::Applied);
    assert!(
        svc.accounts
            .get("acct")
            .unwrap()
            .circuit
            .admit(Operation::List)
            .is_pass()
    );

    // After the cool-down one probe goes through; it is refused: open for 20 s.
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(status(&svc).await.accounts[0].circuit, "half_open");
    let probe = &svc.run_batch(batch_for("acct", "c")).await[0];
    assert_eq!(probe.provider_calls, 1);
    assert_eq!(probe.results[0].message, "401 Unauthorized: bad API key");
    tokio::time::advance(Duration::from_secs(19)).await;
    assert_eq!(
        svc.run_batch(batch_for("acct", "d")).await[0].provider_calls,
        0
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    // The next probe is answered: closed, healthy, writes flow again.
    let probe = &svc.run_batch(batch_for("acct", "e")).await[0];
    assert_eq!(probe.results[0].outcome(), pb::Outcome::Applied);
    let st = status(&svc).await;
    assert_eq!((st.level.as_str(), st.reason.as_str()), ("healthy", ""));
    assert_eq!(st.accounts[0].circuit, "closed");
    let acct = &st.accounts[0];
    assert_eq!(acct.calls_by_class.get("permanent"), Some(&2));
    assert_eq!(acct.outcomes.get("REJECTED_PERMANENT"), Some(&23));
}

#[test]
fn pages_end_at_the_byte_bound_but_never_empty() {
    let txt = |name: &str, len: usize| {
        let key = RecordKey::new(
            zone(),
            Name::parse(&format!("{name}.example.com")).unwrap(),
            RecordType::Txt,
        );
        let value = format!("\"{}\"", "x".repeat(len));
        RRSet::new(key, 60, &[value.as_str()]).unwrap()
    };
    let rrsets = vec![txt("a", 100), txt("b", 100), txt("c", 200), txt("d", 100)];
    let size = |r: &RRSet| prost::Message::encoded_len(&pb::RrSet::from(r)) + 8;
    // Two small ones fit exactly; the big one starts a page of its own.
    let bound = size(&rrsets[0]) + size(&rrsets[1]);
    let (first, end) = page(&rrsets, 0, 1000, bound);
    assert_eq!(first.len(), 2);
    assert_eq!(end, 2);
    // A bound smaller than one RRSet still sends it (alone), so a page is never empty.
    let (second, end) = page(&rrsets, end, 1000, 10);
    assert_eq!((second.len(), end), (1, 3));
    assert!(second[0].values[0].len() > 200);
    // The count bound holds too, and the last page ends at the end.
    let (all, end) = page(&rrsets, 0, 3, usize::MAX);
    assert_eq!((all.len(), end), (3, 3));
    let (last, end) = page(&rrsets, 3, 3, usize::MAX);
    assert_eq!((last.len(), end), (1, 4));
}
