//! IPAM's IP addresses as records: an address with a `dns_name` is an A (IPv4) or AAAA
//! (IPv6) record at that name, in the zone that holds the name.
use super::client::HasId;
use crate::source::{DesiredEntry, Origin, SourceError};
use dnsplane_common::{Name, RecordType};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

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

/// Which addresses give records (`[sources.netbox]`'s IPAM filters). Empty lists
/// take every VRF, tenant or tag.
#[derive(Debug, Clone)]
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
}

/// The records `addresses` ask for, and an error for each address that cannot be one.
///
/// Several addresses naming one (name, type): where `merges(name)` (the zone's `merge
/// = "union"`), one RRSet of all their addresses; else the lowest id's address, and a
/// collision error for each other one. By id, so the choice never flaps between reads.
pub fn entries(
    addresses: &[IpAddress],
    filter: &IpamFilter,
    merges: impl Fn(&Name) -> bool,
) -> (Vec<DesiredEntry>, Vec<SourceError>) {
    let mut sets: BTreeMap<(Name, RecordType), (Vec<String>, Vec<u64>)> = BTreeMap::new();
    let mut errors = Vec::new();
    let source: Arc<str> = Arc::from("netbox");
    let mut taken: Vec<&IpAddress> = addresses
        .iter()
        .filter(|a| filter.takes(a) && !a.dns_name.trim().is_empty())
        .collect();
    taken.sort_by_key(|a| a.id);
    for a in taken {
        let error = |message: String| SourceError {
            source: "netbox".into(),
            location: format!("ipam/ip-addresses/{}", a.id),
            record: a.dns_name.clone(),
            message,
        };
        let name = match Name::parse(&a.dns_name) {
            Ok(n) => n,
            Err(e) => {
                errors.push(error(format!("dns_name is not a valid name: {e}")));
                continue;
            }
        };
        let ip = a.address.split('/').next().unwrap_or_default();
        let (rtype, value) = match ip.parse::<IpAddr>() {
            Ok(IpAddr::V4(v4)) => (RecordType::A, v4.to_string()),
            Ok(IpAddr::V6(v6)) => (RecordType::Aaaa, v6.to_string()),
            Err(_) => {
                errors.push(error(format!(
                    "address {:?} is not an IP address",
                    a.address
                )));
                continue;
            }
        };
        let merge = merges(&name);
        let (values, ids) = sets.entry((name, rtype)).or_default();
        match ids.first() {
            Some(first) if !merge && values.first() != Some(&value) => {
                errors.push(error(format!(
                    "{rtype} {value} collides with ipam/ip-addresses/{first}, which names it \
                     first (the zone does not merge record sets)"
                )));
            }
            _ => {
                values.push(value);
                ids.push(a.id);
            }
        }
    }
    let entries = sets
        .into_iter()
        .map(|((name, rtype), (mut values, mut ids))| {
            values.sort();
            values.dedup();
            ids.sort_unstable();
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
                    location: Arc::from(resource.as_str()),
                    resource: Arc::from(resource.as_str()),
                },
            }
        })
        .collect();
    (entries, errors)
}
