//! external-dns's TXT registry, read so that a zone external-dns managed can be taken
//! over (`[zones.external_dns]`, door 2 of `docs/external-dns.md`). Only the format:
//! which TXT records are external-dns's marks, what they own, and whose they are.
//! The zone view (`observed.rs`) keeps them apart from data; `plan/external_dns.rs`
//! plans the takeover.
//!
//! external-dns (`registry/mapper`) names a record's mark from the record's name and
//! type, adding its `--txt-prefix` before the first label or its `--txt-suffix` after
//! it (exclusive; either may hold `%{record_type}`, which then takes the type's place):
//!
//! ```text
//! new format:  a-www.example.com.      TXT "heritage=external-dns,external-dns/owner=k8s,external-dns/resource=ingress/default/web"
//! old format:  www.example.com.        TXT (same value; owns every type at the name but AAAA)
//! ```
//!
//! A leading `*` is replaced by `--txt-wildcard-replacement` when set. A TXT whose
//! value has another heritage (or none) is ordinary data.
use crate::config::ExternalDnsConfig;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::sync::Arc;

/// external-dns's placeholder for the type in an affix.
const TEMPLATE: &str = "%{record_type}";

/// The two names external-dns ever gave a record's mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `<type>-<name>` (or the type where the affix's template says), since v0.12.
    New,
    /// The record's own name with the affixes (template dropped): owns every type at
    /// the name but AAAA, as external-dns's reader falls back for.
    Old,
}

/// An external-dns mark as read from its TXT value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub owner: Arc<str>,
    pub resource: Arc<str>,
}

/// The owner and resource of an external-dns mark; `None` when the TXT is not one
/// (another heritage, none, or encrypted).
pub fn parse_value(rrset: &RRSet) -> Option<Mark> {
    if rrset.key.rtype != RecordType::Txt {
        return None;
    }
    rrset.values().find_map(|v| {
        let text = v.strip_prefix('"')?.strip_suffix('"')?;
        let mut heritage = false;
        let (mut owner, mut resource) = (None, "");
        for part in text.split(',') {
            let (k, v) = part.split_once('=')?;
            match k {
                "heritage" => heritage = v == "external-dns",
                "external-dns/owner" => owner = Some(v),
                "external-dns/resource" => resource = v,
                _ => {}
            }
        }
        heritage.then(|| Mark {
            owner: owner.unwrap_or("").into(),
            resource: resource.into(),
        })
    })
}

/// The value external-dns writes for `owner` (for tests and fixtures).
pub fn value(owner: &str, resource: &str) -> String {
    format!("heritage=external-dns,external-dns/owner={owner},external-dns/resource={resource}")
}

/// external-dns's naming, as configured for one zone.
#[derive(Debug, Clone)]
pub struct Registry<'a> {
    cfg: &'a ExternalDnsConfig,
}

impl<'a> Registry<'a> {
    pub fn new(cfg: &'a ExternalDnsConfig) -> Registry<'a> {
        Registry { cfg }
    }

    pub fn owner_id(&self) -> &str {
        &self.cfg.owner_id
    }

    fn type_in_affix(&self) -> bool {
        self.cfg.txt_prefix.contains(TEMPLATE) || self.cfg.txt_suffix.contains(TEMPLATE)
    }

    /// The name of `key`'s mark in `format` (`None` when that name is not a valid one,
    /// e.g. an unreplaced `*` in the new format). As external-dns's `toNewTXTName` and
    /// `toTXTName`: the affixes go around the first label, the rest follows.
    pub fn txt_name(&self, key: &RecordKey, format: Format) -> Option<Name> {
        let full = key.name.as_str().strip_suffix('.')?;
        let (first, rest) = match full.split_once('.') {
            Some((f, r)) => (f, Some(r)),
            None => (full, None),
        };
        let first = match (&*self.cfg.wildcard_replacement, first) {
            (r, "*") if !r.is_empty() => r,
            _ => first,
        };
        let t = key.rtype.as_str().to_ascii_lowercase();
        let (prefix, suffix, first) = match format {
            Format::New => {
                let first = if self.type_in_affix() {
                    first.to_string()
                } else {
                    format!("{t}-{first}")
                };
                (
                    self.cfg.txt_prefix.replace(TEMPLATE, &t),
                    self.cfg.txt_suffix.replace(TEMPLATE, &t),
                    first,
                )
            }
            Format::Old => (
                self.cfg.txt_prefix.replace(TEMPLATE, ""),
                self.cfg.txt_suffix.replace(TEMPLATE, ""),
                first.to_string(),
            ),
        };
        let name = match rest {
            Some(rest) => format!("{prefix}{first}{suffix}.{rest}"),
            None => format!("{prefix}{first}{suffix}"),
        };
        Name::parse(&name).ok()
    }

    /// What a mark named `txt` may own: each (name, type) the new format reads it as,
    /// and the name the old format reads it as (type `None`: every type but AAAA).
    /// The inverse of [`Registry::txt_name`], as external-dns's `toEndpointName`.
    pub fn owned_by(&self, txt: &Name) -> Vec<(Name, Option<RecordType>)> {
        let mut out = Vec::new();
        let candidates = RecordType::ALL
            .into_iter()
            .map(|t| (Format::New, Some(t)))
            .chain([(Format::Old, None)]);
        for (format, t) in candidates {
            let Some(name) = self.strip(txt, t) else {
                continue;
            };
            let probe = RecordKey::new(name.clone(), name.clone(), t.unwrap_or(RecordType::A));
            // Only a true inverse counts (a prefix that merely looks like one does not).
            if self.txt_name(&probe, format).as_ref() == Some(txt) {
                out.push((name, t));
            }
        }
        out
    }

    /// `txt` with the affixes of type `t` (`None`: the old format's) and the type
    /// label taken off; wildcard replacement undone.
    fn strip(&self, txt: &Name, t: Option<RecordType>) -> Option<Name> {
        let tl = t.map(|t| t.as_str().to_ascii_lowercase());
        let fill = tl.as_deref().unwrap_or("");
        let prefix = self.cfg.txt_prefix.replace(TEMPLATE, fill);
        let suffix = self.cfg.txt_suffix.replace(TEMPLATE, fill);
        let full = txt.as_str().strip_suffix('.')?;
        let body = full.strip_prefix(&*prefix)?;
        // The suffix ends the first label of the owned name; it may hold dots.
        let dots = suffix.matches('.').count();
        let mut parts = body.splitn(dots + 2, '.');
        let head: Vec<&str> = parts.by_ref().take(dots + 1).collect();
        let rest = parts.next();
        let first = head.join(".");
        let first = first.strip_suffix(&*suffix)?;
        let first = match (&tl, self.type_in_affix()) {
            (Some(t), false) => first.strip_prefix(&format!("{t}-"))?,
            _ => first,
        };
        let first = match &*self.cfg.wildcard_replacement {
            r if !r.is_empty() && first == r => "*",
            _ => first,
        };
        Name::parse(&match rest {
            Some(rest) => format!("{first}.{rest}"),
            None => first.to_string(),
        })
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_testing::records::key;

    fn cfg(prefix: &str, suffix: &str, wildcard: &str) -> ExternalDnsConfig {
        ExternalDnsConfig {
            owner_id: "k8s".into(),
            txt_prefix: prefix.into(),
            txt_suffix: suffix.into(),
            wildcard_replacement: wildcard.into(),
            aes_key_file: None,
        }
    }

    /// Every supported form names marks as external-dns does, and reads back to the
    /// record it owns.
    #[test]
    fn names_round_trip_in_every_form() {
        #[rustfmt::skip]
        let cases = [
            ("", "", "", "www.example.com", RecordType::A, "a-www.example.com.", "www.example.com."),
            ("", "", "", "www.example.com", RecordType::Cname, "cname-www.example.com.", "www.example.com."),
            ("ext-", "", "", "www.example.com", RecordType::Aaaa, "ext-aaaa-www.example.com.", "ext-www.example.com."),
            ("_extdns.", "", "", "www.example.com", RecordType::A, "_extdns.a-www.example.com.", "_extdns.www.example.com."),
            ("%{record_type}-ext.", "", "", "www.example.com", RecordType::Mx, "mx-ext.www.example.com.", ""),
            // The apex with a prefix holding the template and ending in a dot (docs).
            ("%{record_type}.", "", "", "example.com", RecordType::A, "a.example.com.", ""),
            ("", "-txt", "", "www.example.com", RecordType::A, "a-www-txt.example.com.", "www-txt.example.com."),
            ("", ".%{record_type}-ext", "", "www.example.com", RecordType::Cname, "www.cname-ext.example.com.", ""),
            ("", "", "wild", "*.apps.example.com", RecordType::A, "a-wild.apps.example.com.", "wild.apps.example.com."),
            ("ext-", "", "any", "*.example.com", RecordType::Cname, "ext-cname-any.example.com.", "ext-any.example.com."),
        ];
        for (prefix, suffix, wild, name, t, new, old) in cases {
            let c = cfg(prefix, suffix, wild);
            let reg = Registry::new(&c);
            let k = key(name, t);
            let txt = reg.txt_name(&k, Format::New).unwrap();
            assert_eq!(txt.as_str(), new, "{prefix:?} {suffix:?} {name}");
            assert!(
                reg.owned_by(&txt).contains(&(k.name.clone(), Some(t))),
                "{txt} → {:?}",
                reg.owned_by(&txt)
            );
            if !old.is_empty() {
                let txt = reg.txt_name(&k, Format::Old).unwrap();
                assert_eq!(txt.as_str(), old);
                assert!(reg.owned_by(&txt).contains(&(k.name.clone(), None)));
            }
        }
    }

    /// Without a prefix, a record's mark at the apex lands outside the zone (as
    /// external-dns's docs warn); a wildcard without a replacement has no new-format
    /// name (external-dns cannot write one either); a plain name is the old format's.
    #[test]
    fn apex_wildcard_and_plain_names() {
        let c = cfg("", "", "");
        let reg = Registry::new(&c);
        let apex = key("example.com", RecordType::A);
        let txt = reg.txt_name(&apex, Format::New).unwrap();
        assert!(!txt.is_within(&apex.zone), "{txt}");
        assert!(
            reg.txt_name(&key("*.example.com", RecordType::A), Format::New)
                .is_none()
        );
        let plain = Name::parse("www.example.com").unwrap();
        assert_eq!(reg.owned_by(&plain), [(plain.clone(), None)]);
    }

    /// Door 2's config in docs/external-dns.md loads as it is.
    #[test]
    fn the_documented_config_loads() {
        let doc = include_str!("../../docs/external-dns.md");
        let block = doc
            .split("```toml")
            .find(|b| b.contains("[zones.external_dns]"))
            .and_then(|b| b.split("```").next())
            .expect("door 2's toml block");
        let config: crate::config::PlannerConfig = toml::from_str(block).unwrap();
        config.validate().expect("valid");
        let e = config.zones[0].external_dns.as_ref().expect("external_dns");
        assert_eq!((&*e.owner_id, &*e.txt_prefix), ("my-cluster", "ext-"));
    }

    #[test]
    fn only_external_dns_heritage_is_a_mark() {
        let k = key("a-www.example.com", RecordType::Txt);
        let mark = RRSet::new(k.clone(), 300, &[value("k8s", "ingress/default/web")]).unwrap();
        assert_eq!(
            parse_value(&mark),
            Some(Mark {
                owner: "k8s".into(),
                resource: "ingress/default/web".into()
            })
        );
        for other in [
            "heritage=dnsplane,dnsplane/owner=k8s",
            "v=spf1 -all",
            "heritage=external-dns-not",
        ] {
            let rr = RRSet::new(k.clone(), 300, &[other]).unwrap();
            assert_eq!(parse_value(&rr), None, "{other}");
        }
    }
}
