//! The events writer's rules: verdicts, buckets, what an object remembers.
use super::*;

fn outcome(record: &str, phase: Phase, detail: &str) -> RecordOutcome {
    RecordOutcome {
        resource: "Service default/web".into(),
        record: record.into(),
        phase,
        detail: detail.into(),
    }
}

#[test]
fn the_verdict_follows_the_records() {
    let ok = outcome("web.example.com. A", Phase::Converged, "");
    let conflict = outcome(
        "api.example.com. A",
        Phase::Conflict,
        "owned by external-dns/other",
    );
    let bad = outcome("x.example.com. MX", Phase::Invalid, "422: bad content");
    let v = verdict(&[], None, &[&ok], 1).unwrap();
    assert_eq!((v.kind, v.reason), ("Normal", "Published"));
    assert_eq!(v.message, "web.example.com. A: published");
    let v = verdict(&[], None, &[&ok, &conflict], 2).unwrap();
    assert_eq!((v.kind, v.reason), ("Warning", "Conflict"));
    assert_eq!(
        v.message,
        "api.example.com. A: conflict: owned by external-dns/other"
    );
    let v = verdict(&[], None, &[&ok, &conflict, &bad], 3).unwrap();
    assert_eq!(v.reason, "Invalid");
    assert!(v.message.contains("422: bad content"), "{v:?}");
    // Not all converged yet: nothing to say.
    assert_eq!(verdict(&[], None, &[&ok], 2), None);
    let v = verdict(
        &["metadata.annotations[\"external-dns.kubernetes.io/ttl\"]: \"abc\" is not a TTL".into()],
        None,
        &[&ok],
        1,
    )
    .unwrap();
    assert_eq!((v.kind, v.reason), ("Warning", "Invalid"));
    let v = verdict(&[], Some("its load balancer has no address"), &[&ok], 1).unwrap();
    assert_eq!(v.reason, "Held");
    let held = outcome(
        "web.example.com. A",
        Phase::Held,
        "the mass-change guard holds the zone's plan",
    );
    assert_eq!(verdict(&[], None, &[&held], 1).unwrap().reason, "Held");
    let failed = outcome("web.example.com. A", Phase::Failed, "403 forbidden");
    assert_eq!(
        verdict(&[], None, &[&failed], 1).unwrap().reason,
        "Rejected"
    );
}

#[test]
fn messages_are_bounded() {
    let many: Vec<RecordOutcome> = (0..40)
        .map(|i| {
            outcome(
                &format!("h{i}.example.com. A"),
                Phase::Conflict,
                &"x".repeat(100),
            )
        })
        .collect();
    let refs: Vec<&RecordOutcome> = many.iter().collect();
    let v = verdict(&[], None, &refs, 40).unwrap();
    assert!(v.message.len() <= MAX_MESSAGE_BYTES, "{}", v.message.len());
    assert!(v.message.ends_with("and 35 more"), "{}", v.message);
}

#[test]
fn the_bucket_allows_a_burst_then_one_per_five_minutes() {
    let t0 = Instant::now();
    let mut b = Bucket {
        tokens: BURST,
        at: t0,
    };
    let burst = (0..100).filter(|_| b.take(t0)).count();
    assert_eq!(burst, 25);
    assert!(!b.take(t0 + Duration::from_secs(299)));
    assert!(b.take(t0 + Duration::from_secs(301)));
    assert!(!b.take(t0 + Duration::from_secs(302)));
}

#[test]
fn an_object_remembers_its_last_verdicts_the_latest_last() {
    let v = |m: &str| Verdict {
        kind: "Normal",
        reason: "Published",
        message: m.into(),
    };
    let w = |count| Written {
        name: "web.1".into(),
        count,
        first: SystemTime::UNIX_EPOCH,
    };
    let mut told = Told {
        events: Vec::new(),
        bucket: Bucket {
            tokens: BURST,
            at: Instant::now(),
        },
    };
    told.wrote(&v("a"), w(1));
    told.wrote(&v("b"), w(1));
    told.wrote(&v("a"), w(2));
    assert!(told.is_last(&v("a")));
    assert_eq!(told.event(&v("a")).map(|w| w.count), Some(2));
    assert_eq!(told.events.len(), 2, "a verdict seen again is one event");
    for m in ["c", "d", "e"] {
        told.wrote(&v(m), w(1));
    }
    assert_eq!(told.events.len(), VERDICTS_KEPT);
    assert!(told.event(&v("b")).is_none(), "the oldest is forgotten");
    assert!(told.is_last(&v("e")));
}
