//! A planner + applier stack in a temp dir, with the embedded provider.
use dnsplane_e2e::servers::{Kind, PowerDns, RealServer};
use dnsplane_e2e::{Proc, binary, dig, free_port, grpcurl, tool, wait_for};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const ZONE: &str = "example.com.";

/// External tools every stack test needs.
#[derive(Debug, Clone)]
pub struct Tools {
    pub dig: PathBuf,
    pub grpcurl: PathBuf,
}

impl Tools {
    /// `None`: skip the test (only when `DNSPLANE_REQUIRE_SERVERS` is not set).
    pub fn find() -> Option<Tools> {
        let dig = tool("DNSPLANE_DIG", "dig");
        let grpcurl = tool("DNSPLANE_GRPCURL", "grpcurl");
        Some(Tools {
            dig: dig?,
            grpcurl: grpcurl?,
        })
    }
}

#[derive(Debug)]
pub struct Stack {
    pub dir: tempfile::TempDir,
    pub tools: Tools,
    pub planner_port: u16,
    pub applier_port: u16,
    pub dns_port: u16,
    pub planner: Option<Proc>,
    pub applier: Option<Proc>,
}

impl Stack {
    /// Writes configs into a fresh temp dir; `desired` files are written into
    /// `<dir>/desired/`. `conflict` is the zone's conflict policy.
    pub fn new(tools: Tools, desired: &[(&str, &str)], conflict: &str) -> Stack {
        Stack::with_config(tools, desired, conflict, "", "")
    }

    /// Like [`Stack::new`]; `applier_extra` is appended to the `embedded` account's
    /// table in applier.toml (e.g. fault rules), `planner_extra` to the end of
    /// planner.toml (e.g. a `[batch]` table or more `[[zones]]`).
    pub fn with_config(
        tools: Tools,
        desired: &[(&str, &str)],
        conflict: &str,
        applier_extra: &str,
        planner_extra: &str,
    ) -> Stack {
        let dir = tempfile::tempdir().expect("tempdir");
        let (planner_port, applier_port, dns_port) = (free_port(), free_port(), free_port());
        let desired_dir = dir.path().join("desired");
        std::fs::create_dir_all(&desired_dir).expect("desired dir");
        for (name, text) in desired {
            std::fs::write(desired_dir.join(name), text).expect("write desired");
        }
        std::fs::write(
            dir.path().join("applier.toml"),
            format!(
                "[[accounts]]\nname = \"embedded\"\ndriver = \"memory\"\nzones = [\"{ZONE}\"]\nstate_dir = \"{}\"\ndns_listen = \"127.0.0.1:{dns_port}\"\n{applier_extra}\n",
                dir.path().join("state").display()
            ),
        )
        .expect("applier.toml");
        std::fs::write(
            dir.path().join("planner.toml"),
            format!(
                "owner_id = \"e2e\"\napplier = \"http://127.0.0.1:{applier_port}\"\n\
                 [sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nsource_poll = \"200ms\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n\
                 [[zones]]\nname = \"{ZONE}\"\naccount = \"embedded\"\nconflict = \"{conflict}\"\n\
                 [[sources]]\ntype = \"file\"\npaths = [\"desired\"]\n{planner_extra}\n"
            ),
        )
        .expect("planner.toml");
        Stack {
            dir,
            tools,
            planner_port,
            applier_port,
            dns_port,
            planner: None,
            applier: None,
        }
    }

    /// Zone `example.com.` wanting `www` (free) and `legacy`, which another writer
    /// already holds with another value (an unowned record): one conflict once
    /// synced. Not started.
    /// The one desired record `www.example.com. A 192.0.2.10` (in `web.yaml`),
    /// conflicts reported, `planner_extra` appended to planner.toml.
    pub fn www(tools: Tools, planner_extra: &str) -> Stack {
        let desired = endpoints("web", &[("www.example.com", "A", &["192.0.2.10"])]);
        Stack::with_config(
            tools,
            &[("web.yaml", &desired)],
            "report",
            "",
            planner_extra,
        )
    }

    /// [`Stack::www`], started, once `www.example.com.` answers.
    pub fn www_running(tools: Tools) -> Stack {
        let mut s = Stack::www(tools, "");
        s.start_until_www();
        s
    }

    /// Starts both services and waits until `www.example.com. A 192.0.2.10` answers.
    pub fn start_until_www(&mut self) {
        self.start();
        self.wait_dns("www.example.com", "A", &["192.0.2.10"]);
    }

    pub fn one_conflict(tools: Tools) -> Stack {
        let desired = endpoints(
            "web",
            &[
                ("www.example.com", "A", &["192.0.2.10"]),
                ("legacy.example.com", "A", &["192.0.2.50"]),
            ],
        );
        let s = Stack::new(tools, &[("web.yaml", &desired)], "report");
        seed(
            &s.state_dir(),
            &[("legacy.example.com", "A", "198.51.100.7")],
        );
        s
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn state_dir(&self) -> PathBuf {
        self.path("state")
    }

    pub fn start_applier(&mut self) {
        self.start_applier_with(&[]);
    }

    /// Starts the applier with `extra` arguments (e.g. `--admin-listen`).
    pub fn start_applier_with(&mut self, extra: &[&str]) {
        let log = self.path(&format!("applier-{}.log", std::process::id()));
        self.applier = Some(self.spawn("applier", self.applier_port, extra, log));
        self.wait_healthy(self.applier_port, "dnsplane.v1.Applier");
    }

    /// `dnsplane-ROLE --config DIR/ROLE.toml --listen 127.0.0.1:PORT EXTRA…`, logging
    /// to `log`.
    fn spawn(&self, role: &str, port: u16, extra: &[&str], log: PathBuf) -> Proc {
        let config = self.path(&format!("{role}.toml"));
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec![
            "--config",
            config.to_str().expect("utf8"),
            "--listen",
            &listen,
        ];
        args.extend_from_slice(extra);
        Proc::spawn(role, &binary(&format!("dnsplane-{role}")), &args, log)
    }

    pub fn start_planner(&mut self) {
        self.start_planner_with(&[]);
    }

    /// Starts the planner with its admin HTTP server on `admin_port`.
    pub fn start_planner_with_admin(&mut self, admin_port: u16) {
        let admin = format!("127.0.0.1:{admin_port}");
        self.start_planner_with(&["--admin-listen", &admin]);
    }

    /// Starts the planner with `extra` arguments and waits until it serves.
    pub fn start_planner_with(&mut self, extra: &[&str]) {
        let log = self.path("planner.log");
        self.planner = Some(self.spawn("planner", self.planner_port, extra, log));
        self.wait_healthy(self.planner_port, "dnsplane.v1.Planner");
    }

    pub fn start(&mut self) {
        self.start_applier();
        self.start_planner();
    }

    fn wait_healthy(&self, port: u16, service: &str) {
        let addr = format!("127.0.0.1:{port}");
        let body = format!("{{\"service\":\"{service}\"}}");
        let ok = wait_for(Duration::from_secs(30), || {
            let (ok, out) = grpcurl(
                &self.tools.grpcurl,
                &["-d", &body, &addr, "grpc.health.v1.Health/Check"],
            );
            (ok && out.contains("SERVING") && !out.contains("NOT_SERVING")).then_some(())
        });
        assert!(
            ok.is_some(),
            "{service} on {addr} not healthy within 30 s; logs:\n{}",
            self.logs()
        );
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        for p in [&self.applier, &self.planner].into_iter().flatten() {
            s.push_str(&format!(
                "--- {} ---\n{}\n",
                p.name,
                tail(&p.log_text(), 60)
            ));
        }
        s
    }

    pub fn dig(&self, name: &str, rtype: &str) -> Vec<String> {
        dig(&self.tools.dig, self.dns_port, name, rtype, false)
    }

    pub fn dig_tcp(&self, name: &str, rtype: &str) -> Vec<String> {
        dig(&self.tools.dig, self.dns_port, name, rtype, true)
    }

    /// Waits until `dig name rtype` answers exactly `expect` (order-insensitive).
    pub fn wait_dns(&self, name: &str, rtype: &str, expect: &[&str]) {
        let mut want: Vec<String> = expect.iter().map(|s| s.to_string()).collect();
        want.sort();
        let mut last = Vec::new();
        let ok = wait_for(Duration::from_secs(30), || {
            let mut got = self.dig(name, rtype);
            got.sort();
            last = got.clone();
            (got == want).then_some(())
        });
        assert!(
            ok.is_some(),
            "dig {name} {rtype}: wanted {want:?}, last saw {last:?}; logs:\n{}",
            self.logs()
        );
    }

    /// `grpcurl` against the planner; returns parsed JSON (panics on failure).
    pub fn planner_call(&self, method: &str, body: &str) -> serde_json::Value {
        grpc_json(
            &self.tools,
            self.planner_port,
            &format!("dnsplane.v1.Planner/{method}"),
            body,
        )
    }

    pub fn applier_call(&self, method: &str, body: &str) -> serde_json::Value {
        grpc_json(
            &self.tools,
            self.applier_port,
            &format!("dnsplane.v1.Applier/{method}"),
            body,
        )
    }

    pub fn write_desired(&self, name: &str, text: &str) {
        let p = self.path("desired").join(name);
        // Write then rename, as editors and ConfigMap updates do.
        let tmp = self.path(&format!("{name}.tmp"));
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &p).expect("rename");
    }

    pub fn remove_desired(&self, name: &str) {
        std::fs::remove_file(self.path("desired").join(name)).expect("remove");
    }
}

impl Stack {
    /// Another writer: sends one batch straight to the applier, as a second program
    /// sharing the provider would, and returns the per-change results.
    pub fn other_writer(
        &self,
        changes: Vec<dnsplane_common::Change>,
    ) -> Vec<dnsplane_common::pb::RecordResult> {
        use dnsplane_common::pb;
        let addr = format!("http://127.0.0.1:{}", self.applier_port);
        let rt = runtime();
        rt.block_on(async move {
            let mut client = pb::applier_client::ApplierClient::connect(addr)
                .await
                .expect("connect applier");
            let batch = pb::Batch {
                batch_id: "other-writer".into(),
                account: "embedded".into(),
                zone: ZONE.into(),
                changes: changes.iter().map(Into::into).collect(),
                deadline: None,
                ..Default::default()
            };
            let req = tokio_stream_once(pb::ApplyRequest { batch: Some(batch) });
            let mut stream = client.apply(req).await.expect("apply").into_inner();
            let mut results = Vec::new();
            while let Some(msg) = stream.message().await.expect("apply stream") {
                results.extend(msg.results);
                if msg.done {
                    break;
                }
            }
            results
        })
    }
}

/// A request stream of one message that stays open until the response is read.
fn tokio_stream_once<T: Send + 'static>(item: T) -> impl tokio_stream::Stream<Item = T> + Send {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        let _ = tx.send(item).await;
        // Keep the sender alive briefly so the server sees an open stream.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        drop(tx);
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// An unowned A record as another writer would hold it.
pub fn a_record(name: &str, value: &str) -> dnsplane_common::RRSet {
    use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
    let key = RecordKey::new(
        Name::parse(ZONE).expect("zone"),
        Name::parse(name).expect("name"),
        RecordType::A,
    );
    RRSet::new(key, 60, &[value]).expect("rrset")
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Moved to the shared test support, where the soak benchmark writes them too.
pub use dnsplane_e2e::records::endpoints;

/// Seeds the embedded provider's store directly (no applier running): another writer.
pub fn seed(state_dir: &Path, records: &[(&str, &str, &str)]) {
    use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
    let store = dnsplane_applier::MemoryStore::open(state_dir).expect("open store");
    let zone = Name::parse(ZONE).expect("zone");
    store
        .ensure_zones(std::slice::from_ref(&zone))
        .expect("zone");
    let ops: Vec<RRSetOp> = records
        .iter()
        .map(|(name, t, v)| {
            let key = RecordKey::new(
                zone.clone(),
                Name::parse(name).expect("name"),
                RecordType::parse(t).expect("type"),
            );
            RRSetOp::create(RRSet::new(key, 60, &[*v]).expect("rrset"))
        })
        .collect();
    store.apply(&zone, &ops).expect("seed");
}

/// `dnsplane ARGS --addr http://127.0.0.1:PORT` with `env` added (and no token taken
/// from the test's own environment): (exit code, stdout + stderr).
pub fn dnsplane_cli(port: u16, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = std::process::Command::new(binary("dnsplane"))
        .args(args)
        .args(["--addr", &format!("http://127.0.0.1:{port}")])
        .env("DNSPLANE_LOG", "warn")
        .env_remove("DNSPLANE_TOKEN")
        .env_remove("DNSPLANE_TOKEN_FILE")
        .envs(env.iter().copied())
        .output()
        .expect("run dnsplane");
    (out.status.code().unwrap_or(-1), combined(&out))
}

/// `dnsplane-planner --config DIR/planner.toml --listen 127.0.0.1:PORT --admin-listen
/// ADMIN` (an address, or `off`), as `name`, logging to `DIR/NAME.log`.
pub fn spawn_planner(name: &str, dir: &Path, port: u16, admin: &str) -> Proc {
    let config = dir.join("planner.toml");
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "--config",
        config.to_str().expect("utf8"),
        "--listen",
        &listen,
    ];
    let args = [&args[..], &["--admin-listen", admin]].concat();
    let log = dir.join(format!("{name}.log"));
    Proc::spawn(name, &binary("dnsplane-planner"), &args, log)
}

/// A current-thread runtime with I/O and time, for a test's async parts.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A multi-thread runtime of `workers` threads with I/O and time.
pub fn threaded_runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A finished command's stdout followed by its stderr, as one text to search.
pub fn combined(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `grpcurl -d BODY 127.0.0.1:PORT METHOD` (a full method name), which must succeed,
/// as JSON.
pub fn grpc_json(tools: &Tools, port: u16, method: &str, body: &str) -> serde_json::Value {
    let (ok, out) = grpcurl(
        &tools.grpcurl,
        &["-d", body, &format!("127.0.0.1:{port}"), method],
    );
    assert!(ok, "grpcurl {method} failed: {out}");
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("grpcurl {method} output is not JSON ({e}): {out}"))
}

/// A private PowerDNS with its zone, or `None` to skip the test (only when
/// `DNSPLANE_REQUIRE_SERVERS` is not set).
pub fn start_pdns() -> Option<RealServer> {
    RealServer::start(Kind::Pdns)
}

/// The PowerDNS behind a server from [`start_pdns`].
pub fn pdns_of(server: &RealServer) -> &PowerDns {
    let RealServer::Pdns(pdns) = server else {
        unreachable!("started as PowerDNS")
    };
    pdns
}
