//! The PowerDNS floor: what the same RRSets cost written by hand, `curl -X PATCH`
//! against the same server into a fresh zone. One PATCH when the body fits PowerDNS's
//! stock `webserver-max-bodysize` (2 MB); otherwise the fewest PATCHes that fit,
//! timed one after the other and summed (the row says how many).
use dnsplane_e2e::servers::PowerDns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// PowerDNS's default `webserver-max-bodysize`, 2 MB.
const BODY_LIMIT: usize = 2 << 20;

/// One RRSet as the PowerDNS API lists it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct RRSet {
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    pub ttl: u32,
    pub records: Vec<Content>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Content {
    pub content: String,
    #[serde(default)]
    pub disabled: bool,
}

#[derive(Deserialize)]
struct ZoneJson {
    rrsets: Vec<RRSet>,
}

/// A zone's RRSets by (name, type), SOA and apex NS left out (the server's own).
pub type Zone = BTreeMap<(String, String), RRSet>;

/// A timed hand-written write.
#[derive(Clone, Copy, Debug, Default)]
pub struct Floor {
    pub time: Duration,
    /// Requests it took (PATCHes, or one GET).
    pub requests: usize,
}

impl Floor {
    /// `0.42 s (1 PATCH)` / `(3 PATCHes ≤ 2 MB)`.
    pub fn describe(&self, what: &str) -> String {
        let t = crate::stats::fmt(self.time);
        match self.requests {
            0 => format!("{t} (nothing to write)"),
            1 => format!("{t} (1 {what})"),
            n => format!("{t} ({n} {what}es ≤ 2 MB, summed)"),
        }
    }
}

/// Talks to one PowerDNS with curl.
pub struct Curl {
    api: String,
    key: String,
    dir: PathBuf,
    fresh_zones: usize,
}

impl Curl {
    pub fn new(pdns: &PowerDns) -> Curl {
        let key = std::fs::read_to_string(&pdns.api_key_file).expect("read the API key");
        Curl {
            api: format!("{}/api/v1/servers/localhost/zones", pdns.api_url()),
            key: key.trim().to_string(),
            dir: pdns.dir.path().to_path_buf(),
            fresh_zones: 0,
        }
    }

    fn curl(&self, args: &[&str]) -> (String, Duration) {
        let header = format!("X-API-Key: {}", self.key);
        let t0 = Instant::now();
        let out = Command::new("curl")
            .args([
                "-sS",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-H",
                &header,
            ])
            .args(args)
            .output()
            .expect("run curl (Debian package curl)");
        let time = t0.elapsed();
        let code = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "curl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (code, time)
    }

    /// Sets the zone's `API-RECTIFY` (whether PowerDNS rectifies the whole zone after
    /// each API change; `default-api-rectify=yes` when unset).
    pub fn set_api_rectify(&self, zone: &str, on: bool) {
        let url = format!("{}/{zone}", self.api);
        let body = format!(r#"{{"api_rectify":{on}}}"#);
        let (code, _) = self.curl(&["-X", "PUT", "--data-binary", &body, &url]);
        assert_eq!(code, "204", "PUT {url} {body}");
    }

    /// `GET` the whole zone (timed: a fresh read's floor) and its RRSets.
    pub fn read(&self, zone: &str) -> (Zone, Floor) {
        let file = self.dir.join("zone.json");
        let url = format!("{}/{zone}", self.api);
        let header = format!("X-API-Key: {}", self.key);
        let t0 = Instant::now();
        let out = Command::new("curl")
            .args(["-sS", "-f", "-H", &header, "-o"])
            .arg(&file)
            .arg(&url)
            .output()
            .expect("run curl");
        let time = t0.elapsed();
        assert!(
            out.status.success(),
            "GET {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read(&file).expect("read zone.json");
        let z: ZoneJson = serde_json::from_slice(&text).expect("the zone as JSON");
        let rrsets = z
            .rrsets
            .into_iter()
            .filter(|r| r.rtype != "SOA" && !(r.rtype == "NS" && r.name == zone))
            .map(|r| ((r.name.clone(), r.rtype.clone()), r))
            .collect();
        (rrsets, Floor { time, requests: 1 })
    }

    /// Creates an empty zone `floorN.test.` (not timed).
    pub fn fresh_zone(&mut self) -> String {
        self.fresh_zones += 1;
        let zone = format!("floor{}.test.", self.fresh_zones);
        let body = format!(r#"{{"name":"{zone}","kind":"Native","nameservers":["ns1.{zone}"]}}"#);
        let (code, _) = self.curl(&["-X", "POST", "--data-binary", &body, &self.api]);
        assert_eq!(code, "201", "creating {zone}");
        zone
    }

    /// Writes into `to` what turns `before` into `after` (both read from zone `from`),
    /// renamed into `to`: REPLACE of every new or changed RRSet, DELETE of every gone
    /// one. Only the PATCH requests are timed.
    pub fn patch(&self, from: &str, to: &str, before: &Zone, after: &Zone) -> Floor {
        let rename = |n: &str| format!("{}{to}", n.strip_suffix(from).unwrap_or(n));
        let mut changes: Vec<String> = Vec::new();
        for (k, r) in after {
            if before.get(k) != Some(r) {
                let mut r = r.clone();
                r.name = rename(&r.name);
                let mut v = serde_json::to_value(&r).expect("json");
                v["changetype"] = "REPLACE".into();
                changes.push(v.to_string());
            }
        }
        for (name, rtype) in before.keys().filter(|k| !after.contains_key(*k)) {
            changes.push(
                serde_json::json!({"name": rename(name), "type": rtype, "changetype": "DELETE"})
                    .to_string(),
            );
        }
        let mut floor = Floor::default();
        for (i, body) in bodies(&changes).iter().enumerate() {
            let file = self.dir.join(format!("patch-{i}.json"));
            std::fs::write(&file, body).expect("write the PATCH body");
            let time = self.patch_body(to, &format!("@{}", file.display()));
            floor.time += time;
            floor.requests += 1;
        }
        floor
    }
}

impl Curl {
    /// One timed PATCH of `zone` with `data` (curl's `--data-binary`: the body, or
    /// `@file`); it must be answered 204.
    fn patch_body(&self, zone: &str, data: &str) -> Duration {
        let (code, time) = self.curl(&[
            "-X",
            "PATCH",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            data,
            &format!("{}/{zone}", self.api),
        ]);
        assert_eq!(code, "204", "PATCH {zone} ({} bytes of data)", data.len());
        time
    }

    /// The least a one-record change costs this server: `samples` PATCHes, each
    /// REPLACEing one A RRSet (`name`, which nobody desires) with a new value in `zone`
    /// as it stands, timed one by one; their median. PowerDNS rectifies the whole zone
    /// on every PATCH, so this grows with the zone whoever writes.
    pub fn one_record(&self, zone: &str, name: &str, samples: usize) -> Duration {
        let mut times: Vec<Duration> = (0..samples)
            .map(|i| {
                let body = serde_json::json!({"rrsets": [{
                    "name": name, "type": "A", "ttl": 300, "changetype": "REPLACE",
                    "records": [{"content": format!("198.51.100.{}", i % 250 + 1), "disabled": false}],
                }]})
                .to_string();
                self.patch_body(zone, &body)
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    }
}

/// `{"rrsets":[…]}` bodies, each within [`BODY_LIMIT`], as few as greedy packing gives.
fn bodies(changes: &[String]) -> Vec<String> {
    const HEAD: &str = r#"{"rrsets":["#;
    let mut out = Vec::new();
    let mut cur = String::from(HEAD);
    for c in changes {
        if cur.len() > HEAD.len() && cur.len() + c.len() + 3 > BODY_LIMIT {
            cur.push_str("]}");
            out.push(std::mem::replace(&mut cur, String::from(HEAD)));
        }
        if cur.len() > HEAD.len() {
            cur.push(',');
        }
        cur.push_str(c);
    }
    if cur.len() > HEAD.len() {
        cur.push_str("]}");
        out.push(cur);
    }
    out
}

/// Empty zone, for a create's "before".
pub fn empty() -> Zone {
    Zone::new()
}
