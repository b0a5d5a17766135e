//! Route 53 for the full-stack stories, served by moto (`moto_server`, the Route 53
//! LocalStack serves too): software dnsplane did not write, so the stories that run
//! on dnsplane's emulator also run where many teams first try their Route 53
//! automation. No DNS is served: the AWS CLI's listing stands for `dig` and AXFR.
//! moto has no fault rules and no quota; see docs/emulators.md for where it and the
//! emulator differ.
use super::emulated::{self, EmulatedCloud, Writer};
use super::route53::aws_listing;
use crate::moto::Moto;
use dnsplane_applier::provider::route53::Route53Provider;
use dnsplane_common::Name;
use std::path::PathBuf;

/// moto's keys (it accepts any, and checks no signature).
const ACCESS_KEY: &str = Moto::ACCESS_KEY;
const SECRET: &str = Moto::SECRET;

/// A `moto_server` with one public hosted zone, `route53.test.`.
#[derive(Debug)]
pub struct MotoRoute53 {
    pub moto: Moto,
    pub zone: Name,
    pub zone_id: String,
    /// A shared credentials file holding keys moto takes, for the applier.
    pub credentials_file: PathBuf,
    _dir: tempfile::TempDir,
    writer: Writer,
}

impl MotoRoute53 {
    /// `None` (or a panic under `DNSPLANE_REQUIRE_SERVERS=1`) without `moto_server`.
    pub fn start() -> Option<MotoRoute53> {
        let moto = Moto::start()?;
        let zone = Name::parse("route53.test").expect("zone");
        let zone_id = moto.create_zone(&zone, false);
        let dir = tempfile::tempdir().expect("temp dir");
        let credentials_file = Moto::write_credentials(&dir.path().join("aws-credentials"));
        let provider = Route53Provider::with_env(&moto.config(), Moto::env()).expect("writer");
        Some(MotoRoute53 {
            writer: Writer::new(emulated::runtime(), zone.clone(), Box::new(provider)),
            moto,
            zone,
            zone_id,
            credentials_file,
            _dir: dir,
        })
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.moto.port)
    }

    /// The applier's account for it, as docs/providers.md tells LocalStack users.
    pub fn account_toml(&self, account: &str) -> String {
        format!(
            "[[accounts]]\nname = \"{account}\"\ndriver = \"route53\"\nzones = [\"{}\"]\n\
             endpoint = \"{}\"\nprofile = \"default\"\ncredentials_file = \"{}\"\n",
            self.zone,
            self.endpoint(),
            self.credentials_file.display()
        )
    }
}

impl emulated::EmulatedCloud for MotoRoute53 {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    fn listing(&self) -> Vec<emulated::Line> {
        aws_listing(&self.endpoint(), &self.zone_id, ACCESS_KEY, SECRET)
            .expect("the AWS CLI reads moto's zone (DNSPLANE_AWS_CLI)")
    }
}

impl MotoRoute53 {
    /// moto counts no writes: a hash of the AWS CLI's listing stands for the SOA
    /// serial (it moves with every write that changes the zone; a rewrite of the same
    /// data is seen only by the applier's own batch count).
    pub fn listing_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.axfr().hash(&mut h);
        h.finish()
    }
}
