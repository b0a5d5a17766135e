//! Issue 33, "public and private of one name": docs/targets.md's split-horizon recipe,
//! read from the page, run with the planner and applier processes against moto (the
//! Route 53 LocalStack serves; software dnsplane did not write), and again against
//! dnsplane's own Route 53 emulator, each holding a public and a private hosted zone
//! of one name. The public target gets the public and the shared
//! files' records, the private one the internal and the shared ones: the same name
//! with two contents. Each zone is read back with the real AWS CLI.
use dnsplane_e2e::moto::Moto;
use dnsplane_e2e::servers::route53::aws_listing;
use dnsplane_e2e::servers::stack::{Options, spawn_proc, wait_serving};
use dnsplane_e2e::{free_port, wait_for};
use std::time::Duration;

const ZONE: &str = "split.test.";
/// A safety net for each wait, not a performance claim.
const WAIT: Duration = Duration::from_secs(60);

/// The ```toml block of docs/targets.md whose first line is `first`, for `ZONE`.
fn recipe(first: &str) -> String {
    dnsplane_e2e::doc_toml_block("targets.md", first).replace("example.com.", ZONE)
}

/// `www 300 IN A <value>`-style lines as a zone file of `ZONE`.
fn zone_file(dir: &std::path::Path, sub: &str, lines: &[&str]) {
    let d = dir.join("desired").join(sub);
    std::fs::create_dir_all(&d).expect("dir");
    let text = format!("$ORIGIN {ZONE}\n$TTL 300\n{}\n", lines.join("\n"));
    std::fs::write(d.join("split.test.zone"), text).expect("zone file");
}

/// Where the hosted zones are: an endpoint speaking Route 53's API, the keys it takes
/// (and a shared credentials file holding them), and the two zones' ids.
struct Route53At {
    endpoint: String,
    keys: (&'static str, &'static str),
    credentials: std::path::PathBuf,
    public_id: String,
    private_id: String,
}

/// The hosted zone's A records, `name value`, as the AWS CLI lists them.
fn listing(at: &Route53At, zone_id: &str) -> Vec<String> {
    let mut lines: Vec<String> = aws_listing(&at.endpoint, zone_id, at.keys.0, at.keys.1)
        .expect("the AWS CLI (DNSPLANE_AWS_CLI)")
        .into_iter()
        .filter(|(_, _, t, _)| t == "A")
        .map(|(n, _, _, v)| format!("{n} {v}"))
        .collect();
    lines.sort();
    lines
}

#[test]
fn one_name_public_and_private_in_two_hosted_zones_each_gets_its_view() {
    let Some(moto) = Moto::start() else { return };
    let zone = dnsplane_common::Name::parse(ZONE).expect("zone");
    let dir = tempfile::tempdir().expect("dir");
    let credentials = Moto::write_credentials(&dir.path().join("aws-credentials"));
    split_horizon(&Route53At {
        endpoint: format!("http://127.0.0.1:{}", moto.port),
        keys: (Moto::ACCESS_KEY, Moto::SECRET),
        credentials,
        public_id: moto.create_zone(&zone, false),
        private_id: moto.create_zone(&zone, true),
    });
}

/// The same on dnsplane's own Route 53 emulator (signatures checked, Route 53's
/// quota): its private hosted zones as moto's.
#[test]
fn the_same_split_horizon_runs_on_the_route53_emulator() {
    let r53 = dnsplane_e2e::servers::route53::EmulatedRoute53::start();
    split_horizon(&Route53At {
        endpoint: r53.emulator.endpoint(),
        keys: (
            dnsplane_emulate::DEFAULT_ACCESS_KEY_ID,
            dnsplane_emulate::DEFAULT_SECRET_ACCESS_KEY,
        ),
        credentials: r53.credentials_file.clone(),
        public_id: r53.emulator.create_zone(ZONE, false),
        private_id: r53.emulator.create_zone(ZONE, true),
    });
}

/// docs/targets.md's split-horizon recipe against `at`'s two hosted zones.
fn split_horizon(at: &Route53At) {
    let (public_id, private_id) = (&at.public_id, &at.private_id);
    let dir = tempfile::tempdir().expect("dir");
    // The recipe's accounts, pointed at the endpoint.
    let applier = recipe("# applier.toml — public and private of one name").replace(
        "driver = \"route53\"\n",
        &format!(
            "driver = \"route53\"\nendpoint = \"{}\"\nprofile = \"default\"\ncredentials_file = \"{}\"\n",
            at.endpoint,
            at.credentials.display()
        ),
    );
    std::fs::write(dir.path().join("applier.toml"), &applier).expect("applier.toml");
    let (planner_port, applier_port) = (free_port(), free_port());
    let planner = recipe("# planner.toml — public and private of one name").replace(
        "http://127.0.0.1:50052",
        &format!("http://127.0.0.1:{applier_port}"),
    );
    std::fs::write(
        dir.path().join("planner.toml"),
        format!(
            "owner_id = \"e2e\"\n{planner}\n[sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n"
        ),
    )
    .expect("planner.toml");
    zone_file(dir.path(), "public", &["www A 203.0.113.80"]);
    zone_file(
        dir.path(),
        "internal",
        &["www A 10.0.0.80", "db A 10.0.0.5"],
    );
    zone_file(dir.path(), "shared", &["mail A 192.0.2.25"]);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let opts = Options::default();
    let applier_proc = spawn_proc(dir.path(), &opts, "applier", applier_port, None);
    wait_serving(&rt, applier_port, "dnsplane.v1.Applier", &applier_proc);
    let planner_proc = spawn_proc(dir.path(), &opts, "planner", planner_port, None);
    wait_serving(&rt, planner_port, "dnsplane.v1.Planner", &planner_proc);

    let wait_listing = |id: &str, want: &[&str], what: &str| {
        let mut last = Vec::new();
        let ok = wait_for(WAIT, || {
            last = listing(at, id);
            (last == want).then_some(())
        });
        assert!(
            ok.is_some(),
            "{what}: wanted {want:?}, the AWS CLI lists {last:?}; planner log:\n{}",
            planner_proc.log_text()
        );
    };
    wait_listing(
        public_id,
        &[
            "mail.split.test. 192.0.2.25",
            "www.split.test. 203.0.113.80",
        ],
        "the public zone",
    );
    wait_listing(
        private_id,
        &[
            "db.split.test. 10.0.0.5",
            "mail.split.test. 192.0.2.25",
            "www.split.test. 10.0.0.80",
        ],
        "the private zone",
    );

    // An internal change reaches only the private zone.
    zone_file(
        dir.path(),
        "internal",
        &["www A 10.0.0.81", "db A 10.0.0.5"],
    );
    wait_listing(
        private_id,
        &[
            "db.split.test. 10.0.0.5",
            "mail.split.test. 192.0.2.25",
            "www.split.test. 10.0.0.81",
        ],
        "the private zone after the internal change",
    );
    assert_eq!(
        listing(at, public_id),
        [
            "mail.split.test. 192.0.2.25",
            "www.split.test. 203.0.113.80"
        ]
    );

    // Status names both targets, neither with an error, and no collision.
    let doc = status_json(planner_port);
    let accounts: Vec<&str> = doc["zones"]
        .as_array()
        .expect("zones")
        .iter()
        .map(|z| z["account"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(accounts, ["r53-private", "r53-public"], "{doc}");
    assert_eq!(doc["source_errors"], serde_json::json!([]), "{doc}");

    // Never delete on doubt, per view: the internal source's directory emptied is
    // not "no internal records" (the source is not ready and keeps them).
    std::fs::remove_file(dir.path().join("desired/internal/split.test.zone")).expect("rm");
    let noticed = wait_for(WAIT, || {
        status_json(planner_port)["sources"]
            .as_array()?
            .iter()
            .any(|x| {
                x["name"].as_str().is_some_and(|n| n.contains("internal")) && x["ready"] == false
            })
            .then_some(())
    });
    assert!(noticed.is_some(), "{}", status_json(planner_port));
    // Longer than the settle time a shrinking file source waits (1 s).
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        listing(at, private_id),
        [
            "db.split.test. 10.0.0.5",
            "mail.split.test. 192.0.2.25",
            "www.split.test. 10.0.0.81",
        ]
    );
}

/// `dnsplane status -o json` of the planner at `port`.
fn status_json(port: u16) -> serde_json::Value {
    let out = std::process::Command::new(dnsplane_testing::binary("dnsplane"))
        .args(["status", "-o", "json", "--addr"])
        .arg(format!("http://127.0.0.1:{port}"))
        .output()
        .expect("dnsplane status");
    serde_json::from_slice(&out.stdout).expect("status json")
}
