//! netbox-plugin-dns's zones and records as records: each record of a plugin zone that
//! a configured zone holds, with its TTL (else its zone's default TTL) and its zone's
//! view.
//!
//! What is never taken: SOA records and NS records at a plugin zone's apex (they stay
//! the plugin's and the provider's: dnsplane writes neither), records of plugin zones no
//! configured zone holds (the plugin keeps zones other servers serve), and records the
//! plugin marks inactive (their status, their zone's, or their expiry: their owner's
//! choice, so their record goes).
//!
//! Each record is kept last-good, as IP addresses are ([`super::ipam`]): a record edited
//! into something dnsplane cannot serve keeps the record it was last accepted with.
use super::client::HasId;
use super::last_good::{LastGood, Made};
use super::write_back::CustomFields;
use crate::source::labels::VIEW_LABEL;
use crate::source::zones::{Verdict, ZoneCheck};
use crate::source::{DesiredEntry, Labels, Origin, SourceError};
use dnsplane_common::{Name, RecordType};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The fields of zones and records asked for (`?fields=`; see [`super::ipam::FIELDS`]).
pub const ZONE_FIELDS: &str = "id,name,view,default_ttl,active,status";
pub const RECORD_FIELDS: &str =
    "id,zone,type,name,fqdn,value,absolute_value,ttl,active,custom_fields";

/// The fields of `/api/plugins/netbox-dns/zones/` the source reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct PluginZone {
    pub id: u64,
    pub name: String,
    pub view: PluginView,
    /// The TTL of the zone's records that set none.
    #[serde(default)]
    pub default_ttl: Option<u32>,
    /// The zone is active (the plugin's own reading of its status; nullable).
    #[serde(default)]
    pub active: Option<bool>,
    #[serde(default)]
    pub status: Option<String>,
}

impl PluginZone {
    /// Active, by the plugin's `active`, else by its status.
    fn is_active(&self) -> bool {
        self.active
            .unwrap_or_else(|| self.status.as_deref() == Some("active"))
    }
}

fn yes() -> bool {
    true
}

impl HasId for PluginZone {
    fn id(&self) -> u64 {
        self.id
    }
}

/// A plugin view, as zones nest it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct PluginView {
    pub name: String,
    /// The plugin's default view (`_default_`): its records feed the source's views.
    #[serde(default)]
    pub default_view: bool,
}

/// A zone, as records nest it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ZoneRef {
    pub id: u64,
}

/// The fields of `/api/plugins/netbox-dns/records/` the source reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct PluginRecord {
    pub id: u64,
    pub zone: ZoneRef,
    #[serde(rename = "type")]
    pub rtype: String,
    /// The record's name in its zone (`www`, `@`).
    pub name: String,
    /// Its absolute name (`www.example.com.`); nullable in the plugin's schema, and
    /// then made of `name` and the zone's.
    #[serde(default)]
    pub fqdn: Option<String>,
    pub value: String,
    /// The value with relative names made absolute (CNAME, MX, NS, SRV …).
    #[serde(default)]
    pub absolute_value: Option<String>,
    #[serde(default)]
    pub ttl: Option<u32>,
    /// Active: its status, its zone's and its expiry allow it.
    #[serde(default = "yes")]
    pub active: bool,
    /// Its `dnsplane_status`, for the write-back.
    #[serde(default)]
    pub custom_fields: CustomFields,
}

impl HasId for PluginRecord {
    fn id(&self) -> u64 {
        self.id
    }
}

/// The record one plugin record asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wanted {
    name: Name,
    rtype: RecordType,
    value: String,
    /// `None`: the configured zone's default TTL.
    ttl: Option<u32>,
    /// The dnsplane view it feeds; `None`: the source's views.
    view: Option<String>,
}

/// The names and types the plugin's records hold (every view), with their values and
/// the first record: an IP address naming one of them yields to the plugin.
pub type Held = BTreeMap<(Name, RecordType), (Vec<String>, u64)>;

/// The plugin's zones and records as last read, and the record each plugin record was
/// last accepted with.
#[derive(Debug, Default)]
pub struct PluginRecords {
    zones: BTreeMap<u64, PluginZone>,
    records: LastGood<PluginRecord, Wanted>,
}

impl PluginRecords {
    /// A complete read replaces every zone and record: those it lacks are gone.
    pub fn replace_all(&mut self, zones: Vec<PluginZone>, records: Vec<PluginRecord>) {
        self.zones = zones.into_iter().map(|z| (z.id, z)).collect();
        self.records.replace_all(records);
    }

    /// Whether plugin zone `id` was in the last read (a record of a zone that was not
    /// needs a full read: its view and default TTL are not known).
    pub fn knows_zone(&self, id: u64) -> bool {
        self.zones.contains_key(&id)
    }

    /// One record as the plugin now has it.
    pub fn put(&mut self, r: PluginRecord) {
        self.records.put(r);
    }

    /// A record the plugin no longer has.
    pub fn remove(&mut self, id: u64) {
        self.records.remove(id);
    }

    /// Records held (of every zone).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// How many plugin zones the configured zones hold, of how many.
    pub fn zones_taken(&self, zones: &ZoneCheck) -> (usize, usize) {
        let taken = self.zones.values().filter(|z| holds(zones, z)).count();
        (taken, self.zones.len())
    }

    /// The records the plugin asks for, an error for each plugin record that cannot be
    /// one (with the record it keeps, if it was accepted before), and what they hold.
    ///
    /// The plugin's records of one name, type and view are one RRSet (the plugin
    /// itself keeps their TTLs equal; where they are not, the lowest id's TTL is taken).
    /// `views` renames plugin views (`plugin_views`); `ui` is NetBox's URL.
    pub fn records(
        &mut self,
        zones: &ZoneCheck,
        views: &BTreeMap<String, String>,
        ui: &str,
    ) -> (Vec<DesiredEntry>, Vec<SourceError>, Held) {
        let plugin_zones = &self.zones;
        let refused = self.records.settle(
            |r, _| {
                let zone = plugin_zones.get(&r.zone.id);
                match zone.filter(|z| z.is_active() && r.active && holds(zones, z)) {
                    None => Made::Drop,
                    Some(zone) => match wanted(r, zone, zones, views) {
                        Ok(Some(w)) => Made::Take(w),
                        Ok(None) => Made::Drop,
                        Err(why) => Made::Refuse(why),
                    },
                }
            },
            |w| format!("{} {} {}", w.name, w.rtype, w.value),
        );
        let errors = refused
            .into_iter()
            .map(|(id, why)| {
                let record = self.records.get(id).map_or(String::new(), |r| {
                    let name = self
                        .zones
                        .get(&r.zone.id)
                        .map_or(r.name.clone(), |z| fqdn(r, z));
                    format!("{name} {}", r.rtype)
                });
                SourceError {
                    source: super::SOURCE_KIND.into(),
                    location: location(ui, id),
                    record,
                    message: why,
                }
            })
            .collect();
        let accepted = self.records.accepted();
        type Set = (Vec<String>, Vec<u64>, Option<u32>);
        let mut sets: BTreeMap<(Name, RecordType, Option<String>), Set> = BTreeMap::new();
        let mut held = Held::new();
        for (id, w) in accepted.iter() {
            let (values, ids, _) = sets
                .entry((w.name.clone(), w.rtype, w.view.clone()))
                .or_insert_with(|| (Vec::new(), Vec::new(), w.ttl));
            values.push(w.value.clone());
            ids.push(*id);
            let (all, _) = held
                .entry((w.name.clone(), w.rtype))
                .or_insert_with(|| (Vec::new(), *id));
            all.push(w.value.clone());
        }
        let source: Arc<str> = Arc::from(super::SOURCE_KIND);
        let entries = sets
            .into_iter()
            .map(|((name, rtype, view), (mut values, ids, ttl))| {
                values.sort();
                values.dedup();
                let resource = ids
                    .iter()
                    .map(|id| format!("netbox-dns/records/{id}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let labels = match view {
                    Some(v) => Labels::new(BTreeMap::from([(VIEW_LABEL.to_string(), v)]))
                        .expect("one short label is within the bounds"),
                    None => Labels::NONE,
                };
                DesiredEntry {
                    name,
                    rtype,
                    ttl,
                    values,
                    set: dnsplane_common::SetId::NONE,
                    properties: Vec::new(),
                    labels,
                    origin: Origin {
                        source: source.clone(),
                        location: Arc::from(location(ui, ids[0])),
                        resource: Arc::from(resource.as_str()),
                    },
                }
            })
            .collect();
        (entries, errors, held)
    }
}

/// A plugin record's page in NetBox.
pub fn location(ui: &str, id: u64) -> String {
    format!("{ui}/plugins/netbox-dns/records/{id}/")
}

/// `r`'s absolute name: its `fqdn`, else its name in `zone`.
fn fqdn(r: &PluginRecord, zone: &PluginZone) -> String {
    match &r.fqdn {
        Some(f) => f.clone(),
        None if r.name == "@" => zone.name.clone(),
        None => format!("{}.{}", r.name, zone.name),
    }
}

/// Whether a configured zone holds plugin zone `z` (its apex).
fn holds(zones: &ZoneCheck, z: &PluginZone) -> bool {
    Name::parse(&z.name).is_ok_and(|n| zones.holds(&n))
}

/// The record `r` asks for: `None` for what is never taken (SOA, the apex NS), `Err`
/// why it cannot be one.
fn wanted(
    r: &PluginRecord,
    zone: &PluginZone,
    zones: &ZoneCheck,
    views: &BTreeMap<String, String>,
) -> Result<Option<Wanted>, String> {
    let name = Name::parse(&fqdn(r, zone)).map_err(|e| format!("not a valid name: {e}"))?;
    if r.rtype == "SOA" {
        return Ok(None);
    }
    let apex = Name::parse(&zone.name).is_ok_and(|apex| apex == name);
    if r.rtype == "NS" && apex {
        return Ok(None);
    }
    let rtype = RecordType::parse(&r.rtype)
        .map_err(|_| format!("type {} is not one dnsplane serves", r.rtype))?;
    let raw = r.absolute_value.as_deref().unwrap_or(&r.value);
    let value = dnsplane_common::rdata::canonicalize(rtype, raw)
        .map_err(|e| format!("value {raw:?} is not a {rtype} value: {e}"))?;
    let ttl = r.ttl.or(zone.default_ttl);
    let view = (!zone.view.default_view).then(|| {
        views
            .get(&zone.view.name)
            .cloned()
            .unwrap_or_else(|| zone.view.name.clone())
    });
    let entry = DesiredEntry {
        name: name.clone(),
        rtype,
        ttl,
        values: vec![value.clone()],
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        labels: Labels::NONE,
        origin: Origin {
            source: Arc::from(super::SOURCE_KIND),
            location: Arc::from(""),
            resource: Arc::from(""),
        },
    };
    match zones.check(&entry) {
        Verdict::Fine => Ok(Some(Wanted {
            name,
            rtype,
            value,
            ttl,
            view,
        })),
        Verdict::Ignore => Ok(None),
        Verdict::Refuse(why) => Err(why),
    }
}
