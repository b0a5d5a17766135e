//! Cloudflare: octodns-cloudflare's `cloudflare-zones-page-{1,2,3}.json` and
//! `cloudflare-dns_records-page-{1,2,3}.json`, answers recorded from the real API (v4),
//! paged by 2 zones and 10 records, against the records octoDNS's tests expect
//! (`unit.tests.yaml`).
use super::replay::{Replay, Route, fixture, secret_file};
use super::{assert_same, rrsets};
use dnsplane_applier::provider::Provider;
use dnsplane_applier::provider::cloudflare::{CloudflareConfig, CloudflareProvider};
use dnsplane_common::Name;

const ZONE_ID: &str = "234234243423aaabb334342aaa343435";

async fn replay() -> Replay {
    let mut routes = Vec::new();
    for page in ["1", "2", "3"] {
        routes.push(
            Route::get(
                "/client/v4/zones",
                "application/json",
                fixture(&format!("cloudflare/cloudflare-zones-page-{page}.json")),
            )
            .with_query("page", page),
        );
        routes.push(
            Route::get(
                format!("/client/v4/zones/{ZONE_ID}/dns_records"),
                "application/json",
                fixture(&format!(
                    "cloudflare/cloudflare-dns_records-page-{page}.json"
                )),
            )
            .with_query("page", page),
        );
    }
    Replay::start(routes).await
}

fn driver(replay: &Replay, token: &tempfile::NamedTempFile) -> CloudflareProvider {
    let cfg: CloudflareConfig = toml::from_str(&format!(
        "endpoint = \"{}/client/v4\"\napi_token_file = {:?}\nzone_ids = {{ \"unit.tests\" = \"{ZONE_ID}\" }}",
        replay.url,
        token.path()
    ))
    .unwrap();
    CloudflareProvider::new(&cfg).unwrap()
}

/// The zone list, paged as recorded (2 zones a page, 3 pages). `gíthub.com` comes as
/// Cloudflare returns an internationalised name, in UTF-8: dnsplane holds it in its
/// A-label (punycode) form, as DNS carries it.
#[tokio::test]
async fn cloudflare_lists_octodns_recorded_zones() {
    let replay = replay().await;
    let token = secret_file();
    let zones = driver(&replay, &token).zones().await.unwrap();
    replay.assert_all_recorded();
    let names: Vec<&str> = zones.iter().map(|z| z.as_str()).collect();
    assert_eq!(
        names,
        [
            "github.com.",
            "github.io.",
            "githubusercontent.com.",
            "unit.tests.",
            "xn--gthub-zsa.com."
        ]
    );
}

#[tokio::test]
async fn cloudflare_parses_octodns_recorded_records() {
    let zone = Name::parse("unit.tests").unwrap();
    let replay = replay().await;
    let token = secret_file();
    let listing = driver(&replay, &token).list(&zone, None).await.unwrap();
    replay.assert_all_recorded();

    // octoDNS's expectations (tests/config/unit.tests.yaml of octodns-cloudflare and
    // its test_populate), the types dnsplane models. SOA, SPF (a type of its own,
    // obsolete: RFC 7208 §3.1), LOC and the name outside the zone (`txt.gíthub.com`,
    // which the recording lists under unit.tests) are not records of this zone for
    // dnsplane. CAA and SRV come as `data` objects only (`content` absent), as
    // Cloudflare answered then.
    let want = rrsets(
        &zone,
        &[
            ("unit.tests", "A", 300, &["1.2.3.4", "1.2.3.5"]),
            (
                "unit.tests",
                "SSHFP",
                300,
                &["1 1 859be6ed04643db411f067b6c1da1d75fe08b672"],
            ),
            ("unit.tests", "CAA", 3600, &["0 issue \"ca.unit.tests\""]),
            (
                "unit.tests",
                "NAPTR",
                1,
                &["30 100 \"S\" \"SIP+D2T\" \"\" _sip._tls.unit.tests."],
            ),
            ("www.unit.tests", "A", 300, &["2.2.3.6"]),
            ("www.sub.unit.tests", "A", 300, &["2.2.3.6"]),
            (
                "aaaa.unit.tests",
                "AAAA",
                600,
                &["2601:644:500:e210:62f8:1dff:feb8:947a"],
            ),
            ("cname.unit.tests", "CNAME", 300, &["unit.tests."]),
            ("included.unit.tests", "CNAME", 3600, &["unit.tests."]),
            (
                "mx.unit.tests",
                "MX",
                300,
                &[
                    "40 smtp-1.unit.tests.",
                    "20 smtp-2.unit.tests.",
                    "30 smtp-3.unit.tests.",
                    "10 smtp-4.unit.tests.",
                ],
            ),
            (
                "under.unit.tests",
                "NS",
                3600,
                &["ns1.unit.tests.", "ns2.unit.tests."],
            ),
            (
                "txt.unit.tests",
                "TXT",
                600,
                &[
                    "\"Bah bah black sheep\"",
                    "\"have you any wool.\"",
                    "\"v=DKIM1;k=rsa;s=email;h=sha256;p=A/kinda+of/long/string+with+numb3rs\"",
                ],
            ),
            ("ptr.unit.tests", "PTR", 300, &["foo.bar.com."]),
            ("_imap._tcp.unit.tests", "SRV", 600, &["0 0 0 ."]),
            ("_pop3._tcp.unit.tests", "SRV", 600, &["0 0 0 ."]),
            (
                "_srv._tcp.unit.tests",
                "SRV",
                600,
                &["12 20 30 foo-2.unit.tests.", "10 20 30 foo-1.unit.tests."],
            ),
            (
                "ds.unit.tests",
                "DS",
                300,
                &["1 13 2 B5BB9D8014A0F9B1D61E21E796D78DCCDF1352F23CD32812F4850B878AE4944C"],
            ),
            (
                "svcb.unit.tests",
                "SVCB",
                303,
                &["1 www.unit.tests. alpn=\"h3,h2\""],
            ),
            (
                "https.unit.tests",
                "HTTPS",
                304,
                &["1 www.unit.tests. alpn=\"h3,h2\" ipv4hint=\"127.0.0.2\""],
            ),
        ],
    );
    assert_same(&listing.rrsets, &want);
}
