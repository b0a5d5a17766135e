//! Building and checking one record from a request (`POST`, `PUT`, `PATCH`, and the
//! batch's `posts`, `puts`, `patches`), answered in Cloudflare's words:
//!
//! - names: relative names get the zone appended, `@` is the apex, a trailing dot is
//!   dropped; a bad name is 9000 "DNS name is invalid.";
//! - content: 9005 "Content for A record must be a valid IPv4 address.", 9006 (AAAA),
//!   9007 "Content for CNAME record is invalid."; MX needs a `priority`; SRV and CAA
//!   take a structured `data` object;
//! - TTL: 1 (automatic) or the plan's minimum (60; Enterprise 30) to 86,400; proxied
//!   records always have TTL 1; only A, AAAA and CNAME can be proxied (1004 "DNS
//!   Validation Error" with 9004 "This record type cannot be proxied." chained);
//! - against the zone ([`check_rules`]): 81058 "An identical record already exists."
//!   (same name, type and data); 81053 "An A, AAAA, or CNAME record with that host
//!   already exists." (a CNAME where the name holds a record); 81054 "A CNAME record
//!   with that host already exists." (a record where the name holds a CNAME).
use super::errors::ApiError;
use super::model::{Content, Record, Zone, proxiable};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::SystemTime;

/// The record types Cloudflare's DNS API accepts.
pub(crate) const TYPES: &[&str] = &[
    "A",
    "AAAA",
    "CAA",
    "CERT",
    "CNAME",
    "DNSKEY",
    "DS",
    "HTTPS",
    "LOC",
    "MX",
    "NAPTR",
    "NS",
    "OPENPGPKEY",
    "PTR",
    "SMIMEA",
    "SRV",
    "SSHFP",
    "SVCB",
    "TLSA",
    "TXT",
    "URI",
];

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A record as a request gives it; every field optional (a PATCH gives few).
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct RecordInput {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "type")]
    pub rtype: Option<String>,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub ttl: Option<i64>,
    #[serde(default)]
    pub proxied: Option<bool>,
    #[serde(default)]
    pub priority: Option<i64>,
    #[serde(default)]
    pub data: Option<Value>,
    /// Absent: unchanged (PATCH) or none; `null`: removed.
    #[serde(default, deserialize_with = "present")]
    pub comment: Option<Option<String>>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// How a request relates to an existing record.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode<'a> {
    /// `POST`: a new record, unspecified fields at their defaults.
    Create,
    /// `PUT`: the record replaced whole; unspecified fields reset to defaults.
    Overwrite(&'a Record),
    /// `PATCH`: only the given fields change.
    Edit(&'a Record),
}

/// The plan-dependent limits a record is checked against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub min_ttl: u32,
}

fn dns_validation(detail: impl Into<String>) -> ApiError {
    ApiError::invalid(1004, detail)
}

fn bad_name() -> ApiError {
    ApiError::invalid(9000, "DNS name is invalid.")
}

/// The stored form of a record name given in zone `zone`.
pub(crate) fn record_name(zone: &str, raw: &str) -> Result<String, ApiError> {
    let s = raw.trim();
    let s = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
    if s.is_empty() {
        return Err(bad_name());
    }
    let full = if s == "@" || s == zone {
        zone.to_string()
    } else if s.ends_with(&format!(".{zone}")) {
        s
    } else {
        format!("{s}.{zone}")
    };
    if full.len() > 253 {
        return Err(bad_name());
    }
    for (i, label) in full.split('.').enumerate() {
        let ok = (label == "*" && i == 0)
            || (!label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        if !ok {
            return Err(bad_name());
        }
    }
    Ok(full)
}

/// A host name as record content (CNAME, NS, MX, SRV targets): stored without the
/// trailing dot. `None` when it is no host name (an IP address is not one).
fn host(raw: &str) -> Option<String> {
    let s = raw.trim();
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() || s.len() > 253 || s.parse::<IpAddr>().is_ok() {
        return None;
    }
    s.split('.')
        .all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'*')
        })
        .then(|| s.to_string())
}

fn u16_field(data: &Value, field: &str, what: &str) -> Result<u16, ApiError> {
    data.get(field)
        .and_then(Value::as_u64)
        .and_then(|v| u16::try_from(v).ok())
        .ok_or_else(|| dns_validation(format!("{what} record data.{field} must be 0 to 65535.")))
}

/// The record's data from `input`, `base` supplying what a PATCH leaves out.
fn content(rtype: &str, input: &RecordInput, base: Option<&Record>) -> Result<Content, ApiError> {
    // A PATCH that names the same type and no data keeps the data.
    let same_type = base.is_some_and(|b| b.rtype == rtype);
    if let Some(b) = base
        && same_type
        && input.content.is_none()
        && input.data.is_none()
        && input.priority.is_none()
    {
        return Ok(b.content.clone());
    }
    let base_content = base.filter(|_| same_type).map(|b| &b.content);
    let text = input
        .content
        .clone()
        .or_else(|| base_content.map(Content::content));
    let need_text = || {
        text.clone()
            .ok_or_else(|| dns_validation(format!("Content for {rtype} record is required.")))
    };
    match rtype {
        "A" => {
            let t = need_text()?;
            t.trim()
                .parse::<Ipv4Addr>()
                .map(|ip| Content::Plain(ip.to_string()))
                .map_err(|_| {
                    ApiError::invalid(9005, "Content for A record must be a valid IPv4 address.")
                })
        }
        "AAAA" => {
            let t = need_text()?;
            t.trim()
                .parse::<Ipv6Addr>()
                .map(|ip| Content::Plain(ip.to_string()))
                .map_err(|_| {
                    ApiError::invalid(
                        9006,
                        "Content for AAAA record must be a valid IPv6 address.",
                    )
                })
        }
        "CNAME" => host(&need_text()?)
            .map(Content::Plain)
            .ok_or_else(|| ApiError::invalid(9007, "Content for CNAME record is invalid.")),
        "NS" | "PTR" => host(&need_text()?)
            .map(Content::Plain)
            .ok_or_else(|| dns_validation(format!("Content for {rtype} record is invalid."))),
        "MX" => {
            let target = host(&need_text()?)
                .ok_or_else(|| dns_validation("Content for MX record is invalid."))?;
            let priority = match (input.priority, base_content) {
                (Some(p), _) => u16::try_from(p)
                    .map_err(|_| dns_validation("Priority for MX record must be 0 to 65535."))?,
                (None, Some(Content::Mx { priority, .. })) => *priority,
                (None, _) => return Err(dns_validation("MX records require a priority.")),
            };
            Ok(Content::Mx { priority, target })
        }
        "SRV" => {
            let data = match (&input.data, base_content) {
                (Some(d), _) => d.clone(),
                (None, Some(c)) => c.data().unwrap_or_default(),
                (None, None) => Value::Null,
            };
            if !data.is_object() {
                return Err(dns_validation(
                    "SRV records require data (priority, weight, port, target).",
                ));
            }
            let target = data
                .get("target")
                .and_then(Value::as_str)
                .and_then(|t| {
                    if t.trim() == "." {
                        Some(".".to_string())
                    } else {
                        host(t)
                    }
                })
                .ok_or_else(|| dns_validation("SRV record data.target is invalid."))?;
            Ok(Content::Srv {
                priority: u16_field(&data, "priority", "SRV")?,
                weight: u16_field(&data, "weight", "SRV")?,
                port: u16_field(&data, "port", "SRV")?,
                target,
            })
        }
        "CAA" => {
            let data = match (&input.data, base_content) {
                (Some(d), _) => d.clone(),
                (None, Some(c)) => c.data().unwrap_or_default(),
                (None, None) => Value::Null,
            };
            let flags = data
                .get("flags")
                .and_then(Value::as_u64)
                .and_then(|v| u8::try_from(v).ok())
                .ok_or_else(|| dns_validation("CAA record data.flags must be 0 to 255."))?;
            let tag = data
                .get("tag")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric()))
                .ok_or_else(|| dns_validation("CAA record data.tag is invalid."))?
                .to_ascii_lowercase();
            let value = data
                .get("value")
                .and_then(Value::as_str)
                .ok_or_else(|| dns_validation("CAA record data.value is required."))?
                .to_string();
            Ok(Content::Caa { flags, tag, value })
        }
        t if super::structured::is_structured(t) => {
            let base_data = base_content.and_then(Content::data);
            super::structured::content(rtype, input.data.as_ref().or(base_data.as_ref()))
        }
        _ => {
            let t = need_text()?;
            if t.trim().is_empty() {
                return Err(dns_validation(format!(
                    "Content for {rtype} record is invalid."
                )));
            }
            Ok(Content::Plain(t))
        }
    }
}

/// Builds the record a request describes (not yet checked against the zone).
pub(crate) fn build(
    zone: &Zone,
    input: &RecordInput,
    mode: Mode<'_>,
    limits: Limits,
    now: SystemTime,
) -> Result<Record, ApiError> {
    let edit = match mode {
        Mode::Edit(b) => Some(b),
        _ => None,
    };
    let name = match (&input.name, edit) {
        (Some(n), _) => record_name(&zone.name, n)?,
        (None, Some(b)) => b.name.clone(),
        (None, None) => return Err(bad_name()),
    };
    let rtype = match (&input.rtype, edit) {
        (Some(t), _) => t.trim().to_ascii_uppercase(),
        (None, Some(b)) => b.rtype.clone(),
        (None, None) => return Err(dns_validation("DNS record type is required.")),
    };
    if !TYPES.contains(&rtype.as_str()) {
        return Err(dns_validation(format!(
            "Invalid DNS record type {rtype:?}."
        )));
    }
    let content = content(&rtype, input, edit)?;
    let proxied = input.proxied.or(edit.map(|b| b.proxied)).unwrap_or(false);
    if proxied && !proxiable(&rtype) {
        // As clients have quoted it: the generic validation code, the detail chained.
        let mut e = ApiError::invalid(1004, "DNS Validation Error");
        e.chain
            .push((9004, "This record type cannot be proxied.".into()));
        return Err(e);
    }
    let mut ttl = match (input.ttl, edit) {
        (Some(t), _) => {
            let ok = t == 1 || (i64::from(limits.min_ttl)..=86_400).contains(&t);
            if !ok {
                return Err(ApiError::invalid(
                    9021,
                    format!(
                        "Invalid TTL. Must be between {} and 86400 seconds, or 1 for Automatic.",
                        limits.min_ttl
                    ),
                ));
            }
            t as u32
        }
        (None, Some(b)) => b.ttl,
        (None, None) => 1,
    };
    if proxied {
        ttl = 1;
    }
    let comment = match (&input.comment, edit) {
        (Some(c), _) => c.clone().filter(|c| !c.is_empty()),
        (None, Some(b)) => b.comment.clone(),
        (None, None) => None,
    };
    let tags = match (&input.tags, edit) {
        (Some(t), _) => t.clone(),
        (None, Some(b)) => b.tags.clone(),
        (None, None) => Vec::new(),
    };
    let (id, created_on) = match mode {
        Mode::Create => (super::model::new_id(), now),
        Mode::Overwrite(b) | Mode::Edit(b) => (b.id.clone(), b.created_on),
    };
    Ok(Record {
        id,
        name,
        rtype,
        content,
        ttl,
        proxied,
        comment,
        tags,
        created_on,
        modified_on: now,
    })
}

/// The rules a record must keep with the rest of the zone (itself excluded by id).
pub(crate) fn check_rules(zone: &Zone, rec: &Record) -> Result<(), ApiError> {
    let others: Vec<&Record> = zone
        .named(&rec.name)
        .into_iter()
        .filter(|o| o.id != rec.id)
        .collect();
    if others.iter().any(|o| o.same_as(rec)) {
        return Err(ApiError::invalid(
            81058,
            "An identical record already exists.",
        ));
    }
    if rec.rtype == "CNAME" && !others.is_empty() {
        return Err(ApiError::invalid(
            81053,
            "An A, AAAA, or CNAME record with that host already exists.",
        ));
    }
    if rec.rtype != "CNAME" && others.iter().any(|o| o.rtype == "CNAME") {
        return Err(ApiError::invalid(
            81054,
            "A CNAME record with that host already exists.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Zone {
        Zone::new(
            "z".into(),
            "example.com".into(),
            "a".into(),
            SystemTime::UNIX_EPOCH,
        )
    }

    fn input(json: &str) -> RecordInput {
        serde_json::from_str(json).unwrap()
    }

    const LIMITS: Limits = Limits { min_ttl: 60 };

    #[test]
    fn names_are_qualified_and_checked() {
        assert_eq!(
            record_name("example.com", "www").unwrap(),
            "www.example.com"
        );
        assert_eq!(record_name("example.com", "@").unwrap(), "example.com");
        assert_eq!(
            record_name("example.com", "WWW.Example.COM.").unwrap(),
            "www.example.com"
        );
        assert_eq!(
            record_name("example.com", "www.other.org").unwrap(),
            "www.other.org.example.com"
        );
        assert_eq!(
            record_name("example.com", "*.x").unwrap(),
            "*.x.example.com"
        );
        for bad in ["", "a..b", "a b", "x.*.y"] {
            assert_eq!(
                record_name("example.com", bad).unwrap_err().code,
                9000,
                "{bad}"
            );
        }
    }

    #[test]
    fn content_texts_by_type() {
        let z = zone();
        let e =
            |j: &str| build(&z, &input(j), Mode::Create, LIMITS, SystemTime::now()).unwrap_err();
        let a = e(r#"{"name":"a","type":"A","content":"2001:db8::1"}"#);
        assert_eq!(
            (a.code, a.message.as_str()),
            (9005, "Content for A record must be a valid IPv4 address.")
        );
        assert_eq!(
            e(r#"{"name":"a","type":"AAAA","content":"1.2.3.4"}"#).code,
            9006
        );
        assert_eq!(
            e(r#"{"name":"a","type":"CNAME","content":"1.1.1.1"}"#).code,
            9007
        );
        let txt = e(r#"{"name":"a","type":"TXT","content":"x","proxied":true}"#);
        assert_eq!(
            (txt.status, txt.code, txt.chain.clone()),
            (
                400,
                1004,
                vec![(9004, "This record type cannot be proxied.".to_string())]
            )
        );
        assert_eq!(
            e(r#"{"name":"a","type":"A","content":"1.2.3.4","ttl":5}"#).code,
            9021
        );
        assert_eq!(
            e(r#"{"name":"a","type":"MX","content":"mail.example.com"}"#).code,
            1004
        );
        let ok = build(
            &z,
            &input(r#"{"name":"a","type":"A","content":"1.2.3.4","proxied":true,"ttl":300,"comment":"c","tags":["k:v"]}"#),
            Mode::Create,
            LIMITS,
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(
            (ok.ttl, ok.proxied, ok.comment.as_deref()),
            (1, true, Some("c"))
        );
        // A PATCH of the content keeps everything else.
        let p = build(
            &z,
            &input(r#"{"content":"5.6.7.8"}"#),
            Mode::Edit(&ok),
            LIMITS,
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(
            (p.proxied, p.comment.as_deref(), p.tags.clone()),
            (true, Some("c"), vec!["k:v".to_string()])
        );
        assert_eq!(p.content, Content::Plain("5.6.7.8".into()));
        // A PUT resets what it does not give.
        let u = build(
            &z,
            &input(r#"{"name":"a","type":"A","content":"5.6.7.8"}"#),
            Mode::Overwrite(&ok),
            LIMITS,
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(
            (u.proxied, u.comment.as_deref(), u.tags.len(), u.id == ok.id),
            (false, None, 0, true)
        );
    }

    /// Proxying (A, AAAA, CNAME, wildcards too) makes the TTL automatic; un-proxying
    /// by PATCH keeps it at 1 unless a TTL is given, and keeps the comment and tags;
    /// proxying a TXT by PATCH is refused as on creation.
    #[test]
    fn proxying_and_back() {
        let z = zone();
        let mk = |j: &str, mode| build(&z, &input(j), mode, LIMITS, SystemTime::now());
        let plain = mk(
            r#"{"name":"*.w","type":"CNAME","content":"t.example.net","ttl":300,"comment":"c"}"#,
            Mode::Create,
        )
        .unwrap();
        let on = mk(r#"{"proxied":true}"#, Mode::Edit(&plain)).unwrap();
        assert_eq!(
            (on.proxied, on.ttl, on.name.as_str()),
            (true, 1, "*.w.example.com")
        );
        let off = mk(r#"{"proxied":false}"#, Mode::Edit(&on)).unwrap();
        assert_eq!(
            (off.proxied, off.ttl, off.comment.as_deref()),
            (false, 1, Some("c"))
        );
        let off = mk(r#"{"proxied":false,"ttl":120}"#, Mode::Edit(&on)).unwrap();
        assert_eq!(off.ttl, 120);
        let txt = mk(r#"{"name":"t","type":"TXT","content":"x"}"#, Mode::Create).unwrap();
        let e = mk(r#"{"proxied":true}"#, Mode::Edit(&txt)).unwrap_err();
        assert_eq!((e.code, e.chain[0].0), (1004, 9004));
    }

    #[test]
    fn zone_rules() {
        let mut z = zone();
        let mk = |z: &Zone, j: &str| {
            build(z, &input(j), Mode::Create, LIMITS, SystemTime::now()).unwrap()
        };
        let a = mk(&z, r#"{"name":"www","type":"A","content":"192.0.2.1"}"#);
        z.insert(a);
        let dup = mk(
            &z,
            r#"{"name":"www","type":"A","content":"192.0.2.1","ttl":300}"#,
        );
        assert_eq!(check_rules(&z, &dup).unwrap_err().code, 81058);
        let second = mk(&z, r#"{"name":"www","type":"A","content":"192.0.2.2"}"#);
        check_rules(&z, &second).unwrap();
        let c = mk(
            &z,
            r#"{"name":"www","type":"CNAME","content":"x.example.net"}"#,
        );
        assert_eq!(check_rules(&z, &c).unwrap_err().code, 81053);
        let c2 = mk(
            &z,
            r#"{"name":"alias","type":"CNAME","content":"x.example.net"}"#,
        );
        z.insert(c2);
        let t = mk(&z, r#"{"name":"alias","type":"TXT","content":"hi"}"#);
        let e = check_rules(&z, &t).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (81054, "A CNAME record with that host already exists.")
        );
    }
}
