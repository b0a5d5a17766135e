use super::*;
use dnsplane_common::routing::cloudflare::PROXIED;

fn zone() -> Name {
    Name::parse("ex.test").unwrap()
}

fn key(label: &str, t: RecordType) -> RecordKey {
    RecordKey::new(zone(), zone().prepend(label).unwrap(), t)
}

fn set(label: &str, t: RecordType, ttl: u32, v: &[&str]) -> RRSet {
    RRSet::new(key(label, t), ttl, v).unwrap()
}

fn rec(id: &str, label: &str, t: &str, content: &str, ttl: u32, proxied: bool) -> WireRecord {
    serde_json::from_value(json!({
        "id": id, "name": format!("{label}.ex.test"), "type": t, "content": content,
        "ttl": ttl, "proxied": proxied, "comment": "keep me", "tags": ["team:dns"],
    }))
    .unwrap()
}

fn read_of(records: Vec<WireRecord>) -> Read {
    let mut r = Read::default();
    for rec in records {
        r.add(&zone(), rec, None);
    }
    r.finish()
}

#[test]
fn a_read_groups_records_into_sets_with_the_lowest_ttl() {
    let r = read_of(vec![
        rec("1", "www", "A", "192.0.2.1", 300, false),
        rec("2", "www", "A", "192.0.2.2", 120, false),
        rec("3", "www", "URI", "10 1 \"x\"", 300, false),
        rec("4", "m", "MX", "mail.ex.test", 300, false),
    ]);
    let www = &r.zone.rrsets[&key("www", RecordType::A)];
    assert_eq!(www.ttl, 120);
    assert_eq!(www.values_vec(), ["192.0.2.1", "192.0.2.2"]);
    // An MX without a priority makes no value: opaque, never written over.
    assert!(r.zone.opaque.contains(&key("m", RecordType::Mx)));
    assert_eq!(r.zone.rrsets.len(), 1, "URI is not modelled");
}

#[test]
fn an_update_patches_records_in_place_so_their_settings_stay() {
    let r = read_of(vec![
        rec("1", "www", "A", "192.0.2.1", 1, true),
        rec("2", "www", "A", "192.0.2.2", 1, true),
        rec("3", "www", "A", "192.0.2.3", 1, true),
    ]);
    let before = r.zone.rrsets[&key("www", RecordType::A)].clone();
    let after = set("www", RecordType::A, 1, &["192.0.2.1", "192.0.2.9"]);
    let b = build_batch(&[RRSetOp::update(before, after)], &r);
    // 192.0.2.1 untouched; one removed value patched to the new one; one deleted.
    assert_eq!(b.patches.len(), 1, "{b:?}");
    assert_eq!(b.patches[0]["content"], "192.0.2.9");
    assert!(b.patches[0].get("proxied").is_none() && b.patches[0].get("comment").is_none());
    assert_eq!(b.deletes.len(), 1);
    assert!(b.posts.is_empty());

    // More values than before: posts, proxied like the set (TTL automatic); the kept
    // records stay proxied, so their TTL stays automatic: no patch.
    let before = set(
        "www",
        RecordType::A,
        1,
        &["192.0.2.1", "192.0.2.2", "192.0.2.3"],
    );
    let after = set(
        "www",
        RecordType::A,
        60,
        &["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"],
    );
    let b = build_batch(&[RRSetOp::update(before, after)], &r);
    assert_eq!(b.posts.len(), 1);
    assert_eq!(b.posts[0]["proxied"], true);
    assert_eq!(b.posts[0]["ttl"], 1);
    assert_eq!(b.posts[0]["name"], "www.ex.test");
    assert!(b.patches.is_empty(), "{b:?}");
}

fn proxied(label: &str, t: RecordType, ttl: u32, v: &[&str], on: &str) -> RRSet {
    RRSet::with_properties(key(label, t), ttl, v, &[(PROXIED, on)]).unwrap()
}

/// A set whose records are all proxied reads with the property and TTL 1; a set whose
/// records disagree reads without it, its TTL the DNS-only records' (a proxied
/// record's TTL is always 1 and says nothing); a TXT never carries it.
#[test]
fn a_read_shows_the_proxy_status_of_a_set() {
    let r = read_of(vec![
        rec("1", "on", "A", "192.0.2.1", 1, true),
        rec("2", "on", "A", "192.0.2.2", 1, true),
        rec("3", "mixed", "A", "192.0.2.1", 1, true),
        rec("4", "mixed", "A", "192.0.2.2", 300, false),
        rec("5", "off", "CNAME", "t.example.net", 120, false),
        rec("6", "off", "TXT", "\"x\"", 1, false),
    ]);
    let set_of = |l: &str, t| &r.zone.rrsets[&key(l, t)];
    assert_eq!(
        *set_of("on", RecordType::A),
        proxied("on", RecordType::A, 1, &["192.0.2.1", "192.0.2.2"], "true")
    );
    let mixed = set_of("mixed", RecordType::A);
    assert_eq!((mixed.ttl, mixed.property(PROXIED)), (300, None));
    let cname = set_of("off", RecordType::Cname);
    assert_eq!((cname.ttl, cname.property(PROXIED)), (120, None));
    assert_eq!(set_of("off", RecordType::Txt).property(PROXIED), None);
}

/// `true` proxies every record (TTL automatic), `false` makes every one DNS-only
/// (with the set's TTL), in place: ids, comments and tags stay. Nothing else is sent
/// for a record already as asked.
#[test]
fn the_proxy_status_is_written_in_place() {
    let r = read_of(vec![
        rec("1", "www", "A", "192.0.2.1", 300, false),
        rec("2", "www", "A", "192.0.2.2", 1, true),
    ]);
    let before = r.zone.rrsets[&key("www", RecordType::A)].clone();
    let on = proxied(
        "www",
        RecordType::A,
        300,
        &["192.0.2.1", "192.0.2.2", "192.0.2.3"],
        "true",
    );
    let b = build_batch(&[RRSetOp::update(before.clone(), on)], &r);
    assert_eq!(
        b.patches,
        vec![json!({"id": "1", "proxied": true, "ttl": 1})]
    );
    assert_eq!(
        (b.posts[0]["proxied"].clone(), b.posts[0]["ttl"].clone()),
        (json!(true), json!(1))
    );
    let off = proxied(
        "www",
        RecordType::A,
        300,
        &["192.0.2.1", "192.0.2.2"],
        "false",
    );
    let b = build_batch(&[RRSetOp::update(before.clone(), off)], &r);
    assert_eq!(
        b.patches,
        vec![json!({"id": "2", "proxied": false, "ttl": 300})]
    );
    assert!(b.posts.is_empty() && b.deletes.is_empty());
    // Created with the property: posted as asked.
    let new = proxied("new", RecordType::Cname, 300, &["t.example.net."], "false");
    let b = build_batch(&[RRSetOp::create(new)], &r);
    assert_eq!(
        (b.posts[0]["proxied"].clone(), b.posts[0]["ttl"].clone()),
        (json!(false), json!(300))
    );
    // A target that leaves the status out takes the set's as read; the listing cache
    // keeps `false` as a read shows it, without the property.
    let all_on = read_of(vec![rec("7", "p", "A", "192.0.2.1", 1, true)]);
    let cur = all_on.zone.rrsets[&key("p", RecordType::A)].clone();
    let settled = proxy::settle(
        &[RRSetOp::update(
            cur.clone(),
            set("p", RecordType::A, 300, &["192.0.2.9"]),
        )],
        &all_on.zone.rrsets,
    );
    let after = settled[0].after.as_ref().unwrap();
    assert_eq!((after.ttl, after.property(PROXIED)), (1, Some("true")));
    let read_as = proxy::as_read(&[RRSetOp::create(proxied(
        "q",
        RecordType::A,
        60,
        &["192.0.2.1"],
        "false",
    ))]);
    assert_eq!(
        read_as[0].after,
        Some(set("q", RecordType::A, 60, &["192.0.2.1"]))
    );
}

/// `true` on a type Cloudflare cannot proxy is refused before any request (the
/// endpoint below has no server: a request would fail as transient), naming the
/// property; `false` on it passes.
#[tokio::test]
async fn proxying_a_txt_is_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "t").unwrap();
    let p = CloudflareProvider::new(&CloudflareConfig {
        endpoint: "http://127.0.0.1:1/client/v4".into(),
        api_token_file: Some(path),
        ..CloudflareConfig::default()
    })
    .unwrap();
    let txt = proxied("t", RecordType::Txt, 300, &["\"v\""], "true");
    let e = p
        .apply(&zone(), &[RRSetOp::create(txt.clone())])
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid, "{e}");
    assert!(
        e.message.contains(PROXIED) && e.message.contains("TXT"),
        "{e}"
    );
    assert_eq!(e.key.as_ref(), Some(&txt.key));
    let off = proxied("t", RecordType::Txt, 300, &["\"v\""], "false");
    let e = p.apply(&zone(), &[RRSetOp::create(off)]).await.unwrap_err();
    assert_ne!(e.class, ErrorClass::Invalid, "{e}");
    assert!(p.capabilities().properties.contains(&PROXIED));
}

#[test]
fn creates_post_and_deletes_delete_by_id() {
    let r = read_of(vec![rec("7", "old", "CNAME", "t.example.net", 300, false)]);
    let b = build_batch(
        &[
            RRSetOp::delete(set("old", RecordType::Cname, 300, &["t.example.net."])),
            RRSetOp::create(set("new", RecordType::Mx, 300, &["10 mail.example.net."])),
            RRSetOp::create(set(
                "_s._tcp",
                RecordType::Srv,
                300,
                &["1 2 3 sip.example.net."],
            )),
        ],
        &r,
    );
    assert_eq!(b.deletes, vec![json!({"id": "7"})]);
    assert_eq!(b.posts[0]["priority"], 10);
    assert_eq!(b.posts[0]["content"], "mail.example.net");
    assert_eq!(b.posts[1]["data"]["port"], 3);
    assert!(b.posts[0].get("proxied").is_none());
}

#[test]
fn config_checks_name_the_field() {
    let z = zone();
    let mut problems = Vec::new();
    CloudflareConfig {
        endpoint: "api.cloudflare.com".into(),
        api_token_env: Some("A".into()),
        api_token_file: Some("/x".into()),
        zone_ids: BTreeMap::from([(Name::parse("other.test").unwrap(), "../x".into())]),
        timeout: Duration::ZERO,
        ..CloudflareConfig::default()
    }
    .check("accounts[0]", std::slice::from_ref(&z), &mut problems);
    let all = problems.join("\n");
    for want in [
        "accounts[0].endpoint",
        "accounts[0].timeout",
        "only one of api_token_env and api_token_file",
        "accounts[0].zone_ids names other.test.",
        "is not a zone id",
    ] {
        assert!(all.contains(want), "{want} not in {all}");
    }
    assert_eq!(
        CloudflareConfig::default().token_source(),
        TokenSource::Env("CLOUDFLARE_API_TOKEN".into())
    );
}

#[test]
fn debug_redacts_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "very-secret-token\n").unwrap();
    let p = CloudflareProvider::new(&CloudflareConfig {
        endpoint: "http://127.0.0.1:1/client/v4/".into(),
        api_token_file: Some(path),
        ..CloudflareConfig::default()
    })
    .unwrap();
    let dbg = format!("{p:?}");
    assert!(!dbg.contains("very-secret-token"), "{dbg}");
    assert!(dbg.contains("/client/v4"), "{dbg}");
    assert_eq!(
        p.url(&["zones", "z1", "dns_records"], &[]).as_str(),
        "http://127.0.0.1:1/client/v4/zones/z1/dns_records"
    );
    let e = CloudflareProvider::new(&CloudflareConfig {
        api_token_file: Some(dir.path().join("missing")),
        ..CloudflareConfig::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
}
