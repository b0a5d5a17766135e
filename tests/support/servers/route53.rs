//! Route 53 for the full-stack stories: no real Route 53 can run here, so dnsplane's
//! emulator (`dnsplane_emulate`, faithful to AWS's documented semantics, signatures
//! checked, AWS's quota of five requests a second) stands in, in a runtime of its own
//! (the harness is synchronous). What `dig` and AXFR show for a real server, its
//! listing shows here.
use dnsplane_applier::provider::route53::credentials::EnvReader;
use dnsplane_applier::provider::route53::{Route53Config, Route53Provider};
use dnsplane_applier::provider::{Provider, ProviderError};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_emulate::{
    DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY, FaultRule, Route53Emulator, Route53Options,
};
use std::collections::BTreeMap;
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
    rt: tokio::runtime::Runtime,
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
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let emulator = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            Route53Emulator::start(listener, Route53Options::default())
                .await
                .expect("emulator")
        });
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
        EmulatedRoute53 {
            emulator,
            zone,
            zone_id,
            credentials_file,
            _dir: dir,
            rt,
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

    /// Another writer: `(label, type, ttl, value)` written through Route 53's API.
    pub fn add_records(&self, records: &[(&str, &str, u32, &str)]) {
        let mut sets: BTreeMap<(String, String), (u32, Vec<String>)> = BTreeMap::new();
        for (label, rtype, ttl, value) in records {
            let e = sets
                .entry((label.to_string(), rtype.to_string()))
                .or_insert((*ttl, Vec::new()));
            e.1.push(value.to_string());
        }
        let ops: Vec<RRSetOp> = sets
            .into_iter()
            .map(|((label, rtype), (ttl, values))| {
                let key = RecordKey::new(
                    self.zone.clone(),
                    self.zone.prepend(&label).expect("name"),
                    RecordType::parse(&rtype).expect("type"),
                );
                RRSetOp::create(RRSet::new(key, ttl, &values).expect("set"))
            })
            .collect();
        let writer = self.writer();
        self.retrying(|| writer.apply(&self.zone, &ops))
            .expect("another writer's records");
    }

    /// Another writer sets (`Some`) or removes (`None`) the A record at each label, in
    /// one change batch.
    pub fn set_a_records(&self, recs: &[(String, Option<String>)], ttl: u32) {
        let writer = self.writer();
        let names: Vec<Name> = recs
            .iter()
            .map(|(l, _)| self.zone.prepend(l).expect("name"))
            .collect();
        let now = self
            .retrying(|| writer.list(&self.zone, Some(&names)))
            .expect("read before writing");
        let ops: Vec<RRSetOp> = recs
            .iter()
            .zip(&names)
            .map(|((_, value), name)| {
                let key = RecordKey::new(self.zone.clone(), name.clone(), RecordType::A);
                let before = now.rrsets.iter().find(|r| r.key == key).cloned();
                let after = value
                    .as_ref()
                    .map(|v| RRSet::new(key.clone(), ttl, &[v]).expect("set"));
                RRSetOp { key, before, after }
            })
            .collect();
        self.retrying(|| writer.apply(&self.zone, &ops))
            .expect("another writer's change");
    }

    /// Runs `f` until Route 53 stops throttling it (the writer shares the account's
    /// five requests a second with the applier), at most 50 times.
    fn retrying<T, F: std::future::Future<Output = Result<T, ProviderError>>>(
        &self,
        mut f: impl FnMut() -> F,
    ) -> Result<T, ProviderError> {
        let mut tries = 0;
        loop {
            match self.rt.block_on(f()) {
                Err(e) if e.throttled && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(250));
                }
                other => return other,
            }
        }
    }

    fn writer(&self) -> Route53Provider {
        Route53Provider::with_env(
            &Route53Config {
                endpoint: self.emulator.endpoint(),
                ..Route53Config::default()
            },
            emulator_env(),
        )
        .expect("writer")
    }

    /// Arms a fault rule.
    pub fn add_fault(&self, rule: FaultRule) {
        self.emulator.add_fault(rule);
    }

    /// The zone as `name ttl type value` lines, one per value, sorted, SOA left out
    /// (as [`super::axfr`] gives a real server's).
    pub fn axfr(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .emulator
            .rrsets(&self.zone_id)
            .into_iter()
            .filter(|s| s.rtype != "SOA")
            .flat_map(|s| {
                let name = dnsplane_applier_name(&s.name);
                let ttl = s.ttl.unwrap_or(0);
                s.values
                    .into_iter()
                    .map(move |v| format!("{name} {ttl} {} {v}", s.rtype))
            })
            .collect();
        lines.sort();
        lines.dedup();
        lines
    }

    /// What a DNS query of `name` and `rtype` would answer, from the listing.
    pub fn dig(&self, name: &str, rtype: &str) -> Vec<String> {
        let want = if name.ends_with('.') {
            name.to_string()
        } else {
            format!("{name}.")
        };
        let mut values: Vec<String> = self
            .emulator
            .rrsets(&self.zone_id)
            .into_iter()
            .filter(|s| dnsplane_applier_name(&s.name) == want && s.rtype == rtype)
            .flat_map(|s| s.values)
            .collect();
        values.sort();
        values
    }

    /// Change batches the emulator committed (Route 53 has no serial to show it).
    pub fn writes(&self) -> u64 {
        self.emulator.stats().changes_committed
    }
}

/// A name as Route 53 lists it (`\052` for `*`), as DNS tools print it.
fn dnsplane_applier_name(name: &str) -> String {
    name.replace("\\052", "*")
}
