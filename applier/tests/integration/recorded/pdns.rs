//! PowerDNS: octodns-powerdns's `powerdns-full-data.json`, a zone as the PowerDNS API
//! answers `GET /api/v1/servers/localhost/zones/unit.tests.` (recorded from a real
//! server), against the records octoDNS's tests expect from it (`unit.tests.yaml`).
use super::replay::{Replay, Route, fixture};
use super::{assert_same, rrsets};
use dnsplane_applier::provider::Provider;
use dnsplane_applier::provider::pdns::{PdnsConfig, PdnsProvider};
use dnsplane_common::Name;

const ZONES: &str =
    r#"[{"id":"unit.tests.","name":"unit.tests.","kind":"Master","serial":2017012803}]"#;

#[tokio::test]
async fn pdns_parses_octodns_recorded_zone() {
    let zone = Name::parse("unit.tests").unwrap();
    let base = "/api/v1/servers/localhost/zones";
    let replay = Replay::start(vec![
        // The zone list is not in the recording: the one zone, as PowerDNS lists it.
        Route::get(base, "application/json", ZONES.to_string()),
        Route::get(
            format!("{base}/unit.tests."),
            "application/json",
            fixture("powerdns/powerdns-full-data.json"),
        ),
    ])
    .await;
    let key = super::replay::secret_file();
    let cfg: PdnsConfig = toml::from_str(&format!(
        "api_url = \"{}\"\napi_key_file = {:?}",
        replay.url,
        key.path()
    ))
    .unwrap();
    let driver = PdnsProvider::new(&cfg).unwrap();
    let listing = driver.list(&zone, None).await.unwrap();
    replay.assert_all_recorded();

    // octoDNS's expectations (tests/config/unit.tests.yaml of octodns-powerdns), the
    // types dnsplane models. Not listed, as octoDNS's PowerDNS provider does not list
    // them either or keeps them as its own types: SOA, LOC, LUA (PowerDNS's scripted
    // records, octoDNS's `PowerDnsProvider/LUA`), URI.
    let want = rrsets(
        &zone,
        &[
            ("unit.tests", "A", 300, &["1.2.3.4", "1.2.3.5"]),
            (
                "unit.tests",
                "SSHFP",
                3600,
                &[
                    "1 1 bf6b6825d2977c511a475bbefb88aad54a92ac73",
                    "1 1 7491973e5f8b39d5327cd4e08bc81b05f7710b49",
                ],
            ),
            ("unit.tests", "NS", 600, &["1.1.1.1.", "4.4.4.4."]),
            ("unit.tests", "CAA", 3600, &["0 issue \"ca.unit.tests\""]),
            (
                "unit.tests",
                "DS",
                3600,
                &["2371 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"],
            ),
            (
                "_853._tcp.unit.tests",
                "TLSA",
                3600,
                &["3 1 1 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"],
            ),
            ("_imap._tcp.unit.tests", "SRV", 600, &["0 0 0 ."]),
            ("_pop3._tcp.unit.tests", "SRV", 600, &["0 0 0 ."]),
            (
                "_srv._tcp.unit.tests",
                "SRV",
                600,
                &["12 20 30 foo-2.unit.tests.", "10 20 30 foo-1.unit.tests."],
            ),
            (
                "aaaa.unit.tests",
                "AAAA",
                600,
                &["2601:644:500:e210:62f8:1dff:feb8:947a"],
            ),
            ("cname.unit.tests", "CNAME", 300, &["unit.tests."]),
            ("included.unit.tests", "CNAME", 3600, &["unit.tests."]),
            ("https.unit.tests", "HTTPS", 3600, &["1 www.unit.tests."]),
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
                "naptr.unit.tests",
                "NAPTR",
                600,
                &[
                    "100 100 \"U\" \"SIP+D2U\" \"!^.*$!sip:info@bar.example.com!\" .",
                    "10 100 \"S\" \"SIP+D2U\" \"!^.*$!sip:info@bar.example.com!\" .",
                ],
            ),
            ("ptr.unit.tests", "PTR", 300, &["foo.bar.com."]),
            ("sub.unit.tests", "NS", 3600, &["6.2.3.4.", "7.2.3.4."]),
            (
                "sub.unit.tests",
                "DS",
                3600,
                &["12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"],
            ),
            (
                "svcb.unit.tests",
                "SVCB",
                3600,
                &["1 www.unit.tests.", "2 backups.unit.tests."],
            ),
            // octoDNS escapes `;` in its YAML; the bytes are `v=DKIM1;k=rsa;…`.
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
            ("www.unit.tests", "A", 300, &["2.2.3.6"]),
            ("www.sub.unit.tests", "A", 300, &["2.2.3.6"]),
        ],
    );
    assert_same(&listing.rrsets, &want);
}
