//! Cloudflare's structured `data` objects for the newer record types. Cloudflare does
//! not take their presentation text in `content`: each field goes in `data` under its
//! own name (TLSA `{usage, selector, matching_type, certificate}`, SSHFP `{algorithm,
//! type, fingerprint}`, NAPTR `{order, preference, flags, service, regex, replacement}`,
//! DS `{key_tag, algorithm, digest_type, digest}`, SVCB/HTTPS `{priority, target,
//! value}` with the parameters as text). PTR takes its target in `content`.
//! These names are the `data` fields of Cloudflare's OpenAPI spec, as the models
//! generated from it spell them (`DNSRecordDataModel` in Cloudflare's Terraform
//! provider, `internal/services/dns_record/model.go`), and as Ansible's
//! `cloudflare_dns` module sends them for TLSA, SSHFP and DS.
use dnsplane_common::{RData, RecordType};
use serde_json::{Value, json};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn api_host(name: &str) -> String {
    if name == "." {
        ".".into()
    } else {
        name.strip_suffix('.').unwrap_or(name).to_string()
    }
}

fn absolute(host: &str) -> String {
    if host.ends_with('.') || host.is_empty() {
        if host.is_empty() {
            ".".into()
        } else {
            host.to_string()
        }
    } else {
        format!("{host}.")
    }
}

/// The fields of one canonical value of a newer type; `None` for the older types,
/// whose fields `wire::value_fields` writes.
pub(super) fn fields(rtype: RecordType, value: &str) -> Option<Value> {
    let data = RData::parse(rtype, value).ok()?;
    Some(match data {
        RData::Ptr(n) => json!({ "content": api_host(n.as_str()) }),
        RData::Svcb(s) | RData::Https(s) => {
            let shown = s.to_string();
            // "<priority> <target> <params…>": the parameters are what follows the target.
            let params = shown.splitn(3, ' ').nth(2).unwrap_or("").to_string();
            json!({ "data": { "priority": s.priority, "target": api_host(s.target.as_str()), "value": params } })
        }
        RData::Tlsa {
            usage,
            selector,
            matching,
            data,
        } => json!({ "data": {
            "usage": usage, "selector": selector, "matching_type": matching,
            "certificate": hex::encode(data) } }),
        RData::Sshfp {
            algorithm,
            fp_type,
            fingerprint,
        } => json!({ "data": {
            "algorithm": algorithm, "type": fp_type, "fingerprint": hex::encode(fingerprint) } }),
        RData::Naptr {
            order,
            preference,
            flags,
            service,
            regexp,
            replacement,
        } => json!({ "data": {
            "order": order, "preference": preference, "flags": text(&flags),
            "service": text(&service), "regex": text(&regexp),
            "replacement": api_host(replacement.as_str()) } }),
        RData::Ds {
            key_tag,
            algorithm,
            digest_type,
            digest,
        } => json!({ "data": {
            "key_tag": key_tag, "algorithm": algorithm, "digest_type": digest_type,
            "digest": hex::encode(digest) } }),
        _ => return None,
    })
}

/// Quotes a field for the presentation text (`RData::parse` reads it back).
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The presentation text of a record of a newer type from its `content` or `data`;
/// `None` when a field is missing (the record is then not one dnsplane models).
pub(super) fn value(rtype: RecordType, content: &str, data: Option<&Value>) -> Option<String> {
    let num = |f: &str| data?.get(f).and_then(Value::as_u64);
    let s = |f: &str| data?.get(f).and_then(Value::as_str).map(str::to_string);
    Some(match rtype {
        RecordType::Ptr => absolute(content),
        RecordType::Svcb | RecordType::Https => {
            let params = s("value").unwrap_or_default();
            format!("{} {} {params}", num("priority")?, absolute(&s("target")?))
                .trim_end()
                .to_string()
        }
        RecordType::Tlsa => format!(
            "{} {} {} {}",
            num("usage")?,
            num("selector")?,
            num("matching_type")?,
            s("certificate")?
        ),
        RecordType::Sshfp => format!(
            "{} {} {}",
            num("algorithm")?,
            num("type")?,
            s("fingerprint")?
        ),
        RecordType::Naptr => format!(
            "{} {} {} {} {} {}",
            num("order")?,
            num("preference")?,
            quote(&s("flags")?),
            quote(&s("service")?),
            quote(&s("regex")?),
            absolute(&s("replacement")?)
        ),
        RecordType::Ds => format!(
            "{} {} {} {}",
            num("key_tag")?,
            num("algorithm")?,
            num("digest_type")?,
            s("digest")?
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::rdata::canonicalize;

    #[test]
    fn structured_data_both_ways() {
        let sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        for (t, v, field, want) in [
            (
                RecordType::Ptr,
                "host.example.com.".to_string(),
                "/content",
                json!("host.example.com"),
            ),
            (
                RecordType::Https,
                "1 . alpn=h2,h3 port=443".into(),
                "/data/value",
                json!("alpn=h2,h3 port=443"),
            ),
            (
                RecordType::Svcb,
                "0 svc.example.net.".into(),
                "/data/target",
                json!("svc.example.net"),
            ),
            (
                RecordType::Tlsa,
                format!("3 1 1 {sha}"),
                "/data/matching_type",
                json!(1),
            ),
            (
                RecordType::Sshfp,
                format!("4 2 {sha}"),
                "/data/type",
                json!(2),
            ),
            (
                RecordType::Naptr,
                r#"100 10 "U" "E2U+sip" "!^.*$!sip:a@example.com!" ."#.into(),
                "/data/regex",
                json!("!^.*$!sip:a@example.com!"),
            ),
            (
                RecordType::Ds,
                format!("12345 13 2 {sha}"),
                "/data/key_tag",
                json!(12345),
            ),
        ] {
            let f = fields(t, &v).unwrap();
            assert_eq!(f.pointer(field), Some(&want), "{t}: {f}");
            let content = f.get("content").and_then(Value::as_str).unwrap_or("");
            let back = value(t, content, f.get("data")).unwrap();
            assert_eq!(canonicalize(t, &back).unwrap(), v, "{t}: {back}");
        }
        // A record missing a field is not read as a value.
        assert_eq!(
            value(RecordType::Tlsa, "", Some(&json!({"usage": 3}))),
            None
        );
    }
}
