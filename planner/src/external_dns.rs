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
//!
//! With `--txt-encrypt-enabled` external-dns writes each mark's value sealed with its
//! AES key (`crypto.rs`); it reads a value by opening it with the key, else as a plain
//! mark (a registry may hold both). With `aes_key_file`, [`Registry`] reads the same way
//! and writes sealed marks.
use crate::config::ExternalDnsConfig;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::borrow::Cow;
use std::sync::Arc;

mod crypto;

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

/// The owner and resource of a plain external-dns mark; `None` when the TXT is not one
/// (another heritage, none, or encrypted: [`Registry::parse`] reads those).
pub fn parse_value(rrset: &RRSet) -> Option<Mark> {
    if rrset.key.rtype != RecordType::Txt {
        return None;
    }
    rrset.values().find_map(|v| parse_text(&txt_text(v)?))
}

/// The text of one TXT value in presentation form (`"a" "b"`: its strings joined, as a
/// value longer than 255 bytes is split); `None` when it is not quoted.
fn txt_text(value: &str) -> Option<Cow<'_, str>> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    Some(match inner.contains("\" \"") {
        true => Cow::Owned(inner.replace("\" \"", "")),
        false => Cow::Borrowed(inner),
    })
}

/// The mark in a plain label text (`heritage=external-dns,external-dns/owner=…`).
fn parse_text(text: &str) -> Option<Mark> {
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
}

/// The plain value external-dns writes for `owner` (a [`Registry::mark_value`] is
/// what a zone's config says to write). An empty `resource` leaves its label out, as
/// external-dns serialises only the labels an endpoint has.
pub fn value(owner: &str, resource: &str) -> String {
    if resource.is_empty() {
        return format!("heritage=external-dns,external-dns/owner={owner}");
    }
    format!("heritage=external-dns,external-dns/owner={owner},external-dns/resource={resource}")
}

/// external-dns's naming and marks, as configured for one zone.
#[derive(Debug, Clone)]
pub struct Registry<'a> {
    cfg: &'a ExternalDnsConfig,
    /// The zone's `aes_key_file`, when it has one.
    cipher: Option<Arc<crypto::Cipher>>,
}

impl<'a> Registry<'a> {
    /// The registry `cfg` describes. Its key is the one `PlannerConfig::validate` read;
    /// a config never validated reads it here, and without it reads plain marks only.
    pub fn new(cfg: &'a ExternalDnsConfig) -> Registry<'a> {
        let cipher = cfg
            .aes_key_file
            .as_ref()
            .and_then(|f| f.key().ok())
            .map(|k| Arc::new(crypto::Cipher::new(k)));
        Registry { cfg, cipher }
    }

    /// The owner and resource of the mark `rrset`; `None` when the TXT is not one. A
    /// value is opened with the zone's key when it has one and read as a plain mark
    /// when it does not open, as external-dns reads: a value that neither opens nor
    /// parses (or opens to another heritage) is ordinary data.
    pub fn parse(&self, rrset: &RRSet) -> Option<Mark> {
        if rrset.key.rtype != RecordType::Txt {
            return None;
        }
        rrset.values().find_map(|v| {
            let text = txt_text(v)?;
            match self.cipher.as_ref().and_then(|c| c.open(&text)) {
                Some(plain) => parse_text(&plain),
                None => parse_text(&text),
            }
        })
    }

    /// The TXT value of a mark of `owner` for `resource`, as external-dns run with this
    /// config writes it: sealed under a fresh nonce when the zone has a key, plain
    /// otherwise. Unquoted, as [`value`]: `RRSet::new` takes it as one TXT value.
    pub fn mark_value(&self, owner: &str, resource: &str) -> String {
        let text = value(owner, resource);
        match &self.cipher {
            Some(c) => c.seal(&text),
            None => text,
        }
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
        let block = dnsplane_testing::docs::code_block_with(doc, "toml", "[zones.external_dns]");
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

    /// With a key, a sealed mark reads back to its owner and resource, and so does a
    /// plain one (a registry may hold both); under another key, or none, a sealed
    /// value falls back to plain reading and is no mark; what is neither is data.
    #[test]
    fn sealed_and_plain_marks_read_with_a_key() {
        let k = key("a-www.example.com", RecordType::Txt);
        let mut c = cfg("", "", "");
        c.aes_key_file = Some(crate::config::AesKeyFile::test_key(3));
        let reg = Registry::new(&c);
        let sealed = reg.mark_value("k8s", "ingress/default/web");
        assert!(!sealed.contains("heritage"), "{sealed}");
        assert_ne!(
            sealed,
            reg.mark_value("k8s", "ingress/default/web"),
            "fresh nonce"
        );
        let mark = Mark {
            owner: "k8s".into(),
            resource: "ingress/default/web".into(),
        };
        let rr = |v: &str| RRSet::new(k.clone(), 300, &[v]).unwrap();
        assert_eq!(reg.parse(&rr(&sealed)), Some(mark.clone()));
        assert_eq!(
            reg.parse(&rr(&value("k8s", "ingress/default/web"))),
            Some(mark.clone())
        );
        assert_eq!(parse_value(&rr(&sealed)), None, "no key: not a mark");

        let mut other = cfg("", "", "");
        other.aes_key_file = Some(crate::config::AesKeyFile::test_key(5));
        let wrong = Registry::new(&other);
        assert_eq!(wrong.parse(&rr(&sealed)), None, "another key: not a mark");
        assert_eq!(Registry::new(&cfg("", "", "")).parse(&rr(&sealed)), None);
        assert_eq!(
            &*wrong.parse(&rr(&value("k8s", "r"))).unwrap().resource,
            "r"
        );

        // A sealed value of another heritage, or of no labels, is data.
        let c3 = crypto::Cipher::new(c.aes_key_file.as_ref().unwrap().key().unwrap());
        for text in ["heritage=dnsplane,dnsplane/owner=k8s", "v=spf1 -all"] {
            assert_eq!(reg.parse(&rr(&c3.seal(text))), None, "{text}");
        }
        // Not TXT: never a mark.
        let a = RRSet::new(key("a-www.example.com", RecordType::A), 300, &["192.0.2.1"]).unwrap();
        assert_eq!(reg.parse(&a), None);
        // Without a key the writer writes what `value` does.
        assert_eq!(
            Registry::new(&cfg("", "", "")).mark_value("k8s", "r"),
            value("k8s", "r")
        );
    }

    /// A sealed mark too long for one TXT string (a long resource) is split at 255
    /// bytes in the record and still reads back whole.
    #[test]
    fn a_long_sealed_mark_reads_back_from_split_strings() {
        let mut c = cfg("", "", "");
        c.aes_key_file = Some(crate::config::AesKeyFile::test_key(11));
        let reg = Registry::new(&c);
        // Random-looking, so that gzip cannot shrink it below 255 bytes.
        let resource: String = (0..300u32)
            .map(|i| char::from(b'a' + ((i.wrapping_mul(2_654_435_761) >> 7) % 26) as u8))
            .collect();
        let v = reg.mark_value("k8s", &resource);
        assert!(v.len() > 255, "{}", v.len());
        let rr = RRSet::new(key("a-www.example.com", RecordType::Txt), 300, &[&v]).unwrap();
        assert!(rr.values().next().unwrap().contains("\" \""), "split");
        assert_eq!(&*reg.parse(&rr).unwrap().resource, resource);
    }
}
