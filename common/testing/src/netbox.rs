//! The real NetBox that `tests/run-all.sh` starts (`tests/tools/netbox.sh`): its REST
//! API with the admin's token, seeding through NetBox's own ORM (its REST API creates
//! about ten addresses a second under `runserver`), and webhooks with event rules
//! pointed at a planner.
//!
//! One NetBox serves every test of a run: each test tags what it creates with a tag
//! of its own and reads only that tag.
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;

/// A NetBox to test against.
#[derive(Debug, Clone)]
pub struct NetBox {
    pub url: String,
    /// The admin's v2 token, `nbt_<key>.<token>`.
    pub token: String,
    /// Runs NetBox's management commands for this instance.
    manage: PathBuf,
}

impl NetBox {
    /// The NetBox of `DNSPLANE_NETBOX_URL`, `DNSPLANE_NETBOX_TOKEN` and
    /// `DNSPLANE_NETBOX_MANAGE`; `None` (skip) without them, a panic under
    /// `DNSPLANE_REQUIRE_SERVERS=1`.
    pub fn find() -> Option<NetBox> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match (
            var("DNSPLANE_NETBOX_URL"),
            var("DNSPLANE_NETBOX_TOKEN"),
            var("DNSPLANE_NETBOX_MANAGE"),
        ) {
            (Some(url), Some(token), Some(manage)) => Some(NetBox {
                url,
                token,
                manage: manage.into(),
            }),
            _ => {
                assert!(
                    !crate::require_servers(),
                    "a NetBox is required (DNSPLANE_REQUIRE_SERVERS=1): set DNSPLANE_NETBOX_URL, DNSPLANE_NETBOX_TOKEN and DNSPLANE_NETBOX_MANAGE (tests/run-all.sh does, with tests/tools/netbox.sh)"
                );
                eprintln!("skipping: no NetBox (tests/run-all.sh starts one)");
                None
            }
        }
    }

    /// `method path` with `body`: NetBox's status and JSON answer (`Null` if none).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("an HTTP method");
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Accept", "application/json");
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("NetBox answers");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// As [`call`](Self::call), panicking unless NetBox answers 2xx.
    pub async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.call(method, path, body).await;
        assert!(
            (200..300).contains(&status),
            "NetBox {method} {path}: {status}: {answer}"
        );
        answer
    }

    /// Creates the tag `slug` (once).
    pub async fn tag(&self, slug: &str) {
        let (status, answer) = self
            .call(
                "POST",
                "/api/extras/tags/",
                Some(json!({"name": slug, "slug": slug})),
            )
            .await;
        assert!(
            status == 201 || answer.to_string().contains("already exists"),
            "tag {slug}: {status}: {answer}"
        );
    }

    /// Creates `count` active IP addresses through NetBox's ORM (no webhooks fire):
    /// address `i` (from 0) is `first` + `i` (IPv4, as `/32`) named
    /// `name.replace("{i}", i)`, tagged `tag`.
    pub fn seed(&self, count: usize, first: std::net::Ipv4Addr, name: &str, tag: &str) {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/tools/netbox-seed.py"
        );
        let out = Command::new(&self.manage)
            .args(["shell", "--no-imports", "-c"])
            .arg(std::fs::read_to_string(script).expect("tests/tools/netbox-seed.py"))
            .env("SEED_COUNT", count.to_string())
            .env("SEED_FIRST", first.to_string())
            .env("SEED_NAME", name)
            .env("SEED_TAG", tag)
            .output()
            .expect("NetBox's manage command runs");
        assert!(
            out.status.success(),
            "seeding NetBox: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The IP addresses tagged `tag`, by id: (id, address, dns_name).
    pub async fn addresses(&self, tag: &str) -> Vec<(u64, String, String)> {
        let mut all = Vec::new();
        let mut path = format!("/api/ipam/ip-addresses/?tag={tag}&ordering=id&limit=1000");
        loop {
            let page = self.ok("GET", &path, None).await;
            for a in page["results"].as_array().into_iter().flatten() {
                all.push((
                    a["id"].as_u64().unwrap_or_default(),
                    a["address"].as_str().unwrap_or_default().to_string(),
                    a["dns_name"].as_str().unwrap_or_default().to_string(),
                ));
            }
            match page["next"].as_str() {
                Some(next) => path = next.trim_start_matches(&self.url).to_string(),
                None => return all,
            }
        }
    }

    /// A webhook to `url` signed with `secret`, fired by an event rule on every IP
    /// address created, updated or deleted; removed by [`Hook::remove`].
    pub async fn hook(&self, name: &str, url: &str, secret: &str) -> Hook {
        let webhook = self
            .ok(
                "POST",
                "/api/extras/webhooks/",
                Some(json!({
                    "name": name,
                    "payload_url": url,
                    "http_method": "POST",
                    "http_content_type": "application/json",
                    "secret": secret,
                    "ssl_verification": false,
                })),
            )
            .await;
        let rule = self
            .ok(
                "POST",
                "/api/extras/event-rules/",
                Some(json!({
                    "name": name,
                    "object_types": ["ipam.ipaddress"],
                    "event_types": ["object_created", "object_updated", "object_deleted"],
                    "action_type": "webhook",
                    "action_object_type": "extras.webhook",
                    "action_object_id": webhook["id"],
                    "enabled": true,
                })),
            )
            .await;
        Hook {
            webhook: webhook["id"].as_u64().expect("webhook id"),
            rule: rule["id"].as_u64().expect("event rule id"),
        }
    }
}

/// A webhook and its event rule in NetBox.
#[derive(Debug)]
pub struct Hook {
    pub webhook: u64,
    pub rule: u64,
}

impl Hook {
    pub async fn remove(self, nb: &NetBox) {
        nb.call(
            "DELETE",
            &format!("/api/extras/event-rules/{}/", self.rule),
            None,
        )
        .await;
        nb.call(
            "DELETE",
            &format!("/api/extras/webhooks/{}/", self.webhook),
            None,
        )
        .await;
    }
}
