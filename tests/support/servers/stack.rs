//! The full stack in front of a real server: `dnsplane-applier` (with a `pdns` or
//! `rfc2136` account, configured as docs/providers.md tells users) and
//! `dnsplane-planner` as separate processes on loopback, the desired state pushed
//! through the planner's gRPC API. Used by `tests/e2e/real_providers.rs` and by the
//! provider benchmark (`tests/bench/providers.rs`), which run the same [`workload`].
use super::{Kind, RealServer};
use crate::{Proc, free_port, tool, wait_for};
use dnsplane_common::pb;
use dnsplane_common::pb::applier_client::ApplierClient;
use dnsplane_common::pb::planner_client::PlannerClient;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::Channel;

/// Safety net for one sync of the whole zone; not a performance claim.
const SYNC_TIMEOUT: Duration = Duration::from_secs(300);

/// The planner's owner id in every stack.
pub const OWNER_ID: &str = "e2e";

/// How a stack is configured.
#[derive(Clone, Debug)]
pub struct Options {
    /// The planner's `batch.max_changes` (with `max_bytes` 4 MiB); 0: no `[batch]`
    /// table, the planner's defaults.
    pub batch_max_changes: usize,
    /// The applier's `cache_ttl`. Long by default: a listing stays cached until a
    /// write through the applier drops it, which the conflict burst relies on.
    pub cache_ttl: String,
    /// Appended to the account's `[[accounts]]` table in applier.toml (e.g.
    /// `[[accounts.faults]]` tables).
    pub account_extra: String,
    /// Directory holding `dnsplane-planner` and `dnsplane-applier`.
    pub bin_dir: PathBuf,
    /// `DNSPLANE_LOG` of both processes.
    pub log_filter: String,
    /// The planner's `sync.min_interval`: how long after a push it syncs by itself.
    pub min_interval: String,
    /// Appended to planner.toml after the zone (e.g. `[[sources]]` or `[safety]`
    /// tables); relative paths in it are relative to the stack's directory.
    pub planner_extra: String,
    /// Give both processes an admin HTTP port (`/healthz`, `/metrics`) on a free
    /// loopback port ([`RealStack::planner_admin_port`]); off by default (the planner
    /// runs without one, the applier on its default address).
    pub admin_ports: bool,
    /// The body of planner.toml's `[sync]` table instead of the stack's short retry
    /// clocks (`Some("")`: the planner's defaults).
    pub sync_table: Option<String>,
    /// The PowerDNS account's `api_url` instead of the server's own (a proxy in front
    /// of it, e.g. [`crate::quota_proxy::QuotaProxy`]).
    pub api_url: Option<String>,
    /// More zones the account serves, beside the server's own (a reverse zone created
    /// at the server by the test); their `[[zones]]` go in `planner_extra`.
    pub extra_zones: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            batch_max_changes: 1000,
            cache_ttl: "10m".into(),
            account_extra: String::new(),
            bin_dir: crate::bin_dir(),
            log_filter: "info".into(),
            min_interval: "100ms".into(),
            planner_extra: String::new(),
            admin_ports: false,
            sync_table: None,
            api_url: None,
            extra_zones: Vec::new(),
        }
    }
}

/// The external tools a stack is checked with.
#[derive(Clone, Debug)]
pub struct Tools {
    pub dig: PathBuf,
    pub grpcurl: PathBuf,
}

impl Tools {
    /// `None`: skip (only without `DNSPLANE_REQUIRE_SERVERS=1`, see [`crate::tool`]).
    pub fn find() -> Option<Tools> {
        let dig = tool("DNSPLANE_DIG", "dig");
        let grpcurl = tool("DNSPLANE_GRPCURL", "grpcurl");
        Some(Tools {
            dig: dig?,
            grpcurl: grpcurl?,
        })
    }
}

/// Planner + applier processes in front of one real server.
#[derive(Debug)]
pub struct RealStack {
    pub server: RealServer,
    pub tools: Tools,
    pub dir: tempfile::TempDir,
    pub planner_port: u16,
    pub applier_port: u16,
    /// The applier account (and planner zone account) name: `pdns` or `bind`.
    pub account: String,
    /// The planner's and the applier's admin HTTP ports, with [`Options::admin_ports`].
    pub planner_admin_port: Option<u16>,
    pub applier_admin_port: Option<u16>,
    applier: Proc,
    planner: Proc,
    opts: Options,
    rt: tokio::runtime::Runtime,
}

/// A counter snapshot of the stack's applier account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Provider calls by class ("success", "conflict", ...), reads and writes.
    pub calls: BTreeMap<String, u64>,
    /// Per-record outcomes ("APPLIED", "CONFLICT", ...).
    pub outcomes: BTreeMap<String, u64>,
    /// Batches the applier executed: every provider write happens inside one.
    pub batches: u64,
}

impl Counters {
    pub fn total_calls(&self) -> u64 {
        self.calls.values().sum()
    }

    /// `self - before`, per key (keys that did not move are left out).
    pub fn since(&self, before: &Counters) -> Counters {
        let diff = |now: &BTreeMap<String, u64>, then: &BTreeMap<String, u64>| {
            now.iter()
                .filter_map(|(k, v)| {
                    let d = v - then.get(k).copied().unwrap_or(0);
                    (d > 0).then(|| (k.clone(), d))
                })
                .collect()
        };
        Counters {
            calls: diff(&self.calls, &before.calls),
            outcomes: diff(&self.outcomes, &before.outcomes),
            batches: self.batches - before.batches,
        }
    }

    pub fn outcome(&self, name: &str) -> u64 {
        self.outcomes.get(name).copied().unwrap_or(0)
    }

    pub fn calls_of(&self, class: &str) -> u64 {
        self.calls.get(class).copied().unwrap_or(0)
    }
}

impl RealStack {
    /// Writes both configs and starts the applier, then the planner; returns once
    /// both report SERVING.
    pub fn start(server: RealServer, tools: Tools, opts: Options) -> RealStack {
        let dir = tempfile::tempdir().expect("temp dir");
        let (planner_port, applier_port) = (free_port(), free_port());
        let account = match server.kind() {
            Kind::Pdns => "pdns",
            Kind::Bind => "bind",
            Kind::Route53 | Kind::Route53Moto => "route53",
            Kind::CloudDns => "clouddns",
            Kind::Cloudflare => "cloudflare",
            Kind::Azure => "azure",
        }
        .to_string();
        let zone = server.zone().clone();
        let mut account_toml = server.account_toml(&account);
        if let (Some(url), RealServer::Pdns(p)) = (&opts.api_url, &server) {
            account_toml = account_toml.replace(
                &format!("api_url = \"{}\"", p.api_url()),
                &format!("api_url = \"{url}\""),
            );
        }
        if !opts.extra_zones.is_empty() {
            let all: Vec<String> = std::iter::once(zone.to_string())
                .chain(opts.extra_zones.iter().cloned())
                .map(|z| format!("\"{z}\""))
                .collect();
            account_toml = account_toml.replacen(
                &format!("zones = [\"{zone}\"]"),
                &format!("zones = [{}]", all.join(", ")),
                1,
            );
        }
        std::fs::write(
            dir.path().join("applier.toml"),
            format!(
                "cache_ttl = \"{}\"\n\n{}{}\n",
                opts.cache_ttl, account_toml, opts.account_extra
            ),
        )
        .expect("write applier.toml");
        std::fs::write(
            dir.path().join("planner.toml"),
            format!(
                "owner_id = \"{OWNER_ID}\"\napplier = \"http://127.0.0.1:{applier_port}\"\n\n\
                 [sync]\n{}\n\
                 {}\
                 [[zones]]\nname = \"{zone}\"\naccount = \"{account}\"\nconflict = \"report\"\n\n{}\n",
                opts.sync_table.clone().unwrap_or_else(|| format!(
                    "interval = \"10m\"\nmin_interval = \"{}\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n",
                    opts.min_interval
                )),
                // 0: the planner's own batch defaults.
                if opts.batch_max_changes == 0 {
                    String::new()
                } else {
                    format!(
                        "[batch]\nmax_changes = {}\nmax_bytes = 4194304\n\n",
                        opts.batch_max_changes
                    )
                },
                opts.planner_extra
            ),
        )
        .expect("write planner.toml");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let admin = |on: bool| on.then(free_port);
        let (planner_admin_port, applier_admin_port) =
            (admin(opts.admin_ports), admin(opts.admin_ports));
        let spawn = |name: &str, port: u16, admin: Option<u16>| {
            spawn_proc(dir.path(), &opts, name, port, admin)
        };
        let applier = spawn("applier", applier_port, applier_admin_port);
        wait_serving(&rt, applier_port, "dnsplane.v1.Applier", &applier);
        let planner = spawn("planner", planner_port, planner_admin_port);
        wait_serving(&rt, planner_port, "dnsplane.v1.Planner", &planner);
        RealStack {
            server,
            tools,
            dir,
            planner_port,
            applier_port,
            account,
            planner_admin_port,
            applier_admin_port,
            applier,
            planner,
            opts,
            rt,
        }
    }

    /// Kills the planner (`kill -9`: nothing is flushed or drained), runs `meanwhile`
    /// while it is down, and starts it again with the same config; returns once it
    /// serves.
    pub fn restart_planner_with(&mut self, meanwhile: impl FnOnce()) {
        self.planner.kill();
        meanwhile();
        self.planner = spawn_proc(
            self.dir.path(),
            &self.opts,
            "planner",
            self.planner_port,
            self.planner_admin_port,
        );
        wait_serving(
            &self.rt,
            self.planner_port,
            "dnsplane.v1.Planner",
            &self.planner,
        );
    }

    /// Kills the applier (`kill -9`: nothing is flushed or drained), runs `meanwhile`
    /// while it is down, and starts it again with the same config; returns once it
    /// serves.
    pub fn restart_applier_with(&mut self, meanwhile: impl FnOnce()) {
        self.applier.kill();
        meanwhile();
        self.applier = spawn_proc(
            self.dir.path(),
            &self.opts,
            "applier",
            self.applier_port,
            self.applier_admin_port,
        );
        wait_serving(
            &self.rt,
            self.applier_port,
            "dnsplane.v1.Applier",
            &self.applier,
        );
    }

    /// `dnsplane <args> --addr <planner>`: (exit code, stdout and stderr).
    pub fn cli(&self, args: &[&str]) -> (i32, String) {
        let out = std::process::Command::new(dnsplane_testing::binary("dnsplane"))
            .args(args)
            .args(["--addr", &self.planner_addr()])
            .output()
            .expect("run dnsplane");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    /// The planner's gRPC address, as the CLI's `--addr` takes it.
    pub fn planner_addr(&self) -> String {
        format!("http://127.0.0.1:{}", self.planner_port)
    }

    pub fn zone(&self) -> &dnsplane_common::Name {
        self.server.zone()
    }

    /// The planner process's id (for its `/proc/<pid>/status`).
    pub fn planner_pid(&self) -> u32 {
        self.planner.child.id()
    }

    /// The planner's whole log so far.
    pub fn planner_log(&self) -> String {
        self.planner.log_text()
    }

    /// The planner's exit status once it has exited (a crash, an abort), else `None`.
    pub fn planner_exit(&mut self) -> Option<std::process::ExitStatus> {
        self.planner.child.try_wait().ok().flatten()
    }

    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    fn planner_client(&self) -> PlannerClient<Channel> {
        let addr = format!("http://127.0.0.1:{}", self.planner_port);
        self.block_on(PlannerClient::connect(addr))
            .expect("connect to the planner")
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20)
    }

    fn applier_client(&self) -> ApplierClient<Channel> {
        let addr = format!("http://127.0.0.1:{}", self.applier_port);
        self.block_on(ApplierClient::connect(addr))
            .expect("connect to the applier")
    }

    /// Replaces the desired state of push source `bench` (gRPC `PutDesired`).
    pub fn push(&self, records: Vec<pb::DesiredRecord>) -> u32 {
        let mut c = self.planner_client();
        let resp = self.block_on(c.put_desired(pb::PutDesiredRequest {
            source: "bench".into(),
            records,
        }));
        resp.unwrap_or_else(|e| panic!("PutDesired: {e}; logs:\n{}", self.logs()))
            .into_inner()
            .accepted
    }

    /// One `Sync` of the zone (`fresh`: read the provider, not the applier's cache),
    /// followed to its end; returns the last progress message ("done" or "failed").
    pub fn sync(&self, fresh: bool) -> pb::SyncProgress {
        self.sync_following(fresh, SYNC_TIMEOUT, |_| {})
    }

    /// [`RealStack::sync`] with its own safety net, handing every progress message to
    /// `on_progress` as it arrives (the benchmarks time the batches by it).
    pub fn sync_following(
        &self,
        fresh: bool,
        timeout: Duration,
        mut on_progress: impl FnMut(&pb::SyncProgress),
    ) -> pb::SyncProgress {
        let mut c = self.planner_client();
        let zone = self.zone().to_string();
        let last = self.block_on(async {
            tokio::time::timeout(timeout, async {
                let mut stream = c
                    .sync(pb::SyncRequest {
                        zones: vec![zone.clone()],
                        fresh,
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                let mut last = None;
                while let Some(p) = stream.message().await? {
                    on_progress(&p);
                    let end = matches!(p.phase.as_str(), "done" | "failed");
                    last = Some(p);
                    if end {
                        break;
                    }
                }
                Ok::<_, tonic::Status>(last)
            })
            .await
        });
        match last {
            Ok(Ok(Some(p))) => p,
            Ok(Ok(None)) => panic!("Sync ended without progress; logs:\n{}", self.logs()),
            Ok(Err(e)) => panic!("Sync: {e}; logs:\n{}", self.logs()),
            Err(_) => panic!("Sync not done after {timeout:?}; logs:\n{}", self.logs()),
        }
    }

    /// The applier's counters for this stack's account (gRPC `GetStatus`).
    pub fn counters(&self) -> Counters {
        let mut c = self.applier_client();
        let status = self
            .block_on(c.get_status(pb::GetApplierStatusRequest {}))
            .expect("applier GetStatus")
            .into_inner();
        let a = status
            .accounts
            .into_iter()
            .find(|a| a.name == self.account)
            .expect("the account in the applier status");
        Counters {
            calls: a.calls_by_class.into_iter().collect(),
            outcomes: a.outcomes.into_iter().collect(),
            batches: a.batches,
        }
    }

    /// The applier's `GetStatus` through the real `grpcurl`, as JSON.
    pub fn applier_status_grpcurl(&self) -> serde_json::Value {
        let addr = format!("127.0.0.1:{}", self.applier_port);
        let (ok, out) = crate::grpcurl(
            &self.tools.grpcurl,
            &[&addr, "dnsplane.v1.Applier/GetStatus"],
        );
        assert!(ok, "grpcurl GetStatus failed: {out}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// The planner's whole `GetStatus`.
    pub fn planner_status(&self) -> pb::PlannerStatus {
        let mut c = self.planner_client();
        self.block_on(c.get_status(pb::GetStatusRequest {}))
            .expect("planner GetStatus")
            .into_inner()
    }

    /// The planner's status of this stack's zone, and the overall level.
    pub fn zone_status(&self) -> (pb::ZoneStatus, String) {
        let s = self.planner_status();
        let zone = self.zone().to_string();
        let z = s
            .zones
            .into_iter()
            .find(|z| z.zone == zone)
            .expect("the zone in the planner status");
        (z, s.level)
    }

    /// Waits (30 s at most) until the records by state are exactly `want`; panics
    /// with what it last saw and the logs.
    pub fn assert_states(&self, want: &[(&str, usize)]) {
        let want: BTreeMap<String, u32> = want
            .iter()
            .map(|(k, n)| (k.to_string(), *n as u32))
            .collect();
        let mut last = BTreeMap::new();
        let ok = crate::wait_for(Duration::from_secs(30), || {
            last = self.states_count();
            (last == want).then_some(())
        });
        assert!(
            ok.is_some(),
            "records by state: wanted {want:?}, last saw {last:?}; logs:\n{}",
            self.logs()
        );
    }

    /// Records by state name ("converged", "conflict", ...), zero counts left out.
    pub fn states_count(&self) -> BTreeMap<String, u32> {
        self.zone_status()
            .0
            .records_by_state
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Every record state of the zone (`include_converged`), all pages.
    pub fn record_states(&self, include_converged: bool) -> Vec<pb::RecordState> {
        let mut c = self.planner_client();
        let mut out = Vec::new();
        let mut token = String::new();
        loop {
            let page = self
                .block_on(c.list_record_states(pb::ListRecordStatesRequest {
                    zone: self.zone().to_string(),
                    states: vec![],
                    include_converged,
                    page_size: 5000,
                    page_token: token.clone(),
                    ..Default::default()
                }))
                .expect("ListRecordStates")
                .into_inner();
            out.extend(page.records);
            if page.next_page_token.is_empty() {
                return out;
            }
            token = page.next_page_token;
        }
    }

    /// Waits until nothing moves: the planner is not syncing and the applier's
    /// counters stay the same over two polls. Syncs the planner starts by itself
    /// (a push triggers one) thus end inside the phase that caused them.
    pub fn wait_quiet(&self) {
        let mut last = None;
        let quiet = wait_for(Duration::from_secs(60), || {
            std::thread::sleep(Duration::from_millis(300));
            let now = self.counters();
            let (_, level) = self.zone_status();
            let same = last.as_ref() == Some(&now);
            last = Some(now);
            (same && level != "syncing").then_some(())
        });
        assert!(
            quiet.is_some(),
            "the stack never went quiet; logs:\n{}",
            self.logs()
        );
    }

    /// Polls until `f` holds (a safety net of `timeout`, not a performance claim).
    pub fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&Self) -> Option<T>,
    ) -> T {
        wait_for(timeout, || f(self))
            .unwrap_or_else(|| panic!("{what}: not within {timeout:?}; logs:\n{}", self.logs()))
    }

    /// The zone by AXFR, see [`super::axfr`].
    pub fn axfr(&self) -> Vec<String> {
        self.server.axfr(&self.tools.dig)
    }

    /// `dig +short +tcp` against the server, sorted (Route 53: its listing).
    pub fn dig(&self, name: &str, rtype: &str) -> Vec<String> {
        self.server.dig(&self.tools.dig, name, rtype)
    }

    /// [`dig`](Self::dig) of each query `(name, type)` (an emulated cloud's listing read
    /// once).
    pub fn digs(&self, queries: &[(String, &str)]) -> Vec<Vec<String>> {
        self.server.digs(&self.tools.dig, queries)
    }

    pub fn soa_serial(&self) -> u64 {
        self.server.soa_serial(&self.tools.dig)
    }

    /// The tails of both process logs, for failure messages.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        for p in [&self.applier, &self.planner] {
            let text = p.log_text();
            let lines: Vec<&str> = text.lines().collect();
            s.push_str(&format!(
                "--- {} ---\n{}\n",
                p.name,
                lines[lines.len().saturating_sub(40)..].join("\n")
            ));
        }
        s
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Starts `dnsplane-<name>` with `<dir>/<name>.toml`, logging to `<dir>/<name>.log`.
pub fn spawn_proc(dir: &Path, opts: &Options, name: &str, port: u16, admin: Option<u16>) -> Proc {
    let bin = opts.bin_dir.join(format!("dnsplane-{name}"));
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (tests/run-all.sh does)",
        bin.display()
    );
    let config = dir.join(format!("{name}.toml"));
    let listen = format!("127.0.0.1:{port}");
    // No fixed admin HTTP port unless asked for one: stacks run side by side.
    let admin_listen = admin.map(|p| format!("127.0.0.1:{p}"));
    // The Cloud DNS driver takes a `GOOGLE_OAUTH_ACCESS_TOKEN` before the account's
    // credentials file; the stack's account says everything (empty is unset to it).
    let mut env = vec![
        ("DNSPLANE_LOG", opts.log_filter.as_str()),
        ("DNSPLANE_PLANNER_ADMIN_LISTEN", "off"),
        ("GOOGLE_OAUTH_ACCESS_TOKEN", ""),
    ];
    if let Some(addr) = &admin_listen {
        match name {
            "planner" => env[1].1 = addr,
            _ => env.push(("DNSPLANE_APPLIER_ADMIN_LISTEN", addr)),
        }
    }
    // Killed (only this pid) when dropped.
    Proc::spawn_with_env(
        name,
        &bin,
        &[
            "--config",
            config.to_str().expect("utf-8 path"),
            "--listen",
            &listen,
        ],
        &env,
        dir.join(format!("{name}.log")),
    )
}

/// Polls `grpc.health.v1` until `service` is SERVING (30 s safety net).
pub fn wait_serving(rt: &tokio::runtime::Runtime, port: u16, service: &str, proc_: &Proc) {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    let ok = wait_for(Duration::from_secs(30), || {
        rt.block_on(async {
            let channel = Channel::from_shared(format!("http://127.0.0.1:{port}"))
                .ok()?
                .connect()
                .await
                .ok()?;
            let mut c = HealthClient::new(channel);
            let r = c
                .check(HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .ok()?;
            (r.into_inner().status() == ServingStatus::Serving).then_some(())
        })
    });
    assert!(
        ok.is_some(),
        "{service} on 127.0.0.1:{port} not serving within 30 s; log:\n{}",
        proc_.log_text()
    );
}

/// The workload both the tests and the benchmark run: a zone of `n` records (one per
/// name: 70% A, 10% AAAA, 10% TXT, 10% CNAME), then a 10% change of it.
pub mod workload {
    use dnsplane_common::Name;
    use dnsplane_common::pb::DesiredRecord;

    /// TTL of every desired record.
    pub const TTL: u32 = 300;

    /// One desired record: (relative name, type, value as pushed, value as `dig`
    /// prints it).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Rec {
        pub label: String,
        pub rtype: &'static str,
        pub value: String,
        pub dig: String,
    }

    impl Rec {
        pub fn name(&self, zone: &Name) -> String {
            format!("{}.{zone}", self.label)
        }

        pub fn desired(&self, zone: &Name) -> DesiredRecord {
            DesiredRecord {
                name: self.name(zone),
                r#type: self.rtype.into(),
                ttl: TTL,
                values: vec![self.value.clone()],
                ..Default::default()
            }
        }

        /// The AXFR line (see [`super::super::axfr`]) this record must produce.
        pub fn axfr_line(&self, zone: &Name) -> String {
            format!("{} {TTL} {} {}", self.name(zone), self.rtype, self.dig)
        }
    }

    /// Record `i` under `prefix`, `version` selecting its value.
    pub fn rec(prefix: &str, i: usize, version: u32) -> Rec {
        let label = format!("{prefix}{i:05}");
        let (rtype, value, dig) = match i % 10 {
            0 => {
                let v = format!("app={label} v={version}");
                ("TXT", v.clone(), format!("\"{v}\""))
            }
            // Above 0xffff, `i` takes two groups (one would not be valid IPv6).
            1 if i > 0xffff => {
                let v = format!(
                    "2001:db8:{:x}:{:x}::{:x}",
                    100 + version,
                    i >> 16,
                    i & 0xffff
                );
                ("AAAA", v.clone(), v)
            }
            1 => {
                let v = format!("2001:db8:{:x}::{i:x}", 100 + version);
                ("AAAA", v.clone(), v)
            }
            2 => {
                let v = format!("svc{i}-v{version}.example.net.");
                ("CNAME", v.clone(), v)
            }
            _ => {
                let v = format!("198.{}.{}.{}", 18 + version, (i / 250) % 250, i % 250 + 1);
                ("A", v.clone(), v)
            }
        };
        Rec {
            label,
            rtype,
            value,
            dig,
        }
    }

    /// The initial zone: `r00000` … `r{n-1}`.
    pub fn initial(n: usize) -> Vec<Rec> {
        (0..n).map(|i| rec("r", i, 0)).collect()
    }

    /// What a 10% change did, in records.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct ChangeCounts {
        pub updates: usize,
        pub deletes: usize,
        pub creates: usize,
    }

    impl ChangeCounts {
        pub fn total(&self) -> usize {
            self.updates + self.deletes + self.creates
        }
    }

    /// A 10% change of [`initial`]`(n)`: 4% of the records get a new value (every
    /// type), 3% are deleted and as many new ones (`n…` names) are created, so the
    /// zone keeps `n` records.
    pub fn changed(n: usize) -> (Vec<Rec>, ChangeCounts) {
        let mut out = Vec::with_capacity(n);
        let mut counts = ChangeCounts::default();
        for i in 0..n {
            match i % 100 {
                0..=3 => {
                    counts.updates += 1;
                    out.push(rec("r", i, 1));
                }
                10 | 12 | 13 => counts.deletes += 1,
                _ => out.push(rec("r", i, 0)),
            }
        }
        for j in 0..counts.deletes {
            counts.creates += 1;
            out.push(rec("n", j, 0));
        }
        (out, counts)
    }

    /// Records given a new value by [`changed`], as they are after it.
    pub fn updated(n: usize) -> Vec<Rec> {
        (0..n)
            .filter(|i| i % 100 <= 3)
            .map(|i| rec("r", i, 1))
            .collect()
    }

    /// Records deleted by [`changed`].
    pub fn deleted(n: usize) -> Vec<Rec> {
        (0..n)
            .filter(|i| matches!(i % 100, 10 | 12 | 13))
            .map(|i| rec("r", i, 0))
            .collect()
    }
}
