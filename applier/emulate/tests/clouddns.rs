//! The Cloud DNS emulator over real HTTP on 127.0.0.1: every rule of INTEROP.md §2.1
//! with Google's status codes, reasons and texts; atomicity; paging; pending → done;
//! tokens and projects; the per-project quota; each fault; the control API.
use dnsplane_emulate::clouddns::{
    CloudDnsEmulator, CloudDnsOptions, DEFAULT_PROJECT, DEFAULT_TOKEN, Limits, Token,
};
use dnsplane_emulate::{FaultAction, FaultRule};
use serde_json::{Value, json};
use std::time::Duration;

struct Api {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// An answer: status and body (JSON when it parses, else `{"text": …}`).
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Value,
    content_type: String,
}

impl Answer {
    fn reasons(&self) -> Vec<String> {
        self.body["error"]["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e["reason"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn messages(&self) -> Vec<String> {
        self.body["error"]["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e["message"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
}

impl Api {
    fn new(emu: &CloudDnsEmulator) -> Api {
        Api {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap(),
            base: emu.endpoint(),
            token: Some(DEFAULT_TOKEN.to_string()),
        }
    }

    fn with_token(&self, token: Option<&str>) -> Api {
        Api {
            http: self.http.clone(),
            base: self.base.clone(),
            token: token.map(str::to_string),
        }
    }

    async fn try_send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, reqwest::Error> {
        let url = if path.starts_with("/_emulator") {
            format!("{}{path}", self.base)
        } else {
            format!("{}/dns/v1/projects/{path}", self.base)
        };
        let mut req = self.http.request(method, url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = resp.text().await?;
        let body = serde_json::from_str(&text).unwrap_or_else(|_| json!({ "text": text }));
        Ok(Answer {
            status,
            body,
            content_type,
        })
    }

    async fn get(&self, path: &str) -> Answer {
        self.try_send(reqwest::Method::GET, path, None)
            .await
            .unwrap()
    }

    async fn post(&self, path: &str, body: Value) -> Answer {
        self.try_send(reqwest::Method::POST, path, Some(body))
            .await
            .unwrap()
    }

    async fn change(&self, zone: &str, body: Value) -> Answer {
        self.post(
            &format!("{DEFAULT_PROJECT}/managedZones/{zone}/changes"),
            body,
        )
        .await
    }

    async fn rrsets(&self, zone: &str, query: &str) -> Answer {
        self.get(&format!(
            "{DEFAULT_PROJECT}/managedZones/{zone}/rrsets{query}"
        ))
        .await
    }
}

fn rrs(name: &str, rtype: &str, ttl: u32, rrdatas: &[&str]) -> Value {
    json!({"kind": "dns#resourceRecordSet", "name": name, "type": rtype, "ttl": ttl, "rrdatas": rrdatas})
}

async fn start(opts: CloudDnsOptions) -> (CloudDnsEmulator, Api) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let emu = CloudDnsEmulator::start(listener, opts).await.unwrap();
    emu.create_zone("example-com", "example.com.");
    let api = Api::new(&emu);
    (emu, api)
}

/// (name, type, ttl, rrdatas) of the zone, for comparing states.
fn state(emu: &CloudDnsEmulator) -> Vec<(String, String, u32, Vec<String>)> {
    emu.rrsets("example-com")
        .into_iter()
        .map(|r| (r.name, r.rtype, r.ttl, r.rrdatas))
        .collect()
}

#[tokio::test]
async fn tokens_and_projects_are_checked_in_googles_words() {
    let opts = CloudDnsOptions {
        tokens: vec![
            Token::new(DEFAULT_TOKEN),
            Token::scoped("elsewhere", &["other"]),
        ],
        ..CloudDnsOptions::default()
    };
    let (emu, api) = start(opts).await;
    let path = format!("{DEFAULT_PROJECT}/managedZones");
    let none = api.with_token(None).get(&path).await;
    assert_eq!(
        (none.status, none.reasons()),
        (401, vec!["required".to_string()])
    );
    assert!(
        none.message()
            .starts_with("Request is missing required authentication credential."),
        "{none:?}"
    );
    assert_eq!(none.body["error"]["errors"][0]["location"], "Authorization");
    let bad = api.with_token(Some("ya29.nope")).get(&path).await;
    assert_eq!(
        (bad.status, bad.reasons()),
        (401, vec!["authError".to_string()])
    );
    assert_eq!(bad.messages(), vec!["Invalid Credentials".to_string()]);
    let other = api.with_token(Some("elsewhere")).get(&path).await;
    assert_eq!(
        (other.status, other.reasons()),
        (403, vec!["forbidden".to_string()])
    );
    assert_eq!(
        api.with_token(Some("elsewhere"))
            .get("other/managedZones")
            .await
            .status,
        200
    );
    assert_eq!(api.get(&path).await.status, 200);
    assert_eq!(emu.stats().auth_failures, 3);
    // Without verification anything passes.
    let (_open, open_api) = start(CloudDnsOptions {
        verify_tokens: false,
        ..CloudDnsOptions::default()
    })
    .await;
    assert_eq!(open_api.with_token(None).get(&path).await.status, 200);
}

#[tokio::test]
async fn managed_zones_are_created_listed_filtered_and_paged() {
    let (emu, api) = start(CloudDnsOptions::default()).await;
    let path = format!("{DEFAULT_PROJECT}/managedZones");
    let made = api
        .post(&path, json!({"name": "second-zone", "dnsName": "second.test.", "description": "d", "visibility": "public"}))
        .await;
    assert_eq!(made.status, 200, "{made:?}");
    assert_eq!(
        (made.body["kind"].as_str(), made.body["dnsName"].as_str()),
        (Some("dns#managedZone"), Some("second.test."))
    );
    assert_eq!(made.body["nameServers"].as_array().unwrap().len(), 4);
    // The apex SOA and NS come with it, as change 0.
    let sets = api.rrsets("second-zone", "").await;
    let types: Vec<&str> = sets.body["rrsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["NS", "SOA"]);
    let changes = api.get(&format!("{path}/second-zone/changes")).await;
    assert_eq!(changes.body["changes"][0]["id"], "0");
    let dup = api
        .post(&path, json!({"name": "second-zone", "dnsName": "x.test."}))
        .await;
    assert_eq!(
        (dup.status, dup.reasons()),
        (409, vec!["alreadyExists".to_string()])
    );
    assert_eq!(
        dup.message(),
        "The resource 'entity.managedZone' named 'second-zone' already exists"
    );
    let bad = api
        .post(&path, json!({"name": "Bad_Name", "dnsName": "x.test."}))
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.message(),
        "Invalid value for 'entity.managedZone.name': 'Bad_Name'"
    );
    api.post(
        &path,
        json!({"name": "third-zone", "dnsName": "third.test."}),
    )
    .await;
    // The id works in place of the name.
    let id = made.body["id"].as_str().unwrap();
    assert_eq!(
        api.get(&format!("{path}/{id}")).await.body["name"],
        "second-zone"
    );
    let missing = api.get(&format!("{path}/nope")).await;
    assert_eq!(
        (missing.status, missing.reasons()),
        (404, vec!["notFound".to_string()])
    );
    assert_eq!(
        missing.message(),
        "The 'parameters.managedZone' resource named 'nope' does not exist."
    );
    let filtered = api.get(&format!("{path}?dnsName=second.test.")).await;
    let names: Vec<&str> = filtered.body["managedZones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["second-zone"]);
    // maxResults=1: three pages.
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = api.get(&format!("{path}?maxResults=1{token}")).await;
        let zones = page.body["managedZones"].as_array().unwrap();
        assert_eq!(zones.len(), 1);
        seen.push(zones[0]["name"].as_str().unwrap().to_string());
        match page.body["nextPageToken"].as_str() {
            Some(t) => token = format!("&pageToken={t}"),
            None => break,
        }
    }
    assert_eq!(seen, ["example-com", "second-zone", "third-zone"]);
    assert_eq!(emu.stats().calls("dns.managedZones.list"), 4);
}

#[tokio::test]
async fn a_change_answers_pending_then_done_and_the_update_idiom_works() {
    let (emu, api) = start(CloudDnsOptions::default()).await;
    let made = api
        .change("example-com", json!({"kind": "dns#change", "additions": [rrs("www.example.com.", "A", 300, &["192.0.2.1"])]}))
        .await;
    assert_eq!(made.status, 200, "{made:?}");
    assert_eq!(made.body["id"], "1");
    assert_eq!(made.body["status"], "pending");
    assert_eq!(made.body["isServing"], true);
    let started = made.body["startTime"].as_str().unwrap();
    assert!(
        started.len() == 24 && started.ends_with('Z') && started.as_bytes()[10] == b'T',
        "{started}"
    );
    let get = |id: &'static str| {
        let api = &api;
        async move {
            api.get(&format!(
                "{DEFAULT_PROJECT}/managedZones/example-com/changes/{id}"
            ))
            .await
        }
    };
    assert_eq!(
        get("1").await.body["status"],
        "pending",
        "one poll pending by default"
    );
    assert_eq!(get("1").await.body["status"], "done");
    assert_eq!(get("9").await.status, 404);
    // Delete the exact old set and add the new one in one change.
    let upd = api
        .change(
            "example-com",
            json!({"deletions": [rrs("www.example.com.", "A", 300, &["192.0.2.1"])],
                   "additions": [rrs("www.example.com.", "A", 60, &["192.0.2.2", "192.0.2.3"])]}),
        )
        .await;
    assert_eq!((upd.status, upd.body["id"].as_str()), (200, Some("2")));
    assert!(state(&emu).contains(&(
        "www.example.com.".into(),
        "A".into(),
        60,
        vec!["192.0.2.2".into(), "192.0.2.3".into()]
    )));
    // changes.list: the change counter.
    let latest = api
        .get(&format!("{DEFAULT_PROJECT}/managedZones/example-com/changes?sortBy=changeSequence&sortOrder=descending&maxResults=1"))
        .await;
    let list = latest.body["changes"].as_array().unwrap();
    assert_eq!((list.len(), list[0]["id"].as_str()), (1, Some("2")));
    assert!(latest.body["nextPageToken"].is_string());
    let asc = api
        .get(&format!(
            "{DEFAULT_PROJECT}/managedZones/example-com/changes"
        ))
        .await;
    let ids: Vec<&str> = asc.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["0", "1", "2"]);
    let bad = api
        .get(&format!(
            "{DEFAULT_PROJECT}/managedZones/example-com/changes?sortBy=startTime"
        ))
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(emu.last_change("example-com"), Some(2));

    // done_after: by time instead of polls.
    let (_emu2, api2) = start(CloudDnsOptions {
        done_after: Some(Duration::from_millis(200)),
        ..CloudDnsOptions::default()
    })
    .await;
    api2.change(
        "example-com",
        json!({"additions": [rrs("a.example.com.", "A", 1, &["192.0.2.1"])]}),
    )
    .await;
    let path = format!("{DEFAULT_PROJECT}/managedZones/example-com/changes/1");
    assert_eq!(api2.get(&path).await.body["status"], "pending");
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(api2.get(&path).await.body["status"], "done");
}

#[tokio::test]
async fn a_refused_change_reports_every_failing_entry_and_commits_nothing() {
    let (emu, api) = start(CloudDnsOptions::default()).await;
    api.change(
        "example-com",
        json!({"additions": [rrs("x.example.com.", "A", 300, &["192.0.2.1"]), rrs("y.example.com.", "TXT", 300, &["\"y\""])]}),
    )
    .await;
    let before = state(&emu);
    let e = api
        .change(
            "example-com",
            json!({"deletions": [rrs("x.example.com.", "A", 60, &["192.0.2.1"]), rrs("gone.example.com.", "TXT", 300, &["\"g\""])],
                   "additions": [rrs("fresh.example.com.", "A", 300, &["192.0.2.9"]), rrs("y.example.com.", "TXT", 300, &["\"z\""])]}),
        )
        .await;
    assert_eq!(e.status, 412, "the first failing entry's status: {e:?}");
    assert_eq!(
        e.reasons(),
        ["conditionNotMet", "notFound", "alreadyExists"]
    );
    assert_eq!(
        e.messages(),
        [
            "Precondition not met for 'entity.change.deletions[0]'",
            "The 'entity.change.deletions[1]' resource named 'gone.example.com. (TXT)' does not exist.",
            "The resource 'entity.change.additions[1]' named 'y.example.com. (TXT)' already exists",
        ]
    );
    assert_eq!(e.body["error"]["errors"][0]["domain"], "global");
    assert_eq!(state(&emu), before, "all or nothing");
    assert_eq!(emu.last_change("example-com"), Some(1));

    // A stale TTL alone is stale.
    let stale = api
        .change(
            "example-com",
            json!({"deletions": [rrs("x.example.com.", "A", 301, &["192.0.2.1"])]}),
        )
        .await;
    assert_eq!(
        (stale.status, stale.reasons()),
        (412, vec!["conditionNotMet".to_string()])
    );
    // rrdatas are compared as a set.
    let two = api
        .change(
            "example-com",
            json!({"additions": [rrs("two.example.com.", "A", 300, &["192.0.2.1", "192.0.2.2"])]}),
        )
        .await;
    assert_eq!(two.status, 200);
    let reordered = api
        .change(
            "example-com",
            json!({"deletions": [rrs("two.example.com.", "A", 300, &["192.0.2.2", "192.0.2.1"])]}),
        )
        .await;
    assert_eq!(reordered.status, 200);

    // A CNAME beside other data.
    let cname = api
        .change(
            "example-com",
            json!({"additions": [rrs("x.example.com.", "CNAME", 300, &["target.example.net."])]}),
        )
        .await;
    assert_eq!(
        (cname.status, cname.reasons()),
        (400, vec!["cnameResourceRecordSetConflict".to_string()])
    );
    assert_eq!(
        cname.message(),
        "The resource record set 'entity.change.additions[0]' is invalid because the DNS name may have either one CNAME resource record set or resource record sets of other types, but not both."
    );
    // …unless the same change deletes the other data.
    let swap = api
        .change(
            "example-com",
            json!({"deletions": [rrs("x.example.com.", "A", 300, &["192.0.2.1"])],
                   "additions": [rrs("x.example.com.", "CNAME", 300, &["target.example.net."])]}),
        )
        .await;
    assert_eq!(swap.status, 200, "{swap:?}");

    // Bad names and values: every one, with its field path.
    let bad = api
        .change(
            "example-com",
            json!({"additions": [rrs("no-dot.example.com", "A", 300, &["192.0.2.1"]),
                                 rrs("ok.example.com.", "A", 300, &["192.0.2.1", "1.2.3"]),
                                 rrs("ok2.example.com.", "AAAA", 300, &["192.0.2.1"]),
                                 rrs("out.example.org.", "A", 300, &["192.0.2.1"]),
                                 rrs("t.example.com.", "BOGUS", 300, &["x"])]}),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.messages(),
        [
            "Invalid value for 'entity.change.additions[0].name': 'no-dot.example.com'",
            "Invalid value for 'entity.change.additions[1].rrdata[1]': '1.2.3'",
            "Invalid value for 'entity.change.additions[2].rrdata[0]': '192.0.2.1'",
            "Invalid value for 'entity.change.additions[3].name': 'out.example.org.'",
            "Invalid value for 'entity.change.additions[4].type': 'BOGUS'",
        ]
    );
    assert!(bad.reasons().iter().all(|r| r == "invalid"));
    let empty = api.change("example-com", json!({})).await;
    assert_eq!(
        (empty.status, empty.reasons()),
        (400, vec!["required".to_string()])
    );
    let unknown_zone = api
        .change(
            "nope",
            json!({"additions": [rrs("a.example.com.", "A", 1, &["192.0.2.1"])]}),
        )
        .await;
    assert_eq!(unknown_zone.status, 404);
}

#[tokio::test]
async fn googles_limits_are_quota_errors() {
    let (emu, api) = start(CloudDnsOptions {
        limits: Limits {
            rrsets_per_zone: 6,
            ..Limits::default()
        },
        ..CloudDnsOptions::default()
    })
    .await;
    let many = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| rrs(&format!("n{i}.example.com."), "A", 300, &["192.0.2.1"]))
            .collect()
    };
    let quota = |a: &Answer| (a.status, a.reasons(), a.message().to_string());
    let q = |what: &str| {
        (
            403,
            vec!["quotaExceeded".to_string()],
            format!("The change would exceed quota for {what}."),
        )
    };
    assert_eq!(
        quota(
            &api.change("example-com", json!({"additions": many(1001)}))
                .await
        ),
        q("additions per change")
    );
    assert_eq!(
        quota(
            &api.change("example-com", json!({"deletions": many(1001)}))
                .await
        ),
        q("deletions per change")
    );
    let ips: Vec<String> = (0..101).map(|i| format!("10.0.0.{}", i + 1)).collect();
    let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
    assert_eq!(
        quota(
            &api.change(
                "example-com",
                json!({"additions": [rrs("big.example.com.", "A", 300, &ips)]})
            )
            .await
        ),
        q("resource records per rrset")
    );
    let chunk = format!("\"{}\"", "x".repeat(250));
    let texts: Vec<&str> = vec![chunk.as_str(); 100];
    let heavy: Vec<Value> = (0..5)
        .map(|i| rrs(&format!("h{i}.example.com."), "TXT", 300, &texts))
        .collect();
    assert_eq!(
        quota(&api.change("example-com", json!({"additions": heavy})).await),
        q("total rrdata size per change")
    );
    // SOA and NS are two of the zone's six.
    assert_eq!(
        api.change("example-com", json!({"additions": many(4)}))
            .await
            .status,
        200
    );
    assert_eq!(
        quota(
            &api.change(
                "example-com",
                json!({"additions": [rrs("x.example.com.", "A", 1, &["192.0.2.1"])]})
            )
            .await
        ),
        q("rrsets per zone")
    );
    assert_eq!(emu.rrsets("example-com").len(), 6);
    let project = api.get(DEFAULT_PROJECT).await;
    assert_eq!(project.body["quota"]["rrsetAdditionsPerChange"], 1000);
    assert_eq!(project.body["quota"]["totalRrdataSizePerChange"], 100_000);
}

#[tokio::test]
async fn rrsets_page_by_the_servers_size_and_filter_by_name_and_type() {
    let (_emu, api) = start(CloudDnsOptions {
        page_size: 3,
        ..CloudDnsOptions::default()
    })
    .await;
    let adds: Vec<Value> = (0..10)
        .map(|i| rrs(&format!("p{i}.example.com."), "A", 300, &["192.0.2.1"]))
        .collect();
    api.change("example-com", json!({"additions": adds})).await;
    api.change(
        "example-com",
        json!({"additions": [rrs("p3.example.com.", "TXT", 300, &["\"t\""])]}),
    )
    .await;
    let mut all = Vec::new();
    let mut pages = 0;
    let mut token = String::new();
    loop {
        let page = api
            .rrsets("example-com", &format!("?maxResults=100{token}"))
            .await;
        let sets = page.body["rrsets"].as_array().unwrap().clone();
        assert!(sets.len() <= 3, "the server's page size wins");
        pages += 1;
        all.extend(sets.into_iter().map(|s| {
            format!(
                "{} {}",
                s["name"].as_str().unwrap(),
                s["type"].as_str().unwrap()
            )
        }));
        match page.body["nextPageToken"].as_str() {
            Some(t) => token = format!("&pageToken={t}"),
            None => break,
        }
    }
    assert_eq!((all.len(), pages), (13, 5), "{all:?}");
    let mut sorted = all.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 13, "no set twice");
    let named = api.rrsets("example-com", "?name=p3.example.com.").await;
    assert_eq!(named.body["rrsets"].as_array().unwrap().len(), 2);
    let typed = api
        .rrsets("example-com", "?name=p3.example.com.&type=TXT")
        .await;
    assert_eq!(typed.body["rrsets"][0]["rrdatas"][0], "\"t\"");
    assert_eq!(api.rrsets("example-com", "?type=A").await.status, 400);
    assert_eq!(api.rrsets("example-com", "?pageToken=zz").await.status, 400);
    let one = api.rrsets("example-com", "?maxResults=1").await;
    assert_eq!(one.body["rrsets"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_quota_is_per_project_and_answers_429_or_503() {
    let (emu, api) = start(CloudDnsOptions {
        rate: 0.5,
        burst: 2,
        tokens: vec![Token::scoped(DEFAULT_TOKEN, &[DEFAULT_PROJECT, "other"])],
        ..CloudDnsOptions::default()
    })
    .await;
    let path = format!("{DEFAULT_PROJECT}/managedZones");
    assert_eq!(api.get(&path).await.status, 200);
    assert_eq!(api.get(&path).await.status, 200);
    let refused = api.get(&path).await;
    assert_eq!(
        (refused.status, refused.reasons()),
        (429, vec!["rateLimitExceeded".to_string()])
    );
    assert!(
        refused
            .message()
            .starts_with("Quota exceeded for quota metric 'Read requests'"),
        "{refused:?}"
    );
    assert_eq!(
        api.get("other/managedZones").await.status,
        200,
        "another project has its own"
    );
    assert_eq!(emu.stats().throttled, 1);
    let (_e, api503) = start(CloudDnsOptions {
        rate: 0.5,
        burst: 1,
        quota_status: 503,
        ..CloudDnsOptions::default()
    })
    .await;
    api503.get(&path).await;
    let r = api503.get(&path).await;
    assert_eq!(
        (r.status, r.reasons()),
        (503, vec!["rateLimitExceeded".to_string()])
    );
}

#[tokio::test]
async fn faults_answer_in_googles_words() {
    let (emu, api) = start(CloudDnsOptions::default()).await;
    let add = |label: &str| json!({"additions": [rrs(&format!("{label}.example.com."), "A", 300, &["192.0.2.1"])]});

    // Commit, then Google's front end's 502; the retry finds it there (409).
    emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("change")
            .times(1),
    );
    let r = api.change("example-com", add("amb")).await;
    assert_eq!(r.status, 502);
    assert!(r.content_type.starts_with("text/html"), "{r:?}");
    assert!(
        r.body["text"]
            .as_str()
            .unwrap()
            .contains("Please try again in 30 seconds.")
    );
    assert!(
        state(&emu).iter().any(|s| s.0 == "amb.example.com."),
        "committed"
    );
    let again = api.change("example-com", add("amb")).await;
    assert_eq!(
        (again.status, again.reasons()),
        (409, vec!["alreadyExists".to_string()])
    );

    // A timeout drops the connection, with or without committing first.
    for (label, commit) in [("to-commit", true), ("to-none", false)] {
        emu.add_fault(
            FaultRule::new(FaultAction::Timeout)
                .op("change")
                .delay(Duration::from_millis(100))
                .commit(commit)
                .times(1),
        );
        let e = api
            .try_send(
                reqwest::Method::POST,
                &format!("{DEFAULT_PROJECT}/managedZones/example-com/changes"),
                Some(add(label)),
            )
            .await;
        assert!(e.is_err(), "no answer: {e:?}");
        let present = state(&emu)
            .iter()
            .any(|s| s.0 == format!("{label}.example.com."));
        assert_eq!(present, commit, "{label}");
    }

    // Pending forever.
    emu.add_fault(
        FaultRule::new(FaultAction::PendingForever)
            .op("change")
            .times(1),
    );
    let p = api.change("example-com", add("pend")).await;
    let id = p.body["id"].as_str().unwrap().to_string();
    for _ in 0..4 {
        let g = api
            .get(&format!(
                "{DEFAULT_PROJECT}/managedZones/example-com/changes/{id}"
            ))
            .await;
        assert_eq!(g.body["status"], "pending");
    }

    // A throttling burst, with Retry-After when asked for.
    let mut t = FaultRule::new(FaultAction::Throttle).op("change").times(3);
    t.retry_after = Some(Duration::from_secs(2));
    emu.add_fault(t);
    for _ in 0..3 {
        let r = api.change("example-com", add("thr")).await;
        assert_eq!(
            (r.status, r.reasons()),
            (429, vec!["rateLimitExceeded".to_string()])
        );
    }
    assert_eq!(api.change("example-com", add("thr")).await.status, 200);

    // A 404 on a read just after a change (read-after-write lag), and any error.
    emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("list_rrsets")
            .status(404)
            .times(1),
    );
    let lag = api.rrsets("example-com", "").await;
    assert_eq!(
        (lag.status, lag.reasons()),
        (404, vec!["notFound".to_string()])
    );
    assert_eq!(
        lag.message(),
        "The 'parameters.managedZone' resource named 'example-com' does not exist."
    );
    assert_eq!(api.rrsets("example-com", "").await.status, 200);
    emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("zones")
            .status(503)
            .times(1),
    );
    let unavailable = api.get(&format!("{DEFAULT_PROJECT}/managedZones")).await;
    assert_eq!(
        (unavailable.status, unavailable.reasons()),
        (503, vec!["backendError".to_string()])
    );
    let mut custom = FaultRule::new(FaultAction::Error)
        .op("change")
        .status(500)
        .times(1);
    custom.code = Some("internalError".into());
    custom.message = Some("boom".into());
    emu.add_fault(custom);
    let c = api.change("example-com", add("boom")).await;
    assert_eq!(
        (c.status, c.reasons(), c.message()),
        (500, vec!["internalError".to_string()], "boom")
    );

    let stats = emu.stats();
    for (action, n) in [
        ("ambiguous_after_commit", 1),
        ("timeout", 2),
        ("pending_forever", 1),
        ("throttle", 3),
        ("error", 3),
    ] {
        assert_eq!(stats.faults.get(action), Some(&n), "{action}: {stats:?}");
    }
    assert_eq!(stats.throttled, 3);
}

#[tokio::test]
async fn the_control_api_adds_faults_and_shows_state() {
    let (emu, api) = start(CloudDnsOptions::default()).await;
    let http = reqwest::Client::new();
    let base = emu.endpoint();
    let added: Value = http
        .post(format!("{base}/_emulator/faults"))
        .json(&json!([{"action": "throttle", "op": "change", "times": 1}]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(added["added"], 1);
    let refused = http
        .post(format!("{base}/_emulator/faults"))
        .json(&json!({"action": "prior_request_not_complete"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    let made = http
        .post(format!("{base}/_emulator/zones"))
        .json(&json!({"name": "ctl-zone", "dns_name": "ctl.test."}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status().as_u16(), 201);
    let zones: Value = http
        .get(format!("{base}/_emulator/zones"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(zones.as_array().unwrap().len(), 2);
    let sets: Value = http
        .get(format!("{base}/_emulator/zones/ctl-zone/rrsets"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sets.as_array().unwrap().len(), 2);
    assert_eq!(
        api.change(
            "ctl-zone",
            json!({"additions": [rrs("a.ctl.test.", "A", 1, &["192.0.2.1"])]})
        )
        .await
        .status,
        429
    );
    let stats: Value = http
        .get(format!("{base}/_emulator/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["throttled"], 1);
    let faults: Value = http
        .get(format!("{base}/_emulator/faults"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(faults[0]["fired"], 1);
    let cleared = http
        .delete(format!("{base}/_emulator/faults"))
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status().as_u16(), 204);
    assert_eq!(
        api.change(
            "ctl-zone",
            json!({"additions": [rrs("a.ctl.test.", "A", 1, &["192.0.2.1"])]})
        )
        .await
        .status,
        200
    );
    emu.stop().await;
}
