//! The zones as PowerDNS holds them, read straight from its HTTP API (no dnsplane code
//! in between), and their comparison with the model.
use crate::model::{INTRUDER, Model, OWNER, TTL, Taken};
use dnsplane_e2e::servers::PowerDns;
use std::collections::{BTreeMap, BTreeSet};

/// `(absolute name, type)`.
pub type Key = (String, String);

/// One RRSet as stored: its TTL and every record's content (duplicates kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub ttl: u32,
    pub contents: Vec<String>,
}

/// Every RRSet of `zone`, by key.
pub fn read(pdns: &PowerDns, zone: &str) -> BTreeMap<Key, Stored> {
    let body = api(
        pdns,
        "GET",
        &format!("/api/v1/servers/localhost/zones/{zone}"),
        "",
        200,
    );
    let v: serde_json::Value = serde_json::from_str(&body).expect("zone JSON");
    let mut out = BTreeMap::new();
    for rr in v["rrsets"].as_array().into_iter().flatten() {
        let key = (
            rr["name"].as_str().unwrap_or_default().to_ascii_lowercase(),
            rr["type"].as_str().unwrap_or_default().to_string(),
        );
        let contents = rr["records"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["content"].as_str().map(str::to_string))
            .collect();
        let ttl = rr["ttl"].as_u64().unwrap_or(0) as u32;
        out.insert(key, Stored { ttl, contents });
    }
    out
}

/// Every zone of the model, read now.
pub fn read_all(pdns: &PowerDns, model: &Model) -> BTreeMap<Key, Stored> {
    model.zones.iter().flat_map(|z| read(pdns, z)).collect()
}

/// The key of the ownership record of `(name, type)`.
pub fn owner_key(name: &str, rtype: &str) -> Key {
    (
        format!("_dnsplane-{}.{name}", rtype.to_ascii_lowercase()),
        "TXT".into(),
    )
}

/// The owner an ownership record names (its contents are quoted TXT strings).
fn owner_of(s: &Stored) -> Option<&str> {
    s.contents.iter().find_map(|c| {
        let rest = c.split("dnsplane/owner=").nth(1)?;
        rest.split([',', '"']).next()
    })
}

/// Writes a takeover through the API: the record with another value, and an ownership
/// record naming another owner, in one PATCH.
pub fn take_over(pdns: &PowerDns, zone: &str, name: &str, value: &str) {
    let (oname, _) = owner_key(name, "A");
    let body = serde_json::json!({"rrsets": [
        {"name": name, "type": "A", "ttl": TTL, "changetype": "REPLACE",
         "records": [{"content": value, "disabled": false}]},
        {"name": oname, "type": "TXT", "ttl": 300, "changetype": "REPLACE",
         "records": [{"content": format!("\"heritage=dnsplane,dnsplane/owner={INTRUDER},dnsplane/resource=soak\""), "disabled": false}]},
    ]});
    api(
        pdns,
        "PATCH",
        &format!("/api/v1/servers/localhost/zones/{zone}"),
        &body.to_string(),
        204,
    );
}

/// One API call, retried while PowerDNS answers 5xx (its sqlite backend refuses
/// concurrent writers with 500 "database is locked"); panics on any other answer.
fn api(pdns: &PowerDns, method: &str, path: &str, body: &str, want: u16) -> String {
    let mut last = (0, String::new());
    for attempt in 0..20 {
        last = pdns.api(method, path, body);
        if last.0 == want {
            return last.1;
        }
        if last.0 < 500 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50 * (attempt + 1)));
    }
    panic!("{method} {path}: {} {}", last.0, last.1)
}

/// What the comparison found; every entry is one record key, with what is wrong.
#[derive(Debug, Default)]
pub struct Report {
    /// Desired records absent, with another value or TTL, or without dnsplane's
    /// ownership record (a record without it is no longer managed).
    pub lost: Vec<String>,
    /// Pushed records (acknowledged) missing or with another value: lost pushes.
    pub pushed_lost: Vec<String>,
    /// Duplicate values, values beside the desired one, records neither desired nor
    /// taken (not deleted), ownership records without their record.
    pub doubled: Vec<String>,
    /// Taken names that do not hold what the other writer wrote (dnsplane must never
    /// overwrite another writer's record).
    pub foreign_overwritten: Vec<String>,
    /// Desired records checked (taken names included).
    pub desired: usize,
}

/// Compares the stored zones with the model.
pub fn compare(model: &Model, stored: &BTreeMap<Key, Stored>) -> Report {
    let mut r = Report::default();
    let mut accounted: BTreeSet<Key> = BTreeSet::new();
    for s in model.slots.iter().filter(|s| s.live) {
        r.desired += 1;
        let lost_before = r.lost.len();
        let name = model.name(s);
        let key: Key = (name.clone(), s.rec.rtype.to_string());
        let okey = owner_key(&name, s.rec.rtype);
        let data = stored.get(&key);
        let owner = stored.get(&okey);
        accounted.insert(key.clone());
        accounted.insert(okey);
        let show = |d: Option<&Stored>| {
            d.map_or("absent".to_string(), |d| {
                format!("ttl {} {:?}", d.ttl, d.contents)
            })
        };
        match &s.foreign {
            Some(f) if f.injected => {
                let want_owner = match f.how {
                    Taken::BeforeCreate => None,
                    Taken::Takeover => Some(INTRUDER),
                };
                if data.is_none_or(|d| d.contents != [f.value.clone()])
                    || owner.and_then(owner_of) != want_owner
                {
                    r.foreign_overwritten.push(format!(
                        "{name} A: the other writer's {} (owner {want_owner:?}), found {} owned by {:?}",
                        f.value,
                        show(data),
                        owner.and_then(owner_of)
                    ));
                }
            }
            _ => {
                let want = &s.rec.dig;
                match data {
                    None => r.lost.push(format!("{name} {}: absent", s.rec.rtype)),
                    Some(d) => {
                        let unique: BTreeSet<&String> = d.contents.iter().collect();
                        if unique.len() < d.contents.len() {
                            r.doubled.push(format!(
                                "{name} {}: duplicate values {}",
                                s.rec.rtype,
                                show(data)
                            ));
                        } else if d.contents.len() > 1 && d.contents.contains(want) {
                            r.doubled.push(format!(
                                "{name} {}: values beside {want}: {}",
                                s.rec.rtype,
                                show(data)
                            ));
                        } else if d.contents != [want.clone()] || d.ttl != TTL {
                            r.lost.push(format!(
                                "{name} {}: want ttl {TTL} [{want}], found {}",
                                s.rec.rtype,
                                show(data)
                            ));
                        } else if owner.and_then(owner_of) != Some(OWNER) {
                            r.lost.push(format!(
                                "{name} {}: ownership record {}",
                                s.rec.rtype,
                                show(owner)
                            ));
                        }
                    }
                }
            }
        }
        if s.pushed {
            let lost: Vec<String> = r.lost.drain(lost_before..).collect();
            r.pushed_lost.extend(lost);
        }
    }
    let apex: BTreeSet<&str> = model.zones.iter().map(String::as_str).collect();
    for (key, d) in stored {
        let at_apex = apex.contains(key.0.as_str());
        if accounted.contains(key) || (at_apex && (key.1 == "SOA" || key.1 == "NS")) {
            continue;
        }
        let what = if key.0.starts_with("_dnsplane-") {
            "an ownership record without its record"
        } else {
            "neither desired nor taken (not deleted)"
        };
        r.doubled.push(format!(
            "{} {}: {what}: ttl {} {:?}",
            key.0, key.1, d.ttl, d.contents
        ));
    }
    r
}

/// Desired records seen in the zones at the last audit.
#[derive(Debug, Default)]
pub struct Audit {
    present: BTreeMap<Key, usize>,
}

impl Audit {
    /// Reads the zones; returns the slots whose record was present at the last audit,
    /// is still desired, and is gone now.
    pub fn run(&mut self, pdns: &PowerDns, model: &Model) -> Vec<usize> {
        let stored = read_all(pdns, model);
        let live: BTreeMap<Key, usize> = model
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.live)
            .map(|(i, s)| ((model.name(s), s.rec.rtype.to_string()), i))
            .collect();
        let gone = self
            .present
            .keys()
            .filter(|k| live.contains_key(*k) && !stored.contains_key(*k))
            .map(|k| live[k])
            .collect();
        self.present = live
            .into_iter()
            .filter(|(k, _)| stored.contains_key(k))
            .collect();
        gone
    }
}
