//! ChangeResourceRecordSets: atomicity, every error text, exact DELETE, UPSERT, order,
//! CNAME rules, limits, wildcard names, PENDING→INSYNC.
use crate::support::{NS, batch, change, change_with, opts, start, summary};
use std::time::Duration;

#[tokio::test]
async fn a_bad_change_leaves_the_zone_untouched_and_every_failure_is_reported() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    assert_eq!(
        c.change(
            &zone,
            &[change("CREATE", "taken.example.com", "TXT", 60, &["\"x\""])]
        )
        .await
        .status,
        200
    );
    let before = summary(&emu, &zone);
    let r = c
        .change(
            &zone,
            &[
                change("CREATE", "ok1.example.com", "A", 60, &["192.0.2.1"]),
                change("CREATE", "taken.example.com", "TXT", 60, &["\"y\""]),
                change("UPSERT", "ok2.example.com", "AAAA", 60, &["2001:db8::1"]),
                change(
                    "DELETE",
                    "gone.example.com",
                    "CNAME",
                    60,
                    &["t.example.net."],
                ),
                change("CREATE", "bad.example.com", "A", 60, &["999.1.1.1"]),
                change("CREATE", "x.example.org", "A", 60, &["192.0.2.1"]),
            ],
        )
        .await;
    r.assert_error(
        400,
        "InvalidChangeBatch",
        "[Tried to create resource record set [name='taken.example.com.', type='TXT'] but it already exists, \
         Tried to delete resource record set [name='gone.example.com.', type='CNAME'] but it was not found, \
         Invalid Resource Record: 'FATAL problem: ARRDATAIllegalIPv4Address (Value is not a valid IPv4 address) encountered with '999.1.1.1'', \
         RRSet with DNS name x.example.org. is not permitted in zone example.com.]",
    );
    assert_eq!(r.text("Type").unwrap(), "Sender");
    assert_eq!(summary(&emu, &zone), before, "nothing of the batch applied");
    emu.stop().await;
}

#[tokio::test]
async fn success_answers_pending_then_insync() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let r = c
        .change(
            &zone,
            &[change("CREATE", "a.example.com", "A", 300, &["192.0.2.1"])],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains(&format!(
        "<ChangeResourceRecordSetsResponse xmlns=\"{NS}\"><ChangeInfo><Id>/change/C"
    )));
    assert_eq!(r.text("Status").unwrap(), "PENDING");
    assert_eq!(r.text("Comment").unwrap(), "test");
    let submitted = r.text("SubmittedAt").unwrap();
    assert!(
        submitted.ends_with('Z') && submitted.len() == 24,
        "{submitted}"
    );
    let id = r.text("Id").unwrap();
    let bare = id.trim_start_matches("/change/").to_string();
    let g = c.get(&format!("/2013-04-01/change/{bare}")).await;
    assert_eq!(
        (g.status, g.text("Status").unwrap().as_str()),
        (200, "PENDING")
    );
    assert_eq!(g.text("Id").unwrap(), id);
    tokio::time::sleep(Duration::from_millis(450)).await;
    let g = c.get(&format!("/2013-04-01/change/{bare}")).await;
    assert_eq!(g.text("Status").unwrap(), "INSYNC");
    assert_eq!(g.text("SubmittedAt").unwrap(), submitted);
    c.get("/2013-04-01/change/C0NOSUCHCHANGE")
        .await
        .assert_error(
            404,
            "NoSuchChange",
            "A change with the specified change ID does not exist.",
        );
    assert_eq!(emu.stats().changes_committed, 1);
    emu.stop().await;
}

#[tokio::test]
async fn delete_must_match_exactly_and_upsert_replaces_or_creates() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let create = change(
        "CREATE",
        "a.example.com",
        "A",
        60,
        &["192.0.2.1", "192.0.2.2"],
    );
    assert_eq!(c.change(&zone, &[create]).await.status, 200);
    let stale = "[Tried to delete resource record set [name='a.example.com.', type='A'] but the values provided do not match the current values]";
    for wrong in [
        change(
            "DELETE",
            "a.example.com",
            "A",
            300,
            &["192.0.2.1", "192.0.2.2"],
        ),
        change("DELETE", "a.example.com", "A", 60, &["192.0.2.1"]),
        change(
            "DELETE",
            "a.example.com",
            "A",
            60,
            &["192.0.2.1", "192.0.2.3"],
        ),
    ] {
        c.change(&zone, &[wrong])
            .await
            .assert_error(400, "InvalidChangeBatch", stale);
    }
    // UPSERT replaces...
    let r = c
        .change(
            &zone,
            &[change("UPSERT", "A.EXAMPLE.COM.", "A", 120, &["192.0.2.9"])],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // ...and creates.
    let r = c
        .change(
            &zone,
            &[change(
                "UPSERT",
                "new.example.com",
                "TXT",
                60,
                &["\"v=spf1 -all\""],
            )],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = summary(&emu, &zone);
    assert!(
        s.contains(&"a.example.com. A 120 192.0.2.9".to_string()),
        "{s:?}"
    );
    assert!(
        s.contains(&"new.example.com. TXT 60 \"v=spf1 -all\"".to_string()),
        "{s:?}"
    );
    // An exact DELETE (any value order) goes through.
    let r = c
        .change(
            &zone,
            &[change("DELETE", "a.example.com", "A", 120, &["192.0.2.9"])],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    emu.stop().await;
}

#[tokio::test]
async fn changes_apply_in_order_to_a_working_copy() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let old = change("CREATE", "x.example.com", "TXT", 60, &["\"old\""]);
    assert_eq!(
        c.change(&zone, std::slice::from_ref(&old)).await.status,
        200
    );
    // DELETE then CREATE of one set: Route 53's compare-and-swap.
    let r = c
        .change(
            &zone,
            &[
                old.replace("CREATE", "DELETE"),
                change("CREATE", "x.example.com", "TXT", 60, &["\"new\""]),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let invalid = "[The request contains an invalid set of changes for a resource record set 'TXT x.example.com.']";
    let cur = change("DELETE", "x.example.com", "TXT", 60, &["\"new\""]);
    c.change(&zone, &[cur.clone(), cur.clone()])
        .await
        .assert_error(400, "InvalidChangeBatch", invalid);
    let up = change("UPSERT", "x.example.com", "TXT", 60, &["\"z\""]);
    c.change(&zone, &[up.clone(), up])
        .await
        .assert_error(400, "InvalidChangeBatch", invalid);
    c.change(&zone, &[change("CREATE", "x.example.com", "TXT", 60, &["\"z\""]), cur.clone()])
        .await
        .assert_error(
            400,
            "InvalidChangeBatch",
            "[Tried to create resource record set [name='x.example.com.', type='TXT'] but it already exists, \
             The request contains an invalid set of changes for a resource record set 'TXT x.example.com.']",
        );
    assert!(summary(&emu, &zone).contains(&"x.example.com. TXT 60 \"new\"".to_string()));
    emu.stop().await;
}

#[tokio::test]
async fn cname_rules_both_ways_and_at_the_apex() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    assert_eq!(
        c.change(
            &zone,
            &[
                change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"]),
                change("CREATE", "c.example.com", "CNAME", 60, &["t.example.net"]),
            ],
        )
        .await
        .status,
        200
    );
    c.change(&zone, &[change("CREATE", "a.example.com", "CNAME", 60, &["t.example.net"])])
        .await
        .assert_error(
            400,
            "InvalidChangeBatch",
            "[RRSet of type CNAME with DNS name a.example.com. is not permitted as it conflicts with other records with the same DNS name in zone example.com.]",
        );
    c.change(&zone, &[change("UPSERT", "c.example.com", "TXT", 60, &["\"x\""])])
        .await
        .assert_error(
            400,
            "InvalidChangeBatch",
            "[RRSet of type TXT with DNS name c.example.com. is not permitted because a conflicting RRSet of type  CNAME with the same DNS name already exists in zone example.com.]",
        );
    c.change(&zone, &[change("CREATE", "example.com", "CNAME", 60, &["t.example.net"])])
        .await
        .assert_error(
            400,
            "InvalidChangeBatch",
            "[RRSet of type CNAME with DNS name example.com. is not permitted at apex in zone example.com.]",
        );
    emu.stop().await;
}

#[tokio::test]
async fn values_names_and_the_apex_records_are_checked() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let cases: Vec<(String, String)> = vec![
        (
            change("CREATE", "v6.example.com", "AAAA", 60, &["192.0.2.1"]),
            "Invalid Resource Record: 'FATAL problem: AAAARRDATAIllegalIPv6Address (Value is not a valid IPv6 address) encountered with '192.0.2.1''".into(),
        ),
        (
            change("CREATE", "t.example.com", "TXT", 60, &["no quotes"]),
            "Invalid Resource Record: 'FATAL problem: InvalidCharacterString (Value should be enclosed in quotation marks) encountered with 'no quotes''".into(),
        ),
        (
            change("CREATE", "long.example.com", "TXT", 60, &[&format!("\"{}\"", "k".repeat(256))]),
            format!("Invalid Resource Record: 'FATAL problem: CharacterStringTooLong (Value is too long) encountered with '\"{}\"''", "k".repeat(256)),
        ),
        (
            change("CREATE", "mx.example.com", "MX", 60, &["mail.example.com"]),
            "Invalid Resource Record: 'FATAL problem: MXRRDATANotTwoFields (MX record doesn't have 2 fields) encountered with 'mail.example.com''".into(),
        ),
        (
            change("CREATE", ".sub.example.com", "A", 60, &["192.0.2.1"]),
            "FATAL problem: DomainLabelEmpty (Domain label is empty) encountered with '.sub.example.com'".into(),
        ),
    ];
    for (ch, msg) in &cases {
        c.change(&zone, std::slice::from_ref(ch))
            .await
            .assert_error(400, "InvalidChangeBatch", &format!("[{msg}]"));
    }
    // All of them in one batch: one message, every failure.
    let all: Vec<String> = cases.iter().map(|(c, _)| c.clone()).collect();
    let joined: Vec<&str> = cases.iter().map(|(_, m)| m.as_str()).collect();
    c.change(&zone, &all).await.assert_error(
        400,
        "InvalidChangeBatch",
        &format!("[{}]", joined.join(", ")),
    );
    // Good shapes pass.
    let r = c
        .change(
            &zone,
            &[
                change(
                    "CREATE",
                    "mx.example.com",
                    "MX",
                    60,
                    &["10 mail.example.com."],
                ),
                change(
                    "CREATE",
                    "_sip._tcp.example.com",
                    "SRV",
                    60,
                    &["1 10 5060 sip.example.com."],
                ),
                change(
                    "CREATE",
                    "example.com",
                    "CAA",
                    60,
                    &["0 issue \"letsencrypt.org\""],
                ),
                change(
                    "CREATE",
                    "t.example.com",
                    "TXT",
                    60,
                    &[&format!("\"{}\" \"{}\"", "a".repeat(255), "b".repeat(10))],
                ),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // The apex SOA and NS cannot be deleted.
    let sets = emu.rrsets(&zone);
    let ns = sets.iter().find(|s| s.rtype == "NS").unwrap();
    let values: Vec<&str> = ns.values.iter().map(String::as_str).collect();
    c.change(
        &zone,
        &[change("DELETE", "example.com", "NS", 172_800, &values)],
    )
    .await
    .assert_error(
        400,
        "InvalidChangeBatch",
        "[A HostedZone must contain at least one NS record for the zone itself.]",
    );
    let soa = sets.iter().find(|s| s.rtype == "SOA").unwrap();
    c.change(
        &zone,
        &[change(
            "DELETE",
            "example.com",
            "SOA",
            900,
            &[&soa.values[0]],
        )],
    )
    .await
    .assert_error(
        400,
        "InvalidChangeBatch",
        "[A HostedZone must contain exactly one SOA record.]",
    );
    // UPSERT of the SOA is allowed.
    let r = c
        .change(
            &zone,
            &[change(
                "UPSERT",
                "example.com",
                "SOA",
                60,
                &[&soa.values[0]],
            )],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    emu.stop().await;
}

#[tokio::test]
async fn routing_fields_and_set_identifiers() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let w = |id: &str, weight: u32, v: &str| {
        change_with(
            "CREATE",
            "w.example.com",
            "A",
            &format!("<SetIdentifier>{id}</SetIdentifier><Weight>{weight}</Weight>"),
            60,
            &[v],
        )
    };
    assert_eq!(
        c.change(
            &zone,
            &[w("one", 10, "192.0.2.1"), w("two", 20, "192.0.2.2")]
        )
        .await
        .status,
        200
    );
    c.change(&zone, &[w("one", 10, "192.0.2.1")]).await.assert_error(
        400,
        "InvalidChangeBatch",
        "[Tried to create resource record set [name='w.example.com.', type='A', set-identifier='one'] but it already exists]",
    );
    // DELETE must match the weight too.
    let del = w("two", 99, "192.0.2.2").replace("CREATE", "DELETE");
    c.change(&zone, &[del]).await.assert_error(
        400,
        "InvalidChangeBatch",
        "[Tried to delete resource record set [name='w.example.com.', type='A', set-identifier='two'] but the values provided do not match the current values]",
    );
    // Missing data is InvalidInput, not a batch error.
    let missing = "<Change><Action>DELETE</Action><ResourceRecordSet><Name>portal.example.com</Name><Type>A</Type></ResourceRecordSet></Change>";
    c.change(&zone, &[missing.to_string()]).await.assert_error(
        400,
        "InvalidInput",
        "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found none in Change with [Action=DELETE, Name=portal.example.com, Type=A, SetIdentifier=null]",
    );
    // An alias into this zone needs its target.
    let alias = |target: &str| {
        format!(
            "<Change><Action>CREATE</Action><ResourceRecordSet><Name>al.example.com</Name><Type>A</Type>\
             <AliasTarget><HostedZoneId>{zone}</HostedZoneId><DNSName>{target}</DNSName><EvaluateTargetHealth>false</EvaluateTargetHealth></AliasTarget>\
             </ResourceRecordSet></Change>"
        )
    };
    c.change(&zone, &[alias("nothing.example.com")]).await.assert_error(
        400,
        "InvalidChangeBatch",
        &format!("[Tried to create an alias that targets nothing.example.com., type A in zone {zone}, but that target was not found]"),
    );
    assert_eq!(c.change(&zone, &[alias("w.example.com")]).await.status, 200);
    let al = emu
        .rrsets(&zone)
        .into_iter()
        .find(|s| s.name == "al.example.com.")
        .unwrap();
    assert_eq!(al.alias.unwrap().dns_name, "w.example.com.");
    assert_eq!(al.ttl, None);
    emu.stop().await;
}

#[tokio::test]
async fn limits_count_upsert_twice() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let ips: Vec<String> = (0..501)
        .map(|i| format!("10.0.{}.{}", i / 256, i % 256))
        .collect();
    let refs: Vec<&str> = ips.iter().map(String::as_str).collect();
    // 500 values: 1000 records as an UPSERT, the most allowed.
    let r = c
        .change(
            &zone,
            &[change("UPSERT", "big.example.com", "A", 60, &refs[..500])],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    c.change(
        &zone,
        &[change("UPSERT", "big.example.com", "A", 60, &refs)],
    )
    .await
    .assert_error(
        400,
        "InvalidChangeBatch",
        "[Number of records limit of 1000 exceeded.]",
    );
    // As a CREATE, 501 values count 501.
    let r = c
        .change(
            &zone,
            &[change("CREATE", "big2.example.com", "A", 60, &refs)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // 32,000 characters of values: one TXT value of 16,001 characters as an UPSERT.
    let strings: Vec<String> = (0..62)
        .map(|_| format!("\"{}\"", "a".repeat(255)))
        .collect();
    let mut value = strings.join(" "); // 62 * 257 + 61 = 15,995 characters
    value.push_str(" \"abcd\""); // 16,002
    value.truncate(value.len() - 2);
    value.push('"'); // 16,001
    assert_eq!(value.len(), 16_001);
    let r = c
        .change(
            &zone,
            &[change("CREATE", "t.example.com", "TXT", 60, &[&value])],
        )
        .await;
    assert_eq!(r.status, 200, "a CREATE counts once: {}", r.body);
    let r = c
        .change(
            &zone,
            &[change("UPSERT", "t2.example.com", "TXT", 60, &[&value])],
        )
        .await;
    r.assert_error(
        400,
        "InvalidChangeBatch",
        "[Number of characters limit of 32000 exceeded.]",
    );
    emu.stop().await;
}

#[tokio::test]
async fn wildcards_are_stored_escaped() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let r = c
        .change(
            &zone,
            &[change("CREATE", "*.Example.com", "A", 60, &["192.0.2.1"])],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let l = c.get(&format!("/2013-04-01/hostedzone/{zone}/rrset")).await;
    assert!(
        l.all("Name").contains(&"\\052.example.com.".to_string()),
        "{}",
        l.body
    );
    c.change(&zone, &[change("CREATE", "*.example.com", "A", 60, &["192.0.2.1"])])
        .await
        .assert_error(
            400,
            "InvalidChangeBatch",
            "[Tried to create resource record set [name='\\052.example.com.', type='A'] but it already exists]",
        );
    // The escaped spelling names the same set.
    let r = c
        .change(
            &zone,
            &[change(
                "DELETE",
                "\\052.example.com.",
                "A",
                60,
                &["192.0.2.1"],
            )],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    emu.stop().await;
}

#[tokio::test]
async fn malformed_requests() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let path = format!("/2013-04-01/hostedzone/{zone}/rrset/");
    let r = c
        .send("POST", &path, "<ChangeBatch><Changes/></ChangeBatch>")
        .await;
    r.assert_error(
        400,
        "MalformedInput",
        "ChangeBatch is not valid, expected ChangeResourceRecordSetsRequest",
    );
    let r = c
        .send(
            "POST",
            &path,
            "<ChangeResourceRecordSetsRequest xmlns=\"x\"><oops>",
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "InvalidInput"),
        "{}",
        r.body
    );
    let r = c.send("POST", &path, &format!("<ChangeResourceRecordSetsRequest xmlns=\"{NS}\"><ChangeBatch><Changes><Change><Action>CREATE</Action>")).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "InvalidInput"),
        "{}",
        r.body
    );
    assert!(r.message().starts_with("Invalid XML ; "), "{}", r.message());
    let empty = batch(&[]);
    let r = c.send("POST", &path, &empty).await;
    assert_eq!(r.code(), "InvalidInput");
    let big = "x".repeat(1024 * 1024 + 1);
    let r = c.send("POST", &path, &big).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (413, "RequestEntityTooLarge")
    );
    // A Route 53 call the emulator does not reproduce is named (501), not a 404 a
    // client would read as "no such zone"; a path that is no call stays 404.
    let r = c.get("/2013-04-01/healthcheck").await;
    assert_eq!((r.status, r.code().as_str()), (501, "NotImplemented"));
    assert!(r.message().contains("ListHealthChecks"), "{}", r.message());
    let r = c.get("/2013-04-01/nothing-here").await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (404, "UnknownOperationException")
    );
    assert_eq!(emu.rrsets(&zone).len(), 2);
    emu.stop().await;
}
