//! The PowerDNS HTTP API on the wire: its JSON documents, how its answers and
//! transport failures are classified, and which RRSet an error text blames.
use crate::provider::precondition::ZoneRead;
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::time::Duration;

/// Longest provider text kept in an error message.
const MAX_ERROR_TEXT: usize = 500;

/// One HTTP answer, body read.
pub(super) struct Answer {
    pub(super) what: String,
    pub(super) status: StatusCode,
    pub(super) retry_after: Option<Duration>,
    pub(super) body: Vec<u8>,
}

impl Answer {
    /// PowerDNS's own error text (`{"error": …}`), or the raw body.
    pub(super) fn text(&self) -> (String, bool) {
        #[derive(Deserialize)]
        struct ErrorBody {
            error: String,
        }
        match serde_json::from_slice::<ErrorBody>(&self.body) {
            Ok(b) => (b.error, true),
            Err(_) => {
                let raw = String::from_utf8_lossy(&self.body);
                let mut t: String = raw.trim().chars().take(MAX_ERROR_TEXT).collect();
                if t.is_empty() {
                    t = self
                        .status
                        .canonical_reason()
                        .unwrap_or("no body")
                        .to_string();
                }
                (t, false)
            }
        }
    }

    /// The one place where PowerDNS status codes get their class.
    pub(super) fn classify(&self, zone: Option<&Name>, write: bool) -> ProviderError {
        let (text, from_pdns) = self.text();
        let msg = format!("{} answered {}: {text}", self.what, self.status.as_u16());
        let key = zone.and_then(|z| blamed_key(z, &text));
        let class = match self.status.as_u16() {
            // A CNAME beside existing data: a fact about the zone, not about the value.
            422 if text.contains("Conflicts with pre-existing RRset") => ErrorClass::Conflict,
            400 | 422 => ErrorClass::Invalid,
            401 | 403 | 404 => ErrorClass::Permanent,
            409 | 412 => ErrorClass::Conflict,
            408 | 429 => ErrorClass::Transient,
            502..=504 if write => ErrorClass::Ambiguous,
            // PowerDNS runs a PATCH in one transaction and commits last: its own 500
            // (a JSON error body, e.g. "database is locked") means rolled back. A 5xx
            // without that body comes from something in between: unknown.
            500..=599 if write && !from_pdns => ErrorClass::Ambiguous,
            500..=599 => ErrorClass::Transient,
            _ => ErrorClass::Invalid,
        };
        let mut err = ProviderError::new(class, msg);
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            err = err.throttle();
        }
        if let Some(k) = key {
            err = err.with_key(k);
        }
        if let Some(d) = self.retry_after {
            err = err.with_retry_after(d);
        }
        err
    }
}

/// The RRSet a PowerDNS error text names: `RRset <name> IN <type>…` or
/// `Record <name>/<type> …`.
pub(super) fn blamed_key(zone: &Name, text: &str) -> Option<RecordKey> {
    let (name, rtype) = if let Some(i) = text.find("RRset ") {
        let mut it = text[i + 6..].split_whitespace();
        let name = it.next()?;
        (it.next() == Some("IN")).then_some(())?;
        (name, it.next()?.trim_end_matches(':'))
    } else if let Some(i) = text.find("Record ") {
        let first = text[i + 7..].split_whitespace().next()?;
        first.rsplit_once('/')?
    } else {
        return None;
    };
    let name = Name::parse(name).ok()?;
    let rtype = RecordType::parse(rtype.trim_end_matches(':')).ok()?;
    name.is_within(zone)
        .then(|| RecordKey::new(zone.clone(), name, rtype))
}

/// A zone as PowerDNS describes it (only the fields dnsplane reads).
#[derive(Deserialize)]
pub(super) struct ZoneInfo {
    pub(super) id: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) serial: u64,
    #[serde(default)]
    pub(super) soa_edit_api: String,
    #[serde(default)]
    pub(super) rrsets: Vec<PdnsRRSet>,
}

#[derive(Deserialize, Serialize)]
pub(super) struct PdnsRRSet {
    pub(super) name: String,
    #[serde(rename = "type")]
    pub(super) rtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ttl: Option<u32>,
    #[serde(default)]
    pub(super) records: Vec<PdnsRecord>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(super) changetype: Option<&'static str>,
}

#[derive(Deserialize, Serialize)]
pub(super) struct PdnsRecord {
    pub(super) content: String,
    #[serde(default)]
    pub(super) disabled: bool,
}

#[derive(Serialize)]
pub(super) struct Patch {
    pub(super) rrsets: Vec<PdnsRRSet>,
}

/// Adds one PowerDNS RRSet to `read` (only the names in `names`, when given).
pub(super) fn add_rrset(
    read: &mut ZoneRead,
    zone: &Name,
    rrset: PdnsRRSet,
    names: Option<&BTreeSet<Name>>,
) {
    let Ok(name) = Name::parse(&rrset.name) else {
        tracing::warn!(zone = %zone, record.name = %rrset.name, "Skipped an RRSet whose name dnsplane cannot represent.");
        return;
    };
    if names.is_some_and(|ns| !ns.contains(&name)) {
        return;
    }
    // SOA and everything dnsplane does not model (PTR, DNSKEY, ALIAS, …) are not
    // listed and never written.
    let Ok(rtype) = RecordType::parse(&rrset.rtype) else {
        return;
    };
    let values: Vec<&str> = rrset
        .records
        .iter()
        .filter(|r| !r.disabled)
        .map(|r| r.content.as_str())
        .collect();
    if values.is_empty() {
        return;
    }
    read.types.entry(name.clone()).or_default().insert(rtype);
    let key = RecordKey::new(zone.clone(), name, rtype);
    match RRSet::new(key.clone(), rrset.ttl.unwrap_or(0), &values) {
        Ok(r) => {
            read.rrsets.insert(key, r);
        }
        Err(e) => {
            tracing::warn!(zone = %zone, record.name = %key.name, record.type = %rtype, error = %e, "Skipped an RRSet dnsplane cannot represent.");
            read.opaque.insert(key);
        }
    }
}
