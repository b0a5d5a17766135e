//! `[safety]` (the mass-change guard and the mode: automatic, observe, approve) and
//! `[state]` (the state directory's free-space floor): what keeps a plan from doing
//! harm on its own.
use serde::Deserialize;
use std::time::Duration;

/// `[safety]`: the mass-change guard ([`crate::guard`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyConfig {
    /// A plan that deletes or updates more than this fraction of a zone's owned records
    /// is held until approved. `1.0` turns the guard off (apex NS included).
    #[serde(default = "default_max_change_fraction")]
    pub max_change_fraction: f64,
    /// Zones with fewer owned records than this are not weighed by the fraction.
    #[serde(default = "default_min_zone_records")]
    pub min_zone_records: usize,
    /// What the planner does with a plan: apply it (`automatic`, behind the guard),
    /// only report it (`observe`), or hold every plan for `dnsplane approve`
    /// (`approve`).
    #[serde(default)]
    pub mode: SafetyMode,
    /// The guard's memory: deletes and updates let through within this window count
    /// together with each new plan against `max_change_fraction`, so that slices
    /// cannot add up past it without approval; an approval starts it afresh. `0s`:
    /// each plan is weighed alone.
    #[serde(with = "humantime_serde", default = "default_window")]
    pub window: Duration,
}

/// `[safety] mode`: how much a plan may do on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SafetyMode {
    /// Plans are applied; the mass-change guard holds the dangerous ones.
    #[default]
    Automatic,
    /// Plans are made and reported, never written (not even ownership records): a
    /// first trial against a live zone.
    Observe,
    /// Every non-empty plan is held until `dnsplane approve ZONE`.
    Approve,
}

impl SafetyMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyMode::Automatic => "automatic",
            SafetyMode::Observe => "observe",
            SafetyMode::Approve => "approve",
        }
    }
}

/// `[state]`: how the planner watches its state directory.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    /// Below this many free bytes on the state directory's filesystem the planner
    /// reports `failing`: a full disk loses the next accepted desired state.
    #[serde(default = "default_min_free_bytes")]
    pub min_free_bytes: u64,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            min_free_bytes: default_min_free_bytes(),
        }
    }
}

fn default_min_free_bytes() -> u64 {
    100 * 1024 * 1024
}

impl Default for SafetyConfig {
    fn default() -> Self {
        SafetyConfig {
            max_change_fraction: default_max_change_fraction(),
            min_zone_records: default_min_zone_records(),
            mode: SafetyMode::default(),
            window: default_window(),
        }
    }
}

/// The longest `[safety] window`: a memory of a week is already more than any
/// rollout takes, and a longer one would hold every small change of a quiet zone.
pub const MAX_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);

impl SafetyConfig {
    /// `max_change_fraction = 1.0`: every plan goes through.
    pub fn is_off(&self) -> bool {
        self.max_change_fraction >= 1.0
    }

    /// The checks serde cannot express.
    pub fn validate(&self) -> Result<(), String> {
        let f = self.max_change_fraction;
        if !(f > 0.0 && f <= 1.0) {
            return Err(format!(
                "safety.max_change_fraction = {f} must be in (0, 1]; 1.0 turns the guard off"
            ));
        }
        if self.window > MAX_WINDOW {
            return Err(format!(
                "safety.window = {} is longer than {} (0s: each plan is weighed alone)",
                humantime::format_duration(self.window),
                humantime::format_duration(MAX_WINDOW)
            ));
        }
        Ok(())
    }
}

fn default_window() -> Duration {
    Duration::from_secs(600)
}

fn default_max_change_fraction() -> f64 {
    0.3
}
fn default_min_zone_records() -> usize {
    10
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_defaults_to_ten_minutes_and_is_bounded() {
        let c: SafetyConfig = toml::from_str("").unwrap();
        assert_eq!(c.window, Duration::from_secs(600));
        let c: SafetyConfig = toml::from_str("window = \"0s\"").unwrap();
        assert!(c.validate().is_ok());
        let c: SafetyConfig = toml::from_str("window = \"8d\"").unwrap();
        let e = c.validate().unwrap_err();
        assert!(e.contains("safety.window") && e.contains("7days"), "{e}");
    }
}
