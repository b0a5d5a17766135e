//! IPAM's IP addresses as records: an address with a `dns_name` is an A (IPv4) or AAAA
//! (IPv6) record at that name, in the zone that holds the name.
//!
//! Each address is kept last-good, as every other source keeps its objects: an
//! address edited into something that cannot be a record (a name DNS refuses, a name in
//! no zone) keeps the record it was last accepted with, and the error says so. A typo
//! in NetBox's UI must not delete a host's name from DNS; an address that is deleted,
//! filtered out (its status no longer `active`) or whose `dns_name` is emptied does
//! lose its record: that is what its owner asked for.
use super::client::HasId;
use super::last_good::{LastGood, Made};
use super::plugin::Held;
use super::write_back::CustomFields;
use crate::source::zones::{Verdict, ZoneCheck};
use crate::source::{DesiredEntry, Origin, SourceError};
use dnsplane_common::{Name, RecordType};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The fields asked for (`?fields=`): NetBox then serialises only these, and a page of
/// 1,000 addresses comes back in less than half the time.
pub const FIELDS: &str = "id,address,dns_name,status,vrf,tenant,tags,custom_fields";

/// The fields of `/api/ipam/ip-addresses/` the source reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct IpAddress {
    pub id: u64,
    /// `192.0.2.10/24`: the address with its prefix length.
    pub address: String,
    #[serde(default)]
    pub dns_name: String,
    pub status: Choice,
    #[serde(default)]
    pub vrf: Option<Related>,
    #[serde(default)]
    pub tenant: Option<Related>,
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// Its `dnsplane_status`, for the write-back.
    #[serde(default)]
    pub custom_fields: CustomFields,
}

impl HasId for IpAddress {
    fn id(&self) -> u64 {
        self.id
    }
}

/// A choice field: `{"value": "active", "label": "Active"}`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Choice {
    pub value: String,
}

/// A related object, as NetBox nests it (`vrf`, `tenant`).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Related {
    pub id: u64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub slug: String,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct Tag {
    pub slug: String,
}

/// Which addresses give records (the source's IPAM filters). Empty lists take every
/// VRF, tenant or tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpamFilter {
    /// Statuses taken; `active` by default.
    pub statuses: Vec<String>,
    /// VRF names (`global` for none).
    pub vrfs: Vec<String>,
    /// Tenant slugs.
    pub tenants: Vec<String>,
    /// Tag slugs: an address with any of them is taken.
    pub tags: Vec<String>,
}

impl Default for IpamFilter {
    fn default() -> Self {
        IpamFilter {
            statuses: vec!["active".into()],
            vrfs: Vec::new(),
            tenants: Vec::new(),
            tags: Vec::new(),
        }
    }
}

impl IpamFilter {
    pub fn takes(&self, a: &IpAddress) -> bool {
        let vrf = a.vrf.as_ref().map_or("global", |v| v.name.as_str());
        (self.statuses.is_empty() || self.statuses.contains(&a.status.value))
            && (self.vrfs.is_empty() || self.vrfs.iter().any(|v| v == vrf))
            && (self.tenants.is_empty()
                || a.tenant
                    .as_ref()
                    .is_some_and(|t| self.tenants.contains(&t.slug)))
            && (self.tags.is_empty() || a.tags.iter().any(|t| self.tags.contains(&t.slug)))
    }

    /// The query that narrows a full read on NetBox's side. Only filters whose
    /// meaning there is exactly this filter's are sent (NetBox's `tag=a&tag=b` means
    /// both tags, this filter's either): every address read is checked here again, so
    /// a narrower list could only drop addresses, and a dropped address would read as
    /// a record to delete.
    pub fn query(&self) -> Vec<(String, String)> {
        let mut q: Vec<(String, String)> = Vec::new();
        q.extend(self.statuses.iter().map(|s| ("status".into(), s.clone())));
        q.extend(self.tenants.iter().map(|t| ("tenant".into(), t.clone())));
        if let [tag] = self.tags.as_slice() {
            q.push(("tag".into(), tag.clone()));
        }
        q
    }
}

/// The record one address asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    name: Name,
    rtype: RecordType,
    value: String,
}

impl Wanted {
    /// Whether `a` still asks for this record as written (its `dns_name` is this
    /// name, its address this value): then it stands without being checked again (a
    /// webhook at 50,000 addresses re-makes every record, and the checks were most of
    /// that). A name or address written otherwise is checked again: only time is lost.
    fn made_of(&self, a: &IpAddress) -> bool {
        let name = a.dns_name.trim();
        let name = name.strip_suffix('.').unwrap_or(name);
        let ip = a.address.split('/').next().unwrap_or_default();
        self.name.as_str().strip_suffix('.') == Some(name) && self.value == ip
    }
}

/// The source's addresses: NetBox's latest version of each, and the record each was
/// last accepted with.
pub type Addresses = LastGood<IpAddress, Wanted>;

impl Addresses {
    /// The records the addresses ask for, and an error for each address that cannot
    /// be one (with the record it keeps, if it was accepted before).
    ///
    /// Several addresses naming one (name, type): where `merges(name)` (the zone's
    /// `merge = "union"`), one RRSet of all their addresses; else the lowest id's, and
    /// a collision error for each other one. By id, so the choice never flaps.
    /// A name and type the plugin's records hold (`plugin`) is the plugin's: an
    /// address naming it with a value the plugin has is served by the plugin's record,
    /// and with another value it is a collision, reported on the address.
    /// `ui` is NetBox's URL: each record's location is its address's page there.
    pub fn records(
        &mut self,
        filter: &IpamFilter,
        zones: &ZoneCheck,
        merges: impl Fn(&Name) -> bool,
        ptr: bool,
        plugin: &Held,
        ui: &str,
    ) -> (Vec<DesiredEntry>, Vec<SourceError>) {
        let mut errors = Vec::new();
        let error = |id: u64, record: &str, message: String| SourceError {
            source: super::SOURCE_KIND.into(),
            location: format!("{ui}/ipam/ip-addresses/{id}/"),
            record: record.to_string(),
            message,
        };
        let refused = self.settle(
            |a, before| {
                if !filter.takes(a) || a.dns_name.trim().is_empty() {
                    return Made::Drop;
                }
                if before.is_some_and(|w| w.made_of(a)) {
                    return Made::Stands;
                }
                match wanted(a, zones) {
                    Ok(Some(w)) => Made::Take(w),
                    Ok(None) => Made::Drop,
                    Err(why) => Made::Refuse(why),
                }
            },
            |w| format!("{} {} {}", w.name, w.rtype, w.value),
        );
        for (id, why) in refused {
            let name = self.get(id).map_or("", |a| a.dns_name.as_str());
            errors.push(error(id, name, why));
        }
        let accepted = self.accepted();
        let mut sets: BTreeMap<(Name, RecordType), (Vec<String>, Vec<u64>)> = BTreeMap::new();
        let mut claim = |id: u64, name: &Name, rtype: RecordType, value: &str, merge: bool| {
            if let Some((values, first)) = plugin.get(&(name.clone(), rtype)) {
                if !values.iter().any(|v| v == value) {
                    errors.push(error(
                        id,
                        &format!("{name} {rtype}"),
                        format!(
                            "{value} collides with the plugin's netbox-dns/records/{first}, \
                             which holds {name} {rtype} ({}): a name the plugin holds is the plugin's",
                            values.join(", ")
                        ),
                    ));
                }
                return;
            }
            let (values, ids) = sets.entry((name.clone(), rtype)).or_default();
            match ids.first() {
                Some(first) if !merge && values.first().map(String::as_str) != Some(value) => {
                    let why = if rtype == RecordType::Ptr {
                        "a PTR set is never merged"
                    } else {
                        "the zone does not merge record sets"
                    };
                    errors.push(error(
                        id,
                        &format!("{name} {rtype}"),
                        format!(
                            "{value} collides with ipam/ip-addresses/{first}, which names it \
                             first ({why})"
                        ),
                    ));
                }
                _ => {
                    values.push(value.to_string());
                    ids.push(id);
                }
            }
        };
        for (id, w) in accepted.iter() {
            claim(*id, &w.name, w.rtype, &w.value, merges(&w.name));
        }
        // PTRs after every forward record, so that their errors follow the addresses'.
        if ptr {
            for (id, w) in accepted.iter() {
                let reverse = reverse_name(&w.value);
                if zones.holds(&reverse) {
                    claim(*id, &reverse, RecordType::Ptr, w.name.as_str(), false);
                }
            }
        }
        let source: Arc<str> = Arc::from(super::SOURCE_KIND);
        let entries = sets
            .into_iter()
            .map(|((name, rtype), (mut values, ids))| {
                values.sort();
                values.dedup();
                let resource = ids
                    .iter()
                    .map(|id| format!("ipam/ip-addresses/{id}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                DesiredEntry {
                    name,
                    rtype,
                    ttl: None,
                    values,
                    set: dnsplane_common::SetId::NONE,
                    properties: Vec::new(),
                    labels: Default::default(),
                    origin: Origin {
                        source: source.clone(),
                        location: Arc::from(format!("{ui}/ipam/ip-addresses/{}/", ids[0])),
                        resource: Arc::from(resource.as_str()),
                    },
                }
            })
            .collect();
        (entries, errors)
    }
}

/// The reverse-lookup name of an IP address (`10.2.0.192.in-addr.arpa.`, nibbles
/// under `ip6.arpa.`).
pub fn reverse_name(ip: &str) -> Name {
    let text = match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa.")
        }
        Ok(IpAddr::V6(v6)) => {
            let mut labels: Vec<String> = v6
                .octets()
                .iter()
                .flat_map(|o| [o >> 4, o & 0xf])
                .map(|n| format!("{n:x}"))
                .collect();
            labels.reverse();
            format!("{}.ip6.arpa.", labels.join("."))
        }
        Err(_) => unreachable!("a value of an A or AAAA record is an IP address"),
    };
    Name::parse(&text).expect("a reverse name is a name")
}

/// The record `a` asks for: `None` when its name is in no zone and the source ignores
/// such names; `Err` why it cannot be one.
fn wanted(a: &IpAddress, zones: &ZoneCheck) -> Result<Option<Wanted>, String> {
    let name =
        Name::parse(a.dns_name.trim()).map_err(|e| format!("dns_name is not a valid name: {e}"))?;
    let ip = a.address.split('/').next().unwrap_or_default();
    let (rtype, value) = match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => (RecordType::A, v4.to_string()),
        Ok(IpAddr::V6(v6)) => (RecordType::Aaaa, v6.to_string()),
        Err(_) => return Err(format!("address {:?} is not an IP address", a.address)),
    };
    let entry = DesiredEntry {
        name: name.clone(),
        rtype,
        ttl: None,
        values: vec![value.clone()],
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        labels: Default::default(),
        origin: Origin {
            source: Arc::from(super::SOURCE_KIND),
            location: Arc::from(""),
            resource: Arc::from(""),
        },
    };
    match zones.check(&entry) {
        Verdict::Fine => Ok(Some(Wanted { name, rtype, value })),
        Verdict::Ignore => Ok(None),
        Verdict::Refuse(why) => Err(why),
    }
}
