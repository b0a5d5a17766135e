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

/// An unthrottled emulator with the public zone `example.com`, and a client of it.
async fn with_example_com() -> (AzureEmulator, Client) {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    let c = Client::new(&emu);
    (emu, c)
}

/// The TTL of the record set `name` of `zone` as the emulator holds it.
fn ttl_of(emu: &AzureEmulator, zone: &str, name: &str) -> u64 {
    let sets = emu.record_sets(zone);
    sets.iter().find(|s| s.name == name).unwrap().ttl
}

/// No quota, so that tests that are not about it never meet it.
fn unthrottled() -> AzureOptions {
    let mut options = AzureOptions::default();
    let quota = &mut options.throttle;
    quota.reads_per_second = 0.0;
    quota.writes_per_second = 0.0;
    quota.deletes_per_second = 0.0;
    options
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

    async fn get(&self, path: &str) -> Answer {
        self.call(Method::GET, path, None, &[]).await
    }

    /// `GET` of `path` under the private zones, at their api-version.
    async fn get_private(&self, path: &str) -> Answer {
        let url = format!("{}/{path}?api-version={PRIVATE_API}", zones_path(true));
        self.get(&url).await
    }

    async fn delete(&self, path: &str) -> Answer {
        self.call(Method::DELETE, path, None, &[]).await
    }

    async fn put(&self, path: &str, body: Value) -> Answer {
        self.call(Method::PUT, path, Some(body), &[]).await
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

mod access;
mod examples;
mod lists;
mod records;
