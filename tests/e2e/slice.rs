//! Issue 2, "done when": the end-to-end slice tried as a new user would.
use crate::stack::{Stack, Tools, endpoints};
use dnsplane_e2e::{grpcurl, wait_for};
use std::time::Duration;

fn web() -> String {
    endpoints(
        "web",
        &[
            ("www.example.com", "A", &["192.0.2.10", "192.0.2.11"]),
            ("api.example.com", "AAAA", &["2001:db8::10"]),
            ("shop.example.com", "CNAME", &["shops.example.net"]),
            ("example.com", "MX", &["10 mail.example.com"]),
            ("example.com", "TXT", &["v=spf1 -all"]),
            (
                "_sip._tcp.example.com",
                "SRV",
                &["10 5 5060 sip.example.com"],
            ),
            ("example.com", "CAA", &["0 issue \"letsencrypt.org\""]),
        ],
    )
}

/// Records converge into the embedded provider, `dig` (UDP and TCP) shows them,
/// grpcurl lists the services, and a second plan is empty.
#[test]
fn converges_and_answers_dns_and_grpcurl() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::new(tools, &[("web.yaml", &web())], "report");
    s.start();
    s.wait_dns("www.example.com", "A", &["192.0.2.10", "192.0.2.11"]);
    s.wait_dns("api.example.com", "AAAA", &["2001:db8::10"]);
    s.wait_dns("shop.example.com", "CNAME", &["shops.example.net."]);
    s.wait_dns("example.com", "MX", &["10 mail.example.com."]);
    s.wait_dns("example.com", "TXT", &["\"v=spf1 -all\""]);
    s.wait_dns(
        "_sip._tcp.example.com",
        "SRV",
        &["10 5 5060 sip.example.com."],
    );
    s.wait_dns("example.com", "CAA", &["0 issue \"letsencrypt.org\""]);
    assert_eq!(
        s.dig_tcp("www.example.com", "A").len(),
        2,
        "TCP answers too"
    );
    // The ownership record travels with the record.
    let owner = s.dig("_dnsplane-a.www.example.com", "TXT");
    assert!(
        owner.iter().any(|v| v.contains("dnsplane/owner=e2e")),
        "{owner:?}"
    );

    let addr = format!("127.0.0.1:{}", s.planner_port);
    let (ok, out) = grpcurl(&s.tools.grpcurl, &[&addr, "list"]);
    assert!(ok && out.contains("dnsplane.v1.Planner"), "{out}");
    let (ok, out) = grpcurl(
        &s.tools.grpcurl,
        &[&addr, "describe", "dnsplane.v1.Planner"],
    );
    assert!(ok && out.contains("rpc ListRecordStates"), "{out}");

    let plan = wait_for(Duration::from_secs(10), || {
        let p = s.planner_call("Plan", "{}");
        let changes = p["zones"][0]["changes"].as_array().map_or(0, Vec::len);
        (changes == 0).then_some(p)
    });
    assert!(plan.is_some(), "a plan after convergence must be empty");
    let status = s.planner_call("GetStatus", "{}");
    assert_eq!(
        status["zones"][0]["recordsByState"]["converged"], 7,
        "{status}"
    );
    assert_eq!(status["level"], "healthy", "{status}");
    let applier = s.applier_call("GetStatus", "{}");
    assert!(
        applier["accounts"][0]["outcomes"]["APPLIED"]
            .as_str()
            .is_some_and(|n| n.parse::<u64>().unwrap_or(0) >= 7),
        "{applier}"
    );
}

/// Editing the YAML adds, changes and removes records without a restart; restarting
/// both services keeps the zone and needs no writes.
#[test]
fn edits_apply_live_and_restart_keeps_the_zone() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::new(
        tools,
        &[(
            "web.yaml",
            &endpoints("web", &[("www.example.com", "A", &["192.0.2.10"])]),
        )],
        "report",
    );
    s.start_until_www();

    s.write_desired(
        "web.yaml",
        &endpoints(
            "web",
            &[
                ("www.example.com", "A", &["192.0.2.20"]),
                ("new.example.com", "TXT", &["hello"]),
            ],
        ),
    );
    s.wait_dns("www.example.com", "A", &["192.0.2.20"]);
    s.wait_dns("new.example.com", "TXT", &["\"hello\""]);
    s.write_desired(
        "web.yaml",
        &endpoints("web", &[("www.example.com", "A", &["192.0.2.20"])]),
    );
    s.wait_dns("new.example.com", "TXT", &[]);
    assert!(
        s.dig("_dnsplane-txt.new.example.com", "TXT").is_empty(),
        "ownership record removed too"
    );
    // A new file adds records; deleting the file removes them.
    s.write_desired(
        "extra.yaml",
        &endpoints("extra", &[("extra.example.com", "AAAA", &["2001:db8::99"])]),
    );
    s.wait_dns("extra.example.com", "AAAA", &["2001:db8::99"]);
    s.remove_desired("extra.yaml");
    s.wait_dns("extra.example.com", "AAAA", &[]);

    // Restart both: the zone is kept (the embedded provider persists it).
    s.planner.take().expect("planner").terminate();
    let status = s.applier.take().expect("applier").terminate();
    assert!(
        status.is_some_and(|st| st.success()),
        "applier exits cleanly on SIGTERM"
    );
    s.start_applier();
    assert_eq!(
        s.dig("www.example.com", "A"),
        ["192.0.2.20"],
        "zone kept across restart"
    );
    s.start_planner();
    let p = s.planner_call("Plan", "{}");
    assert!(
        p["zones"][0]["changes"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "no writes after restart: {p}"
    );
}

/// An existing record with another value and no owner is left alone and listed as a
/// CONFLICT with the observed value; the other records converge.
#[test]
fn unowned_existing_record_is_reported_not_touched() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::one_conflict(tools);
    s.start_until_www();
    let states = wait_for(Duration::from_secs(20), || {
        let r = s.planner_call("ListRecordStates", "{\"zone\":\"example.com.\"}");
        let recs = r["records"].as_array()?.clone();
        recs.iter()
            .any(|x| {
                x["key"]["name"] == "legacy.example.com."
                    && x["state"] == "RECORD_STATE_KIND_CONFLICT"
            })
            .then_some(recs)
    })
    .unwrap_or_else(|| panic!("legacy never listed as conflict; logs:\n{}", s.logs()));
    let legacy = states
        .iter()
        .find(|x| x["key"]["name"] == "legacy.example.com.")
        .expect("legacy");
    assert_eq!(
        legacy["conflictReason"], "CONFLICT_REASON_EXISTS",
        "{legacy}"
    );
    assert_eq!(legacy["observed"]["values"][0], "198.51.100.7", "{legacy}");
    assert!(
        legacy["reason"]
            .as_str()
            .is_some_and(|r| r.contains("nobody owns")),
        "{legacy}"
    );
    assert_eq!(
        states.len(),
        1,
        "only the conflict is non-converged: {states:?}"
    );
    assert_eq!(
        s.dig("legacy.example.com", "A"),
        ["198.51.100.7"],
        "left alone"
    );
}

/// Bad input: a malformed YAML file, an invalid IP, a CNAME beside other data and an
/// unknown zone are each reported with file and line; everything else converges. (A
/// name in no zone refuses its whole object, so it sits in an object of its own.)
#[test]
fn bad_input_is_reported_and_the_rest_converges() {
    let Some(tools) = Tools::find() else { return };
    let good = endpoints("good", &[("ok.example.com", "A", &["192.0.2.1"])]);
    let bad = endpoints(
        "bad",
        &[
            ("badip.example.com", "A", &["300.1.1.1"]),
            ("clash.example.com", "CNAME", &["target.example.net"]),
            ("clash.example.com", "TXT", &["beside"]),
            ("fine.example.com", "A", &["192.0.2.4"]),
        ],
    );
    let outside = endpoints("outside", &[("elsewhere.example.org", "A", &["192.0.2.3"])]);
    let broken =
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nspec:\n  endpoints: [\n";
    let mut s = Stack::new(
        tools,
        &[
            ("good.yaml", &good),
            ("bad.yaml", &bad),
            ("outside.yaml", &outside),
            ("broken.yaml", broken),
        ],
        "report",
    );
    s.start();
    s.wait_dns("ok.example.com", "A", &["192.0.2.1"]);
    s.wait_dns("fine.example.com", "A", &["192.0.2.4"]);
    s.wait_dns("clash.example.com", "TXT", &["\"beside\""]);
    let status = s.planner_call("GetStatus", "{}");
    let errors: Vec<String> = status["sourceErrors"]
        .as_array()
        .expect("source errors")
        .iter()
        .map(|e| {
            format!(
                "{} {} {}",
                e["location"].as_str().unwrap_or(""),
                e["record"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    let find = |needle: &[&str]| {
        errors
            .iter()
            .find(|e| needle.iter().all(|n| e.contains(n)))
            .unwrap_or_else(|| panic!("no source error with {needle:?} in {errors:#?}"))
            .clone()
    };
    find(&["broken.yaml:"]);
    find(&["bad.yaml:", "300.1.1.1"]);
    find(&["bad.yaml:", "clash.example.com", "CNAME"]);
    find(&[
        "outside.yaml:",
        "elsewhere.example.org",
        "zone",
        "did you mean example.com?",
    ]);
    assert_eq!(status["level"], "degraded", "{status}");
    assert!(s.dig("badip.example.com", "A").is_empty());
    assert!(s.dig("clash.example.com", "CNAME").is_empty());

    // The push API refuses a bad push whole, naming the field.
    let addr = format!("127.0.0.1:{}", s.planner_port);
    let (ok, out) = grpcurl(
        &s.tools.grpcurl,
        &[
            "-d",
            r#"{"source":"ci","records":[{"name":"p.example.com","type":"A","values":["192.0.2.9"]},{"name":"q.example.com","type":"A","values":["1.2.3.999"]}]}"#,
            &addr,
            "dnsplane.v1.Planner/PutDesired",
        ],
    );
    assert!(
        !ok && out.contains("InvalidArgument") && out.contains("records[1].values[0]"),
        "{out}"
    );
    let pushed = s.planner_call(
        "PutDesired",
        r#"{"source":"ci","records":[{"name":"p.example.com","type":"A","values":["192.0.2.9"]}]}"#,
    );
    assert_eq!(pushed["accepted"], 1);
    s.wait_dns("p.example.com", "A", &["192.0.2.9"]);
}
