//! Azure DNS's ARM JSON ⇄ dnsplane RRSets, and the classification of its answers.
//!
//! A record set is one ARM resource: `{"name":"www","type":"Microsoft.Network/dnsZones/A",
//! "etag":"…","properties":{"TTL":300,"ARecords":[{"ipv4Address":"192.0.2.1"}]}}`.
//! Public zones (api-version 2018-05-01) and Private DNS zones (2020-06-01) spell the
//! properties differently (`TTL`/`ttl`, `ARecords`/`aRecords`, `caaRecords`), and
//! Private DNS has no NS or CAA sets ([`Flavor`]).
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::rdata::RData;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Records one record set may hold ("Records per record set", Azure DNS limits).
pub const MAX_RECORDS: usize = 20;
/// Records one TXT record set may hold (Azure DNS limits: 400 for TXT).
pub const MAX_TXT_RECORDS: usize = 400;

/// Public or Private DNS: paths, api-version and JSON spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Public,
    Private,
}

impl Flavor {
    pub fn api_version(self) -> &'static str {
        match self {
            Flavor::Public => "2018-05-01",
            Flavor::Private => "2020-06-01",
        }
    }

    /// The zones' resource type, a path segment.
    pub fn zones_segment(self) -> &'static str {
        match self {
            Flavor::Public => "dnsZones",
            Flavor::Private => "privateDnsZones",
        }
    }

    /// The path segment listing every record set of a zone.
    pub fn list_segment(self) -> &'static str {
        match self {
            Flavor::Public => "recordsets",
            Flavor::Private => "ALL",
        }
    }

    fn ttl_key(self) -> &'static str {
        match self {
            Flavor::Public => "TTL",
            Flavor::Private => "ttl",
        }
    }

    /// The record types dnsplane writes in this flavor (SOA is Azure's own).
    pub fn types(self) -> &'static [RecordType] {
        use RecordType::*;
        match self {
            Flavor::Public => &[A, Aaaa, Caa, Cname, Mx, Ns, Ptr, Srv, Txt],
            Flavor::Private => &[A, Aaaa, Cname, Mx, Ptr, Srv, Txt],
        }
    }

    /// The property holding `t`'s records, and whether it is one object (CNAME)
    /// rather than a list.
    fn field(self, t: RecordType) -> Option<(&'static str, bool)> {
        use RecordType::*;
        if !self.types().contains(&t) {
            return None;
        }
        Some(match (self, t) {
            (Flavor::Public, A) => ("ARecords", false),
            (Flavor::Public, Aaaa) => ("AAAARecords", false),
            (Flavor::Public, Mx) => ("MXRecords", false),
            (Flavor::Public, Ns) => ("NSRecords", false),
            (Flavor::Public, Ptr) => ("PTRRecords", false),
            (Flavor::Public, Srv) => ("SRVRecords", false),
            (Flavor::Public, Txt) => ("TXTRecords", false),
            (Flavor::Public, Cname) => ("CNAMERecord", true),
            (Flavor::Public, Caa) => ("caaRecords", false),
            (Flavor::Private, A) => ("aRecords", false),
            (Flavor::Private, Aaaa) => ("aaaaRecords", false),
            (Flavor::Private, Mx) => ("mxRecords", false),
            (Flavor::Private, Ptr) => ("ptrRecords", false),
            (Flavor::Private, Srv) => ("srvRecords", false),
            (Flavor::Private, Txt) => ("txtRecords", false),
            (Flavor::Private, Cname) => ("cnameRecord", true),
            _ => return None,
        })
    }
}

/// The record type's path segment (`A`, `AAAA`, `CNAME`, …).
pub fn type_segment(t: RecordType) -> &'static str {
    t.as_str()
}

/// `name` relative to `zone` as Azure names record sets: `@` for the apex.
pub fn relative_name(zone: &Name, name: &Name) -> String {
    let (z, n) = (zone.as_str(), name.as_str());
    if n.eq_ignore_ascii_case(z) {
        return "@".into();
    }
    let z = z.trim_end_matches('.');
    let n = n.trim_end_matches('.');
    n.strip_suffix(z)
        .and_then(|r| r.strip_suffix('.'))
        .unwrap_or(n)
        .to_string()
}

/// A record set as ARM sends it.
#[derive(Clone, Debug, Deserialize)]
pub struct WireSet {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub etag: Option<String>,
    #[serde(default)]
    pub properties: Map<String, Value>,
}

/// A page of a listing: `{"value":[…],"nextLink":"…"}`.
#[derive(Debug, Deserialize)]
pub struct Page<T> {
    #[serde(default = "Vec::new")]
    pub value: Vec<T>,
    #[serde(default, rename = "nextLink")]
    pub next_link: Option<String>,
}

/// A zone in a listing of zones.
#[derive(Debug, Deserialize)]
pub struct WireZone {
    pub name: String,
}

/// What a record set read is for dnsplane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Set(RRSet),
    /// Present but not modelled (an alias to an Azure resource, an empty set, a value
    /// dnsplane cannot read): never overwritten, never taken for absent.
    Opaque(RecordKey),
    /// Not dnsplane's to manage (the zone's SOA, a type it does not know).
    Skip,
}

/// One record set read: what it is, its etag and its metadata (kept on rewrite).
#[derive(Clone, Debug, PartialEq)]
pub struct ReadSet {
    pub parsed: Parsed,
    pub etag: Option<String>,
    pub metadata: Option<Value>,
}

/// The record type of a resource type `Microsoft.Network/dnsZones/A`.
fn record_type(kind: &str) -> Option<RecordType> {
    let last = kind.rsplit('/').next()?;
    RecordType::parse(last).ok()
}

/// A record set read from Azure.
pub fn from_wire(flavor: Flavor, zone: &Name, w: &WireSet) -> ReadSet {
    let metadata = w
        .properties
        .get("metadata")
        .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let etag = w.etag.clone();
    let skip = ReadSet {
        parsed: Parsed::Skip,
        etag: etag.clone(),
        metadata: metadata.clone(),
    };
    let Some(rtype) = record_type(&w.kind) else {
        return skip;
    };
    let name = if w.name == "@" {
        Some(zone.clone())
    } else {
        Name::parse(&format!("{}.{}", w.name, zone.as_str())).ok()
    };
    let Some(name) = name else {
        return skip;
    };
    let key = RecordKey::new(zone.clone(), name, rtype);
    let parsed = match read_values(flavor, rtype, &w.properties) {
        _ if has_target_resource(&w.properties) => Parsed::Opaque(key),
        Some(values) if !values.is_empty() => {
            let ttl = w
                .properties
                .get(flavor.ttl_key())
                .and_then(Value::as_u64)
                .and_then(|t| u32::try_from(t).ok());
            match ttl.and_then(|ttl| RRSet::new(key.clone(), ttl, &values).ok()) {
                Some(set) => Parsed::Set(set),
                None => Parsed::Opaque(key),
            }
        }
        _ => Parsed::Opaque(key),
    };
    ReadSet {
        parsed,
        etag,
        metadata,
    }
}

/// An alias record set (`targetResource.id` set): its values are Azure's, not data.
fn has_target_resource(props: &Map<String, Value>) -> bool {
    props
        .get("targetResource")
        .and_then(|t| t.get("id"))
        .and_then(Value::as_str)
        .is_some_and(|id| !id.is_empty())
}

/// The values of `rtype` in presentation form; `None` when they cannot be read.
fn read_values(
    flavor: Flavor,
    rtype: RecordType,
    props: &Map<String, Value>,
) -> Option<Vec<String>> {
    let (field, single) = flavor.field(rtype)?;
    let items: Vec<&Value> = match props.get(field) {
        None | Some(Value::Null) => Vec::new(),
        Some(v) if single => vec![v],
        Some(Value::Array(a)) => a.iter().collect(),
        Some(_) => return None,
    };
    items.into_iter().map(|i| read_value(rtype, i)).collect()
}

fn read_value(rtype: RecordType, v: &Value) -> Option<String> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let n = |k: &str| v.get(k).and_then(Value::as_u64);
    let host = |k: &str| {
        s(k).and_then(|h| Name::parse(&h).ok())
            .map(|h| h.to_string())
    };
    Some(match rtype {
        RecordType::A => s("ipv4Address")?,
        RecordType::Aaaa => s("ipv6Address")?,
        RecordType::Cname => host("cname")?,
        RecordType::Ns => host("nsdname")?,
        RecordType::Ptr => host("ptrdname")?,
        RecordType::Mx => format!("{} {}", n("preference")?, host("exchange")?),
        RecordType::Srv => format!(
            "{} {} {} {}",
            n("priority")?,
            n("weight")?,
            n("port")?,
            host("target")?
        ),
        RecordType::Txt => {
            let strings = v.get("value")?.as_array()?;
            let strings: Option<Vec<Vec<u8>>> = strings
                .iter()
                .map(|s| s.as_str().map(|s| s.as_bytes().to_vec()))
                .collect();
            RData::Txt(strings?).to_string()
        }
        RecordType::Caa => RData::Caa {
            flags: u8::try_from(n("flags")?).ok()?,
            tag: s("tag")?,
            value: s("value")?.into_bytes(),
        }
        .to_string(),
        _ => return None,
    })
}

/// Why `set` cannot be written to this flavor, before any request: a type it has no
/// record sets of, more records than one set may hold, a value Azure cannot carry.
pub fn refusal(flavor: Flavor, set: &RRSet) -> Option<String> {
    let key = &set.key;
    let kind = match flavor {
        Flavor::Public => "Azure DNS",
        Flavor::Private => "Azure Private DNS",
    };
    if flavor.field(key.rtype).is_none() {
        return Some(format!(
            "{kind} has no {} record sets: cannot write {key}",
            key.rtype
        ));
    }
    let max = if key.rtype == RecordType::Txt {
        MAX_TXT_RECORDS
    } else {
        MAX_RECORDS
    };
    let n = set.values().count();
    if n > max {
        return Some(format!(
            "{key} has {n} records; {kind} allows at most {max} in one {} record set",
            key.rtype
        ));
    }
    to_body(flavor, set, None).err()
}

/// The PUT body of `set` (with the `metadata` the set had, kept).
pub fn to_body(flavor: Flavor, set: &RRSet, metadata: Option<&Value>) -> Result<Value, String> {
    let key = &set.key;
    let (field, single) = flavor
        .field(key.rtype)
        .ok_or_else(|| format!("{} record sets are not supported: {key}", key.rtype))?;
    let mut items = Vec::new();
    for v in set.values() {
        let data = RData::parse(key.rtype, v).map_err(|e| format!("{key}: {e}"))?;
        items.push(item(&data).map_err(|why| format!("{key}: value {v:?} {why}"))?);
    }
    let mut props = Map::new();
    props.insert(flavor.ttl_key().into(), json!(set.ttl));
    if let Some(m) = metadata {
        props.insert("metadata".into(), m.clone());
    }
    let records = if single {
        items.into_iter().next().unwrap_or(Value::Null)
    } else {
        Value::Array(items)
    };
    props.insert(field.into(), records);
    Ok(json!({ "properties": props }))
}

fn utf8(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| "holds bytes that are not UTF-8, which Azure's JSON cannot carry".into())
}

fn item(data: &RData) -> Result<Value, String> {
    Ok(match data {
        RData::A(ip) => json!({ "ipv4Address": ip.to_string() }),
        RData::Aaaa(ip) => json!({ "ipv6Address": ip.to_string() }),
        RData::Cname(n) => json!({ "cname": n.to_string() }),
        RData::Ns(n) => json!({ "nsdname": n.to_string() }),
        RData::Ptr(n) => json!({ "ptrdname": n.to_string() }),
        RData::Mx {
            preference,
            exchange,
        } => json!({ "preference": preference, "exchange": exchange.to_string() }),
        RData::Srv {
            priority,
            weight,
            port,
            target,
        } => {
            json!({ "priority": priority, "weight": weight, "port": port, "target": target.to_string() })
        }
        RData::Txt(strings) => {
            let strings: Result<Vec<String>, String> = strings.iter().map(|s| utf8(s)).collect();
            json!({ "value": strings? })
        }
        RData::Caa { flags, tag, value } => {
            json!({ "flags": flags, "tag": tag, "value": utf8(value)? })
        }
        _ => return Err("is of a type Azure DNS does not hold".into()),
    })
}

/// ARM's error body: `{"error":{"code":"…","message":"…"}}` (some services put the
/// two at the top level).
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorDetail>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// The ARM error code and message of an error answer (empty when it has none).
pub fn error_code(body: &[u8]) -> (String, String) {
    let b: ErrorBody = serde_json::from_slice(body).unwrap_or_default();
    let (code, message) = match b.error {
        Some(d) => (d.code, d.message),
        None => (b.code, b.message),
    };
    let message = message.unwrap_or_else(|| {
        String::from_utf8_lossy(body)
            .trim()
            .chars()
            .take(300)
            .collect()
    });
    (code.unwrap_or_default(), message)
}

/// A 404 that says the zone (or its resource group, or the subscription) is missing,
/// not the record set.
pub fn zone_missing(body: &[u8]) -> bool {
    let (code, _) = error_code(body);
    matches!(
        code.as_str(),
        "ParentResourceNotFound" | "ResourceGroupNotFound" | "SubscriptionNotFound"
    )
}

/// An error answer, classified: 429 throttled (transient, with its `Retry-After`),
/// 401/403 permanent (a credential or role Azure refuses), 412/409 conflict, other
/// 4xx invalid, 5xx ambiguous for a write. The message carries the ARM code.
pub fn classify(
    status: u16,
    body: &[u8],
    retry_after: Option<Duration>,
    what: &str,
    write: bool,
    key: Option<&RecordKey>,
) -> ProviderError {
    let (code, message) = error_code(body);
    let code = if code.is_empty() {
        String::new()
    } else {
        format!(" {code}")
    };
    let mut e = ProviderError::from_http_status(
        status,
        format!("{what}: Azure answered {status}{code}: {message}"),
    );
    if !write && e.class == ErrorClass::Ambiguous {
        e.class = ErrorClass::Transient;
    }
    if let Some(r) = retry_after {
        e = e.with_retry_after(r);
    }
    match key {
        Some(k) => e.with_key(k.clone()),
        None => e,
    }
}
