//! `ReadZone`: a zone's records as the planner sees them, for `dnsplane import` and
//! `export`: the provider's records, each with its owner and ownership marks set
//! apart, or the planner's desired records.
//!
//! An import must never take a record another owner holds, nor a mark for a record:
//! external-dns's TXT registry is recognised whether or not the zone configures it
//! (a TXT whose value is an external-dns mark, of any owner, is a mark; its affixes,
//! when configured, attach each mark to the record it owns), and dnsplane's marks are
//! never data.
use super::Engine;
use super::sync::SyncError;
use crate::config::ExternalDnsConfig;
use crate::external_dns;
use crate::observed::ZoneView;
use crate::target::Target;
use dnsplane_common::RRSet;

/// Who holds a record of the zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerKind {
    /// Nobody: no mark names it.
    None,
    /// A dnsplane planner (its TXT mark).
    Dnsplane,
    /// An external-dns instance (its TXT registry).
    ExternalDns,
}

/// One record of a zone as read.
#[derive(Debug, Clone)]
pub struct ZoneRecord {
    pub rrset: RRSet,
    pub owner: String,
    pub owner_kind: OwnerKind,
    /// Whether `owner` is this planner.
    pub owned_here: bool,
    /// The record is an ownership mark, not data.
    pub mark: bool,
}

impl Engine {
    /// The provider's records of `zone` (read afresh when `fresh`), in key order:
    /// data records with their owners, then the external-dns marks found among them
    /// (dnsplane's own marks are attached to what they own and not listed).
    pub async fn read_observed(
        &self,
        zone: &Target,
        fresh: bool,
    ) -> Result<Vec<ZoneRecord>, SyncError> {
        let z = self.zone_or_err(zone)?;
        let (current, _) = self.list_zone(zone, fresh, &[]).await?;
        let registry = z.cfg.external_dns.clone().unwrap_or_else(any_owner);
        let own = self.config.owner_id.clone();
        Ok(Engine::cpu(|| {
            let view = ZoneView::read(current.iter().cloned(), None, Some(&registry));
            let mut out: Vec<ZoneRecord> = view
                .data()
                .map(|(key, data)| {
                    let rrset = data.rrset(key);
                    let (owner, owner_kind) = match (view.owner_of(key), view.external_owner(key)) {
                        (Some(o), _) => (o.to_string(), OwnerKind::Dnsplane),
                        (None, Some(e)) => (e.mark.owner.to_string(), OwnerKind::ExternalDns),
                        (None, None) => (String::new(), OwnerKind::None),
                    };
                    ZoneRecord {
                        owned_here: owner_kind == OwnerKind::Dnsplane && owner == own,
                        mark: false,
                        owner,
                        owner_kind,
                        rrset,
                    }
                })
                .collect();
            let reg = external_dns::Registry::new(&registry);
            out.extend(current.into_iter().filter_map(|r| {
                let mark = reg.parse(&r)?;
                Some(ZoneRecord {
                    rrset: r,
                    owner: mark.owner.to_string(),
                    owner_kind: OwnerKind::ExternalDns,
                    owned_here: false,
                    mark: true,
                })
            }));
            out
        }))
    }

    /// The desired records of `zone`, in key order (the TTL resolved).
    pub fn read_desired(&self, zone: &Target) -> Result<Vec<RRSet>, SyncError> {
        let z = self.zone_or_err(zone)?;
        let desired = z.desired();
        Ok(desired
            .zone(&zone.zone)
            .map(|records| records.iter().map(|(k, r)| r.rrset(k)).collect())
            .unwrap_or_default())
    }
}

/// external-dns's registry with its default naming and no owner of its own: every
/// owner's plain marks are read.
fn any_owner() -> ExternalDnsConfig {
    ExternalDnsConfig {
        owner_id: String::new(),
        txt_prefix: String::new(),
        txt_suffix: String::new(),
        wildcard_replacement: String::new(),
        aes_key_file: None,
    }
}
