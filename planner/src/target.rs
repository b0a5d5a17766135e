//! A target: one zone at one account. A zone may be served by several accounts at
//! once (`accounts = [...]`, or several `[[zones]]` of one name): each (zone, account)
//! is read, planned, owned, guarded, held, approved and reported on its own, so that a
//! failing, held or released target never blocks another. The desired state stays one
//! per zone and is shared by its targets.
use dnsplane_common::Name;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// One zone at one account.
#[derive(Debug, Clone)]
pub struct Target {
    pub zone: Name,
    pub account: Arc<str>,
    /// The zone has other targets: its messages then name the account too.
    shared: bool,
}

impl Target {
    pub fn new(zone: Name, account: &str, shared: bool) -> Target {
        Target {
            zone,
            account: account.into(),
            shared,
        }
    }

    /// The arguments that name this target to the CLI: the zone, and `--account`
    /// where the zone has several targets.
    pub fn cli(&self) -> String {
        if self.shared {
            format!("{} --account {}", self.zone, self.account)
        } else {
            self.zone.to_string()
        }
    }

    /// Whether the zone has other targets (and so messages name the account).
    pub fn is_shared(&self) -> bool {
        self.shared
    }
}

impl PartialEq for Target {
    fn eq(&self, other: &Self) -> bool {
        self.zone == other.zone && self.account == other.account
    }
}

impl Eq for Target {}

impl PartialOrd for Target {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Target {
    fn cmp(&self, other: &Self) -> Ordering {
        (&self.zone, &self.account).cmp(&(&other.zone, &other.account))
    }
}

/// The zone alone while it has one target (every message reads as before), the zone
/// and its account where it has several.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shared {
            write!(f, "{} at account {}", self.zone, self.account)
        } else {
            write!(f, "{}", self.zone)
        }
    }
}

/// A zone (and account) a call named that matches no single target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("zone {zone} is not configured")]
    UnknownZone { zone: String },
    #[error("zone {zone} has no target at account {account:?}; its targets: {}", .targets.join(", "))]
    UnknownAccount {
        zone: Name,
        account: String,
        targets: Vec<String>,
    },
    #[error(
        "zone {zone} has several targets ({}): name one with its account",
        .targets.join(", ")
    )]
    Ambiguous { zone: Name, targets: Vec<String> },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_reads_as_its_zone_until_the_zone_has_several() {
        let zone = Name::parse("example.com").unwrap();
        assert_eq!(
            Target::new(zone.clone(), "a", false).to_string(),
            "example.com."
        );
        assert_eq!(
            Target::new(zone.clone(), "a", true).to_string(),
            "example.com. at account a"
        );
        // The display flag is no part of the identity.
        assert_eq!(
            Target::new(zone.clone(), "a", true),
            Target::new(zone, "a", false)
        );
    }
}
