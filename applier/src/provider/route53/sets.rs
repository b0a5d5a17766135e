//! Route 53's record sets and dnsplane's RRSets, both ways.
//!
//! A routing-policy set (`SetIdentifier` and its one policy) is an RRSet in that set
//! ([`SetId`]) whose properties ([`aws`]) carry the policy; an alias (`AliasTarget`)
//! is an RRSet with `alias=true` whose one value is the target's name. Read in the
//! canonical form `common::routing` gives, so that what dnsplane wrote reads back
//! equal. An alias to a name of the zone itself (the common case besides load
//! balancers) carries no `aws/target-hosted-zone`: written, it targets the zone's own
//! hosted zone.
use super::wire::{self, AliasTarget, SetBody, WireRRSet};
use crate::provider::precondition::ZoneRead;
use dnsplane_common::routing::aws;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType, SetId};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

/// The provider-specific properties this driver writes.
pub const PROPERTIES: &[&str] = &[
    aws::ALIAS,
    aws::TARGET_HOSTED_ZONE,
    aws::EVALUATE_TARGET_HEALTH,
    aws::WEIGHT,
    aws::REGION,
    aws::FAILOVER,
    aws::GEO_CONTINENT,
    aws::GEO_COUNTRY,
    aws::GEO_SUBDIVISION,
    aws::MULTI_VALUE_ANSWER,
    aws::HEALTH_CHECK_ID,
];

/// What Route 53 must hold for `set` in the zone of hosted zone `zone_id`. Properties
/// other than [`PROPERTIES`] were refused before (`Capabilities::op_refusal`).
pub fn body_of(set: &RRSet, zone_id: &str) -> SetBody {
    let mut b = SetBody {
        set_identifier: (!set.key.set.is_none()).then(|| set.key.set.as_str().to_string()),
        ..SetBody::default()
    };
    for (name, value) in set.properties() {
        let value = Some(value.to_string());
        match name {
            aws::WEIGHT => b.weight = value,
            aws::REGION => b.region = value,
            aws::FAILOVER => b.failover = value,
            aws::GEO_CONTINENT => b.geo.get_or_insert_default().continent = value,
            aws::GEO_COUNTRY => b.geo.get_or_insert_default().country = value,
            aws::GEO_SUBDIVISION => b.geo.get_or_insert_default().subdivision = value,
            aws::MULTI_VALUE_ANSWER => b.multi_value_answer = Some(true),
            aws::HEALTH_CHECK_ID => b.health_check_id = value,
            _ => {}
        }
    }
    if set.is_alias() {
        b.alias = Some(AliasTarget {
            hosted_zone_id: set
                .property(aws::TARGET_HOSTED_ZONE)
                .unwrap_or(zone_id)
                .to_string(),
            dns_name: set.values().next().unwrap_or_default().to_string(),
            evaluate_target_health: set.property(aws::EVALUATE_TARGET_HEALTH) != Some("false"),
        });
    } else {
        b.ttl = Some(set.ttl);
        b.values = set.values_vec();
    }
    b
}

/// The RRSet a Route 53 set at `key` (outside any set) is, read in the zone of hosted
/// zone `zone_id`; or why dnsplane cannot model it.
pub fn rrset_of(key: RecordKey, body: &SetBody, zone_id: &str) -> Result<RRSet, String> {
    let set = match &body.set_identifier {
        Some(id) => SetId::new(id).map_err(|e| e.to_string())?,
        None => SetId::NONE,
    };
    let key = key.in_set(set);
    let mut props: Vec<(&str, &str)> = Vec::new();
    let geo = body.geo.as_ref();
    for (name, value) in [
        (aws::WEIGHT, body.weight.as_deref()),
        (aws::REGION, body.region.as_deref()),
        (aws::FAILOVER, body.failover.as_deref()),
        (aws::GEO_CONTINENT, geo.and_then(|g| g.continent.as_deref())),
        (aws::GEO_COUNTRY, geo.and_then(|g| g.country.as_deref())),
        (
            aws::GEO_SUBDIVISION,
            geo.and_then(|g| g.subdivision.as_deref()),
        ),
        (aws::HEALTH_CHECK_ID, body.health_check_id.as_deref()),
    ] {
        if let Some(v) = value {
            props.push((name, v));
        }
    }
    match body.multi_value_answer {
        Some(true) => props.push((aws::MULTI_VALUE_ANSWER, "true")),
        // A policy the canonical properties cannot say (false is their default).
        Some(false) => return Err("MultiValueAnswer false".into()),
        None => {}
    }
    let policy = props.iter().any(|(n, _)| aws::ROUTING.contains(n));
    if !set.is_none() && !policy {
        return Err("a set identifier without a routing policy dnsplane models".into());
    }
    let rrset = match &body.alias {
        Some(a) => {
            props.push((aws::ALIAS, "true"));
            let target = wire::bare_zone_id(&a.hosted_zone_id).unwrap_or(&a.hosted_zone_id);
            if !target.eq_ignore_ascii_case(zone_id) {
                props.push((aws::TARGET_HOSTED_ZONE, target));
            }
            if !a.evaluate_target_health {
                props.push((aws::EVALUATE_TARGET_HEALTH, "false"));
            }
            RRSet::with_properties(key, 0, &[wire::decode_name(&a.dns_name)], &props)
        }
        None => RRSet::with_properties(key, body.ttl.unwrap_or(0), &body.values, &props),
    };
    rrset.map_err(|e| e.to_string())
}

/// Sets as Route 53 holds them, where that differs from what dnsplane would send for
/// their canonical form, as of the last read: a DELETE must repeat them exactly.
#[derive(Default)]
pub struct Spellings(Mutex<HashMap<RecordKey, (RRSet, SetBody)>>);

impl Spellings {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RecordKey, (RRSet, SetBody)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What to send to delete `set`: as last read, if that is `set` spelled otherwise.
    pub fn for_delete(&self, set: &RRSet) -> Option<SetBody> {
        self.lock()
            .get(&set.key)
            .filter(|(canonical, _)| canonical.same_data(set))
            .map(|(_, raw)| raw.clone())
    }
}

/// What a read found: the sets dnsplane models, the keys it cannot (routing it does
/// not model, values it cannot read: never written over), the types at each name, and
/// sets as Route 53 spelled them where that is not what dnsplane would send.
#[derive(Default)]
pub struct Read {
    pub zone: ZoneRead,
    pub raw: HashMap<RecordKey, SetBody>,
}

impl Read {
    /// Adds one listed set of the zone `zone` (hosted zone `zone_id`); with `names`,
    /// only if it is at one of them.
    pub fn add(
        &mut self,
        zone: &Name,
        zone_id: &str,
        set: WireRRSet,
        names: Option<&BTreeSet<Name>>,
    ) {
        let Ok(name) = Name::parse(&wire::decode_name(&set.name)) else {
            tracing::warn!(zone = %zone, record.name = %set.name, "Skipped a Route 53 set whose name dnsplane cannot represent.");
            return;
        };
        if names.is_some_and(|ns| !ns.contains(&name)) {
            return;
        }
        // SOA and types dnsplane does not model are neither listed nor written.
        let Ok(rtype) = RecordType::parse(&set.rtype) else {
            return;
        };
        self.zone
            .types
            .entry(name.clone())
            .or_default()
            .insert(rtype);
        let key = RecordKey::new(zone.clone(), name, rtype);
        let in_set = set
            .set_identifier
            .as_deref()
            .and_then(|s| SetId::new(s).ok())
            .map_or_else(|| key.clone(), |s| key.clone().in_set(s));
        if let Some(what) = set.unmodelled_routing() {
            tracing::debug!(zone = %zone, record = %in_set, routing = what, "A Route 53 set with routing dnsplane does not model; it is left alone.");
            self.zone.opaque.insert(in_set);
            return;
        }
        let body = set.body();
        match rrset_of(key, &body, zone_id) {
            Ok(r) => {
                let mut sorted = body.clone();
                sorted.values.sort();
                if sorted != body_of(&r, zone_id) {
                    self.raw.insert(r.key.clone(), body);
                }
                self.zone.rrsets.insert(r.key.clone(), r);
            }
            Err(e) => {
                tracing::warn!(zone = %zone, record = %in_set, error = %e, "A Route 53 set dnsplane cannot represent; it is left alone.");
                self.zone.opaque.insert(in_set);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::Geo;

    fn key() -> RecordKey {
        let zone = Name::parse("example.com").unwrap();
        RecordKey::new(zone.clone(), zone.prepend("w").unwrap(), RecordType::A)
    }

    /// Every routing element and an alias read into the canonical properties, and the
    /// RRSet written back as the same set.
    #[test]
    fn sets_round_trip() {
        let bodies = [
            SetBody {
                set_identifier: Some("eu".into()),
                weight: Some("10".into()),
                ttl: Some(60),
                values: vec!["192.0.2.1".into()],
                health_check_id: Some("0a1b-hc".into()),
                ..SetBody::default()
            },
            SetBody {
                set_identifier: Some("geo".into()),
                geo: Some(Geo {
                    country: Some("DE".into()),
                    subdivision: None,
                    continent: None,
                }),
                alias: Some(AliasTarget {
                    hosted_zone_id: "Z32O12XQLNTSW2".into(),
                    dns_name: "lb-1.eu-west-1.elb.amazonaws.com.".into(),
                    evaluate_target_health: false,
                }),
                ..SetBody::default()
            },
            SetBody {
                alias: Some(AliasTarget {
                    hosted_zone_id: "ZSELF".into(),
                    dns_name: "target.example.com.".into(),
                    evaluate_target_health: true,
                }),
                ..SetBody::default()
            },
            SetBody {
                set_identifier: Some("p".into()),
                failover: Some("PRIMARY".into()),
                multi_value_answer: None,
                ttl: Some(300),
                values: vec!["192.0.2.2".into()],
                ..SetBody::default()
            },
            SetBody {
                set_identifier: Some("r".into()),
                region: Some("eu-west-1".into()),
                ttl: Some(300),
                values: vec!["192.0.2.3".into()],
                ..SetBody::default()
            },
            SetBody {
                set_identifier: Some("m".into()),
                multi_value_answer: Some(true),
                ttl: Some(300),
                values: vec!["192.0.2.4".into()],
                ..SetBody::default()
            },
        ];
        for body in bodies {
            let r = rrset_of(key(), &body, "ZSELF").unwrap();
            assert_eq!(body_of(&r, "ZSELF"), body, "{r}");
        }
        let same_zone = rrset_of(
            key(),
            &SetBody {
                alias: Some(AliasTarget {
                    hosted_zone_id: "/hostedzone/ZSELF".into(),
                    dns_name: "Target.example.com.".into(),
                    evaluate_target_health: true,
                }),
                ..SetBody::default()
            },
            "ZSELF",
        )
        .unwrap();
        assert_eq!(
            same_zone.properties_vec(),
            [("alias".into(), "true".into())]
        );
        assert_eq!(same_zone.values(), ["target.example.com."]);
        assert_eq!(same_zone.ttl, 0);
    }

    #[test]
    fn routing_dnsplane_cannot_say_is_refused() {
        let e = rrset_of(
            key(),
            &SetBody {
                set_identifier: Some("x".into()),
                ttl: Some(60),
                values: vec!["192.0.2.1".into()],
                ..SetBody::default()
            },
            "Z",
        )
        .unwrap_err();
        assert!(e.contains("without a routing policy"), "{e}");
        let e = rrset_of(
            key(),
            &SetBody {
                set_identifier: Some("x".into()),
                multi_value_answer: Some(false),
                ttl: Some(60),
                values: vec!["192.0.2.1".into()],
                ..SetBody::default()
            },
            "Z",
        )
        .unwrap_err();
        assert!(e.contains("MultiValueAnswer false"), "{e}");
    }
}
