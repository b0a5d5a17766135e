//! ListResourceRecordSets: AWS's order, paging, maxitems, start positions.
use crate::support::{change, change_with, enc, opts, start};

/// AWS's documented order, computed here independently: the name with its labels
/// reversed and the trailing dot kept, compared as ASCII; then type; then set id.
fn aws_order(sets: &mut [(String, String, Option<String>)]) {
    sets.sort_by(|a, b| {
        let rev = |n: &str| {
            let mut l: Vec<&str> = n.trim_end_matches('.').split('.').collect();
            l.reverse();
            format!("{}.", l.join("."))
        };
        (rev(&a.0), &a.1, &a.2).cmp(&(rev(&b.0), &b.1, &b.2))
    });
}

#[tokio::test]
async fn paging_through_700_sets_returns_each_once_in_aws_order() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let mut expected = vec![
        ("example.com.".to_string(), "NS".to_string(), None),
        ("example.com.".to_string(), "SOA".to_string(), None),
    ];
    let mut changes = Vec::new();
    for i in 0..234 {
        // Names whose order differs between plain and labels-reversed sorting, and
        // characters that sort before '.'.
        let names = [
            format!("h{i:03}.example.com"),
            format!("a-{i}.b.example.com"),
            format!("x.h{i:03}.example.com"),
        ];
        for n in names {
            changes.push(change("CREATE", &n, "A", 60, &["192.0.2.1"]));
            expected.push((format!("{n}."), "A".into(), None));
        }
    }
    // A name with three types, a wildcard, and weighted sets (NextRecordIdentifier).
    for t in [("TXT", "\"t\""), ("MX", "10 mx.example.com.")] {
        changes.push(change("CREATE", "h000.example.com", t.0, 60, &[t.1]));
        expected.push(("h000.example.com.".into(), t.0.into(), None));
    }
    changes.push(change("CREATE", "*.example.com", "A", 60, &["192.0.2.1"]));
    expected.push(("\\052.example.com.".into(), "A".into(), None));
    for id in ["w1", "w2", "w3", "w4"] {
        changes.push(change_with(
            "CREATE",
            "weighted.example.com",
            "A",
            &format!("<SetIdentifier>{id}</SetIdentifier><Weight>1</Weight>"),
            60,
            &["192.0.2.1"],
        ));
        expected.push((
            "weighted.example.com.".into(),
            "A".into(),
            Some(id.to_string()),
        ));
    }
    for chunk in changes.chunks(200) {
        let r = c.change(&zone, chunk).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert!(expected.len() >= 700, "{}", expected.len());
    aws_order(&mut expected);
    let (listed, pages) = c.list_all(&zone, 7).await;
    assert_eq!(pages, expected.len().div_ceil(7));
    assert_eq!(listed, expected);
    // The emulator's own view agrees.
    let view: Vec<(String, String, Option<String>)> = emu
        .rrsets(&zone)
        .into_iter()
        .map(|r| (r.name, r.rtype, r.set_identifier))
        .collect();
    assert_eq!(view, expected);
    // Default page 100, at most 300, MaxItems echoed.
    let r = c.get(&format!("/2013-04-01/hostedzone/{zone}/rrset")).await;
    assert_eq!(r.all("ResourceRecordSet").len(), 100);
    assert_eq!(r.text("MaxItems").unwrap(), "100");
    let r = c
        .get(&format!(
            "/2013-04-01/hostedzone/{zone}/rrset?maxitems=1000"
        ))
        .await;
    assert_eq!(r.all("ResourceRecordSet").len(), 300);
    assert_eq!(r.text("IsTruncated").unwrap(), "true");
    emu.stop().await;
}

#[tokio::test]
async fn start_positions_and_inputs() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let r = c
        .change(
            &zone,
            &[
                change("CREATE", "WWW.Example.COM", "A", 60, &["192.0.2.1"]),
                change(
                    "CREATE",
                    "www.example.com",
                    "TXT",
                    60,
                    &["\"keep \\\"quotes\\\"\""],
                ),
                change("CREATE", "zzz.example.com", "A", 60, &["192.0.2.1"]),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // From a name: sets whose name is >= it.
    let r = c
        .get(&format!(
            "/2013-04-01/hostedzone/{zone}/rrset?name=www.example.com"
        ))
        .await;
    assert_eq!(
        r.all("Name"),
        vec!["www.example.com.", "www.example.com.", "zzz.example.com."]
    );
    assert_eq!(r.all("Value")[1], "\"keep \\\"quotes\\\"\"");
    // From a name and type.
    let r = c
        .get(&format!(
            "/2013-04-01/hostedzone/{zone}/rrset?name=WWW.example.com.&type=TXT&maxitems=1"
        ))
        .await;
    assert_eq!(r.all("Type"), vec!["TXT"]);
    assert_eq!(r.text("NextRecordName").unwrap(), "zzz.example.com.");
    assert_eq!(r.text("NextRecordType").unwrap(), "A");
    assert!(r.text("NextRecordIdentifier").is_none());
    // A name that does not exist starts at the next one.
    let r = c
        .get(&format!(
            "/2013-04-01/hostedzone/{zone}/rrset?name={}",
            enc("xxx.example.com")
        ))
        .await;
    assert_eq!(r.all("Name"), vec!["zzz.example.com."]);
    // A type without a name.
    let r = c
        .get(&format!("/2013-04-01/hostedzone/{zone}/rrset?type=A"))
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidInput"));
    let r = c
        .get(&format!(
            "/2013-04-01/hostedzone/{zone}/rrset?maxitems=zero"
        ))
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidInput"));
    emu.stop().await;
}
