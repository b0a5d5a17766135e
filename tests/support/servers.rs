//! Private instances of real DNS servers: PowerDNS (HTTP API, sqlite) and BIND (DNS
//! UPDATE + TSIG), each in its own temp dir, on free loopback ports, configured from
//! the templates users copy (`deploy/pdns/`, `deploy/bind/`). The one harness for the
//! driver tests (`tests/e2e/real_servers.rs`), the full-stack tests
//! (`tests/e2e/real_providers.rs`, through [`stack`]) and the provider benchmark.
//!
//! A server binary missing from PATH (and /usr/sbin) makes `start()` return `None`
//! with a printed reason, or panic when `DNSPLANE_REQUIRE_SERVERS=1` (as
//! `tests/run-all.sh` sets it), so CI can never pass by skipping.
use base64::Engine as _;
use dnsplane_applier::provider::pdns::PdnsConfig;
use dnsplane_applier::provider::rfc2136::Rfc2136Config;
use dnsplane_common::Name;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use crate::require_servers;
pub use emulated::EmulatedCloud;
pub use kind::Kind;

pub mod azure;
pub mod clouddns;
pub mod cloudflare;
pub mod emulated;
mod kind;
pub mod route53;
pub mod route53_moto;
pub mod stack;

/// How long a server may take to come up before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Finds `name` on PATH, then in the sbin directories PATH often lacks.
pub fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The binaries of one server, or the reason they are missing; panics under
/// `DNSPLANE_REQUIRE_SERVERS=1`.
fn binaries<const N: usize>(server: &str, package: &str, names: [&str; N]) -> Option<[PathBuf; N]> {
    let found = names.map(find_binary);
    if found.iter().all(Option::is_some) {
        return Some(found.map(|p| p.expect("checked")));
    }
    let missing: Vec<&str> = names
        .iter()
        .zip(&found)
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| *n)
        .collect();
    let why = format!(
        "{server} test server unavailable: {} not found on PATH or in /usr/sbin (Debian packages: {package}); run tests/run-all.sh, which installs them",
        missing.join(", ")
    );
    assert!(!require_servers(), "{why} (DNSPLANE_REQUIRE_SERVERS=1)");
    eprintln!("skipping: {why}");
    None
}

/// The `dig` binary (`$DNSPLANE_DIG` or PATH), same skip/panic rule.
pub fn dig_binary() -> Option<PathBuf> {
    crate::tool("DNSPLANE_DIG", "dig")
}

/// `dig +short +tcp @127.0.0.1 -p PORT name type`, answers sorted; panics when dig
/// itself fails.
pub fn dig_sorted(dig: &Path, port: u16, name: &str, rtype: &str) -> Vec<String> {
    let out = Command::new(dig)
        .args([
            "+short",
            "+tcp",
            "+time=3",
            "+tries=2",
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            name,
            rtype,
        ])
        .output()
        .expect("run dig");
    assert!(
        out.status.success(),
        "dig failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// `dig AXFR zone` as `name ttl type value` lines (whitespace normalised, SOA left
/// out: its serial moves with every write), sorted. `key_file`: a BIND key file to
/// sign the transfer with.
pub fn axfr(dig: &Path, port: u16, zone: &Name, key_file: Option<&Path>) -> Vec<String> {
    let mut cmd = Command::new(dig);
    cmd.args(["+noall", "+answer", "+time=5", "+tries=1", "-p"])
        .arg(port.to_string())
        .arg("@127.0.0.1");
    if let Some(k) = key_file {
        cmd.arg("-k").arg(k);
    }
    let out = cmd
        .args([zone.as_str(), "AXFR"])
        .output()
        .expect("run dig AXFR");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !text.contains("Transfer failed"),
        "dig AXFR {zone} failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // name ttl class type rdata...
            (f.len() >= 5 && f[3] != "SOA")
                .then(|| format!("{} {} {} {}", f[0], f[1], f[3], f[4..].join(" ")))
        })
        .collect();
    lines.sort();
    lines.dedup();
    assert!(!lines.is_empty(), "AXFR of {zone} returned no records");
    lines
}

/// The workspace's `deploy/` directory.
fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// A template from `deploy/` with its `${NAME}` placeholders replaced.
fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let path = deploy_dir().join(template);
    let mut text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    for (k, v) in vars {
        text = text.replace(&format!("${{{k}}}"), v);
    }
    text
}

/// A child process killed (SIGKILL) and reaped on drop; only ever this one pid.
#[derive(Debug)]
pub(crate) struct Daemon {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Daemon {
    pub(crate) fn spawn(name: &'static str, cmd: &mut Command, log: PathBuf) -> Daemon {
        let file = std::fs::File::create(&log).expect("create log");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Daemon { name, child, log }
    }

    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Polls `ready` until it holds, the process exits, or the deadline passes.
    pub(crate) fn wait_until(&mut self, mut ready: impl FnMut(&Daemon) -> bool) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited during start ({status}); log:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            if ready(self) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} not ready after {START_TIMEOUT:?}; log:\n{}",
                self.name,
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 exchange on loopback (the harness stays synchronous), with the
/// PowerDNS API's headers.
fn http(
    port: u16,
    method: &str,
    path: &str,
    key: &str,
    body: &str,
) -> std::io::Result<(u16, String)> {
    http_exchange(
        port,
        method,
        path,
        &[
            ("X-API-Key", key),
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
        ],
        body,
    )
}

/// A minimal HTTP/1.1 exchange on loopback with `headers`: the status and the body.
pub(crate) fn http_exchange(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    write!(
        s,
        "{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// A private PowerDNS Authoritative server with the HTTP API and one zone.
#[derive(Debug)]
pub struct PowerDns {
    daemon: Daemon,
    pub dir: tempfile::TempDir,
    pub zone: Name,
    pub dns_port: u16,
    pub api_port: u16,
    pub api_key_file: PathBuf,
    pub api_key: String,
    pdnsutil: PathBuf,
    /// From spawning the process to the zone being created.
    pub startup: Duration,
}

impl PowerDns {
    /// Starts `pdns_server` and creates zone `pdns.test.` through the API.
    pub fn start() -> Option<PowerDns> {
        PowerDns::start_zone("pdns.test")
    }

    /// [`start`](Self::start) with zone `zone` (the same zone at two servers: a zone
    /// served by two providers).
    pub fn start_zone(zone: &str) -> Option<PowerDns> {
        let [pdns_server, pdnsutil, sqlite3] = binaries(
            "PowerDNS",
            "pdns-server pdns-backend-sqlite3 sqlite3",
            ["pdns_server", "pdnsutil", "sqlite3"],
        )?;
        let schema = [
            "/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql",
            "/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql",
        ]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
        let Some(schema) = schema else {
            let why = "PowerDNS test server unavailable: the gsqlite3 schema is missing (Debian package pdns-backend-sqlite3); run tests/run-all.sh";
            assert!(!require_servers(), "{why} (DNSPLANE_REQUIRE_SERVERS=1)");
            eprintln!("skipping: {why}");
            return None;
        };

        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path().to_str().expect("utf-8 temp path").to_string();
        let api_key = random_secret(24);
        let api_key_file = dir.path().join("api-key");
        std::fs::write(&api_key_file, format!("{api_key}\n")).expect("write api key");
        let (dns_port, api_port) = (crate::free_port(), crate::free_port());
        let conf = render(
            "pdns/pdns.conf",
            &[
                ("DIR", &d),
                ("DNS_PORT", &dns_port.to_string()),
                ("API_PORT", &api_port.to_string()),
                ("API_KEY", &api_key),
            ],
        );
        std::fs::write(dir.path().join("pdns.conf"), conf).expect("write pdns.conf");
        let schema_sql = std::fs::read(&schema).expect("read schema");
        let mut sqlite = Command::new(&sqlite3)
            .arg(dir.path().join("pdns.sqlite3"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("run sqlite3");
        sqlite
            .stdin
            .take()
            .expect("stdin")
            .write_all(&schema_sql)
            .expect("feed schema");
        assert!(
            sqlite.wait().expect("sqlite3").success(),
            "loading the gsqlite3 schema failed"
        );

        let t0 = Instant::now();
        let mut daemon = Daemon::spawn(
            "pdns_server",
            Command::new(&pdns_server).arg(format!("--config-dir={d}")),
            dir.path().join("pdns.log"),
        );
        daemon.wait_until(|_| {
            http(api_port, "GET", "/api/v1/servers/localhost", &api_key, "")
                .is_ok_and(|(s, _)| s == 200)
        });
        let zone = Name::parse(zone).expect("zone name");
        let (status, body) = http(
            api_port,
            "POST",
            "/api/v1/servers/localhost/zones",
            &api_key,
            &format!(r#"{{"name":"{zone}","kind":"Native","nameservers":["ns1.{zone}"]}}"#),
        )
        .expect("create zone");
        assert_eq!(status, 201, "creating {zone} failed: {body}");
        let startup = t0.elapsed();
        eprintln!("PowerDNS up on DNS :{dns_port}, API :{api_port} in {startup:?}");
        Some(PowerDns {
            daemon,
            dir,
            zone,
            dns_port,
            api_port,
            api_key_file,
            api_key,
            pdnsutil,
            startup,
        })
    }

    /// The last lines of the server's own log.
    pub fn log_tail(&self) -> String {
        self.daemon.log_tail()
    }

    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.api_port)
    }

    /// The driver config for this server.
    pub fn config(&self) -> PdnsConfig {
        PdnsConfig {
            api_url: self.api_url(),
            server_id: "localhost".into(),
            api_key_file: Some(self.api_key_file.clone()),
            api_key_env: None,
            timeout: Duration::from_secs(10),
        }
    }

    /// The same config with another key.
    pub fn config_with_key(&self, key: &str) -> PdnsConfig {
        let path = self
            .dir
            .path()
            .join(format!("api-key-{}", rand::random::<u32>()));
        std::fs::write(&path, key).expect("write key");
        PdnsConfig {
            api_key_file: Some(path),
            ..self.config()
        }
    }

    /// Runs `pdnsutil` against this instance (out-of-band writes, straight into the
    /// database, as an operator would).
    pub fn pdnsutil(&self, args: &[&str]) -> Output {
        let out = Command::new(&self.pdnsutil)
            .arg(format!("--config-dir={}", self.dir.path().display()))
            .args(args)
            .output()
            .expect("run pdnsutil");
        assert!(
            out.status.success(),
            "pdnsutil {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Out-of-band writes, straight into the database with `pdnsutil add-record`, as
    /// an operator would: `(name relative to the zone, type, ttl, value)`; then
    /// `pdnsutil increase-serial`, as docs/providers.md asks of writers that bypass the
    /// API (`add-record` alone does not move the serial, so the applier's record cache
    /// would see the change only at its next drift check).
    pub fn add_records(&self, records: &[(&str, &str, u32, &str)]) {
        let zone = self.zone.as_str().trim_end_matches('.').to_string();
        for (name, rtype, ttl, value) in records {
            self.pdnsutil(&["add-record", &zone, name, rtype, &ttl.to_string(), value]);
        }
        self.pdnsutil(&["increase-serial", &zone]);
    }

    /// The zone by AXFR (PowerDNS allows it from loopback), see [`axfr`].
    pub fn axfr(&self, dig: &Path) -> Vec<String> {
        axfr(dig, self.dns_port, &self.zone, None)
    }

    /// A raw API call, bypassing the driver.
    pub fn api(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        http(self.api_port, method, path, &self.api_key, body).expect("API call")
    }
}

/// A private BIND primary for one zone, accepting TSIG-signed UPDATE and AXFR.
#[derive(Debug)]
pub struct Bind {
    daemon: Daemon,
    pub dir: tempfile::TempDir,
    pub zone: Name,
    pub port: u16,
    pub key_name: String,
    pub key_file: PathBuf,
    nsupdate: PathBuf,
    /// From spawning the process to "running".
    pub startup: Duration,
}

impl Bind {
    /// Starts `named -g` with zone `bind.test.` (SOA, NS, glue) and an hmac-sha256 key.
    pub fn start() -> Option<Bind> {
        Bind::start_zone("bind.test")
    }

    /// [`start`](Self::start) with zone `zone`.
    pub fn start_zone(zone: &str) -> Option<Bind> {
        let [named, nsupdate] = binaries("BIND", "bind9 bind9-dnsutils", ["named", "nsupdate"])?;
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path().to_str().expect("utf-8 temp path").to_string();
        let zone = Name::parse(zone).expect("zone name");
        let zone_text = zone.as_str().trim_end_matches('.').to_string();
        let key_name = "dnsplane-test".to_string();
        let key_file = dir.path().join("dnsplane.key");
        std::fs::write(&key_file, bind_key(&key_name, &random_secret(32))).expect("write key");
        let port = crate::free_port();
        let conf = render(
            "bind/named.conf",
            &[
                ("DIR", &d),
                ("DNS_PORT", &port.to_string()),
                ("KEY_FILE", key_file.to_str().expect("utf-8")),
                ("KEY_NAME", &key_name),
                ("ZONE", &zone_text),
            ],
        );
        std::fs::write(dir.path().join("named.conf"), conf).expect("write named.conf");
        let zone_db = render("bind/zone.db", &[("ZONE", &zone_text)]);
        std::fs::write(dir.path().join(format!("{zone_text}.db")), zone_db)
            .expect("write zone file");

        let t0 = Instant::now();
        let mut daemon = Daemon::spawn(
            "named",
            Command::new(&named)
                .args(["-g", "-c"])
                .arg(dir.path().join("named.conf")),
            dir.path().join("named.log"),
        );
        daemon.wait_until(|d| {
            std::fs::read_to_string(&d.log)
                .is_ok_and(|l| l.contains("\nrunning") || l.contains(" running\n"))
                && TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let startup = t0.elapsed();
        eprintln!("BIND up on :{port} in {startup:?}");
        Some(Bind {
            daemon,
            dir,
            zone,
            port,
            key_name,
            key_file,
            nsupdate,
            startup,
        })
    }

    /// The last lines of the server's own log.
    pub fn log_tail(&self) -> String {
        self.daemon.log_tail()
    }

    /// The zones of this server's account (the one it serves).
    pub fn zones(&self) -> Vec<Name> {
        vec![self.zone.clone()]
    }

    /// The driver config for this server.
    pub fn config(&self) -> Rfc2136Config {
        Rfc2136Config {
            server: format!("127.0.0.1:{}", self.port),
            tsig_key_name: Some(self.key_name.clone()),
            tsig_algorithm: None,
            tsig_secret_file: Some(self.key_file.clone()),
            timeout: Duration::from_secs(5),
            axfr: true,
        }
    }

    /// The same config with a key file holding `name` and a fresh random secret.
    pub fn config_with_key(&self, name: &str) -> Rfc2136Config {
        let path = self.dir.path().join(format!("other-{name}.key"));
        std::fs::write(&path, bind_key(name, &random_secret(32))).expect("write key");
        Rfc2136Config {
            tsig_key_name: Some(name.to_string()),
            tsig_secret_file: Some(path),
            ..self.config()
        }
    }

    /// Runs `nsupdate -k KEY` with `commands` (server and zone lines are added, and
    /// one `send`: one UPDATE message).
    pub fn nsupdate(&self, commands: &str) -> Output {
        let nsupdate = &self.nsupdate;
        let script = format!(
            "server 127.0.0.1 {}\nzone {}\n{commands}\nsend\n",
            self.port, self.zone
        );
        let mut child = Command::new(nsupdate)
            .arg("-k")
            .arg(&self.key_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run nsupdate");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(script.as_bytes())
            .expect("feed nsupdate");
        child.wait_with_output().expect("nsupdate")
    }

    /// Out-of-band writes, as another program would make them: one `nsupdate` UPDATE
    /// adding every `(name relative to the zone, type, ttl, value)`.
    pub fn add_records(&self, records: &[(&str, &str, u32, &str)]) {
        let mut cmds = String::new();
        for (name, rtype, ttl, value) in records {
            cmds.push_str(&format!(
                "update add {name}.{} {ttl} {rtype} {value}\n",
                self.zone
            ));
        }
        let out = self.nsupdate(&cmds);
        assert!(
            out.status.success(),
            "nsupdate failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The zone by AXFR (signed with the key), see [`axfr`].
    pub fn axfr(&self, dig: &Path) -> Vec<String> {
        axfr(dig, self.port, &self.zone, Some(&self.key_file))
    }
}

/// A BIND `key` clause, as `tsig-keygen -a hmac-sha256 NAME` writes it.
fn bind_key(name: &str, secret_b64: &str) -> String {
    format!("key \"{name}\" {{\n\talgorithm hmac-sha256;\n\tsecret \"{secret_b64}\";\n}};\n")
}

/// `bytes` random bytes, base64.
fn random_secret(bytes: usize) -> String {
    let raw: Vec<u8> = (0..bytes).map(|_| rand::random::<u8>()).collect();
    base64::engine::general_purpose::STANDARD.encode(raw)
}

/// The directory of the running benchmark: it drives the `dnsplane-planner` and
/// `dnsplane-applier` built beside it (`cargo build --release --bins`).
pub fn own_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .expect("the benchmark's own directory")
}

/// One started real server, whichever it is.
#[derive(Debug)]
pub enum RealServer {
    Pdns(PowerDns),
    Bind(Bind),
    Route53(route53::EmulatedRoute53),
    Route53Moto(route53_moto::MotoRoute53),
    CloudDns(clouddns::EmulatedCloudDns),
    Cloudflare(cloudflare::EmulatedCloudflare),
    Azure(azure::EmulatedAzure),
}

impl RealServer {
    /// Starts a private instance; `None` only when skipping is allowed (see module doc).
    pub fn start(kind: Kind) -> Option<RealServer> {
        match kind {
            Kind::Pdns => PowerDns::start().map(RealServer::Pdns),
            Kind::Bind => Bind::start().map(RealServer::Bind),
            Kind::Route53 => Some(RealServer::Route53(route53::EmulatedRoute53::start())),
            Kind::Route53Moto => route53_moto::MotoRoute53::start().map(RealServer::Route53Moto),
            Kind::CloudDns => Some(RealServer::CloudDns(clouddns::EmulatedCloudDns::start())),
            Kind::Cloudflare => Some(RealServer::Cloudflare(
                cloudflare::EmulatedCloudflare::start(),
            )),
            Kind::Azure => Some(RealServer::Azure(azure::EmulatedAzure::start())),
        }
    }

    /// As [`start`](Self::start), a cloud's emulator holding to every documented
    /// limit and request quota of its provider (Azure's ARM quota on; Cloudflare on
    /// `cloudflare_plan`), its zone quota raised to `records` records and their
    /// ownership marks (each cloud raises that on request): for loads measured against
    /// the quota floor.
    pub fn start_at_limits(
        kind: Kind,
        records: usize,
        cloudflare_plan: dnsplane_emulate::cloudflare::Plan,
    ) -> Option<RealServer> {
        let sets = 2 * records + 100;
        match kind {
            Kind::CloudDns => Some(RealServer::CloudDns(
                clouddns::EmulatedCloudDns::start_with_zone_quota(sets.max(50_000)),
            )),
            Kind::Cloudflare => Some(RealServer::Cloudflare(
                cloudflare::EmulatedCloudflare::start_on(cloudflare_plan),
            )),
            Kind::Azure => Some(RealServer::Azure(azure::EmulatedAzure::start_throttled(
                dnsplane_emulate::azure::ThrottleOptions::default(),
            ))),
            _ => RealServer::start(kind),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            RealServer::Pdns(_) => Kind::Pdns,
            RealServer::Bind(_) => Kind::Bind,
            RealServer::Route53(_) => Kind::Route53,
            RealServer::Route53Moto(_) => Kind::Route53Moto,
            RealServer::CloudDns(_) => Kind::CloudDns,
            RealServer::Cloudflare(_) => Kind::Cloudflare,
            RealServer::Azure(_) => Kind::Azure,
        }
    }

    pub fn zone(&self) -> &Name {
        match self {
            RealServer::Pdns(s) => &s.zone,
            RealServer::Bind(s) => &s.zone,
            RealServer::Route53(s) => &s.zone,
            RealServer::Route53Moto(s) => &s.zone,
            RealServer::CloudDns(s) => &s.zone,
            RealServer::Cloudflare(s) => &s.zone,
            RealServer::Azure(s) => &s.zone,
        }
    }

    /// Where the server answers DNS (UDP and TCP); the cloud emulators answer none.
    pub fn dns_port(&self) -> Option<u16> {
        match self {
            RealServer::Pdns(s) => Some(s.dns_port),
            RealServer::Bind(s) => Some(s.port),
            RealServer::Route53(_)
            | RealServer::Route53Moto(_)
            | RealServer::CloudDns(_)
            | RealServer::Cloudflare(_)
            | RealServer::Azure(_) => None,
        }
    }

    /// `dig +short` of `name` and `rtype`, sorted (the cloud emulators: their listing).
    pub fn dig(&self, dig: &Path, name: &str, rtype: &str) -> Vec<String> {
        match (self, self.dns_port()) {
            (RealServer::Route53(s), _) => s.dig(name, rtype),
            (RealServer::Route53Moto(s), _) => s.dig(name, rtype),
            (RealServer::CloudDns(s), _) => s.dig(name, rtype),
            (RealServer::Cloudflare(s), _) => s.dig(name, rtype),
            (RealServer::Azure(s), _) => s.dig(name, rtype),
            (_, Some(port)) => dig_sorted(dig, port, name, rtype),
            (_, None) => unreachable!("every other server answers DNS"),
        }
    }

    /// [`dig`](Self::dig) of each query `(name, type)`; the cloud emulators answer all of
    /// them from one listing.
    pub fn digs(&self, dig: &Path, queries: &[(String, &str)]) -> Vec<Vec<String>> {
        match self {
            RealServer::Route53(s) => s.digs(queries),
            RealServer::Route53Moto(s) => s.digs(queries),
            RealServer::CloudDns(s) => s.digs(queries),
            RealServer::Cloudflare(s) => s.digs(queries),
            RealServer::Azure(s) => s.digs(queries),
            _ => queries.iter().map(|(n, t)| self.dig(dig, n, t)).collect(),
        }
    }

    /// The applier's `[[accounts]]` table for this server, as a user would write it
    /// (see docs/providers.md), named `account`.
    pub fn account_toml(&self, account: &str) -> String {
        match self {
            RealServer::Pdns(s) => format!(
                "[[accounts]]\nname = \"{account}\"\ndriver = \"pdns\"\nzones = [\"{}\"]\n\
                 api_url = \"{}\"\napi_key_file = \"{}\"\n",
                s.zone,
                s.api_url(),
                s.api_key_file.display()
            ),
            // No tsig_key_name: the BIND key file names its one key.
            RealServer::Bind(s) => format!(
                "[[accounts]]\nname = \"{account}\"\ndriver = \"rfc2136\"\nzones = [\"{}\"]\n\
                 server = \"127.0.0.1:{}\"\ntsig_secret_file = \"{}\"\n",
                s.zone,
                s.port,
                s.key_file.display()
            ),
            RealServer::Route53(s) => s.account_toml(account),
            RealServer::Route53Moto(s) => s.account_toml(account),
            RealServer::CloudDns(s) => s.account_toml(account),
            RealServer::Cloudflare(s) => s.account_toml(account),
            RealServer::Azure(s) => s.account_toml(account),
        }
    }

    /// Out-of-band writes with the server's own tool (`pdnsutil` / `nsupdate`).
    pub fn add_records(&self, records: &[(&str, &str, u32, &str)]) {
        match self {
            RealServer::Pdns(s) => s.add_records(records),
            RealServer::Bind(s) => s.add_records(records),
            RealServer::Route53(s) => s.add_records(records),
            RealServer::Route53Moto(s) => s.add_records(records),
            RealServer::CloudDns(s) => s.add_records(records),
            RealServer::Cloudflare(s) => s.add_records(records),
            RealServer::Azure(s) => s.add_records(records),
        }
    }

    /// The whole zone by AXFR, SOA left out (see [`axfr`]).
    pub fn axfr(&self, dig: &Path) -> Vec<String> {
        match self {
            RealServer::Pdns(s) => s.axfr(dig),
            RealServer::Bind(s) => s.axfr(dig),
            RealServer::Route53(s) => s.axfr(),
            RealServer::Route53Moto(s) => s.axfr(),
            RealServer::CloudDns(s) => s.axfr(),
            RealServer::Cloudflare(s) => s.axfr(),
            RealServer::Azure(s) => s.axfr(),
        }
    }

    /// Arms a fault rule in the emulator; only the emulated kinds have one.
    pub fn add_fault(&self, rule: dnsplane_emulate::FaultRule) {
        match self {
            RealServer::Route53(s) => s.add_fault(rule),
            RealServer::CloudDns(s) => s.add_fault(rule),
            RealServer::Cloudflare(s) => s.add_fault(rule),
            RealServer::Azure(s) => s.add_fault(rule),
            RealServer::Pdns(_) | RealServer::Bind(_) | RealServer::Route53Moto(_) => {
                panic!(
                    "{} is no emulator: it has no fault rules",
                    self.kind().server()
                )
            }
        }
    }

    /// The emulator's throttling answers so far (Route 53's `Throttling`, Cloud DNS's
    /// 429 `rateLimitExceeded`, Cloudflare's 429), and how many of them the `throttle`
    /// fault gave (the rest are the provider's quota refusing); only the emulated kinds
    /// count them.
    pub fn throttles(&self) -> (u64, u64) {
        let (throttled, faults) = match self {
            RealServer::Route53(s) => {
                let st = s.emulator.stats();
                (st.throttled, st.faults)
            }
            RealServer::CloudDns(s) => {
                let st = s.emulator.stats();
                (st.throttled, st.faults)
            }
            RealServer::Cloudflare(s) => {
                let st = s.emulator.stats();
                (st.throttled, st.faults)
            }
            RealServer::Azure(s) => {
                let st = s.emulator.stats();
                (st.throttled, st.faults)
            }
            RealServer::Pdns(_) | RealServer::Bind(_) | RealServer::Route53Moto(_) => {
                panic!("{} is no emulator: it counts nothing", self.kind().server())
            }
        };
        (throttled, faults.get("throttle").copied().unwrap_or(0))
    }

    /// The emulator's fault `op` for the driver's writes: Route 53's
    /// ChangeResourceRecordSets and Cloud DNS's `changes.create` are `change`,
    /// Cloudflare's batch endpoint `batch`, Azure's record-set PUT `put_record_set`.
    pub fn write_op(&self) -> &'static str {
        match self {
            RealServer::Cloudflare(_) => "batch",
            RealServer::Azure(_) => "put_record_set",
            _ => "change",
        }
    }

    /// A count that moves with every write the server commits: the SOA serial, by a
    /// plain DNS query (the cloud APIs have none: the emulator's count of committed
    /// writes).
    pub fn soa_serial(&self, dig: &Path) -> u64 {
        let port = match (self, self.dns_port()) {
            (RealServer::Route53(s), _) => return s.writes(),
            (RealServer::Route53Moto(s), _) => return s.listing_hash(),
            (RealServer::CloudDns(s), _) => return s.writes(),
            (RealServer::Cloudflare(s), _) => return s.writes(),
            (RealServer::Azure(s), _) => return s.writes(),
            (_, Some(port)) => port,
            (_, None) => unreachable!("every other server answers DNS"),
        };
        let soa = dig_sorted(dig, port, self.zone().as_str(), "SOA");
        soa.first()
            .and_then(|l| l.split_whitespace().nth(2))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no SOA serial in {soa:?}"))
    }
}
