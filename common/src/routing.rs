//! Routing-policy sets and provider-specific properties: what external-dns calls an
//! endpoint's `setIdentifier` and `providerSpecific`.
//!
//! - A **set identifier** splits one (name, type) into several RRSets that a provider
//!   answers by policy (Route 53's weighted, latency, geolocation, failover and
//!   multivalue sets). It is part of a record's identity ([`crate::RecordKey`]), so
//!   each set is planned, owned and reported on its own.
//! - **Properties** are `(name, value)` pairs that a provider needs beside the values
//!   (`aws/weight`, `alias`, …). They are part of a record's data: two RRSets are equal
//!   only when their properties are. Each driver says which it writes; a record with a
//!   property its provider cannot write is refused (`INVALID`), never written without
//!   it (that would be a different record, planned again on every sync).
//!
//! Properties are canonicalised here, once for every side (desired state, what a
//! driver reads back), so that a converged record compares equal: names are
//! lower-case, known values have one spelling, and a value that only restates the
//! provider's default is dropped (Route 53's `aws/evaluate-target-health=true` on an
//! alias, `alias=false`).
//!
//! A few properties are **kept when absent** ([`KEPT_WHEN_ABSENT`]): a desired record
//! that leaves one out means "whatever the provider holds" (Cloudflare's proxy status,
//! set by hand in the dashboard, stays), so [`settle`] takes it from what is observed
//! before the two are compared, and a value that only restates what a read shows as
//! absence (`cloudflare-proxied=false` over a DNS-only record) is dropped there.
use crate::error::ModelError;
use std::collections::HashMap;
use std::fmt;
use std::sync::{OnceLock, RwLock};

/// Longest set identifier (Route 53's limit: 1–128 characters).
pub const MAX_SET_ID: usize = 128;
/// Distinct set identifiers one process keeps; identifiers are few (a handful of
/// regions or weights per name), so this only bounds what hostile input can cost.
pub const MAX_DISTINCT_SET_IDS: usize = 1 << 16;
/// Most properties one record may carry.
pub const MAX_PROPERTIES: usize = 16;
/// Longest property name and value.
pub const MAX_PROPERTY_NAME: usize = 128;
pub const MAX_PROPERTY_VALUE: usize = 1024;

/// external-dns's names of Route 53's properties (`provider/aws/aws.go`).
pub mod aws {
    /// `true`: the record is an alias; its one value is the alias target's DNS name.
    pub const ALIAS: &str = "alias";
    /// The hosted zone id of an alias target outside the account's zones.
    pub const TARGET_HOSTED_ZONE: &str = "aws/target-hosted-zone";
    /// `false` turns off an alias's `EvaluateTargetHealth` (default `true`).
    pub const EVALUATE_TARGET_HEALTH: &str = "aws/evaluate-target-health";
    pub const WEIGHT: &str = "aws/weight";
    pub const REGION: &str = "aws/region";
    pub const FAILOVER: &str = "aws/failover";
    pub const GEO_CONTINENT: &str = "aws/geolocation-continent-code";
    pub const GEO_COUNTRY: &str = "aws/geolocation-country-code";
    pub const GEO_SUBDIVISION: &str = "aws/geolocation-subdivision-code";
    pub const MULTI_VALUE_ANSWER: &str = "aws/multi-value-answer";
    pub const HEALTH_CHECK_ID: &str = "aws/health-check-id";

    /// The properties that choose a routing policy: an ownership record of a set
    /// carries them too (Route 53 refuses a set without its policy).
    pub const ROUTING: [&str; 7] = [
        WEIGHT,
        REGION,
        FAILOVER,
        GEO_CONTINENT,
        GEO_COUNTRY,
        GEO_SUBDIVISION,
        MULTI_VALUE_ANSWER,
    ];
}

/// external-dns's name of Cloudflare's property (`source/annotations`, the
/// `external-dns.alpha.kubernetes.io/cloudflare-proxied` annotation).
pub mod cloudflare {
    /// `true`: Cloudflare proxies the records (only A, AAAA and CNAME can be), and
    /// their TTL is automatic (1); `false`: DNS-only. Absent: left as it is.
    pub const PROXIED: &str = "external-dns.alpha.kubernetes.io/cloudflare-proxied";
    /// The record types Cloudflare can proxy.
    pub const PROXIABLE: [crate::RecordType; 3] = [
        crate::RecordType::A,
        crate::RecordType::Aaaa,
        crate::RecordType::Cname,
    ];
}

/// Properties a desired record may leave out to mean "as the provider holds it", each
/// with the value a read shows as absence.
pub const KEPT_WHEN_ABSENT: [(&str, &str); 1] = [(cloudflare::PROXIED, "false")];

/// A set identifier, interned: a record key stays 24 bytes (a million keys would pay
/// 8 more bytes each for a pointer), and comparing two keys without one costs nothing.
/// `SetId::NONE` is a record outside any routing-policy set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SetId(u32);

#[derive(Default)]
struct Interned {
    texts: Vec<&'static str>,
    ids: HashMap<&'static str, u32>,
}

fn interned() -> &'static RwLock<Interned> {
    static SET_IDS: OnceLock<RwLock<Interned>> = OnceLock::new();
    SET_IDS.get_or_init(RwLock::default)
}

impl SetId {
    pub const NONE: SetId = SetId(0);

    /// `""` is [`SetId::NONE`]; anything else must be 1–128 printable characters.
    pub fn new(text: &str) -> Result<SetId, ModelError> {
        if text.is_empty() {
            return Ok(SetId::NONE);
        }
        let bad = |problem: String| ModelError::SetId {
            id: crate::error::excerpt(text),
            problem,
        };
        if text.chars().count() > MAX_SET_ID {
            return Err(bad(format!("longer than {MAX_SET_ID} characters")));
        }
        if text.chars().any(char::is_control) {
            return Err(bad("holds a control character".into()));
        }
        if let Some(&id) = interned().read().expect("set ids").ids.get(text) {
            return Ok(SetId(id));
        }
        let mut table = interned().write().expect("set ids");
        if let Some(&id) = table.ids.get(text) {
            return Ok(SetId(id));
        }
        if table.texts.len() >= MAX_DISTINCT_SET_IDS {
            return Err(bad(format!(
                "more than {MAX_DISTINCT_SET_IDS} distinct set identifiers"
            )));
        }
        // Leaked on purpose: bounded by MAX_DISTINCT_SET_IDS, and every key that names
        // it can then borrow the text without a lock.
        let text: &'static str = Box::leak(text.to_string().into_boxed_str());
        table.texts.push(text);
        let id = table.texts.len() as u32;
        table.ids.insert(text, id);
        Ok(SetId(id))
    }

    pub fn is_none(self) -> bool {
        self == SetId::NONE
    }

    /// [`SetId::is_none`] by reference, for serde's `skip_serializing_if`.
    pub fn is_none_ref(&self) -> bool {
        self.is_none()
    }

    /// The identifier's text; `""` for [`SetId::NONE`].
    pub fn as_str(self) -> &'static str {
        if self.is_none() {
            return "";
        }
        interned().read().expect("set ids").texts[self.0 as usize - 1]
    }
}

// By text, so that an order is the same in every process; none first.
impl Ord for SetId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self == other {
            return std::cmp::Ordering::Equal;
        }
        match (self.is_none(), other.is_none()) {
            (true, _) => std::cmp::Ordering::Less,
            (_, true) => std::cmp::Ordering::Greater,
            _ => self.as_str().cmp(other.as_str()),
        }
    }
}

impl PartialOrd for SetId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for SetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for SetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// As its text (`""` for none), so that a stored key means the same in every process.
impl serde::Serialize for SetId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for SetId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SetId, D::Error> {
        let text = String::deserialize(d)?;
        SetId::new(&text).map_err(serde::de::Error::custom)
    }
}

/// Canonical properties: sorted by name, one value per name, defaults dropped.
pub fn canonical_properties<N: AsRef<str>, V: AsRef<str>>(
    pairs: &[(N, V)],
) -> Result<Vec<(String, String)>, ModelError> {
    if pairs.len() > MAX_PROPERTIES {
        return Err(ModelError::Property {
            name: String::new(),
            problem: format!(
                "{} properties, above the limit of {MAX_PROPERTIES}",
                pairs.len()
            ),
        });
    }
    let mut out: Vec<(String, String)> = Vec::with_capacity(pairs.len());
    for (name, value) in pairs {
        let (name, value) = (name.as_ref().trim(), value.as_ref().trim());
        let bad = |problem: String| ModelError::Property {
            name: crate::error::excerpt(name),
            problem,
        };
        if name.is_empty() || name.len() > MAX_PROPERTY_NAME {
            return Err(bad(format!("a name needs 1 to {MAX_PROPERTY_NAME} bytes")));
        }
        if value.len() > MAX_PROPERTY_VALUE {
            return Err(bad(format!(
                "the value is above {MAX_PROPERTY_VALUE} bytes"
            )));
        }
        if name.chars().chain(value.chars()).any(char::is_control) {
            return Err(bad("holds a control character".into()));
        }
        let name = name.to_ascii_lowercase();
        if out.iter().any(|(n, _)| *n == name) {
            return Err(bad("given twice".into()));
        }
        if let Some(value) = canonical_value(&name, value).map_err(bad)? {
            out.push((name, value));
        }
    }
    // Properties of an alias only mean something on an alias.
    if !out.iter().any(|(n, _)| n == aws::ALIAS) {
        for only_alias in [aws::TARGET_HOSTED_ZONE, aws::EVALUATE_TARGET_HEALTH] {
            if out.iter().any(|(n, _)| n == only_alias) {
                return Err(ModelError::Property {
                    name: only_alias.into(),
                    problem: "only applies to an alias (alias=true)".into(),
                });
            }
        }
    }
    out.sort();
    Ok(out)
}

/// One property's canonical value; `None` when it only restates the default.
fn canonical_value(name: &str, value: &str) -> Result<Option<String>, String> {
    let boolean = |v: &str| match v.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{v:?} is not true or false")),
    };
    Ok(match name {
        aws::ALIAS => boolean(value)?.then(|| "true".to_string()),
        // Both kept: `false` (DNS-only) is an instruction, absence is not (see `settle`).
        cloudflare::PROXIED => Some(boolean(value)?.to_string()),
        aws::EVALUATE_TARGET_HEALTH => (!boolean(value)?).then(|| "false".to_string()),
        // external-dns sets it with any value (even empty) to mean "on".
        aws::MULTI_VALUE_ANSWER => match value {
            "" => Some("true".into()),
            v => boolean(v)?.then(|| "true".to_string()),
        },
        aws::WEIGHT => {
            let w: u32 = value
                .parse()
                .map_err(|_| format!("{value:?} is not a whole number"))?;
            if w > 255 {
                return Err(format!("{w} is above 255, Route 53's largest weight"));
            }
            Some(w.to_string())
        }
        aws::REGION | aws::TARGET_HOSTED_ZONE | aws::HEALTH_CHECK_ID => {
            if value.is_empty() {
                return Err("empty".into());
            }
            Some(match name {
                aws::REGION => value.to_ascii_lowercase(),
                aws::TARGET_HOSTED_ZONE => value
                    .trim_start_matches("/hostedzone/")
                    .to_ascii_uppercase(),
                _ => value.to_string(),
            })
        }
        aws::FAILOVER => match value.to_ascii_uppercase().as_str() {
            v @ ("PRIMARY" | "SECONDARY") => Some(v.to_string()),
            _ => return Err(format!("{value:?} is not PRIMARY or SECONDARY")),
        },
        aws::GEO_CONTINENT | aws::GEO_COUNTRY | aws::GEO_SUBDIVISION => {
            if value.is_empty() {
                return Err("empty".into());
            }
            Some(value.to_ascii_uppercase())
        }
        _ => Some(value.to_string()),
    })
}

/// The value of `name` among canonical `properties`.
pub fn property<'a>(
    properties: impl IntoIterator<Item = (&'a str, &'a str)>,
    name: &str,
) -> Option<&'a str> {
    properties
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// The TTL canonical `properties` impose, whatever is asked: 0 for an alias (it has
/// none of its own), 1 (automatic) for a record Cloudflare proxies.
pub fn fixed_ttl<'a>(properties: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<u32> {
    let mut ttl = None;
    for (name, value) in properties {
        match (name, value) {
            (aws::ALIAS, "true") => return Some(0),
            (cloudflare::PROXIED, "true") => ttl = Some(1),
            _ => {}
        }
    }
    ttl
}

/// The canonical properties of `desired` as they compare with (and are written over)
/// `observed`'s: each property of [`KEPT_WHEN_ABSENT`] that `desired` leaves out is
/// taken from `observed`, and one whose value restates what a read shows as absence is
/// dropped when `observed` has none. `None` when that changes nothing (the common case:
/// no allocation).
pub fn settle<'a>(
    desired: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    observed: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
) -> Option<Vec<(String, String)>> {
    let mut out: Option<Vec<(String, String)>> = None;
    for (name, absent) in KEPT_WHEN_ABSENT {
        let want = property(desired.clone(), name);
        let have = property(observed.clone(), name);
        let to = match (want, have) {
            (None, Some(v)) => Some(v),
            (Some(v), None) if v == absent => None,
            _ => continue,
        };
        let props = out.get_or_insert_with(|| {
            desired
                .clone()
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        });
        props.retain(|(n, _)| n != name);
        if let Some(v) = to {
            props.push((name.to_string(), v.to_string()));
        }
    }
    if let Some(props) = &mut out {
        props.sort();
    }
    out
}

/// True when the canonical `properties` make the record an alias: its values are then
/// DNS names (the alias target), and it has no TTL of its own.
pub fn is_alias<'a>(properties: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
    property(properties, aws::ALIAS) == Some("true")
}

/// In a writer's list of properties: every property is written.
pub const ANY_PROPERTY: &str = "*";

/// Why a writer of `properties` (with routing-policy sets when `routing_sets`) cannot
/// hold `rrset`, named `writer` in the message: a set or a property it does not write.
/// The applier refuses such a change before any provider call; the planner keeps it
/// from a target whose account cannot hold it. `None`: it can.
pub fn cannot_hold<S: AsRef<str>>(
    writer: &str,
    routing_sets: bool,
    properties: &[S],
    rrset: &crate::RRSet,
) -> Option<String> {
    if !rrset.key.set.is_none() && !routing_sets {
        return Some(format!(
            "{writer} has no routing-policy sets (setIdentifier): cannot write {}",
            rrset.key
        ));
    }
    let (name, _) = rrset.properties().find(|(name, _)| {
        !properties
            .iter()
            .any(|p| p.as_ref() == *name || p.as_ref() == ANY_PROPERTY)
    })?;
    Some(format!(
        "{writer} cannot write provider-specific property {name:?} (on {})",
        rrset.key
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_ids_intern_and_order_by_text() {
        let a = SetId::new("eu-west").unwrap();
        let b = SetId::new("ap-south").unwrap();
        assert_eq!(a, SetId::new("eu-west").unwrap());
        assert_eq!(a.as_str(), "eu-west");
        assert!(b < a, "ordered by text, not by arrival");
        assert!(SetId::NONE < b);
        assert_eq!(SetId::new("").unwrap(), SetId::NONE);
        assert!(SetId::new(&"x".repeat(129)).is_err());
        assert!(SetId::new("a\nb").is_err());
    }

    #[test]
    fn properties_have_one_spelling() {
        let p = canonical_properties(&[
            ("aws/weight", "010"),
            ("Alias", "TRUE"),
            ("aws/evaluate-target-health", "true"),
            ("aws/failover", "primary"),
            ("webhook/x", " y "),
        ])
        .unwrap();
        assert_eq!(
            p,
            [
                ("alias".into(), "true".into()),
                ("aws/failover".into(), "PRIMARY".into()),
                ("aws/weight".into(), "10".into()),
                ("webhook/x".into(), "y".into()),
            ]
        );
        assert!(
            canonical_properties(&[("alias", "false")])
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            canonical_properties(&[("aws/multi-value-answer", "")]).unwrap(),
            [("aws/multi-value-answer".to_string(), "true".to_string())]
        );
    }

    /// Cloudflare's proxy status keeps both values (`false` is an instruction, absence
    /// is not), fixes a proxied record's TTL, and settles against what is observed.
    #[test]
    fn the_proxy_status_has_one_spelling_and_settles() {
        let p = cloudflare::PROXIED;
        for (given, canonical) in [("True", "true"), (" FALSE ", "false")] {
            assert_eq!(
                canonical_properties(&[(p.to_ascii_uppercase().as_str(), given)]).unwrap(),
                [(p.to_string(), canonical.to_string())]
            );
        }
        let e = canonical_properties(&[(p, "yes")]).unwrap_err().to_string();
        assert!(e.contains(p) && e.contains("not true or false"), "{e}");
        assert_eq!(fixed_ttl([(p, "true")]), Some(1));
        assert_eq!(fixed_ttl([(p, "false")]), None);
        assert_eq!(fixed_ttl([(aws::ALIAS, "true")]), Some(0));
        let on = [(p, "true")];
        let off = [(p, "false")];
        let none: [(&str, &str); 0] = [];
        let owned = |v: &str| vec![(p.to_string(), v.to_string())];
        assert_eq!(settle(none, on), Some(owned("true")), "absent: kept");
        assert_eq!(settle(off, none), Some(vec![]), "false restates DNS-only");
        assert_eq!(settle(off, on), None, "false over proxied: a change");
        assert_eq!(settle(on, none), None, "true over DNS-only: a change");
        assert_eq!(settle(none, none), None);
        assert_eq!(
            settle([("aws/weight", "1")], on),
            Some(vec![
                ("aws/weight".to_string(), "1".to_string()),
                (p.to_string(), "true".to_string())
            ])
        );
    }

    #[test]
    fn bad_properties_say_which_and_why() {
        for (pairs, says) in [
            (vec![("aws/weight", "300")], "above 255"),
            (vec![("aws/weight", "x")], "not a whole number"),
            (vec![("aws/failover", "tertiary")], "PRIMARY or SECONDARY"),
            (vec![("a", "1"), ("A", "2")], "given twice"),
            (
                vec![("aws/evaluate-target-health", "false")],
                "only applies to an alias",
            ),
        ] {
            let e = canonical_properties(&pairs).unwrap_err().to_string();
            assert!(e.contains(says), "{pairs:?}: {e}");
        }
    }
}
