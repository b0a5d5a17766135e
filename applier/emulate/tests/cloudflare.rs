//! The Cloudflare emulator over real HTTP on 127.0.0.1: every rule it claims to
//! reproduce (auth, zones, records, the batch's order and atomicity, paging, the rate
//! limit and its headers) and each fault, with Cloudflare's codes and texts.
use dnsplane_emulate::cloudflare::{
    CloudflareEmulator, CloudflareOptions, DEFAULT_TOKEN, RateLimitOptions, TokenSpec,
};
use dnsplane_emulate::{FaultAction, FaultRule};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

async fn start(opts: CloudflareOptions) -> CloudflareEmulator {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    CloudflareEmulator::start(listener, opts)
        .await
        .expect("emulator")
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

struct Answer {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Answer {
    fn code(&self) -> u64 {
        self.body["errors"][0]["code"].as_u64().unwrap_or(0)
    }
    fn message(&self) -> &str {
        self.body["errors"][0]["message"].as_str().unwrap_or("")
    }
    fn ok(&self) -> &Value {
        assert!(
            self.status.is_success() && self.body["success"] == true,
            "{} {}",
            self.status,
            self.body
        );
        &self.body["result"]
    }
}

impl Client {
    fn new(emu: &CloudflareEmulator) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("client"),
            base: emu.endpoint(),
            token: Some(DEFAULT_TOKEN.to_string()),
        }
    }

    fn with_token(emu: &CloudflareEmulator, token: Option<&str>) -> Client {
        Client {
            token: token.map(str::to_string),
            ..Client::new(emu)
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, reqwest::Error> {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.json().await.unwrap_or(Value::Null);
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Answer {
        self.send(method, path, body).await.expect("answer")
    }

    async fn post_record(&self, zone: &str, rec: Value) -> Answer {
        self.call(
            Method::POST,
            &format!("/zones/{zone}/dns_records"),
            Some(rec),
        )
        .await
    }

    async fn batch(&self, zone: &str, b: Value) -> Answer {
        self.call(
            Method::POST,
            &format!("/zones/{zone}/dns_records/batch"),
            Some(b),
        )
        .await
    }
}

fn a(name: &str, ip: &str) -> Value {
    json!({"name": name, "type": "A", "content": ip, "ttl": 300})
}

#[tokio::test]
async fn authentication_answers_in_cloudflares_words() {
    let emu = start(CloudflareOptions {
        tokens: vec![
            TokenSpec::Any(DEFAULT_TOKEN.into()),
            TokenSpec::Scoped {
                token: "narrow-token".into(),
                zones: vec!["one.test".into()],
            },
        ],
        ..CloudflareOptions::default()
    })
    .await;
    let one = emu.create_zone("one.test");
    let two = emu.create_zone("two.test");
    let none = Client::with_token(&emu, None)
        .call(Method::GET, "/zones", None)
        .await;
    assert_eq!((none.status.as_u16(), none.code()), (400, 9106));
    assert_eq!(
        none.message(),
        "Missing X-Auth-Key, X-Auth-Email or Authorization headers"
    );

    let c = Client::new(&emu);
    let bad_form = c
        .http
        .get(format!("{}/zones", c.base))
        .header("authorization", "Token abc")
        .send()
        .await
        .expect("answer");
    assert_eq!(bad_form.status().as_u16(), 400);
    let b: Value = bad_form.json().await.expect("json");
    assert_eq!(b["errors"][0]["code"], 6003);
    assert_eq!(b["errors"][0]["error_chain"][0]["code"], 6111);

    let wrong = Client::with_token(&emu, Some("wrong-token"))
        .call(Method::GET, "/zones", None)
        .await;
    assert_eq!(
        (wrong.status.as_u16(), wrong.code(), wrong.message()),
        (403, 9109, "Invalid access token")
    );

    let narrow = Client::with_token(&emu, Some("narrow-token"));
    let zones = narrow.call(Method::GET, "/zones", None).await;
    assert_eq!(
        zones.ok().as_array().map(Vec::len),
        Some(1),
        "sees only its zone"
    );
    narrow
        .call(Method::GET, &format!("/zones/{one}/dns_records"), None)
        .await
        .ok();
    let other = narrow
        .call(Method::GET, &format!("/zones/{two}/dns_records"), None)
        .await;
    assert_eq!(
        (other.status.as_u16(), other.code(), other.message()),
        (403, 10000, "Authentication error")
    );
    assert_eq!(emu.stats().auth_failures, 3);
}

#[tokio::test]
async fn zones_are_created_found_by_name_and_paged() {
    let emu = start(CloudflareOptions::default()).await;
    let c = Client::new(&emu);
    let made = c
        .call(
            Method::POST,
            "/zones",
            Some(json!({"name": "made.test", "account": {"id": "abc"}})),
        )
        .await;
    let id = made.ok()["id"].as_str().expect("id").to_string();
    assert_eq!(id.len(), 32);
    let dup = c
        .call(Method::POST, "/zones", Some(json!({"name": "made.test"})))
        .await;
    assert_eq!((dup.status.as_u16(), dup.code()), (400, 1061));
    for i in 0..7 {
        emu.create_zone(&format!("z{i}.test"));
    }
    let found = c.call(Method::GET, "/zones?name=made.test", None).await;
    assert_eq!(found.ok()[0]["id"], id.as_str());
    let page = c.call(Method::GET, "/zones?per_page=5&page=2", None).await;
    assert_eq!(page.ok().as_array().map(Vec::len), Some(3));
    assert_eq!(page.body["result_info"]["total_count"], 8);
    assert_eq!(page.body["result_info"]["total_pages"], 2);
    assert_eq!(
        c.call(Method::GET, &format!("/zones/{id}"), None)
            .await
            .ok()["name"],
        "made.test"
    );
}

#[tokio::test]
async fn records_follow_cloudflares_rules_and_texts() {
    let emu = start(CloudflareOptions::default()).await;
    let z = emu.create_zone("rec.test");
    let c = Client::new(&emu);
    let r = c
        .post_record(
            &z,
            json!({"name": "www", "type": "A", "content": "192.0.2.1"}),
        )
        .await;
    let rec = r.ok().clone();
    assert_eq!(rec["name"], "www.rec.test");
    assert_eq!(
        (
            rec["ttl"].as_u64(),
            rec["proxied"].as_bool(),
            rec["proxiable"].as_bool()
        ),
        (Some(1), Some(false), Some(true))
    );
    assert_eq!(
        (rec["comment"].clone(), rec["tags"].clone()),
        (Value::Null, json!([]))
    );
    assert!(rec["created_on"].as_str().is_some_and(|t| t.ends_with('Z')));
    let id = rec["id"].as_str().expect("id").to_string();

    let cases = [
        (
            json!({"name": "www", "type": "A", "content": "192.0.2.1", "ttl": 300}),
            81058,
            "An identical record already exists.",
        ),
        (
            json!({"name": "www", "type": "CNAME", "content": "x.example.net"}),
            81053,
            "An A, AAAA, or CNAME record with that host already exists.",
        ),
        (
            json!({"name": "bad", "type": "A", "content": "2001:db8::1"}),
            9005,
            "Content for A record must be a valid IPv4 address.",
        ),
        (
            json!({"name": "bad", "type": "AAAA", "content": "192.0.2.1"}),
            9006,
            "Content for AAAA record must be a valid IPv6 address.",
        ),
        (
            json!({"name": "bad", "type": "CNAME", "content": "192.0.2.1"}),
            9007,
            "Content for CNAME record is invalid.",
        ),
        (
            json!({"name": "bad..x", "type": "A", "content": "192.0.2.1"}),
            9000,
            "DNS name is invalid.",
        ),
    ];
    for (body, code, text) in cases {
        let e = c.post_record(&z, body.clone()).await;
        assert_eq!(
            (e.status.as_u16(), e.code(), e.message()),
            (400, code, text),
            "{body}"
        );
    }
    // Proxying a type that cannot be proxied: the generic code, the detail chained.
    let e = c
        .post_record(
            &z,
            json!({"name": "bad", "type": "TXT", "content": "x", "proxied": true}),
        )
        .await;
    assert_eq!(
        (e.status.as_u16(), e.code(), e.message()),
        (400, 1004, "DNS Validation Error")
    );
    assert_eq!(
        e.body["errors"][0]["error_chain"][0],
        json!({"code": 9004, "message": "This record type cannot be proxied."})
    );
    c.post_record(
        &z,
        json!({"name": "alias", "type": "CNAME", "content": "t.example.net"}),
    )
    .await
    .ok();
    let e = c
        .post_record(&z, json!({"name": "alias", "type": "TXT", "content": "x"}))
        .await;
    assert_eq!(
        (e.code(), e.message()),
        (81054, "A CNAME record with that host already exists.")
    );
    // Same name and type, other content: allowed.
    c.post_record(
        &z,
        json!({"name": "www", "type": "A", "content": "192.0.2.2"}),
    )
    .await
    .ok();

    // PATCH keeps what it does not name; PUT resets it.
    let path = format!("/zones/{z}/dns_records/{id}");
    let p = c
        .call(
            Method::PATCH,
            &path,
            Some(json!({"comment": "c", "tags": ["a:b"], "proxied": true})),
        )
        .await;
    assert_eq!(
        (p.ok()["comment"].clone(), p.ok()["proxied"].clone()),
        (json!("c"), json!(true))
    );
    let p = c
        .call(Method::PATCH, &path, Some(json!({"content": "192.0.2.3"})))
        .await;
    assert_eq!(
        (p.ok()["comment"].clone(), p.ok()["tags"].clone()),
        (json!("c"), json!(["a:b"]))
    );
    let u = c
        .call(
            Method::PUT,
            &path,
            Some(json!({"name": "www", "type": "A", "content": "192.0.2.4"})),
        )
        .await;
    assert_eq!(
        (
            u.ok()["comment"].clone(),
            u.ok()["proxied"].clone(),
            u.ok()["id"].clone()
        ),
        (Value::Null, json!(false), json!(id))
    );
    // Stale writes are not detected: two writers by id, the last one wins.
    c.call(Method::PATCH, &path, Some(json!({"content": "192.0.2.5"})))
        .await
        .ok();
    c.call(Method::PATCH, &path, Some(json!({"content": "192.0.2.6"})))
        .await
        .ok();
    assert_eq!(
        c.call(Method::GET, &path, None).await.ok()["content"],
        "192.0.2.6"
    );

    // MX priority, SRV and CAA data.
    let mx = c
        .post_record(
            &z,
            json!({"name": "@", "type": "MX", "content": "mail.rec.test", "priority": 10}),
        )
        .await;
    assert_eq!(
        (mx.ok()["priority"].clone(), mx.ok()["name"].clone()),
        (json!(10), json!("rec.test"))
    );
    let srv = c
        .post_record(&z, json!({"name": "_sip._tcp", "type": "SRV", "data": {"priority": 1, "weight": 2, "port": 5060, "target": "sip.rec.test"}}))
        .await;
    assert_eq!(srv.ok()["content"], "2 5060 sip.rec.test");
    let caa = c
        .post_record(&z, json!({"name": "@", "type": "CAA", "data": {"flags": 0, "tag": "issue", "value": "letsencrypt.org"}}))
        .await;
    assert_eq!(caa.ok()["content"], "0 issue \"letsencrypt.org\"");

    let d = c.call(Method::DELETE, &path, None).await;
    assert_eq!(d.ok()["id"], id.as_str());
    for m in [Method::GET, Method::PATCH, Method::PUT, Method::DELETE] {
        let body = (m == Method::PATCH || m == Method::PUT).then(|| a("www", "192.0.2.9"));
        let e = c.call(m.clone(), &path, body).await;
        assert_eq!(
            (e.status.as_u16(), e.code(), e.message()),
            (404, 81044, "Record does not exist."),
            "{m}"
        );
    }
}

#[tokio::test]
async fn listings_page_and_filter() {
    let emu = start(CloudflareOptions::default()).await;
    let z = emu.create_zone("page.test");
    let c = Client::new(&emu);
    let posts: Vec<Value> = (0..250)
        .map(|i| a(&format!("n{i:03}"), "192.0.2.1"))
        .collect();
    c.batch(&z, json!({"posts": posts})).await.ok();
    c.post_record(&z, json!({"name": "n007", "type": "TXT", "content": "x"}))
        .await
        .ok();
    let mut seen = 0;
    for page in 1..=3 {
        let l = c
            .call(
                Method::GET,
                &format!("/zones/{z}/dns_records?page={page}"),
                None,
            )
            .await;
        let n = l.ok().as_array().map_or(0, Vec::len);
        seen += n;
        let info = &l.body["result_info"];
        assert_eq!(
            (
                info["page"].as_u64(),
                info["per_page"].as_u64(),
                info["count"].as_u64()
            ),
            (Some(page), Some(100), Some(n as u64))
        );
        assert_eq!(
            (info["total_count"].as_u64(), info["total_pages"].as_u64()),
            (Some(251), Some(3))
        );
    }
    assert_eq!(seen, 251);
    let by_name = c
        .call(
            Method::GET,
            &format!("/zones/{z}/dns_records?name=n007.page.test"),
            None,
        )
        .await;
    assert_eq!(by_name.ok().as_array().map(Vec::len), Some(2));
    let by_both = c
        .call(
            Method::GET,
            &format!("/zones/{z}/dns_records?name=n007.page.test&type=TXT"),
            None,
        )
        .await;
    assert_eq!(by_both.ok()[0]["content"], "x");
    let big = c
        .call(
            Method::GET,
            &format!("/zones/{z}/dns_records?per_page=5000"),
            None,
        )
        .await;
    assert_eq!(big.ok().as_array().map(Vec::len), Some(251));
}

#[tokio::test]
async fn a_batch_runs_in_order_all_or_nothing_within_the_plan() {
    let emu = start(CloudflareOptions {
        batch_limit: Some(6),
        ..CloudflareOptions::default()
    })
    .await;
    let z = emu.create_zone("batch.test");
    let c = Client::new(&emu);
    let first = c
        .batch(
            &z,
            json!({"posts": [a("www", "192.0.2.1"), a("api", "192.0.2.2")]}),
        )
        .await;
    let ids: Vec<String> = first.ok()["posts"]
        .as_array()
        .expect("posts")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect();
    // Listed in any order, run deletes → patches → puts → posts: the A at www goes
    // before the CNAME arrives, and the patch sees the record the put then replaces.
    let r = c
        .batch(
            &z,
            json!({
                "posts": [{"name": "www", "type": "CNAME", "content": "t.example.net"}],
                "puts": [{"id": ids[1], "name": "api", "type": "A", "content": "192.0.2.8"}],
                "patches": [{"id": ids[1], "comment": "gone after the put"}],
                "deletes": [{"id": ids[0]}],
            }),
        )
        .await;
    let res = r.ok();
    assert_eq!(res["deletes"][0]["id"], ids[0].as_str());
    assert_eq!(res["patches"][0]["comment"], "gone after the put");
    assert_eq!(
        (
            res["puts"][0]["comment"].clone(),
            res["posts"][0]["type"].clone()
        ),
        (Value::Null, json!("CNAME"))
    );
    let held = emu.records(&z);
    assert_eq!(held.len(), 2);

    // One failure anywhere: nothing of the batch is applied, and only the first error answers.
    let before = emu.records(&z);
    let e = c
        .batch(&z, json!({
            "deletes": [{"id": ids[1]}],
            "posts": [a("new", "192.0.2.3"), a("bad1", "nope"), {"name": "bad2", "type": "AAAA", "content": "x"}],
        }))
        .await;
    assert_eq!((e.status.as_u16(), e.code()), (400, 9005));
    assert_eq!(
        e.body["errors"].as_array().map(Vec::len),
        Some(1),
        "first error only"
    );
    assert_eq!(emu.records(&z), before, "nothing committed");
    let e = c.batch(&z, json!({"patches": [{"id": "ffffffffffffffffffffffffffffffff", "content": "192.0.2.1"}]})).await;
    assert_eq!((e.status.as_u16(), e.code()), (404, 81044));
    let e = c
        .batch(
            &z,
            json!({"posts": [a("dup", "192.0.2.1"), a("dup", "192.0.2.1")]}),
        )
        .await;
    assert_eq!(e.code(), 81058, "a batch clashes with itself too");
    let seven: Vec<Value> = (0..7).map(|i| a(&format!("m{i}"), "192.0.2.1")).collect();
    let e = c.batch(&z, json!({"posts": seven})).await;
    assert_eq!((e.status.as_u16(), e.code()), (400, 1004));
    assert!(e.message().contains("at most 6"), "{}", e.message());
    assert_eq!(emu.records(&z), before);
    let bad = c
        .call(Method::POST, &format!("/zones/{z}/dns_records/batch"), None)
        .await;
    assert_eq!(bad.code(), 6007);
}

#[tokio::test]
async fn the_rate_limit_blocks_then_lets_through_with_its_headers() {
    let emu = start(CloudflareOptions {
        rate_limit: RateLimitOptions {
            requests: 4,
            window: Duration::from_secs(60),
            block: Duration::from_secs(1),
            per_ip_per_second: 0.0,
        },
        ..CloudflareOptions::default()
    })
    .await;
    let c = Client::new(&emu);
    for left in (0..4).rev() {
        let r = c.call(Method::GET, "/zones", None).await;
        r.ok();
        let rl = r
            .headers
            .get("ratelimit")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert!(rl.starts_with(&format!("\"default\";r={left};t=")), "{rl}");
        assert_eq!(
            r.headers
                .get("ratelimit-policy")
                .and_then(|v| v.to_str().ok()),
            Some("\"default\";q=4;w=60")
        );
        assert!(
            r.headers.get("retry-after").is_none(),
            "retry-after only when exceeded"
        );
    }
    let over = c.call(Method::GET, "/zones", None).await;
    assert_eq!((over.status.as_u16(), over.code()), (429, 971));
    assert!(
        over.message()
            .starts_with("More than 4 requests per 60 seconds reached."),
        "{}",
        over.message()
    );
    assert_eq!(
        over.headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    // Blocked for the block time, whatever the window says; another token is not.
    assert_eq!(
        c.call(Method::GET, "/zones", None).await.status.as_u16(),
        429
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    c.call(Method::GET, "/zones", None).await.ok();
    assert_eq!(emu.stats().throttled, 2);
}

#[tokio::test]
async fn faults_answer_in_cloudflares_words() {
    let emu = start(CloudflareOptions::default()).await;
    let z = emu.create_zone("fault.test");
    let c = Client::new(&emu);

    // 502 after commit: the batch is in.
    emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("batch")
            .times(1),
    );
    let r = c.batch(&z, json!({"posts": [a("one", "192.0.2.1")]})).await;
    assert_eq!(r.status.as_u16(), 502);
    assert_eq!(r.body["success"], false);
    assert_eq!(emu.records(&z).len(), 1);

    // Timeout without commit: the connection drops, nothing is in.
    emu.add_fault(
        FaultRule::new(FaultAction::Timeout)
            .op("batch")
            .delay(Duration::from_millis(200))
            .times(1),
    );
    let e = c
        .send(
            Method::POST,
            &format!("/zones/{z}/dns_records/batch"),
            Some(json!({"posts": [a("two", "192.0.2.2")]})),
        )
        .await;
    assert!(e.is_err(), "no answer");
    assert_eq!(emu.records(&z).len(), 1);
    // Timeout with commit: no answer, but the batch is in.
    emu.add_fault(
        FaultRule::new(FaultAction::Timeout)
            .op("batch")
            .delay(Duration::from_millis(200))
            .commit(true)
            .times(1),
    );
    let e = c
        .send(
            Method::POST,
            &format!("/zones/{z}/dns_records/batch"),
            Some(json!({"posts": [a("three", "192.0.2.3")]})),
        )
        .await;
    assert!(e.is_err(), "no answer");
    assert_eq!(emu.records(&z).len(), 2);

    // A burst of 429s, then through.
    let mut t = FaultRule::new(FaultAction::Throttle)
        .op("list_records")
        .times(3);
    t.retry_after = Some(Duration::from_secs(2));
    emu.add_fault(t);
    for _ in 0..3 {
        let r = c
            .call(Method::GET, &format!("/zones/{z}/dns_records"), None)
            .await;
        assert_eq!((r.status.as_u16(), r.code()), (429, 971));
        assert_eq!(
            r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
            Some("2")
        );
    }
    c.call(Method::GET, &format!("/zones/{z}/dns_records"), None)
        .await
        .ok();

    // Any error, in the envelope; nothing is done.
    let mut err = FaultRule::new(FaultAction::Error)
        .op("create_record")
        .times(1)
        .status(503);
    err.code = Some("10013".into());
    err.message = Some("Service temporarily unavailable".into());
    emu.add_fault(err);
    let r = c.post_record(&z, a("four", "192.0.2.4")).await;
    assert_eq!(
        (r.status.as_u16(), r.code(), r.message()),
        (503, 10013, "Service temporarily unavailable")
    );
    assert_eq!(emu.records(&z).len(), 2);

    let st = emu.stats();
    assert_eq!(st.faults.get("timeout"), Some(&2));
    assert_eq!(st.faults.get("throttle"), Some(&3));
    assert_eq!(st.throttled, 3);
    assert_eq!(st.requests.get("BatchDnsRecords"), Some(&3));
}

#[tokio::test]
async fn the_control_api_adds_faults_and_shows_state() {
    let emu = start(CloudflareOptions::default()).await;
    let http = reqwest::Client::new();
    let root = format!("http://{}/_emulator", emu.local_addr());
    let z: Value = http
        .post(format!("{root}/zones"))
        .json(&json!({"name": "ctl.test"}))
        .send()
        .await
        .expect("answer")
        .json()
        .await
        .expect("json");
    let id = z["id"].as_str().expect("id").to_string();
    let bad = http
        .post(format!("{root}/faults"))
        .json(&json!({"action": "pending_forever"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(bad.status().as_u16(), 400, "Route 53's faults are refused");
    let ok = http
        .post(format!("{root}/faults"))
        .json(&json!([{"action": "error", "op": "batch", "status": 500, "times": 1}]))
        .send()
        .await
        .expect("answer");
    assert_eq!(ok.status().as_u16(), 200);
    let c = Client::new(&emu);
    assert_eq!(
        c.batch(&id, json!({"posts": [a("x", "192.0.2.1")]}))
            .await
            .status
            .as_u16(),
        500
    );
    c.batch(&id, json!({"posts": [a("x", "192.0.2.1")]}))
        .await
        .ok();
    let recs: Value = http
        .get(format!("{root}/zones/{id}/records"))
        .send()
        .await
        .expect("a")
        .json()
        .await
        .expect("j");
    assert_eq!(recs[0]["name"], "x.ctl.test");
    let stats: Value = http
        .get(format!("{root}/stats"))
        .send()
        .await
        .expect("a")
        .json()
        .await
        .expect("j");
    assert_eq!(stats["requests"]["BatchDnsRecords"], 2);
    assert_eq!(stats["changes_committed"], 1);
    let gone = http
        .get(format!("{root}/zones/nope/records"))
        .send()
        .await
        .expect("a");
    assert_eq!(gone.status().as_u16(), 404);
    let del = http
        .delete(format!("{root}/faults"))
        .send()
        .await
        .expect("a");
    assert_eq!(del.status().as_u16(), 204);
}
