use super::*;
use crate::provider::call::{CallCx, Driver, Stack};
use crate::provider::memory::MemoryProvider;
use crate::provider::memory::store::MemoryStore;
use crate::provider::{ErrorClass, Provider};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use crate::testing::zone;

fn a(label: &str, ip: &str) -> RRSet {
    let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), RecordType::A);
    RRSet::new(key, 60, &[ip]).unwrap()
}

#[derive(Deserialize)]
#[allow(dead_code)] // read only to see that the parser refuses the input
struct Rules {
    faults: Vec<FaultRuleConfig>,
}

use crate::testing::try_rules as rules;

fn cx() -> CallCx {
    CallCx::new("acct", Some(zone()))
}

struct Setup {
    /// The injector, for what fired.
    faults: Arc<FaultInjector>,
    /// The injector as the top of a stack, for calls.
    stack: Stack,
    memory: MemoryProvider,
    _dir: tempfile::TempDir,
}

fn setup(text: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    let memory = MemoryProvider::new(store, vec![zone()]).unwrap();
    let faults = Arc::new(FaultInjector::new(
        "acct",
        Arc::new(Driver(Arc::new(memory.clone()))),
        rules(text).unwrap(),
    ));
    Setup {
        stack: Stack::new(faults.clone(), "memory", memory.capabilities()),
        faults,
        memory,
        _dir: dir,
    }
}

fn count(s: &Setup) -> usize {
    s.memory.store().list(&zone(), None).unwrap().0.len()
}

#[test]
fn rules_are_checked_and_problems_name_the_rule() {
    for (text, want) in [
        ("action = \"latency\"", "needs `delay`"),
        ("action = \"error\"", "needs `status`"),
        ("action = \"reject_values\"", "non-empty `values`"),
        ("action = \"other_writer\"", "non-empty `records`"),
        (
            "action = \"latency\"\ndelay = \"1s\"\nstatus = 500",
            "does not use status",
        ),
        (
            "action = \"rate_limited\"\ncommit = true",
            "does not use commit",
        ),
        ("action = \"reset\"\nprobability = 1.5", "probability 1.5"),
        ("action = \"reset\"\ntimes = 0", "never fire"),
        (
            "action = \"reset\"\nnames = [\"www.example.org.\"]",
            "none of the account's zones",
        ),
        (
            "action = \"reject_values\"\nop = \"list\"\nvalues = [\"x\"]",
            "only acts on op",
        ),
        (
            "action = \"other_writer\"\nrecords = [{ name = \"a.example.com.\", type = \"A\", values = [\"300.1.1.1\"] }]",
            "records[0]",
        ),
    ] {
        // The second rule is the bad one.
        let problems = match rules(&format!(
            "[[faults]]\naction = \"reset\"\n[[faults]]\n{text}"
        )) {
            Ok(_) => panic!("{text}: accepted"),
            Err(p) => p.join("; "),
        };
        assert!(problems.starts_with("faults[1]: "), "{text}: {problems}");
        assert!(
            problems.contains(want),
            "{text}: {want:?} not in {problems}"
        );
    }
    // Unknown fields and actions are refused by the parser itself.
    for text in ["action = \"reset\"\nretry = 2", "action = \"explode\""] {
        let r: Result<Rules, _> = toml::from_str(&format!("[[faults]]\n{text}"));
        assert!(r.is_err(), "{text}");
    }
}

#[tokio::test]
async fn ambiguous_after_commit_commits_then_answers_502() {
    let s = setup("[[faults]]\nop = \"apply\"\naction = \"ambiguous_after_commit\"\ntimes = 1\n");
    let e = s
        .stack
        .apply(&cx(), &[RRSetOp::create(a("h", "192.0.2.1"))])
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Ambiguous);
    assert_eq!(e.message, "502 Bad Gateway");
    assert_eq!(count(&s), 1, "the write committed");
    // At most once.
    s.stack
        .apply(&cx(), &[RRSetOp::create(a("i", "192.0.2.1"))])
        .await
        .unwrap();
    assert_eq!(
        s.faults.fired(),
        BTreeMap::from([("ambiguous_after_commit", 1)])
    );
}

#[tokio::test]
async fn errors_before_commit_write_nothing_and_carry_their_class() {
    let s = setup(
        "[[faults]]\nop = \"apply\"\naction = \"unavailable\"\ntimes = 1\n\
         [[faults]]\nop = \"apply\"\naction = \"rate_limited\"\nretry_after = \"2s\"\ntimes = 1\n\
         [[faults]]\nop = \"apply\"\naction = \"error\"\nstatus = 401\nmessage = \"401 Unauthorized: bad key\"\ntimes = 1\n\
         [[faults]]\nop = \"apply\"\naction = \"reset\"\ntimes = 1\n",
    );
    let op = [RRSetOp::create(a("h", "192.0.2.1"))];
    let mut seen = Vec::new();
    for _ in 0..4 {
        let e = s.stack.apply(&cx(), &op).await.unwrap_err();
        seen.push((e.class, e.message, e.retry_after));
    }
    assert_eq!(
        seen,
        vec![
            (
                ErrorClass::Transient,
                "503 Service Unavailable".to_string(),
                None
            ),
            (
                ErrorClass::Transient,
                "429 Too Many Requests".to_string(),
                Some(Duration::from_secs(2))
            ),
            (
                ErrorClass::Permanent,
                "401 Unauthorized: bad key".to_string(),
                None
            ),
            (
                ErrorClass::Ambiguous,
                "connection reset by peer".to_string(),
                None
            ),
        ]
    );
    assert_eq!(count(&s), 0, "nothing was written");
    s.stack.apply(&cx(), &op).await.unwrap();
    assert_eq!(count(&s), 1);
    assert_eq!(s.faults.fired().values().sum::<u64>(), 4);
}

#[tokio::test]
async fn ops_names_and_skip_choose_the_calls() {
    let s = setup(
        "[[faults]]\nop = \"list\"\naction = \"reset\"\nnames = [\"www.example.com.\"]\nskip = 1\n",
    );
    let www = [Name::parse("www.example.com").unwrap()];
    let other = [Name::parse("other.example.com").unwrap()];
    // Writes and serials never match a list rule.
    s.stack
        .apply(&cx(), &[RRSetOp::create(a("www", "192.0.2.1"))])
        .await
        .unwrap();
    s.stack.serial(&cx()).await.unwrap();
    // Reads of other names do not match; the first matching read is skipped.
    s.stack.list(&cx(), Some(&other)).await.unwrap();
    s.stack.list(&cx(), Some(&www)).await.unwrap();
    assert!(s.stack.list(&cx(), Some(&www)).await.is_err());
    // A whole-zone read touches every name.
    assert!(s.stack.list(&cx(), None).await.is_err());
    assert_eq!(s.faults.fired().get("reset"), Some(&2));
}

#[tokio::test]
async fn probability_is_reproducible_from_the_seed() {
    let pattern = |seed: u64| async move {
        let s = setup(&format!(
            "[[faults]]\nop = \"serial\"\naction = \"reset\"\nprobability = 0.3\nseed = {seed}\n"
        ));
        let mut fired = Vec::new();
        for _ in 0..200 {
            fired.push(s.stack.serial(&cx()).await.is_err());
        }
        fired
    };
    let a = pattern(11).await;
    assert_eq!(a, pattern(11).await, "same seed, same faults");
    assert_ne!(a, pattern(12).await, "another seed, other faults");
    let n = a.iter().filter(|f| **f).count();
    assert!((30..=90).contains(&n), "about 30 % of 200 fired: {n}");
}

#[tokio::test]
async fn reject_values_names_the_record_and_the_value() {
    let s = setup("[[faults]]\naction = \"reject_values\"\nvalues = [\"203.0.113.66\"]\n");
    let good = RRSetOp::create(a("ok", "192.0.2.1"));
    let bad = RRSetOp::create(a("bad", "203.0.113.66"));
    let e = s
        .stack
        .apply(&cx(), &[good.clone(), bad.clone()])
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid);
    assert_eq!(
        e.message,
        "422 Unprocessable Entity: bad.example.com. A: value 203.0.113.66 is not accepted"
    );
    assert_eq!(e.key, Some(bad.key.clone()));
    assert_eq!(count(&s), 0);
    s.stack.apply(&cx(), &[good]).await.unwrap();
    assert_eq!(count(&s), 1, "calls without the value pass");
}

#[tokio::test]
async fn another_writer_writes_first_then_the_call_proceeds() {
    let s = setup(
        "[[faults]]\nop = \"apply\"\naction = \"other_writer\"\ntimes = 1\n\
         records = [{ name = \"taken.example.com.\", type = \"A\", values = [\"198.51.100.7\"] },\n\
                    { name = \"gone.example.com.\", type = \"A\" }]\n",
    );
    s.memory
        .store()
        .apply(&zone(), &[RRSetOp::create(a("gone", "192.0.2.9"))])
        .unwrap();
    let e = s
        .stack
        .apply(&cx(), &[RRSetOp::create(a("taken", "192.0.2.1"))])
        .await
        .unwrap_err();
    assert_eq!(
        e.class,
        ErrorClass::Conflict,
        "the write found the other writer's record"
    );
    let all = s.memory.store().list(&zone(), None).unwrap().0;
    let key = a("taken", "198.51.100.7").key;
    assert_eq!(all, vec![RRSet::new(key, 300, &["198.51.100.7"]).unwrap()]);
}

/// A provider that answers the other writer's write with a transient error (PowerDNS's
/// sqlite under concurrent writes) does not make the rule a silent no-op: the other
/// writer tries again, and the call behind it still finds the record taken.
#[tokio::test(start_paused = true)]
async fn another_writer_retries_a_transient_failure_of_its_write() {
    // Below the other writer: its first write is refused with a 503.
    let below = setup("[[faults]]\nop = \"apply\"\naction = \"unavailable\"\ntimes = 1\n");
    let faults = Arc::new(FaultInjector::new(
        "acct",
        below.faults.clone(),
        rules(
            "[[faults]]\nop = \"apply\"\naction = \"other_writer\"\ntimes = 1\n\
             records = [{ name = \"taken.example.com.\", type = \"A\", values = [\"198.51.100.7\"] }]\n",
        )
        .unwrap(),
    ));
    let stack = Stack::new(faults, "memory", below.memory.capabilities());
    let e = stack
        .apply(&cx(), &[RRSetOp::create(a("taken", "192.0.2.1"))])
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Conflict, "the record was taken first");
    assert_eq!(below.faults.fired().get("unavailable"), Some(&1));
    let all = below.memory.store().list(&zone(), None).unwrap().0;
    let key = a("taken", "198.51.100.7").key;
    assert_eq!(all, vec![RRSet::new(key, 300, &["198.51.100.7"]).unwrap()]);
}

#[tokio::test(start_paused = true)]
async fn latency_and_timeout_hold_the_call() {
    let s = setup(
        "[[faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"3s\"\ncommit = true\ntimes = 1\n\
         [[faults]]\nop = \"serial\"\naction = \"timeout\"\ndelay = \"5s\"\n",
    );
    let start = Instant::now();
    s.stack
        .apply(&cx(), &[RRSetOp::create(a("h", "192.0.2.1"))])
        .await
        .unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    let start = Instant::now();
    let e = s.stack.serial(&cx()).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(e.class, ErrorClass::Ambiguous);
    assert_eq!(
        e.message,
        "timed out after 5s waiting for the provider's answer"
    );
}
