//! Records and changes for tests, in zone `example.com.` unless told otherwise.
use dnsplane_common::{Change, ChangeKind, Name, RRSet, RRSetOp, RecordKey, RecordType, pb};

/// `example.com.`
pub fn zone() -> Name {
    Name::parse("example.com").expect("zone name")
}

/// `example.org.`, a second zone.
pub fn other_zone() -> Name {
    Name::parse("example.org").expect("zone name")
}

/// The RRSet `label.zone type values` with TTL 300.
pub fn rrset(zone: &Name, label: &str, t: RecordType, values: &[&str]) -> RRSet {
    let name = zone.prepend(label).expect("name");
    RRSet::new(RecordKey::new(zone.clone(), name, t), 300, values).expect("rrset")
}

/// An A RRSet at `label.example.com.`.
pub fn a(label: &str, ip: &str) -> RRSet {
    rrset(&zone(), label, RecordType::A, &[ip])
}

/// The change that creates `r`.
pub fn create(r: &RRSet) -> Change {
    Change::new(ChangeKind::Create, vec![RRSetOp::create(r.clone())])
}

/// An `Apply` request carrying `changes` for `account` and `zone`, without deadline.
pub fn batch(id: &str, account: &str, zone: &Name, changes: &[Change]) -> pb::ApplyRequest {
    pb::ApplyRequest {
        batch: Some(pb::Batch {
            batch_id: id.into(),
            account: account.into(),
            zone: zone.to_string(),
            changes: changes.iter().map(Into::into).collect(),
            deadline: None,
            ..Default::default()
        }),
    }
}

/// The key of `name` (absolute or not) and `t` in `example.com.`.
pub fn key(name: &str, t: RecordType) -> RecordKey {
    RecordKey::new(zone(), Name::parse(name).expect("name"), t)
}

/// A `DNSEndpoint` manifest named `name` with the given endpoints `(dnsName, type,
/// targets)`, each with TTL 60, as a file source reads them.
pub fn endpoints(name: &str, eps: &[(&str, &str, &[&str])]) -> String {
    let mut s = format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  endpoints:\n"
    );
    for (dns, t, targets) in eps {
        s.push_str(&format!(
            "    - dnsName: {dns}\n      recordType: {t}\n      recordTTL: 60\n      targets:\n"
        ));
        for target in *targets {
            s.push_str(&format!(
                "        - {}\n",
                serde_json::to_string(target).expect("json")
            ));
        }
    }
    s
}
