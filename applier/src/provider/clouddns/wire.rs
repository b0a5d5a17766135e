//! Cloud DNS's JSON on the wire: the Change dnsplane sends, the pages it reads, the
//! googleapis error body, and how an answer is classified — each failing entry of a
//! refused Change named by its index into the request's additions or deletions.
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{Name, RecordKey, RecordType};
use serde::{Deserialize, Serialize};

/// A managed zone is addressed by its name (`[a-z][-a-z0-9]*`, at most 63) or its
/// numeric id.
pub fn managed_zone_ref_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.is_empty() && b.iter().all(u8::is_ascii_digit) {
        return true;
    }
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-'
}

/// One ResourceRecordSet as sent.
#[derive(Debug, Serialize)]
pub struct OutRRSet<'a> {
    pub kind: &'static str,
    pub name: &'a str,
    #[serde(rename = "type")]
    pub rtype: &'a str,
    pub ttl: u32,
    pub rrdatas: Vec<&'a str>,
}

impl<'a> OutRRSet<'a> {
    pub fn new(key: &'a RecordKey, ttl: u32, rrdatas: Vec<&'a str>) -> Self {
        OutRRSet {
            kind: "dns#resourceRecordSet",
            name: key.name.as_str(),
            rtype: key.rtype.as_str(),
            ttl,
            rrdatas,
        }
    }
}

/// The body of `changes.create`.
#[derive(Debug, Serialize)]
pub struct OutChange<'a> {
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additions: Vec<OutRRSet<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deletions: Vec<OutRRSet<'a>>,
}

/// Which set each entry of a sent Change is about, to name the record an error's
/// `entity.change.additions[i]` points at.
#[derive(Debug, Default, Clone)]
pub struct Sent {
    pub additions: Vec<RecordKey>,
    pub deletions: Vec<RecordKey>,
}

/// One set as `rrsets.list` returns it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireRRSet {
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    #[serde(default)]
    pub ttl: Option<u32>,
    #[serde(default)]
    pub rrdatas: Vec<String>,
    /// Geo, weighted-round-robin and failover sets: not modelled.
    #[serde(default)]
    pub routing_policy: Option<serde::de::IgnoredAny>,
}

/// `rrsets.list`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RRSetsPage {
    #[serde(default)]
    pub rrsets: Vec<WireRRSet>,
    #[serde(default)]
    pub next_page_token: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedZone {
    pub name: String,
    pub dns_name: String,
    #[serde(default)]
    pub visibility: Option<String>,
}

/// `managedZones.list`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ZonesPage {
    #[serde(default)]
    pub managed_zones: Vec<ManagedZone>,
    #[serde(default)]
    pub next_page_token: Option<String>,
}

/// A Change as `changes.create`, `changes.get` and `changes.list` return it.
#[derive(Debug, Deserialize)]
pub struct ChangeAnswer {
    pub id: String,
    #[serde(default)]
    pub status: String,
}

/// `changes.list`'s answer.
#[derive(Debug, Deserialize)]
pub struct ChangesPage {
    #[serde(default)]
    pub changes: Vec<ChangeAnswer>,
}

/// One entry of a googleapis error's `errors[]`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
pub struct ErrorItem {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub reason: String,
}

/// An error answer: the googleapis JSON, or (an HTML page from Google's front end,
/// a proxy's text) the raw text as `message`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WireError {
    pub message: String,
    pub items: Vec<ErrorItem>,
}

impl WireError {
    pub fn has_reason(&self, reasons: &[&str]) -> bool {
        self.items
            .iter()
            .any(|i| reasons.contains(&i.reason.as_str()))
    }
}

/// Reads `{"error":{"code":…,"message":…,"errors":[…]}}`; anything else becomes the
/// raw text (an HTML page reduced to its text).
pub fn parse_error(body: &str) -> WireError {
    #[derive(Deserialize)]
    struct Outer {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        #[serde(default)]
        message: String,
        #[serde(default)]
        errors: Vec<ErrorItem>,
    }
    match serde_json::from_str::<Outer>(body) {
        Ok(o) => WireError {
            message: o.error.message,
            items: o.error.errors,
        },
        Err(_) => WireError {
            message: strip_html(body).chars().take(500).collect(),
            items: Vec::new(),
        },
    }
}

/// Text of an HTML page, tags dropped and whitespace collapsed.
fn strip_html(body: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether an error message carries the location of an entry of the Change
/// (`entity.change.additions[…]` / `deletions[…]`): Google puts an error's location
/// only in its text, so the wire layer reads it there, as [`entry_key`] does.
fn points_at_an_entry(text: &str) -> bool {
    ["entity.change.additions[", "entity.change.deletions["]
        .iter()
        .any(|marker| text.contains(marker))
}

/// The entry an error message points at: `'entity.change.additions[3]'` (also
/// inside `…additions[3].rrdata[0]`) by index into what was sent, or the newer
/// `'entity.change.additions[x.example.com.][CNAME]'` by name and type.
pub fn entry_key(text: &str, sent: &Sent, zone: Option<&Name>) -> Option<RecordKey> {
    for (list, keys) in [
        ("additions", &sent.additions),
        ("deletions", &sent.deletions),
    ] {
        let marker = format!("entity.change.{list}[");
        let Some(at) = text.find(&marker) else {
            continue;
        };
        let rest = &text[at + marker.len()..];
        let inner = &rest[..rest.find(']')?];
        if let Ok(i) = inner.parse::<usize>() {
            return keys.get(i).cloned();
        }
        let after = &rest[inner.len() + 1..];
        let rtype = after
            .strip_prefix('[')
            .and_then(|t| t.find(']').map(|e| &t[..e]))?;
        let name = Name::parse(inner).ok()?;
        let rtype = RecordType::parse(rtype).ok()?;
        let zone = zone?;
        return name
            .is_within(zone)
            .then(|| RecordKey::new(zone.clone(), name, rtype));
    }
    None
}

/// Whether an entry's failure is about what the zone holds (a conflict) rather than
/// about the request.
fn conflict_reason(item: &ErrorItem) -> bool {
    match item.reason.as_str() {
        "alreadyExists" | "conditionNotMet" | "cnameResourceRecordSetConflict" => true,
        // A deletion of a set that is not there; a missing managed zone is not this.
        "notFound" => points_at_an_entry(&item.message),
        _ => false,
    }
}

const RATE_LIMITED: &[&str] = &["rateLimitExceeded", "userRateLimitExceeded"];

/// The provider error for an answer with `status` and `body` to a request `what`;
/// `write` says whether it was `changes.create`, `sent` what it carried.
pub fn classify(
    status: u16,
    body: &str,
    what: &str,
    write: bool,
    sent: Option<&Sent>,
    zone: Option<&Name>,
) -> ProviderError {
    let err = parse_error(body);
    let detail = if err.items.len() > 1 {
        err.items
            .iter()
            .map(|i| i.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    } else {
        err.message.clone()
    };
    let reason = err.items.first().map(|i| i.reason.as_str()).unwrap_or("");
    let text = if reason.is_empty() {
        format!("{what} answered {status}: {detail}")
    } else {
        format!("{what} answered {status} {reason}: {detail}")
    };
    if status == 429 || err.has_reason(RATE_LIMITED) {
        // Refused before it was processed (Google documents 429 and 503 alike).
        return ProviderError::new(ErrorClass::Transient, text).throttle();
    }
    let (class, key) = match status {
        401 => (ErrorClass::Permanent, None),
        // The per-change limits: the request itself is too big.
        403 if err.has_reason(&["quotaExceeded"]) => (ErrorClass::Invalid, None),
        403 => (ErrorClass::Permanent, None),
        400 | 404 | 409 | 412 if write && !err.items.is_empty() => {
            let sent = sent.cloned().unwrap_or_default();
            // A conflict anywhere makes the change a conflict: the read-back settles the
            // conflicting entries and the rest is sent again (an invalid one is then
            // reported on its own).
            let first = err
                .items
                .iter()
                .find(|i| conflict_reason(i))
                .or(err.items.first());
            match first {
                Some(i) if conflict_reason(i) => {
                    (ErrorClass::Conflict, entry_key(&i.message, &sent, zone))
                }
                Some(i) if status == 404 => {
                    (ErrorClass::Permanent, entry_key(&i.message, &sent, zone))
                }
                Some(i) => (
                    ErrorClass::for_http_status(status),
                    entry_key(&i.message, &sent, zone),
                ),
                None => (ErrorClass::for_http_status(status), None),
            }
        }
        // 501: a method the server does not implement (the emulator's answer for what
        // it does not model): nothing was done, and asking again cannot help.
        404 | 501 => (ErrorClass::Permanent, None),
        // 503 is documented as "not processed, back off" for reads; a change that
        // got it may still have been committed by a backend that answered late.
        500..=599 if write => (ErrorClass::Ambiguous, None),
        500..=599 => (ErrorClass::Transient, None),
        s => (ErrorClass::for_http_status(s), None),
    };
    let mut e = ProviderError::new(class, text);
    if let Some(k) = key {
        e = e.with_key(k);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Name {
        Name::parse("example.com").unwrap()
    }

    fn key(label: &str, t: RecordType) -> RecordKey {
        RecordKey::new(zone(), zone().prepend(label).unwrap(), t)
    }

    fn body(code: u16, items: &[(&str, &str)]) -> String {
        let errors: Vec<serde_json::Value> = items
            .iter()
            .map(|(r, m)| serde_json::json!({"message": m, "domain": "global", "reason": r}))
            .collect();
        serde_json::json!({"error": {"code": code, "message": items[0].1, "errors": errors}})
            .to_string()
    }

    fn sent() -> Sent {
        Sent {
            additions: vec![key("a0", RecordType::A), key("a1", RecordType::Txt)],
            deletions: vec![key("d0", RecordType::A), key("d1", RecordType::Cname)],
        }
    }

    #[test]
    fn every_answer_falls_into_its_class() {
        use ErrorClass::*;
        let s = sent();
        let c = |status: u16, b: &str, write: bool| {
            let e = classify(status, b, "POST x", write, Some(&s), Some(&zone()));
            (
                e.class,
                e.key.map(|k| format!("{} {}", k.name, k.rtype)),
                e.throttled,
            )
        };
        let k = |l: &str, t: &str| Some(format!("{l}.example.com. {t}"));
        for (status, b, write, want) in [
            (
                409,
                body(
                    409,
                    &[(
                        "alreadyExists",
                        "The resource 'entity.change.additions[1]' named 'a1.example.com. (TXT)' already exists",
                    )],
                ),
                true,
                (Conflict, k("a1", "TXT"), false),
            ),
            (
                412,
                body(
                    412,
                    &[(
                        "conditionNotMet",
                        "Precondition not met for 'entity.change.deletions[0]'",
                    )],
                ),
                true,
                (Conflict, k("d0", "A"), false),
            ),
            (
                404,
                body(
                    404,
                    &[(
                        "notFound",
                        "The 'entity.change.deletions[1]' resource named 'd1.example.com. (CNAME)' does not exist.",
                    )],
                ),
                true,
                (Conflict, k("d1", "CNAME"), false),
            ),
            (
                400,
                body(
                    400,
                    &[(
                        "cnameResourceRecordSetConflict",
                        "The resource record set 'entity.change.additions[0]' is invalid because the DNS name may have either one CNAME resource record set or resource record sets of other types, but not both.",
                    )],
                ),
                true,
                (Conflict, k("a0", "A"), false),
            ),
            (
                400,
                body(
                    400,
                    &[(
                        "cnameResourceRecordSetConflict",
                        "The resource record set 'entity.change.additions[a0.example.com.][A]' is invalid because the DNS name 'a0.example.com.' has a resource record set of the type 'CNAME'.",
                    )],
                ),
                true,
                (Conflict, k("a0", "A"), false),
            ),
            (
                400,
                body(
                    400,
                    &[(
                        "invalid",
                        "Invalid value for 'entity.change.additions[1].rrdata[0]': 'x'",
                    )],
                ),
                true,
                (Invalid, k("a1", "TXT"), false),
            ),
            // An invalid entry beside a conflict: the conflict decides.
            (
                412,
                body(
                    412,
                    &[
                        (
                            "invalid",
                            "Invalid value for 'entity.change.additions[0].name': 'x'",
                        ),
                        (
                            "conditionNotMet",
                            "Precondition not met for 'entity.change.deletions[1]'",
                        ),
                    ],
                ),
                true,
                (Conflict, k("d1", "CNAME"), false),
            ),
            (
                403,
                body(
                    403,
                    &[(
                        "quotaExceeded",
                        "The change would exceed quota for additions per change.",
                    )],
                ),
                true,
                (Invalid, None, false),
            ),
            (
                403,
                body(403, &[("forbidden", "Forbidden")]),
                true,
                (Permanent, None, false),
            ),
            (
                401,
                body(401, &[("authError", "Invalid Credentials")]),
                false,
                (Permanent, None, false),
            ),
            (
                404,
                body(
                    404,
                    &[(
                        "notFound",
                        "The 'parameters.managedZone' resource named 'z' does not exist.",
                    )],
                ),
                true,
                (Permanent, None, false),
            ),
            (
                404,
                body(
                    404,
                    &[(
                        "notFound",
                        "The 'parameters.managedZone' resource named 'z' does not exist.",
                    )],
                ),
                false,
                (Permanent, None, false),
            ),
            (
                429,
                body(429, &[("rateLimitExceeded", "Quota exceeded")]),
                true,
                (Transient, None, true),
            ),
            (
                503,
                body(503, &[("rateLimitExceeded", "Quota exceeded")]),
                true,
                (Transient, None, true),
            ),
            (
                503,
                body(
                    503,
                    &[("backendError", "The service is currently unavailable.")],
                ),
                true,
                (Ambiguous, None, false),
            ),
            (
                503,
                body(
                    503,
                    &[("backendError", "The service is currently unavailable.")],
                ),
                false,
                (Transient, None, false),
            ),
            (
                502,
                "<html><p>Please try again in 30 seconds.</html>".to_string(),
                true,
                (Ambiguous, None, false),
            ),
            // A method the server does not implement: nothing was done, and asking
            // again cannot help (the emulator answers it for what it does not model).
            (
                501,
                body(
                    501,
                    &[(
                        "notImplemented",
                        "The Cloud DNS emulator does not implement dns.resourceRecordSets.get",
                    )],
                ),
                true,
                (Permanent, None, false),
            ),
            (
                502,
                "<html>x</html>".to_string(),
                false,
                (Transient, None, false),
            ),
            (
                500,
                body(500, &[("backendError", "Internal error encountered.")]),
                true,
                (Ambiguous, None, false),
            ),
            (
                504,
                "gateway timeout".to_string(),
                true,
                (Ambiguous, None, false),
            ),
        ] {
            assert_eq!(c(status, &b, write), want, "{status} {b}");
        }
        let e = classify(
            502,
            "<html><p>Please try again in 30 seconds. <ins>x</ins></html>",
            "POST x",
            true,
            None,
            None,
        );
        let text = &e.message;
        assert!(text.contains("Please try again in 30 seconds."), "{text}");
    }

    #[test]
    fn a_change_serialises_as_google_reads_it() {
        let k = key("www", RecordType::A);
        let c = OutChange {
            kind: "dns#change",
            additions: vec![OutRRSet::new(&k, 300, vec!["192.0.2.1"])],
            deletions: Vec::new(),
        };
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"kind":"dns#change","additions":[{"kind":"dns#resourceRecordSet","name":"www.example.com.","type":"A","ttl":300,"rrdatas":["192.0.2.1"]}]}"#
        );
        assert!(managed_zone_ref_ok("example-com") && managed_zone_ref_ok("1234"));
        assert!(
            !managed_zone_ref_ok("Example")
                && !managed_zone_ref_ok("a/b")
                && !managed_zone_ref_ok("")
        );
    }
}
