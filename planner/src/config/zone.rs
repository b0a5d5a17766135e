//! `[[zones]]`: a zone, its policies and, for a takeover, external-dns's registry.
use dnsplane_common::Name;
use serde::Deserialize;

/// What the planner may do in a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Create, update and delete owned records.
    Sync,
    /// Create and update; never delete.
    UpsertOnly,
    /// Create only; never update or delete.
    CreateOnly,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Sync => "sync",
            Policy::UpsertOnly => "upsert-only",
            Policy::CreateOnly => "create-only",
        }
    }
}

/// What to do with an existing record that nobody owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictPolicy {
    /// Leave it alone and report it as a conflict.
    #[default]
    Report,
    /// Take ownership when it already equals the desired record; report otherwise.
    Adopt,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneConfig {
    /// Absolute zone name, e.g. `example.com.`.
    pub name: Name,
    /// Provider account (a name in the applier's config) hosting the zone.
    pub account: String,
    #[serde(default = "default_policy")]
    pub policy: Policy,
    #[serde(default)]
    pub conflict: ConflictPolicy,
    /// TTL for desired records that give none.
    #[serde(default = "default_ttl")]
    pub default_ttl: u32,
    /// `[zones.external_dns]`: take over the records one external-dns owner id owns
    /// through external-dns's TXT registry (read by `external_dns.rs`).
    #[serde(default)]
    pub external_dns: Option<ExternalDnsConfig>,
}

/// How external-dns named and marked its TXT registry in this zone: the flags it ran
/// with (`--txt-owner-id`, `--txt-prefix`, `--txt-suffix`,
/// `--txt-wildcard-replacement`), so that its records are recognised exactly.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExternalDnsConfig {
    /// The `--txt-owner-id` whose records dnsplane takes; other owners' stay theirs.
    pub owner_id: String,
    #[serde(default)]
    pub txt_prefix: String,
    #[serde(default)]
    pub txt_suffix: String,
    #[serde(default)]
    pub wildcard_replacement: String,
    /// `--txt-encrypt-aes-key`: refused by [`PlannerConfig::validate`] until supported,
    /// so that encrypted marks are never misread as ordinary data.
    #[serde(default)]
    pub aes_key_file: Option<std::path::PathBuf>,
}

impl ExternalDnsConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.owner_id.is_empty() {
            return Err("owner_id is empty".into());
        }
        if !self.txt_prefix.is_empty() && !self.txt_suffix.is_empty() {
            return Err("txt_prefix and txt_suffix are exclusive, as in external-dns".into());
        }
        if self.aes_key_file.is_some() {
            return Err(
                "aes_key_file: encrypted TXT registries (--txt-encrypt-enabled) are not supported yet"
                    .into(),
            );
        }
        Ok(())
    }
}

fn default_policy() -> Policy {
    Policy::Sync
}
fn default_ttl() -> u32 {
    300
}
