//! Azure DNS for the full-stack stories: dnsplane's emulator (`dnsplane_emulate::azure`,
//! ARM's REST API, bearer tokens checked) in a runtime of its own, as for the other
//! clouds ([`super::route53`]). The applier reads the emulator's token from the
//! account's `token_file`.
//!
//! ARM's subscription quota (10 writes a second after a burst of 200) is off here:
//! the azure driver writes one request per record set, so the stories' 10,000 records
//! and their marks would take over half an hour at ARM's rate. The quota and its 429s
//! are the subject of the driver's integration tests
//! (`applier/tests/integration/azure.rs`); the throttling story uses the emulator's
//! `throttle` fault, as for the other clouds.
use super::emulated::{self, Writer};
use dnsplane_applier::provider::azure::{AzureConfig, AzureProvider};
use dnsplane_common::Name;
use dnsplane_emulate::FaultRule;
use dnsplane_emulate::azure::{
    AzureEmulator, AzureOptions, DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, DEFAULT_TOKEN,
    ThrottleOptions,
};
use std::path::PathBuf;

/// An Azure DNS emulator with one public zone, `azure.test`.
#[derive(Debug)]
pub struct EmulatedAzure {
    pub emulator: AzureEmulator,
    pub zone: Name,
    /// The token file of the applier's account.
    pub token_file: PathBuf,
    /// ARM's subscription quota is on in the emulator (else the account's is lifted
    /// too: the driver's default would pace the stories at ARM's rate).
    arm_quota: bool,
    _dir: tempfile::TempDir,
    writer: Writer,
}

impl EmulatedAzure {
    pub fn start() -> EmulatedAzure {
        EmulatedAzure::start_throttled(ThrottleOptions {
            reads_per_second: 0.0,
            writes_per_second: 0.0,
            deletes_per_second: 0.0,
            ..ThrottleOptions::default()
        })
    }

    /// As [`start`](Self::start), ARM's subscription quota as `throttle` says
    /// (`ThrottleOptions::default()`: ARM's own).
    pub fn start_throttled(throttle: ThrottleOptions) -> EmulatedAzure {
        let rt = emulated::runtime();
        let arm_quota = throttle.writes_per_second > 0.0;
        let options = AzureOptions {
            throttle,
            ..AzureOptions::default()
        };
        let emulator = rt
            .block_on(AzureEmulator::start(emulated::listener(&rt), options))
            .expect("emulator");
        let zone = Name::parse("azure.test").expect("zone");
        emulator.create_zone(zone.as_str().trim_end_matches('.'));
        let dir = tempfile::tempdir().expect("temp dir");
        let token_file = dir.path().join("azure-token");
        std::fs::write(&token_file, format!("{DEFAULT_TOKEN}\n")).expect("write the token");
        let provider = AzureProvider::new(&config(&emulator, &token_file)).expect("writer");
        EmulatedAzure {
            emulator,
            zone: zone.clone(),
            token_file,
            arm_quota,
            _dir: dir,
            writer: Writer::new(rt, zone, Box::new(provider)),
        }
    }

    /// The applier's account for it, as docs/providers.md tells users.
    pub fn account_toml(&self, account: &str) -> String {
        let account = format!(
            "[[accounts]]\nname = \"{account}\"\ndriver = \"azure\"\nzones = [\"{}\"]\n\
             subscription_id = \"{DEFAULT_SUBSCRIPTION}\"\nresource_group = \"{DEFAULT_RESOURCE_GROUP}\"\n\
             endpoint = \"{}\"\nauthority_host = \"{}\"\ntoken_file = \"{}\"\n",
            self.zone,
            self.emulator.endpoint(),
            self.emulator.endpoint(),
            self.token_file.display()
        );
        if self.arm_quota {
            account
        } else {
            account + "[accounts.quota]\nrate = 100000.0\nburst = 100000\n"
        }
    }

    /// Arms a fault rule.
    pub fn add_fault(&self, rule: FaultRule) {
        self.emulator.add_fault(rule);
    }

    /// Writes the emulator committed (record sets put or deleted).
    pub fn writes(&self) -> u64 {
        self.emulator.stats().changes_committed
    }
}

impl emulated::EmulatedCloud for EmulatedAzure {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    /// The zone's records (one per value) in DNS presentation form, names and targets
    /// absolute.
    fn listing(&self) -> Vec<emulated::Line> {
        let zone = self.zone.as_str().trim_end_matches('.');
        self.emulator
            .record_sets(zone)
            .into_iter()
            .flat_map(|s| {
                let name = if s.name == "@" {
                    emulated::absolute(zone)
                } else {
                    emulated::absolute(&format!("{}.{zone}", s.name))
                };
                let rtype = s.rtype.clone();
                let ttl = u32::try_from(s.ttl).unwrap_or(u32::MAX);
                s.records.into_iter().map(move |v| {
                    let value = match rtype.as_str() {
                        "CNAME" | "NS" | "PTR" => emulated::absolute(&v),
                        "MX" | "SRV" => match v.rsplit_once(' ') {
                            Some((head, target)) => {
                                format!("{head} {}", emulated::absolute(target))
                            }
                            None => v,
                        },
                        _ => v,
                    };
                    (name.clone(), ttl, rtype.clone(), value)
                })
            })
            .collect()
    }
}

/// The driver's config for `emulator`, its token in `token_file`.
fn config(emulator: &AzureEmulator, token_file: &std::path::Path) -> AzureConfig {
    let mut cfg = AzureConfig::new(DEFAULT_SUBSCRIPTION, DEFAULT_RESOURCE_GROUP);
    cfg.endpoint = emulator.endpoint();
    cfg.authority_host = emulator.endpoint();
    cfg.token_file = Some(token_file.to_path_buf());
    cfg
}
