//! The record types Cloudflare takes only as a structured `data` object (HTTPS, SVCB,
//! TLSA, SSHFP, NAPTR, DS): each field checked by its own rule, the record's `content`
//! derived from the fields as Cloudflare shows it.
use super::errors::ApiError;
use super::model::Content;
use serde_json::{Map, Value};

/// Types whose data is a structured object here.
pub(crate) fn is_structured(rtype: &str) -> bool {
    matches!(rtype, "HTTPS" | "SVCB" | "TLSA" | "SSHFP" | "NAPTR" | "DS")
}

fn invalid(detail: String) -> ApiError {
    ApiError::invalid(1004, detail)
}

enum Kind {
    U8,
    U16,
    Hex,
    Text,
}

fn fields(rtype: &str) -> &'static [(&'static str, Kind)] {
    use Kind::*;
    match rtype {
        "HTTPS" | "SVCB" => &[("priority", U16), ("target", Text), ("value", Text)],
        "TLSA" => &[
            ("usage", U8),
            ("selector", U8),
            ("matching_type", U8),
            ("certificate", Hex),
        ],
        "SSHFP" => &[("algorithm", U8), ("type", U8), ("fingerprint", Hex)],
        "NAPTR" => &[
            ("order", U16),
            ("preference", U16),
            ("flags", Text),
            ("service", Text),
            ("regex", Text),
            ("replacement", Text),
        ],
        "DS" => &[
            ("key_tag", U16),
            ("algorithm", U8),
            ("digest_type", U8),
            ("digest", Hex),
        ],
        _ => &[],
    }
}

/// The content of a structured record from its `data`.
pub(crate) fn content(rtype: &str, data: Option<&Value>) -> Result<Content, ApiError> {
    let Some(data) = data.and_then(Value::as_object) else {
        let names: Vec<&str> = fields(rtype).iter().map(|(n, _)| *n).collect();
        return Err(invalid(format!(
            "{rtype} records require data ({}).",
            names.join(", ")
        )));
    };
    let mut kept = Map::new();
    let mut shown = Vec::new();
    for (name, kind) in fields(rtype) {
        let v = data.get(*name);
        let bad = || invalid(format!("{rtype} record data.{name} is invalid."));
        let value = match kind {
            Kind::U8 => Value::from(
                v.and_then(Value::as_u64)
                    .filter(|n| *n <= 255)
                    .ok_or_else(bad)?,
            ),
            Kind::U16 => Value::from(
                v.and_then(Value::as_u64)
                    .filter(|n| *n <= 65535)
                    .ok_or_else(bad)?,
            ),
            Kind::Hex => {
                let s = v.and_then(Value::as_str).ok_or_else(bad)?;
                if s.is_empty() || s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(bad());
                }
                Value::from(s.to_ascii_lowercase())
            }
            Kind::Text => Value::from(v.and_then(Value::as_str).ok_or_else(bad)?),
        };
        shown.push(match (&value, rtype, *name) {
            (Value::String(s), "NAPTR", "flags" | "service" | "regex") => format!("\"{s}\""),
            (Value::String(s), _, _) => s.clone(),
            (other, _, _) => other.to_string(),
        });
        kept.insert((*name).to_string(), value);
    }
    Ok(Content::Structured {
        content: shown.join(" ").trim_end().to_string(),
        data: Value::Object(kept).to_string(),
    })
}
