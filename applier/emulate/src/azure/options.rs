//! The emulator's options: static tokens and the client credentials the token
//! endpoint accepts, the default subscription and resource group, the limits, the
//! subscription's request quota, the zones made at start and fault rules, from code or
//! a TOML file.
use super::route::FAULT_OPS;
use crate::error::EmulateError;
use crate::fault::FaultRule;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The bearer token the default options accept.
pub const DEFAULT_TOKEN: &str = "emulator-token";
/// The subscription of zones made without one.
pub const DEFAULT_SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000000";
/// The resource group of zones made without one.
pub const DEFAULT_RESOURCE_GROUP: &str = "dnsplane";
/// The tenant the token endpoint is shown with in logs (any tenant id is served).
pub const DEFAULT_TENANT: &str = "00000000-0000-0000-0000-0000000000aa";
/// The client id the default options accept at the token endpoint.
pub const DEFAULT_CLIENT_ID: &str = "emulator-client";
/// Its client secret.
pub const DEFAULT_CLIENT_SECRET: &str = "emulator-secret";
/// Its federated (workload identity) client assertion.
pub const DEFAULT_CLIENT_ASSERTION: &str = "emulator-assertion";

/// An application the token endpoint knows (the config file's `[[clients]]`).
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    pub client_id: String,
    /// Accepted as `client_secret`.
    #[serde(default)]
    pub client_secret: Option<String>,
    /// Accepted as `client_assertion` (with `client_assertion_type`
    /// `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`), as a federated
    /// workload-identity token.
    #[serde(default)]
    pub client_assertion: Option<String>,
    /// Only this tenant; default any.
    #[serde(default)]
    pub tenant: Option<String>,
}

impl std::fmt::Debug for ClientSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSpec")
            .field("client_id", &self.client_id)
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

/// ARM's per-subscription request quota (its token-bucket model): reads, writes and
/// deletes apart, each a bucket of `*_burst` requests refilled at `*_per_second`. A
/// rate of 0 turns that bucket off.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThrottleOptions {
    pub reads_per_second: f64,
    pub read_burst: u32,
    pub writes_per_second: f64,
    pub write_burst: u32,
    pub deletes_per_second: f64,
    pub delete_burst: u32,
}

impl Default for ThrottleOptions {
    /// ARM's documented subscription limits: 250 reads refilled at 25/s, 200 writes
    /// and 200 deletes each refilled at 10/s.
    fn default() -> Self {
        ThrottleOptions {
            reads_per_second: 25.0,
            read_burst: 250,
            writes_per_second: 10.0,
            write_burst: 200,
            deletes_per_second: 10.0,
            delete_burst: 200,
        }
    }
}

/// A zone made at start (`[[zones]]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSeed {
    pub name: String,
    /// A private DNS zone (`privateDnsZones`). Default false.
    #[serde(default)]
    pub private: bool,
    #[serde(default)]
    pub subscription: Option<String>,
    #[serde(default)]
    pub resource_group: Option<String>,
}

/// How the Azure emulator behaves. `Default` is Azure's behaviour with the token
/// [`DEFAULT_TOKEN`] and the client [`DEFAULT_CLIENT_ID`]; the TOML config file has
/// the same fields (see `docs/emulators.md`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AzureOptions {
    /// Bearer tokens accepted without the token endpoint.
    pub tokens: Vec<String>,
    /// Refuse unknown tokens (401). When false any bearer token passes.
    pub verify_tokens: bool,
    /// Applications the token endpoint issues tokens to.
    pub clients: Vec<ClientSpec>,
    /// How long an issued token is accepted, e.g. "1h" (the default).
    #[serde(with = "humantime_serde")]
    pub token_lifetime: Duration,
    /// Subscription of zones made without one.
    pub subscription: String,
    /// Resource group of zones made without one (it exists from the start).
    pub resource_group: String,
    /// Record sets a public zone holds, SOA and NS included. Default 10,000.
    pub max_record_sets: usize,
    /// Record sets a private zone holds. Default 25,000.
    pub max_private_record_sets: usize,
    /// Records one set holds. Default 20.
    pub max_records_per_set: usize,
    /// TXT records one set holds. Default 400.
    pub max_txt_records_per_set: usize,
    /// Items per list page when `$top` is not given. Default 100.
    pub page_size: usize,
    /// The subscription quota (`[throttle]`).
    pub throttle: ThrottleOptions,
    /// Zones made at start.
    pub zones: Vec<ZoneSeed>,
    /// Fault rules; ops: zones, list_record_sets, get_record_set, put_record_set,
    /// patch_record_set, delete_record_set, token.
    pub faults: Vec<FaultRule>,
}

impl Default for AzureOptions {
    fn default() -> Self {
        AzureOptions {
            tokens: vec![DEFAULT_TOKEN.to_string()],
            verify_tokens: true,
            clients: vec![ClientSpec {
                client_id: DEFAULT_CLIENT_ID.to_string(),
                client_secret: Some(DEFAULT_CLIENT_SECRET.to_string()),
                client_assertion: Some(DEFAULT_CLIENT_ASSERTION.to_string()),
                tenant: None,
            }],
            token_lifetime: Duration::from_secs(3600),
            subscription: DEFAULT_SUBSCRIPTION.to_string(),
            resource_group: DEFAULT_RESOURCE_GROUP.to_string(),
            max_record_sets: 10_000,
            max_private_record_sets: 25_000,
            max_records_per_set: 20,
            max_txt_records_per_set: 400,
            page_size: 100,
            throttle: ThrottleOptions::default(),
            zones: Vec::new(),
            faults: Vec::new(),
        }
    }
}

/// Checks a fault rule against what this emulator can answer.
pub(crate) fn validate_fault(rule: &FaultRule) -> Result<(), String> {
    rule.validate_off_route53(FAULT_OPS, "Azure")
}

fn is_segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 90
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'(' | b')'))
}

impl AzureOptions {
    /// Reads a TOML config file; problems name the file and the field.
    pub fn from_file(path: &Path) -> Result<AzureOptions, EmulateError> {
        crate::error::options_from_file(path, AzureOptions::validate)
    }

    /// Checks values that parse but cannot work; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        for (i, t) in self.tokens.iter().enumerate() {
            if t.trim().is_empty() || t.contains(char::is_whitespace) {
                return Err(format!("tokens[{i}]: a token is one word, not empty"));
            }
        }
        for (i, c) in self.clients.iter().enumerate() {
            if c.client_id.trim().is_empty() {
                return Err(format!("clients[{i}].client_id: empty"));
            }
            if c.client_secret.is_none() && c.client_assertion.is_none() {
                return Err(format!(
                    "clients[{i}]: give client_secret, client_assertion or both"
                ));
            }
        }
        if self.token_lifetime.is_zero() {
            return Err("token_lifetime: must be more than 0s".into());
        }
        if !is_segment(&self.subscription) {
            return Err("subscription: letters, digits and -_.() only".into());
        }
        if !is_segment(&self.resource_group) {
            return Err("resource_group: letters, digits and -_.() only".into());
        }
        for (field, v) in [
            ("max_record_sets", self.max_record_sets),
            ("max_private_record_sets", self.max_private_record_sets),
            ("max_records_per_set", self.max_records_per_set),
            ("max_txt_records_per_set", self.max_txt_records_per_set),
            ("page_size", self.page_size),
        ] {
            if v == 0 {
                return Err(format!("{field}: must be at least 1"));
            }
        }
        let t = &self.throttle;
        for (field, rate) in [
            ("throttle.reads_per_second", t.reads_per_second),
            ("throttle.writes_per_second", t.writes_per_second),
            ("throttle.deletes_per_second", t.deletes_per_second),
        ] {
            if !rate.is_finite() || rate < 0.0 {
                return Err(format!("{field}: must be 0 (off) or more"));
            }
        }
        for (i, z) in self.zones.iter().enumerate() {
            if z.name.trim_end_matches('.').is_empty() || z.name.contains(char::is_whitespace) {
                return Err(format!("zones[{i}].name: {:?} is not a zone name", z.name));
            }
            for (f, v) in [
                ("subscription", &z.subscription),
                ("resource_group", &z.resource_group),
            ] {
                if let Some(v) = v
                    && !is_segment(v)
                {
                    return Err(format!("zones[{i}].{f}: letters, digits and -_.() only"));
                }
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            validate_fault(f).map_err(|e| format!("faults[{i}].{e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_from_toml_name_the_bad_field() {
        let o: AzureOptions = toml::from_str(
            "tokens = [\"t\"]\ntoken_lifetime = \"5m\"\nmax_record_sets = 50\n\
             [[clients]]\nclient_id = \"c\"\nclient_secret = \"s\"\n\
             [throttle]\nwrites_per_second = 0.0\n\
             [[zones]]\nname = \"corp.internal\"\nprivate = true\n\
             [[faults]]\naction = \"throttle\"\nop = \"put_record_set\"\ntimes = 1\n",
        )
        .unwrap();
        assert!(o.validate().is_ok());
        assert_eq!(o.token_lifetime, Duration::from_secs(300));
        assert_eq!(o.throttle.read_burst, 250);
        assert!(o.zones[0].private);
        assert_eq!(
            toml::from_str::<AzureOptions>("").unwrap(),
            AzureOptions::default()
        );
        assert!(toml::from_str::<AzureOptions>("tokenz = []").is_err());
        let bad = |t: &str| {
            toml::from_str::<AzureOptions>(t)
                .unwrap()
                .validate()
                .unwrap_err()
        };
        assert!(bad("[[faults]]\naction = \"pending_forever\"\n").starts_with("faults[0].action:"));
        assert!(
            bad("[[faults]]\naction = \"error\"\nop = \"batch\"\n").starts_with("faults[0].op:")
        );
        assert!(bad("[[clients]]\nclient_id = \"c\"\n").starts_with("clients[0]:"));
        assert!(bad("page_size = 0").starts_with("page_size:"));
        assert!(bad("resource_group = \"a b\"").starts_with("resource_group:"));
        assert!(
            bad("[throttle]\nreads_per_second = -1.0").starts_with("throttle.reads_per_second:")
        );
    }
}
