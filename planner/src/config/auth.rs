//! `[auth]`: who may call the planner's gRPC API and how often (see docs/security.md).
use serde::Deserialize;
use std::path::PathBuf;

/// `[auth]`. Absent: the API is open to whoever reaches its port (a warning at start).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The tokens file (`[[token]] name, sha256, role, zones, name_suffix`), relative
    /// to the config file. Re-read when it changes; a broken version is refused and the
    /// previous tokens stay in force.
    pub tokens_file: PathBuf,
    /// `/metrics` on the admin port without a token (Prometheus scraping). `/status`
    /// always needs a `read` token under `[auth]`; `/healthz` and `/readyz` never do.
    #[serde(default = "default_true")]
    pub metrics_open: bool,
    /// Calls per second each caller (token) may make, sustained.
    #[serde(default = "default_rate")]
    pub rate_per_second: u32,
    /// Calls a caller may make at once above the sustained rate.
    #[serde(default = "default_burst")]
    pub burst: u32,
}

fn default_true() -> bool {
    true
}
fn default_rate() -> u32 {
    10
}
fn default_burst() -> u32 {
    50
}

impl AuthConfig {
    /// The checks serde cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_per_second == 0 {
            return Err("auth.rate_per_second must be at least 1".into());
        }
        if self.burst == 0 {
            return Err("auth.burst must be at least 1".into());
        }
        Ok(())
    }
}
