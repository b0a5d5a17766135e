//! What a token may touch: some zones, and/or the names at or below one name. A scope
//! limits writes (the records of a push or patch, and those a push would replace) and
//! zone actions (Sync, Plan, Approve, Release, Resume) and `History` (the audit
//! events of records in scope); reads of status and record states are not scoped.
use dnsplane_common::Name;

/// A token's scope; the default allows everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Only these zones (`None`: any).
    pub zones: Option<Vec<Name>>,
    /// Only names at or below this one, at a label boundary (`None`: any).
    pub name_suffix: Option<Name>,
}

impl Scope {
    pub fn is_unrestricted(&self) -> bool {
        self.zones.is_none() && self.name_suffix.is_none()
    }

    /// A record called `name` that belongs to `zone` (`None`: to no configured zone,
    /// which only an unscoped token may name; the push is refused for it anyway).
    pub fn allows_record(&self, zone: Option<&Name>, name: &Name) -> bool {
        if let Some(zones) = &self.zones
            && !zone.is_some_and(|z| zones.contains(z))
        {
            return false;
        }
        match &self.name_suffix {
            Some(s) => name.is_within(s),
            None => true,
        }
    }

    /// A zone-wide action on `zone`: the zone is one of `zones`, and it overlaps the
    /// name suffix (the suffix is in the zone, or the zone below the suffix).
    pub fn allows_zone(&self, zone: &Name) -> bool {
        if let Some(zones) = &self.zones
            && !zones.contains(zone)
        {
            return false;
        }
        match &self.name_suffix {
            Some(s) => s.is_within(zone) || zone.is_within(s),
            None => true,
        }
    }

    /// For errors: `zones [a., b.], names at or below x.a.`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(z) = &self.zones {
            let z: Vec<&str> = z.iter().map(Name::as_str).collect();
            parts.push(format!("zones [{}]", z.join(", ")));
        }
        if let Some(s) = &self.name_suffix {
            parts.push(format!("names at or below {s}"));
        }
        if parts.is_empty() {
            "everything".into()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    #[test]
    fn zones_limit_records_and_zone_actions() {
        let s = Scope {
            zones: Some(vec![n("a.test.")]),
            name_suffix: None,
        };
        assert!(s.allows_record(Some(&n("a.test.")), &n("www.a.test.")));
        assert!(!s.allows_record(Some(&n("b.test.")), &n("www.b.test.")));
        // Placed in a child zone of its own: not the parent's.
        assert!(!s.allows_record(Some(&n("sub.a.test.")), &n("x.sub.a.test.")));
        assert!(!s.allows_record(None, &n("www.a.test.")));
        assert!(s.allows_zone(&n("a.test.")));
        assert!(!s.allows_zone(&n("b.test.")));
        assert!(!s.is_unrestricted());
    }

    #[test]
    fn a_name_suffix_is_matched_at_label_boundaries() {
        let s = Scope {
            zones: None,
            name_suffix: Some(n("team-a.example.com.")),
        };
        let zone = n("example.com.");
        assert!(s.allows_record(Some(&zone), &n("team-a.example.com.")));
        assert!(s.allows_record(Some(&zone), &n("api.team-a.example.com.")));
        assert!(!s.allows_record(Some(&zone), &n("evilteam-a.example.com.")));
        assert!(!s.allows_record(Some(&zone), &n("www.example.com.")));
        // The zone it lies in, and zones below it; not a sibling zone.
        assert!(s.allows_zone(&zone));
        assert!(s.allows_zone(&n("x.team-a.example.com.")));
        assert!(!s.allows_zone(&n("example.org.")));
        assert!(!s.allows_zone(&n("team-b.example.com.")));
    }

    #[test]
    fn the_default_allows_everything() {
        let s = Scope::default();
        assert!(s.is_unrestricted());
        assert!(s.allows_record(None, &n("anything.test.")));
        assert!(s.allows_zone(&n("test.")));
        assert_eq!(s.describe(), "everything");
    }
}
