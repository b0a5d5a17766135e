//! Hosted zones, record sets and change records: the emulator's state, and the reads
//! over it (listing in AWS's order, paging).
use super::names::{from_sort_key, sort_key};
use rand::Rng;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::SystemTime;
use tokio::time::Instant;

/// Where a record set sits in a zone: name (labels reversed), type, set identifier —
/// ListResourceRecordSets' order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RrKey {
    pub rev_name: String,
    pub rtype: String,
    pub set_id: Option<String>,
}

impl RrKey {
    pub fn name(&self) -> String {
        from_sort_key(&self.rev_name)
    }
}

/// `GeoLocation` of a geolocation record set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Geo {
    pub continent: Option<String>,
    pub country: Option<String>,
    pub subdivision: Option<String>,
}

/// `AliasTarget` of an alias record set (`dns_name` in stored form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Alias {
    pub hosted_zone_id: String,
    pub dns_name: String,
    pub evaluate_target_health: bool,
}

/// One record set, as stored (name in stored form; values as given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RRSet {
    pub name: String,
    pub rtype: String,
    pub set_identifier: Option<String>,
    pub weight: Option<u64>,
    pub region: Option<String>,
    pub geo: Option<Geo>,
    pub failover: Option<String>,
    pub multi_value_answer: Option<bool>,
    pub ttl: Option<u64>,
    pub records: Vec<String>,
    pub alias: Option<Alias>,
    pub health_check_id: Option<String>,
}

impl RRSet {
    pub fn simple(name: &str, rtype: &str, ttl: u64, records: Vec<String>) -> RRSet {
        RRSet {
            name: name.to_string(),
            rtype: rtype.to_string(),
            set_identifier: None,
            weight: None,
            region: None,
            geo: None,
            failover: None,
            multi_value_answer: None,
            ttl: Some(ttl),
            records,
            alias: None,
            health_check_id: None,
        }
    }

    pub fn key(&self) -> RrKey {
        RrKey {
            rev_name: sort_key(&self.name),
            rtype: self.rtype.clone(),
            set_id: self.set_identifier.clone(),
        }
    }

    /// Whether `other` carries exactly the same data: TTL, values (as a set), alias
    /// and routing fields. DELETE requires this.
    pub fn same_data(&self, other: &RRSet) -> bool {
        let sorted = |v: &Vec<String>| {
            let mut v = v.clone();
            v.sort();
            v
        };
        self.ttl == other.ttl
            && sorted(&self.records) == sorted(&other.records)
            && self.alias == other.alias
            && self.weight == other.weight
            && self.region == other.region
            && self.geo == other.geo
            && self.failover == other.failover
            && self.multi_value_answer == other.multi_value_answer
            && self.health_check_id == other.health_check_id
    }

    /// `[name='x.', type='A']`, with `, set-identifier='id'` when set.
    pub fn describe(&self) -> String {
        match &self.set_identifier {
            Some(id) => format!(
                "[name='{}', type='{}', set-identifier='{id}']",
                self.name, self.rtype
            ),
            None => format!("[name='{}', type='{}']", self.name, self.rtype),
        }
    }
}

/// A private zone's VPC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Vpc {
    pub region: String,
    pub id: String,
}

/// One hosted zone.
#[derive(Clone, Debug)]
pub(crate) struct Zone {
    /// Bare id, `Z…`.
    pub id: String,
    /// Stored form, trailing dot.
    pub name: String,
    pub caller_reference: String,
    pub comment: Option<String>,
    pub private: bool,
    pub vpc: Option<Vpc>,
    pub name_servers: Vec<String>,
    pub rrsets: BTreeMap<RrKey, RRSet>,
}

/// The name servers private zones show (the same four everywhere).
const PRIVATE_NS: [&str; 4] = [
    "ns-0.awsdns-00.com",
    "ns-512.awsdns-00.net",
    "ns-1024.awsdns-00.org",
    "ns-1536.awsdns-00.co.uk",
];

impl Zone {
    /// A new zone with Route 53's default apex SOA (TTL 900) and NS (TTL 172800).
    pub fn new(
        id: String,
        name: String,
        caller_reference: String,
        comment: Option<String>,
        vpc: Option<Vpc>,
    ) -> Zone {
        let name_servers: Vec<String> = if vpc.is_some() {
            PRIVATE_NS.iter().map(|s| s.to_string()).collect()
        } else {
            delegation_set(&id)
        };
        let mut zone = Zone {
            private: vpc.is_some(),
            id,
            name: name.clone(),
            caller_reference,
            comment,
            vpc,
            name_servers: name_servers.clone(),
            rrsets: BTreeMap::new(),
        };
        let soa = RRSet::simple(
            &name,
            "SOA",
            900,
            vec![format!(
                "{}. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400",
                name_servers[0]
            )],
        );
        let ns = RRSet::simple(
            &name,
            "NS",
            172_800,
            name_servers.iter().map(|n| format!("{n}.")).collect(),
        );
        zone.rrsets.insert(soa.key(), soa);
        zone.rrsets.insert(ns.key(), ns);
        zone
    }

    /// Whether `key` is the apex SOA or NS (the records a zone is created with).
    pub fn is_apex_default(&self, key: &RrKey) -> bool {
        key.set_id.is_none()
            && (key.rtype == "SOA" || key.rtype == "NS")
            && key.rev_name == sort_key(&self.name)
    }

    /// A page of record sets from `start` on, and the key of the first one after it.
    pub fn page(&self, start: &RrKey, max: usize) -> (Vec<&RRSet>, Option<RrKey>) {
        let mut it = self.rrsets.range(start.clone()..).map(|(_, v)| v);
        let page: Vec<&RRSet> = it.by_ref().take(max).collect();
        let next = it.next().map(RRSet::key);
        (page, next)
    }
}

/// Four name servers derived from the zone id, in AWS's pattern (one each in .com,
/// .net, .org and .co.uk, numbered in those TLDs' ranges).
fn delegation_set(zone_id: &str) -> Vec<String> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in zone_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    ["com", "net", "org", "co.uk"]
        .iter()
        .enumerate()
        .map(|(i, tld)| {
            let n = (h >> (i * 9)) % 512;
            let base = i as u64 * 512;
            format!("ns-{}.awsdns-{:02}.{tld}", base + n, n / 8)
        })
        .collect()
}

/// A submitted change (ChangeResourceRecordSets, CreateHostedZone, DeleteHostedZone).
#[derive(Clone, Debug)]
pub(crate) struct ChangeRec {
    pub submitted: SystemTime,
    /// When it turns INSYNC; `None`: never (the `pending_forever` fault).
    pub insync_at: Option<Instant>,
    pub comment: Option<String>,
    pub zone_id: Option<String>,
}

/// Everything the emulator holds.
#[derive(Debug, Default)]
pub struct State {
    pub(crate) zones: BTreeMap<String, Zone>,
    pub(crate) changes: HashMap<String, ChangeRec>,
    pub caller_refs: HashSet<String>,
}

const ID_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

fn random_id(prefix: &str, len: usize) -> String {
    let mut rng = rand::rng();
    let mut s = prefix.to_string();
    for _ in 0..len {
        s.push(ID_CHARS[rng.random_range(0..ID_CHARS.len())] as char);
    }
    s
}

impl State {
    /// A new zone id, `Z0` and 19 more characters like today's AWS ids.
    pub fn new_zone_id(&self) -> String {
        loop {
            let id = random_id("Z0", 19);
            if !self.zones.contains_key(&id) {
                return id;
            }
        }
    }

    /// Records a change and returns its bare id (`C0…`).
    pub(crate) fn new_change(
        &mut self,
        insync_at: Option<Instant>,
        comment: Option<String>,
        zone_id: Option<String>,
    ) -> (String, ChangeRec) {
        let id = loop {
            let id = random_id("C0", 18);
            if !self.changes.contains_key(&id) {
                break id;
            }
        };
        let rec = ChangeRec {
            submitted: SystemTime::now(),
            insync_at,
            comment,
            zone_id,
        };
        self.changes.insert(id.clone(), rec.clone());
        (id, rec)
    }

    /// Zones in ListHostedZonesByName order: name with labels reversed, then id.
    pub(crate) fn zones_by_name(&self) -> Vec<&Zone> {
        let mut zones: Vec<&Zone> = self.zones.values().collect();
        zones.sort_by(|a, b| (sort_key(&a.name), &a.id).cmp(&(sort_key(&b.name), &b.id)));
        zones
    }
}

/// Strips a `/hostedzone/` (or `hostedzone/`) prefix.
pub(crate) fn bare_zone_id(id: &str) -> &str {
    id.trim_start_matches('/')
        .strip_prefix("hostedzone/")
        .unwrap_or(id.trim_start_matches('/'))
}

/// Strips a `/change/` (or `change/`) prefix.
pub(crate) fn bare_change_id(id: &str) -> &str {
    id.trim_start_matches('/')
        .strip_prefix("change/")
        .unwrap_or(id.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_zone_has_apex_soa_and_ns() {
        let z = Zone::new(
            "Z0TEST".into(),
            "example.com.".into(),
            "r".into(),
            None,
            None,
        );
        let types: Vec<&str> = z.rrsets.values().map(|r| r.rtype.as_str()).collect();
        assert_eq!(types, vec!["NS", "SOA"], "listing order: NS before SOA");
        let ns = z.rrsets.values().next().unwrap();
        assert_eq!(ns.ttl, Some(172_800));
        assert_eq!(ns.records.len(), 4);
        assert!(ns.records.iter().all(|r| r.ends_with('.')));
        let soa = z.rrsets.values().nth(1).unwrap();
        assert!(soa.records[0].ends_with("awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"));
        assert!(z.is_apex_default(&soa.key()));
    }

    #[test]
    fn ids() {
        assert_eq!(bare_zone_id("/hostedzone/Z1"), "Z1");
        assert_eq!(bare_zone_id("hostedzone/Z1"), "Z1");
        assert_eq!(bare_zone_id("Z1"), "Z1");
        assert_eq!(bare_change_id("/change/C1"), "C1");
        let s = State::default();
        let id = s.new_zone_id();
        assert_eq!(id.len(), 21);
        assert!(id.starts_with("Z0"));
    }
}
