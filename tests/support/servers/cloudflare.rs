//! Cloudflare for the full-stack stories: dnsplane's emulator
//! (`dnsplane_emulate::cloudflare`, Cloudflare's v4 DNS API, API tokens checked) in a
//! runtime of its own, as for Route 53 ([`super::route53`]). The applier reads its
//! token from the account's `api_token_file`.
//!
//! The emulator's defaults stay: a Pro plan (3,500 records a batch) and Cloudflare's
//! rate limit, 1,200 requests per token per five minutes (a token over it is refused
//! for five minutes) and 200 a second per client. The other writer holds the same
//! token as the applier, so both count against it.
use super::emulated::{self, Writer};
use dnsplane_applier::provider::cloudflare::{CloudflareConfig, CloudflareProvider};
use dnsplane_common::Name;
use dnsplane_emulate::FaultRule;
use dnsplane_emulate::cloudflare::{CloudflareEmulator, CloudflareOptions, DEFAULT_TOKEN, Plan};
use std::path::PathBuf;

/// A Cloudflare emulator with one zone, `cloudflare.test`.
#[derive(Debug)]
pub struct EmulatedCloudflare {
    pub emulator: CloudflareEmulator,
    pub zone: Name,
    pub zone_id: String,
    /// The API token file of the applier's account.
    pub token_file: PathBuf,
    /// The zone's plan, as the applier's account names it (`"free"`, `"pro"`).
    pub plan: &'static str,
    _dir: tempfile::TempDir,
    writer: Writer,
}

impl EmulatedCloudflare {
    pub fn start() -> EmulatedCloudflare {
        EmulatedCloudflare::start_on(Plan::default())
    }

    /// As [`start`](Self::start), the zone on `plan` (its records per batch), and the
    /// applier's account told the same.
    pub fn start_on(plan: Plan) -> EmulatedCloudflare {
        let rt = emulated::runtime();
        let emulator = rt
            .block_on(CloudflareEmulator::start(
                emulated::listener(&rt),
                CloudflareOptions {
                    plan,
                    ..CloudflareOptions::default()
                },
            ))
            .expect("emulator");
        let plan = match plan {
            Plan::Free => "free",
            Plan::Pro => "pro",
            Plan::Business => "business",
            Plan::Enterprise => "enterprise",
        };
        let zone = Name::parse("cloudflare.test").expect("zone");
        let zone_id = emulator.create_zone(zone.as_str().trim_end_matches('.'));
        let dir = tempfile::tempdir().expect("temp dir");
        let token_file = dir.path().join("cloudflare-token");
        std::fs::write(&token_file, format!("{DEFAULT_TOKEN}\n")).expect("write the token");
        let provider = CloudflareProvider::new(&CloudflareConfig {
            endpoint: emulator.endpoint(),
            api_token_file: Some(token_file.clone()),
            ..CloudflareConfig::default()
        })
        .expect("writer");
        EmulatedCloudflare {
            emulator,
            zone: zone.clone(),
            zone_id,
            token_file,
            plan,
            _dir: dir,
            writer: Writer::new(rt, zone, Box::new(provider)),
        }
    }

    /// The applier's account for it, as docs/providers.md tells users.
    pub fn account_toml(&self, account: &str) -> String {
        format!(
            "[[accounts]]\nname = \"{account}\"\ndriver = \"cloudflare\"\nzones = [\"{}\"]\n\
             endpoint = \"{}\"\napi_token_file = \"{}\"\nplan = \"{}\"\n",
            self.zone,
            self.emulator.endpoint(),
            self.token_file.display(),
            self.plan
        )
    }

    /// Arms a fault rule.
    pub fn add_fault(&self, rule: FaultRule) {
        self.emulator.add_fault(rule);
    }

    /// Calls that changed state (batches committed, records written; Cloudflare has no
    /// serial).
    pub fn writes(&self) -> u64 {
        self.emulator.stats().changes_committed
    }
}

impl emulated::EmulatedCloud for EmulatedCloudflare {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    /// The zone's records (one per value) in DNS presentation form: names and targets
    /// absolute, MX with its priority, SRV from its `data`.
    fn listing(&self) -> Vec<emulated::Line> {
        self.emulator
            .records(&self.zone_id)
            .into_iter()
            .map(|r| {
                let value = match r.rtype.as_str() {
                    "CNAME" | "NS" => emulated::absolute(&r.content),
                    "MX" => format!(
                        "{} {}",
                        r.priority.unwrap_or_default(),
                        emulated::absolute(&r.content)
                    ),
                    "SRV" => {
                        let d = r.data.clone().unwrap_or_default();
                        let n = |f: &str| d[f].as_u64().unwrap_or_default();
                        let target = d["target"].as_str().unwrap_or_default();
                        format!(
                            "{} {} {} {}",
                            n("priority"),
                            n("weight"),
                            n("port"),
                            emulated::absolute(target)
                        )
                    }
                    _ => r.content.clone(),
                };
                (emulated::absolute(&r.name), r.ttl, r.rtype, value)
            })
            .collect()
    }
}
