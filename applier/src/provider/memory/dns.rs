//! The `memory` driver's DNS responder: answers queries over UDP and TCP from the
//! store, authoritatively, so that `dig` shows what dnsplane did.
//!
//! It serves what the store holds plus a synthesized SOA at each apex (serial = the
//! store's serial), follows CNAMEs inside the zone, refers below NS delegations,
//! synthesizes wildcard answers, answers REFUSED outside its zones and sets TC when a
//! UDP answer exceeds 512 bytes or the client's EDNS size. `ANY` gets one RRset
//! (RFC 8482), UDP answers are rate-limited per client prefix ([`rrl`]), and zones
//! are transferred over TCP (AXFR, [`axfr`]).
//!
//! Why not `hickory-server` (issue 18 asked; tried on a branch and measured): its
//! `Catalog`/`ZoneHandler` marks referrals authoritative, truncates a UDP answer to the
//! records that fit instead of sending TC with an empty answer, echoes the client's
//! EDNS size instead of 1232, sends a zone transfer in one message (hickory issue #351:
//! no zone over 64 KB), and would need the store copied into its in-memory zones per
//! batch; so the resolution here stays ours either way. Its `Server` alone could carry
//! the sockets, but has no cap on TCP connections ([`MAX_TCP_CONNECTIONS`] here) and
//! logs every query at info: 940 lines became 917, for two more crates and a lost
//! limit. Not worth it.
use crate::provider::hickory_rdata::{hname_text, to_hname};
use crate::provider::memory::store::{MemoryStore, ZoneData};
use dnsplane_common::{Name, RData, RRSet, RecordType};
use hickory_proto::op::{Edns, Message, MessageType, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::{self, DNSClass, Record, rdata};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub mod axfr;
mod encode;
pub mod rrl;
use axfr::Transfer;
use rrl::{DnsRateLimit, ResponseLimiter, Verdict};

/// The EDNS payload size this server advertises (the DNS Flag Day 2020 value).
const EDNS_PAYLOAD: u16 = 1232;
/// Largest UDP datagram read.
const MAX_UDP: usize = 4096;
/// TCP connections served at once; more are closed at accept.
const MAX_TCP_CONNECTIONS: usize = 256;
/// An idle TCP connection is closed after this long.
const TCP_IDLE: Duration = Duration::from_secs(10);
/// CNAMEs followed inside a zone before giving up (loops, long chains).
const MAX_CNAME_HOPS: usize = 8;
/// TTL of the synthesized SOA, also its negative-caching minimum: short, because the
/// zone changes whenever dnsplane applies something.
const SOA_TTL: u32 = 60;

/// What the responder answers for: the store and the zones hosted in it.
#[derive(Debug, Clone)]
pub struct Authority {
    store: Arc<MemoryStore>,
    zones: Vec<(Name, rr::Name)>,
    transfer: Transfer,
}

impl Authority {
    pub fn new(store: Arc<MemoryStore>, zones: &[Name]) -> Self {
        let zones = zones
            .iter()
            .filter_map(|z| Some((z.clone(), to_hname(z).ok()?)))
            .collect();
        Authority {
            store,
            zones,
            transfer: Transfer::default(),
        }
    }

    /// The answer to the wire-format `request` (TC set when it does not fit the
    /// transport); `None` when the request deserves no answer at all.
    pub fn respond(&self, request: &[u8], transport: Transport) -> Option<Vec<u8>> {
        let req = match Message::from_vec(request) {
            Ok(m) => m,
            Err(_) if request.len() >= 12 && request[2] & 0x80 == 0 => {
                let id = u16::from_be_bytes([request[0], request[1]]);
                return Message::error_msg(id, OpCode::Query, ResponseCode::FormErr)
                    .to_vec()
                    .ok();
            }
            Err(_) => return None,
        };
        if req.metadata.message_type != MessageType::Query {
            return None;
        }
        let mut resp = Message::response(req.metadata.id, req.metadata.op_code);
        resp.metadata = Metadata::response_from_request(&req.metadata);
        if req.edns.is_some() {
            let mut e = Edns::new();
            e.set_max_payload(EDNS_PAYLOAD);
            resp.set_edns(e);
        }
        let max_size = match (transport, &req.edns) {
            (Transport::Tcp, _) => usize::from(u16::MAX),
            (Transport::Udp, None) => 512,
            // The smaller of what the client and this server accept, never below 512.
            (Transport::Udp, Some(edns)) => {
                usize::from(edns.max_payload().clamp(512, EDNS_PAYLOAD))
            }
        };
        resp.add_queries(req.queries.iter().cloned());
        if req.metadata.op_code != OpCode::Query {
            resp.metadata.response_code = ResponseCode::NotImp;
        } else if req.queries.len() != 1 {
            resp.metadata.response_code = ResponseCode::FormErr;
        } else {
            self.answer(&req.queries[0], &mut resp);
        }
        let bytes = encode::to_vec(&resp).ok()?;
        if bytes.len() <= max_size {
            return Some(bytes);
        }
        resp.answers.clear();
        resp.authorities.clear();
        resp.additionals.clear();
        resp.metadata.truncation = true;
        encode::to_vec(&resp).ok()
    }

    /// The empty TC=1 answer a rate-limited UDP client gets instead of the real one
    /// (the client retries over TCP); `None` for what deserves no answer.
    pub fn truncated(request: &[u8]) -> Option<Vec<u8>> {
        let req = Message::from_vec(request).ok()?;
        if req.metadata.message_type != MessageType::Query {
            return None;
        }
        let mut resp = Message::response(req.metadata.id, req.metadata.op_code);
        resp.metadata = Metadata::response_from_request(&req.metadata);
        resp.metadata.truncation = true;
        resp.add_queries(req.queries.iter().cloned());
        resp.to_vec().ok()
    }

    fn answer(&self, q: &hickory_proto::op::Query, resp: &mut Message) {
        let qname = q.name();
        let zone = self
            .zones
            .iter()
            .filter(|(_, hz)| hz.zone_of(qname))
            .max_by_key(|(_, hz)| hz.num_labels());
        let Some((zone, _)) = zone else {
            resp.metadata.response_code = ResponseCode::Refused;
            return;
        };
        if q.query_class() != DNSClass::IN && q.query_class() != DNSClass::ANY {
            resp.metadata.response_code = ResponseCode::Refused;
            return;
        }
        let qtype = match q.query_type() {
            rr::RecordType::AXFR | rr::RecordType::IXFR => {
                resp.metadata.response_code = ResponseCode::Refused;
                return;
            }
            rr::RecordType::ANY => QType::Any,
            rr::RecordType::SOA => QType::Soa,
            t => RecordType::parse(&t.to_string()).map_or(QType::Other, QType::Known),
        };
        // A name our model cannot hold has no data, but is still inside the zone.
        let text = hname_text(qname).unwrap_or_else(|| qname.to_ascii());
        let resolution = match Name::parse(&text) {
            Ok(name) => self.store.read(zone, |z| resolve(z, zone, &name, qtype)),
            Err(_) => self.store.read(zone, |z| {
                Resolution::negative(z, zone, ResponseCode::NXDomain)
            }),
        };
        let Ok(res) = resolution else {
            resp.metadata.response_code = ResponseCode::ServFail;
            return;
        };
        resp.metadata.authoritative = res.authoritative;
        resp.metadata.response_code = res.rcode;
        for (owner, rrset) in &res.answers {
            resp.add_answers(records(owner, rrset));
        }
        for (owner, rrset) in &res.authority {
            resp.add_authorities(records(owner, rrset));
        }
        if let Some(soa) = res.soa_answer {
            resp.add_answer(soa);
        }
        if let Some(soa) = res.soa_authority {
            resp.add_authority(soa);
        }
    }
}

/// Where a request came from; decides the answer's size limit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Transport {
    Udp,
    Tcp,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum QType {
    Known(RecordType),
    Soa,
    Any,
    /// A type dnsplane does not manage: NODATA where the name exists.
    Other,
}

/// The data an answer is made of, collected under the store's lock.
struct Resolution {
    rcode: ResponseCode,
    authoritative: bool,
    answers: Vec<(Name, RRSet)>,
    authority: Vec<(Name, RRSet)>,
    soa_answer: Option<Record>,
    soa_authority: Option<Record>,
}

impl Resolution {
    fn negative(z: &ZoneData, zone: &Name, rcode: ResponseCode) -> Self {
        Resolution {
            rcode,
            authoritative: true,
            answers: Vec::new(),
            authority: Vec::new(),
            soa_answer: None,
            soa_authority: soa(z, zone),
        }
    }
}

fn resolve(z: &ZoneData, zone: &Name, qname: &Name, qtype: QType) -> Resolution {
    let mut res = Resolution::negative(z, zone, ResponseCode::NoError);
    res.soa_authority = None;
    let mut name = qname.clone();
    for _ in 0..MAX_CNAME_HOPS {
        // A DS at the cut belongs to this (the parent) side and is answered, not
        // referred (RFC 4035 §3.1.4.1).
        let ds_at_cut = |ns: &RRSet| ns.key.name == name && qtype == QType::Known(RecordType::Ds);
        if let Some(ns) = delegation(z, zone, &name).filter(|ns| !ds_at_cut(ns)) {
            if res.answers.is_empty() {
                res.authoritative = false;
                res.authority.push((ns.key.name.clone(), ns));
            }
            return res;
        }
        let rrsets: Vec<&RRSet> = match z.node(&name) {
            Some(node) => node.rrsets.values().collect(),
            // The apex always exists (its SOA is synthesized), as does an empty
            // non-terminal.
            None if &name == zone || z.has_descendants(&name) => Vec::new(),
            None => match wildcard(z, zone, &name) {
                Some(rrsets) => rrsets,
                None => {
                    res.rcode = ResponseCode::NXDomain;
                    res.soa_authority = soa(z, zone);
                    return res;
                }
            },
        };
        let owned = |r: &RRSet| (name.clone(), r.clone());
        match qtype {
            // RFC 8482 §4.1 ("Answer with a Subset of Available RRsets"): one RRset,
            // not all of them, so an ANY query cannot be used to amplify. Of §4's
            // choices this one answers with real data (§4.2's synthesized HINFO would
            // tell an operator running `dig ANY` nothing); the RRset is the one with
            // the lowest type code, the synthesized SOA counted at the apex, so the
            // same query always gets the same answer. A CNAME is alone at its name,
            // so it is the one returned there, as §4.2 asks too.
            QType::Any => {
                let stored = rrsets.iter().min_by_key(|r| wire_code(r.key.rtype));
                let apex_soa = (&name == zone).then(|| soa(z, zone)).flatten();
                match (stored, apex_soa) {
                    (Some(r), Some(soa))
                        if wire_code(r.key.rtype) > u16::from(rr::RecordType::SOA) =>
                    {
                        res.soa_answer = Some(soa)
                    }
                    (Some(r), _) => res.answers.push(owned(r)),
                    (None, Some(soa)) => res.soa_answer = Some(soa),
                    (None, None) => res.soa_authority = soa(z, zone),
                }
                return res;
            }
            QType::Soa if &name == zone => {
                res.soa_answer = soa(z, zone);
                return res;
            }
            QType::Known(t) => {
                if let Some(r) = rrsets.iter().find(|r| r.key.rtype == t) {
                    res.answers.push(owned(r));
                    return res;
                }
            }
            QType::Soa | QType::Other => {}
        }
        let Some(cname) = rrsets.iter().find(|r| r.key.rtype == RecordType::Cname) else {
            if res.answers.is_empty() {
                res.soa_authority = soa(z, zone);
            }
            return res;
        };
        res.answers.push(owned(cname));
        match cname.values().next().map(Name::parse) {
            Some(Ok(target)) if target.is_within(zone) => name = target,
            // Outside the zone: the resolver follows it.
            _ => return res,
        }
    }
    res
}

/// The DNS type code of `t` (the order RFC 8482 answers pick from).
fn wire_code(t: RecordType) -> u16 {
    t.as_str()
        .parse::<rr::RecordType>()
        .map_or(u16::MAX, u16::from)
}

/// The NS RRSet of the topmost delegation between the apex (exclusive) and `name`.
fn delegation(z: &ZoneData, zone: &Name, name: &Name) -> Option<RRSet> {
    let mut ancestors = Vec::new();
    let mut cur = name.clone();
    while &cur != zone && cur.is_within(zone) {
        let parent = cur.parent();
        ancestors.push(cur);
        cur = parent?;
    }
    ancestors
        .iter()
        .rev()
        .find_map(|n| z.node(n)?.rrsets.get(&RecordType::Ns).cloned())
}

/// RFC 4592: the RRSets of `*.<closest encloser>` for a `name` below the apex that
/// does not exist.
fn wildcard<'z>(z: &'z ZoneData, zone: &Name, name: &Name) -> Option<Vec<&'z RRSet>> {
    if name == zone || !name.is_within(zone) || z.has_descendants(name) {
        return None;
    }
    let mut encloser = name.parent()?;
    while &encloser != zone && z.node(&encloser).is_none() && !z.has_descendants(&encloser) {
        encloser = encloser.parent()?;
    }
    let node = z.node(&encloser.prepend("*").ok()?)?;
    Some(node.rrsets.values().collect())
}

/// The synthesized SOA of `zone`: serial from the store, primary from the apex NS.
fn soa(z: &ZoneData, zone: &Name) -> Option<Record> {
    let hz = to_hname(zone).ok()?;
    let mname = z
        .node(zone)
        .and_then(|n| n.rrsets.get(&RecordType::Ns))
        .and_then(|ns| ns.values().next())
        .and_then(|v| Name::parse(v).ok())
        .and_then(|v| to_hname(&v).ok())
        .or_else(|| rr::Name::from_ascii("localhost.").ok())?;
    let rname = hz.prepend_label("hostmaster").ok()?;
    // SOA serials are 32 bits and wrap (RFC 1982).
    let serial = (z.serial() & u64::from(u32::MAX)) as u32;
    let soa = rdata::SOA::new(mname, rname, serial, 3600, 600, 86400, SOA_TTL);
    Some(Record::from_rdata(hz, SOA_TTL, rr::RData::SOA(soa)))
}

/// The wire records of one RRSet at `owner` (which differs from the RRSet's own name
/// for wildcard answers).
fn records(owner: &Name, rrset: &RRSet) -> Vec<Record> {
    let Ok(name) = to_hname(owner) else {
        return Vec::new();
    };
    rrset
        .values()
        .filter_map(|v| match to_rdata(rrset.key.rtype, v) {
            Some(d) => Some(Record::from_rdata(name.clone(), rrset.ttl, d)),
            None => {
                tracing::warn!(name = %owner, value = %v, "Stored value cannot be encoded; left out of the answer.");
                None
            }
        })
        .collect()
}

/// A canonical value as hickory record data.
pub fn to_rdata(rtype: RecordType, value: &str) -> Option<rr::RData> {
    let host = |n: &Name| to_hname(n).ok();
    Some(match RData::parse(rtype, value).ok()? {
        RData::A(ip) => rr::RData::A(rdata::A(ip)),
        RData::Aaaa(ip) => rr::RData::AAAA(rdata::AAAA(ip)),
        RData::Cname(n) => rr::RData::CNAME(rdata::CNAME(host(&n)?)),
        RData::Ns(n) => rr::RData::NS(rdata::NS(host(&n)?)),
        RData::Txt(strings) => rr::RData::TXT(rdata::TXT::from_bytes(
            strings.iter().map(Vec::as_slice).collect(),
        )),
        RData::Mx {
            preference,
            exchange,
        } => rr::RData::MX(rdata::MX::new(preference, host(&exchange)?)),
        RData::Srv {
            priority,
            weight,
            port,
            target,
        } => rr::RData::SRV(rdata::SRV::new(priority, weight, port, host(&target)?)),
        RData::Caa { flags, tag, value } => {
            // hickory's constructors only cover known tags; set the raw fields instead.
            let mut caa = rdata::CAA::new_issue(false, None, Vec::new());
            caa.issuer_critical = flags & 0x80 != 0;
            caa.reserved_flags = flags & 0x7f;
            caa.tag = tag;
            caa.value = value;
            rr::RData::CAA(caa)
        }
        other => crate::provider::hickory_rdata::to_hickory(&other).ok()?,
    })
}

/// The UDP and TCP sockets of one responder, bound before serving so that a port
/// conflict is reported at startup.
#[derive(Debug)]
pub struct DnsServer {
    authority: Authority,
    udp: UdpSocket,
    tcp: TcpListener,
    limit: DnsRateLimit,
}

impl DnsServer {
    /// Binds UDP and TCP on `addr`; with port 0, both on the same free port.
    pub async fn bind(addr: SocketAddr, authority: Authority) -> std::io::Result<Self> {
        let mut last_err = None;
        for _ in 0..8 {
            let udp = UdpSocket::bind(addr).await?;
            match TcpListener::bind(udp.local_addr()?).await {
                Ok(tcp) => {
                    return Ok(DnsServer {
                        authority,
                        udp,
                        tcp,
                        limit: DnsRateLimit::default(),
                    });
                }
                // Port 0 picked a UDP port whose TCP twin is taken: pick again.
                Err(e) if addr.port() == 0 => last_err = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_err.unwrap_or_else(|| std::io::Error::other("no free port")))
    }

    /// Limits UDP answers per client prefix ([`rrl`]); the default is
    /// [`DnsRateLimit::default`].
    pub fn with_rate_limit(mut self, limit: DnsRateLimit) -> Self {
        self.limit = limit;
        self
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.udp
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Serves until `shutdown` is cancelled.
    pub async fn run(self, shutdown: CancellationToken) {
        let DnsServer {
            authority,
            udp,
            tcp,
            limit,
        } = self;
        let limiter = ResponseLimiter::new(limit);
        let udp_task = tokio::spawn(serve_udp(authority.clone(), udp, limiter, shutdown.clone()));
        serve_tcp(authority, tcp, shutdown).await;
        let _ = udp_task.await;
    }
}

async fn serve_udp(
    authority: Authority,
    socket: UdpSocket,
    limiter: ResponseLimiter,
    shutdown: CancellationToken,
) {
    let mut buf = vec![0u8; MAX_UDP];
    loop {
        let (n, peer) = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = socket.recv_from(&mut buf) => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::debug!(error = %e, "UDP receive failed.");
                    continue;
                }
            },
        };
        let answer = match limiter.check(peer.ip()) {
            Verdict::Answer => authority.respond(&buf[..n], Transport::Udp),
            Verdict::Slip => Authority::truncated(&buf[..n]),
            Verdict::Drop => None,
        };
        if let Some(answer) = answer
            && let Err(e) = socket.send_to(&answer, peer).await
        {
            tracing::debug!(error = %e, %peer, "UDP send failed.");
        }
    }
}

async fn serve_tcp(authority: Authority, listener: TcpListener, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_TCP_CONNECTIONS));
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::debug!(error = %e, "TCP accept failed.");
                    continue;
                }
            },
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "Too many DNS TCP connections; closing.");
            continue;
        };
        let (authority, shutdown) = (authority.clone(), shutdown.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown.cancelled() => {}
                r = serve_connection(&authority, stream, peer.ip()) => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, %peer, "DNS TCP connection ended.");
                    }
                }
            }
            drop(permit);
        });
    }
}

/// Length-prefixed messages, several per connection (RFC 7766).
async fn serve_connection(
    authority: &Authority,
    mut stream: TcpStream,
    peer: std::net::IpAddr,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    loop {
        let len = match tokio::time::timeout(TCP_IDLE, stream.read_u16()).await {
            Err(_) => return Ok(()),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Ok(r) => r?,
        };
        buf.resize(usize::from(len), 0);
        tokio::time::timeout(TCP_IDLE, stream.read_exact(&mut buf))
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "request body timed out")
            })??;
        let answers = match authority.transfer(&buf, peer) {
            Some(messages) => messages,
            None => match authority.respond(&buf, Transport::Tcp) {
                Some(answer) => vec![answer],
                None => return Ok(()),
            },
        };
        for answer in answers {
            let Ok(n) = u16::try_from(answer.len()) else {
                return Ok(());
            };
            let mut out = Vec::with_capacity(answer.len() + 2);
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(&answer);
            stream.write_all(&out).await?;
        }
    }
}

#[cfg(test)]
mod tests;
