//! Planning the reverse door of docs/external-dns.md: `dnsplane release ZONE
//! --to-external-dns OWNER` hands every record this planner owns in a zone to an
//! external-dns owner, so that trying dnsplane is not a one-way street.
//!
//! One atomic change per record (kind `Release`): the data record asserted unchanged
//! (a record that changed meanwhile is not handed over blind), dnsplane's mark
//! deleted, and external-dns's mark created in the format external-dns writes since
//! v0.18 (`<type>-<name>` with the zone's configured affixes, encrypted when the zone
//! has `aes_key_file`), carrying the `external-dns/resource` the record had when
//! dnsplane took it over (or its DNSEndpoint as external-dns's CRD source names it).
//! No value is touched and nothing but dnsplane's own marks is deleted.
//!
//! A record external-dns could not read back as the owner's is refused, and so is
//! the whole release (all or nothing, before anything is written): its mark's name
//! would leave the zone (an apex record without a `%{record_type}` prefix ending in a
//! dot) or is not a valid name, or another TXT already sits there.
use super::PlannedChange;
use crate::config::ExternalDnsConfig;
use crate::external_dns::{Format, Registry};
use crate::observed::ZoneView;
use dnsplane_common::{Change, ChangeKind, Name, RRSet, RRSetOp, RecordKey, RecordType};

/// What a release of one zone needs.
#[derive(Debug, Default)]
pub struct ReleasePlan {
    /// One change per record handed over.
    pub changes: Vec<PlannedChange>,
    /// Records that cannot be handed over, and why: the release is refused while any.
    pub refused: Vec<(RecordKey, String)>,
    /// Records this owner already holds with external-dns's mark and without
    /// dnsplane's: nothing to do (a release run again after a partial one).
    pub already: usize,
}

/// The release of what `owner_id` owns in `view` (read whole, external-dns's marks as
/// ordinary TXT data) to external-dns's `registry` owner.
pub fn plan_release(
    zone: &Name,
    owner_id: &str,
    registry: &ExternalDnsConfig,
    view: &ZoneView,
) -> ReleasePlan {
    let reg = Registry::new(registry);
    let to = reg.owner_id();
    let mut plan = ReleasePlan::default();
    for (key, owned) in view.owners() {
        if &*owned.mark.owner != owner_id {
            continue;
        }
        let Some(ours) = view.owner_rrset(key) else {
            continue;
        };
        let Some(data) = view.get(key) else {
            // A mark without its record hands nothing over: it only goes.
            plan.changes.push(PlannedChange {
                change: Change::new(ChangeKind::Release, vec![RRSetOp::delete(ours)]),
                reason: "dnsplane's mark without its record: removed".into(),
            });
            continue;
        };
        let Some(txt) = mark_key(&reg, zone, key) else {
            plan.refused.push((key.clone(), unmarkable(&reg, key)));
            continue;
        };
        let create = match view.get(&txt) {
            None => {
                let resource = owned
                    .mark
                    .external_dns_resource
                    .as_deref()
                    .map(str::to_string)
                    .unwrap_or_else(|| external_dns_resource(&owned.mark.resource));
                let props: Vec<(&str, &str)> = ours.properties().collect();
                let value = reg.mark_value(to, &resource);
                match RRSet::with_properties(txt.clone(), data.ttl.max(1), &[value], &props) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        plan.refused.push((
                            key.clone(),
                            format!("external-dns's mark {}: {e}", txt.name),
                        ));
                        continue;
                    }
                }
            }
            Some(there) => match reg.parse(&there) {
                Some(m) if &*m.owner == to => None,
                Some(m) => {
                    plan.refused.push((
                        key.clone(),
                        format!(
                            "{} already marks it for external-dns owner {:?}, not {to:?}",
                            txt.name, m.owner
                        ),
                    ));
                    continue;
                }
                None => {
                    plan.refused.push((
                        key.clone(),
                        format!(
                            "{} TXT holds other data where external-dns's mark would go",
                            txt.name
                        ),
                    ));
                    continue;
                }
            },
        };
        let mut ops = vec![RRSetOp::update(data.clone(), data), RRSetOp::delete(ours)];
        let reason = match create {
            Some(m) => {
                ops.push(RRSetOp::create(m));
                format!("released to external-dns owner {to:?}")
            }
            None => {
                format!("already marked for external-dns owner {to:?}: dnsplane's mark removed")
            }
        };
        plan.changes.push(PlannedChange {
            change: Change::new(ChangeKind::Release, ops),
            reason,
        });
    }
    plan.already = count_already(&reg, zone, view, owner_id, to);
    plan
}

/// The key of `key`'s external-dns mark (the new format, as external-dns writes it),
/// if it is a name in `zone`.
fn mark_key(reg: &Registry<'_>, zone: &Name, key: &RecordKey) -> Option<RecordKey> {
    let name = reg.txt_name(key, Format::New)?;
    name.is_within(zone)
        .then(|| RecordKey::new(zone.clone(), name, RecordType::Txt).in_set(key.set))
}

fn unmarkable(reg: &Registry<'_>, key: &RecordKey) -> String {
    match reg.txt_name(key, Format::New) {
        Some(n) => format!(
            "external-dns would mark it as {n}, outside the zone (an apex record needs a txt_prefix with %{{record_type}} ending in a dot, as external-dns's docs say)"
        ),
        None => "external-dns's mark for it would not be a valid name (a label over 63 bytes, or an unreplaced `*`: set wildcard_replacement)".into(),
    }
}

/// Data records the owner `to` holds through external-dns's mark alone.
fn count_already(
    reg: &Registry<'_>,
    zone: &Name,
    view: &ZoneView,
    owner_id: &str,
    to: &str,
) -> usize {
    view.data()
        .filter(|(k, _)| k.rtype != RecordType::Txt || reg.owned_by(&k.name).is_empty())
        .filter(|(k, _)| view.owner(k).is_none_or(|o| &*o.mark.owner != owner_id))
        .filter(|(k, _)| {
            mark_key(reg, zone, k)
                .and_then(|t| view.get(&t))
                .and_then(|t| reg.parse(&t))
                .is_some_and(|m| &*m.owner == to)
        })
        .count()
}

/// The `external-dns/resource` for a record dnsplane's source named `resource`: the
/// name external-dns's CRD source gives a DNSEndpoint (`crd/<namespace>/<name>`);
/// empty (the label left out) for sources external-dns has no name for.
pub fn external_dns_resource(resource: &str) -> String {
    match resource.strip_prefix("DNSEndpoint ") {
        Some(ns_name) if ns_name.matches('/').count() == 1 && !ns_name.contains(['#', ' ']) => {
            format!("crd/{ns_name}")
        }
        _ => String::new(),
    }
}

/// The owner external-dns reads from a mark (for tests).
#[cfg(test)]
fn marked_for(rr: &RRSet) -> Option<String> {
    crate::external_dns::parse_value(rr).map(|m| m.owner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external_dns;
    use crate::ownership;
    use dnsplane_common::RecordType;
    use std::collections::BTreeMap;

    const ME: &str = "dnsplane-1";

    fn cfg(prefix: &str) -> ExternalDnsConfig {
        ExternalDnsConfig {
            owner_id: "cluster-a".into(),
            txt_prefix: prefix.into(),
            txt_suffix: String::new(),
            wildcard_replacement: String::new(),
            aes_key_file: None,
        }
    }

    /// `records` after `changes` (keyed by key).
    fn apply(records: &[RRSet], changes: &[PlannedChange]) -> BTreeMap<RecordKey, RRSet> {
        let mut out: BTreeMap<RecordKey, RRSet> =
            records.iter().map(|r| (r.key.clone(), r.clone())).collect();
        for op in changes.iter().flat_map(|c| &c.change.ops) {
            assert_eq!(
                out.get(&op.key),
                op.before.as_ref(),
                "the op's before is what is there"
            );
            match &op.after {
                Some(a) => out.insert(op.key.clone(), a.clone()),
                None => out.remove(&op.key),
            };
        }
        out
    }

    fn zone() -> Name {
        Name::parse("example.com").unwrap()
    }

    fn rr(name: &str, t: RecordType, v: &str) -> RRSet {
        let key = RecordKey::new(zone(), Name::parse(name).unwrap(), t);
        RRSet::new(key, 300, &[v]).unwrap()
    }

    /// A record of ours, adopted from external-dns (`ext`: its resource then) or not.
    fn ours(r: &RRSet, ext: Option<&str>) -> Vec<RRSet> {
        let mark = match ext {
            Some(e) => {
                ownership::adopted_owner_record(&r.key, ME, "push/ci", std::iter::empty(), e)
            }
            None => ownership::owner_record(&r.key, ME, "DNSEndpoint default/web"),
        };
        vec![r.clone(), mark.unwrap()]
    }

    #[test]
    fn hands_each_record_over_in_one_change_with_its_resource() {
        let www = rr("www.example.com", RecordType::A, "192.0.2.1");
        let api = rr("api.example.com", RecordType::Cname, "lb.example.net.");
        let mut all = ours(&www, Some("ingress/default/web"));
        all.extend(ours(&api, None));
        let view = ZoneView::new(all.clone());
        let cfg = cfg("ext-");
        let plan = plan_release(&zone(), ME, &cfg, &view);
        assert!(plan.refused.is_empty(), "{:?}", plan.refused);
        assert_eq!(plan.changes.len(), 2);
        let reg = Registry::new(&cfg);
        let mut after = apply(&all, &plan.changes);
        // Data unchanged, dnsplane's marks gone, external-dns's in place.
        assert_eq!(after.remove(&www.key), Some(www.clone()));
        assert_eq!(after.remove(&api.key), Some(api.clone()));
        let m = after
            .remove(&mark_key(&reg, &zone(), &www.key).unwrap())
            .expect("www's external-dns mark");
        assert_eq!(m.key.name.as_str(), "ext-a-www.example.com.");
        assert_eq!(
            m.values().next().unwrap(),
            format!(
                "\"{}\"",
                external_dns::value("cluster-a", "ingress/default/web")
            )
        );
        let m = after
            .remove(&mark_key(&reg, &zone(), &api.key).unwrap())
            .expect("api's external-dns mark");
        assert_eq!(marked_for(&m).as_deref(), Some("cluster-a"));
        assert!(
            m.values()
                .next()
                .unwrap()
                .contains("external-dns/resource=crd/default/web")
        );
        assert!(
            after.is_empty(),
            "only data and external-dns's marks: {after:?}"
        );
        for c in &plan.changes {
            assert_eq!(c.change.kind, ChangeKind::Release);
            assert!(c.change.ops[0].is_assert(), "the data is only asserted");
        }
    }

    #[test]
    fn refuses_what_external_dns_could_not_read_back() {
        // An apex record with a plain prefix: its mark would fall outside the zone.
        let apex = rr("example.com", RecordType::Mx, "10 mail.example.com.");
        // A TXT of another owner where the mark goes.
        let www = rr("www.example.com", RecordType::A, "192.0.2.1");
        let theirs = rr(
            "ext-a-www.example.com",
            RecordType::Txt,
            &format!("\"{}\"", external_dns::value("cluster-b", "x")),
        );
        let mut all = ours(&apex, None);
        all.extend(ours(&www, None));
        all.push(theirs);
        let view = ZoneView::new(all);
        let plan = plan_release(&zone(), ME, &cfg("ext-"), &view);
        let refused: Vec<&str> = plan.refused.iter().map(|(k, _)| k.name.as_str()).collect();
        assert_eq!(refused, ["example.com.", "www.example.com."]);
        assert!(
            plan.refused[0].1.contains("outside the zone"),
            "{}",
            plan.refused[0].1
        );
        assert!(
            plan.refused[1].1.contains("cluster-b"),
            "{}",
            plan.refused[1].1
        );
        // With the prefix external-dns's docs give for apex records, the apex goes.
        let plan = plan_release(&zone(), ME, &cfg("txt-%{record_type}."), &view);
        assert!(
            !plan.refused.iter().any(|(k, _)| k.name == apex.key.name),
            "{:?}",
            plan.refused
        );
    }

    #[test]
    fn a_second_release_only_removes_what_is_left_of_ours() {
        let www = rr("www.example.com", RecordType::A, "192.0.2.1");
        let cfg = cfg("");
        let all = ours(&www, None);
        let view = ZoneView::new(all.clone());
        let plan = plan_release(&zone(), ME, &cfg, &view);
        let after: Vec<RRSet> = apply(&all, &plan.changes).into_values().collect();
        // Half done: external-dns's mark written, ours still there.
        let mut half = after.clone();
        half.extend(ours(&www, None).into_iter().skip(1));
        let view = ZoneView::new(half);
        let plan = plan_release(&zone(), ME, &cfg, &view);
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(
            plan.changes[0].change.ops.len(),
            2,
            "assert and delete only"
        );
        // Done: nothing left, and the record counts as already released.
        let view = ZoneView::new(after);
        let plan = plan_release(&zone(), ME, &cfg, &view);
        assert!(plan.changes.is_empty());
        assert_eq!(plan.already, 1);
    }

    #[test]
    fn other_owners_and_unowned_records_are_left_alone() {
        let www = rr("www.example.com", RecordType::A, "192.0.2.1");
        let other = rr("other.example.com", RecordType::A, "192.0.2.2");
        let unowned = rr("free.example.com", RecordType::A, "192.0.2.3");
        let mut all = vec![
            other.clone(),
            ownership::owner_record(&other.key, "someone-else", "r").unwrap(),
            unowned,
        ];
        all.extend(ours(&www, None));
        let view = ZoneView::new(all);
        let plan = plan_release(&zone(), ME, &cfg(""), &view);
        let keys: Vec<&RecordKey> = plan.changes.iter().map(|c| c.change.key()).collect();
        assert_eq!(keys, [&www.key]);
    }

    /// A zone whose external-dns ran with `--txt-encrypt-enabled` gets its marks back
    /// sealed with the zone's key: external-dns (and dnsplane) read them as the owner's,
    /// and they are no plain text.
    #[test]
    fn an_encrypted_registry_gets_encrypted_marks() {
        let www = rr("www.example.com", RecordType::A, "192.0.2.1");
        let all = ours(&www, Some("ingress/default/web"));
        let view = ZoneView::new(all.clone());
        let cfg = ExternalDnsConfig {
            aes_key_file: Some(crate::config::AesKeyFile::test_key(7)),
            ..cfg("")
        };
        let plan = plan_release(&zone(), ME, &cfg, &view);
        let reg = Registry::new(&cfg);
        let after = apply(&all, &plan.changes);
        let m = &after[&mark_key(&reg, &zone(), &www.key).unwrap()];
        assert!(!m.values().next().unwrap().contains("heritage"), "{m:?}");
        let read = reg.parse(m).expect("read with the key");
        assert_eq!(&*read.owner, "cluster-a");
        assert_eq!(&*read.resource, "ingress/default/web");
        assert_eq!(marked_for(m), None, "no plain mark without the key");
    }

    #[test]
    fn dnsendpoint_resources_take_external_dns_crd_names() {
        assert_eq!(
            external_dns_resource("DNSEndpoint default/web"),
            "crd/default/web"
        );
        assert_eq!(external_dns_resource("DNSEndpoint ./dns.yaml#2"), "");
        assert_eq!(external_dns_resource("push/ci"), "");
    }
}
