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

    /// A netbox-plugin-dns zone `name` (the plugin makes its SOA and apex NS, with a
    /// nameserver `ns.<name>`) in view `view` (made if new; `None`: the default view):
    /// its id.
    pub async fn plugin_zone(&self, name: &str, view: Option<&str>) -> u64 {
        let ns = self
            .plugin_object("nameservers", &format!("ns.{name}"))
            .await;
        let mut zone = json!({
            "name": name,
            "soa_mname": ns,
            "soa_rname": format!("hostmaster.{name}"),
            "nameservers": [ns],
        });
        if let Some(view) = view {
            zone["view"] = self.plugin_object("views", view).await;
        }
        let made = self
            .ok("POST", "/api/plugins/netbox-dns/zones/", Some(zone))
            .await;
        made["id"].as_u64().expect("zone id")
    }

    /// The custom field `dnsplane_status` on IP addresses and plugin records, made by
    /// docs/netbox.md's own command (once: tests share this NetBox).
    pub async fn status_field(&self) {
        let exists = || async {
            let found = self
                .ok(
                    "GET",
                    "/api/extras/custom-fields/?name=dnsplane_status",
                    None,
                )
                .await;
            found["count"].as_u64().unwrap_or(0) > 0
        };
        if exists().await {
            return;
        }
        let block = docs_block("curl -sf -X POST \"$NETBOX_URL/api/extras/custom-fields/\"");
        let out = self.run_docs(&block, &[]);
        // Another test may have made it meanwhile: then the command's 400 is fine.
        assert!(
            out.status.success() || exists().await,
            "docs/netbox.md's custom field command: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs a command block of docs/netbox.md with bash, against this NetBox.
    fn run_docs(&self, block: &str, env: &[(&str, &str)]) -> std::process::Output {
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", block])
            .env("NETBOX_URL", &self.url)
            .env("NETBOX_TOKEN", &self.token)
            .envs(env.iter().copied())
            .output()
            .expect("bash runs")
    }

    /// The id of the plugin's `kind` (`views`, `nameservers`) named `name`, made if new.
    async fn plugin_object(&self, kind: &str, name: &str) -> Value {
        let path = format!("/api/plugins/netbox-dns/{kind}/");
        let (status, made) = self.call("POST", &path, Some(json!({"name": name}))).await;
        if status == 201 {
            return made["id"].clone();
        }
        let found = self.ok("GET", &format!("{path}?name={name}"), None).await;
        let id = found["results"][0]["id"].clone();
        assert!(id.is_u64(), "{kind} {name}: {status}: {made}");
        id
    }

    /// Plugin records `(name, type, value)` in zone `zone`, made in one request: their
    /// ids, in order.
    pub async fn plugin_records(&self, zone: u64, records: &[(&str, &str, &str)]) -> Vec<u64> {
        let body: Vec<Value> = records
            .iter()
            .map(|(name, rtype, value)| {
                json!({"zone": zone, "name": name, "type": rtype, "value": value})
            })
            .collect();
        let made = self
            .ok(
                "POST",
                "/api/plugins/netbox-dns/records/",
                Some(Value::Array(body)),
            )
            .await;
        made.as_array()
            .expect("a list")
            .iter()
            .map(|r| r["id"].as_u64().expect("record id"))
            .collect()
    }

    /// The token, in a file `netbox-token` under `dir` (a source's `token_file`).
    pub fn token_file(&self, dir: &std::path::Path) -> PathBuf {
        let path = dir.join("netbox-token");
        std::fs::write(&path, format!("{}\n", self.token)).expect("write the token file");
        path
    }

    /// What a planner's NetBox source needs to hear from this NetBox, written under
    /// `dir`: the token file, and a webhook named `name` (see [`hook`](Self::hook)) to a
    /// free loopback port, with its secret in a file.
    pub async fn planner_hook(&self, dir: &std::path::Path, name: &str) -> PlannerHook {
        let secret = format!("{name}-secret");
        let secret_file = dir.join("netbox-webhook-secret");
        std::fs::write(&secret_file, &secret).expect("write the secret file");
        let port = crate::free_port();
        let hook = self
            .hook(name, &format!("http://127.0.0.1:{port}/netbox"), &secret)
            .await;
        PlannerHook {
            token_file: self.token_file(dir),
            secret_file,
            port,
            hook,
        }
    }

    /// A webhook to `url` signed with `secret`, fired by an event rule on every IP
    /// address, plugin record and plugin zone created, updated or deleted; removed by
    /// [`Hook::remove`]. Made by docs/netbox.md's own commands, with this test's name,
    /// URL and no TLS (what a reader changes too).
    pub async fn hook(&self, name: &str, url: &str, secret: &str) -> Hook {
        let block = docs_block("HOOK=$(curl -sf -X POST \"$NETBOX_URL/api/extras/webhooks/\"");
        let script = block
            .replace(
                "\"name\": \"dnsplane\"",
                &format!("\"name\": {}", json!(name)),
            )
            .replace("http://dnsplane-planner:8090/netbox", url)
            .replace("\"ssl_verification\": true", "\"ssl_verification\": false")
            + "\necho\necho \"HOOK=$HOOK\"\n";
        let out = self.run_docs(&script, &[("SECRET", secret)]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "docs/netbox.md's webhook commands: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rule: Value = stdout
            .lines()
            .find(|l| l.starts_with('{'))
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("the event rule in: {stdout}"));
        let webhook = stdout
            .lines()
            .find_map(|l| l.strip_prefix("HOOK="))
            .and_then(|id| id.trim().parse().ok())
            .unwrap_or_else(|| panic!("the webhook's id in: {stdout}"));
        Hook {
            webhook,
            rule: rule["id"].as_u64().expect("event rule id"),
        }
    }
}

/// The ```sh block of docs/netbox.md whose first line starts with `first`.
fn docs_block(first: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/netbox.md");
    let text = std::fs::read_to_string(path).expect("docs/netbox.md");
    text.split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
        .find(|b| b.starts_with(first))
        .unwrap_or_else(|| panic!("docs/netbox.md has no block starting {first:?}"))
        .to_string()
}

/// A planner's end of NetBox's webhook ([`NetBox::planner_hook`]).
#[derive(Debug)]
pub struct PlannerHook {
    pub token_file: PathBuf,
    pub secret_file: PathBuf,
    /// Where the planner's `webhook_listen` must be (`127.0.0.1:<port>`).
    pub port: u16,
    pub hook: Hook,
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
