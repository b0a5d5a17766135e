//! NetBox as a source: the addresses and names network teams keep in NetBox's IPAM,
//! kept in DNS. Every IP address with a `dns_name` (of the statuses, VRFs, tenants
//! and tags configured) is an A or AAAA record at that name.
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
//! - [`ipam`]: IP addresses as records, kept last-good per address;
//! - [`webhook`]: the receiver of NetBox's webhooks (signature checked).
use crate::config::{Merge, NetboxSourceConfig, ZoneConfig};
use crate::source::header_file::HeaderFile;
use crate::source::zones::{ZoneCheck, zone_for};
use crate::source::{Snapshot, SourcePart, SourceParts};
use client::{NetboxClient, NetboxError};
use ipam::{Addresses, IpAddress, IpamFilter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use webhook::Event;

pub mod client;
pub mod ipam;
pub mod webhook;

#[cfg(test)]
mod ipam_tests;
#[cfg(test)]
mod tests;

/// The kind of source, in errors and in each record's origin.
pub const SOURCE_KIND: &str = "netbox";
/// The API path of IP addresses.
const ADDRESSES: &str = "/api/ipam/ip-addresses/";
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
    addresses: Addresses,
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
            addresses: Addresses::default(),
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
                    if complete
                        && let Err(e) = self.apply_events(&batch).await
                    {
                        // The objects are read again by the next full read, soon.
                        tracing::warn!(source = %self.key, error = %e, "A NetBox webhook's object could not be read; a full read follows.");
                        next_full = next_full.min(Instant::now() + retry);
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
            let snapshot = (changed && complete).then(|| self.snapshot());
            let update = Update {
                snapshot,
                unready: unready.iter().cloned().collect(),
            };
            if updates.send(update).await.is_err() {
                return;
            }
        }
    }

    /// Reads every address; on success they replace what was held.
    async fn full_read(&mut self) -> Result<(), NetboxError> {
        let started = std::time::Instant::now();
        let (read, requests): (Vec<IpAddress>, usize) = self
            .client
            .list_all_counted(ADDRESSES, &self.filter.query())
            .await?;
        let n = read.len();
        self.addresses.replace_all(read);
        tracing::info!(source = %self.key, addresses = n, requests, took = ?started.elapsed(), "NetBox read whole.");
        self.last_full_read = Some(format!(
            "last full read {}: {n} addresses in {requests} requests, {} ms",
            timestamp(SystemTime::now()),
            started.elapsed().as_millis()
        ));
        Ok(())
    }

    /// Reads again each address the events name; the first failure stops (the rest
    /// wait for the full read that follows).
    async fn apply_events(&mut self, batch: &[Event]) -> Result<(), NetboxError> {
        let mut ids: Vec<(u64, bool)> = batch
            .iter()
            .map(|Event::Address { id, deleted }| (*id, *deleted))
            .collect();
        ids.sort_unstable();
        ids.dedup_by_key(|(id, _)| *id);
        for (id, _) in &ids {
            // Deleted or not, NetBox is asked: a delete event may be older than a
            // re-create (ids are not reused, but an event may be replayed).
            match self
                .client
                .get_one::<IpAddress>(&format!("{ADDRESSES}{id}/"))
                .await?
            {
                Some(a) => self.addresses.put(a),
                None => self.addresses.remove(*id),
            }
        }
        self.last_event = Some(format!(
            "last webhook {}: {} address{} read again",
            timestamp(SystemTime::now()),
            ids.len(),
            if ids.len() == 1 { "" } else { "es" }
        ));
        Ok(())
    }

    /// The records of what is held.
    fn snapshot(&mut self) -> Snapshot {
        let configured = &self.configured;
        let merges = |name: &dnsplane_common::Name| {
            zone_for(configured, name).is_some_and(|z| z.merge == Merge::Union)
        };
        let (entries, errors) = self.addresses.records(
            &self.filter,
            &self.zones,
            merges,
            self.ptr,
            self.client.base(),
        );
        Snapshot {
            entries,
            errors,
            unready: Vec::new(),
        }
    }

    /// Status's view of the source: one part, the IP addresses.
    fn report(&self, unready: Option<String>) {
        let detail = [&self.last_full_read, &self.last_event]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        let part = SourcePart {
            name: "IP addresses".into(),
            ready: unready.is_none(),
            reason: unready.unwrap_or_default(),
            detail,
        };
        *self.parts.lock().unwrap_or_else(|e| e.into_inner()) = vec![part];
    }
}

/// RFC 3339, to the second, in UTC.
fn timestamp(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}
