//! Route 53: octodns-route53's test_populate stubs two pages of
//! `ListResourceRecordSets` with boto3's parsed form of real answers; they are rendered
//! back into Route 53's REST-XML by botocore's own service model
//! (`fixtures/octodns/route53/README.md` says how), and listed by the driver, page by
//! page, against the records octoDNS's test expects (`TestRoute53Provider.expected`).
use super::replay::{Replay, Route, fixture};
use super::{assert_same, rrsets};
use dnsplane_applier::provider::Provider;
use dnsplane_applier::provider::route53::credentials::EnvReader;
use dnsplane_applier::provider::route53::{Route53Config, Route53Provider};
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::sync::Arc;

#[tokio::test]
async fn route53_parses_octodns_recorded_pages() {
    let zone = Name::parse("unit.tests").unwrap();
    let path = "/2013-04-01/hostedzone/z42/rrset";
    let replay = Replay::start(vec![
        // The second page is asked for where the first said it stopped.
        Route::get(
            path,
            "text/xml",
            fixture("route53/list_resource_record_sets-p2.xml"),
        )
        .with_query("name", "next_name")
        .with_query("type", "next_type"),
        Route::get(
            path,
            "text/xml",
            fixture("route53/list_resource_record_sets-p1.xml"),
        ),
    ])
    .await;
    let cfg: Route53Config = toml::from_str(&format!(
        "endpoint = \"{}\"\nzone_ids = {{ \"unit.tests\" = \"z42\" }}",
        replay.url
    ))
    .unwrap();
    let driver = Route53Provider::with_env(&cfg, recorded_keys()).unwrap();
    let listing = driver.list(&zone, None).await.unwrap();
    replay.assert_all_recorded();

    // octoDNS's expectations (tests/test_octodns_provider_route53.py, the class's
    // `expected` zone), the types dnsplane models. Not records for dnsplane: the
    // traffic-policy set `ignored` (no values of its own), SOA.
    let mut want = rrsets(
        &zone,
        &[
            ("simple.unit.tests", "A", 60, &["1.2.3.4", "2.2.3.4"]),
            ("unit.tests", "A", 61, &["2.2.3.4", "3.2.3.4"]),
            ("cname.unit.tests", "CNAME", 62, &["unit.tests."]),
            (
                "txt.unit.tests",
                "TXT",
                63,
                &["\"Hello World!\"", "\"Goodbye World?\""],
            ),
            (
                "unit.tests",
                "MX",
                64,
                &["10 smtp-1.unit.tests.", "20 smtp-2.unit.tests."],
            ),
            (
                "naptr.unit.tests",
                "NAPTR",
                65,
                &["10 20 \"U\" \"SIP+D2U\" \"!^.*$!sip:info@bar.example.com!\" ."],
            ),
            (
                "_srv._tcp.unit.tests",
                "SRV",
                66,
                &["10 20 30 cname.unit.tests."],
            ),
            ("unit.tests", "NS", 67, &["ns1.unit.tests."]),
            ("sub.unit.tests", "NS", 68, &["5.2.3.4.", "6.2.3.4."]),
            (
                "unit.tests",
                "CAA",
                69,
                &["0 issue \"ca.unit.tests; cansignhttpexchanges=yes\""],
            ),
            // The digest as recorded, with a space inside (RFC 4034 §5.3: whitespace
            // is allowed within the hex).
            (
                "dskey.unit.tests",
                "DS",
                70,
                &["60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118"],
            ),
        ],
    );
    // octoDNS's `Route53Provider/ALIAS` values: the target's name, its hosted zone and
    // whether it evaluates the target's health; dnsplane's alias properties.
    for (name, rtype, target, hosted_zone, evaluate) in [
        (
            "alias",
            RecordType::A,
            "unit.tests.",
            "Z119WBBTVP5WFX",
            "false",
        ),
        (
            "alias",
            RecordType::Naptr,
            "naptr.unit.tests.",
            "Z119WBBTVP5WFX",
            "false",
        ),
        (
            "alb",
            RecordType::A,
            "dualstack.octodns-testing-1425816977.us-east-1.elb.amazonaws.com.",
            "Z35SXDOTRQ7X7K",
            "true",
        ),
    ] {
        let key = RecordKey::new(
            zone.clone(),
            Name::parse(&format!("{name}.unit.tests")).unwrap(),
            rtype,
        );
        let set = RRSet::with_properties(
            key.clone(),
            0,
            &[target],
            &[
                ("alias", "true"),
                ("aws/target-hosted-zone", hosted_zone),
                ("aws/evaluate-target-health", evaluate),
            ],
        )
        .unwrap();
        want.insert(key, set);
    }
    assert_same(&listing.rrsets, &want);
}

/// octodns-route53's test_populate_for_octal_replaced_domain_name: a classless
/// reverse zone (RFC 2317, `0/25.2.0.192.in-addr.arpa`), whose `/` Route 53 lists as
/// the octal escape `\057`.
#[tokio::test]
async fn route53_reads_octal_escaped_names() {
    let zone = Name::parse("0/25.2.0.192.in-addr.arpa").unwrap();
    let replay = Replay::start(vec![Route::get(
        "/2013-04-01/hostedzone/z41/rrset",
        "text/xml",
        fixture("route53/list_resource_record_sets-octal.xml"),
    )])
    .await;
    let cfg: Route53Config = toml::from_str(&format!(
        "endpoint = \"{}\"\nzone_ids = {{ \"0/25.2.0.192.in-addr.arpa\" = \"z41\" }}",
        replay.url
    ))
    .unwrap();
    let driver = Route53Provider::with_env(&cfg, recorded_keys()).unwrap();
    let listing = driver.list(&zone, None).await.unwrap();
    replay.assert_all_recorded();
    let want = rrsets(
        &zone,
        &[(
            "1.0/25.2.0.192.in-addr.arpa",
            "PTR",
            30,
            &["hostname.example.com."],
        )],
    );
    assert_same(&listing.rrsets, &want);
}

/// Keys for the signature (the replay server checks none).
fn recorded_keys() -> EnvReader {
    Arc::new(|k| match k {
        "AWS_ACCESS_KEY_ID" => Some("AKIARECORDED00000000".into()),
        "AWS_SECRET_ACCESS_KEY" => Some("recorded".into()),
        _ => None,
    })
}
