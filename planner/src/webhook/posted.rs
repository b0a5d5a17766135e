//! The targets as external-dns posted them, kept so that `GET /records` gives each one
//! back byte for byte.
//!
//! external-dns compares targets with `endpoint.Targets.Same`: sorted, case aside, IP
//! addresses by value, and nothing else. A TXT target posted as `v=spf1 -all` and
//! listed as dnsplane's canonical `"v=spf1 -all"` is an update on every loop, forever;
//! and external-dns's own TXT registry posts its targets with the quotes in them, so no
//! one spelling can be chosen for both. The provider gets dnsplane's canonical data
//! (TXT correctly quoted); the spelling is kept beside it.
//!
//! It is kept in the entry's labels, under [`KEY`], only when it differs from what
//! dnsplane would list anyway (most endpoints carry nothing): labels are persisted
//! with the push, survive a restart, are never planned nor sent to a provider (a
//! change of spelling alone writes nothing), and are not listed by `GET /records`. A
//! label holds at most [`MAX_LABEL_VALUE`] bytes, so a long spelling takes several
//! (`dnsplane/targets`, `dnsplane/targets.1`, …). What is kept is used only while it
//! still stands for the record's values; otherwise (a record pushed another way, a
//! state written before this was kept) dnsplane's canonical form is listed.
use crate::source::labels::{MAX_LABEL_VALUE, MAX_LABELS};
use dnsplane_common::{Name, RecordType};
use std::collections::BTreeMap;

/// The label that holds the posted targets (JSON), and the prefix of its
/// continuations.
pub(crate) const KEY: &str = "dnsplane/targets";

/// The key of the `i`-th part.
fn part_key(i: usize) -> String {
    match i {
        0 => KEY.to_string(),
        _ => format!("{KEY}.{i}"),
    }
}

/// Whether `key` is one of dnsplane's own (external-dns never sends it).
pub(crate) fn is_reserved(key: &str) -> bool {
    key == KEY || key.strip_prefix(KEY).is_some_and(|r| r.starts_with('.'))
}

/// Adds `posted` to `labels`, cut in parts a label can hold; `Err` says why it cannot
/// be kept (too many labels).
pub(crate) fn keep(labels: &mut BTreeMap<String, String>, posted: &[String]) -> Result<(), String> {
    // JSON escapes C0 controls; C1 ones (U+0080..U+009F), which a label may not hold
    // either, are escaped here (only strings hold characters, and `\uXXXX` is one).
    let json = serde_json::to_string(posted)
        .map_err(|e| e.to_string())?
        .chars()
        .fold(String::new(), |mut out, c| {
            match c.is_control() {
                true => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                false => out.push(c),
            }
            out
        });
    let mut parts = Vec::new();
    let mut rest = json.as_str();
    while !rest.is_empty() {
        let mut cut = rest.len().min(MAX_LABEL_VALUE);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if labels.len() + parts.len() > MAX_LABELS {
        return Err(format!(
            "the targets as posted ({} bytes) need {} labels to be kept beside the endpoint's {}, \
             above the {MAX_LABELS} a record holds; send fewer or shorter targets",
            json.len(),
            parts.len(),
            labels.len()
        ));
    }
    for (i, p) in parts.into_iter().enumerate() {
        labels.insert(part_key(i), p.to_string());
    }
    Ok(())
}

/// Takes the posted targets out of `labels` (what is left is external-dns's), when
/// they are there and readable.
pub(crate) fn take(labels: &mut BTreeMap<String, String>) -> Option<Vec<String>> {
    let mut json = String::new();
    let mut i = 0;
    while let Some(part) = labels.remove(&part_key(i)) {
        json.push_str(&part);
        i += 1;
    }
    labels.retain(|k, _| !is_reserved(k));
    serde_json::from_str(&json).ok()
}

/// The canonical values `targets` stand for (sorted, without duplicates), as a pushed
/// record's are made ([`crate::service::push::check_record`]); `None` when one is not
/// a value of `rtype`.
pub(crate) fn canonical(rtype: RecordType, alias: bool, targets: &[String]) -> Option<Vec<String>> {
    let mut values = targets
        .iter()
        .map(|t| match alias {
            true => Name::parse(t).map(|n| n.to_string()).ok(),
            false => dnsplane_common::rdata::canonicalize(rtype, t).ok(),
        })
        .collect::<Option<Vec<String>>>()?;
    values.sort();
    values.dedup();
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_parts_read_back_and_leave_the_other_labels() {
        let posted: Vec<String> = vec![
            "v=spf1 -all".into(),
            "é\"\\".repeat(700),
            "tab\tnext\u{85}line".into(),
        ];
        let mut labels: BTreeMap<String, String> = [("owner".to_string(), "c1".to_string())].into();
        keep(&mut labels, &posted).unwrap();
        assert!(labels.len() > 3, "cut in parts: {labels:?}");
        assert!(labels.values().all(|v| v.len() <= MAX_LABEL_VALUE));
        crate::source::Labels::new(labels.clone()).expect("labels a record can hold");
        assert!(labels.keys().filter(|k| is_reserved(k)).count() == labels.len() - 1);
        assert_eq!(take(&mut labels), Some(posted));
        assert_eq!(labels, [("owner".to_string(), "c1".to_string())].into());
        assert!(!is_reserved("dnsplane/targetsx") && is_reserved("dnsplane/targets.7"));
    }

    #[test]
    fn too_many_parts_are_refused_saying_why() {
        let mut labels: BTreeMap<String, String> = (0..30)
            .map(|i| (format!("k{i}"), "v".to_string()))
            .collect();
        let e = keep(&mut labels, &["x".repeat(3000)]).unwrap_err();
        assert!(e.contains("need 3 labels") && e.contains("30"), "{e}");
    }
}
