//! The applier pool: every applier the planner may send work to, how healthy each one
//! is, and which one a zone goes to.
//!
//! Zones are placed by rendezvous (highest-random-weight) hashing over the healthy
//! appliers, so each zone has one writer in steady state and, when the pool changes,
//! only the zones of the applier that came or went move. Members come from a static
//! list and/or a DNS name resolved to many addresses (a Kubernetes headless Service),
//! re-resolved periodically; each is health-checked over `grpc.health.v1`, so an
//! applier that drains (answers NOT_SERVING) or dies stops receiving zones.
//!
//! Every connection to an applier is made here: `https://` members (and, with
//! `[applier_tls]`, every member found through `applier_dns`) speak TLS with the
//! pool's [`ClientTls`], re-read when its files change.
use dnsplane_common::Name;
use dnsplane_common::pb::applier_client::ApplierClient;
use dnsplane_common::tls::{ClientTls, ClientTlsSettings, TlsConnector, TlsError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tracing::{info, warn};

/// One applier.
#[derive(Debug)]
pub struct Member {
    /// `http://host:port`.
    pub addr: String,
    channel: Channel,
    healthy: AtomicBool,
    last_error: Mutex<String>,
    /// Its provider accounts whose circuit is not closed, as it last told us (the
    /// engine's circuit watch and `GetStatus` ask): status degrades while any is open.
    open_circuits: Mutex<Vec<String>>,
    /// Its accounts throttled by their provider for long, as it last told us (the
    /// reasons it gives): status degrades under `throttled` while any is.
    throttled: Mutex<Vec<String>>,
}

/// Why the pool cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    #[error("applier address: {0}")]
    Address(#[from] tonic::transport::Error),
    #[error("applier_tls: {0}")]
    Tls(#[from] TlsError),
    #[error("applier address {0:?} is https:// but there is no [applier_tls]")]
    NoTls(String),
}

impl Member {
    fn new(addr: &str, tls: Option<&TlsConnector>) -> Result<Arc<Member>, PoolError> {
        let endpoint = Endpoint::from_shared(addr.to_string())?
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(5));
        let channel = match tls {
            _ if !addr.starts_with("https://") => endpoint.connect_lazy(),
            Some(connector) => endpoint.connect_with_connector_lazy(connector.clone()),
            None => return Err(PoolError::NoTls(addr.to_string())),
        };
        Ok(Arc::new(Member {
            addr: addr.to_string(),
            channel,
            // Optimistic until the first check: a planner must not wait for a health
            // round before its first sync.
            healthy: AtomicBool::new(true),
            last_error: Mutex::new(String::new()),
            open_circuits: Mutex::new(Vec::new()),
            throttled: Mutex::new(Vec::new()),
        }))
    }

    /// A client whose calls carry the current trace context (`traceparent`).
    pub fn client(&self) -> ApplierClient<dnsplane_common::telemetry::TracedChannel> {
        ApplierClient::new(dnsplane_common::telemetry::traced_channel(
            self.channel.clone(),
        ))
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20)
    }

    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    pub fn last_error(&self) -> String {
        self.last_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default()
    }

    /// Its accounts whose circuit is not closed (see the field).
    pub fn open_circuits(&self) -> Vec<String> {
        self.open_circuits
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// Records its accounts' circuits, `(account, circuit)`, as it reported them.
    pub fn set_circuits<'a>(&self, accounts: impl IntoIterator<Item = (&'a str, &'a str)>) {
        let open = accounts
            .into_iter()
            .filter(|(_, c)| !c.is_empty() && *c != "closed")
            .map(|(a, c)| format!("{a} ({c})"))
            .collect();
        if let Ok(mut c) = self.open_circuits.lock() {
            *c = open;
        }
    }

    /// Its accounts throttled for long (see the field).
    pub fn throttled(&self) -> Vec<String> {
        self.throttled.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Records the reasons of its throttled accounts, as it reported them (empty
    /// reasons: not throttled for long).
    pub fn set_throttled<'a>(&self, reasons: impl IntoIterator<Item = &'a str>) {
        let throttled = reasons
            .into_iter()
            .filter(|r| !r.is_empty())
            .map(str::to_string)
            .collect();
        if let Ok(mut t) = self.throttled.lock() {
            *t = throttled;
        }
    }

    fn set(&self, healthy: bool, error: String) {
        let was = self.healthy.swap(healthy, Ordering::Relaxed);
        if was != healthy {
            if healthy {
                info!(applier = %self.addr, "Applier healthy; it takes its zones back.");
            } else {
                warn!(applier = %self.addr, error = %error, "Applier unhealthy; its zones move to the next applier.");
            }
        }
        if let Ok(mut e) = self.last_error.lock() {
            *e = error;
        }
    }
}

/// Where the pool's members come from.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Static addresses (`http://host:port`).
    pub addrs: Vec<String>,
    /// `host:port` resolved to every address it has (e.g. a headless Service).
    pub dns: Option<String>,
    pub health_interval: Duration,
    pub resolve_interval: Duration,
    /// `[applier_tls]`: `https://` members use it; discovered members are `https://`.
    pub tls: Option<PoolTls>,
}

/// The pool's TLS: the files, and the name appliers' certificates must carry when it
/// is not the host of the address.
#[derive(Debug, Clone)]
pub struct PoolTls {
    pub settings: ClientTlsSettings,
    pub server_name: Option<String>,
}

/// The pool.
#[derive(Debug)]
pub struct ApplierPool {
    cfg: PoolConfig,
    members: RwLock<Vec<Arc<Member>>>,
    /// For members found by `applier_dns` (`server_name`, else the DNS name's host).
    dns_connector: Option<TlsConnector>,
    /// `[applier_tls]`, for status: whether its files can be (re)loaded.
    client_tls: Option<Arc<ClientTls>>,
}

/// A stable 64-bit hash (FNV-1a, then a splitmix finaliser): every planner, of every
/// version, places a zone on the same applier.
fn score(addr: &str, zone: &Name) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in addr.bytes().chain([0]).chain(zone.as_str().bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

impl ApplierPool {
    /// Builds the members (connections are made lazily). With TLS, reads the files
    /// now and, inside a Tokio runtime, re-reads them when they change.
    pub fn new(cfg: PoolConfig) -> Result<Arc<ApplierPool>, PoolError> {
        // Static members verify the address's host (or `server_name`).
        let mut client_tls = None;
        let (connector, dns_connector) = match &cfg.tls {
            Some(t) => {
                let client = ClientTls::load(&t.settings)?;
                client_tls = Some(client.clone());
                let dns_host = cfg
                    .dns
                    .as_deref()
                    .and_then(|d| d.rsplit_once(':'))
                    .map(|(h, _)| h.to_string());
                (
                    Some(client.connector(t.server_name.clone())),
                    Some(client.connector(t.server_name.clone().or(dns_host))),
                )
            }
            None => (None, None),
        };
        let mut members = Vec::new();
        for a in &cfg.addrs {
            members.push(Member::new(a, connector.as_ref())?);
        }
        Ok(Arc::new(ApplierPool {
            cfg,
            members: RwLock::new(members),
            dns_connector,
            client_tls,
        }))
    }

    /// Why `[applier_tls]`'s files cannot be (re)loaded now, while they cannot.
    pub fn tls_problem(&self) -> Option<String> {
        self.client_tls.as_ref().and_then(|t| t.problem())
    }

    pub fn members(&self) -> Vec<Arc<Member>> {
        self.members.read().map(|m| m.clone()).unwrap_or_default()
    }

    /// The applier `zone` belongs to when every applier is healthy (the first in
    /// rendezvous order, health aside): a route elsewhere is a fallback.
    pub fn own(&self, zone: &Name) -> Option<Arc<Member>> {
        self.members()
            .into_iter()
            .max_by_key(|x| score(&x.addr, zone))
    }

    /// All members in rendezvous order for `zone`: healthy ones first.
    pub fn order(&self, zone: &Name) -> Vec<Arc<Member>> {
        let mut m = self.members();
        m.sort_by_key(|x| {
            (
                std::cmp::Reverse(x.healthy()),
                std::cmp::Reverse(score(&x.addr, zone)),
            )
        });
        m
    }

    /// The applier `zone` goes to now (when none is healthy, the best one anyway: a
    /// failed call costs less than a stall).
    pub fn route(&self, zone: &Name) -> Option<Arc<Member>> {
        self.order(zone).into_iter().next()
    }

    /// A call to `member` broke: take it out until a health check passes.
    pub fn mark_failed(&self, member: &Member, error: &str) {
        member.set(false, error.to_string());
    }

    /// Health-checks every member and re-resolves the DNS name, until cancelled.
    pub fn spawn(self: &Arc<Self>, cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
        let pool = self.clone();
        tokio::spawn(async move {
            let mut last_resolve = None::<tokio::time::Instant>;
            loop {
                if pool.cfg.dns.is_some()
                    && last_resolve.is_none_or(|t| t.elapsed() >= pool.cfg.resolve_interval)
                {
                    pool.resolve().await;
                    last_resolve = Some(tokio::time::Instant::now());
                }
                let checks = pool.members().into_iter().map(|m| async move {
                    let result = tokio::time::timeout(Duration::from_secs(2), async {
                        HealthClient::new(m.channel.clone())
                            .check(HealthCheckRequest {
                                service: "dnsplane.v1.Applier".into(),
                            })
                            .await
                    })
                    .await;
                    match result {
                        Ok(Ok(r)) if r.get_ref().status == ServingStatus::Serving as i32 => {
                            m.set(true, String::new())
                        }
                        Ok(Ok(_)) => m.set(false, "not serving (draining)".into()),
                        Ok(Err(e)) => m.set(false, format!("{}: {}", e.code(), e.message())),
                        Err(_) => m.set(false, "health check timed out".into()),
                    }
                });
                futures::future::join_all(checks).await;
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(pool.cfg.health_interval) => {}
                }
            }
        })
    }

    /// Replaces the DNS-discovered members with what the name resolves to now; keeps
    /// the members (and their connections) that are still there.
    async fn resolve(&self) {
        let Some(name) = &self.cfg.dns else { return };
        let addrs = match tokio::net::lookup_host(name.as_str()).await {
            Ok(a) => a
                .map(|a| {
                    let scheme = if self.dns_connector.is_some() {
                        "https"
                    } else {
                        "http"
                    };
                    format!("{scheme}://{a}")
                })
                .collect::<std::collections::BTreeSet<_>>(),
            Err(e) => {
                warn!(name = %name, error = %e, "Cannot resolve the applier name; keeping the members known.");
                return;
            }
        };
        let Ok(mut members) = self.members.write() else {
            return;
        };
        let mut next: Vec<Arc<Member>> = members
            .iter()
            .filter(|m| self.cfg.addrs.contains(&m.addr) || addrs.contains(&m.addr))
            .cloned()
            .collect();
        for a in addrs {
            if !next.iter().any(|m| m.addr == a)
                && let Ok(m) = Member::new(&a, self.dns_connector.as_ref())
            {
                info!(applier = %a, "Applier discovered.");
                next.push(m);
            }
        }
        *members = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(n: usize) -> Arc<ApplierPool> {
        ApplierPool::new(PoolConfig {
            addrs: (0..n).map(|i| format!("http://10.0.0.{i}:50052")).collect(),
            dns: None,
            health_interval: Duration::from_secs(1),
            resolve_interval: Duration::from_secs(10),
            tls: None,
        })
        .expect("pool")
    }

    fn zones() -> Vec<Name> {
        (0..1000)
            .map(|i| Name::parse(&format!("z{i}.example")).expect("zone"))
            .collect()
    }

    #[tokio::test]
    async fn zones_spread_and_only_the_lost_members_zones_move() {
        let p = pool(3);
        let before: Vec<String> = zones()
            .iter()
            .map(|z| p.route(z).expect("member").addr.clone())
            .collect();
        for m in p.members() {
            let n = before.iter().filter(|a| **a == m.addr).count();
            assert!((250..420).contains(&n), "{} has {n} of 1000 zones", m.addr);
        }
        let lost = p.members()[1].clone();
        p.mark_failed(&lost, "test");
        let after: Vec<String> = zones()
            .iter()
            .map(|z| p.route(z).expect("member").addr.clone())
            .collect();
        for (b, a) in before.iter().zip(&after) {
            if *b == lost.addr {
                assert_ne!(a, &lost.addr);
            } else {
                assert_eq!(a, b, "a zone of a healthy member moved");
            }
        }
        // The member comes back: every zone returns to where it was.
        lost.set(true, String::new());
        let back: Vec<String> = zones()
            .iter()
            .map(|z| p.route(z).expect("member").addr.clone())
            .collect();
        assert_eq!(back, before);
    }
}
