//! The emulator's options: the access keys it accepts, the zones it starts with, its
//! quota, faults and error texts, read from the TOML file `--config` names.
use super::names;
use super::ops::FAULT_OPS;
use crate::error::EmulateError;
use crate::fault::FaultRule;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;
/// The access key id the default options accept.
pub const DEFAULT_ACCESS_KEY_ID: &str = "AKIAEMULATOR00000000";
/// The secret of [`DEFAULT_ACCESS_KEY_ID`].
pub const DEFAULT_SECRET_ACCESS_KEY: &str = "emulator-secret-key";

/// Largest request body accepted (ChangeResourceRecordSets' own limits, 1000 records
/// and 32,000 value characters, fit many times over).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// One access key the emulator accepts. Each key is its own account for the quota.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    /// The access key id, e.g. "AKIAEMULATOR00000000".
    pub access_key_id: String,
    /// Its secret access key.
    pub secret_access_key: String,
}

impl Credential {
    pub fn new(access_key_id: &str, secret_access_key: &str) -> Credential {
        Credential {
            access_key_id: access_key_id.to_string(),
            secret_access_key: secret_access_key.to_string(),
        }
    }
}

impl<A: Into<String>, B: Into<String>> From<(A, B)> for Credential {
    fn from((id, secret): (A, B)) -> Credential {
        Credential {
            access_key_id: id.into(),
            secret_access_key: secret.into(),
        }
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .finish()
    }
}

/// A zone created at start (from the config file's `[[zones]]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSeed {
    /// The zone's name, e.g. "example.com".
    pub name: String,
    /// A private zone (attached to a made-up VPC in us-east-1). Default false.
    #[serde(default)]
    pub private: bool,
    /// The zone id to use instead of a random one, e.g. "Z0EXAMPLE0000000000001".
    #[serde(default)]
    pub id: Option<String>,
}

fn default_credentials() -> Vec<Credential> {
    vec![Credential::new(
        DEFAULT_ACCESS_KEY_ID,
        DEFAULT_SECRET_ACCESS_KEY,
    )]
}

/// How the Route 53 emulator behaves. `Default` is AWS's behaviour with the default
/// credentials; the TOML config file has the same fields (see `docs/emulators.md`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Route53Options {
    /// Accepted access keys. Default: the one pair [`DEFAULT_ACCESS_KEY_ID`] /
    /// [`DEFAULT_SECRET_ACCESS_KEY`].
    pub credentials: Vec<Credential>,
    /// Check SigV4 signatures. When false any request passes and the quota counts by
    /// the access key the `Authorization` header names. Default true.
    pub verify_signatures: bool,
    /// Requests per second per account (access key) across all calls; 0 turns the
    /// quota off. Default 5, Route 53's documented limit.
    pub rate: f64,
    /// Bucket size of the quota: requests an idle account may send at once. Default 5.
    pub burst: u32,
    /// How long a change stays PENDING before GetChange says INSYNC, e.g. "1s". Default 1s.
    #[serde(with = "humantime_serde")]
    pub insync_after: Duration,
    /// Record sets per ListResourceRecordSets page when `maxitems` is not given (AWS:
    /// 100; at most 300 either way). Default 100.
    pub page_default: usize,
    /// Zones created at start.
    pub zones: Vec<ZoneSeed>,
    /// Fault rules (see [`FaultRule`]); ops: change, list_rrsets, get_change, zones.
    pub faults: Vec<FaultRule>,
    /// Values a CREATE or UPSERT may not carry: such a change fails like a value
    /// Route 53's own validation refuses (`Invalid Resource Record: 'FATAL problem:
    /// …'`), the batch with it. For testing how a client isolates records the
    /// provider rejects although they are valid DNS (Route 53 refuses few of those).
    pub reject_values: Vec<String>,
    /// moto's order (LocalStack's too): each CREATE is checked against the zone as it
    /// was before the batch, so a CREATE of a set the zone held fails with "already
    /// exists" even after the batch's DELETE of it. AWS applies a batch in order; this
    /// lets a client's handling of such servers be tested. Default false.
    pub creates_checked_before_batch: bool,
}

impl Default for Route53Options {
    fn default() -> Route53Options {
        Route53Options {
            credentials: default_credentials(),
            verify_signatures: true,
            rate: 5.0,
            burst: 5,
            insync_after: Duration::from_secs(1),
            page_default: 100,
            zones: Vec::new(),
            faults: Vec::new(),
            reject_values: Vec::new(),
            creates_checked_before_batch: false,
        }
    }
}

impl Route53Options {
    /// Reads a TOML config file; problems name the file and the field.
    pub fn from_file(path: &Path) -> Result<Route53Options, EmulateError> {
        crate::error::options_from_file(path, Route53Options::validate)
    }

    /// Checks values that parse but cannot work; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.credentials.is_empty() && self.verify_signatures {
            return Err(
                "credentials: at least one access key is needed to verify signatures".into(),
            );
        }
        for (i, c) in self.credentials.iter().enumerate() {
            if c.access_key_id.is_empty() || c.secret_access_key.is_empty() {
                return Err(format!(
                    "credentials[{i}]: access_key_id and secret_access_key must not be empty"
                ));
            }
        }
        if !self.rate.is_finite() || self.rate < 0.0 {
            return Err(format!("rate: {} must be 0 (no quota) or more", self.rate));
        }
        if self.page_default == 0 {
            return Err("page_default: must be at least 1".into());
        }
        for (i, z) in self.zones.iter().enumerate() {
            let name = names::parse_name(z.name.trim())
                .map_err(|p| format!("zones[{i}].name: {}", p.message(&z.name)))?;
            if name == "." {
                return Err(format!("zones[{i}].name: the root is not a zone"));
            }
            if let Some(id) = &z.id
                && (id.is_empty()
                    || id.len() > 32
                    || !id.bytes().all(|b| b.is_ascii_alphanumeric()))
            {
                return Err(format!(
                    "zones[{i}].id: {id:?} must be 1 to 32 letters and digits"
                ));
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            f.validate(FAULT_OPS)
                .map_err(|e| format!("faults[{i}].{e}"))?;
        }
        Ok(())
    }
}
