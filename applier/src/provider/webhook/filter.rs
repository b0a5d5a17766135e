//! The domain filter a webhook server answers negotiation with: which names it manages.
//! Matched as external-dns matches it (`endpoint/domain_filter.go`), so dnsplane lists
//! and writes exactly the names external-dns would.
//!
//! - List mode (`include`, `exclude`): an entry `a.b` covers `a.b` and every name below
//!   it; `.a.b` only the names below it; an empty `include` covers everything; an
//!   exclusion wins. Compared in IDNA ASCII form (external-dns compares Unicode; the
//!   mapping is one to one, so the answers are the same).
//! - Regex mode (`regexInclude`, `regexExclude`): matched against the Unicode name
//!   without its trailing dot; an exclusion wins, an empty include covers everything.
//!   (external-dns ignores the include once an exclusion is set; dnsplane applies both,
//!   the reading that never writes a name the include leaves out.)
use dnsplane_common::Name;
use regex::Regex;
use serde::Deserialize;

/// The filter as the server sends it (Go field names, any of them absent).
#[derive(Clone, Debug, Default, Deserialize)]
pub(super) struct WireFilter {
    #[serde(default)]
    include: Option<Vec<String>>,
    #[serde(default)]
    exclude: Option<Vec<String>>,
    #[serde(default, rename = "regexInclude")]
    regex_include: Option<String>,
    #[serde(default, rename = "regexExclude")]
    regex_exclude: Option<String>,
}

/// A filter entry of list mode, in dnsplane's form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Absolute, lower-case, IDNA ASCII (with its trailing dot).
    name: Name,
    /// `.a.b`: only names below `a.b`.
    below_only: bool,
}

/// A compiled domain filter.
#[derive(Clone, Debug)]
pub enum DomainFilter {
    List {
        include: Vec<Entry>,
        exclude: Vec<Entry>,
    },
    Regex {
        include: Option<Regex>,
        exclude: Option<Regex>,
    },
}

fn entries(raw: &[String]) -> Result<Vec<Entry>, String> {
    raw.iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (below_only, body) = match s.strip_prefix('.') {
                Some(rest) => (true, rest),
                None => (false, s),
            };
            Name::parse(body)
                .map(|name| Entry { name, below_only })
                .map_err(|e| format!("domain filter entry {s:?}: {e}"))
        })
        .collect()
}

fn regex(raw: Option<&str>, which: &str) -> Result<Option<Regex>, String> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(r) => Regex::new(r)
            .map(Some)
            .map_err(|e| format!("domain filter {which} {r:?}: {e}")),
    }
}

impl Entry {
    fn covers(&self, name: &Name) -> bool {
        name.is_within(&self.name) && !(self.below_only && *name == self.name)
    }
}

impl DomainFilter {
    /// Compiles the server's answer; mixing the list and regex modes is refused, as
    /// external-dns refuses it ("cannot have both domain list and regex").
    pub(super) fn compile(wire: &WireFilter) -> Result<DomainFilter, String> {
        let lists = wire.include.as_ref().is_some_and(|v| !v.is_empty())
            || wire.exclude.as_ref().is_some_and(|v| !v.is_empty());
        let regexes = wire.regex_include.as_ref().is_some_and(|v| !v.is_empty())
            || wire.regex_exclude.as_ref().is_some_and(|v| !v.is_empty());
        if lists && regexes {
            return Err("the domain filter has both a domain list and a regex".into());
        }
        if regexes {
            return Ok(DomainFilter::Regex {
                include: regex(wire.regex_include.as_deref(), "regexInclude")?,
                exclude: regex(wire.regex_exclude.as_deref(), "regexExclude")?,
            });
        }
        Ok(DomainFilter::List {
            include: entries(wire.include.as_deref().unwrap_or_default())?,
            exclude: entries(wire.exclude.as_deref().unwrap_or_default())?,
        })
    }

    /// Whether the server manages `name`.
    pub fn matches(&self, name: &Name) -> bool {
        match self {
            DomainFilter::List { include, exclude } => {
                (include.is_empty() || include.iter().any(|e| e.covers(name)))
                    && !exclude.iter().any(|e| e.covers(name))
            }
            DomainFilter::Regex { include, exclude } => {
                let text = unicode(name);
                !exclude.as_ref().is_some_and(|r| r.is_match(&text))
                    && include.as_ref().is_none_or(|r| r.is_match(&text))
            }
        }
    }

    /// Whether the server manages anything of `zone`: its apex, or (list mode) a name
    /// that an include entry puts below it and no exclusion takes away.
    pub fn admits_zone(&self, zone: &Name) -> bool {
        if self.matches(zone) {
            return true;
        }
        match self {
            DomainFilter::List { include, exclude } => include.iter().any(|e| {
                e.name.is_within(zone)
                    && e.name != *zone
                    && !exclude.iter().any(|x| x.covers(&e.name))
            }),
            DomainFilter::Regex { .. } => false,
        }
    }

    /// The filter as a server would write it, for messages.
    pub fn describe(&self) -> String {
        let list = |v: &[Entry]| {
            v.iter()
                .map(|e| {
                    let n = e.name.as_str().trim_end_matches('.');
                    if e.below_only {
                        format!(".{n}")
                    } else {
                        n.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            DomainFilter::List { include, exclude } => {
                format!("include [{}], exclude [{}]", list(include), list(exclude))
            }
            DomainFilter::Regex { include, exclude } => format!(
                "regexInclude {:?}, regexExclude {:?}",
                include.as_ref().map_or("", Regex::as_str),
                exclude.as_ref().map_or("", Regex::as_str)
            ),
        }
    }
}

/// The name as external-dns matches regexes against it: Unicode, no trailing dot.
fn unicode(name: &Name) -> String {
    let ascii = name.as_str().trim_end_matches('.');
    let (text, result) = idna::domain_to_unicode(ascii);
    if result.is_ok() { text } else { ascii.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    fn list(include: &[&str], exclude: &[&str]) -> DomainFilter {
        let v = |x: &[&str]| Some(x.iter().map(|s| s.to_string()).collect());
        DomainFilter::compile(&WireFilter {
            include: v(include),
            exclude: v(exclude),
            ..WireFilter::default()
        })
        .unwrap()
    }

    #[test]
    fn list_mode_matches_as_external_dns() {
        let f = list(&["example.com", ".sub.example.org"], &["int.example.com"]);
        assert!(f.matches(&n("example.com")));
        assert!(f.matches(&n("a.b.example.com")));
        assert!(!f.matches(&n("badexample.com")), "a label boundary");
        assert!(!f.matches(&n("int.example.com")), "exclusion wins");
        assert!(!f.matches(&n("x.int.example.com")));
        assert!(!f.matches(&n("sub.example.org")), "leading dot: below only");
        assert!(f.matches(&n("a.sub.example.org")));
        assert!(list(&[], &[]).matches(&n("anything.test")));
        // A zone is admitted by its apex or by an include entry below it.
        assert!(f.admits_zone(&n("example.com")));
        assert!(f.admits_zone(&n("example.org")));
        assert!(!f.admits_zone(&n("example.net")));
        assert!(!f.admits_zone(&n("int.example.com")));
    }

    #[test]
    fn regex_mode_and_mixed_modes() {
        let f = DomainFilter::compile(&WireFilter {
            regex_include: Some(r"(^|\.)example\.com$".into()),
            regex_exclude: Some(r"^int\.".into()),
            ..WireFilter::default()
        })
        .unwrap();
        assert!(f.matches(&n("example.com")));
        assert!(f.matches(&n("www.example.com")));
        assert!(!f.matches(&n("int.example.com")));
        assert!(!f.matches(&n("example.net")));
        assert!(!f.admits_zone(&n("example.net")));
        // Unicode, as external-dns normalises names before matching.
        let u = DomainFilter::compile(&WireFilter {
            regex_include: Some("^bücher\\.test$".into()),
            ..WireFilter::default()
        })
        .unwrap();
        assert!(u.matches(&n("xn--bcher-kva.test")));
        let mixed = DomainFilter::compile(&WireFilter {
            include: Some(vec!["a.test".into()]),
            regex_include: Some("x".into()),
            ..WireFilter::default()
        });
        assert!(mixed.unwrap_err().contains("both"));
        assert!(
            DomainFilter::compile(&WireFilter {
                regex_include: Some("(".into()),
                ..WireFilter::default()
            })
            .is_err()
        );
    }
}
