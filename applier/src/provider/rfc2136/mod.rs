//! The `rfc2136` driver: DNS UPDATE (RFC 2136) signed with TSIG (RFC 8945), for BIND,
//! Knot, PowerDNS or any server that speaks it. Built on `hickory-net`.
//!
//! One [`Provider::apply`] call is ONE UPDATE message, which the server applies
//! atomically (RFC 2136 §3.4). Every op's precondition travels as a prerequisite, so
//! the server itself refuses a stale write:
//!
//! | op | prerequisite | failure |
//! |---|---|---|
//! | create (`before` absent) | "RRset does not exist" (§2.4.3) | YXRRSET |
//! | update / delete (`before` present) | "RRset exists (value dependent)" = `before` (§2.4.2) | NXRRSET |
//! | assert (`before == after`) | one of the two above, no update | as above |
//!
//! RFC 2136 servers silently ignore an addition that would put a CNAME beside other
//! data (§3.4.2.2, and BIND logs "attempt to add CNAME alongside non-CNAME ignored"),
//! which would turn a clash into a silent no-op. So a create also carries the
//! prerequisites that rule that out: a CNAME create requires the name not in use
//! (§2.4.5, YXDOMAIN), or, when the same batch clears other types at that name, the
//! absence of every other type dnsplane models; any other create requires that no
//! CNAME exists at its name. The updates are ordered all deletions first, then all
//! additions.
//!
//! REFUSED is a policy answer that may concern the key (permanent) or only these
//! records (BIND's check-names refuses a `_` in an A record's owner or an MX target,
//! which dnsplane's model allows): one no-op UPDATE tells which (see `refused`).
//!
//! Two limits of the protocol: a value-dependent prerequisite ignores TTLs (§3.2.5),
//! so an update whose `before` differs from the zone only in TTL goes through; and the
//! answer is one RCODE for the whole message, so a conflict names no record (the batch
//! algorithm reads back to find it).
//!
//! Transport is always TCP, one connection per call: RFC 2136 §7.8 says requestors
//! that need an accurate response code must use TCP (a lost UDP answer plus a retry
//! turns a success into a prerequisite failure), a batch rarely fits 512 bytes
//! anyway, and AXFR needs TCP. Listing is a TSIG-signed AXFR (or, with `axfr = false`,
//! queries for the requested names only); the serial is a SOA query.
use crate::provider::call::Pacer;
use crate::provider::precondition::cname_check;
use crate::provider::{Capabilities, ErrorClass, Listing, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSetOp, RecordType};
use futures::StreamExt;
use hickory_net::client::{Client, ClientHandle};
use hickory_net::proto::op::{DnsRequest, Message, Query, ResponseCode, SerialMessage};
use hickory_net::proto::rr::{
    DNSClass, Name as HName, RData as HRData, Record, RecordType as HRecordType, TSigner,
};
use hickory_net::runtime::TokioRuntimeProvider;
use hickory_net::tcp::TcpClientStream;
use hickory_net::{DnsHandle, DnsMultiplexer, DnsStreamHandle, NetError};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

mod config;
mod keyfile;
mod update;
mod wire;

pub use config::{Rfc2136Config, Rfc2136SetupError, TsigAlgorithm};
use keyfile::read_key;
use update::{build_probe, build_update, classify_rcode};
use wire::{hname, htype, to_rrsets};

/// RRSet ops one UPDATE may carry.
pub const MAX_CHANGES_PER_BATCH: usize = 1_000;
/// Request bytes one UPDATE may carry (roughly, see `Change::approx_bytes`): a DNS
/// message over TCP is at most 65 535 bytes, TSIG RR included, and a create travels
/// as two prerequisites plus the addition, so the message is about 1.5 times the
/// estimate (measured in `a_full_batch_fits_one_message`).
pub const MAX_BYTES_PER_BATCH: usize = 40_000;
/// Hard limit checked on the encoded message, leaving room for the TSIG RR.
const MAX_MESSAGE_BYTES: usize = 65_535 - 512;
/// TSIG fudge: how far the server's clock may be from ours (RFC 8945 recommends 300 s).
const TSIG_FUDGE_SECS: u16 = 300;
/// Above this many names, a names-only listing without AXFR is refused as too costly.
const MAX_QUERY_NAMES: usize = 256;

/// DNS UPDATE with prerequisites and TSIG behind the [`Provider`] trait.
#[derive(Clone)]
pub struct Rfc2136Provider {
    server: SocketAddr,
    zones: Vec<Name>,
    signer: Option<TSigner>,
    key_name: Option<String>,
    algorithm: TsigAlgorithm,
    timeout: Duration,
    axfr: bool,
}

impl std::fmt::Debug for Rfc2136Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rfc2136Provider")
            .field("server", &self.server)
            .field("zones", &self.zones)
            .field("tsig_key_name", &self.key_name)
            .field("tsig_algorithm", &self.algorithm.as_str())
            .field("tsig_secret", &self.signer.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("axfr", &self.axfr)
            .finish()
    }
}

impl Rfc2136Provider {
    /// Resolves the server and reads the TSIG key. Makes no DNS request.
    pub fn new(cfg: &Rfc2136Config, zones: &[Name]) -> Result<Self, Rfc2136SetupError> {
        let server_err = |problem: String| Rfc2136SetupError::Server {
            server: cfg.server.clone(),
            problem,
        };
        let server = cfg
            .server
            .trim()
            .to_socket_addrs()
            .map_err(|e| server_err(format!("{e} (expected address:port)")))?
            .next()
            .ok_or_else(|| server_err("resolves to no address".into()))?;
        if zones.is_empty() {
            return Err(Rfc2136SetupError::Zones("no zone configured".into()));
        }
        let (signer, key_name, algorithm) = match &cfg.tsig_secret_file {
            None => {
                if cfg.tsig_key_name.is_some() {
                    return Err(Rfc2136SetupError::Tsig(
                        "tsig_key_name is set but tsig_secret_file is not".into(),
                    ));
                }
                tracing::warn!(server = %server, "No TSIG key configured: DNS UPDATEs go unsigned.");
                (None, None, cfg.tsig_algorithm.unwrap_or_default())
            }
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| Rfc2136SetupError::KeyFile {
                        path: path.clone(),
                        problem: e.to_string(),
                    })?;
                let key = read_key(&text, cfg.tsig_key_name.as_deref(), cfg.tsig_algorithm)
                    .map_err(|problem| Rfc2136SetupError::KeyFile {
                        path: path.clone(),
                        problem,
                    })?;
                let name = HName::from_ascii(&key.name).map_err(|e| {
                    Rfc2136SetupError::Tsig(format!("key name {:?}: {e}", key.name))
                })?;
                let signer =
                    TSigner::new(key.secret, key.algorithm.hickory(), name, TSIG_FUDGE_SECS)
                        .map_err(|e| Rfc2136SetupError::Tsig(e.to_string()))?;
                (Some(signer), Some(key.name), key.algorithm)
            }
        };
        Ok(Rfc2136Provider {
            server,
            zones: zones.to_vec(),
            signer,
            key_name,
            algorithm,
            timeout: cfg.timeout,
            axfr: cfg.axfr,
        })
    }

    fn hosted(&self, zone: &Name) -> Result<(), ProviderError> {
        if self.zones.contains(zone) {
            Ok(())
        } else {
            Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "zone {zone} is not configured for rfc2136 server {}",
                    self.server
                ),
            ))
        }
    }

    /// A fresh TCP connection with the signer attached. A failure here sent nothing.
    async fn connect(&self) -> Result<Conn, ProviderError> {
        let (connect, handle) = TcpClientStream::new(
            self.server,
            None,
            Some(self.timeout),
            TokioRuntimeProvider::default(),
        );
        let stream = tokio::time::timeout(self.timeout, connect)
            .await
            .map_err(|_| {
                ProviderError::new(
                    ErrorClass::Transient,
                    format!("connecting to {} timed out", self.server),
                )
            })?
            .map_err(|e| {
                ProviderError::new(
                    ErrorClass::Transient,
                    format!("cannot connect to {}: {e}", self.server),
                )
            })?;
        let mut mux = DnsMultiplexer::new(stream, handle).with_timeout(self.timeout);
        if let Some(signer) = &self.signer {
            mux = mux.with_signer(signer.clone());
        }
        let (client, background) = Client::<TokioRuntimeProvider>::from_sender(mux);
        Ok(Conn {
            client,
            background: tokio::spawn(background),
        })
    }

    /// Sends one message and waits for its one answer.
    async fn exchange(&self, message: Message, write: bool) -> Result<Message, ProviderError> {
        let conn = self.connect().await?;
        let mut answers = conn.client.send(DnsRequest::from(message));
        // The multiplexer has the same deadline; this one only guards against a hang.
        let answer = tokio::time::timeout(self.timeout + Duration::from_secs(1), answers.next())
            .await
            .unwrap_or(None)
            .unwrap_or(Err(NetError::Timeout));
        answer
            .map(hickory_net::proto::op::DnsResponse::into_message)
            .map_err(|e| self.net_error(&e, write))
    }

    /// Classifies a failure after the connection was up.
    fn net_error(&self, e: &NetError, write: bool) -> ProviderError {
        let text = e.to_string();
        let lower = text.to_ascii_lowercase();
        if matches!(e, NetError::Proto(_)) && (lower.contains("tsig") || lower.contains("hmac")) {
            return self.tsig_rejected(&text);
        }
        let class = match e {
            NetError::Busy | NetError::NoConnections => ErrorClass::Transient,
            _ if write => ErrorClass::Ambiguous,
            _ => ErrorClass::Transient,
        };
        ProviderError::new(class, format!("{}: {text}", self.server))
    }

    /// The zone's RRSets by AXFR, and its serial.
    ///
    /// Read straight off the TCP stream, not through hickory's multiplexer: that one
    /// hands a request's answers over in a channel of 8 messages and silently DROPS
    /// the rest when the reader falls behind (it logs "error notifying wait, possible
    /// future leak"), which turned large transfers into listings with holes. Here a
    /// message is read from the socket only when the previous one is consumed, every
    /// message is checked against the TSIG chain, and the transfer must end with the
    /// zone's SOA.
    async fn axfr(&self, zone: &Name) -> Result<(Vec<Record>, Option<u64>), ProviderError> {
        let what = format!("AXFR of {zone} from {}", self.server);
        let transient = |m: String| ProviderError::new(ErrorClass::Transient, m);
        let (connect, mut handle) = TcpClientStream::new(
            self.server,
            None,
            Some(self.timeout),
            TokioRuntimeProvider::default(),
        );
        let mut stream = tokio::time::timeout(self.timeout, connect)
            .await
            .map_err(|_| transient(format!("{what}: connecting timed out")))?
            .map_err(|e| transient(format!("{what}: cannot connect: {e}")))?;

        let mut query = Message::query();
        query.metadata.id = rand::random();
        query.metadata.recursion_desired = false;
        query.add_query(Query::query(hname(zone)?, HRecordType::AXFR));
        let mut verifier = match &self.signer {
            Some(signer) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                query.finalize(signer, now).map_err(|e| {
                    ProviderError::new(
                        ErrorClass::Permanent,
                        format!("{what}: cannot sign the request: {e}"),
                    )
                })?
            }
            None => None,
        };
        let bytes = query
            .to_vec()
            .map_err(|e| ProviderError::new(ErrorClass::Invalid, format!("{what}: {e}")))?;
        handle
            .send(SerialMessage::new(bytes, self.server))
            .map_err(|e| transient(format!("{what}: {e}")))?;

        let mut records: Vec<Record> = Vec::new();
        let mut serial = None;
        loop {
            let next = tokio::time::timeout(self.timeout + Duration::from_secs(1), stream.next())
                .await
                .map_err(|_| transient(format!("{what}: timed out")))?;
            let Some(raw) = next else {
                return Err(transient(format!(
                    "{what}: the connection closed before the transfer ended ({} records read)",
                    records.len()
                )));
            };
            let (bytes, _) = raw
                .map_err(|e| transient(format!("{what}: {e}")))?
                .into_parts();
            let message = match verifier.as_mut() {
                Some(v) => match v.verify(&bytes) {
                    Ok(r) => r.into_message(),
                    Err(e) => {
                        let rcode = Message::from_vec(&bytes)
                            .map(|m| m.metadata.response_code.to_string())
                            .unwrap_or_default();
                        return Err(self.tsig_rejected(&format!("{e} (answer {rcode})")));
                    }
                },
                None => Message::from_vec(&bytes)
                    .map_err(|e| transient(format!("{what}: undecodable answer: {e}")))?,
            };
            if message.metadata.id != query.metadata.id {
                return Err(transient(format!("{what}: an answer to another request")));
            }
            let rcode = message.metadata.response_code;
            if rcode != ResponseCode::NoError {
                let class = match rcode {
                    ResponseCode::ServFail => ErrorClass::Transient,
                    _ => ErrorClass::Permanent,
                };
                return Err(ProviderError::new(
                    class,
                    format!("{what} answered {rcode}"),
                ));
            }
            for r in message.answers {
                if let HRData::SOA(soa) = &r.data {
                    match serial {
                        // The closing SOA: the transfer is complete.
                        Some(_) => return Ok((records, serial)),
                        None => serial = Some(u64::from(soa.serial)),
                    }
                } else if serial.is_none() {
                    return Err(transient(format!(
                        "{what}: the transfer does not start with the SOA"
                    )));
                }
                records.push(r);
            }
        }
    }

    /// A signed exchange whose answer fails TSIG verification: the server did not
    /// sign it, which it does when it rejects the key (BADKEY/BADSIG/BADTIME).
    fn tsig_rejected(&self, text: &str) -> ProviderError {
        ProviderError::new(
            ErrorClass::Permanent,
            format!(
                "{}: the answer failed TSIG verification; the server probably rejected key {:?} ({}): wrong name, secret, algorithm or clock ({text})",
                self.server,
                self.key_name.as_deref().unwrap_or("-"),
                self.algorithm.as_str()
            ),
        )
    }

    /// One plain query; `None` data when the name or type does not exist.
    async fn query(
        &self,
        conn: &Conn,
        name: &Name,
        rtype: HRecordType,
    ) -> Result<Message, ProviderError> {
        let mut client = conn.client.clone();
        let answer = tokio::time::timeout(
            self.timeout + Duration::from_secs(1),
            client.query(hname(name)?, DNSClass::IN, rtype),
        )
        .await
        .unwrap_or(Err(NetError::Timeout))
        .map_err(|e| self.net_error(&e, false))?
        .into_message();
        match answer.metadata.response_code {
            ResponseCode::NoError | ResponseCode::NXDomain => Ok(answer),
            ResponseCode::ServFail => Err(ProviderError::new(
                ErrorClass::Transient,
                format!("{}: query {name} {rtype} answered SERVFAIL", self.server),
            )),
            rcode => Err(ProviderError::new(
                ErrorClass::Permanent,
                format!("{}: query {name} {rtype} answered {rcode}", self.server),
            )),
        }
    }

    async fn soa_serial(&self, zone: &Name) -> Result<u64, ProviderError> {
        let conn = self.connect().await?;
        let answer = self.query(&conn, zone, HRecordType::SOA).await?;
        answer
            .answers
            .iter()
            .find_map(|r| match &r.data {
                HRData::SOA(soa) if r.name == hname(zone).ok()? => Some(u64::from(soa.serial)),
                _ => None,
            })
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorClass::Permanent,
                    format!(
                        "{} has no SOA for {zone}: is it authoritative for the zone?",
                        self.server
                    ),
                )
            })
    }

    /// The records at `names`, by plain queries of every type dnsplane models.
    async fn query_names(&self, names: &[Name]) -> Result<Vec<Record>, ProviderError> {
        let conn = self.connect().await?;
        let mut records = Vec::new();
        for name in names {
            let owner = hname(name)?;
            for rtype in RecordType::ALL {
                let answer = self.query(&conn, name, htype(rtype)).await?;
                // Only the owner's own data: not a CNAME chased from another type.
                records.extend(
                    answer
                        .answers
                        .into_iter()
                        .filter(|r| r.name == owner && r.record_type() == htype(rtype)),
                );
            }
        }
        Ok(records)
    }
}

/// A TCP connection and the task driving it; dropping it closes both.
struct Conn {
    client: Client<TokioRuntimeProvider>,
    background: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.background.abort();
    }
}

impl Rfc2136Provider {
    /// REFUSED has two meanings: the key may not write the zone at all (or the zone is
    /// frozen), or the server refuses these records (BIND's check-names: `_` in a host
    /// name; an update-policy that excludes some names or types). One no-op UPDATE
    /// tells them apart, so that one bad record does not disable the whole account.
    async fn refused(&self, zone: &Name, n_ops: usize) -> ProviderError {
        let what = format!("UPDATE of {zone} ({n_ops} ops) at {}: REFUSED", self.server);
        let probe = match build_probe(zone) {
            Ok(m) => m,
            Err(e) => return e,
        };
        match self.exchange(probe, true).await {
            Ok(m) if m.metadata.response_code == ResponseCode::NoError => ProviderError::new(
                ErrorClass::Invalid,
                format!(
                    "{what}, although the key may change the zone: the server refuses these records \
                     (BIND check-names: no '_' in host names of A/AAAA/MX/NS/SRV records; or an \
                     update-policy that excludes these names or types)"
                ),
            ),
            Ok(m) => ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "{what}; a no-op UPDATE is refused too ({}): the key is not granted updates in \
                     this zone, or the zone is frozen",
                    m.metadata.response_code
                ),
            ),
            Err(e) if e.class == ErrorClass::Permanent => e,
            Err(e) => ProviderError::new(
                ErrorClass::Transient,
                format!(
                    "{what}; telling a policy refusal from a record refusal failed: {}",
                    e.message
                ),
            ),
        }
    }
}

#[async_trait]
impl Provider for Rfc2136Provider {
    fn driver(&self) -> &'static str {
        "rfc2136"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::atomic(MAX_CHANGES_PER_BATCH, MAX_BYTES_PER_BATCH).with_serial()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        Ok(self.zones.clone())
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        self.hosted(zone)?;
        self.soa_serial(zone).await.map(Some)
    }

    async fn list_paced(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        pacer: &Pacer,
    ) -> Result<Listing, ProviderError> {
        pacer.request(Operation::List).await?;
        self.hosted(zone)?;
        if self.axfr {
            let (records, serial) = self.axfr(zone).await?;
            return Ok(Listing {
                rrsets: to_rrsets(zone, records, names),
                serial,
            });
        }
        let Some(names) = names else {
            return Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "listing all of {zone} needs AXFR, which this account disables (axfr = false)"
                ),
            ));
        };
        if names.len() > MAX_QUERY_NAMES {
            return Err(ProviderError::new(
                ErrorClass::Invalid,
                format!(
                    "{} names are too many to query one by one (at most {MAX_QUERY_NAMES})",
                    names.len()
                ),
            ));
        }
        // The serial first: a listing is never newer than the serial it claims.
        let serial = self.soa_serial(zone).await?;
        let records = self.query_names(names).await?;
        Ok(Listing {
            rrsets: to_rrsets(zone, records, Some(names)),
            serial: Some(serial),
        })
    }

    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        pacer.request(Operation::Apply).await?;
        self.hosted(zone)?;
        crate::provider::ensure_in_zone(zone, ops)?;
        if ops.is_empty() {
            return Ok(());
        }
        // What the batch itself says exists, for its own CNAME contradictions; the
        // server checks the rest through the prerequisites.
        let mut believed: BTreeMap<Name, BTreeSet<RecordType>> = BTreeMap::new();
        for op in ops.iter().filter(|op| op.before.is_some()) {
            believed
                .entry(op.key.name.clone())
                .or_default()
                .insert(op.key.rtype);
        }
        cname_check(ops, &believed)?;

        let message = build_update(zone, ops)?;
        let size = message
            .to_vec()
            .map_err(|e| {
                ProviderError::new(
                    ErrorClass::Invalid,
                    format!("cannot encode the UPDATE: {e}"),
                )
            })?
            .len();
        if size > MAX_MESSAGE_BYTES {
            return Err(ProviderError::new(
                ErrorClass::Invalid,
                format!(
                    "the UPDATE is {size} bytes, above the {MAX_MESSAGE_BYTES}-byte limit of one DNS message"
                ),
            ));
        }
        let answer = self.exchange(message, true).await?;
        let rcode = answer.metadata.response_code;
        if rcode == ResponseCode::NoError {
            return Ok(());
        }
        if rcode == ResponseCode::Refused {
            return Err(self.refused(zone, ops.len()).await);
        }
        let class = classify_rcode(rcode);
        let why = match rcode {
            ResponseCode::YXRRSet => "an RRSet expected absent exists",
            ResponseCode::NXRRSet => "an RRSet is absent or differs from what was expected",
            ResponseCode::YXDomain => "a name expected unused holds data",
            ResponseCode::NXDomain => "a name expected in use holds no data",
            ResponseCode::NotAuth => {
                "the server is not authoritative for the zone or rejected the TSIG key"
            }
            ResponseCode::NotZone => "a name is outside the zone",
            ResponseCode::FormErr => "the server could not parse the UPDATE",
            ResponseCode::ServFail => "the server failed and applied nothing",
            _ => "the update was not applied",
        };
        Err(ProviderError::new(
            class,
            format!(
                "UPDATE of {zone} ({} ops) at {}: {rcode}: {why}",
                ops.len(),
                self.server
            ),
        ))
    }
}

#[cfg(test)]
mod tests;
