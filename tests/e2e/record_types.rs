//! PTR, SVCB, HTTPS, TLSA, SSHFP, NAPTR and DS through every driver: written in one
//! batch, listed back equal, changed and deleted; on the DNS servers (PowerDNS, BIND
//! by RFC 2136, the embedded provider) also answered to the real `dig` with the same
//! data; on Cloudflare's emulator, held as the structured `data` Cloudflare keeps.
use crate::conformance::{Subject, apply, create_all, delete_all, set, subjects, update_all};
use dnsplane_applier::provider::memory::dns::{Authority, DnsServer};
use dnsplane_common::{Name, RData, RRSet, RRSetOp, RecordType};
use dnsplane_e2e::servers::{Bind, PowerDns, dig_binary, dig_sorted};
use std::sync::Arc;

const SHA256: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const SHA1: &str = "0123456789abcdef0123456789abcdef01234567";

/// One set of each new type (`second`: other values for the same keys).
fn sets(zone: &Name, second: bool) -> Vec<RRSet> {
    let v = |a: &str, b: &str| vec![if second { b } else { a }.to_string()];
    vec![
        set(
            zone,
            "ptr",
            RecordType::Ptr,
            300,
            &v("host.example.net.", "other.example.net."),
        ),
        set(
            zone,
            "svc",
            RecordType::Svcb,
            300,
            &v(
                "1 svc.example.net. alpn=dot port=853",
                "0 alias.example.net.",
            ),
        ),
        set(
            zone,
            "web",
            RecordType::Https,
            300,
            &v(
                "1 . alpn=h2,h3 ipv4hint=192.0.2.1 ipv6hint=2001:db8::1",
                "2 cdn.example.net. alpn=h2 port=8443",
            ),
        ),
        set(
            zone,
            "_443._tcp.web",
            RecordType::Tlsa,
            300,
            &v(&format!("3 1 1 {SHA256}"), &format!("2 0 1 {SHA256}")),
        ),
        set(
            zone,
            "ssh",
            RecordType::Sshfp,
            300,
            &v(&format!("4 2 {SHA256}"), &format!("1 1 {SHA1}")),
        ),
        set(
            zone,
            "sip",
            RecordType::Naptr,
            300,
            &v(
                "100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.net.",
                "100 100 \"U\" \"E2U+sip\" \"!^.*$!sip:info@example.net!\" .",
            ),
        ),
        set(
            zone,
            "child",
            RecordType::Ds,
            300,
            &v(
                &format!("12345 13 2 {SHA256}"),
                &format!("54321 8 1 {SHA1}"),
            ),
        ),
    ]
}

async fn assert_holds(s: &Subject, want: &[RRSet], what: &str) {
    let names: Vec<Name> = want.iter().map(|r| r.key.name.clone()).collect();
    let listed = s
        .provider
        .list(&s.zone, Some(&names))
        .await
        .unwrap_or_else(|e| panic!("{}: list: {e}", s.label));
    for w in want {
        let got = listed.rrsets.iter().find(|r| r.key == w.key);
        assert_eq!(got, Some(w), "{} {what}: {}", s.label, w.key);
    }
}

/// Each set as `dig +short` shows it, read back through dnsplane's parser.
fn assert_dig(port: u16, want: &[RRSet], what: &str) {
    let dig = dig_binary().expect("dig (DNSPLANE_DIG)");
    for w in want {
        let lines = dig_sorted(&dig, port, w.key.name.as_str(), w.key.rtype.as_str());
        let mut got: Vec<String> = lines
            .iter()
            .map(|l| {
                RData::parse(w.key.rtype, l)
                    .unwrap_or_else(|e| panic!("{what}: dig {} said {l:?}: {e}", w.key))
                    .to_string()
            })
            .collect();
        got.sort();
        let want_values: Vec<String> = w.values().map(str::to_string).collect();
        assert_eq!(got, want_values, "{what}: dig {}", w.key);
    }
}

/// Create, update and delete every new type; `dns_port`: where the same data is served.
async fn round_trip(s: &Subject, dns_port: Option<u16>) {
    // A DS sits at a delegation (BIND drops one that does not, RFC 4035 §2.4).
    let delegation = set(
        &s.zone,
        "child",
        RecordType::Ns,
        300,
        &["ns1.example.net.".to_string()],
    );
    apply(s, &[RRSetOp::create(delegation.clone())]).await;
    let first = sets(&s.zone, false);
    let second = sets(&s.zone, true);
    create_all(s, &first).await;
    assert_holds(s, &first, "after the creates").await;
    if let Some(p) = dns_port {
        tokio::task::block_in_place(|| assert_dig(p, &first, s.label));
    }
    update_all(s, &first, &second).await;
    assert_holds(s, &second, "after the updates").await;
    if let Some(p) = dns_port {
        tokio::task::block_in_place(|| assert_dig(p, &second, s.label));
    }
    delete_all(s, &second).await;
    apply(s, &[RRSetOp::delete(delegation)]).await;
    let names: Vec<Name> = second.iter().map(|r| r.key.name.clone()).collect();
    let left = s.provider.list(&s.zone, Some(&names)).await.expect("list");
    assert!(
        left.rrsets.iter().all(|r| !names.contains(&r.key.name)),
        "{}: after the deletes: {:?}",
        s.label,
        left.rrsets
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_types_through_powerdns_and_dig() {
    let Some(s) = subjects::pdns() else { return };
    let port = s.kept::<PowerDns>().dns_port;
    round_trip(&s, Some(port)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_types_through_rfc2136_to_bind_and_dig() {
    let Some(s) = subjects::rfc2136() else { return };
    let port = s.kept::<Bind>().port;
    round_trip(&s, Some(port)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_types_through_the_embedded_provider_and_dig() {
    use dnsplane_applier::provider::memory::MemoryProvider;
    use dnsplane_applier::provider::memory::store::MemoryStore;
    if dig_binary().is_none() {
        assert!(
            std::env::var_os("DNSPLANE_REQUIRE_SERVERS").is_none(),
            "dig is required (DNSPLANE_REQUIRE_SERVERS=1)"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let zone = Name::parse("memory.test").expect("zone");
    let store = Arc::new(MemoryStore::open(dir.path()).expect("store"));
    let provider = MemoryProvider::new(store.clone(), vec![zone.clone()]).expect("provider");
    let server = DnsServer::bind(
        "127.0.0.1:0".parse().expect("addr"),
        Authority::new(store, std::slice::from_ref(&zone)),
    )
    .await
    .expect("bind the DNS server");
    let port = server.local_addr().port();
    let stop = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(server.run(stop.clone()));
    let s = Subject::new("memory", provider, zone, dir);
    round_trip(&s, Some(port)).await;
    stop.cancel();
    serving.await.expect("server task");
}

/// A test of each emulated subject (no DNS server to `dig`): `test: subject`.
macro_rules! round_trips_on {
    ($($test:ident: $subject:ident,)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            round_trip(&subjects::$subject().await, None).await;
        }
    )*};
}

round_trips_on! {
    new_types_through_route53_on_its_emulator: route53_emulated,
    new_types_through_clouddns_on_its_emulator: clouddns,
    new_types_through_cloudflare_on_its_emulator: cloudflare,
    new_types_through_the_webhook_to_dnsplanes_own_server: webhook_dnsplane,
}
