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
use super::pdns::cname_check;
use super::{Capabilities, ErrorClass, Listing, Provider, ProviderError};
use async_trait::async_trait;
use base64::Engine as _;
use dnsplane_common::{Name, RData, RRSet, RRSetOp, RecordKey, RecordType};
use futures::StreamExt;
use hickory_net::client::{Client, ClientHandle};
use hickory_net::proto::op::{
    DnsRequest, Message, OpCode, Query, ResponseCode, SerialMessage, UpdateMessage,
};
use hickory_net::proto::rr::rdata::tsig::TsigAlgorithm as HTsigAlgorithm;
use hickory_net::proto::rr::rdata::{A, AAAA, CAA, CNAME, MX, NS, SRV, TXT};
use hickory_net::proto::rr::{
    DNSClass, Name as HName, RData as HRData, Record, RecordType as HRecordType, TSigner,
};
use hickory_net::runtime::TokioRuntimeProvider;
use hickory_net::tcp::TcpClientStream;
use hickory_net::{DnsHandle, DnsMultiplexer, DnsStreamHandle, NetError};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

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

/// TSIG HMAC algorithms hickory can sign with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum TsigAlgorithm {
    #[default]
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
    #[serde(rename = "hmac-sha384")]
    HmacSha384,
    #[serde(rename = "hmac-sha512")]
    HmacSha512,
}

impl TsigAlgorithm {
    /// BIND's spelling (`hmac-sha256`), case-insensitive, with or without a final dot.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().trim_end_matches('.').to_ascii_lowercase().as_str() {
            "hmac-sha256" => Some(TsigAlgorithm::HmacSha256),
            "hmac-sha384" => Some(TsigAlgorithm::HmacSha384),
            "hmac-sha512" => Some(TsigAlgorithm::HmacSha512),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TsigAlgorithm::HmacSha256 => "hmac-sha256",
            TsigAlgorithm::HmacSha384 => "hmac-sha384",
            TsigAlgorithm::HmacSha512 => "hmac-sha512",
        }
    }

    fn hickory(self) -> HTsigAlgorithm {
        match self {
            TsigAlgorithm::HmacSha256 => HTsigAlgorithm::HmacSha256,
            TsigAlgorithm::HmacSha384 => HTsigAlgorithm::HmacSha384,
            TsigAlgorithm::HmacSha512 => HTsigAlgorithm::HmacSha512,
        }
    }
}

/// An `rfc2136` provider account: one primary server and the zones it may change.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rfc2136Config {
    /// The primary's `address:port` (a host name is resolved once, at start).
    pub server: String,
    /// The zones this account manages on that server.
    pub zones: Vec<Name>,
    /// TSIG key name. May be left out when `tsig_secret_file` is a BIND key file
    /// holding one key; must match it when given.
    #[serde(default)]
    pub tsig_key_name: Option<String>,
    /// TSIG algorithm: `hmac-sha256` (default), `hmac-sha384` or `hmac-sha512`. Taken
    /// from a BIND key file when left out.
    #[serde(default)]
    pub tsig_algorithm: Option<TsigAlgorithm>,
    /// The TSIG secret: a BIND key file (`tsig-keygen` output) or a file holding only
    /// the base64 secret. Without it, UPDATEs go unsigned (for servers that authorise
    /// by address only).
    #[serde(default)]
    pub tsig_secret_file: Option<PathBuf>,
    /// Deadline of one exchange (connect, and each answer).
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// List zones by AXFR (default). Without it only names-filtered listings work
    /// (by plain queries, which see wildcard-synthesised answers as records).
    #[serde(default = "default_true")]
    pub axfr: bool,
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_true() -> bool {
    true
}

/// Why an `rfc2136` account could not be set up. Never carries the secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Rfc2136SetupError {
    #[error("rfc2136 server {server:?}: {problem}")]
    Server { server: String, problem: String },
    #[error("rfc2136 TSIG key file {path}: {problem}")]
    KeyFile { path: PathBuf, problem: String },
    #[error("rfc2136 TSIG: {0}")]
    Tsig(String),
    #[error("rfc2136 zones: {0}")]
    Zones(String),
}

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
    pub fn new(cfg: Rfc2136Config) -> Result<Self, Rfc2136SetupError> {
        let server_err = |problem: String| Rfc2136SetupError::Server {
            server: cfg.server.clone(),
            problem,
        };
        let server = cfg
            .server
            .to_socket_addrs()
            .map_err(|e| server_err(format!("{e} (expected address:port)")))?
            .next()
            .ok_or_else(|| server_err("resolves to no address".into()))?;
        if cfg.zones.is_empty() {
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
            zones: cfg.zones,
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

/// The TSIG key a key file holds.
struct Key {
    name: String,
    algorithm: TsigAlgorithm,
    secret: Vec<u8>,
}

/// Reads a BIND key file (`key "name" { algorithm …; secret "…"; };`, possibly
/// several keys) or a bare base64 secret. Errors never quote the secret.
fn read_key(
    text: &str,
    want_name: Option<&str>,
    want_alg: Option<TsigAlgorithm>,
) -> Result<Key, String> {
    let same_name = |a: &str, b: &str| {
        a.trim_end_matches('.')
            .eq_ignore_ascii_case(b.trim_end_matches('.'))
    };
    let tokens = tokenize(text);
    if tokens.first().map(String::as_str) != Some("key") {
        // A bare secret.
        let name = want_name.ok_or("holds a bare secret, so tsig_key_name must be set")?;
        let b64: String = text.split_whitespace().collect();
        return Ok(Key {
            name: name.to_string(),
            algorithm: want_alg.unwrap_or_default(),
            secret: decode_secret(&b64)?,
        });
    }
    // key NAME { algorithm ALG ; secret "S" ; } ;
    let mut keys = Vec::new();
    let mut it = tokens.iter().map(String::as_str).peekable();
    while let Some(tok) = it.next() {
        if tok != "key" {
            continue;
        }
        let name = it.next().ok_or("a key has no name")?.to_string();
        if it.next() != Some("{") {
            return Err(format!("key {name:?}: expected '{{'"));
        }
        let (mut alg, mut secret) = (None, None);
        loop {
            match it.next() {
                Some("}") | None => break,
                Some("algorithm") => alg = it.next().map(str::to_string),
                Some("secret") => secret = it.next().map(str::to_string),
                Some(_) => {}
            }
        }
        keys.push((name, alg, secret));
    }
    let (name, alg, secret) = match want_name {
        Some(want) => keys
            .into_iter()
            .find(|(n, _, _)| same_name(n, want))
            .ok_or_else(|| format!("holds no key named {want:?}"))?,
        None if keys.len() == 1 => keys.into_iter().next().ok_or("holds no key")?,
        None => return Err("holds several keys; set tsig_key_name to pick one".into()),
    };
    let alg_text = alg.ok_or_else(|| format!("key {name:?} has no algorithm"))?;
    let algorithm = TsigAlgorithm::parse(&alg_text).ok_or_else(|| {
        format!("key {name:?}: algorithm {alg_text:?} is not supported (hmac-sha256, hmac-sha384, hmac-sha512)")
    })?;
    if let Some(want) = want_alg
        && want != algorithm
    {
        return Err(format!(
            "key {name:?} is {}, but tsig_algorithm says {}",
            algorithm.as_str(),
            want.as_str()
        ));
    }
    let secret = secret.ok_or_else(|| format!("key {name:?} has no secret"))?;
    Ok(Key {
        name,
        algorithm,
        secret: decode_secret(&secret)?,
    })
}

fn decode_secret(b64: &str) -> Result<Vec<u8>, String> {
    // The decoder's own error quotes a byte of the secret: say less.
    let secret = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|_| "the secret is not valid base64".to_string())?;
    if secret.is_empty() {
        return Err("the secret is empty".into());
    }
    Ok(secret)
}

/// named.conf tokens: words, quoted strings (unquoted), `{`, `}`, `;`; comments
/// (`//`, `#`, `/* */`) dropped.
fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '{' | '}' | ';' => out.push(c.to_string()),
            '"' => {
                let mut s = String::new();
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    s.push(c);
                }
                out.push(s);
            }
            c => {
                let mut s = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || matches!(n, '{' | '}' | ';' | '"') {
                        break;
                    }
                    s.push(n);
                    chars.next();
                }
                out.push(s);
            }
        }
    }
    out
}

fn hname(n: &Name) -> Result<HName, ProviderError> {
    HName::from_ascii(n.as_str())
        .map_err(|e| ProviderError::new(ErrorClass::Invalid, format!("name {n}: {e}")))
}

fn htype(t: RecordType) -> HRecordType {
    match t {
        RecordType::A => HRecordType::A,
        RecordType::Aaaa => HRecordType::AAAA,
        RecordType::Cname => HRecordType::CNAME,
        RecordType::Txt => HRecordType::TXT,
        RecordType::Mx => HRecordType::MX,
        RecordType::Srv => HRecordType::SRV,
        RecordType::Ns => HRecordType::NS,
        RecordType::Caa => HRecordType::CAA,
    }
}

/// A canonical value as hickory record data.
fn to_rdata(rtype: RecordType, value: &str) -> Result<HRData, ProviderError> {
    let invalid = |e: String| ProviderError::new(ErrorClass::Invalid, e);
    let name = |n: &Name| hname(n);
    Ok(
        match RData::parse(rtype, value).map_err(|e| invalid(e.to_string()))? {
            RData::A(ip) => HRData::A(A(ip)),
            RData::Aaaa(ip) => HRData::AAAA(AAAA(ip)),
            RData::Cname(n) => HRData::CNAME(CNAME(name(&n)?)),
            RData::Ns(n) => HRData::NS(NS(name(&n)?)),
            RData::Txt(strings) => {
                HRData::TXT(TXT::from_bytes(strings.iter().map(Vec::as_slice).collect()))
            }
            RData::Mx {
                preference,
                exchange,
            } => HRData::MX(MX::new(preference, name(&exchange)?)),
            RData::Srv {
                priority,
                weight,
                port,
                target,
            } => HRData::SRV(SRV::new(priority, weight, port, name(&target)?)),
            RData::Caa { flags, tag, value } => {
                let mut caa = CAA::new_issue(false, None, Vec::new());
                caa.issuer_critical = flags & 0x80 != 0;
                caa.reserved_flags = flags & 0x7f;
                caa.tag = tag;
                caa.value = value;
                HRData::CAA(caa)
            }
        },
    )
}

/// Record data as a value `RData::parse` accepts; `None` for types dnsplane does not
/// model (SOA, RRSIG, NSEC, PTR, …).
fn from_rdata(data: &HRData) -> Option<(RecordType, String)> {
    Some(match data {
        HRData::A(a) => (RecordType::A, a.0.to_string()),
        HRData::AAAA(a) => (RecordType::Aaaa, a.0.to_string()),
        HRData::CNAME(n) => (RecordType::Cname, n.0.to_ascii()),
        HRData::NS(n) => (RecordType::Ns, n.0.to_ascii()),
        HRData::TXT(t) => (
            RecordType::Txt,
            t.txt_data
                .iter()
                .map(|s| quote(s))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        HRData::MX(mx) => (
            RecordType::Mx,
            format!("{} {}", mx.preference, mx.exchange.to_ascii()),
        ),
        HRData::SRV(s) => (
            RecordType::Srv,
            format!(
                "{} {} {} {}",
                s.priority,
                s.weight,
                s.port,
                s.target.to_ascii()
            ),
        ),
        HRData::CAA(c) => (
            RecordType::Caa,
            format!("{} {} {}", c.flags(), c.tag, quote(&c.value)),
        ),
        _ => return None,
    })
}

/// A character-string in presentation form, as `RData`'s canonical form writes it.
fn quote(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for &b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\{b:03}")),
        }
    }
    s.push('"');
    s
}

/// Groups records into the RRSets dnsplane models, for `zone`, at `names` if given.
fn to_rrsets(zone: &Name, records: Vec<Record>, names: Option<&[Name]>) -> Vec<RRSet> {
    let mut groups: BTreeMap<RecordKey, (u32, Vec<String>)> = BTreeMap::new();
    for r in records {
        if r.dns_class != DNSClass::IN {
            continue;
        }
        let Some((rtype, value)) = from_rdata(&r.data) else {
            continue;
        };
        let Ok(name) = Name::parse(&r.name.to_ascii()) else {
            tracing::warn!(zone = %zone, record.name = %r.name, "Skipped a record whose name dnsplane cannot represent.");
            continue;
        };
        if !name.is_within(zone) || names.is_some_and(|ns| !ns.contains(&name)) {
            continue;
        }
        let entry = groups
            .entry(RecordKey::new(zone.clone(), name, rtype))
            .or_insert((r.ttl, Vec::new()));
        entry.0 = entry.0.min(r.ttl);
        entry.1.push(value);
    }
    groups
        .into_iter()
        .filter_map(|(key, (ttl, values))| match RRSet::new(key.clone(), ttl, &values) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(zone = %zone, record.name = %key.name, record.type = %key.rtype, error = %e, "Skipped an RRSet dnsplane cannot represent.");
                None
            }
        })
        .collect()
}

/// Builds the one UPDATE message of a batch (see the module docs for the rules).
fn build_update(zone: &Name, ops: &[RRSetOp]) -> Result<Message, ProviderError> {
    let mut message = Message::query();
    message.metadata.op_code = OpCode::Update;
    message.metadata.recursion_desired = false;
    let mut zq = Query::new();
    zq.set_name(hname(zone)?)
        .set_query_class(DNSClass::IN)
        .set_query_type(HRecordType::SOA);
    message.add_zone(zq);

    let mut empty_prereqs: HashSet<(HName, DNSClass, HRecordType)> = HashSet::new();
    let mut empty = |message: &mut Message, name: &HName, class: DNSClass, rtype: HRecordType| {
        if empty_prereqs.insert((name.clone(), class, rtype)) {
            let mut r = Record::update0(name.clone(), 0, rtype);
            r.dns_class = class;
            message.add_pre_requisite(r);
        }
    };
    let records = |name: &HName, rrset: &RRSet, ttl: u32| -> Result<Vec<Record>, ProviderError> {
        rrset
            .values()
            .iter()
            .map(|v| {
                Ok(Record::from_rdata(
                    name.clone(),
                    ttl,
                    to_rdata(rrset.key.rtype, v)?,
                ))
            })
            .collect()
    };

    // Prerequisites: each op's precondition.
    for op in ops {
        let name = hname(&op.key.name)?;
        match &op.before {
            None => empty(&mut message, &name, DNSClass::NONE, htype(op.key.rtype)),
            Some(before) => message.add_pre_requisites(records(&name, before, 0)?),
        }
    }
    // Prerequisites: creates must not be silently dropped by the CNAME rule.
    for op in ops
        .iter()
        .filter(|op| !op.is_assert() && op.before.is_none() && op.after.is_some())
    {
        let name = hname(&op.key.name)?;
        let at_name = || {
            ops.iter()
                .filter(|o| o.key.name == op.key.name && o.key.rtype != op.key.rtype)
        };
        let cleared: BTreeSet<RecordType> = at_name()
            .filter(|o| o.before.is_some() && o.after.is_none())
            .map(|o| o.key.rtype)
            .collect();
        if op.key.rtype == RecordType::Cname {
            if at_name().all(|o| o.before.is_none()) {
                // Nothing else expected there: the name must be entirely unused.
                empty(&mut message, &name, DNSClass::NONE, HRecordType::ANY);
            } else {
                for t in RecordType::ALL {
                    if t != RecordType::Cname && !cleared.contains(&t) {
                        empty(&mut message, &name, DNSClass::NONE, htype(t));
                    }
                }
            }
        } else if !cleared.contains(&RecordType::Cname) {
            empty(&mut message, &name, DNSClass::NONE, HRecordType::CNAME);
        }
    }
    // Updates: every deletion, then every addition.
    for op in ops
        .iter()
        .filter(|op| !op.is_assert() && op.before.is_some())
    {
        let mut r = Record::update0(hname(&op.key.name)?, 0, htype(op.key.rtype));
        r.dns_class = DNSClass::ANY;
        message.add_update(r);
    }
    for op in ops.iter().filter(|op| !op.is_assert()) {
        if let Some(after) = &op.after {
            message.add_updates(records(&hname(&op.key.name)?, after, after.ttl)?);
        }
    }
    Ok(message)
}

/// The one place where UPDATE response codes get their class.
fn classify_rcode(rcode: ResponseCode) -> ErrorClass {
    match rcode {
        ResponseCode::YXRRSet
        | ResponseCode::NXRRSet
        | ResponseCode::YXDomain
        | ResponseCode::NXDomain => ErrorClass::Conflict,
        ResponseCode::FormErr | ResponseCode::NotZone => ErrorClass::Invalid,
        ResponseCode::ServFail => ErrorClass::Transient,
        // NOTAUTH (also TSIG failures), REFUSED (policy), NOTIMP (no UPDATE), BADSIG, …
        _ => ErrorClass::Permanent,
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

/// An UPDATE that changes nothing: delete an RRSet no one has. Servers apply their
/// update policy to it (and BIND does not bump the serial for it).
fn build_probe(zone: &Name) -> Result<Message, ProviderError> {
    let mut message = Message::query();
    message.metadata.op_code = OpCode::Update;
    message.metadata.recursion_desired = false;
    let mut zq = Query::new();
    zq.set_name(hname(zone)?)
        .set_query_class(DNSClass::IN)
        .set_query_type(HRecordType::SOA);
    message.add_zone(zq);
    let probe = zone
        .prepend("_dnsplane-probe")
        .map_err(|e| ProviderError::new(ErrorClass::Invalid, e.to_string()))?;
    let mut r = Record::update0(hname(&probe)?, 0, HRecordType::TXT);
    r.dns_class = DNSClass::ANY;
    message.add_update(r);
    Ok(message)
}

#[async_trait]
impl Provider for Rfc2136Provider {
    fn driver(&self) -> &'static str {
        "rfc2136"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            atomic_batches: true,
            conditional_writes: true,
            max_changes_per_batch: MAX_CHANGES_PER_BATCH,
            max_bytes_per_batch: MAX_BYTES_PER_BATCH,
            has_serial: true,
        }
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        Ok(self.zones.clone())
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        self.hosted(zone)?;
        self.soa_serial(zone).await.map(Some)
    }

    async fn list(&self, zone: &Name, names: Option<&[Name]>) -> Result<Listing, ProviderError> {
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

    async fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError> {
        self.hosted(zone)?;
        if let Some(op) = ops
            .iter()
            .find(|op| &op.key.zone != zone || !op.key.name.is_within(zone))
        {
            return Err(ProviderError::new(
                ErrorClass::Invalid,
                format!("{} is not in zone {zone}", op.key),
            )
            .with_key(op.key.clone()));
        }
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
mod tests {
    use super::*;

    const SECRET: &str = "DXwXgnCEizH5x1oN6SKTtUZngZh8RFA01T3oFAI0qfs=";

    #[test]
    fn reads_bind_key_files_and_bare_secrets() {
        let file = format!(
            "# comment\nkey \"other\" {{ algorithm hmac-sha512; secret \"{SECRET}\"; }};\n\
             key \"ddns-key\" {{\n\talgorithm hmac-sha256; // why\n\tsecret \"{SECRET}\";\n}};\n"
        );
        let k = read_key(&file, Some("ddns-key."), None).unwrap();
        assert_eq!(
            (k.name.as_str(), k.algorithm),
            ("ddns-key", TsigAlgorithm::HmacSha256)
        );
        assert_eq!(k.secret.len(), 32);
        let e = read_key(&file, None, None).err().unwrap();
        assert!(e.contains("several keys"), "{e}");
        let e = read_key(&file, Some("ddns-key"), Some(TsigAlgorithm::HmacSha512))
            .err()
            .unwrap();
        assert!(e.contains("hmac-sha256") && !e.contains(SECRET), "{e}");
        let k = read_key(
            &format!("{SECRET}\n"),
            Some("k"),
            Some(TsigAlgorithm::HmacSha384),
        )
        .unwrap();
        assert_eq!(k.algorithm, TsigAlgorithm::HmacSha384);
        assert!(read_key(SECRET, None, None).is_err());
        let e = read_key(
            "key \"k\" { algorithm hmac-sha256; secret \"%%not-base64%%\"; };",
            None,
            None,
        )
        .err()
        .unwrap();
        assert!(!e.contains("not-base64"), "{e}");
    }

    #[test]
    fn values_round_trip_through_hickory() {
        for (t, v) in [
            (RecordType::A, "192.0.2.1"),
            (RecordType::Aaaa, "2001:db8::1"),
            (RecordType::Cname, "target.ex.test."),
            (RecordType::Ns, "ns1.ex.test."),
            (RecordType::Txt, "\"a b\" \"say \\\"hi\\\"\" \"\\195\\169\""),
            (RecordType::Mx, "10 _mail.ex.test."),
            (RecordType::Srv, "0 5 5060 sip.ex.test."),
            (RecordType::Caa, "128 issue \"ca.example.net; account=1\""),
        ] {
            let canon = dnsplane_common::rdata::canonicalize(t, v).unwrap();
            let (t2, back) = from_rdata(&to_rdata(t, &canon).unwrap()).unwrap();
            assert_eq!(t2, t);
            assert_eq!(
                dnsplane_common::rdata::canonicalize(t, &back).unwrap(),
                canon,
                "{t} {v}"
            );
        }
    }

    #[test]
    fn update_carries_one_prerequisite_per_precondition() {
        let zone = Name::parse("ex.test").unwrap();
        let rr = |n: &str, t, v: &[&str]| {
            RRSet::new(
                RecordKey::new(zone.clone(), Name::parse(n).unwrap(), t),
                60,
                v,
            )
            .unwrap()
        };
        let a1 = rr("a.ex.test", RecordType::A, &["192.0.2.1", "192.0.2.2"]);
        let a2 = rr("a.ex.test", RecordType::A, &["192.0.2.3"]);
        let c = rr("c.ex.test", RecordType::Cname, &["a.ex.test."]);
        let t = rr("t.ex.test", RecordType::Txt, &["x"]);
        let ops = [
            RRSetOp::update(a1.clone(), a2.clone()),
            RRSetOp::create(c),
            RRSetOp::delete(t.clone()),
            RRSetOp {
                key: t.key.clone(),
                before: Some(t.clone()),
                after: Some(t),
            },
        ];
        let m = build_update(&zone, &ops).unwrap();
        let pre: Vec<(String, DNSClass, HRecordType)> = m
            .prerequisites()
            .iter()
            .map(|r| (r.name.to_ascii(), r.dns_class, r.record_type()))
            .collect();
        // a: value-dependent (2 RRs); c: absent + name unused; t: value-dependent twice.
        assert_eq!(
            pre.iter()
                .filter(|p| p.0 == "a.ex.test." && p.1 == DNSClass::IN)
                .count(),
            2
        );
        assert!(pre.contains(&("c.ex.test.".into(), DNSClass::NONE, HRecordType::CNAME)));
        assert!(pre.contains(&("c.ex.test.".into(), DNSClass::NONE, HRecordType::ANY)));
        assert_eq!(pre.iter().filter(|p| p.0 == "t.ex.test.").count(), 2);
        // Updates: delete a and t (ANY), then add a2 and c; the assert adds nothing.
        let upd: Vec<(String, DNSClass)> = m
            .updates()
            .iter()
            .map(|r| (r.name.to_ascii(), r.dns_class))
            .collect();
        assert_eq!(
            upd,
            vec![
                ("a.ex.test.".into(), DNSClass::ANY),
                ("t.ex.test.".into(), DNSClass::ANY),
                ("a.ex.test.".into(), DNSClass::IN),
                ("c.ex.test.".into(), DNSClass::IN),
            ]
        );
    }

    /// The batch limit keeps the worst common shape (creates of small records, each
    /// with its ownership TXT) inside one DNS message.
    #[test]
    fn a_full_batch_fits_one_message() {
        use dnsplane_common::{Change, ChangeKind};
        let zone = Name::parse("ex.test").unwrap();
        for (t, v) in [
            (RecordType::A, "192.0.2.1"),
            (RecordType::Cname, "a.example.net."),
            (RecordType::Txt, "\"x\""),
        ] {
            let (mut ops, mut approx, mut i) = (Vec::new(), 0, 0);
            loop {
                let name = Name::parse(&format!("h{i}.ex.test")).unwrap();
                let r =
                    RRSet::new(RecordKey::new(zone.clone(), name.clone(), t), 60, &[v]).unwrap();
                let mark = RRSet::new(
                    RecordKey::new(
                        zone.clone(),
                        name.prepend("_dnsplane-a").unwrap(),
                        RecordType::Txt,
                    ),
                    60,
                    &["\"heritage=dnsplane,dnsplane/owner=o\""],
                )
                .unwrap();
                let c = Change::new(
                    ChangeKind::Create,
                    vec![RRSetOp::create(r), RRSetOp::create(mark)],
                );
                if approx + c.approx_bytes() > MAX_BYTES_PER_BATCH {
                    break;
                }
                approx += c.approx_bytes();
                ops.extend(c.ops);
                i += 1;
            }
            let size = build_update(&zone, &ops).unwrap().to_vec().unwrap().len();
            assert!(
                size <= MAX_MESSAGE_BYTES,
                "{t}: {} ops, {size} bytes",
                ops.len()
            );
        }
    }

    #[test]
    fn classifies_response_codes() {
        assert_eq!(classify_rcode(ResponseCode::YXRRSet), ErrorClass::Conflict);
        assert_eq!(classify_rcode(ResponseCode::NXRRSet), ErrorClass::Conflict);
        assert_eq!(classify_rcode(ResponseCode::YXDomain), ErrorClass::Conflict);
        assert_eq!(classify_rcode(ResponseCode::NotAuth), ErrorClass::Permanent);
        assert_eq!(classify_rcode(ResponseCode::Refused), ErrorClass::Permanent);
        assert_eq!(classify_rcode(ResponseCode::FormErr), ErrorClass::Invalid);
        assert_eq!(
            classify_rcode(ResponseCode::ServFail),
            ErrorClass::Transient
        );
    }
}
