//! The emulator's options: the zone plan (batch limit, lowest TTL), the zones seeded at
//! start, tokens, rate limits and fault rules, from code or a TOML file.
use super::auth::TokenSpec;
use super::ops::FAULT_OPS;
use super::ratelimit::RateLimitOptions;
use super::{DEFAULT_ACCOUNT_ID, DEFAULT_TOKEN};
use super::{model, records};
use crate::error::EmulateError;
use crate::fault::FaultRule;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A zone plan: it sets the batch limit (Free 200, paid 3,500 records) and the lowest
/// TTL (Enterprise 30 s, others 60 s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    #[default]
    Pro,
    Business,
    Enterprise,
}

impl Plan {
    pub fn batch_limit(self) -> usize {
        match self {
            Plan::Free => 200,
            _ => 3500,
        }
    }

    pub fn min_ttl(self) -> u32 {
        match self {
            Plan::Enterprise => 30,
            _ => 60,
        }
    }
}

/// A zone created at start (the config file's `[[zones]]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSeed {
    /// The zone's name, e.g. "example.com".
    pub name: String,
    /// The zone id to use instead of a random one (32 letters and digits at most).
    #[serde(default)]
    pub id: Option<String>,
}

/// How the Cloudflare emulator behaves. `Default` is Cloudflare's behaviour (a paid
/// plan) with the one token [`DEFAULT_TOKEN`]; the TOML config file has the same
/// fields (see `docs/emulators.md`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CloudflareOptions {
    /// Accepted API tokens: strings, or `{ token = "…", zones = ["example.com"] }` for
    /// a token limited to some zones. Default: [`DEFAULT_TOKEN`].
    pub tokens: Vec<TokenSpec>,
    /// Refuse tokens not in `tokens` (403 9109). When false any well-formed bearer
    /// token passes. Default true.
    pub verify_tokens: bool,
    /// The zones' plan: "free", "pro" (default), "business" or "enterprise".
    pub plan: Plan,
    /// Operations one batch may carry, instead of the plan's (tests). Default: none.
    pub batch_limit: Option<usize>,
    /// The rate limits (`[rate_limit]`).
    pub rate_limit: RateLimitOptions,
    /// Records per `GET dns_records` page when `per_page` is not given. Default 100.
    pub page_default: usize,
    /// The account new zones belong to. Default [`DEFAULT_ACCOUNT_ID`].
    pub account_id: String,
    /// Zones created at start.
    pub zones: Vec<ZoneSeed>,
    /// Fault rules (see [`FaultRule`]); ops: zones, list_records, get_record,
    /// create_record, update_record, delete_record, batch.
    pub faults: Vec<FaultRule>,
}

impl Default for CloudflareOptions {
    fn default() -> Self {
        CloudflareOptions {
            tokens: vec![TokenSpec::Any(DEFAULT_TOKEN.to_string())],
            verify_tokens: true,
            plan: Plan::default(),
            batch_limit: None,
            rate_limit: RateLimitOptions::default(),
            page_default: 100,
            account_id: DEFAULT_ACCOUNT_ID.to_string(),
            zones: Vec::new(),
            faults: Vec::new(),
        }
    }
}

/// Checks a fault rule against what this emulator can answer.
pub(crate) fn validate_fault(rule: &FaultRule) -> Result<(), String> {
    rule.validate_off_route53(FAULT_OPS, "Cloudflare")?;
    if let Some(c) = &rule.code
        && c.parse::<u32>().is_err()
    {
        return Err(format!(
            "code: {c:?} must be a number (Cloudflare's codes are)"
        ));
    }
    Ok(())
}

impl CloudflareOptions {
    /// Reads a TOML config file; problems name the file and the field.
    pub fn from_file(path: &Path) -> Result<CloudflareOptions, EmulateError> {
        crate::error::options_from_file(path, CloudflareOptions::validate)
    }

    /// Checks values that parse but cannot work; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.tokens.is_empty() && self.verify_tokens {
            return Err("tokens: at least one token is needed to verify tokens".into());
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if t.token().trim().is_empty() {
                return Err(format!("tokens[{i}]: the token is empty"));
            }
        }
        if self.batch_limit == Some(0) {
            return Err("batch_limit: must be at least 1".into());
        }
        let rl = &self.rate_limit;
        if rl.requests > 0 && (rl.window.is_zero() || rl.block.is_zero()) {
            return Err("rate_limit: window and block must be more than 0s".into());
        }
        if !rl.per_ip_per_second.is_finite() || rl.per_ip_per_second < 0.0 {
            return Err("rate_limit.per_ip_per_second: must be 0 (off) or more".into());
        }
        if self.page_default == 0 {
            return Err("page_default: must be at least 1".into());
        }
        if !model::is_identifier(&self.account_id) {
            return Err("account_id: must be 1 to 32 letters and digits".into());
        }
        for (i, f) in self.faults.iter().enumerate() {
            validate_fault(f).map_err(|e| format!("faults[{i}].{e}"))?;
        }
        Ok(())
    }

    pub fn batch_limit(&self) -> usize {
        self.batch_limit.unwrap_or(self.plan.batch_limit())
    }

    pub(crate) fn limits(&self) -> records::Limits {
        records::Limits {
            min_ttl: self.plan.min_ttl(),
        }
    }
}
