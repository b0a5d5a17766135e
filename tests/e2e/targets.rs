//! Issue 33, "two providers for one zone": `shared.test.` served by a real PowerDNS
//! (`pdns` driver) and a real BIND (`rfc2136` driver) at once, one `[[zones]]` with
//! `accounts = ["bind", "pdns"]`: two targets, each read, planned and reported on its
//! own from one desired state, checked with `dig` at each server. Then PowerDNS
//! refuses the applier's key (a real 401): its target fails and says so by name, and
//! BIND keeps converging, since one target's failure never blocks another. With the
//! key back, PowerDNS catches up. The gRPC API refuses a call naming the zone without
//! an account (the real `grpcurl`), and the CLI's documents name each target. The
//! configs are docs/targets.md's recipe, read from the page.
use dnsplane_common::pb;
use dnsplane_common::pb::planner_client::PlannerClient;
use dnsplane_e2e::servers::stack::{Tools, spawn_proc, wait_serving};
use dnsplane_e2e::servers::{Bind, PowerDns, dig_sorted};
use dnsplane_e2e::{Proc, free_port, wait_for};
use std::time::Duration;

const ZONE: &str = "shared.test.";
/// How long each target is given to converge; a safety net, not a performance claim.
const CONVERGE: Duration = Duration::from_secs(60);

struct TwoProviders {
    pdns: PowerDns,
    bind: Bind,
    tools: Tools,
    dir: tempfile::TempDir,
    planner_port: u16,
    applier_port: u16,
    applier: Proc,
    _planner: Proc,
    rt: tokio::runtime::Runtime,
}

impl TwoProviders {
    /// docs/targets.md's two-providers recipe as written.
    fn start() -> Option<TwoProviders> {
        TwoProviders::start_with(|_| recipe("# planner.toml — two providers for one zone"))
    }

    /// The two providers, with the planner config `planner` gives (before this
    /// test's addresses and zone are put in), given the directory it runs in.
    fn start_with(planner: impl FnOnce(&std::path::Path) -> String) -> Option<TwoProviders> {
        let tools = Tools::find()?;
        let pdns = PowerDns::start_zone(ZONE)?;
        let bind = Bind::start_zone(ZONE)?;
        let dir = tempfile::tempdir().expect("temp dir");
        let key_file = dir.path().join("pdns-key");
        std::fs::write(&key_file, format!("{}\n", pdns.api_key)).expect("key");
        let (planner_port, applier_port) = (free_port(), free_port());
        // docs/targets.md's recipe, with this test's servers, files and zone.
        let ours = |text: String| {
            text.replace("example.com.", ZONE)
                .replace("http://127.0.0.1:8081", &pdns.api_url())
                .replace(
                    "/etc/dnsplane/pdns-api-key",
                    &key_file.display().to_string(),
                )
                .replace("127.0.0.1:53\"", &format!("127.0.0.1:{}\"", bind.port))
                .replace(
                    "/etc/dnsplane/bind-tsig.key",
                    &bind.key_file.display().to_string(),
                )
                .replace(
                    "http://127.0.0.1:50052",
                    &format!("http://127.0.0.1:{applier_port}"),
                )
        };
        let applier = ours(recipe("# applier.toml — two providers for one zone"));
        assert!(applier.contains(&pdns.api_url()), "{applier}");
        std::fs::write(
            dir.path().join("applier.toml"),
            format!("cache_ttl = \"10m\"\n\n{applier}"),
        )
        .expect("applier.toml");
        let planner = ours(planner(dir.path()));
        assert!(planner.contains(&format!(":{applier_port}")), "{planner}");
        // Before the recipe's first table: the owner id and quick retries.
        std::fs::write(
            dir.path().join("planner.toml"),
            format!(
                "owner_id = \"e2e\"\n{planner}\n\
                 [sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n"
            ),
        )
        .expect("planner.toml");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let opts = dnsplane_e2e::servers::stack::Options::default();
        let applier = spawn_proc(dir.path(), &opts, "applier", applier_port, None);
        wait_serving(&rt, applier_port, "dnsplane.v1.Applier", &applier);
        let planner = spawn_proc(dir.path(), &opts, "planner", planner_port, None);
        wait_serving(&rt, planner_port, "dnsplane.v1.Planner", &planner);
        Some(TwoProviders {
            pdns,
            bind,
            tools,
            dir,
            planner_port,
            applier_port,
            applier,
            _planner: planner,
            rt,
        })
    }

    fn client(&self) -> PlannerClient<tonic::transport::Channel> {
        self.rt
            .block_on(PlannerClient::connect(format!(
                "http://127.0.0.1:{}",
                self.planner_port
            )))
            .expect("connect")
    }

    /// Replaces push source `ci` with `n` A records, `www<i>` at 192.0.2.`i`+`shift`.
    fn push(&self, n: usize, shift: usize) {
        let records = (0..n)
            .map(|i| pb::DesiredRecord {
                name: format!("www{i}.{ZONE}"),
                r#type: "A".into(),
                ttl: 300,
                values: vec![format!("192.0.2.{}", i + shift + 1)],
                ..Default::default()
            })
            .collect();
        let mut c = self.client();
        self.rt
            .block_on(c.put_desired(pb::PutDesiredRequest {
                source: "ci".into(),
                records,
            }))
            .expect("PutDesired");
    }

    fn dig(&self, port: u16, name: &str) -> Vec<String> {
        dig_sorted(&self.tools.dig, port, &format!("{name}.{ZONE}"), "A")
    }

    /// Waits until the server at `port` answers `www<i>` with the pushed value for
    /// every `i < n`.
    fn wait_served(&self, port: u16, n: usize, shift: usize, who: &str) {
        let served = wait_for(CONVERGE, || {
            (0..n)
                .all(|i| {
                    self.dig(port, &format!("www{i}")) == [format!("192.0.2.{}", i + shift + 1)]
                })
                .then_some(())
        });
        assert!(
            served.is_some(),
            "{who} never served the desired state; planner log:\n{}",
            self.log("planner")
        );
    }

    fn status(&self) -> pb::PlannerStatus {
        let mut c = self.client();
        self.rt
            .block_on(c.get_status(pb::GetStatusRequest {}))
            .expect("GetStatus")
            .into_inner()
    }

    fn target<'a>(s: &'a pb::PlannerStatus, account: &str) -> &'a pb::ZoneStatus {
        s.zones
            .iter()
            .find(|z| z.zone == ZONE && z.account == account)
            .unwrap_or_else(|| panic!("no target at {account}: {s:?}"))
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default()
    }

    /// Restarts the applier with the PowerDNS key file holding `key`.
    fn restart_applier_with_key(&mut self, key: &str) {
        self.applier.kill();
        std::fs::write(self.dir.path().join("pdns-key"), format!("{key}\n")).expect("key");
        let opts = dnsplane_e2e::servers::stack::Options::default();
        self.applier = spawn_proc(self.dir.path(), &opts, "applier", self.applier_port, None);
        wait_serving(
            &self.rt,
            self.applier_port,
            "dnsplane.v1.Applier",
            &self.applier,
        );
    }

    /// `dnsplane <args> --addr <planner>`: (exit code, output).
    fn cli(&self, args: &[&str]) -> (i32, String) {
        let out = std::process::Command::new(dnsplane_testing::binary("dnsplane"))
            .args(args)
            .args(["--addr", &format!("http://127.0.0.1:{}", self.planner_port)])
            .output()
            .expect("dnsplane");
        (
            out.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// The real `grpcurl` against the planner: (succeeded, output).
    fn grpcurl(&self, method: &str, body: &str) -> (bool, String) {
        let out = std::process::Command::new(&self.tools.grpcurl)
            .args(["-plaintext", "-d", body])
            .arg(format!("127.0.0.1:{}", self.planner_port))
            .arg(format!("dnsplane.v1.Planner/{method}"))
            .output()
            .expect("grpcurl");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }
}

/// The ```toml block of docs/targets.md whose first line is `first`.
fn recipe(first: &str) -> String {
    dnsplane_e2e::doc_toml_block("targets.md", first)
}

#[test]
fn one_zone_at_powerdns_and_bind_converges_at_both_and_a_failing_one_blocks_nothing() {
    let Some(mut s) = TwoProviders::start() else {
        return;
    };
    let (pdns_port, bind_port) = (s.pdns.dns_port, s.bind.port);

    // One desired state, two providers.
    s.push(20, 0);
    s.wait_served(pdns_port, 20, 0, "PowerDNS");
    s.wait_served(bind_port, 20, 0, "BIND");
    let status = s.status();
    for account in ["bind", "pdns"] {
        let t = TwoProviders::target(&status, account);
        assert_eq!(t.desired_records, 20, "{t:?}");
        assert!(t.last_error.is_empty(), "{t:?}");
    }
    // Ownership is per target: each server holds its own marks.
    for port in [pdns_port, bind_port] {
        let marks = dig_sorted(
            &s.tools.dig,
            port,
            &format!("_dnsplane-a.www0.{ZONE}"),
            "TXT",
        );
        assert_eq!(marks.len(), 1, "{marks:?}");
        assert!(marks[0].contains("dnsplane/owner=e2e"), "{marks:?}");
    }

    // A call naming the zone alone is ambiguous: refused, naming the targets.
    let (ok, out) = s.grpcurl("ListRecordStates", &format!(r#"{{"zone":"{ZONE}"}}"#));
    assert!(!ok, "{out}");
    assert!(out.contains("InvalidArgument"), "{out}");
    assert!(out.contains("several targets (bind, pdns)"), "{out}");
    let (ok, out) = s.grpcurl(
        "ListRecordStates",
        &format!(r#"{{"zone":"{ZONE}","account":"pdns","includeConverged":true}}"#),
    );
    assert!(ok, "{out}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("json");
    let records = listed["records"].as_array().expect("records");
    assert_eq!(records.len(), 20, "{out}");
    assert!(records.iter().all(|r| r["account"] == "pdns"), "{out}");
    let (code, out) = s.cli(&["records", "--zone", ZONE]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("several targets (bind, pdns)"), "{out}");
    let (code, out) = s.cli(&["plan", "-o", "json"]);
    assert_eq!(code, 0, "{out}");
    let plan: serde_json::Value = serde_json::from_str(&out).expect("plan json");
    let planned: Vec<&str> = plan["zones"]
        .as_array()
        .expect("zones")
        .iter()
        .map(|z| z["account"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(planned, ["bind", "pdns"], "{out}");

    // PowerDNS now refuses the applier's key: a real 401. Five names are added.
    s.restart_applier_with_key("not-the-key");
    s.push(25, 0);
    s.wait_served(bind_port, 25, 0, "BIND (while PowerDNS refuses the key)");
    let failing = wait_for(CONVERGE, || {
        let st = s.status();
        let pdns = TwoProviders::target(&st, "pdns");
        (!pdns.last_error.is_empty()).then(|| st.clone())
    })
    .expect("the PowerDNS target never showed its error");
    let pdns = TwoProviders::target(&failing, "pdns");
    assert!(
        pdns.last_error.contains("shared.test. at account pdns"),
        "{pdns:?}"
    );
    assert!(TwoProviders::target(&failing, "bind").last_error.is_empty());
    assert!(
        failing
            .reasons
            .iter()
            .any(|r| r.zone == ZONE && r.account == "pdns"),
        "{:?}",
        failing.reasons
    );
    assert!(
        !failing.reasons.iter().any(|r| r.account == "bind"),
        "{:?}",
        failing.reasons
    );
    // PowerDNS kept what it had: nothing was written there.
    assert_eq!(s.dig(pdns_port, "www0"), ["192.0.2.1"]);
    assert!(s.dig(pdns_port, "www20").is_empty());

    // The key is back: PowerDNS catches up on its own.
    let key = s.pdns.api_key.clone();
    s.restart_applier_with_key(&key);
    s.wait_served(pdns_port, 25, 0, "PowerDNS (after its key came back)");
    s.wait_served(bind_port, 25, 0, "BIND");
}

/// Split horizon fed by Kubernetes: the zone public at PowerDNS and internal at BIND;
/// one cluster's Services go to every view, an internal cluster's (its source's
/// `views = ["internal"]`) to BIND only. The internal cluster's API then goes down:
/// its source is not ready, its record stays at BIND (never delete on doubt, per
/// view) while the other cluster's change reaches both. Back, it deletes its Service:
/// only then does BIND drop the record.
#[test]
fn kubernetes_sources_feed_their_views_and_a_cluster_down_deletes_nothing() {
    use dnsplane_testing::kube_api::fixtures::service_load_balancer;
    use dnsplane_testing::kube_api::{FakeKubeApi, Resource};
    const HOSTNAME: &str = "external-dns.alpha.kubernetes.io/hostname";
    let rt = crate::kubernetes_kinds::runtime();
    let everyone = rt.block_on(FakeKubeApi::start());
    let internal = rt.block_on(FakeKubeApi::start());
    let host = |name: &str| format!("{name}.{}", ZONE.trim_end_matches('.'));
    let service = |name: &str, ip: &str| {
        let h = host(name);
        service_load_balancer("default", name, &[(HOSTNAME, h.as_str())], &[ip])
    };
    everyone.apply_object(Resource::Service, service("api", "192.0.2.1"));
    internal.apply_object(Resource::Service, service("db", "10.0.0.5"));
    let (everyone_url, internal_url) = (everyone.url(), internal.url());
    let Some(s) = TwoProviders::start_with(|_| {
        format!(
            "applier = \"http://127.0.0.1:50052\"\n\n\
             [[zones]]\nname = \"example.com.\"\naccount = \"pdns\"\nview = \"public\"\n\n\
             [[zones]]\nname = \"example.com.\"\naccount = \"bind\"\nview = \"internal\"\n\n\
             [[sources]]\ntype = \"kubernetes\"\nname = \"everyone\"\n\
             api_server = \"{everyone_url}\"\nkinds = [\"Service\"]\n\n\
             [[sources]]\ntype = \"kubernetes\"\nname = \"internal\"\n\
             api_server = \"{internal_url}\"\nkinds = [\"Service\"]\nviews = [\"internal\"]\n"
        )
    }) else {
        return;
    };
    let (pdns, bind) = (s.pdns.dns_port, s.bind.port);
    let wait_dig = |port: u16, name: &str, want: &[&str], when: &str| {
        let mut last = Vec::new();
        let ok = wait_for(CONVERGE, || {
            last = s.dig(port, name);
            (last == want).then_some(())
        });
        assert!(
            ok.is_some(),
            "{when}: {name} at port {port}: wanted {want:?}, saw {last:?}; status:\n{}\nplanner log:\n{}",
            s.cli(&["status"]).1,
            s.log("planner")
        );
    };
    wait_dig(pdns, "api", &["192.0.2.1"], "every view");
    wait_dig(bind, "api", &["192.0.2.1"], "every view");
    wait_dig(bind, "db", &["10.0.0.5"], "the internal view");
    // The public target never plans the internal record.
    assert!(s.dig(pdns, "db").is_empty());
    let planned = |account: &str| TwoProviders::target(&s.status(), account).desired_records;
    assert_eq!((planned("pdns"), planned("bind")), (1, 2));

    // The internal cluster's API goes down: its source is not ready, and keeps its
    // record at BIND while the other cluster's change reaches both views.
    internal.set_failing(true);
    let internal_ready = || {
        let status = s.status();
        let source = status
            .sources
            .iter()
            .find(|x| x.name.contains("internal"))?;
        Some(source.ready)
    };
    let down = wait_for(CONVERGE, || (internal_ready() == Some(false)).then_some(()));
    assert!(
        down.is_some(),
        "status never showed the internal cluster's source not ready:\n{}",
        s.cli(&["status"]).1
    );
    everyone.apply_object(Resource::Service, service("api", "192.0.2.11"));
    wait_dig(pdns, "api", &["192.0.2.11"], "internal cluster down");
    wait_dig(bind, "api", &["192.0.2.11"], "internal cluster down");
    assert_eq!(
        s.dig(bind, "db"),
        ["10.0.0.5"],
        "an unready source's record was deleted"
    );
    assert_eq!(planned("bind"), 2);

    // Back, the internal cluster deletes its Service: BIND drops it.
    internal.set_failing(false);
    let up = wait_for(CONVERGE, || (internal_ready() == Some(true)).then_some(()));
    assert!(
        up.is_some(),
        "the internal cluster's source never came back"
    );
    assert!(internal.delete_object(Resource::Service, "default", "db"));
    wait_dig(bind, "db", &[], "the internal Service deleted");
    wait_dig(bind, "api", &["192.0.2.11"], "after the delete");
}
