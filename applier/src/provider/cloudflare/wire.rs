//! Cloudflare's v4 API on the wire: the `{success, errors, messages, result,
//! result_info}` envelope, records (one per value, with an id), how a dnsplane value
//! becomes a record's fields (`content`; `priority` for MX; `data` for SRV and CAA)
//! and back, and how an answer is classified ([`classify`], the one place that knows
//! what Cloudflare's codes mean).
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{RecordKey, RecordType};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

/// Longest provider text kept in an error message.
const MAX_ERROR_TEXT: usize = 500;

/// One entry of `errors`.
#[derive(Clone, Debug, Default, Deserialize)]
pub(super) struct WireError {
    #[serde(default)]
    pub(super) code: Value,
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) error_chain: Vec<WireError>,
}

impl WireError {
    fn code(&self) -> Option<u64> {
        self.code
            .as_u64()
            .or_else(|| self.code.as_str().and_then(|s| s.parse().ok()))
    }
}

/// `result_info` of a list.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(super) struct ResultInfo {
    #[serde(default)]
    pub(super) total_pages: u64,
}

/// The envelope of every answer.
#[derive(Debug, Deserialize)]
pub(super) struct Envelope<T> {
    #[serde(default)]
    pub(super) success: bool,
    #[serde(default)]
    pub(super) errors: Vec<WireError>,
    pub(super) result: Option<T>,
    #[serde(default)]
    pub(super) result_info: Option<ResultInfo>,
}

/// A zone (only the fields dnsplane reads).
#[derive(Clone, Debug, Deserialize)]
pub(super) struct WireZone {
    pub(super) id: String,
    pub(super) name: String,
}

/// A record as Cloudflare returns it (only the fields dnsplane reads or keeps).
#[derive(Clone, Debug, Deserialize)]
pub(super) struct WireRecord {
    pub(super) id: String,
    pub(super) name: String,
    #[serde(rename = "type")]
    pub(super) rtype: String,
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) ttl: u32,
    #[serde(default)]
    pub(super) proxied: Option<bool>,
    #[serde(default)]
    pub(super) priority: Option<u64>,
    #[serde(default)]
    pub(super) data: Option<Value>,
}

/// The batch request body.
#[derive(Debug, Default, Serialize)]
pub(super) struct Batch {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) deletes: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) patches: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) posts: Vec<Value>,
}

impl Batch {
    pub(super) fn len(&self) -> usize {
        self.deletes.len() + self.patches.len() + self.posts.len()
    }
}

/// A record name as the API takes and gives it: no trailing dot.
pub(super) fn api_name(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

fn absolute(host: &str) -> String {
    if host.ends_with('.') {
        host.to_string()
    } else {
        format!("{host}.")
    }
}

/// Unquotes a canonical character-string (`"a\"b"` → `a"b`).
fn unquote(s: &str) -> String {
    let inner = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The fields that carry one canonical value of type `rtype` (merged into a post or a
/// patch).
pub(super) fn value_fields(rtype: RecordType, value: &str) -> Value {
    if let Some(fields) = super::data::fields(rtype, value) {
        return fields;
    }
    let mut it = value.split_whitespace();
    let mut next = || it.next().unwrap_or_default().to_string();
    match rtype {
        RecordType::Cname | RecordType::Ns => json!({ "content": api_name(value) }),
        RecordType::Mx => {
            let priority: u64 = next().parse().unwrap_or_default();
            json!({ "priority": priority, "content": api_name(&next()) })
        }
        RecordType::Srv => {
            let priority: u64 = next().parse().unwrap_or_default();
            let weight: u64 = next().parse().unwrap_or_default();
            let port: u64 = next().parse().unwrap_or_default();
            let target = next();
            let target = if target == "." {
                target
            } else {
                api_name(&target).to_string()
            };
            json!({ "data": { "priority": priority, "weight": weight, "port": port, "target": target } })
        }
        RecordType::Caa => {
            let (flags, rest) = value.split_once(' ').unwrap_or((value, ""));
            let (tag, quoted) = rest.split_once(' ').unwrap_or((rest, ""));
            let flags: u64 = flags.parse().unwrap_or_default();
            json!({ "data": { "flags": flags, "tag": tag, "value": unquote(quoted) } })
        }
        RecordType::A | RecordType::Aaaa | RecordType::Txt => json!({ "content": value }),
        // A newer type's value that did not parse: sent as text, for Cloudflare to refuse.
        _ => json!({ "content": value }),
    }
}

/// The dnsplane value a record holds (to be canonicalized by `RRSet::new`); `None` for
/// a record whose fields do not make one.
pub(super) fn record_value(rtype: RecordType, r: &WireRecord) -> Option<String> {
    let content = r.content.as_deref().unwrap_or_default().trim();
    let data = r.data.as_ref();
    let num = |d: &Value, f: &str| d.get(f).and_then(Value::as_u64);
    Some(match rtype {
        RecordType::Ptr
        | RecordType::Svcb
        | RecordType::Https
        | RecordType::Tlsa
        | RecordType::Sshfp
        | RecordType::Naptr
        | RecordType::Ds => return super::data::value(rtype, content, data),
        RecordType::A | RecordType::Aaaa | RecordType::Txt => content.to_string(),
        RecordType::Cname | RecordType::Ns => absolute(content),
        RecordType::Mx => format!("{} {}", r.priority?, absolute(content)),
        RecordType::Srv => match data {
            Some(d) => {
                let target = d.get("target").and_then(Value::as_str)?;
                let target = if target == "." {
                    ".".to_string()
                } else {
                    absolute(target)
                };
                format!(
                    "{} {} {} {target}",
                    num(d, "priority")?,
                    num(d, "weight")?,
                    num(d, "port")?
                )
            }
            None => {
                let mut parts: Vec<&str> = content.split_whitespace().collect();
                let target = absolute(parts.pop()?);
                format!("{} {} {target}", r.priority?, parts.join(" "))
            }
        },
        RecordType::Caa => match data {
            Some(d) => {
                let value = d.get("value").and_then(Value::as_str)?;
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                format!(
                    "{} {} \"{escaped}\"",
                    num(d, "flags")?,
                    d.get("tag").and_then(Value::as_str)?
                )
            }
            None => content.to_string(),
        },
    })
}

/// The first error of an error answer: `(code, text)`, the text holding the message
/// and any `error_chain`, or the raw body when it is no envelope.
pub(super) fn error_text(status: u16, body: &[u8]) -> (Option<u64>, String) {
    match serde_json::from_slice::<Envelope<Value>>(body) {
        Ok(env) if !env.errors.is_empty() => {
            let first = &env.errors[0];
            let mut text = first.message.clone();
            for c in &first.error_chain {
                text.push_str(&format!(
                    " ({}: {})",
                    c.code().map_or("?".into(), |c| c.to_string()),
                    c.message
                ));
            }
            let code = first.code();
            let chain_code = first.error_chain.first().and_then(WireError::code);
            // The detail code says more than the generic one (6003 → 6111).
            (code.or(chain_code), text)
        }
        _ => {
            let raw = String::from_utf8_lossy(body);
            let mut t: String = raw.trim().chars().take(MAX_ERROR_TEXT).collect();
            if t.is_empty() {
                t = reqwest::StatusCode::from_u16(status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("no body")
                    .to_string();
            }
            (None, t)
        }
    }
}

/// Cloudflare's codes for "the record (or a CNAME clash) is there / is not there".
const CONFLICT_CODES: &[u64] = &[81044, 81053, 81054, 81057, 81058];
/// Credential codes: missing or malformed headers, an unknown token, no permission.
const AUTH_CODES: &[u64] = &[6003, 6100, 6101, 6102, 6103, 6111, 9103, 9106, 9109, 10000];

/// The one place where Cloudflare's answers get their class:
///
/// | answer | class |
/// |---|---|
/// | 81044 record does not exist, 81057/81058 record exists, 81053/81054 CNAME clash | conflict |
/// | 401, 403, and the credential codes (6003/6111, 9106, 9109, 10000) | permanent |
/// | 429 (971) | transient, throttled, with `retry-after` |
/// | 5xx after sending a write | ambiguous |
/// | 5xx of a read, 408 | transient |
/// | 404 routing (7000, 7003) | permanent: a wrong endpoint or zone id |
/// | 501 (a call the server does not implement) | permanent |
/// | other 400s (1004, 9000–9999 validation, 6007) | invalid |
///
/// `key`: the record a batch of one op was about, named in the message and the error.
pub(super) fn classify(
    status: u16,
    body: &[u8],
    retry_after: Option<Duration>,
    what: &str,
    write: bool,
    key: Option<&RecordKey>,
) -> ProviderError {
    let (code, text) = error_text(status, body);
    let code_txt = code.map(|c| format!("{c} ")).unwrap_or_default();
    let about = key.map(|k| format!(" for {k}")).unwrap_or_default();
    let msg = format!("{what} answered {status}{about}: {code_txt}{text}");
    let class = match (status, code) {
        (429, _) => ErrorClass::Transient,
        (_, Some(c)) if CONFLICT_CODES.contains(&c) => ErrorClass::Conflict,
        (401 | 403, _) => ErrorClass::Permanent,
        (_, Some(c)) if AUTH_CODES.contains(&c) && status < 500 => ErrorClass::Permanent,
        // 501: a call the server does not implement (the emulator's answer for what
        // it does not model): nothing was done, and asking again cannot help.
        (404 | 501, _) => ErrorClass::Permanent,
        (408, _) => ErrorClass::Transient,
        (500..=599, _) if write => ErrorClass::Ambiguous,
        (500..=599, _) => ErrorClass::Transient,
        _ => ErrorClass::Invalid,
    };
    let mut err = ProviderError::new(class, msg);
    if status == 429 {
        err = err.throttle();
    }
    if let Some(d) = retry_after {
        err = err.with_retry_after(d);
    }
    if let (Some(k), ErrorClass::Invalid | ErrorClass::Conflict) = (key, class) {
        err = err.with_key(k.clone());
    }
    err
}

/// Classifies a failure below HTTP. A connect failure never sent anything; anything
/// else may have reached Cloudflare, which for a write is ambiguous.
pub(super) fn transport_error(what: &str, e: &reqwest::Error, write: bool) -> ProviderError {
    crate::provider::transport_error(what, e, write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::Name;

    fn body(code: u64, message: &str) -> Vec<u8> {
        json!({"success": false, "errors": [{"code": code, "message": message}], "messages": [], "result": null})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn classifies_every_documented_answer() {
        use ErrorClass::*;
        let c = |status: u16, code: u64, write: bool| {
            classify(status, &body(code, "m"), None, "POST /x", write, None).class
        };
        for code in [81044, 81053, 81054, 81057, 81058] {
            assert_eq!(c(400, code, true), Conflict, "{code}");
        }
        assert_eq!(c(404, 81044, true), Conflict);
        assert_eq!(c(403, 9109, true), Permanent);
        assert_eq!(c(403, 10000, false), Permanent);
        assert_eq!(c(400, 9106, false), Permanent);
        assert_eq!(c(400, 9005, true), Invalid);
        assert_eq!(c(400, 1004, true), Invalid);
        assert_eq!(c(400, 6007, true), Invalid);
        assert_eq!(c(404, 7000, false), Permanent);
        // A call the server does not implement: nothing was done, and retrying cannot
        // help (the emulator answers it for calls it does not model).
        assert_eq!(c(501, 7000, true), Permanent);
        assert_eq!(c(501, 7000, false), Permanent);
        assert_eq!(c(502, 10013, true), Ambiguous);
        assert_eq!(c(502, 10013, false), Transient);
        assert_eq!(c(504, 0, true), Ambiguous);
        let e = classify(
            429,
            &body(971, "Please wait"),
            Some(Duration::from_secs(7)),
            "POST /x",
            true,
            None,
        );
        assert_eq!(
            (e.class, e.throttled, e.retry_after),
            (Transient, true, Some(Duration::from_secs(7)))
        );
        // The detail code of a chained answer is kept in the text.
        let chained = json!({"success": false, "errors": [{"code": 6003, "message": "Invalid request headers",
            "error_chain": [{"code": 6111, "message": "Invalid format for Authorization header"}]}]})
        .to_string();
        let e = classify(400, chained.as_bytes(), None, "GET /zones", false, None);
        assert_eq!(e.class, Permanent);
        assert!(
            e.message
                .contains("6111: Invalid format for Authorization header"),
            "{}",
            e.message
        );
        // A batch of one op names its record.
        let zone = Name::parse("ex.test").unwrap();
        let key = RecordKey::new(zone.clone(), zone.prepend("www").unwrap(), RecordType::A);
        let e = classify(
            400,
            &body(9005, "Content for A record must be a valid IPv4 address."),
            None,
            "POST /batch",
            true,
            Some(&key),
        );
        assert_eq!(e.key.as_ref(), Some(&key));
        assert!(e.message.contains("www.ex.test."), "{}", e.message);
        // Not JSON: the raw text, classified by status.
        let e = classify(
            502,
            b"<html>bad gateway</html>",
            None,
            "POST /b",
            true,
            None,
        );
        assert_eq!(e.class, Ambiguous);
        assert!(e.message.contains("bad gateway"));
    }

    #[test]
    fn values_round_trip_through_record_fields() {
        let rec = |rtype: RecordType, v: &str| {
            let f = value_fields(rtype, v);
            let r = WireRecord {
                id: "i".into(),
                name: "n".into(),
                rtype: rtype.to_string(),
                content: f.get("content").and_then(Value::as_str).map(str::to_string),
                ttl: 1,
                proxied: None,
                priority: f.get("priority").and_then(Value::as_u64),
                data: f.get("data").cloned(),
            };
            record_value(rtype, &r).unwrap()
        };
        for (t, v) in [
            (RecordType::A, "192.0.2.1"),
            (RecordType::Cname, "target.example.net."),
            (RecordType::Ns, "ns1.example.net."),
            (RecordType::Mx, "10 mail.example.net."),
            (RecordType::Srv, "10 60 5060 sip.example.net."),
            (RecordType::Srv, "0 0 0 ."),
            (RecordType::Caa, "0 issue \"letsencrypt.org\""),
            (RecordType::Caa, "0 issuewild \";\""),
            (RecordType::Caa, "128 iodef \"say \\\"hi\\\"\""),
            (RecordType::Txt, "\"two words\" \"and more\""),
        ] {
            assert_eq!(rec(t, v), v, "{t}");
        }
        assert_eq!(
            value_fields(RecordType::Cname, "a.example.net.")["content"],
            "a.example.net"
        );
        // SRV as content + priority (no data) reads too.
        let r = WireRecord {
            id: "i".into(),
            name: "n".into(),
            rtype: "SRV".into(),
            content: Some("60 5060 sip.example.net".into()),
            ttl: 1,
            proxied: None,
            priority: Some(10),
            data: None,
        };
        assert_eq!(
            record_value(RecordType::Srv, &r).unwrap(),
            "10 60 5060 sip.example.net."
        );
    }
}
