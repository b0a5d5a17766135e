//! Route 53's REST-XML on the wire: the documents dnsplane sends and reads, its error
//! bodies (the standard `ErrorResponse` and the legacy `InvalidChangeBatch`), and how
//! an `InvalidChangeBatch` message is split into one verdict per failing change.
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{Name, RecordKey, RecordType, SetId};
use quick_xml::escape::escape;
use serde::Deserialize;

/// The API's XML namespace.
pub const XMLNS: &str = "https://route53.amazonaws.com/doc/2013-04-01/";

/// The bare id of a hosted zone (`Z…`), from `Z…` or `/hostedzone/Z…`.
pub fn bare_zone_id(id: &str) -> Option<&str> {
    let id = id.trim();
    let id = id.strip_prefix("/hostedzone/").unwrap_or(id);
    (!id.is_empty() && id.len() <= 32 && id.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then_some(id)
}

/// A name as Route 53 returns it (lower-case, a trailing dot, and `\ooo` octal escapes
/// for anything but letters, digits, `-` and `_`, e.g. `\052` for `*`) in dnsplane's
/// spelling.
pub fn decode_name(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One `Change` of a `ChangeBatch`. `UPSERT` writes whatever is there, and every
/// dnsplane op has a precondition, which `DELETE` (exact) then `CREATE` enforces; it is
/// sent only after the `DELETE` of its own set, to servers that check a batch's CREATEs
/// before the batch (`super::upsert`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Create,
    Delete,
    Upsert,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Create => "CREATE",
            Action::Delete => "DELETE",
            Action::Upsert => "UPSERT",
        }
    }
}

/// A record set as Route 53 holds it, but for its name and type: a set's routing
/// policy and either a TTL with values or an alias target. What a DELETE must repeat
/// exactly, and what a CREATE writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetBody {
    pub set_identifier: Option<String>,
    pub weight: Option<String>,
    pub region: Option<String>,
    pub geo: Option<Geo>,
    pub failover: Option<String>,
    pub multi_value_answer: Option<bool>,
    /// `None` for an alias.
    pub ttl: Option<u32>,
    /// Empty for an alias.
    pub values: Vec<String>,
    pub alias: Option<AliasTarget>,
    pub health_check_id: Option<String>,
}

/// `GeoLocation`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Geo {
    pub continent: Option<String>,
    pub country: Option<String>,
    pub subdivision: Option<String>,
}

/// `AliasTarget`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AliasTarget {
    pub hosted_zone_id: String,
    pub dns_name: String,
    pub evaluate_target_health: bool,
}

/// One `Change` as sent.
#[derive(Debug)]
pub struct OutChange<'a> {
    pub action: Action,
    pub key: &'a RecordKey,
    pub body: SetBody,
}

/// The body of `ChangeResourceRecordSets`; elements in the schema's order (AWS
/// validates the sequence).
pub fn change_batch(comment: &str, changes: &[OutChange<'_>]) -> String {
    let mut x = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><ChangeResourceRecordSetsRequest xmlns="{XMLNS}"><ChangeBatch><Comment>{}</Comment><Changes>"#,
        escape(comment)
    );
    let text = |x: &mut String, tag: &str, value: Option<&str>| {
        if let Some(v) = value {
            x.push_str(&format!("<{tag}>{}</{tag}>", escape(v)));
        }
    };
    for c in changes {
        let b = &c.body;
        x.push_str("<Change><Action>");
        x.push_str(c.action.as_str());
        x.push_str("</Action><ResourceRecordSet>");
        text(&mut x, "Name", Some(c.key.name.as_str()));
        text(&mut x, "Type", Some(c.key.rtype.as_str()));
        text(&mut x, "SetIdentifier", b.set_identifier.as_deref());
        text(&mut x, "Weight", b.weight.as_deref());
        text(&mut x, "Region", b.region.as_deref());
        if let Some(g) = &b.geo {
            x.push_str("<GeoLocation>");
            text(&mut x, "ContinentCode", g.continent.as_deref());
            text(&mut x, "CountryCode", g.country.as_deref());
            text(&mut x, "SubdivisionCode", g.subdivision.as_deref());
            x.push_str("</GeoLocation>");
        }
        text(&mut x, "Failover", b.failover.as_deref());
        let multi = b
            .multi_value_answer
            .map(|m| if m { "true" } else { "false" });
        text(&mut x, "MultiValueAnswer", multi);
        text(&mut x, "TTL", b.ttl.map(|t| t.to_string()).as_deref());
        if !b.values.is_empty() {
            x.push_str("<ResourceRecords>");
            for v in &b.values {
                x.push_str("<ResourceRecord><Value>");
                x.push_str(&escape(v.as_str()));
                x.push_str("</Value></ResourceRecord>");
            }
            x.push_str("</ResourceRecords>");
        }
        if let Some(a) = &b.alias {
            x.push_str("<AliasTarget>");
            text(&mut x, "HostedZoneId", Some(&a.hosted_zone_id));
            text(&mut x, "DNSName", Some(&a.dns_name));
            let evaluate = if a.evaluate_target_health {
                "true"
            } else {
                "false"
            };
            text(&mut x, "EvaluateTargetHealth", Some(evaluate));
            x.push_str("</AliasTarget>");
        }
        text(&mut x, "HealthCheckId", b.health_check_id.as_deref());
        x.push_str("</ResourceRecordSet></Change>");
    }
    x.push_str("</Changes></ChangeBatch></ChangeResourceRecordSetsRequest>");
    x
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostedZone {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub config: Option<HostedZoneConfig>,
}

impl HostedZone {
    pub fn private(&self) -> bool {
        self.config.as_ref().is_some_and(|c| c.private_zone)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostedZoneConfig {
    #[serde(default)]
    pub private_zone: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostedZones {
    #[serde(default)]
    pub hosted_zone: Vec<HostedZone>,
}

/// `ListHostedZonesByName`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ZonesPage {
    #[serde(default)]
    pub hosted_zones: HostedZones,
    #[serde(default)]
    pub is_truncated: bool,
    #[serde(rename = "NextDNSName", default)]
    pub next_dns_name: Option<String>,
    #[serde(default)]
    pub next_hosted_zone_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ResourceRecord {
    pub value: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ResourceRecords {
    #[serde(default)]
    pub resource_record: Vec<ResourceRecord>,
}

/// One set as `ListResourceRecordSets` returns it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireRRSet {
    pub name: String,
    #[serde(rename = "Type")]
    pub rtype: String,
    #[serde(default)]
    pub set_identifier: Option<String>,
    #[serde(default)]
    pub weight: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub geo_location: Option<WireGeo>,
    #[serde(default)]
    pub failover: Option<String>,
    #[serde(default)]
    pub multi_value_answer: Option<String>,
    #[serde(rename = "TTL", default)]
    pub ttl: Option<u32>,
    #[serde(default)]
    pub resource_records: ResourceRecords,
    #[serde(default)]
    pub alias_target: Option<WireAlias>,
    #[serde(default)]
    pub health_check_id: Option<String>,
    /// Routing dnsplane does not model: such a set is left alone.
    #[serde(default)]
    pub traffic_policy_instance_id: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub cidr_routing_config: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub geo_proximity_location: Option<serde::de::IgnoredAny>,
}

impl WireRRSet {
    /// Routing that dnsplane does not model (CIDR, geoproximity, traffic policies).
    pub fn unmodelled_routing(&self) -> Option<&'static str> {
        if self.cidr_routing_config.is_some() {
            Some("CidrRoutingConfig")
        } else if self.geo_proximity_location.is_some() {
            Some("GeoProximityLocation")
        } else if self.traffic_policy_instance_id.is_some() {
            Some("TrafficPolicyInstanceId")
        } else {
            None
        }
    }

    /// The set's content, as Route 53 spelled it.
    pub fn body(self) -> SetBody {
        let flag = |v: &str| v.trim().eq_ignore_ascii_case("true");
        SetBody {
            set_identifier: self.set_identifier,
            weight: self.weight,
            region: self.region,
            geo: self.geo_location.map(|g| Geo {
                continent: g.continent_code,
                country: g.country_code,
                subdivision: g.subdivision_code,
            }),
            failover: self.failover,
            multi_value_answer: self.multi_value_answer.as_deref().map(flag),
            ttl: self.ttl,
            values: self
                .resource_records
                .resource_record
                .into_iter()
                .map(|r| r.value)
                .collect(),
            alias: self.alias_target.map(|a| AliasTarget {
                hosted_zone_id: a.hosted_zone_id,
                dns_name: a.dns_name,
                evaluate_target_health: flag(&a.evaluate_target_health),
            }),
            health_check_id: self.health_check_id,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireGeo {
    #[serde(default)]
    pub continent_code: Option<String>,
    #[serde(default)]
    pub country_code: Option<String>,
    #[serde(default)]
    pub subdivision_code: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireAlias {
    pub hosted_zone_id: String,
    #[serde(rename = "DNSName")]
    pub dns_name: String,
    #[serde(default)]
    pub evaluate_target_health: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireRRSets {
    #[serde(default)]
    pub resource_record_set: Vec<WireRRSet>,
}

/// `ListResourceRecordSets`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RRSetsPage {
    #[serde(default)]
    pub resource_record_sets: WireRRSets,
    #[serde(default)]
    pub is_truncated: bool,
    #[serde(default)]
    pub next_record_name: Option<String>,
    #[serde(default)]
    pub next_record_type: Option<String>,
    #[serde(default)]
    pub next_record_identifier: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChangeInfo {
    pub id: String,
    pub status: String,
}

/// `ChangeResourceRecordSets`'s and `GetChange`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChangeAnswer {
    pub change_info: ChangeInfo,
}

/// An error answer, whichever of the two forms it came in.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WireError {
    pub code: String,
    pub message: String,
    /// The legacy form's separate messages.
    pub messages: Vec<String>,
}

/// Reads `<ErrorResponse><Error><Code/><Message/>…` or the legacy
/// `<InvalidChangeBatch><Messages><Message/>…`; anything else becomes the raw text.
pub fn parse_error(body: &str) -> WireError {
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct ErrorResponse {
        error: Inner,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Inner {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Legacy {
        messages: LegacyMessages,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct LegacyMessages {
        #[serde(default)]
        message: Vec<String>,
    }
    if body.contains("<InvalidChangeBatch")
        && let Ok(l) = quick_xml::de::from_str::<Legacy>(body)
    {
        return WireError {
            code: "InvalidChangeBatch".into(),
            message: l.messages.message.join(", "),
            messages: l.messages.message,
        };
    }
    match quick_xml::de::from_str::<ErrorResponse>(body) {
        Ok(e) => WireError {
            code: e.error.code,
            message: e.error.message,
            messages: Vec::new(),
        },
        Err(_) => WireError {
            code: String::new(),
            message: body.trim().chars().take(500).collect(),
            messages: Vec::new(),
        },
    }
}

/// One failing change of an `InvalidChangeBatch`: what kind of failure, and the set it
/// names (when it names one).
#[derive(Debug, PartialEq, Eq)]
pub struct Failure {
    pub class: ErrorClass,
    pub key: Option<RecordKey>,
    pub text: String,
}

/// Splits an `InvalidChangeBatch` message into its failures. AWS joins them as
/// `[msg1, msg2]`; each message names its set as `[name='x.', type='A']` or
/// `RRSet of type A with DNS name x.` or `resource record set 'TXT x.'`.
pub fn failures(zone: &Name, err: &WireError) -> Vec<Failure> {
    let messages: Vec<String> = if err.messages.is_empty() {
        split_messages(&err.message)
    } else {
        err.messages.clone()
    };
    messages
        .into_iter()
        .map(|text| Failure {
            class: failure_class(&text),
            key: named_key(zone, &text),
            text,
        })
        .collect()
}

/// `[a, b]` → `a`, `b`. The messages themselves contain `[name='…', type='…']` and
/// commas inside them, so split only at `, ` that starts a new message.
fn split_messages(message: &str) -> Vec<String> {
    let m = message.trim();
    let inner = m
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .filter(|_| {
            m.starts_with("[Tried")
                || m.starts_with("[RRSet")
                || m.starts_with("[The ")
                || m.starts_with("[Invalid")
        })
        .unwrap_or(m);
    let starts = [
        "Tried to ",
        "RRSet ",
        "The request contains",
        "Invalid Resource Record",
        "FATAL problem",
    ];
    let mut out: Vec<String> = Vec::new();
    let mut rest = inner;
    loop {
        let cut = rest
            .match_indices(", ")
            .map(|(i, _)| i)
            .find(|&i| starts.iter().any(|s| rest[i + 2..].starts_with(s)));
        match cut {
            Some(i) => {
                out.push(rest[..i].to_string());
                rest = &rest[i + 2..];
            }
            None => {
                out.push(rest.to_string());
                break;
            }
        }
    }
    out
}

/// Conflict when the message is about what the zone holds; invalid when it is about
/// the request itself.
fn failure_class(text: &str) -> ErrorClass {
    let conflict = text.contains("but it already exists")
        || text.contains("but it was not found")
        || text.contains("do not match the current values")
        || text.contains("is not permitted because a conflicting RRSet")
        || text.contains("is not permitted as it conflicts with other records")
        // A plain set beside routing-policy sets of one name and type, or sets of
        // two policies.
        || text.contains("cannot be created as other RRSets exist")
        || (text.contains("cannot be created as a non-") && text.contains("set exists"));
    if conflict {
        ErrorClass::Conflict
    } else {
        ErrorClass::Invalid
    }
}

/// The set a message names, if it is in `zone`.
fn named_key(zone: &Name, text: &str) -> Option<RecordKey> {
    let mut set = None;
    let (name, rtype) = if let Some(i) = text.find("[name='") {
        let rest = &text[i + 7..];
        let name = &rest[..rest.find('\'')?];
        let t = rest.find("type='")?;
        let trest = &rest[t + 6..];
        let inside = &rest[..rest.find(']').unwrap_or(rest.len())];
        if let Some(s) = inside.find("set-identifier='") {
            let srest = &inside[s + 16..];
            set = Some(srest[..srest.find('\'')?].to_string());
        }
        (name.to_string(), trest[..trest.find('\'')?].to_string())
    } else if let Some(i) = text.find("RRSet with DNS name ")
        && text[i..].contains(", type ")
    {
        // "RRSet with DNS name x., type A[, SetIdentifier s] cannot be created as …"
        let rest = &text[i + 20..];
        let (name, rest) = rest.split_once(", type ")?;
        let end = rest.find([',', ' ']).unwrap_or(rest.len());
        let (rtype, rest) = rest.split_at(end);
        if let Some(s) = rest.strip_prefix(", SetIdentifier ") {
            set = Some(s[..s.find(" cannot").unwrap_or(s.len())].to_string());
        }
        (name.to_string(), rtype.to_string())
    } else if let Some(i) = text.find("RRSet of type ") {
        let mut it = text[i + 14..].split_whitespace();
        let rtype = it.next()?.to_string();
        // "with DNS name x."
        let rest: Vec<&str> = it.collect();
        let at = rest.iter().position(|w| *w == "name")?;
        (rest.get(at + 1)?.to_string(), rtype)
    } else if let Some(i) = text.find("resource record set '") {
        let rest = &text[i + 21..];
        let inner = &rest[..rest.find('\'')?];
        let (rtype, name) = inner.split_once(' ')?;
        (name.to_string(), rtype.to_string())
    } else {
        return None;
    };
    let name = Name::parse(&decode_name(&name)).ok()?;
    let rtype = RecordType::parse(&rtype).ok()?;
    let set = match set {
        Some(s) => SetId::new(&s).ok()?,
        None => SetId::NONE,
    };
    name.is_within(zone)
        .then(|| RecordKey::new(zone.clone(), name, rtype).in_set(set))
}

/// The provider error for an answer with `status` and `body` to a request about
/// `zone`; `write` says whether it was a change batch.
pub fn classify(
    status: u16,
    body: &str,
    what: &str,
    zone: Option<&Name>,
    write: bool,
) -> ProviderError {
    let err = parse_error(body);
    let text = if err.code.is_empty() {
        format!("{what} answered {status}: {}", err.message)
    } else {
        format!("{what} answered {status} {}: {}", err.code, err.message)
    };
    let (class, key) = match (status, err.code.as_str()) {
        // Route 53 answers throttling with HTTP 400.
        (_, "Throttling" | "ThrottlingException" | "RequestLimitExceeded") => {
            return ProviderError::new(ErrorClass::Transient, text).throttle();
        }
        (_, "PriorRequestNotComplete") => (ErrorClass::Transient, None),
        (_, "InvalidChangeBatch") => {
            let failures = zone.map(|z| failures(z, &err)).unwrap_or_default();
            // A conflict anywhere makes the batch a conflict: the read-back settles the
            // conflicting changes and the rest is sent again (and any invalid one then
            // reported on its own).
            let first = failures
                .iter()
                .find(|f| f.class == ErrorClass::Conflict)
                .or(failures.first());
            match first {
                Some(f) => (f.class, f.key.clone()),
                None => (ErrorClass::Invalid, None),
            }
        }
        (
            _,
            "NoSuchHostedZone"
            | "AccessDenied"
            | "AccessDeniedException"
            | "InvalidClientTokenId"
            | "SignatureDoesNotMatch"
            | "MissingAuthenticationToken"
            | "IncompleteSignature"
            | "ExpiredToken"
            | "UnrecognizedClientException",
        ) => (ErrorClass::Permanent, None),
        (_, "InvalidInput" | "InvalidDomainName") => (ErrorClass::Invalid, None),
        (500..=599, _) if write => (ErrorClass::Ambiguous, None),
        (500..=599, _) => (ErrorClass::Transient, None),
        (s, _) => (ErrorClass::for_http_status(s), None),
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

    #[test]
    fn names_come_back_unescaped() {
        assert_eq!(decode_name("\\052.example.com."), "*.example.com.");
        assert_eq!(decode_name("a\\100b.example.com."), "a@b.example.com.");
        assert_eq!(decode_name("plain.example.com."), "plain.example.com.");
        assert_eq!(decode_name("odd\\9.example.com."), "odd\\9.example.com.");
    }

    #[test]
    fn zone_ids_with_or_without_their_prefix() {
        assert_eq!(bare_zone_id("/hostedzone/Z0123ABC"), Some("Z0123ABC"));
        assert_eq!(bare_zone_id("Z0123ABC"), Some("Z0123ABC"));
        assert_eq!(bare_zone_id("Z01/../x"), None);
        assert_eq!(bare_zone_id(""), None);
    }

    #[test]
    fn every_failure_of_an_invalid_change_batch_is_named() {
        let body = format!(
            r#"<ErrorResponse xmlns="{XMLNS}"><Error><Type>Sender</Type><Code>InvalidChangeBatch</Code><Message>[Tried to delete resource record set [name='test.example.com.', type='CNAME'] but the values provided do not match the current values, Tried to create resource record set [name='new.example.com.', type='TXT', set-identifier='x'] but it already exists, Invalid Resource Record: 'FATAL problem: ARRDATAIllegalIPv4Address (Value is not a valid IPv4 address) encountered with '1.2.3'', RRSet of type A with DNS name cn.example.com. is not permitted because a conflicting RRSet of type  CNAME with the same DNS name already exists in zone example.com.]</Message></Error><RequestId>r</RequestId></ErrorResponse>"#
        );
        let err = parse_error(&body);
        assert_eq!(err.code, "InvalidChangeBatch");
        let f = failures(&zone(), &err);
        let got: Vec<(ErrorClass, Option<String>)> = f
            .iter()
            .map(|f| {
                (
                    f.class,
                    f.key.as_ref().map(|k| format!("{} {}", k.name, k.rtype)),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (ErrorClass::Conflict, Some("test.example.com. CNAME".into())),
                (ErrorClass::Conflict, Some("new.example.com. TXT".into())),
                (ErrorClass::Invalid, None),
                (ErrorClass::Conflict, Some("cn.example.com. A".into())),
            ]
        );
        let e = classify(400, &body, "POST x", Some(&zone()), true);
        assert_eq!(e.class, ErrorClass::Conflict);
        assert_eq!(e.key.unwrap().name.as_str(), "test.example.com.");
    }

    #[test]
    fn the_legacy_form_is_read_too() {
        let body = "<InvalidChangeBatch><Messages><Message>Tried to delete resource record set [name='gone.example.com.', type='A'] but it was not found</Message></Messages><RequestId>r</RequestId></InvalidChangeBatch>";
        let e = classify(400, body, "POST x", Some(&zone()), true);
        assert_eq!(e.class, ErrorClass::Conflict);
        assert_eq!(e.key.unwrap().name.as_str(), "gone.example.com.");
    }

    #[test]
    fn throttling_is_a_400_that_is_transient() {
        let t = |code: &str, status: u16, write: bool| {
            let body = format!(
                "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>m</Message></Error></ErrorResponse>"
            );
            let e = classify(status, &body, "x", Some(&zone()), write);
            (e.class, e.throttled)
        };
        assert_eq!(t("Throttling", 400, true), (ErrorClass::Transient, true));
        assert_eq!(
            t("PriorRequestNotComplete", 400, true),
            (ErrorClass::Transient, false)
        );
        assert_eq!(
            t("NoSuchHostedZone", 404, false),
            (ErrorClass::Permanent, false)
        );
        assert_eq!(
            t("SignatureDoesNotMatch", 403, false),
            (ErrorClass::Permanent, false)
        );
        assert_eq!(t("InvalidInput", 400, true), (ErrorClass::Invalid, false));
        assert_eq!(
            t("InternalError", 500, true),
            (ErrorClass::Ambiguous, false)
        );
        assert_eq!(
            t("InternalError", 500, false),
            (ErrorClass::Transient, false)
        );
        let e = classify(502, "<html>bad gateway</html>", "x", None, true);
        assert_eq!(e.class, ErrorClass::Ambiguous);
        assert!(e.message.contains("bad gateway"), "{}", e.message);
    }

    #[test]
    fn a_change_batch_escapes_what_xml_needs() {
        let key = RecordKey::new(
            zone(),
            Name::parse("t.example.com").unwrap(),
            RecordType::Txt,
        );
        let body = SetBody {
            ttl: Some(60),
            values: vec!["\"a<b&c\"".into()],
            ..SetBody::default()
        };
        let x = change_batch(
            "dnsplane",
            &[OutChange {
                action: Action::Create,
                key: &key,
                body,
            }],
        );
        assert!(x.contains("<Action>CREATE</Action>"), "{x}");
        assert!(
            x.contains("&quot;a&lt;b&amp;c&quot;") || x.contains("\"a&lt;b&amp;c\""),
            "{x}"
        );
        assert!(x.contains("<TTL>60</TTL>"), "{x}");
    }

    /// Route 53 validates the schema's sequence: routing elements before the TTL, an
    /// alias target after where the values would be, the health check last.
    #[test]
    fn routing_elements_go_in_the_schemas_order() {
        let key = RecordKey::new(zone(), Name::parse("w.example.com").unwrap(), RecordType::A);
        let body = SetBody {
            set_identifier: Some("eu".into()),
            geo: Some(Geo {
                continent: Some("EU".into()),
                ..Geo::default()
            }),
            alias: Some(AliasTarget {
                hosted_zone_id: "Z1".into(),
                dns_name: "lb.example.net.".into(),
                evaluate_target_health: false,
            }),
            health_check_id: Some("hc".into()),
            ..SetBody::default()
        };
        let x = change_batch(
            "c",
            &[OutChange {
                action: Action::Delete,
                key: &key,
                body,
            }],
        );
        let at = |tag: &str| x.find(tag).unwrap_or_else(|| panic!("{tag} in {x}"));
        assert!(at("<Type>") < at("<SetIdentifier>eu"));
        assert!(
            at("<SetIdentifier>")
                < at("<GeoLocation><ContinentCode>EU</ContinentCode></GeoLocation>")
        );
        assert!(
            at("</GeoLocation>")
                < at(
                    "<AliasTarget><HostedZoneId>Z1</HostedZoneId><DNSName>lb.example.net.</DNSName><EvaluateTargetHealth>false</EvaluateTargetHealth></AliasTarget>"
                )
        );
        assert!(at("</AliasTarget>") < at("<HealthCheckId>hc</HealthCheckId>"));
        assert!(
            !x.contains("<TTL>") && !x.contains("<ResourceRecords>"),
            "{x}"
        );
    }

    #[test]
    fn routing_policy_clashes_are_conflicts_that_name_the_set() {
        let err = WireError {
            code: "InvalidChangeBatch".into(),
            message: String::new(),
            messages: vec![
                "RRSet with DNS name w.example.com., type A, SetIdentifier eu cannot be created as a non-weighted set exists with the same name and type.".into(),
                "RRSet with DNS name p.example.com., type TXT cannot be created as other RRSets exist with the same name and type.".into(),
            ],
        };
        let f = failures(&zone(), &err);
        assert_eq!(f[0].class, ErrorClass::Conflict);
        let k = f[0].key.as_ref().unwrap();
        assert_eq!((k.name.as_str(), k.set.as_str()), ("w.example.com.", "eu"));
        assert_eq!(f[1].class, ErrorClass::Conflict);
        let k = f[1].key.as_ref().unwrap();
        assert_eq!(
            (k.name.as_str(), k.rtype, k.set),
            ("p.example.com.", RecordType::Txt, SetId::NONE)
        );
    }
}
