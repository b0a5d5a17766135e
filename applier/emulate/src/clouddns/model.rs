//! Projects, managed zones, record sets and changes: the emulator's state, and the
//! reads over it (listing order, paging).
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// One record set as stored (name in stored form, rrdatas as given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RRSet {
    pub name: String,
    pub rtype: String,
    pub ttl: u32,
    pub rrdatas: Vec<String>,
}

impl RRSet {
    /// Where the set sits: listing order is by name, then type.
    pub fn key(&self) -> (String, String) {
        (self.name.clone(), self.rtype.clone())
    }

    /// TTL and rrdatas equal, rrdatas compared as a set (what a deletion needs).
    pub fn same_data(&self, other: &RRSet) -> bool {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        self.ttl == other.ttl && sorted(&self.rrdatas) == sorted(&other.rrdatas)
    }

    /// `name. (TYPE)`, as the error texts name a set.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.name, self.rtype)
    }

    pub fn json(&self) -> Value {
        json!({
            "kind": "dns#resourceRecordSet",
            "name": self.name,
            "type": self.rtype,
            "ttl": self.ttl,
            "rrdatas": self.rrdatas,
        })
    }
}

/// One committed change (zone creation is change "0").
#[derive(Clone, Debug)]
pub(crate) struct ChangeRec {
    pub id: u64,
    pub start_time: SystemTime,
    pub started: Instant,
    pub additions: Vec<RRSet>,
    pub deletions: Vec<RRSet>,
    /// `changes.get` calls so far (the `pending_polls` rule counts them).
    pub polls: u32,
    pub pending_forever: bool,
    pub client_operation_id: Option<String>,
}

/// When a change turns `done`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DoneRule {
    /// After this many `changes.get` calls answered `pending`.
    Polls(u32),
    /// After this long.
    After(Duration),
}

impl ChangeRec {
    pub fn done(&self, rule: DoneRule, now: Instant) -> bool {
        if self.pending_forever {
            return false;
        }
        match rule {
            DoneRule::Polls(n) => self.polls > n,
            DoneRule::After(d) => now.saturating_duration_since(self.started) >= d,
        }
    }

    pub fn json(&self, done: bool) -> Value {
        let mut v = json!({
            "kind": "dns#change",
            "additions": self.additions.iter().map(RRSet::json).collect::<Vec<_>>(),
            "deletions": self.deletions.iter().map(RRSet::json).collect::<Vec<_>>(),
            "startTime": crate::timefmt::iso8601_millis(self.start_time),
            "id": self.id.to_string(),
            "status": if done { "done" } else { "pending" },
            "isServing": true,
        });
        if let Some(c) = &self.client_operation_id {
            v["clientOperationId"] = json!(c);
        }
        v
    }
}

/// One managed zone.
#[derive(Clone, Debug)]
pub(crate) struct Zone {
    /// The managed zone's name (`my-zone`), which the API addresses it by.
    pub name: String,
    /// The DNS name in stored form (`example.com.`).
    pub dns_name: String,
    pub description: String,
    /// `public` or `private`.
    pub visibility: String,
    /// Numeric id (also accepted in place of the name).
    pub id: u64,
    pub creation_time: SystemTime,
    pub rrsets: BTreeMap<(String, String), RRSet>,
    pub changes: Vec<ChangeRec>,
}

/// The name servers every zone is given (Cloud DNS's `ns-cloud-a1…a4`).
pub(crate) const NAME_SERVERS: [&str; 4] = [
    "ns-cloud-a1.googledomains.com.",
    "ns-cloud-a2.googledomains.com.",
    "ns-cloud-a3.googledomains.com.",
    "ns-cloud-a4.googledomains.com.",
];

impl Zone {
    /// A new zone with its apex SOA and NS, created by change "0".
    pub fn new(name: &str, dns_name: &str, description: &str, visibility: &str, id: u64) -> Zone {
        let soa = RRSet {
            name: dns_name.to_string(),
            rtype: "SOA".into(),
            ttl: 21600,
            rrdatas: vec![format!(
                "{} cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300",
                NAME_SERVERS[0]
            )],
        };
        let ns = RRSet {
            name: dns_name.to_string(),
            rtype: "NS".into(),
            ttl: 21600,
            rrdatas: NAME_SERVERS.iter().map(|s| s.to_string()).collect(),
        };
        let now = SystemTime::now();
        let mut rrsets = BTreeMap::new();
        rrsets.insert(soa.key(), soa.clone());
        rrsets.insert(ns.key(), ns.clone());
        Zone {
            name: name.to_string(),
            dns_name: dns_name.to_string(),
            description: description.to_string(),
            visibility: visibility.to_string(),
            id,
            creation_time: now,
            rrsets,
            changes: vec![ChangeRec {
                id: 0,
                start_time: now,
                started: Instant::now(),
                additions: vec![soa, ns],
                deletions: Vec::new(),
                polls: 0,
                pending_forever: false,
                client_operation_id: None,
            }],
        }
    }

    pub fn json(&self) -> Value {
        json!({
            "kind": "dns#managedZone",
            "name": self.name,
            "dnsName": self.dns_name,
            "description": self.description,
            "id": self.id.to_string(),
            "nameServers": NAME_SERVERS,
            "creationTime": crate::timefmt::iso8601_millis(self.creation_time),
            "visibility": self.visibility,
        })
    }

    pub fn next_change_id(&self) -> u64 {
        self.changes.last().map_or(0, |c| c.id + 1)
    }
}

/// Every project's zones.
#[derive(Debug, Default)]
pub struct State {
    /// project → zone name → zone.
    pub(crate) projects: BTreeMap<String, BTreeMap<String, Zone>>,
    pub next_zone_id: u64,
}

impl State {
    /// A zone by its name or its numeric id.
    pub(crate) fn zone(&self, project: &str, zone: &str) -> Option<&Zone> {
        let zones = self.projects.get(project)?;
        zones
            .get(zone)
            .or_else(|| zones.values().find(|z| z.id.to_string() == zone))
    }

    pub(crate) fn zone_mut(&mut self, project: &str, zone: &str) -> Option<&mut Zone> {
        let zones = self.projects.get_mut(project)?;
        let key = if zones.contains_key(zone) {
            zone.to_string()
        } else {
            zones
                .values()
                .find(|z| z.id.to_string() == zone)?
                .name
                .clone()
        };
        zones.get_mut(&key)
    }

    pub fn new_zone_id(&mut self) -> u64 {
        self.next_zone_id += 1;
        // Cloud DNS ids are large decimal numbers.
        4_000_000_000_000_000_000 + self.next_zone_id
    }
}

/// A page token: the last key of the previous page, hex-encoded (opaque to clients).
pub(crate) fn page_token(last: &str) -> String {
    hex::encode(last.as_bytes())
}

/// The key a page token stands for; `None` for a token the emulator did not make.
pub(crate) fn read_page_token(token: &str) -> Option<String> {
    hex::decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}
