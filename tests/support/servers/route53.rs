//! Route 53 for the full-stack stories: no real Route 53 can run here, so dnsplane's
//! emulator (`dnsplane_emulate`, faithful to AWS's documented semantics, signatures
//! checked, AWS's quota of five requests a second) stands in, in a runtime of its own
//! (the harness is synchronous). What `dig` and AXFR show for a real server, its
//! listing shows here.
use super::emulated::{self, Writer};
use dnsplane_applier::provider::route53::credentials::EnvReader;
use dnsplane_applier::provider::route53::{Route53Config, Route53Provider};
use dnsplane_common::Name;
use dnsplane_emulate::{
    DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY, FaultRule, Route53Emulator, Route53Options,
};
use std::path::PathBuf;
use std::sync::Arc;

/// A Route 53 emulator with one public hosted zone, `route53.test.`.
#[derive(Debug)]
pub struct EmulatedRoute53 {
    pub emulator: Route53Emulator,
    pub zone: Name,
    pub zone_id: String,
    /// A shared credentials file holding the emulator's keys, for the applier.
    pub credentials_file: PathBuf,
    _dir: tempfile::TempDir,
    writer: Writer,
}

/// The emulator's default keys, as an environment would hold them.
pub fn emulator_env() -> EnvReader {
    Arc::new(|k| match k {
        "AWS_ACCESS_KEY_ID" => Some(DEFAULT_ACCESS_KEY_ID.into()),
        "AWS_SECRET_ACCESS_KEY" => Some(DEFAULT_SECRET_ACCESS_KEY.into()),
        _ => None,
    })
}

impl EmulatedRoute53 {
    pub fn start() -> EmulatedRoute53 {
        let rt = emulated::runtime();
        let listener = emulated::listener(&rt);
        let emulator = rt
            .block_on(Route53Emulator::start(listener, Route53Options::default()))
            .expect("emulator");
        let zone = Name::parse("route53.test").expect("zone");
        let zone_id = emulator.create_zone(zone.as_str(), false);
        let dir = tempfile::tempdir().expect("temp dir");
        let credentials_file = dir.path().join("aws-credentials");
        std::fs::write(
            &credentials_file,
            format!(
                "[default]\naws_access_key_id = {DEFAULT_ACCESS_KEY_ID}\naws_secret_access_key = {DEFAULT_SECRET_ACCESS_KEY}\n"
            ),
        )
        .expect("write credentials");
        let provider = Route53Provider::with_env(
            &Route53Config {
                endpoint: emulator.endpoint(),
                ..Route53Config::default()
            },
            emulator_env(),
        )
        .expect("writer");
        EmulatedRoute53 {
            emulator,
            zone: zone.clone(),
            zone_id,
            credentials_file,
            _dir: dir,
            writer: Writer::new(rt, zone, Box::new(provider)),
        }
    }

    /// The applier's account for it, as docs/providers.md tells users.
    pub fn account_toml(&self, account: &str) -> String {
        format!(
            "[[accounts]]\nname = \"{account}\"\ndriver = \"route53\"\nzones = [\"{}\"]\n\
             endpoint = \"{}\"\nprofile = \"default\"\ncredentials_file = \"{}\"\n",
            self.zone,
            self.emulator.endpoint(),
            self.credentials_file.display()
        )
    }

    /// Arms a fault rule.
    pub fn add_fault(&self, rule: FaultRule) {
        self.emulator.add_fault(rule);
    }

    /// Change batches the emulator committed (Route 53 has no serial to show it).
    pub fn writes(&self) -> u64 {
        self.emulator.stats().changes_committed
    }
}

impl emulated::EmulatedCloud for EmulatedRoute53 {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    /// The zone's values from the emulator's listing (`*` spelt as DNS tools print it,
    /// not Route 53's `\052`).
    fn listing(&self) -> Vec<emulated::Line> {
        self.emulator
            .rrsets(&self.zone_id)
            .into_iter()
            .flat_map(|s| {
                let name = s.name.replace("\\052", "*");
                let ttl = s.ttl.unwrap_or(0) as u32;
                s.values
                    .into_iter()
                    .map(move |v| (name.clone(), ttl, s.rtype.clone(), v))
            })
            .collect()
    }
}

impl EmulatedRoute53 {
    /// The zone as `name ttl type value` lines, read by the real AWS CLI (`aws route53
    /// list-resource-record-sets`, which signs with SigV4 and parses the emulator's
    /// XML itself); `None` when the CLI is not installed (and skipping is allowed).
    pub fn aws_axfr(&self) -> Option<Vec<String>> {
        let lines = aws_listing(
            &self.emulator.endpoint(),
            &self.zone_id,
            DEFAULT_ACCESS_KEY_ID,
            DEFAULT_SECRET_ACCESS_KEY,
        )?;
        Some(emulated::axfr(lines))
    }
}

/// Every set of hosted zone `zone_id` at `endpoint`, as the real AWS CLI reads it
/// (`$DNSPLANE_AWS_CLI`, JSON output, all pages): one line per value, aliases as their
/// target's name with TTL 0, `*` as DNS tools print it. `None`: no CLI (skipping
/// allowed).
pub fn aws_listing(
    endpoint: &str,
    zone_id: &str,
    access_key: &str,
    secret: &str,
) -> Option<Vec<emulated::Line>> {
    let aws = crate::tool("DNSPLANE_AWS_CLI", "aws")?;
    let out = std::process::Command::new(aws)
        .args([
            "route53",
            "list-resource-record-sets",
            "--hosted-zone-id",
            zone_id,
            "--endpoint-url",
            endpoint,
            "--output",
            "json",
        ])
        .env("AWS_ACCESS_KEY_ID", access_key)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .output()
        .expect("run aws");
    assert!(
        out.status.success(),
        "aws route53 list-resource-record-sets: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "aws printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let mut lines = Vec::new();
    for set in v["ResourceRecordSets"]
        .as_array()
        .expect("ResourceRecordSets")
    {
        let name = set["Name"].as_str().expect("Name").replace("\\052", "*");
        let rtype = set["Type"].as_str().expect("Type").to_string();
        if let Some(alias) = set.get("AliasTarget") {
            let target = alias["DNSName"].as_str().expect("DNSName").to_string();
            lines.push((name, 0, rtype, target));
            continue;
        }
        let ttl = set["TTL"].as_u64().unwrap_or(0) as u32;
        for r in set["ResourceRecords"].as_array().into_iter().flatten() {
            let value = r["Value"].as_str().expect("Value").to_string();
            lines.push((name.clone(), ttl, rtype.clone(), value));
        }
    }
    Some(lines)
}
