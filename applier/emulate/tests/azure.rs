//! The Azure DNS emulator over real HTTP on 127.0.0.1: every rule it claims to
//! reproduce (ETags and 412s, the ARM error body, api-versions, tokens and the token
//! endpoint, the subscription quota and its headers, paging, limits, public and
//! private record-set JSON) and each fault.
use dnsplane_emulate::azure::{
    AzureEmulator, AzureOptions, DEFAULT_CLIENT_ASSERTION, DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET, DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, DEFAULT_TOKEN,
    ThrottleOptions,
};
use dnsplane_emulate::{FaultAction, FaultRule};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

const API: &str = "2018-05-01";
const PRIVATE_API: &str = "2020-06-01";

async fn start(opts: AzureOptions) -> AzureEmulator {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    AzureEmulator::start(listener, opts)
        .await
        .expect("emulator")
}

/// No quota, so that tests that are not about it never meet it.
fn unthrottled() -> AzureOptions {
    AzureOptions {
        throttle: ThrottleOptions {
            reads_per_second: 0.0,
            writes_per_second: 0.0,
            deletes_per_second: 0.0,
            ..ThrottleOptions::default()
        },
        ..AzureOptions::default()
    }
}

fn zones_path(private: bool) -> String {
    format!(
        "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{DEFAULT_RESOURCE_GROUP}/providers/Microsoft.Network/{}",
        if private {
            "privateDnsZones"
        } else {
            "dnsZones"
        }
    )
}

fn set_path(zone: &str, t: &str, name: &str) -> String {
    format!("{}/{zone}/{t}/{name}", zones_path(false))
}

struct Answer {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Answer {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    fn etag(&self) -> String {
        self.body["etag"].as_str().expect("etag").to_string()
    }
    fn header(&self, h: &str) -> Option<&str> {
        self.headers.get(h).and_then(|v| v.to_str().ok())
    }
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    fn new(emu: &AzureEmulator) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("client"),
            base: emu.endpoint(),
            token: Some(DEFAULT_TOKEN.to_string()),
        }
    }

    /// `path` without a query gets `api-version=2018-05-01`.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Result<Answer, reqwest::Error> {
        let url = if path.starts_with("http") {
            path.to_string()
        } else if path.contains('?') {
            format!("{}{path}", self.base)
        } else {
            format!("{}{path}?api-version={API}", self.base)
        };
        let mut req = self.http.request(method, url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await?;
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        self.send(method, path, body, headers)
            .await
            .expect("answer")
    }
}

/// An `application/x-www-form-urlencoded` body (reqwest here has no `form`).
fn urlencoded(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn a_set(ttl: u64, ips: &[&str]) -> Value {
    json!({ "properties": {
        "TTL": ttl,
        "ARecords": ips.iter().map(|i| json!({ "ipv4Address": i })).collect::<Vec<_>>(),
    }})
}

#[tokio::test]
async fn etags_guard_every_write_and_a_failed_condition_is_412() {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    let c = Client::new(&emu);
    let www = set_path("example.com", "A", "www");

    let created = c
        .call(
            Method::PUT,
            &www,
            Some(a_set(300, &["192.0.2.1"])),
            &[("If-None-Match", "*")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["type"], "Microsoft.Network/dnszones/A");
    assert_eq!(created.body["name"], "www");
    assert_eq!(created.body["properties"]["fqdn"], "www.example.com.");
    assert_eq!(created.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(
        created.body["properties"]["ARecords"][0]["ipv4Address"],
        "192.0.2.1"
    );
    let first = created.etag();
    assert_eq!(c.call(Method::GET, &www, None, &[]).await.etag(), first);

    // Create-only again: 412 with ARM's body, nothing changed.
    let again = c
        .call(
            Method::PUT,
            &www,
            Some(a_set(60, &["192.0.2.9"])),
            &[("If-None-Match", "*")],
        )
        .await;
    assert_eq!(again.status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(again.code(), "PreconditionFailed");
    assert!(
        again.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("If-None-Match")
    );
    assert_eq!(again.body.as_object().unwrap().len(), 1, "{}", again.body);
    assert_eq!(
        emu.record_sets("example.com")
            .iter()
            .find(|s| s.name == "www")
            .unwrap()
            .ttl,
        300
    );

    // If-Match with the current ETag succeeds and the ETag changes.
    let updated = c
        .call(
            Method::PUT,
            &www,
            Some(a_set(120, &["192.0.2.2"])),
            &[("If-Match", &first)],
        )
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    let second = updated.etag();
    assert_ne!(first, second);
    // The stale one fails, on PUT, PATCH and DELETE alike.
    for (m, body) in [
        (Method::PUT, Some(a_set(1, &["192.0.2.3"]))),
        (Method::PATCH, Some(json!({ "properties": { "TTL": 5 } }))),
        (Method::DELETE, None),
    ] {
        let a = c.call(m.clone(), &www, body, &[("If-Match", &first)]).await;
        assert_eq!(
            (a.status, a.code()),
            (StatusCode::PRECONDITION_FAILED, "PreconditionFailed"),
            "{m}"
        );
    }
    // PATCH merges: TTL changes, records stay; the ETag changes again.
    let patched = c
        .call(
            Method::PATCH,
            &www,
            Some(json!({ "properties": { "TTL": 30 } })),
            &[("If-Match", &second)],
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["properties"]["TTL"], 30);
    assert_eq!(
        patched.body["properties"]["ARecords"][0]["ipv4Address"],
        "192.0.2.2"
    );
    let third = patched.etag();
    assert_ne!(third, second);
    // No header: last writer wins.
    let blind = c
        .call(Method::PUT, &www, Some(a_set(40, &["192.0.2.4"])), &[])
        .await;
    assert_eq!(blind.status, StatusCode::OK);
    let fourth = blind.etag();
    // If-Match: * needs the set to exist; a missing one is 412, a PATCH without it 404.
    let missing = set_path("example.com", "A", "nope");
    let a = c
        .call(
            Method::PUT,
            &missing,
            Some(a_set(1, &["192.0.2.5"])),
            &[("If-Match", "*")],
        )
        .await;
    assert_eq!(a.status, StatusCode::PRECONDITION_FAILED);
    let a = c
        .call(
            Method::PATCH,
            &missing,
            Some(json!({ "properties": { "TTL": 5 } })),
            &[],
        )
        .await;
    assert_eq!((a.status, a.code()), (StatusCode::NOT_FOUND, "NotFound"));
    // Another writer's change makes our ETag stale.
    let foreign = emu.put_record_set("example.com", "A", "www", &a_set(50, &["198.51.100.1"]));
    assert_ne!(foreign, fourth);
    let a = c
        .call(Method::DELETE, &www, None, &[("If-Match", &fourth)])
        .await;
    assert_eq!(a.status, StatusCode::PRECONDITION_FAILED);
    let a = c
        .call(Method::DELETE, &www, None, &[("If-Match", &foreign)])
        .await;
    assert_eq!(a.status, StatusCode::OK);
    let a = c.call(Method::DELETE, &www, None, &[]).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    let a = c.call(Method::GET, &www, None, &[]).await;
    assert_eq!((a.status, a.code()), (StatusCode::NOT_FOUND, "NotFound"));
    let s = emu.stats();
    assert_eq!(s.preconditions_failed, 6);
    emu.stop().await;
}

#[tokio::test]
async fn zones_carry_soa_and_ns_and_unknown_things_are_arm_404s() {
    let emu = start(unthrottled()).await;
    let id = emu.create_zone("example.com");
    let c = Client::new(&emu);
    let z = c
        .call(
            Method::GET,
            &format!("{}/example.com", zones_path(false)),
            None,
            &[],
        )
        .await;
    assert_eq!(z.status, StatusCode::OK);
    assert_eq!(z.body["id"], id.as_str());
    assert_eq!(z.body["type"], "Microsoft.Network/dnszones");
    assert_eq!(z.body["location"], "global");
    assert_eq!(z.body["properties"]["numberOfRecordSets"], 2);
    assert_eq!(z.body["properties"]["maxNumberOfRecordSets"], 10000);
    assert_eq!(
        z.body["properties"]["nameServers"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let soa = c
        .call(Method::GET, &set_path("example.com", "SOA", "@"), None, &[])
        .await;
    assert_eq!(soa.body["properties"]["SOARecord"]["expireTime"], 2419200);
    assert_eq!(soa.body["id"], format!("{id}/SOA/@").as_str());
    let ns = c
        .call(Method::GET, &set_path("example.com", "NS", "@"), None, &[])
        .await;
    assert_eq!(
        ns.body["properties"]["NSRecords"][0]["nsdname"],
        "ns1-01.azure-dns.com."
    );
    // The apex SOA and NS cannot be deleted.
    let a = c
        .call(
            Method::DELETE,
            &set_path("example.com", "NS", "@"),
            None,
            &[],
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "BadRequest")
    );

    let a = c
        .call(
            Method::GET,
            &format!("{}/other.com", zones_path(false)),
            None,
            &[],
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::NOT_FOUND, "ResourceNotFound")
    );
    let a = c
        .call(
            Method::PUT,
            &set_path("other.com", "A", "www"),
            Some(a_set(1, &["192.0.2.1"])),
            &[],
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::NOT_FOUND, "ParentResourceNotFound")
    );
    let a = c
        .call(Method::GET, &format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/nope/providers/Microsoft.Network/dnszones/example.com"), None, &[])
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::NOT_FOUND, "ResourceGroupNotFound")
    );

    // Zones by resource group and by subscription; a zone made by PUT.
    let made = c
        .call(
            Method::PUT,
            &format!("{}/made.example", zones_path(false)),
            Some(json!({ "location": "global", "tags": { "a": "b" } })),
            &[("If-None-Match", "*")],
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let a = c
        .call(
            Method::PUT,
            &format!("{}/x.example", zones_path(false)),
            Some(json!({})),
            &[],
        )
        .await;
    assert_eq!(a.code(), "LocationRequired");
    let by_rg = c.call(Method::GET, &zones_path(false), None, &[]).await;
    assert_eq!(by_rg.body["value"].as_array().unwrap().len(), 2);
    let by_sub = c
        .call(
            Method::GET,
            &format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/providers/Microsoft.Network/dnszones"),
            None,
            &[],
        )
        .await;
    assert_eq!(by_sub.body["value"].as_array().unwrap().len(), 2);
    let gone = c
        .call(
            Method::DELETE,
            &format!("{}/made.example", zones_path(false)),
            None,
            &[],
        )
        .await;
    assert_eq!(gone.status, StatusCode::OK);
    emu.stop().await;
}

#[tokio::test]
async fn api_versions_are_checked_per_resource_type() {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    emu.create_private_zone("corp.internal");
    let c = Client::new(&emu);
    let a = c
        .call(
            Method::GET,
            &format!("{}/example.com/A/www", zones_path(false)).replace("/A/www", "?x=1"),
            None,
            &[],
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "MissingApiVersionParameter")
    );
    let a = c
        .call(
            Method::GET,
            &format!("{}/example.com?api-version=2099-01-01", zones_path(false)),
            None,
            &[],
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "NoRegisteredProviderFound")
    );
    let private = format!("{}/corp.internal", zones_path(true));
    let a = c
        .call(
            Method::GET,
            &format!("{private}?api-version={API}"),
            None,
            &[],
        )
        .await;
    assert_eq!(a.code(), "NoRegisteredProviderFound");
    let a = c
        .call(
            Method::GET,
            &format!("{private}?api-version={PRIVATE_API}"),
            None,
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["type"], "Microsoft.Network/privateDnsZones");
    emu.stop().await;
}

#[tokio::test]
async fn private_zones_use_their_own_record_json() {
    let emu = start(unthrottled()).await;
    emu.create_private_zone("corp.internal");
    let c = Client::new(&emu);
    let p = format!(
        "{}/corp.internal/A/db?api-version={PRIVATE_API}",
        zones_path(true)
    );
    let body = json!({ "properties": { "ttl": 10, "aRecords": [{ "ipv4Address": "10.0.0.4" }] } });
    let a = c
        .call(Method::PUT, &p, Some(body), &[("If-None-Match", "*")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.body["type"], "Microsoft.Network/privateDnsZones/A");
    assert_eq!(a.body["properties"]["ttl"], 10);
    assert_eq!(
        a.body["properties"]["aRecords"][0]["ipv4Address"],
        "10.0.0.4"
    );
    assert_eq!(a.body["properties"]["isAutoRegistered"], false);
    assert!(a.body["properties"].get("TTL").is_none());
    let all = c
        .call(
            Method::GET,
            &format!(
                "{}/corp.internal/ALL?api-version={PRIVATE_API}",
                zones_path(true)
            ),
            None,
            &[],
        )
        .await;
    assert_eq!(
        all.body["value"].as_array().unwrap().len(),
        2,
        "SOA and db: {}",
        all.body
    );
    assert_eq!(
        all.body["value"][0]["properties"]["soaRecord"]["host"],
        "azureprivatedns.net"
    );
    // NS and CAA are public-zone types.
    let a = c
        .call(
            Method::GET,
            &format!(
                "{}/corp.internal/NS/x?api-version={PRIVATE_API}",
                zones_path(true)
            ),
            None,
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    emu.stop().await;
}

#[tokio::test]
async fn tokens_static_issued_expired_and_refused() {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    let mut c = Client::new(&emu);
    let zone = format!("{}/example.com", zones_path(false));

    c.token = None;
    let a = c.call(Method::GET, &zone, None, &[]).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::UNAUTHORIZED, "AuthenticationFailed")
    );
    assert!(a.header("www-authenticate").unwrap().starts_with("Bearer "));
    c.token = Some("made-up".into());
    assert_eq!(
        c.call(Method::GET, &zone, None, &[]).await.code(),
        "InvalidAuthenticationToken"
    );
    c.token = Some(emu.issue_token(Duration::ZERO));
    assert_eq!(
        c.call(Method::GET, &zone, None, &[]).await.code(),
        "ExpiredAuthenticationToken"
    );

    // The token endpoint: a client secret, then a federated assertion.
    let http = reqwest::Client::new();
    let token_url = emu.token_url("my-tenant");
    let form = |extra: &[(&'static str, &'static str)]| {
        let mut f = vec![
            ("grant_type", "client_credentials"),
            ("client_id", DEFAULT_CLIENT_ID),
            ("scope", "https://management.azure.com/.default"),
        ];
        f.extend_from_slice(extra);
        f
    };
    for extra in [
        vec![("client_secret", DEFAULT_CLIENT_SECRET)],
        vec![
            ("client_assertion", DEFAULT_CLIENT_ASSERTION),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
        ],
    ] {
        let r = http
            .post(&token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(urlencoded(&form(&extra)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let t: Value = r.json().await.unwrap();
        assert_eq!(t["token_type"], "Bearer");
        assert_eq!(t["expires_in"], 3600);
        c.token = Some(t["access_token"].as_str().unwrap().to_string());
        assert_eq!(
            c.call(Method::GET, &zone, None, &[]).await.status,
            StatusCode::OK
        );
    }
    let r = http
        .post(&token_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(urlencoded(&form(&[("client_secret", "wrong")])))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let t: Value = r.json().await.unwrap();
    assert_eq!(t["error"], "invalid_client");
    assert!(
        t["error_description"]
            .as_str()
            .unwrap()
            .starts_with("AADSTS7000215")
    );
    // Revoked tokens are refused; clients must fetch anew.
    emu.revoke_tokens();
    assert_eq!(
        c.call(Method::GET, &zone, None, &[]).await.code(),
        "InvalidAuthenticationToken"
    );
    let s = emu.stats();
    assert_eq!(s.tokens_issued, 2);
    assert_eq!(s.auth_failures, 5);
    emu.stop().await;
}

#[tokio::test]
async fn the_subscription_quota_answers_429_with_retry_after_and_headers() {
    let emu = start(AzureOptions {
        throttle: ThrottleOptions {
            reads_per_second: 1.0,
            read_burst: 3,
            writes_per_second: 0.5,
            write_burst: 2,
            deletes_per_second: 1.0,
            delete_burst: 1,
        },
        ..AzureOptions::default()
    })
    .await;
    emu.create_zone("example.com");
    let c = Client::new(&emu);
    let zone = format!("{}/example.com", zones_path(false));
    let mut left = vec![];
    for _ in 0..3 {
        let a = c.call(Method::GET, &zone, None, &[]).await;
        assert_eq!(a.status, StatusCode::OK);
        assert!(
            a.header("x-ms-ratelimit-remaining-subscription-writes")
                .is_none()
        );
        left.push(
            a.header("x-ms-ratelimit-remaining-subscription-reads")
                .unwrap()
                .parse::<u64>()
                .unwrap(),
        );
    }
    assert_eq!(left, vec![2, 1, 0]);
    let a = c.call(Method::GET, &zone, None, &[]).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::TOO_MANY_REQUESTS, "TooManyRequests")
    );
    assert_eq!(a.header("retry-after"), Some("1"));
    assert_eq!(
        a.header("x-ms-ratelimit-remaining-subscription-reads"),
        Some("0")
    );
    // Writes have their own bucket.
    for (i, want) in [(0, StatusCode::CREATED), (1, StatusCode::OK)] {
        let a = c
            .call(
                Method::PUT,
                &set_path("example.com", "A", "www"),
                Some(a_set(60, &["192.0.2.1"])),
                &[],
            )
            .await;
        assert_eq!(a.status, want, "write {i}");
        assert_eq!(
            a.header("x-ms-ratelimit-remaining-subscription-writes"),
            Some(["1", "0"][i])
        );
    }
    let www = set_path("example.com", "A", "www");
    let a = c
        .call(
            Method::PATCH,
            &www,
            Some(json!({ "properties": { "TTL": 5 } })),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(a.header("retry-after"), Some("2"));
    assert!(
        a.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'write'")
    );
    // Deletes have their own bucket too, as ARM counts them.
    let a = c.call(Method::DELETE, &www, None, &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        a.header("x-ms-ratelimit-remaining-subscription-deletes"),
        Some("0")
    );
    assert!(
        a.header("x-ms-ratelimit-remaining-subscription-writes")
            .is_none()
    );
    let a = c.call(Method::DELETE, &www, None, &[]).await;
    assert_eq!(
        (a.status, a.header("retry-after")),
        (StatusCode::TOO_MANY_REQUESTS, Some("1"))
    );
    assert_eq!(emu.stats().throttled, 3);
    emu.stop().await;
}

#[tokio::test]
async fn lists_page_with_top_and_next_link() {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    for i in 0..250 {
        emu.put_record_set(
            "example.com",
            "TXT",
            &format!("n{i:03}"),
            &json!({ "properties": { "TTL": 60, "TXTRecords": [{ "value": [format!("v{i}")] }] } }),
        );
    }
    let c = Client::new(&emu);
    for (path, top, want_pages, want_total) in [
        (
            format!(
                "{}/example.com/recordsets?api-version={API}&$top=100",
                zones_path(false)
            ),
            Some(100),
            3,
            252,
        ),
        (
            format!("{}/example.com/all?api-version={API}", zones_path(false)),
            None,
            3,
            252,
        ),
        (
            format!(
                "{}/example.com/TXT?api-version={API}&$top=60",
                zones_path(false)
            ),
            Some(60),
            5,
            250,
        ),
    ] {
        let mut next = Some(path);
        let (mut pages, mut names) = (0, std::collections::BTreeSet::new());
        while let Some(url) = next {
            let a = c.call(Method::GET, &url, None, &[]).await;
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
            let v = a.body["value"].as_array().unwrap();
            assert!(v.len() <= top.unwrap_or(100));
            for s in v {
                names.insert(format!("{}/{}", s["name"], s["type"]));
            }
            pages += 1;
            next = a.body["nextLink"].as_str().map(str::to_string);
            if let Some(n) = &next {
                assert!(n.starts_with(&emu.endpoint()), "{n}");
                assert!(n.contains("api-version="));
            }
        }
        assert_eq!((pages, names.len()), (want_pages, want_total));
    }
    let a = c
        .call(
            Method::GET,
            &format!(
                "{}/example.com/all?api-version={API}&$top=0",
                zones_path(false)
            ),
            None,
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    emu.stop().await;
}

#[tokio::test]
async fn limits_and_cname_rules_are_refused_with_arm_codes() {
    let emu = start(AzureOptions {
        max_record_sets: 5,
        ..unthrottled()
    })
    .await;
    emu.create_zone("example.com");
    let c = Client::new(&emu);
    let ips: Vec<String> = (1..=21).map(|i| format!("192.0.2.{i}")).collect();
    let refs: Vec<&str> = ips.iter().map(String::as_str).collect();
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "A", "big"),
            Some(a_set(60, &refs)),
            &[],
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "BadRequest")
    );
    assert!(a.body["error"]["message"].as_str().unwrap().contains("20"));
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "A", "big"),
            Some(a_set(60, &refs[..20])),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let long = "x".repeat(1025);
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "TXT", "t"),
            Some(json!({ "properties": { "TTL": 1, "TXTRecords": [{ "value": [long] }] } })),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "A", "www"),
            Some(json!({ "properties": { "ARecords": [] } })),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "TTL is required");
    // CNAME beside other data, either way round.
    let cname =
        json!({ "properties": { "TTL": 60, "CNAMERecord": { "cname": "target.example.net" } } });
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "CNAME", "big"),
            Some(cname.clone()),
            &[],
        )
        .await;
    assert_eq!((a.status, a.code()), (StatusCode::CONFLICT, "Conflict"));
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "CNAME", "alias"),
            Some(cname),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "TXT", "alias"),
            Some(json!({ "properties": { "TTL": 1, "TXTRecords": [{ "value": ["x"] }] } })),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    // SOA, NS, big, alias: one more fits, then the zone is full.
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "A", "five"),
            Some(a_set(60, &["192.0.2.1"])),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let a = c
        .call(
            Method::PUT,
            &set_path("example.com", "A", "six"),
            Some(a_set(60, &["192.0.2.1"])),
            &[],
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "QuotaExceeded")
    );
    // Records of another type in the body.
    let a = c.call(Method::PUT, &set_path("example.com", "A", "five"), Some(json!({ "properties": { "TTL": 1, "MXRecords": [{ "preference": 1, "exchange": "m" }] } })), &[]).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    emu.stop().await;
}

#[tokio::test]
async fn faults_answer_in_arm_words() {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    let c = Client::new(&emu);
    let www = set_path("example.com", "A", "www");

    emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("put_record_set")
            .status(503)
            .times(2),
    );
    for _ in 0..2 {
        let a = c
            .call(Method::PUT, &www, Some(a_set(60, &["192.0.2.1"])), &[])
            .await;
        assert_eq!(
            (a.status, a.code()),
            (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable")
        );
    }
    assert!(
        emu.record_sets("example.com")
            .iter()
            .all(|s| s.name != "www")
    );
    assert_eq!(
        c.call(Method::PUT, &www, Some(a_set(60, &["192.0.2.1"])), &[])
            .await
            .status,
        StatusCode::CREATED
    );

    // Commit, then 502: the set changed although the answer says it failed.
    emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("put_record_set")
            .zone("example.com")
            .times(1),
    );
    let a = c
        .call(Method::PUT, &www, Some(a_set(99, &["192.0.2.7"])), &[])
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_GATEWAY, "BadGateway")
    );
    assert_eq!(
        emu.record_sets("example.com")
            .iter()
            .find(|s| s.name == "www")
            .unwrap()
            .ttl,
        99
    );

    // Throttle: 429 with Retry-After.
    let mut rule = FaultRule::new(FaultAction::Throttle)
        .op("get_record_set")
        .times(1);
    rule.retry_after = Some(Duration::from_secs(7));
    emu.add_fault(rule);
    let a = c.call(Method::GET, &www, None, &[]).await;
    assert_eq!(
        (a.status, a.header("retry-after")),
        (StatusCode::TOO_MANY_REQUESTS, Some("7"))
    );

    // Timeout: the connection drops without an answer.
    emu.add_fault(
        FaultRule::new(FaultAction::Timeout)
            .op("delete_record_set")
            .delay(Duration::from_millis(50))
            .times(1),
    );
    assert!(c.send(Method::DELETE, &www, None, &[]).await.is_err());
    assert_eq!(
        emu.record_sets("example.com").len(),
        3,
        "a timeout without commit changes nothing"
    );
    let s = emu.stats();
    assert_eq!(s.faults.get("error"), Some(&2));
    assert_eq!(s.faults.get("timeout"), Some(&1));
    emu.clear_faults();
    assert_eq!(
        c.call(Method::DELETE, &www, None, &[]).await.status,
        StatusCode::OK
    );
    emu.stop().await;
}

#[tokio::test]
async fn the_control_api_makes_zones_seeds_sets_and_issues_tokens() {
    let emu = start(unthrottled()).await;
    let http = reqwest::Client::new();
    let ctl = |p: &str| format!("{}/_emulator{p}", emu.endpoint());
    let r = http
        .post(ctl("/zones"))
        .json(&json!({ "name": "corp.internal", "private": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = http
        .post(ctl("/zones/corp.internal/recordsets"))
        .json(&json!([{ "type": "A", "name": "db", "properties": { "ttl": 5, "aRecords": [{ "ipv4Address": "10.1.1.1" }] } }]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let sets: Value = http
        .get(ctl("/zones/corp.internal/recordsets"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sets.as_array().unwrap().len(), 2);
    let db = sets
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "db")
        .unwrap();
    assert_eq!(db["records"][0], "10.1.1.1");
    let t: Value = http
        .post(ctl("/tokens"))
        .json(&json!({ "lifetime": "1h" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut c = Client::new(&emu);
    c.token = t["access_token"].as_str().map(str::to_string);
    let a = c
        .call(
            Method::GET,
            &format!(
                "{}/corp.internal/A/db?api-version={PRIVATE_API}",
                zones_path(true)
            ),
            None,
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
    let r = http
        .post(ctl("/faults"))
        .json(&json!({ "action": "pending_forever" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let stats: Value = http
        .get(ctl("/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["requests"]["RecordSets_Get"], 1);
    emu.stop().await;
}
