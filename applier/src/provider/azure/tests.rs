//! Unit tests of the `azure` driver's wire format, configuration and credentials.
//! The JSON shapes are those the Azure SDK for Python (azure-mgmt-dns 9.0.0,
//! azure-mgmt-privatedns 2.0.0, generated from the API description) serializes for
//! the same record sets; the request paths those of the API description.
use super::identity::{Credential, EnvReader, TokenSource};
use super::wire::{self, Flavor, Parsed, WireSet};
use super::*;
use crate::config::ApplierConfig;
use dnsplane_common::RecordType;
use serde_json::json;
use std::path::Path;

fn zone() -> Name {
    Name::parse("example.com.").unwrap()
}

fn set(name: &str, t: RecordType, ttl: u32, values: &[&str]) -> RRSet {
    let name = if name == "@" {
        zone()
    } else {
        Name::parse(&format!("{name}.example.com.")).unwrap()
    };
    RRSet::new(RecordKey::new(zone(), name, t), ttl, values).unwrap()
}

fn wire_set(v: serde_json::Value) -> WireSet {
    serde_json::from_value(v).unwrap()
}

fn env(pairs: &[(&str, &str)]) -> EnvReader {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(move |k| map.get(k).cloned())
}

/// Every public record type, as the SDK serializes it, reads into the RRSet it is and
/// writes back to the same JSON.
#[test]
fn public_sets_round_trip_through_arm_json() {
    let cases = [
        (
            set("www", RecordType::A, 300, &["192.0.2.1", "192.0.2.2"]),
            json!({"ARecords": [{"ipv4Address": "192.0.2.1"}, {"ipv4Address": "192.0.2.2"}]}),
        ),
        (
            set("v6", RecordType::Aaaa, 300, &["2001:db8::1"]),
            json!({"AAAARecords": [{"ipv6Address": "2001:db8::1"}]}),
        ),
        (
            set("@", RecordType::Mx, 300, &["10 mail.example.com."]),
            json!({"MXRecords": [{"preference": 10, "exchange": "mail.example.com."}]}),
        ),
        (
            set("_sip._tcp", RecordType::Srv, 300, &["1 2 3 t.example.com."]),
            json!({"SRVRecords": [{"priority": 1, "weight": 2, "port": 3, "target": "t.example.com."}]}),
        ),
        (
            set("txt", RecordType::Txt, 300, &["\"a b\" \"c\""]),
            json!({"TXTRecords": [{"value": ["a b", "c"]}]}),
        ),
        (
            set("alias", RecordType::Cname, 300, &["x.example.com."]),
            json!({"CNAMERecord": {"cname": "x.example.com."}}),
        ),
        (
            set("@", RecordType::Caa, 300, &["0 issue \"ca.example.net\""]),
            json!({"caaRecords": [{"flags": 0, "tag": "issue", "value": "ca.example.net"}]}),
        ),
        (
            set("sub", RecordType::Ns, 300, &["ns1.example.net."]),
            json!({"NSRecords": [{"nsdname": "ns1.example.net."}]}),
        ),
        (
            set("1", RecordType::Ptr, 300, &["host.example.com."]),
            json!({"PTRRecords": [{"ptrdname": "host.example.com."}]}),
        ),
    ];
    for (rrset, records) in cases {
        let mut props = records.as_object().unwrap().clone();
        props.insert("TTL".into(), json!(300));
        let body = wire::to_body(Flavor::Public, &rrset, None).unwrap();
        assert_eq!(body, json!({ "properties": props }), "{}", rrset.key);
        let rel = wire::relative_name(&zone(), &rrset.key.name);
        // What Azure answers: the request's properties and its own read-only ones.
        let mut answered = props.clone();
        for (k, v) in [
            ("fqdn", json!(format!("{}", rrset.key.name))),
            ("provisioningState", json!("Succeeded")),
            ("targetResource", json!({})),
            ("metadata", json!(null)),
        ] {
            answered.insert(k.into(), v);
        }
        let read = wire::from_wire(
            Flavor::Public,
            &zone(),
            &wire_set(json!({
                "id": format!("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/dnsZones/example.com/{}/{rel}", rrset.key.rtype),
                "name": rel,
                "type": format!("Microsoft.Network/dnsZones/{}", rrset.key.rtype),
                "etag": "e1",
                "properties": answered,
            })),
        );
        assert_eq!(read.parsed, Parsed::Set(rrset.clone()));
        assert_eq!(read.etag.as_deref(), Some("e1"));
    }
}

/// Private DNS spells every property in camel case and has no NS or CAA sets.
#[test]
fn private_sets_use_their_own_casing_and_types() {
    let a = set("www", RecordType::A, 60, &["192.0.2.1"]);
    assert_eq!(
        wire::to_body(Flavor::Private, &a, None).unwrap(),
        json!({"properties": {"ttl": 60, "aRecords": [{"ipv4Address": "192.0.2.1"}]}})
    );
    let read = wire::from_wire(
        Flavor::Private,
        &zone(),
        &wire_set(json!({
            "name": "www", "type": "Microsoft.Network/privateDnsZones/A", "etag": "e",
            "properties": {"ttl": 60, "isAutoRegistered": false, "aRecords": [{"ipv4Address": "192.0.2.1"}]}
        })),
    );
    assert_eq!(read.parsed, Parsed::Set(a));
    let ns = set("sub", RecordType::Ns, 60, &["ns1.example.net."]);
    let why = wire::refusal(Flavor::Private, &ns).unwrap();
    assert!(why.contains("Private DNS has no NS record sets"), "{why}");
    let caa = set("@", RecordType::Caa, 60, &["0 issue \"ca.example.net\""]);
    assert!(wire::refusal(Flavor::Private, &caa).is_some());
    assert!(wire::refusal(Flavor::Public, &caa).is_none());
    // The apex SOA is Azure's: skipped, never a set nor opaque.
    let soa = wire::from_wire(
        Flavor::Private,
        &zone(),
        &wire_set(
            json!({"name": "@", "type": "Microsoft.Network/privateDnsZones/SOA", "etag": "s",
            "properties": {"ttl": 3600, "soaRecord": {"host": "azureprivatedns.net", "email": "x"}}}),
        ),
    );
    assert_eq!(soa.parsed, Parsed::Skip);
}

/// An alias record set (targetResource) or an empty set is present but not data:
/// opaque, so that nothing takes it for absent or overwrites it.
#[test]
fn alias_and_empty_sets_are_opaque() {
    let key = set("www", RecordType::A, 60, &["192.0.2.1"]).key;
    for props in [
        json!({"TTL": 60, "targetResource": {"id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/ip"}, "ARecords": []}),
        json!({"TTL": 60, "ARecords": []}),
        json!({"TTL": 60, "ARecords": [{"ipv4Address": "not an address"}]}),
    ] {
        let read = wire::from_wire(
            Flavor::Public,
            &zone(),
            &wire_set(
                json!({"name": "www", "type": "Microsoft.Network/dnsZones/A", "etag": "e", "properties": props}),
            ),
        );
        assert_eq!(read.parsed, Parsed::Opaque(key.clone()));
    }
}

/// More records than one set may hold is refused before any request, naming the set
/// and the limit; TXT's limit is higher.
#[test]
fn oversized_sets_are_refused_naming_the_limit() {
    let ips: Vec<String> = (1..=21).map(|i| format!("192.0.2.{i}")).collect();
    let big = RRSet::new(set("big", RecordType::A, 60, &["192.0.2.1"]).key, 60, &ips).unwrap();
    let why = wire::refusal(Flavor::Public, &big).unwrap();
    assert!(
        why.contains("big.example.com.")
            && why.contains("21 records")
            && why.contains("at most 20"),
        "{why}"
    );
    let txts: Vec<String> = (1..=21).map(|i| format!("\"v{i}\"")).collect();
    let txt = RRSet::new(set("t", RecordType::Txt, 60, &["\"x\""]).key, 60, &txts).unwrap();
    assert_eq!(wire::refusal(Flavor::Public, &txt), None);
    // A type Azure has no record sets of.
    let tlsa = set(
        "_443._tcp",
        RecordType::Tlsa,
        60,
        &[&format!("3 1 1 {}", "ab".repeat(32))],
    );
    assert!(
        wire::refusal(Flavor::Public, &tlsa)
            .unwrap()
            .contains("no TLSA record sets")
    );
}

/// Names relative to the zone, `@` at the apex; the set URL is the API's path.
#[test]
fn urls_follow_the_api_description() {
    assert_eq!(wire::relative_name(&zone(), &zone()), "@");
    let www = Name::parse("a.www.example.com.").unwrap();
    assert_eq!(wire::relative_name(&zone(), &www), "a.www");
    let mut cfg = AzureConfig::new("sub-1", "rg-1");
    cfg.token_env = Some("T".into());
    let p = AzureProvider::with_env(&cfg, env(&[("T", "x")])).unwrap();
    let key = set("@", RecordType::Txt, 60, &["\"x\""]).key;
    assert_eq!(
        p.set_url(&key).as_str(),
        "https://management.azure.com/subscriptions/sub-1/resourceGroups/rg-1/providers/Microsoft.Network/dnsZones/example.com/TXT/@?api-version=2018-05-01"
    );
    cfg.private = true;
    let p = AzureProvider::with_env(&cfg, env(&[("T", "x")])).unwrap();
    assert_eq!(
        p.url(
            &["example.com", p.flavor().list_segment()],
            &[("$top", "100")]
        )
        .as_str(),
        "https://management.azure.com/subscriptions/sub-1/resourceGroups/rg-1/providers/Microsoft.Network/privateDnsZones/example.com/ALL?api-version=2020-06-01&%24top=100"
    );
}

/// ARM's error body gives the code and message; the class follows the status.
#[test]
fn answers_are_classified_with_the_arm_code() {
    let body = br#"{"error":{"code":"PreconditionFailed","message":"The condition '*' in the If-None-Match header was not satisfied."}}"#;
    let e = wire::classify(412, body, None, "PUT x", true, None);
    assert_eq!(e.class, ErrorClass::Conflict);
    assert!(
        e.message.contains("412 PreconditionFailed: The condition"),
        "{}",
        e.message
    );
    let e = wire::classify(
        429,
        b"{}",
        Some(Duration::from_secs(7)),
        "PUT x",
        true,
        None,
    );
    assert!(e.throttled && e.class == ErrorClass::Transient);
    assert_eq!(e.retry_after, Some(Duration::from_secs(7)));
    let body = br#"{"error":{"code":"AuthorizationFailed","message":"The client 'c' does not have authorization"}}"#;
    let e = wire::classify(403, body, None, "PUT x", true, None);
    assert_eq!(e.class, ErrorClass::Permanent);
    assert!(e.message.contains("AuthorizationFailed"));
    assert_eq!(
        wire::classify(503, b"", None, "GET x", false, None).class,
        ErrorClass::Transient
    );
    assert_eq!(
        wire::classify(503, b"", None, "PUT x", true, None).class,
        ErrorClass::Ambiguous
    );
    assert!(wire::zone_missing(
        br#"{"error":{"code":"ParentResourceNotFound","message":"m"}}"#
    ));
    assert!(!wire::zone_missing(
        br#"{"error":{"code":"NotFound","message":"m"}}"#
    ));
}

/// The credential order: a token obtained elsewhere, then workload identity, then a
/// client secret; what is missing is named; secrets never show in `Debug`.
#[test]
fn credentials_resolve_in_order_and_never_show_secrets() {
    let mut cfg = AzureConfig::new("s", "rg");
    let all = [
        ("AZURE_TENANT_ID", "t"),
        ("AZURE_CLIENT_ID", "c"),
        ("AZURE_CLIENT_SECRET", "very-secret"),
        ("AZURE_FEDERATED_TOKEN_FILE", "/var/run/token"),
    ];
    let c = Credential::resolve(&cfg, &env(&all)).unwrap();
    assert!(
        matches!(&c, Credential::Federated { file, .. } if file == Path::new("/var/run/token"))
    );
    let c = Credential::resolve(&cfg, &env(&all[..3])).unwrap();
    let shown = format!("{c:?}");
    assert!(matches!(c, Credential::ClientSecret { .. }));
    assert!(
        !shown.contains("very-secret") && shown.contains("<redacted>"),
        "{shown}"
    );
    let e = Credential::resolve(&cfg, &env(&all[1..3]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("AZURE_TENANT_ID"), "{e}");
    let e = Credential::resolve(&cfg, &env(&[]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("AZURE_CLIENT_SECRET") && e.contains("token_file"),
        "{e}"
    );
    cfg.token_file = Some("/tok".into());
    let c = Credential::resolve(&cfg, &env(&all)).unwrap();
    assert!(matches!(c, Credential::Token(TokenSource::File(_))));
    let p = AzureProvider::with_env(&cfg, env(&all)).unwrap();
    assert!(!format!("{p:?}").contains("very-secret"));
}

/// A pre-obtained token file is read trimmed, kept, and read again once forgotten.
#[tokio::test]
async fn a_token_file_is_trimmed_and_read_again_when_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "  first\n").unwrap();
    let cred = Credential::Token(TokenSource::File(path.clone()));
    let id = identity::Identity::new(
        cred,
        DEFAULT_AUTHORITY_HOST,
        env(&[]),
        reqwest::Client::new(),
    );
    assert_eq!(id.get().await.unwrap().secret.expose(), "first");
    std::fs::write(&path, "second").unwrap();
    assert_eq!(
        id.get().await.unwrap().secret.expose(),
        "first",
        "kept until refused"
    );
    id.forget().await;
    assert_eq!(id.get().await.unwrap().secret.expose(), "second");
    std::fs::write(&path, " \n").unwrap();
    id.forget().await;
    let e = id.get().await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent);
    assert!(e.message.contains("is empty") && e.message.contains("token"));
    assert_eq!(
        id.token_url("tenant-1"),
        "https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token"
    );
}

/// The account table: parsed with its defaults, every bad key named.
#[test]
fn the_account_table_is_validated() {
    let ok = r#"
[[accounts]]
name = "az"
driver = "azure"
zones = ["example.com."]
subscription_id = "00000000-0000-0000-0000-000000000000"
resource_group = "dns"
private = true
token_env = "AZ_TOKEN"
"#;
    let c = ApplierConfig::from_toml(Path::new("a.toml"), ok).unwrap();
    let crate::config::DriverConfig::Azure(a) = &c.accounts[0].driver else {
        panic!("not azure: {:?}", c.accounts[0].driver)
    };
    assert!(a.private);
    assert_eq!(a.endpoint, DEFAULT_ENDPOINT);
    assert_eq!(a.authority_host, DEFAULT_AUTHORITY_HOST);
    let bad = r#"
[[accounts]]
name = "az"
driver = "azure"
zones = ["example.com."]
subscription_id = ""
resource_group = "a/b"
endpoint = "ftp://x"
token_env = "A"
token_file = "f"
"#;
    let e = ApplierConfig::from_toml(Path::new("a.toml"), bad)
        .unwrap_err()
        .to_string();
    for want in [
        "accounts[0].subscription_id is empty",
        "accounts[0].resource_group \"a/b\"",
        "accounts[0].endpoint \"ftp://x\"",
        "set only one of token_env and token_file",
    ] {
        assert!(e.contains(want), "{want:?} not in {e}");
    }
    let unknown = ok.replace("private = true", "privat = true");
    let e = ApplierConfig::from_toml(Path::new("a.toml"), &unknown)
        .unwrap_err()
        .to_string();
    assert!(e.contains("privat"), "{e}");
}
