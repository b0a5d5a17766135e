//! The observed view: what it holds, shares and counts.
use super::*;
use dnsplane_common::{RecordType, SharedStr};

use dnsplane_testing::records::key;

#[test]
fn foreign_txt_is_data() {
    let k = key("_dnsplane-a.www.example.com", RecordType::Txt);
    let other = RRSet::new(
        k.clone(),
        60,
        &["heritage=external-dns,external-dns/owner=x"],
    )
    .unwrap();
    assert!(parse_owner_record(&other).is_none());
    let view = ZoneView::new([other]);
    assert!(view.contains(&k));
    assert_eq!(view.owners().count(), 0);
}

/// Ownership records written with the same mark share one `Owned`; each still
/// reads back as its own record.
#[test]
fn written_marks_are_shared() {
    let mut view = ZoneView::default();
    let keys = [
        key("a.example.com", RecordType::A),
        key("b.example.com", RecordType::A),
    ];
    for k in &keys {
        let owner = crate::ownership::owner_record(k, "me", "push/x").unwrap();
        view.apply_op(&RRSetOp::create(owner), k);
    }
    let (a, b) = (view.owner(&keys[0]).unwrap(), view.owner(&keys[1]).unwrap());
    assert!(Arc::ptr_eq(a, b));
    assert_eq!(view.owner_of(&keys[1]), Some("me"));
    assert_eq!(
        view.owner_rrset(&keys[1]).unwrap().key,
        crate::ownership::owner_record_key(&keys[1]).unwrap()
    );
    let other = crate::ownership::owner_record(&keys[1], "me", "push/y").unwrap();
    view.apply_op(&RRSetOp::create(other), &keys[1]);
    let (a, b) = (view.owner(&keys[0]).unwrap(), view.owner(&keys[1]).unwrap());
    assert!(!Arc::ptr_eq(a, b));
    // Different marks of one owner still share the owner id.
    assert!(Arc::ptr_eq(&a.mark.owner, &b.mark.owner));
    assert_eq!(view.owner_rrset(&keys[1]).unwrap(), {
        crate::ownership::owner_record(&keys[1], "me", "push/y").unwrap()
    });
}

/// A view read from the zone shares owner ids the same way, and rebuilds each
/// mark exactly as read.
#[test]
fn read_marks_share_their_owner() {
    let keys: Vec<RecordKey> = (0..3)
        .map(|i| key(&format!("r{i}.example.com"), RecordType::A))
        .collect();
    let marks: Vec<RRSet> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| crate::ownership::owner_record(k, "me", &format!("push/{i}")).unwrap())
        .collect();
    let view = ZoneView::new(marks.clone());
    for (k, mark) in keys.iter().zip(&marks) {
        assert_eq!(view.owner_rrset(k).as_ref(), Some(mark));
    }
    let (a, c) = (view.owner(&keys[0]).unwrap(), view.owner(&keys[2]).unwrap());
    assert!(!Arc::ptr_eq(a, c));
    assert!(Arc::ptr_eq(&a.mark.owner, &c.mark.owner));
}

/// Compacting keeps every entry and its shared storage; it happens only once a
/// quarter of the entries came one by one.
#[test]
fn compacting_keeps_the_view() {
    let mut view = ZoneView::default();
    let mut keys = Vec::new();
    for i in 0..5_000 {
        let k = key(&format!("r{i}.example.com"), RecordType::A);
        let rr = RRSet::new(k.clone(), 60, &["192.0.2.1"]).unwrap();
        view.apply_op(&RRSetOp::create(rr), &k);
        let owner = crate::ownership::owner_record(&k, "me", "push/x").unwrap();
        view.apply_op(&RRSetOp::create(owner), &k);
        keys.push(k);
    }
    assert_eq!(view.grown, 5_000, "one entry for a record and its owner");
    let before = view.clone();
    view.compact();
    assert_eq!(view.grown, 0);
    assert_eq!(view.entries, before.entries);
    assert_eq!(view.len(), 10_000);
    assert!(Arc::ptr_eq(
        view.owner(&keys[0]).unwrap(),
        view.owner(&keys[4_999]).unwrap()
    ));
    // The owned key is the changed record's own (one name allocation).
    let (owned, _) = view.entries.get_key_value(&keys[7]).unwrap();
    assert!(owned.name.shares_text_with(&keys[7].name));
}
/// The count status reads follows every change: records and ownership written,
/// deleted, observed, and names replaced by a targeted read.
#[test]
fn the_count_follows_every_change() {
    let zone = Name::parse("example.com").unwrap();
    let keys: Vec<RecordKey> = (0..6)
        .map(|i| {
            key(
                &format!("r{}.example.com", i % 3),
                [RecordType::A, RecordType::Txt][i % 2],
            )
        })
        .collect();
    let recount = |v: &ZoneView| v.entries.values().map(Seen::records).sum::<usize>();
    let mut view = ZoneView::default();
    for step in 0..200usize {
        let k = &keys[step * 7 % keys.len()];
        let value = if k.rtype == RecordType::A {
            "192.0.2.1"
        } else {
            "\"v\""
        };
        let rr = RRSet::new(k.clone(), 60, &[value]).unwrap();
        let owner = crate::ownership::owner_record(k, "me", "push/x").unwrap();
        match step % 6 {
            0 => view.apply_op(&RRSetOp::create(rr), k),
            1 => view.apply_op(&RRSetOp::create(owner), k),
            2 => view.apply_op(&RRSetOp::delete(rr), k),
            3 => view.apply_op(&RRSetOp::delete(owner), k),
            4 => view.observe(k, (step % 4 == 0).then_some(rr)),
            _ => {
                let names: BTreeSet<Name> = [k.name.clone()].into();
                let fresh = ZoneView::new([rr, owner]);
                view.replace_names(&zone, &names, fresh);
            }
        }
        assert_eq!(view.len(), recount(&view), "after step {step}");
        assert_eq!(
            view.subset(&zone, &[k.name.clone()].into()).len(),
            view.data_at(&zone, &k.name).count()
                + view.owners().filter(|(o, _)| o.name == k.name).count()
        );
    }
}

/// A view built page by page (some pages placed as they come, some deferred while the
/// desired index is busy) is the view read in one go: same data, ownership and
/// external-dns marks; and what equals the desired records shares their storage.
#[test]
fn a_view_built_by_pages_is_the_view_read_whole() {
    let external = crate::config::ExternalDnsConfig {
        owner_id: "ext".into(),
        txt_prefix: String::new(),
        txt_suffix: String::new(),
        wildcard_replacement: String::new(),
        aes_key_file: None,
    };
    let keys: Vec<RecordKey> = (0..6)
        .map(|i| key(&format!("r{i}.example.com"), RecordType::A))
        .collect();
    let mut rrsets = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        rrsets.push(RRSet::new(k.clone(), 300, &[&format!("192.0.2.{i}")]).unwrap());
        if i % 2 == 0 {
            rrsets.push(crate::ownership::owner_record(k, "me", "push/x").unwrap());
        }
    }
    // An external-dns mark of r5, in its new format, on the last page.
    let mark_key = key("a-r5.example.com", RecordType::Txt);
    let mark = "\"heritage=external-dns,external-dns/owner=ext,external-dns/resource=svc/x\"";
    rrsets.push(RRSet::new(mark_key.clone(), 300, &[mark]).unwrap());
    let desired: BTreeMap<RecordKey, DesiredRecord> = rrsets[..4]
        .iter()
        .filter(|r| parse_owner_record(r).is_none())
        .map(|r| {
            let d = DesiredRecord::new(r, SharedStr::new("push:x"), SharedStr::new("push/x"));
            let k = RecordKey::new(r.key.zone.detached(), r.key.name.detached(), r.key.rtype);
            (k, d)
        })
        .collect();
    let whole = ZoneView::read(rrsets.clone(), Some(&desired), Some(&external));

    let mut builder = ViewBuilder::new(Some(&external));
    for (i, page) in rrsets.chunks(3).enumerate() {
        builder.add(page.to_vec(), (i % 2 == 0).then_some(&desired));
    }
    let paged = builder.finish(Some(&desired), None);

    assert_eq!(paged.len(), whole.len());
    assert!(paged.data().eq(whole.data()));
    assert!(
        paged
            .owners()
            .map(|(k, o)| (k, &o.mark))
            .eq(whole.owners().map(|(k, o)| (k, &o.mark)))
    );
    assert!(paged.is_external_mark(&mark_key));
    assert_eq!(
        paged.external_owner(&keys[5]).map(|o| o.mark.owner.clone()),
        whole.external_owner(&keys[5]).map(|o| o.mark.owner.clone()),
    );
    assert!(paged.external_owner(&keys[5]).is_some());
    // The first data record equals its desired one: the view keeps the desired key's
    // name, not the one read.
    let (seen_key, _) = paged.data().next().unwrap();
    let (desired_key, _) = desired.get_key_value(&keys[0]).unwrap();
    assert!(seen_key.name.shares_text_with(&desired_key.name));
}
