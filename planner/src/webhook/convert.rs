//! Endpoints ⇄ dnsplane's records: what `POST /adjustendpoints` answers is exactly what
//! `GET /records` reports once the endpoint is applied (TTL defaults filled in,
//! lower-case names without a final dot, and each target byte for byte as posted:
//! [`posted`](super::posted)), so that a converged world plans no change on
//! external-dns's side (INTEROP.md §1.5.2: any difference is an update on every loop).
//! A record never posted is reported in dnsplane's canonical form (values without a
//! final dot on names, TXT quoted as zone files and providers show it).
use super::posted;
use super::wire::{Endpoint, Property};
use crate::config::ZoneConfig;
use crate::service::push::{PushOrigin, RecordText, check_record};
use crate::source::{DesiredEntry, Labels};
use dnsplane_common::convert::FieldError;
use dnsplane_common::{Name, RRSet, RecordType};

/// The desired entry an endpoint stands for (checked as a pushed record is), with the
/// targets as posted kept beside it when they are not spelled as dnsplane reports
/// them; or why it cannot be one.
pub(crate) fn to_entry(
    origin: &PushOrigin,
    field: &str,
    i: usize,
    ep: &Endpoint,
) -> Result<DesiredEntry, String> {
    let ttl = u32::try_from(ep.record_ttl)
        .map_err(|_| format!("{field}[{i}].recordTTL: {} is not a TTL", ep.record_ttl))?;
    if let Some(k) = ep.labels.keys().find(|k| posted::is_reserved(k)) {
        return Err(format!(
            "{field}[{i}].labels: label {k:?} is dnsplane's own (it keeps the targets as posted)"
        ));
    }
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
    let mut entry = check_record(origin, field, i, &record).map_err(|errors| {
        let text = describe(&errors);
        match ep.record_type.eq_ignore_ascii_case("TXT") {
            true => format!("{text} ({TXT_RULE})"),
            false => text,
        }
    })?;
    let values = entry.values.iter().map(String::as_str);
    if reported_targets(entry.rtype, is_alias(&entry), values) != ep.targets {
        let mut labels: std::collections::BTreeMap<String, String> = entry.labels.to_map();
        posted::keep(&mut labels, &ep.targets).map_err(|e| format!("{field}[{i}].targets: {e}"))?;
        entry.labels = Labels::new(labels).map_err(|e| format!("{field}[{i}].targets: {e}"))?;
    }
    Ok(entry)
}

/// How a TXT target is read, for the errors about one.
const TXT_RULE: &str = "a TXT target that starts with a double quote is read as quoted \
    character-strings, as external-dns's TXT registry writes them (`\"a\" \"b\"`, with \
    `\\\"`, `\\\\` and `\\DDD` escapes, each string at most 255 bytes); any other \
    target is taken as it is and cut into 255-byte strings";

fn is_alias(entry: &DesiredEntry) -> bool {
    dnsplane_common::routing::is_alias(
        entry
            .properties
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str())),
    )
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
/// them), and its targets as they were posted when they were kept and still stand for
/// its values.
pub(crate) fn report_labelled(r: &RRSet, labels: &Labels) -> Endpoint {
    let mut labels: std::collections::BTreeMap<String, String> = labels.to_map();
    let kept = posted::take(&mut labels).filter(|p| {
        let values: Vec<String> = r.values().map(str::to_string).collect();
        posted::canonical(r.key.rtype, r.is_alias(), p).is_some_and(|c| {
            let mut v = values;
            v.sort();
            v.dedup();
            c == v
        })
    });
    let reported = report(r);
    Endpoint {
        labels,
        targets: kept.unwrap_or(reported.targets),
        ..reported
    }
}

/// An RRSet as `GET /records` reports it, labels aside, in dnsplane's canonical form.
pub(crate) fn report(r: &RRSet) -> Endpoint {
    Endpoint {
        dns_name: without_dot(r.key.name.as_str()).to_string(),
        targets: reported_targets(r.key.rtype, r.is_alias(), r.values()),
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

/// Canonical values as targets: names without their final dot, as external-dns
/// spells them.
fn reported_targets<'a>(
    rtype: RecordType,
    alias: bool,
    values: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let names_end_in_dot = alias
        || matches!(
            rtype,
            RecordType::Cname | RecordType::Ns | RecordType::Mx | RecordType::Srv
        );
    values
        .into_iter()
        .map(|v| match names_end_in_dot {
            true => without_dot(v).to_string(),
            false => v.to_string(),
        })
        .collect()
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
    // As `GET /records` will report it: the targets as posted.
    Endpoint {
        labels: ep.labels.clone(),
        targets: ep.targets.clone(),
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

    fn zones() -> Vec<ZoneConfig> {
        vec![ZoneConfig::new(Name::parse("example.com").unwrap(), "a")]
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
            let entry = to_entry(&origin, "create", 0, &given).unwrap();
            let reported = report_labelled(&to_rrset(&zones, &entry).unwrap(), &entry.labels);
            assert_eq!(reported, once, "{given:?}");
            assert_eq!(once.targets, given.targets, "byte for byte");
        }
        let a = adjust(
            &zones,
            &origin,
            &ep("WWW.Example.com.", "A", &["192.0.2.2", "192.0.2.1"]),
        );
        assert_eq!(a.dns_name, "www.example.com");
        assert_eq!(a.targets, ["192.0.2.2", "192.0.2.1"], "as posted");
        assert_eq!(a.record_ttl, 300, "the zone's default TTL, filled in");
        let t = adjust(
            &zones,
            &origin,
            &ep("txt.example.com", "TXT", &["hello world"]),
        );
        assert_eq!(t.targets, ["hello world"]);
    }

    /// The provider gets canonical data; the posted spelling is kept only where it
    /// differs, and only while it still stands for the record's values.
    #[test]
    fn the_posted_spelling_is_kept_only_where_it_differs() {
        let origin = PushOrigin::of("external-dns");
        let zones = zones();
        let plain = to_entry(
            &origin,
            "create",
            0,
            &ep("t.example.com", "TXT", &["v=spf1 -all"]),
        )
        .unwrap();
        assert_eq!(plain.values, ["\"v=spf1 -all\""], "quoted for the provider");
        assert!(plain.labels.get(posted::KEY).is_some());
        let quoted = to_entry(
            &origin,
            "create",
            0,
            &ep("t.example.com", "TXT", &["\"v=spf1 -all\""]),
        )
        .unwrap();
        assert_eq!(quoted.values, plain.values);
        assert!(
            quoted.labels.is_empty(),
            "canonical as posted: nothing kept"
        );
        let a = to_entry(
            &origin,
            "create",
            0,
            &ep("a.example.com", "A", &["192.0.2.1"]),
        )
        .unwrap();
        assert!(a.labels.is_empty());

        // Kept for other values (pushed another way): the canonical form is reported.
        let other = RRSet::from_canonical_with(
            plain.key(Name::parse("example.com").unwrap()),
            300,
            vec!["\"v=spf1 +all\"".to_string()],
            Vec::new(),
        )
        .unwrap();
        assert_eq!(
            report_labelled(&other, &plain.labels).targets,
            ["\"v=spf1 +all\""]
        );
        let rrset = to_rrset(&zones, &plain).unwrap();
        let listed = report_labelled(&rrset, &plain.labels);
        assert_eq!(listed.targets, ["v=spf1 -all"]);
        assert!(listed.labels.is_empty(), "dnsplane's label is not listed");

        // external-dns never sends dnsplane's own label.
        let mut own = ep("t.example.com", "TXT", &["x"]);
        own.labels.insert(posted::KEY.into(), "[\"y\"]".into());
        let e = to_entry(&origin, "create", 2, &own).unwrap_err();
        assert!(e.starts_with("create[2].labels"), "{e}");
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
