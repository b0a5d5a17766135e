//! NAPTR (RFC 3403): `<order> <preference> "<flags>" "<services>" "<regexp>" <replacement>`.
use super::tokens::{split, text};
use super::{MAX_STRING, RData};
use crate::name::Name;

pub(super) fn parse(v: &str) -> Result<RData, String> {
    let tokens = split(v)?;
    let [order, preference, flags, service, regexp, replacement] = &tokens[..] else {
        return Err(format!(
            "expected 6 fields \"<order> <preference> \\\"<flags>\\\" \\\"<services>\\\" \\\"<regexp>\\\" <replacement>\", found {}",
            tokens.len()
        ));
    };
    let num = |field: &str, t: &[u8]| {
        text(t)
            .parse::<u16>()
            .map_err(|_| format!("{field} {:?} is not 0..65535", text(t)))
    };
    let order = num("order", order)?;
    let preference = num("preference", preference)?;
    if !flags.iter().all(u8::is_ascii_alphanumeric) {
        return Err(format!(
            "flags {:?} must be letters or digits (RFC 3403 §4.1)",
            text(flags)
        ));
    }
    for (field, s) in [("flags", flags), ("services", service), ("regexp", regexp)] {
        if s.len() > MAX_STRING {
            return Err(format!("{field} is {} bytes, above {MAX_STRING}", s.len()));
        }
    }
    let replacement = Name::parse(&text(replacement)).map_err(|e| format!("replacement: {e}"))?;
    if !regexp.is_empty() && replacement.as_str() != "." {
        return Err(
            "regexp and replacement are exclusive: one of them must be empty (\"\" or .)".into(),
        );
    }
    Ok(RData::Naptr {
        order,
        preference,
        flags: flags.to_ascii_uppercase(),
        service: service.clone(),
        regexp: regexp.clone(),
        replacement,
    })
}
