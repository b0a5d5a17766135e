//! Endpoints ⇄ dnsplane's records, in one canonical form: what `POST /adjustendpoints`
//! answers is exactly what `GET /records` reports once the endpoint is applied (TTL
//! defaults filled in, lower-case names, canonical values without a final dot on
//! names, TXT quoted), so that a converged world plans no change on external-dns's
//! side (INTEROP.md §1.5.2: any difference is an update on every loop).
use super::wire::{Endpoint, Property};
use crate::config::ZoneConfig;
use crate::service::push::{PushOrigin, RecordText, check_record};
use crate::source::{DesiredEntry, Labels};
use dnsplane_common::convert::FieldError;
use dnsplane_common::{Name, RRSet, RecordType};

/// The desired entry an endpoint stands for (checked as a pushed record is), or why
/// it cannot be one.
pub(crate) fn to_entry(
    origin: &PushOrigin,
    field: &str,
    i: usize,
    ep: &Endpoint,
) -> Result<DesiredEntry, String> {
    let ttl = u32::try_from(ep.record_ttl)
        .map_err(|_| format!("{field}[{i}].recordTTL: {} is not a TTL", ep.record_ttl))?;
    let record = RecordText {
        name: &ep.dns_name,
        rtype: &ep.record_type,
        ttl,
        values: &ep.targets,
        set_identifier: &ep.set_identifier,
        properties: ep
            .provider_specific
            .iter()
            .map(|p| (p.name.as_str(), p.value.as_str()))
            .collect(),
        labels: ep
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
    };
    check_record(origin, field, i, &record).map_err(|errors| describe(&errors))
}

fn describe(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The zone that holds `name` (the longest configured suffix).
pub(crate) fn zone_of<'a>(zones: &'a [ZoneConfig], name: &Name) -> Option<&'a ZoneConfig> {
    zones
        .iter()
        .filter(|z| name.is_within(&z.name))
        .max_by_key(|z| z.name.as_str().len())
}

/// The RRSet an entry is once placed in its zone (the zone's TTL when it gives none).
pub(crate) fn to_rrset(zones: &[ZoneConfig], entry: &DesiredEntry) -> Option<RRSet> {
    let zone = zone_of(zones, &entry.name)?;
    RRSet::from_canonical_with(
        entry.key(zone.name.clone()),
        entry.ttl.unwrap_or(zone.default_ttl),
        entry.values.clone(),
        entry.properties.clone(),
    )
    .ok()
}

/// An RRSet as `GET /records` reports it, with the labels it was given (as
/// external-dns's in-memory provider keeps them: its registry reads the owner from
/// them).
pub(crate) fn report_labelled(r: &RRSet, labels: &Labels) -> Endpoint {
    Endpoint {
        labels: labels.to_map(),
        ..report(r)
    }
}

/// An RRSet as `GET /records` reports it, labels aside.
pub(crate) fn report(r: &RRSet) -> Endpoint {
    let names_end_in_dot = r.is_alias()
        || matches!(
            r.key.rtype,
            RecordType::Cname | RecordType::Ns | RecordType::Mx | RecordType::Srv
        );
    Endpoint {
        dns_name: without_dot(r.key.name.as_str()).to_string(),
        targets: r
            .values()
            .map(|v| match names_end_in_dot {
                true => without_dot(v).to_string(),
                false => v.to_string(),
            })
            .collect(),
        record_type: r.key.rtype.as_str().to_string(),
        set_identifier: r.key.set.as_str().to_string(),
        record_ttl: i64::from(r.ttl),
        labels: Default::default(),
        provider_specific: r
            .properties()
            .map(|(n, v)| Property {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
    }
}

/// An endpoint as it will be reported once applied, its labels kept (external-dns's
/// registry reads them from the desired endpoints); one dnsplane cannot take is
/// answered as it came, so that its refusal is reported when it is applied.
pub(crate) fn adjust(zones: &[ZoneConfig], origin: &PushOrigin, ep: &Endpoint) -> Endpoint {
    let Some(rrset) = to_entry(origin, "endpoints", 0, ep)
        .ok()
        .and_then(|e| to_rrset(zones, &e))
    else {
        return ep.clone();
    };
    Endpoint {
        labels: ep.labels.clone(),
        ..report(&rrset)
    }
}

fn without_dot(s: &str) -> &str {
    match s.strip_suffix('.') {
        Some(rest) if !rest.is_empty() => rest,
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConflictPolicy, Policy};

    fn zones() -> Vec<ZoneConfig> {
        vec![ZoneConfig {
            name: Name::parse("example.com").unwrap(),
            account: "a".into(),
            policy: Policy::Sync,
            conflict: ConflictPolicy::Report,
            default_ttl: 300,
            external_dns: None,
        }]
    }

    fn ep(name: &str, rtype: &str, targets: &[&str]) -> Endpoint {
        Endpoint {
            dns_name: name.into(),
            record_type: rtype.into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            ..Endpoint::default()
        }
    }

    /// Adjusting is idempotent and equals what the record reports once applied.
    #[test]
    fn adjust_is_what_records_reports() {
        let origin = PushOrigin::of("external-dns");
        let zones = zones();
        let registry = Endpoint {
            labels: [("ownedRecord".to_string(), "www.example.com".to_string())].into(),
            ..ep(
                "a-WWW.example.com",
                "TXT",
                &["\"heritage=external-dns,external-dns/owner=c1\""],
            )
        };
        for given in [
            ep("WWW.Example.com.", "A", &["192.0.2.2", "192.0.2.1"]),
            ep("alias.example.com", "CNAME", &["Target.Example.net."]),
            ep("txt.example.com", "TXT", &["hello world"]),
            ep("mx.example.com", "MX", &["10 Mail.example.com"]),
            registry,
            Endpoint {
                set_identifier: "eu".into(),
                record_ttl: 60,
                provider_specific: vec![Property {
                    name: "aws/weight".into(),
                    value: "010".into(),
                }],
                ..ep("api.example.com", "A", &["192.0.2.9"])
            },
        ] {
            let once = adjust(&zones, &origin, &given);
            assert_eq!(
                adjust(&zones, &origin, &once),
                once,
                "idempotent: {given:?}"
            );
            assert_eq!(once.labels, given.labels, "labels kept");
            let entry = to_entry(&origin, "create", 0, &once).unwrap();
            let reported = report(&to_rrset(&zones, &entry).unwrap());
            assert_eq!(
                Endpoint {
                    labels: given.labels.clone(),
                    ..reported
                },
                once,
                "{given:?}"
            );
        }
        let a = adjust(
            &zones,
            &origin,
            &ep("WWW.Example.com.", "A", &["192.0.2.2", "192.0.2.1"]),
        );
        assert_eq!(a.dns_name, "www.example.com");
        assert_eq!(a.targets, ["192.0.2.1", "192.0.2.2"]);
        assert_eq!(a.record_ttl, 300, "the zone's default TTL, filled in");
        let c = adjust(
            &zones,
            &origin,
            &ep("alias.example.com", "CNAME", &["Target.Example.net."]),
        );
        assert_eq!(c.targets, ["target.example.net"]);
        let t = adjust(
            &zones,
            &origin,
            &ep("txt.example.com", "TXT", &["hello world"]),
        );
        assert_eq!(t.targets, ["\"hello world\""]);
    }

    /// What dnsplane cannot take is answered as it came (refused when applied).
    #[test]
    fn an_endpoint_dnsplane_cannot_take_is_left_as_it_came() {
        let origin = PushOrigin::of("external-dns");
        for bad in [
            ep("x.example.com", "A", &["not-an-address"]),
            ep("x.example.com", "HINFO", &["\"pc\" \"linux\""]),
            ep("outside.example.org", "A", &["192.0.2.1"]),
        ] {
            assert_eq!(adjust(&zones(), &origin, &bad), bad);
        }
        let e = to_entry(
            &origin,
            "create",
            3,
            &ep("x.example.com", "A", &["not-an-address"]),
        )
        .unwrap_err();
        assert!(e.starts_with("create[3].values[0]"), "{e}");
    }
}
