//! Several appliers and one planner in front of one PowerDNS with many zones, for the
//! quota test (`tests/e2e/quota.rs`) and the scaling benchmark
//! (`tests/bench/scaling.rs`). The appliers' `pdns` account points at a
//! [`QuotaProxy`](crate::quota_proxy::QuotaProxy) (latency, a write quota answered
//! with 429), not at PowerDNS itself; the planner spreads the zones over the
//! appliers (`appliers = [...]`). Desired state is pushed through the planner's gRPC
//! API.
use crate::servers::PowerDns;
use crate::{Proc, free_port, wait_for};
use dnsplane_common::Name;
use dnsplane_common::pb;
use dnsplane_common::pb::applier_client::ApplierClient;
use dnsplane_common::pb::planner_client::PlannerClient;
use std::path::PathBuf;
use std::time::Duration;
use tonic::transport::Channel;

/// Creates `n` zones `{prefix}{i}.test.` on the server through its API (kind Native,
/// SOA-EDIT-API as the harness's own zone); returns their names.
pub fn create_zones(pdns: &PowerDns, prefix: &str, n: usize) -> Vec<Name> {
    (0..n)
        .map(|i| {
            let zone = Name::parse(&format!("{prefix}{i:02}.test")).expect("zone name");
            let (status, body) = pdns.api(
                "POST",
                "/api/v1/servers/localhost/zones",
                &format!(r#"{{"name":"{zone}","kind":"Native","nameservers":["ns1.{zone}"]}}"#),
            );
            assert_eq!(status, 201, "creating {zone} failed: {body}");
            zone
        })
        .collect()
}

/// The `[accounts.quota]` of every applier.
#[derive(Clone, Debug)]
pub struct QuotaToml {
    pub rate: f64,
    pub burst: u32,
    /// `redis://…`: shared; `None`: each applier local at the full rate.
    pub redis: Option<String>,
    pub replicas: u32,
}

impl QuotaToml {
    fn render(&self) -> String {
        let mut s = format!(
            "[accounts.quota]\nrate = {:?}\nburst = {}\nreplicas = {}\n",
            self.rate, self.burst, self.replicas
        );
        if let Some(r) = &self.redis {
            s.push_str(&format!("redis = \"{r}\"\nprobe_interval = \"200ms\"\n"));
        }
        s
    }
}

/// How a cluster is configured.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    pub appliers: usize,
    pub quota: Option<QuotaToml>,
    /// The planner's `batch.max_changes`: one PATCH per batch.
    pub batch_max_changes: usize,
    /// Each applier's `max_concurrent_batches`.
    pub max_concurrent_batches: usize,
    /// `DNSPLANE_LOG` of every process.
    pub log_filter: String,
    /// Directory holding `dnsplane-planner` and `dnsplane-applier`.
    pub bin_dir: PathBuf,
    /// Appended to the `pdns` account's table in applier.toml (`[[accounts.faults]]`).
    pub account_extra: String,
    /// Appended to planner.toml (`[[sources]]`, `[safety]`).
    pub planner_extra: String,
    /// The planner's `sync.interval` (full re-read) and `sync.retry_max`.
    pub sync_interval: String,
    pub retry_max: String,
    /// Planner replicas (same `owner_id`, sources and `[lease]`, a config and state
    /// dir each: `planner{i}/`); 1: one planner with `planner.toml` in the cluster dir.
    pub planners: usize,
    /// `[lease] redis` of every planner (`redis://…`), for `planners > 1`.
    pub lease_redis: Option<String>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            appliers: 3,
            quota: None,
            batch_max_changes: 100,
            max_concurrent_batches: 8,
            log_filter: "info".into(),
            bin_dir: crate::bin_dir(),
            account_extra: String::new(),
            planner_extra: String::new(),
            sync_interval: "10m".into(),
            retry_max: "1s".into(),
            planners: 1,
            lease_redis: None,
        }
    }
}

/// The account name of every applier.
pub const ACCOUNT: &str = "pdns";

/// N appliers and a planner, as processes.
#[derive(Debug)]
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub zones: Vec<Name>,
    pub applier_ports: Vec<u16>,
    appliers: Vec<Option<Proc>>,
    /// Starts of each applier so far (its log is `applier{i}.log`, then
    /// `applier{i}.{n}.log` after the n-th restart).
    starts: Vec<usize>,
    /// The first planner's port (the only one's, with one planner).
    pub planner_port: u16,
    /// Every planner's port; with several, status calls go to the leader.
    pub planner_ports: Vec<u16>,
    planners: Vec<Option<Proc>>,
    planner_starts: Vec<usize>,
    opts: ClusterOptions,
    rt: tokio::runtime::Runtime,
}

impl Cluster {
    /// Writes the configs, starts the appliers (account `pdns` on `api_url`, the
    /// proxy) and the planner; returns once all of them serve.
    pub fn start(pdns: &PowerDns, api_url: &str, zones: &[Name], opts: ClusterOptions) -> Cluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let zone_list: Vec<String> = zones.iter().map(|z| format!("\"{z}\"")).collect();
        let applier_toml = format!(
            "max_concurrent_batches = {}\ncache_ttl = \"10m\"\n\n[[accounts]]\nname = \"{ACCOUNT}\"\n\
             driver = \"pdns\"\nzones = [{}]\napi_url = \"{api_url}\"\napi_key_file = \"{}\"\n{}{}",
            opts.max_concurrent_batches,
            zone_list.join(", "),
            pdns.api_key_file.display(),
            opts.quota
                .as_ref()
                .map(QuotaToml::render)
                .unwrap_or_default(),
            opts.account_extra
        );
        std::fs::write(dir.path().join("applier.toml"), applier_toml).expect("applier.toml");
        let applier_ports: Vec<u16> = (0..opts.appliers).map(|_| free_port()).collect();
        let planner_ports: Vec<u16> = (0..opts.planners.max(1)).map(|_| free_port()).collect();
        let planner_port = planner_ports[0];
        let addrs: Vec<String> = applier_ports
            .iter()
            .map(|p| format!("\"http://127.0.0.1:{p}\""))
            .collect();
        let zones_toml: String = zones
            .iter()
            .map(|z| format!("[[zones]]\nname = \"{z}\"\naccount = \"{ACCOUNT}\"\n"))
            .collect();
        let lease = opts
            .lease_redis
            .as_ref()
            .map(|r| format!("[lease]\nredis = \"{r}\"\n"))
            .unwrap_or_default();
        let planner_toml = format!(
            "owner_id = \"e2e\"\nappliers = [{}]\n[pool]\nhealth_interval = \"200ms\"\n\
             [sync]\ninterval = \"{}\"\nmin_interval = \"100ms\"\nretry_min = \"200ms\"\nretry_max = \"{}\"\n\
             [batch]\nmax_changes = {}\n{zones_toml}{}{lease}",
            addrs.join(", "),
            opts.sync_interval,
            opts.retry_max,
            opts.batch_max_changes,
            opts.planner_extra
        );
        for i in 0..planner_ports.len() {
            let d = planner_dir(dir.path(), &opts, i);
            std::fs::create_dir_all(&d).expect("planner dir");
            std::fs::write(d.join("planner.toml"), &planner_toml).expect("planner.toml");
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let appliers: Vec<Option<Proc>> = applier_ports
            .iter()
            .enumerate()
            .map(|(i, port)| {
                Some(spawn(
                    &opts,
                    dir.path(),
                    &format!("applier{i}"),
                    *port,
                    "applier",
                ))
            })
            .collect();
        let mut c = Cluster {
            zones: zones.to_vec(),
            starts: vec![1; appliers.len()],
            appliers,
            applier_ports,
            planner_port,
            // Started below, once the appliers serve.
            planners: planner_ports.iter().map(|_| None).collect(),
            planner_starts: vec![1; planner_ports.len()],
            planner_ports,
            dir,
            opts,
            rt,
        };
        for i in 0..c.applier_ports.len() {
            c.wait_applier(i);
        }
        for i in 0..c.planner_ports.len() {
            c.start_planner(i);
        }
        c
    }

    fn wait_applier(&self, i: usize) {
        let up = wait_for(Duration::from_secs(30), || self.try_applier_status(i));
        assert!(up.is_some(), "applier{i} not up; {}", self.logs());
    }

    /// Kills applier `i` (SIGKILL).
    pub fn kill_applier(&mut self, i: usize) {
        if let Some(mut p) = self.appliers[i].take() {
            p.kill();
        }
    }

    /// Starts applier `i` again on its port (killing it first if it runs), logging
    /// into a new file so the killed one's log stays; returns once it serves.
    pub fn restart_applier(&mut self, i: usize) {
        self.kill_applier(i);
        let name = format!("applier{i}.{}", self.starts[i]);
        self.starts[i] += 1;
        let port = self.applier_ports[i];
        self.appliers[i] = Some(spawn(&self.opts, self.dir.path(), &name, port, "applier"));
        self.wait_applier(i);
    }

    /// Whether applier `i` runs (it was not killed, or was restarted since).
    pub fn applier_running(&self, i: usize) -> bool {
        self.appliers[i].is_some()
    }

    /// Starts planner `i` (its log `planner.log`, or `planner{i}.log` then
    /// `planner{i}.{n}.log` after the n-th restart with several); returns once it
    /// answers `GetStatus`.
    fn start_planner(&mut self, i: usize) {
        let name = match (self.planner_ports.len(), self.planner_starts[i]) {
            (1, 1) => "planner".to_string(),
            (1, n) => format!("planner.{}", n - 1),
            (_, 1) => format!("planner{i}"),
            (_, n) => format!("planner{i}.{}", n - 1),
        };
        self.planner_starts[i] += 1;
        let config = planner_dir(self.dir.path(), &self.opts, i).join("planner.toml");
        self.planners[i] = Some(spawn_with(
            &self.opts,
            &config,
            self.dir.path(),
            &name,
            self.planner_ports[i],
            "planner",
        ));
        let up = wait_for(Duration::from_secs(30), || {
            let mut client = self.planner_at(i)?;
            self.rt
                .block_on(client.get_status(pb::GetStatusRequest {}))
                .ok()
                .map(drop)
        });
        assert!(up.is_some(), "planner{i} not up; {}", self.logs());
    }

    /// Kills planner `i` (SIGKILL).
    pub fn kill_planner(&mut self, i: usize) {
        if let Some(mut p) = self.planners[i].take() {
            p.kill();
        }
    }

    /// Starts planner `i` again on its port and state dir (killing it first if it
    /// runs), logging into a new file; returns once it answers.
    pub fn restart_planner(&mut self, i: usize) {
        self.kill_planner(i);
        self.start_planner(i);
    }

    /// Planner `i`'s status (`None` when it is not running or does not answer).
    pub fn planner_status_at(&self, i: usize) -> Option<pb::PlannerStatus> {
        self.planners[i].as_ref()?;
        let mut c = self.planner_at(i)?;
        self.rt
            .block_on(c.get_status(pb::GetStatusRequest {}))
            .ok()
            .map(tonic::Response::into_inner)
    }

    /// The running planner whose lease role is `leader`, if one is.
    pub fn leader(&self) -> Option<usize> {
        (0..self.planner_ports.len()).find(|&i| {
            self.planner_status_at(i)
                .and_then(|s| s.lease)
                .is_some_and(|l| l.role == "leader")
        })
    }

    /// The planner status calls go to: the only one, or the leader (else the first
    /// that runs).
    fn active(&self) -> usize {
        if self.planner_ports.len() == 1 {
            return 0;
        }
        self.leader()
            .or_else(|| (0..self.planners.len()).find(|&i| self.planners[i].is_some()))
            .unwrap_or(0)
    }

    fn planner(&self) -> Option<PlannerClient<Channel>> {
        self.planner_at(self.active())
    }

    fn planner_at(&self, i: usize) -> Option<PlannerClient<Channel>> {
        let addr = format!("http://127.0.0.1:{}", self.planner_ports[i]);
        self.rt
            .block_on(PlannerClient::connect(addr))
            .ok()
            .map(|c| {
                c.max_decoding_message_size(64 << 20)
                    .max_encoding_message_size(64 << 20)
            })
    }

    /// `PatchDesired` at planner `i`; the gRPC error as is (a standby answers
    /// `UNAVAILABLE` naming the leader).
    pub fn patch_at(
        &self,
        i: usize,
        req: pb::PatchDesiredRequest,
    ) -> Result<pb::PatchDesiredResponse, tonic::Status> {
        let mut c = self
            .planner_at(i)
            .ok_or_else(|| tonic::Status::unavailable(format!("planner{i}: cannot connect")))?;
        let call = async {
            tokio::time::timeout(Duration::from_secs(30), c.patch_desired(req))
                .await
                .map_err(|_| tonic::Status::deadline_exceeded("no answer within 30s"))?
        };
        self.rt.block_on(call).map(tonic::Response::into_inner)
    }

    /// Replaces the records of push source `source` (gRPC `PutDesired`).
    pub fn push(&self, source: &str, records: Vec<pb::DesiredRecord>) {
        let mut c = self.planner().expect("planner client");
        let n = records.len();
        let accepted = self
            .rt
            .block_on(c.put_desired(pb::PutDesiredRequest {
                source: source.into(),
                records,
            }))
            .unwrap_or_else(|e| panic!("PutDesired: {e}; {}", self.logs()))
            .into_inner()
            .accepted;
        assert_eq!(accepted as usize, n, "every pushed record accepted");
    }

    /// Every record state that is not converged, all zones, all pages
    /// (`ListRecordStates`).
    pub fn record_states(&self) -> Vec<pb::RecordState> {
        let mut c = self.planner().expect("planner client");
        let mut out = Vec::new();
        let mut token = String::new();
        loop {
            let page = self
                .rt
                .block_on(c.list_record_states(pb::ListRecordStatesRequest {
                    page_size: 5000,
                    page_token: token,
                    ..Default::default()
                }))
                .unwrap_or_else(|e| panic!("ListRecordStates: {e}"))
                .into_inner();
            out.extend(page.records);
            if page.next_page_token.is_empty() {
                return out;
            }
            token = page.next_page_token;
        }
    }

    /// The planner's status.
    pub fn planner_status(&self) -> pb::PlannerStatus {
        let mut c = self.planner().expect("planner client");
        self.rt
            .block_on(c.get_status(pb::GetStatusRequest {}))
            .unwrap_or_else(|e| panic!("planner GetStatus: {e}"))
            .into_inner()
    }

    /// Records converged, all zones together, and records in any other state.
    pub fn progress(&self) -> (u64, u64) {
        let mut converged = 0;
        let mut other = 0;
        for z in self.planner_status().zones {
            for (state, n) in z.records_by_state {
                if state == "converged" {
                    converged += u64::from(n);
                } else {
                    other += u64::from(n);
                }
            }
        }
        (converged, other)
    }

    /// True when every zone has finished a sync that started after `since`, nothing
    /// is syncing, and `n` records are converged with none in another state. (A
    /// record pushed but not yet planned has no state yet and counts as converged in
    /// the planner's status, hence the sync condition.)
    pub fn converged_since(&self, n: u64, since: std::time::SystemTime) -> bool {
        let st = self.planner_status();
        let synced = st.zones.iter().all(|z| {
            !z.syncing
                && z.last_success.as_ref().is_some_and(|t| {
                    let at = std::time::UNIX_EPOCH
                        + Duration::new(t.seconds.max(0) as u64, t.nanos.max(0) as u32);
                    at >= since
                })
        });
        let (converged, other) = self.progress();
        synced && converged >= n && other == 0
    }

    /// Waits until [`Cluster::converged_since`] holds; panics after `timeout` (a
    /// safety net).
    pub fn wait_converged(&self, n: u64, since: std::time::SystemTime, timeout: Duration) {
        let ok = wait_for(timeout, || self.converged_since(n, since).then_some(()));
        assert!(
            ok.is_some(),
            "{n} records not converged within {timeout:?} (converged, other: {:?}); {}",
            self.progress(),
            self.logs()
        );
    }

    fn try_applier_status(&self, i: usize) -> Option<pb::ApplierStatus> {
        let addr = format!("http://127.0.0.1:{}", self.applier_ports[i]);
        self.rt.block_on(async {
            let mut c = ApplierClient::connect(addr).await.ok()?;
            c.get_status(pb::GetApplierStatusRequest {})
                .await
                .ok()
                .map(tonic::Response::into_inner)
        })
    }

    /// Applier `i`'s status (`None` when it is not running or does not answer).
    pub fn applier_status(&self, i: usize) -> Option<pb::ApplierStatus> {
        self.appliers[i].as_ref()?;
        self.try_applier_status(i)
    }

    /// The quota of applier `i`'s account, as its `GetStatus` shows it.
    pub fn quota(&self, i: usize) -> Option<pb::QuotaStatus> {
        self.applier_status(i)?
            .accounts
            .into_iter()
            .find(|a| a.name == ACCOUNT)?
            .quota
    }

    /// The tails of every process log, for failure messages.
    pub fn logs(&self) -> String {
        let mut s = String::from("logs:\n");
        for p in self
            .appliers
            .iter()
            .flatten()
            .chain(self.planners.iter().flatten())
        {
            let text = p.log_text();
            let lines: Vec<&str> = text.lines().collect();
            s.push_str(&format!(
                "--- {} ---\n{}\n",
                p.name,
                lines[lines.len().saturating_sub(25)..].join("\n")
            ));
        }
        s
    }

    /// The records of a workload: `per_zone` A records in every zone, named
    /// `{tag}{i}.{zone}`.
    pub fn records(&self, tag: &str, per_zone: usize) -> Vec<pb::DesiredRecord> {
        self.zones
            .iter()
            .enumerate()
            .flat_map(|(z, zone)| {
                (0..per_zone).map(move |i| pb::DesiredRecord {
                    name: format!("{tag}{i}.{zone}"),
                    r#type: "A".into(),
                    ttl: 300,
                    values: vec![format!("10.{}.{}.{}", z % 250, i / 250, i % 250)],
                    ..Default::default()
                })
            })
            .collect()
    }
}

/// Planner `i`'s config (and so state) dir: the cluster dir with one planner,
/// `planner{i}/` in it with several.
fn planner_dir(dir: &std::path::Path, opts: &ClusterOptions, i: usize) -> PathBuf {
    if opts.planners <= 1 {
        dir.to_path_buf()
    } else {
        dir.join(format!("planner{i}"))
    }
}

fn spawn(opts: &ClusterOptions, dir: &std::path::Path, name: &str, port: u16, bin: &str) -> Proc {
    let config = dir.join(format!("{bin}.toml"));
    spawn_with(opts, &config, dir, name, port, bin)
}

fn spawn_with(
    opts: &ClusterOptions,
    config: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
    port: u16,
    bin: &str,
) -> Proc {
    let path = opts.bin_dir.join(format!("dnsplane-{bin}"));
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (tests/run-all.sh does)",
        path.display()
    );
    let log = dir.join(format!("{name}.log"));
    let file = std::fs::File::create(&log).expect("log file");
    let child = std::process::Command::new(&path)
        .arg("--config")
        .arg(config)
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--admin-listen",
            "off",
        ])
        .env("DNSPLANE_LOG", &opts.log_filter)
        .stdin(std::process::Stdio::null())
        .stdout(file.try_clone().expect("log file"))
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
    Proc {
        name: name.to_string(),
        child,
        log,
    }
}
