//! Google Cloud DNS: octodns-googlecloud keeps no recorded traffic; its test holds the
//! record sets "in the format which the google API likes" (`resource_record_sets`),
//! rendered here into `rrsets.list`'s answer (`fixtures/octodns/googlecloud/render.py`).
//! The driver lists them against the records octoDNS's test expects (`octo_records`).
use super::replay::{Replay, Route, fixture};
use super::{assert_same, rrsets};
use dnsplane_applier::provider::Provider;
use dnsplane_applier::provider::clouddns::credentials::EnvReader;
use dnsplane_applier::provider::clouddns::{CloudDnsConfig, CloudDnsProvider};
use dnsplane_common::Name;
use std::sync::Arc;

#[tokio::test]
async fn clouddns_parses_octodns_record_sets() {
    let zone = Name::parse("unit.tests").unwrap();
    let base = "/dns/v1/projects/octodns/managedZones/unit-tests";
    let replay = Replay::start(vec![
        // Not in octoDNS's test: the zone's change history (the driver's serial), none.
        Route::get(
            format!("{base}/changes"),
            "application/json",
            r#"{"kind":"dns#changesListResponse","changes":[]}"#.to_string(),
        ),
        Route::get(
            format!("{base}/rrsets"),
            "application/json",
            fixture("googlecloud/rrsets-list.json"),
        ),
    ])
    .await;
    let cfg: CloudDnsConfig = toml::from_str(&format!(
        "project = \"octodns\"\nendpoint = \"{}\"\nzone_names = {{ \"unit.tests\" = \"unit-tests\" }}",
        replay.url
    ))
    .unwrap();
    let env: EnvReader =
        Arc::new(|k| (k == "GOOGLE_OAUTH_ACCESS_TOKEN").then(|| "recorded".into()));
    let driver = CloudDnsProvider::with_env(&cfg, env).unwrap();
    let listing = driver.list(&zone, None).await.unwrap();
    replay.assert_all_recorded();
    // octoDNS's expectations (its test's `octo_records`), the types dnsplane models,
    // with these differences, each on the side of the RFCs:
    // - `naptr` has both a regexp and a replacement, which RFC 3403 §4.1 makes
    //   exclusive, and `ds` has digests of an odd number of hex digits (13), which no
    //   digest type has (RFC 4034 §5.1.4): dnsplane cannot represent them, so it lists
    //   neither, keeps both as sets it leaves alone, and never writes or deletes them;
    // - the apex `ALIAS` is not a Cloud DNS type (octoDNS's own), and is not listed;
    // - the CAA value is written unquoted (`0 issue ca.unit.tests`), as octoDNS's test
    //   has it, and reads as the same value quoted.
    let want = rrsets(
        &zone,
        &[
            ("unit.tests", "A", 0, &["1.2.3.4", "10.10.10.10"]),
            ("a.unit.tests", "A", 1, &["1.1.1.1", "1.2.3.4"]),
            ("aa.unit.tests", "A", 9001, &["1.2.4.3"]),
            ("aaa.unit.tests", "A", 2, &["1.1.1.3"]),
            ("cname.unit.tests", "CNAME", 3, &["a.unit.tests."]),
            (
                "mx1.unit.tests",
                "MX",
                3,
                &["10 mx1.unit.tests.", "20 mx2.unit.tests."],
            ),
            ("mx2.unit.tests", "MX", 3, &["10 mx1.unit.tests."]),
            (
                "unit.tests",
                "NS",
                4,
                &["ns1.unit.tests.", "ns2.unit.tests."],
            ),
            ("foo.unit.tests", "NS", 5, &["ns1.unit.tests."]),
            (
                "_srv._tcp.unit.tests",
                "SRV",
                6,
                &["10 20 30 foo-1.unit.tests.", "12 30 30 foo-2.unit.tests."],
            ),
            (
                "_srv2._tcp.unit.tests",
                "SRV",
                7,
                &["12 17 1 srvfoo.unit.tests."],
            ),
            ("txt1.unit.tests", "TXT", 8, &["\"txt singleton test\""]),
            (
                "txt2.unit.tests",
                "TXT",
                9,
                &["\"txt multiple test\"", "\"txt multiple test 2\""],
            ),
            ("caa.unit.tests", "CAA", 9, &["0 issue \"ca.unit.tests\""]),
        ],
    );
    assert_same(&listing.rrsets, &want);
}
