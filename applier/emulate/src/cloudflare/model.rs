//! Zones and records as Cloudflare keeps them: one record per value (not record sets),
//! each with its own id, TTL (1 = automatic), proxy status, comment and tags. Names are
//! stored lower case, without the trailing dot, always fully qualified.
use super::options::Plan;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

/// A record's data, by type: most types are one `content` string; MX carries its
/// `priority` beside the content; SRV and CAA are structured `data` objects whose
/// `content` Cloudflare derives.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Content {
    Plain(String),
    Mx {
        priority: u16,
        target: String,
    },
    Srv {
        priority: u16,
        weight: u16,
        port: u16,
        target: String,
    },
    Caa {
        flags: u8,
        tag: String,
        value: String,
    },
    /// A type given as a `data` object (`structured`): the derived `content` and the
    /// object as JSON text (its keys sorted).
    Structured {
        content: String,
        data: String,
    },
}

impl Content {
    /// The `content` field as Cloudflare returns it.
    pub fn content(&self) -> String {
        match self {
            Content::Plain(s) => s.clone(),
            Content::Mx { target, .. } => target.clone(),
            Content::Srv {
                weight,
                port,
                target,
                ..
            } => format!("{weight} {port} {target}"),
            Content::Caa { flags, tag, value } => format!("{flags} {tag} \"{value}\""),
            Content::Structured { content, .. } => content.clone(),
        }
    }

    /// The top-level `priority` field (MX, SRV).
    pub fn priority(&self) -> Option<u16> {
        match self {
            Content::Mx { priority, .. } | Content::Srv { priority, .. } => Some(*priority),
            _ => None,
        }
    }

    /// The `data` object (SRV, CAA).
    pub fn data(&self) -> Option<Value> {
        match self {
            Content::Srv {
                priority,
                weight,
                port,
                target,
            } => Some(json!({
                "priority": priority, "weight": weight, "port": port, "target": target,
            })),
            Content::Caa { flags, tag, value } => {
                Some(json!({ "flags": flags, "tag": tag, "value": value }))
            }
            Content::Structured { data, .. } => serde_json::from_str(data).ok(),
            _ => None,
        }
    }
}

/// One record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub id: String,
    /// Fully qualified, lower case, no trailing dot.
    pub name: String,
    /// Upper case.
    pub rtype: String,
    pub content: Content,
    /// 1 = automatic.
    pub ttl: u32,
    pub proxied: bool,
    pub comment: Option<String>,
    pub tags: Vec<String>,
    pub created_on: SystemTime,
    pub modified_on: SystemTime,
}

/// The types Cloudflare lets through its proxy.
pub(crate) fn proxiable(rtype: &str) -> bool {
    matches!(rtype, "A" | "AAAA" | "CNAME")
}

impl Record {
    /// Two records Cloudflare calls identical: same name, type and data.
    pub fn same_as(&self, other: &Record) -> bool {
        self.name == other.name && self.rtype == other.rtype && self.content == other.content
    }

    /// The record as the API returns it: the fields of Cloudflare's schema for its
    /// type (no `zone_id`/`zone_name`, which Cloudflare removed from records; SRV's
    /// priority only in `data`).
    pub fn to_json(&self) -> Value {
        let mut o = json!({
            "id": self.id,
            "name": self.name,
            "type": self.rtype,
            "content": self.content.content(),
            "proxiable": proxiable(&self.rtype),
            "proxied": self.proxied,
            "ttl": self.ttl,
            "settings": {},
            "meta": {},
            "comment": self.comment,
            "tags": self.tags,
            "created_on": crate::timefmt::iso8601_millis(self.created_on),
            "modified_on": crate::timefmt::iso8601_millis(self.modified_on),
        });
        if let Content::Mx { priority, .. } = &self.content {
            o["priority"] = json!(priority);
        }
        if let Some(d) = self.content.data() {
            o["data"] = d;
        }
        o
    }
}

/// One zone.
#[derive(Clone, Debug)]
pub(crate) struct Zone {
    pub id: String,
    /// Lower case, no trailing dot.
    pub name: String,
    pub account_id: String,
    pub created_on: SystemTime,
    /// By id. Written only through [`insert`](Self::insert) and
    /// [`remove`](Self::remove), which keep `by_name` with it.
    pub records: BTreeMap<String, Record>,
    /// The ids of the records at each name: a record's rules and a listing by name
    /// read only that name, so a call costs what it touches, not the zone's size.
    by_name: BTreeMap<String, BTreeSet<String>>,
}

impl Zone {
    /// An empty zone.
    pub fn new(id: String, name: String, account_id: String, created_on: SystemTime) -> Zone {
        Zone {
            id,
            name,
            account_id,
            created_on,
            records: BTreeMap::new(),
            by_name: BTreeMap::new(),
        }
    }

    /// Stores `rec` (replacing the record of its id); the record it replaced.
    pub fn insert(&mut self, rec: Record) -> Option<Record> {
        let old = self.remove(&rec.id);
        self.by_name
            .entry(rec.name.clone())
            .or_default()
            .insert(rec.id.clone());
        self.records.insert(rec.id.clone(), rec);
        old
    }

    /// Removes the record `id`; the record removed.
    pub fn remove(&mut self, id: &str) -> Option<Record> {
        let rec = self.records.remove(id)?;
        if let Some(ids) = self.by_name.get_mut(&rec.name) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_name.remove(&rec.name);
            }
        }
        Some(rec)
    }

    /// The records at `name`, in listing order.
    pub fn named(&self, name: &str) -> Vec<&Record> {
        let mut v: Vec<&Record> = self
            .by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|id| self.records.get(id))
            .collect();
        v.sort_by(|a, b| (&a.rtype, &a.content, &a.id).cmp(&(&b.rtype, &b.content, &b.id)));
        v
    }

    /// The zone as the API returns it, with every field Cloudflare's schema requires
    /// (`meta`, `owner` and `plan` among them); the plan's id and price, the quotas
    /// and the owner are the emulator's.
    pub fn to_json(&self, plan: Plan) -> Value {
        let on = crate::timefmt::iso8601_millis(self.created_on);
        let (plan_id, legacy, plan_name, price, page_rules) = match plan {
            Plan::Free => (
                "0feeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
                "free",
                "Free Website",
                0,
                3,
            ),
            Plan::Pro => (
                "94f3b7b768b0458b56d2cac4fe5ec0f9",
                "pro",
                "Pro Website",
                20,
                20,
            ),
            Plan::Business => (
                "6d3d1b3d4d2b4d5f8b7a4c3e2f1a0b9c",
                "business",
                "Business Website",
                200,
                50,
            ),
            Plan::Enterprise => (
                "enterprise0000000000000000000000",
                "enterprise",
                "Enterprise Website",
                0,
                125,
            ),
        };
        json!({
            "id": self.id,
            "name": self.name,
            "status": "active",
            "paused": false,
            "type": "full",
            "development_mode": 0,
            "name_servers": ["ada.ns.cloudflare.com", "bob.ns.cloudflare.com"],
            "original_name_servers": null,
            "account": { "id": self.account_id, "name": "dnsplane emulator account" },
            "meta": {
                "cdn_only": false,
                "custom_certificate_quota": 0,
                "dns_only": false,
                "foundation_dns": false,
                "page_rule_quota": page_rules,
                "phishing_detected": false,
                "step": 2,
            },
            "owner": { "id": self.account_id, "name": "dnsplane emulator account", "type": "organization" },
            "plan": {
                "id": plan_id,
                "name": plan_name,
                "legacy_id": legacy,
                "price": price,
                "currency": "USD",
                "frequency": if price == 0 { "" } else { "monthly" },
                "is_subscribed": true,
                "can_subscribe": false,
                "externally_managed": false,
                "legacy_discount": false,
            },
            "created_on": on,
            "modified_on": on,
            "activated_on": on,
        })
    }

    /// Records in listing order: by name, type, content, then id.
    pub fn sorted(&self) -> Vec<&Record> {
        self.by_name.keys().flat_map(|n| self.named(n)).collect()
    }
}

/// Everything the emulator holds.
#[derive(Debug, Default)]
pub struct State {
    /// By id.
    pub(crate) zones: BTreeMap<String, Zone>,
}

/// A Cloudflare identifier: 32 lower-case hex digits.
pub(crate) fn new_id() -> String {
    use rand::Rng;
    let b: [u8; 16] = rand::rng().random();
    hex::encode(b)
}

/// Whether `s` is shaped like a Cloudflare identifier (at most 32 characters of
/// letters and digits, as the API's `maxLength32` identifiers).
pub(crate) fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_fields_follow_the_type() {
        let srv = Content::Srv {
            priority: 10,
            weight: 60,
            port: 5060,
            target: "sip.example.net".into(),
        };
        assert_eq!(srv.content(), "60 5060 sip.example.net");
        assert_eq!(srv.priority(), Some(10));
        assert_eq!(srv.data().unwrap()["port"], 5060);
        let caa = Content::Caa {
            flags: 0,
            tag: "issue".into(),
            value: "letsencrypt.org".into(),
        };
        assert_eq!(caa.content(), "0 issue \"letsencrypt.org\"");
        assert_eq!(caa.priority(), None);
        assert!(Content::Plain("x".into()).data().is_none());
        assert_eq!(new_id().len(), 32);
        assert!(is_identifier(&new_id()));
        assert!(!is_identifier("../x"));
    }
}
