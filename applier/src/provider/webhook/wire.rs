//! The webhook protocol on the wire (external-dns `endpoint.Endpoint` and
//! `plan.Changes`, Go `encoding/json` names) and the mapping between an Endpoint and a
//! dnsplane RRSet.
//!
//! | Endpoint | RRSet |
//! |---|---|
//! | `dnsName` (no trailing dot) | `key.name` (absolute: the dot is added) |
//! | `recordType` | `key.rtype` (types dnsplane does not model, SOA included, are skipped) |
//! | `setIdentifier` | `key.set` |
//! | `targets` | values, canonicalised; written without a trailing dot, as external-dns's `NewEndpoint` trims it; TXT keeps its literal quotes |
//! | `recordTTL` | `ttl`; 0 or absent reads as the account's `default_ttl`; written always (but for an alias, which has none) |
//! | `providerSpecific` | properties, canonicalised by `routing::canonical_properties` |
//! | `labels` | not modelled; kept from what was read when an update rewrites the endpoint |
use dnsplane_common::{Name, RRSet, RecordKey, RecordType, SetId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The media type of every exchange, byte for byte (no space after `;`).
pub const MEDIA_TYPE: &str = "application/external.dns.webhook+json;version=1";

/// One `providerSpecific` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Property {
    pub(super) name: String,
    #[serde(default)]
    pub(super) value: String,
}

/// An external-dns Endpoint; every field omitted when empty, as Go writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Endpoint {
    #[serde(rename = "dnsName", default)]
    pub(super) dns_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) targets: Vec<String>,
    #[serde(rename = "recordType", default)]
    pub(super) record_type: String,
    #[serde(
        rename = "setIdentifier",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub(super) set_identifier: String,
    /// Go's `int64`; 0 means "not set".
    #[serde(rename = "recordTTL", default, skip_serializing_if = "is_zero")]
    pub(super) record_ttl: i64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) labels: BTreeMap<String, String>,
    #[serde(
        rename = "providerSpecific",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub(super) provider_specific: Vec<Property>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// `plan.Changes` as external-dns sends it since v0.17: lower-camel keys, each omitted
/// when empty; `update_old[i]` pairs with `update_new[i]`.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct Changes {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) create: Vec<Endpoint>,
    #[serde(rename = "updateOld", skip_serializing_if = "Vec::is_empty")]
    pub(super) update_old: Vec<Endpoint>,
    #[serde(rename = "updateNew", skip_serializing_if = "Vec::is_empty")]
    pub(super) update_new: Vec<Endpoint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) delete: Vec<Endpoint>,
}

impl Changes {
    pub(super) fn is_empty(&self) -> bool {
        self.create.is_empty()
            && self.update_old.is_empty()
            && self.update_new.is_empty()
            && self.delete.is_empty()
    }
}

/// The Endpoint external-dns would write for `set`.
pub(super) fn endpoint(set: &RRSet) -> Endpoint {
    Endpoint {
        dns_name: set.key.name.as_str().trim_end_matches('.').to_string(),
        targets: set
            .values()
            // A final root name (NAPTR's replacement `.`) is a whole field, not a dot.
            .map(|v| match v.strip_suffix('.') {
                Some(rest) if !rest.is_empty() && !rest.ends_with(' ') => rest.to_string(),
                _ => v.to_string(),
            })
            .collect(),
        record_type: set.key.rtype.as_str().to_string(),
        set_identifier: set.key.set.as_str().to_string(),
        record_ttl: i64::from(set.ttl),
        labels: BTreeMap::new(),
        provider_specific: set
            .properties()
            .map(|(n, v)| Property {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
    }
}

/// Where an Endpoint belongs, before its data is read.
#[derive(Debug)]
pub(super) enum Placed {
    /// A key dnsplane models.
    Key(RecordKey),
    /// A type dnsplane does not model (SOA, HINFO, …): never listed, never written.
    Unmodelled,
    /// A name or set identifier dnsplane cannot represent.
    Unreadable(String),
}

/// Places `e` in `zone` (the caller has checked the name is within it).
pub(super) fn place(zone: &Name, e: &Endpoint) -> Placed {
    let name = match Name::parse(&e.dns_name) {
        Ok(n) => n,
        Err(err) => return Placed::Unreadable(err.to_string()),
    };
    let Ok(rtype) = RecordType::parse(&e.record_type) else {
        return Placed::Unmodelled;
    };
    match SetId::new(&e.set_identifier) {
        Ok(set) => Placed::Key(RecordKey::new(zone.clone(), name, rtype).in_set(set)),
        Err(err) => Placed::Unreadable(err.to_string()),
    }
}

/// The RRSet that the Endpoints of one key make (a server may return a set as one
/// Endpoint or as several): values joined, the lowest TTL set, properties that must
/// agree. `default_ttl` stands for "not set".
pub(super) fn rrset(key: &RecordKey, eps: &[&Endpoint], default_ttl: u32) -> Result<RRSet, String> {
    let Some(first) = eps.first() else {
        return Err("no endpoint".into());
    };
    let props = |e: &Endpoint| -> Vec<(String, String)> {
        e.provider_specific
            .iter()
            .map(|p| (p.name.clone(), p.value.clone()))
            .collect()
    };
    let canon = |e: &Endpoint| {
        dnsplane_common::routing::canonical_properties(&props(e)).map_err(|e| e.to_string())
    };
    let properties = canon(first)?;
    for e in &eps[1..] {
        if canon(e)? != properties {
            return Err("its endpoints carry different providerSpecific properties".into());
        }
    }
    let ttl = eps
        .iter()
        .map(|e| e.record_ttl)
        .filter(|&t| t > 0)
        .min()
        .map_or(Ok(default_ttl), |t| {
            u32::try_from(t).map_err(|_| format!("recordTTL {t} is out of range"))
        })?;
    let values: Vec<&str> = eps
        .iter()
        .flat_map(|e| e.targets.iter().map(String::as_str))
        .collect();
    RRSet::with_properties(key.clone(), ttl, &values, &properties).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Name {
        Name::parse("ex.test").unwrap()
    }

    fn key(name: &str, t: RecordType, set: &str) -> RecordKey {
        RecordKey::new(zone(), Name::parse(name).unwrap(), t).in_set(SetId::new(set).unwrap())
    }

    fn round_trip(set: &RRSet) -> RRSet {
        let e = endpoint(set);
        let json = serde_json::to_string(&e).unwrap();
        let back: Endpoint = serde_json::from_str(&json).unwrap();
        let Placed::Key(k) = place(&zone(), &back) else {
            panic!("{json}")
        };
        assert_eq!(k, set.key, "{json}");
        rrset(&k, &[&back], 300).unwrap()
    }

    #[test]
    fn endpoints_are_written_as_external_dns_writes_them() {
        let txt = RRSet::new(
            key("t.ex.test", RecordType::Txt, ""),
            60,
            &["\"heritage=external-dns\""],
        )
        .unwrap();
        let json = serde_json::to_value(endpoint(&txt)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"dnsName": "t.ex.test", "targets": ["\"heritage=external-dns\""],
                "recordType": "TXT", "recordTTL": 60})
        );
        let mx = RRSet::new(
            key("ex.test", RecordType::Mx, ""),
            300,
            &["10 mail.example.net."],
        )
        .unwrap();
        assert_eq!(endpoint(&mx).targets, ["10 mail.example.net"]);
        assert_eq!(endpoint(&mx).dns_name, "ex.test");
        let changes = Changes {
            update_old: vec![endpoint(&mx)],
            update_new: vec![endpoint(&mx)],
            ..Changes::default()
        };
        let json = serde_json::to_value(&changes).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["updateNew", "updateOld"]);
    }

    #[test]
    fn sets_and_properties_round_trip() {
        let weighted = RRSet::with_properties(
            key("w.ex.test", RecordType::A, "eu"),
            60,
            &["192.0.2.1", "192.0.2.2"],
            &[("webhook/weight", "10"), ("AWS/Region", "EU-west-1")],
        )
        .unwrap();
        let e = endpoint(&weighted);
        assert_eq!(e.set_identifier, "eu");
        assert_eq!(
            e.provider_specific,
            [
                Property {
                    name: "aws/region".into(),
                    value: "eu-west-1".into()
                },
                Property {
                    name: "webhook/weight".into(),
                    value: "10".into()
                }
            ]
        );
        assert_eq!(round_trip(&weighted), weighted);
        let alias = RRSet::with_properties(
            key("al.ex.test", RecordType::A, ""),
            300,
            &["lb.example.net."],
            &[("alias", "true")],
        )
        .unwrap();
        assert_eq!(endpoint(&alias).record_ttl, 0, "an alias has no TTL");
        assert_eq!(round_trip(&alias), alias);
        for (t, v) in [
            (RecordType::Cname, "target.example.net."),
            (RecordType::Txt, "\"two words\" \"and more\""),
            (RecordType::Srv, "10 60 5060 sip.example.net."),
            (RecordType::Caa, "0 issue \"letsencrypt.org\""),
            (RecordType::Aaaa, "2001:db8::1"),
        ] {
            let s = RRSet::new(key("r.ex.test", t, ""), 120, &[v]).unwrap();
            assert_eq!(round_trip(&s), s);
        }
    }

    #[test]
    fn reads_take_what_servers_send() {
        let k = key("a.ex.test", RecordType::A, "");
        let e = |targets: &[&str], ttl: i64| Endpoint {
            dns_name: "a.ex.test".into(),
            targets: targets.iter().map(|s| s.to_string()).collect(),
            record_type: "A".into(),
            record_ttl: ttl,
            ..Endpoint::default()
        };
        // No TTL: the account's default. One set in two endpoints: joined, lowest TTL.
        assert_eq!(rrset(&k, &[&e(&["192.0.2.1"], 0)], 3600).unwrap().ttl, 3600);
        let (a, b) = (e(&["192.0.2.1"], 600), e(&["192.0.2.2"], 60));
        let joined = rrset(&k, &[&a, &b], 300).unwrap();
        assert_eq!((joined.ttl, joined.values().len()), (60, 2));
        assert!(rrset(&k, &[&e(&[], 60)], 300).is_err(), "no values");
        assert!(rrset(&k, &[&e(&["not-an-ip"], 60)], 300).is_err());
        // Unquoted TXT text reads as the quoted form dnsplane writes.
        let tk = key("t.ex.test", RecordType::Txt, "");
        let raw = Endpoint {
            dns_name: "t.ex.test".into(),
            targets: vec!["heritage=external-dns".into()],
            record_type: "TXT".into(),
            ..Endpoint::default()
        };
        assert_eq!(
            rrset(&tk, &[&raw], 300).unwrap().values_vec(),
            ["\"heritage=external-dns\""]
        );
        let soa = Endpoint {
            dns_name: "ex.test".into(),
            record_type: "SOA".into(),
            ..Endpoint::default()
        };
        assert!(matches!(place(&zone(), &soa), Placed::Unmodelled));
        // Go field names, case and all; unknown fields ignored as Go ignores them.
        let go: Endpoint = serde_json::from_str(
            r#"{"dnsName":"a.ex.test","targets":["192.0.2.1"],"recordType":"A","recordTTL":30,"labels":{"owner":"x"},"providerSpecific":[{"name":"webhook/x","value":"y"}],"extra":1}"#,
        )
        .unwrap();
        assert_eq!(go.labels["owner"], "x");
        assert_eq!(go.provider_specific[0].value, "y");
    }
}
