//! Zones and record sets as Azure DNS keeps them: a record set (name, type) is one ARM
//! resource with its own ETag, TTL, metadata and records; the zone's SOA and NS sets
//! at `@` exist from the zone's creation. Names are relative (`@` is the apex), kept
//! as first written and compared without case.
use super::errors::ArmError;
use std::collections::{BTreeMap, BTreeSet};

/// Public (`dnsZones`, api-version 2018-05-01) or private (`privateDnsZones`,
/// 2020-06-01) DNS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    Public,
    Private,
}

impl Kind {
    /// The resource type's path segment, as ARM writes it in ids and `type`.
    pub fn segment(self) -> &'static str {
        match self {
            Kind::Public => "dnszones",
            Kind::Private => "privateDnsZones",
        }
    }

    /// The api-versions the emulator serves for the kind (same record-set shapes).
    pub fn api_versions(self) -> &'static [&'static str] {
        match self {
            Kind::Public => &["2018-05-01"],
            // 2024-06-01 is azure-mgmt-privatedns 2.0.0's default; its record sets are
            // 2020-06-01's.
            Kind::Private => &["2020-06-01", "2024-06-01"],
        }
    }

    pub fn types(self) -> &'static [Rtype] {
        use Rtype::*;
        match self {
            Kind::Public => &[A, Aaaa, Caa, Cname, Mx, Ns, Ptr, Soa, Srv, Txt],
            Kind::Private => &[A, Aaaa, Cname, Mx, Ptr, Soa, Srv, Txt],
        }
    }
}

/// The record types Azure DNS serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Rtype {
    A,
    Aaaa,
    Caa,
    Cname,
    Mx,
    Ns,
    Ptr,
    Soa,
    Srv,
    Txt,
}

impl Rtype {
    pub const ALL: [Rtype; 10] = [
        Rtype::A,
        Rtype::Aaaa,
        Rtype::Caa,
        Rtype::Cname,
        Rtype::Mx,
        Rtype::Ns,
        Rtype::Ptr,
        Rtype::Soa,
        Rtype::Srv,
        Rtype::Txt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Rtype::A => "A",
            Rtype::Aaaa => "AAAA",
            Rtype::Caa => "CAA",
            Rtype::Cname => "CNAME",
            Rtype::Mx => "MX",
            Rtype::Ns => "NS",
            Rtype::Ptr => "PTR",
            Rtype::Soa => "SOA",
            Rtype::Srv => "SRV",
            Rtype::Txt => "TXT",
        }
    }

    /// The type path segment, without regard to case (ARM paths are case-insensitive).
    pub fn parse(s: &str) -> Option<Rtype> {
        Rtype::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mx {
    pub preference: u16,
    pub exchange: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Srv {
    pub priority: u16,
    pub weight: u16,
    pub port: u16,
    pub target: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Caa {
    pub flags: u8,
    pub tag: String,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Soa {
    pub host: String,
    pub email: String,
    pub serial: u64,
    pub refresh: u64,
    pub retry: u64,
    pub expire: u64,
    pub minimum: u64,
}

/// A record set's records, by type. A set may be empty (Azure keeps empty sets), and a
/// CNAME set may lack its record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Data {
    A(Vec<String>),
    Aaaa(Vec<String>),
    Caa(Vec<Caa>),
    Cname(Option<String>),
    Mx(Vec<Mx>),
    Ns(Vec<String>),
    Ptr(Vec<String>),
    Soa(Option<Soa>),
    Srv(Vec<Srv>),
    Txt(Vec<Vec<String>>),
}

impl Data {
    pub fn empty(t: Rtype) -> Data {
        match t {
            Rtype::A => Data::A(vec![]),
            Rtype::Aaaa => Data::Aaaa(vec![]),
            Rtype::Caa => Data::Caa(vec![]),
            Rtype::Cname => Data::Cname(None),
            Rtype::Mx => Data::Mx(vec![]),
            Rtype::Ns => Data::Ns(vec![]),
            Rtype::Ptr => Data::Ptr(vec![]),
            Rtype::Soa => Data::Soa(None),
            Rtype::Srv => Data::Srv(vec![]),
            Rtype::Txt => Data::Txt(vec![]),
        }
    }

    /// Records in the set.
    pub fn len(&self) -> usize {
        match self {
            Data::A(v) | Data::Aaaa(v) | Data::Ns(v) | Data::Ptr(v) => v.len(),
            Data::Caa(v) => v.len(),
            Data::Cname(c) => usize::from(c.is_some()),
            Data::Soa(s) => usize::from(s.is_some()),
            Data::Mx(v) => v.len(),
            Data::Srv(v) => v.len(),
            Data::Txt(v) => v.len(),
        }
    }

    /// The records in zone-file presentation form (for assertions and the control API).
    pub fn presentation(&self) -> Vec<String> {
        match self {
            Data::A(v) | Data::Aaaa(v) | Data::Ns(v) | Data::Ptr(v) => v.clone(),
            Data::Cname(c) => c.iter().cloned().collect(),
            Data::Mx(v) => v
                .iter()
                .map(|m| format!("{} {}", m.preference, m.exchange))
                .collect(),
            Data::Srv(v) => v
                .iter()
                .map(|s| format!("{} {} {} {}", s.priority, s.weight, s.port, s.target))
                .collect(),
            Data::Caa(v) => v
                .iter()
                .map(|c| format!("{} {} \"{}\"", c.flags, c.tag, c.value))
                .collect(),
            Data::Txt(v) => v
                .iter()
                .map(|strings| {
                    strings
                        .iter()
                        .map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect(),
            Data::Soa(s) => s
                .iter()
                .map(|s| {
                    format!(
                        "{} {} {} {} {} {} {}",
                        s.host, s.email, s.serial, s.refresh, s.retry, s.expire, s.minimum
                    )
                })
                .collect(),
        }
    }
}

/// One record set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordSet {
    /// Relative name as first written; `@` is the apex.
    pub name: String,
    pub rtype: Rtype,
    pub ttl: u64,
    pub metadata: BTreeMap<String, String>,
    pub data: Data,
    pub etag: String,
    /// An alias set's `targetResource.id` (public zones).
    pub target_resource: Option<String>,
}

/// A record set's key in its zone: the lower-cased relative name and the type.
pub(crate) type SetKey = (String, Rtype);

/// The key of a relative name.
pub(crate) fn name_key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// One zone.
#[derive(Clone, Debug)]
pub(crate) struct Zone {
    pub kind: Kind,
    pub subscription: String,
    pub resource_group: String,
    /// As first written, without the trailing dot.
    pub name: String,
    pub etag: String,
    pub tags: BTreeMap<String, String>,
    pub sets: BTreeMap<SetKey, RecordSet>,
}

/// The Azure name servers a new public zone is given.
pub(crate) const NAME_SERVERS: [&str; 4] = [
    "ns1-01.azure-dns.com.",
    "ns2-01.azure-dns.net.",
    "ns3-01.azure-dns.org.",
    "ns4-01.azure-dns.info.",
];

impl Zone {
    /// A new zone with the SOA (and, public, the NS) set at `@` Azure creates with it.
    pub fn new(kind: Kind, subscription: &str, resource_group: &str, name: &str) -> Zone {
        let mut z = Zone {
            kind,
            subscription: subscription.to_string(),
            resource_group: resource_group.to_string(),
            name: name.trim_end_matches('.').to_string(),
            etag: new_etag(),
            tags: BTreeMap::new(),
            sets: BTreeMap::new(),
        };
        let soa = match kind {
            Kind::Public => Soa {
                host: NAME_SERVERS[0].to_string(),
                email: "azuredns-hostmaster.microsoft.com".to_string(),
                serial: 1,
                refresh: 3600,
                retry: 300,
                expire: 2_419_200,
                minimum: 300,
            },
            Kind::Private => Soa {
                host: "azureprivatedns.net".to_string(),
                email: "azureprivatedns-host.microsoft.com".to_string(),
                serial: 1,
                refresh: 3600,
                retry: 300,
                expire: 2_419_200,
                minimum: 10,
            },
        };
        z.insert(RecordSet {
            name: "@".into(),
            rtype: Rtype::Soa,
            ttl: 3600,
            metadata: BTreeMap::new(),
            data: Data::Soa(Some(soa)),
            etag: new_etag(),
            target_resource: None,
        });
        if kind == Kind::Public {
            z.insert(RecordSet {
                name: "@".into(),
                rtype: Rtype::Ns,
                ttl: 172_800,
                metadata: BTreeMap::new(),
                data: Data::Ns(NAME_SERVERS.iter().map(|s| s.to_string()).collect()),
                etag: new_etag(),
                target_resource: None,
            });
        }
        z
    }

    pub fn insert(&mut self, set: RecordSet) {
        self.sets.insert((name_key(&set.name), set.rtype), set);
    }

    pub fn get(&self, name: &str, t: Rtype) -> Option<&RecordSet> {
        self.sets.get(&(name_key(name), t))
    }

    /// The fully qualified name of a relative one, with the trailing dot.
    pub fn fqdn(&self, name: &str) -> String {
        if name == "@" {
            format!("{}.", self.name)
        } else {
            format!("{name}.{}.", self.name)
        }
    }

    /// Refuses a set that cannot live beside the zone's others: a CNAME shares its name
    /// with nothing (so never at the apex, where SOA lives).
    pub fn check_cname(&self, name: &str, t: Rtype) -> Result<(), ArmError> {
        let key = name_key(name);
        let others = self
            .sets
            .range((key.clone(), Rtype::A)..=(key, Rtype::Txt))
            .map(|(k, _)| k.1)
            .filter(|o| *o != t);
        let mut others = others.peekable();
        if others.peek().is_none() {
            return Ok(());
        }
        let others: BTreeSet<&str> = others.map(Rtype::as_str).collect();
        if t == Rtype::Cname {
            return Err(ArmError::new(
                409,
                "Conflict",
                format!(
                    "The CNAME record set '{name}' could not be created because another record set with the same name already exists in zone '{}' (types {}).",
                    self.name,
                    others.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if others.contains("CNAME") {
            return Err(ArmError::new(
                409,
                "Conflict",
                format!(
                    "The record set '{name}' of type {} could not be created because a CNAME record set with the same name already exists in zone '{}'.",
                    t.as_str(),
                    self.name
                ),
            ));
        }
        Ok(())
    }
}

/// A zone's key: kind, subscription, resource group and name, lower case.
pub(crate) type ZoneKey = (Kind, String, String, String);

pub(crate) fn zone_key(kind: Kind, sub: &str, rg: &str, name: &str) -> ZoneKey {
    (
        kind,
        sub.to_ascii_lowercase(),
        rg.to_ascii_lowercase(),
        name.trim_end_matches('.').to_ascii_lowercase(),
    )
}

/// Everything the emulator holds.
#[derive(Debug, Default)]
pub struct State {
    pub(crate) zones: BTreeMap<ZoneKey, Zone>,
    /// Resource groups that exist: (subscription, group), lower case.
    pub groups: BTreeSet<(String, String)>,
}

impl State {
    pub fn has_group(&self, sub: &str, rg: &str) -> bool {
        self.groups
            .contains(&(sub.to_ascii_lowercase(), rg.to_ascii_lowercase()))
    }

    pub fn add_group(&mut self, sub: &str, rg: &str) {
        self.groups
            .insert((sub.to_ascii_lowercase(), rg.to_ascii_lowercase()));
    }
}

/// A fresh ETag: a random GUID, as Azure's are.
pub(crate) fn new_etag() -> String {
    let b: [u8; 16] = rand::random();
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_start_with_soa_and_ns_at_the_apex() {
        let z = Zone::new(Kind::Public, "s", "rg", "example.com.");
        assert_eq!(z.name, "example.com");
        assert!(z.get("@", Rtype::Soa).is_some());
        assert_eq!(z.get("@", Rtype::Ns).unwrap().data.len(), 4);
        let p = Zone::new(Kind::Private, "s", "rg", "corp.internal");
        assert_eq!(p.sets.len(), 1);
        assert_eq!(z.fqdn("www"), "www.example.com.");
        assert_eq!(z.fqdn("@"), "example.com.");
    }

    #[test]
    fn cname_shares_its_name_with_nothing() {
        let mut z = Zone::new(Kind::Public, "s", "rg", "example.com");
        assert_eq!(z.check_cname("@", Rtype::Cname).unwrap_err().status, 409);
        z.insert(RecordSet {
            name: "www".into(),
            rtype: Rtype::Cname,
            ttl: 60,
            metadata: BTreeMap::new(),
            data: Data::Cname(Some("x.example.net".into())),
            etag: new_etag(),
            target_resource: None,
        });
        assert!(z.check_cname("WWW", Rtype::A).is_err());
        assert!(z.check_cname("www", Rtype::Cname).is_ok());
        assert!(z.check_cname("other", Rtype::A).is_ok());
        assert_ne!(new_etag(), new_etag());
        assert_eq!(new_etag().len(), 36);
    }
}
