//! Names in no managed zone are errors, not deletions.
//!
//! Why: a typo in the *domain* of a name (`www.exmaple.com` where the zone is
//! `example.com`) used to read as "`www.example.com` is no longer desired", and the
//! planner deleted `www`. A source that knows the configured zones checks each endpoint
//! against them before it accepts anything: an endpoint whose name falls in no zone, or
//! whose RRSet the zone refuses (a TTL or value the RRSet check does not take, a CNAME
//! at the apex), makes its object invalid, so the object keeps its last accepted
//! version (as any other broken object does), and the error names the name and the
//! nearest zone by edit distance ("did you mean example.com?").
//!
//! One source deliberately fed to several planners, each managing some of its zones,
//! sets `outside_zones = "ignore"` on the source: names in no zone of this planner are
//! then left out without an error.
use super::DesiredEntry;
use super::dnsendpoint::{ParsedFile, Rejected, RejectedWhat};
use crate::config::ZoneConfig;
use dnsplane_common::{Name, RRSet};
use std::collections::BTreeSet;

pub use crate::config::OutsideZones;

/// The configured zone that holds `name`: the longest matching suffix.
pub fn zone_for<'a>(zones: &'a [ZoneConfig], name: &Name) -> Option<&'a ZoneConfig> {
    zones
        .iter()
        .filter(|z| name.is_within(&z.name))
        .max_by_key(|z| z.name.as_str().len())
}

/// The configured zones, as a source checks its endpoints against them.
#[derive(Debug, Clone)]
pub struct ZoneCheck {
    zones: Vec<ZoneConfig>,
    outside: OutsideZones,
}

/// What the check says about one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// In no zone, and the source ignores such names.
    Ignore,
    /// Why the entry cannot be taken.
    Refuse(String),
}

impl ZoneCheck {
    pub fn new(zones: &[ZoneConfig], outside: OutsideZones) -> ZoneCheck {
        ZoneCheck {
            zones: zones.to_vec(),
            outside,
        }
    }

    /// The zone that holds `name`: the longest configured suffix.
    fn zone_of(&self, name: &Name) -> Option<&ZoneConfig> {
        zone_for(&self.zones, name)
    }

    /// Whether a configured zone holds `name`.
    pub fn holds(&self, name: &Name) -> bool {
        self.zone_of(name).is_some()
    }

    /// Checks one entry: placed in its zone, it must make an RRSet.
    pub fn check(&self, e: &DesiredEntry) -> Verdict {
        let Some(zone) = self.zone_of(&e.name) else {
            return match self.outside {
                OutsideZones::Ignore => Verdict::Ignore,
                OutsideZones::Error => Verdict::Refuse(self.outside_message(&e.name)),
            };
        };
        match RRSet::from_canonical_with(
            e.key(zone.name.clone()),
            e.ttl.unwrap_or(zone.default_ttl),
            e.values.clone(),
            e.properties.clone(),
        ) {
            Ok(_) => Verdict::Fine,
            Err(err) => Verdict::Refuse(err.to_string()),
        }
    }

    /// Why `name` is refused: see [`outside_message`].
    pub fn outside_message(&self, name: &Name) -> String {
        outside_message(&self.zones, name)
    }

    /// Checks the accepted endpoints of a parsed file (or object): each object with an
    /// endpoint the zones refuse is rejected whole (it keeps its last accepted version
    /// in the keep-last-good merge), with one error per refused endpoint; ignored
    /// endpoints are left out.
    pub(crate) fn check_parsed(&self, parsed: &mut ParsedFile) {
        let mut refused: Vec<(std::sync::Arc<str>, super::SourceError)> = Vec::new();
        parsed.accepted.retain(|a| match self.check(&a.entry) {
            Verdict::Fine => true,
            Verdict::Ignore => false,
            Verdict::Refuse(why) => {
                refused.push((
                    a.slot.resource.clone(),
                    super::SourceError {
                        source: a.entry.origin.source.to_string(),
                        location: a.entry.origin.location.to_string(),
                        record: format!("{} {}", a.entry.name, a.entry.rtype),
                        message: format!("{why}; the whole object is refused"),
                    },
                ));
                true
            }
        });
        if refused.is_empty() {
            return;
        }
        let resources: BTreeSet<std::sync::Arc<str>> =
            refused.iter().map(|(r, _)| r.clone()).collect();
        parsed
            .accepted
            .retain(|a| !resources.contains(&a.slot.resource));
        for resource in resources {
            let start = parsed.errors.len();
            parsed.errors.extend(
                refused
                    .iter()
                    .filter(|(r, _)| *r == resource)
                    .map(|(_, e)| e.clone()),
            );
            parsed.rejected.push(Rejected {
                what: RejectedWhat::Resource(resource.to_string()),
                errors: start..parsed.errors.len(),
            });
        }
    }
}

/// "no configured zone holds www.exmaple.com. (zones: example.com.); did you mean
/// example.com?": the name, the zones, and the nearest of them.
pub fn outside_message(zones: &[ZoneConfig], name: &Name) -> String {
    let known: Vec<&str> = zones.iter().map(|z| z.name.as_str()).collect();
    let mut m = format!(
        "no configured zone holds {name} (zones: {})",
        known.join(", ")
    );
    if let Some(hint) = did_you_mean(zones, name) {
        m.push_str("; ");
        m.push_str(&hint);
    }
    m
}

/// "did you mean example.com?": the nearest zone to `name`, if any zone is configured.
pub fn did_you_mean(zones: &[ZoneConfig], name: &Name) -> Option<String> {
    nearest_zone(zones.iter().map(|z| &z.name), name)
        .map(|z| format!("did you mean {}?", z.as_str().trim_end_matches('.')))
}

/// The configured zone nearest to `name` by edit distance: each zone is compared with
/// the suffix of `name` that has as many labels (one more or one less too, for a
/// dropped or added dot). `None` when there is no zone.
pub fn nearest_zone<'a>(zones: impl Iterator<Item = &'a Name>, name: &Name) -> Option<&'a Name> {
    let labels: Vec<&str> = name
        .as_str()
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
        .collect();
    zones
        .map(|z| {
            let zone = z.as_str().trim_end_matches('.');
            let n = zone.split('.').filter(|l| !l.is_empty()).count();
            let best = (n.saturating_sub(1)..=n + 1)
                .filter(|k| (1..=labels.len()).contains(k))
                .map(|k| distance(&labels[labels.len() - k..].join("."), zone))
                .min()
                .unwrap_or(usize::MAX);
            (best, z)
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, z)| z)
}

/// Optimal string alignment distance (Levenshtein with adjacent transpositions): a
/// swapped pair of letters, the commonest typo, costs one.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, v) in d[0].iter_mut().enumerate() {
        *v = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Origin;
    use dnsplane_common::RecordType;

    fn zones(names: &[&str]) -> Vec<ZoneConfig> {
        names
            .iter()
            .map(|z| ZoneConfig::new(Name::parse(z).unwrap(), "a"))
            .collect()
    }

    fn entry(name: &str, rtype: RecordType, value: &str) -> DesiredEntry {
        DesiredEntry {
            name: Name::parse(name).unwrap(),
            rtype,
            ttl: None,
            values: vec![value.into()],
            set: Default::default(),
            properties: Vec::new(),
            labels: Default::default(),
            origin: Origin {
                source: "file".into(),
                location: "web.yaml:3".into(),
                resource: "DNSEndpoint default/web".into(),
            },
        }
    }

    #[test]
    fn the_nearest_zone_is_named() {
        let z = zones(&["example.com", "example.net", "sub.example.org"]);
        let near = |n: &str| {
            nearest_zone(z.iter().map(|z| &z.name), &Name::parse(n).unwrap())
                .map(|z| z.as_str().to_string())
        };
        assert_eq!(near("www.exmaple.com").as_deref(), Some("example.com."));
        assert_eq!(near("www.example.nte").as_deref(), Some("example.net."));
        assert_eq!(
            near("a.sub.exampel.org").as_deref(),
            Some("sub.example.org.")
        );
        // A dropped dot.
        assert_eq!(near("wwwexample.co").as_deref(), Some("example.com."));
        assert_eq!(
            nearest_zone(std::iter::empty(), &Name::parse("a.b").unwrap()),
            None
        );
        assert_eq!(distance("exmaple.com", "example.com"), 1);
        assert_eq!(distance("", "abc"), 3);
    }

    #[test]
    fn a_name_in_no_zone_is_refused_with_the_nearest_zone_unless_ignored() {
        let z = zones(&["example.com"]);
        let check = ZoneCheck::new(&z, OutsideZones::Error);
        assert_eq!(
            check.check(&entry("www.example.com", RecordType::A, "192.0.2.1")),
            Verdict::Fine
        );
        let Verdict::Refuse(why) =
            check.check(&entry("www.exmaple.com", RecordType::A, "192.0.2.1"))
        else {
            panic!("refused");
        };
        assert!(
            why.contains("www.exmaple.com.") && why.ends_with("did you mean example.com?"),
            "{why}"
        );
        let ignore = ZoneCheck::new(&z, OutsideZones::Ignore);
        assert_eq!(
            ignore.check(&entry("www.exmaple.com", RecordType::A, "192.0.2.1")),
            Verdict::Ignore
        );
        // What the zone's RRSet check refuses: a CNAME at the apex.
        let Verdict::Refuse(why) =
            ignore.check(&entry("example.com", RecordType::Cname, "x.example.net."))
        else {
            panic!("refused");
        };
        assert!(why.contains("apex"), "{why}");
    }

    /// The typo of the report, through the parser and the keep-last-good merge: the
    /// object keeps its last accepted version, www included.
    #[test]
    fn a_typo_in_a_domain_keeps_the_objects_last_accepted_version() {
        use crate::source::dnsendpoint::parse_file;
        use crate::source::file::merge::merge;
        let manifest = |www: &str| {
            format!(
                "kind: DNSEndpoint\nmetadata: {{name: web, namespace: default}}\nspec:\n  endpoints:\n    - dnsName: app.example.com\n      recordType: A\n      targets: [192.0.2.10]\n    - dnsName: {www}\n      recordType: A\n      targets: [192.0.2.20]\n"
            )
        };
        let check = ZoneCheck::new(&zones(&["example.com"]), OutsideZones::Error);
        let mut first = parse_file("web.yaml", &manifest("www.example.com"));
        check.check_parsed(&mut first);
        let accepted = merge(&mut first, None);
        assert_eq!(accepted.len(), 2);

        let mut typo = parse_file("web.yaml", &manifest("www.exmaple.com"));
        check.check_parsed(&mut typo);
        let kept = merge(&mut typo, Some(&accepted));
        assert_eq!(kept, accepted, "the last accepted version, www included");
        assert_eq!(typo.errors.len(), 1, "{:?}", typo.errors);
        let e = &typo.errors[0];
        assert_eq!(e.record, "www.exmaple.com. A");
        assert!(e.location.starts_with("web.yaml:"), "{e}");
        assert!(
            e.message.contains("did you mean example.com?")
                && e.message
                    .contains("keeping this resource's 2 last accepted record(s)"),
            "{e}"
        );

        // Ignored: left out, the rest of the object accepted.
        let ignore = ZoneCheck::new(&zones(&["example.com"]), OutsideZones::Ignore);
        let mut typo = parse_file("web.yaml", &manifest("www.exmaple.com"));
        ignore.check_parsed(&mut typo);
        assert_eq!(typo.accepted.len(), 1);
        assert!(typo.errors.is_empty() && typo.rejected.is_empty());
    }
}
