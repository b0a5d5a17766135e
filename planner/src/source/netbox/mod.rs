//! NetBox as a source: the addresses and names network teams keep in NetBox's IPAM,
//! kept in DNS. Every IP address with a `dns_name` (of the statuses, VRFs, tenants
//! and tags configured) is an A or AAAA record at that name; with `plugin = true`,
//! netbox-plugin-dns's records of the zones configured here are records too.
//!
//! **Event-driven, with a full read as the backstop.** Everything is read at start and
//! every `full_read_interval`; between, NetBox's webhooks ([`webhook`]) name the
//! addresses that changed, and each is read again at once, alone.
//!
//! **Never delete on doubt.** Until its first complete read the source is not ready
//! and the planner plans nothing (`Engine::await_first_load`): a NetBox that does not
//! answer only looks empty. A read that fails (NetBox down, a 5xx, a 403, a timeout, a
//! page that fails halfway) keeps the last complete read and makes the source not
//! ready, with NetBox's answer as the reason. A record goes only when a complete read
//! no longer has its address, or NetBox says the address is gone. An address edited
//! into something that cannot be a record keeps its last accepted record ([`ipam`]).
//! A NetBox that suddenly lists no addresses where it listed 10,000 is held by the
//! mass-change guard, as any source is.
//!
//! - [`client`]: the REST client, paged by id; a read is whole or it is an error;
//! - [`last_good`]: objects by id, each keeping its last accepted record;
//! - [`ipam`]: IP addresses as records, kept last-good per address;
//! - [`plugin`]: netbox-plugin-dns's records, kept last-good per record; a name the
//!   plugin holds is the plugin's, and an address naming it otherwise is a collision;
//! - [`webhook`]: the receiver of NetBox's webhooks (signature checked);
//! - [`write_back`]: each record's outcome written back to its object in NetBox.
use crate::config::{Merge, NetboxSourceConfig, ZoneConfig};
use crate::source::header_file::HeaderFile;
use crate::source::zones::{ZoneCheck, zone_for};
use crate::source::{Snapshot, SourcePart, SourceParts};
use client::{NetboxClient, NetboxError};
use ipam::{Addresses, IpAddress, IpamFilter};
use plugin::{PluginRecord, PluginRecords, PluginZone};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use webhook::Event;
use write_back::Object;

pub mod client;
pub mod ipam;
pub mod last_good;
pub mod plugin;
pub mod webhook;
pub mod write_back;

#[cfg(test)]
mod ipam_tests;
#[cfg(test)]
mod plugin_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_back_tests;

/// The kind of source, in errors and in each record's origin.
pub const SOURCE_KIND: &str = "netbox";
/// The API path of IP addresses.
pub(crate) const ADDRESSES: &str = "/api/ipam/ip-addresses/";
/// The API paths of netbox-plugin-dns's zones and records.
pub(crate) const PLUGIN_ZONES: &str = "/api/plugins/netbox-dns/zones/";
pub(crate) const PLUGIN_RECORDS: &str = "/api/plugins/netbox-dns/records/";
/// The first wait after a failed read; doubled up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);
/// Webhooks queued at most; more at once fall back to a full read.
pub const EVENT_QUEUE: usize = 4096;

/// The name the source's records and status go under.
pub fn store_key(config: &NetboxSourceConfig) -> String {
    match &config.name {
        Some(name) => format!("netbox@{name}"),
        None => format!("netbox:{}", config.url.trim_end_matches('/')),
    }
}

/// What the source sends the planner: its records when they changed (`None` before
/// the first complete read, and when only readiness changed), and why it is not ready.
#[derive(Debug)]
pub struct Update {
    pub snapshot: Option<Snapshot>,
    pub unready: Vec<String>,
}

/// The NetBox source: its client, what it last read, and what it reports.
#[derive(Debug)]
pub struct NetboxSource {
    key: String,
    client: NetboxClient,
    filter: IpamFilter,
    zones: ZoneCheck,
    configured: Vec<ZoneConfig>,
    interval: Duration,
    ptr: bool,
    /// What is read: IPAM's addresses, the plugin's records, or both.
    ipam: bool,
    plugin: bool,
    plugin_views: BTreeMap<String, String>,
    addresses: Addresses,
    plugin_records: PluginRecords,
    /// What NetBox holds in each object's `dnsplane_status` (with `write_back`).
    statuses: Option<write_back::Statuses>,
    parts: SourceParts,
    /// Set by the webhook receiver when an event could not be queued.
    overflowed: Arc<AtomicBool>,
    last_full_read: Option<String>,
    last_event: Option<String>,
}

impl NetboxSource {
    /// A source for `config`, placing names in `zones`: `Err` names the token or CA
    /// file that cannot be used.
    pub fn new(config: &NetboxSourceConfig, zones: &[ZoneConfig]) -> Result<NetboxSource, String> {
        let token = HeaderFile::new(&config.token_file, client::scheme)
            .map_err(|e| format!("token_file {}: {e}", config.token_file.display()))?;
        let client = NetboxClient::new(
            &config.url,
            Arc::new(token),
            config.ca_file.as_deref(),
            config.request_timeout,
        )?;
        let source = NetboxSource {
            key: store_key(config),
            client,
            filter: IpamFilter {
                statuses: config.statuses.clone(),
                vrfs: config.vrfs.clone(),
                tenants: config.tenants.clone(),
                tags: config.tags.clone(),
            },
            zones: ZoneCheck::new(zones, config.outside_zones),
            configured: zones.to_vec(),
            interval: config.full_read_interval,
            ptr: config.ptr,
            ipam: config.ipam,
            plugin: config.plugin,
            plugin_views: config.plugin_views.clone(),
            addresses: Addresses::default(),
            plugin_records: PluginRecords::default(),
            statuses: config.write_back.then(Default::default),
            parts: Arc::new(Mutex::new(Vec::new())),
            overflowed: Arc::new(AtomicBool::new(false)),
            last_full_read: None,
            last_event: None,
        };
        source.report(Some("waiting for the first complete read".into()));
        Ok(source)
    }

    pub fn store_key(&self) -> &str {
        &self.key
    }

    /// What status shows of the source, as it updates it.
    pub fn parts(&self) -> SourceParts {
        Arc::clone(&self.parts)
    }

    /// NetBox's client and what its objects hold in `dnsplane_status`, for the
    /// write-back (`None` without `write_back`).
    pub fn write_back(&self) -> Option<write_back::WriteBack> {
        let held = self.statuses.clone()?;
        Some(write_back::WriteBack::new(self.client.clone(), held))
    }

    /// The flag the webhook receiver sets when it drops an event.
    pub fn overflow_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.overflowed)
    }

    /// Reads NetBox until `stop`: whole at once and every `full_read_interval`
    /// (sooner after a failure, with backoff), and each address a webhook names.
    pub async fn run(
        mut self,
        mut events: mpsc::Receiver<Event>,
        updates: mpsc::Sender<Update>,
        stop: CancellationToken,
    ) {
        let mut next_full = Instant::now();
        let mut retry = RETRY_MIN;
        let mut complete = false;
        let mut unready: Option<String> = Some("waiting for the first complete read".into());
        loop {
            let changed = tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep_until(next_full) => {
                    match self.full_read().await {
                        Ok(()) => {
                            complete = true;
                            unready = None;
                            retry = RETRY_MIN;
                            next_full = Instant::now() + self.interval;
                            true
                        }
                        Err(e) => {
                            let why = format!("the full read failed, the last complete read is kept: {e}");
                            tracing::warn!(source = %self.key, error = %e, retry_in = ?retry, "NetBox could not be read whole; its last complete read is kept.");
                            unready = Some(if complete { why } else { format!("no complete read yet: {e}") });
                            next_full = Instant::now() + retry;
                            retry = (retry * 2).min(RETRY_MAX);
                            // Nothing read: the records stand, readiness changes.
                            false
                        }
                    }
                }
                Some(first) = events.recv() => {
                    let mut batch = vec![first];
                    while batch.len() < EVENT_QUEUE {
                        match events.try_recv() {
                            Ok(e) => batch.push(e),
                            Err(_) => break,
                        }
                    }
                    if complete {
                        let started = Instant::now();
                        let read = self.apply_events(&batch).await;
                        tracing::debug!(source = %self.key, events = batch.len(), read_ms = started.elapsed().as_millis() as u64, "NetBox's objects of a batch of webhooks read again.");
                        match read {
                            Ok(false) => {}
                            Ok(true) => next_full = Instant::now(),
                            Err(e) => {
                                // The objects are read again by the next full read, soon.
                                tracing::warn!(source = %self.key, error = %e, "A NetBox webhook's object could not be read; a full read follows.");
                                next_full = next_full.min(Instant::now() + retry);
                            }
                        }
                    }
                    // Before the first complete read, that read covers them.
                    complete
                }
            };
            if self.overflowed.swap(false, Ordering::AcqRel) {
                tracing::warn!(source = %self.key, "More NetBox webhooks than could be queued; everything is read again.");
                next_full = Instant::now();
            }
            self.report(unready.clone());
            let started = Instant::now();
            let snapshot = (changed && complete).then(|| self.snapshot());
            if snapshot.is_some() {
                tracing::debug!(source = %self.key, took_ms = started.elapsed().as_millis() as u64, "NetBox source's records built.");
            }
            let update = Update {
                snapshot,
                unready: unready.iter().cloned().collect(),
            };
            if updates.send(update).await.is_err() {
                return;
            }
        }
    }

    /// Reads everything (the addresses, the plugin's zones and records); only when all
    /// of it was read does it replace what was held.
    async fn full_read(&mut self) -> Result<(), NetboxError> {
        let started = std::time::Instant::now();
        let mut requests = 0;
        let mut read = Vec::new();
        let mut addresses: Option<Vec<IpAddress>> = None;
        if self.ipam {
            let mut query = self.filter.query();
            query.push(("fields".into(), ipam::FIELDS.into()));
            let (list, n) = self.client.list_all_counted(ADDRESSES, &query).await?;
            requests += n;
            read.push(format!("{} addresses", list.len()));
            addresses = Some(list);
        }
        let mut plugin: Option<(Vec<PluginZone>, Vec<PluginRecord>)> = None;
        if self.plugin {
            let fields = |f: &str| [("fields".to_string(), f.to_string())];
            let (zones, n) = self
                .client
                .list_all_counted(PLUGIN_ZONES, &fields(plugin::ZONE_FIELDS))
                .await?;
            requests += n;
            let (records, n) = self
                .client
                .list_all_counted(PLUGIN_RECORDS, &fields(plugin::RECORD_FIELDS))
                .await?;
            requests += n;
            plugin = Some((zones, records));
        }
        if let Some(statuses) = &self.statuses {
            let mut held = statuses.lock().unwrap_or_else(|e| e.into_inner());
            held.clear();
            for a in addresses.iter().flatten() {
                held.insert(Object::Address(a.id), a.custom_fields.status());
            }
            for r in plugin.iter().flat_map(|(_, records)| records) {
                held.insert(Object::PluginRecord(r.id), r.custom_fields.status());
            }
        }
        if let Some(list) = addresses {
            self.addresses.replace_all(list);
        }
        if let Some((zones, records)) = plugin {
            self.plugin_records.replace_all(zones, records);
            let (taken, all) = self.plugin_records.zones_taken(&self.zones);
            read.push(format!(
                "{} plugin records ({taken} of {all} plugin zones managed here)",
                self.plugin_records.len()
            ));
        }
        let took = started.elapsed();
        tracing::info!(source = %self.key, read = %read.join(", "), requests, took = ?took, "NetBox read whole.");
        self.last_full_read = Some(format!(
            "last full read {}: {} in {requests} requests, {} ms",
            timestamp(SystemTime::now()),
            read.join(", "),
            took.as_millis()
        ));
        Ok(())
    }

    /// Reads again each object the events name; the first failure stops (the rest
    /// wait for the full read that follows). `Ok(true)`: a full read is owed (a plugin
    /// zone changed, or a record is in a zone the last full read did not have).
    async fn apply_events(&mut self, batch: &[Event]) -> Result<bool, NetboxError> {
        let mut addresses = Vec::new();
        let mut records = Vec::new();
        let mut full = false;
        for e in batch {
            match *e {
                Event::Address { id, .. } if self.ipam => addresses.push(id),
                Event::PluginRecord { id, .. } if self.plugin => records.push(id),
                Event::PluginZone if self.plugin => full = true,
                _ => {}
            }
        }
        addresses.sort_unstable();
        addresses.dedup();
        records.sort_unstable();
        records.dedup();
        // Deleted or not, NetBox is asked: a delete event may be older than a re-create
        // (ids are not reused, but an event may be replayed).
        for id in &addresses {
            match self
                .client
                .get_one::<IpAddress>(&format!("{ADDRESSES}{id}/?fields={}", ipam::FIELDS))
                .await?
            {
                Some(a) => {
                    self.note_status(Object::Address(a.id), Some(a.custom_fields.status()));
                    self.addresses.put(a);
                }
                None => {
                    self.note_status(Object::Address(*id), None);
                    self.addresses.remove(*id);
                }
            }
        }
        for id in &records {
            match self
                .client
                .get_one::<PluginRecord>(&format!(
                    "{PLUGIN_RECORDS}{id}/?fields={}",
                    plugin::RECORD_FIELDS
                ))
                .await?
            {
                Some(r) => {
                    full |= !self.plugin_records.knows_zone(r.zone.id);
                    self.note_status(Object::PluginRecord(r.id), Some(r.custom_fields.status()));
                    self.plugin_records.put(r);
                }
                None => {
                    self.note_status(Object::PluginRecord(*id), None);
                    self.plugin_records.remove(*id);
                }
            }
        }
        let mut what = Vec::new();
        if !addresses.is_empty() {
            what.push(plural(addresses.len(), "address", "addresses"));
        }
        if !records.is_empty() {
            what.push(plural(records.len(), "plugin record", "plugin records"));
        }
        if full {
            what.push("a plugin zone changed: everything is read again".into());
        }
        if !what.is_empty() {
            self.last_event = Some(format!(
                "last webhook {}: {}",
                timestamp(SystemTime::now()),
                what.join(", ")
            ));
        }
        Ok(full)
    }

    /// Notes what NetBox holds in `object`'s `dnsplane_status` (`None`: it is gone).
    fn note_status(&self, object: Object, status: Option<String>) {
        if let Some(statuses) = &self.statuses {
            let mut held = statuses.lock().unwrap_or_else(|e| e.into_inner());
            match status {
                Some(s) => held.insert(object, s),
                None => held.remove(&object),
            };
        }
    }

    /// The records of what is held: the plugin's first, then the addresses' (which
    /// yield to the plugin's at the names it holds).
    fn snapshot(&mut self) -> Snapshot {
        let configured = &self.configured;
        let merges = |name: &dnsplane_common::Name| {
            zone_for(configured, name).is_some_and(|z| z.merge == Merge::Union)
        };
        let ui = self.client.base();
        let (mut entries, mut errors, held) = if self.plugin {
            self.plugin_records
                .records(&self.zones, &self.plugin_views, ui)
        } else {
            Default::default()
        };
        if self.ipam {
            let (more, more_errors) =
                self.addresses
                    .records(&self.filter, &self.zones, merges, self.ptr, &held, ui);
            entries.extend(more);
            errors.extend(more_errors);
        }
        Snapshot {
            entries,
            errors,
            unready: Vec::new(),
        }
    }

    /// What status calls what the source reads.
    fn part_name(&self) -> &'static str {
        match (self.ipam, self.plugin) {
            (true, true) => "IP addresses and plugin records",
            (false, true) => "plugin records",
            _ => "IP addresses",
        }
    }

    /// Status's view of the source: one part, what it reads.
    fn report(&self, unready: Option<String>) {
        let detail = [&self.last_full_read, &self.last_event]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        let part = SourcePart {
            name: self.part_name().into(),
            ready: unready.is_none(),
            reason: unready.unwrap_or_default(),
            detail,
        };
        // The first part is the reads'; a second, the write-back's, is its writer's.
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        match parts.first_mut() {
            Some(first) => *first = part,
            None => parts.push(part),
        }
    }
}

/// `n` and the noun, read again.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {} read again", if n == 1 { one } else { many })
}

/// RFC 3339, to the second, in UTC.
fn timestamp(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}
