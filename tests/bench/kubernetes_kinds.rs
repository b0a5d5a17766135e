//! The Kubernetes source at scale (issue 30): 10,000 LoadBalancer Services, 10,000
//! Ingresses and 5,000 HTTPRoutes (behind two Gateways) in the fake API server, each
//! giving one A record in `bench.example.`, read by a planner with
//! `kinds = ["Service", "Ingress", "HTTPRoute"]` and written to the embedded provider
//! (the one `dnsplane up` runs). Prints
//! - the initial convergence: planner start (its first list) → every one of the 25,000
//!   names answered with its address on the embedded provider's DNS port;
//! - one Service's load-balancer IP changed in the API → the new address answered on
//!   the DNS port (p50 / p99 / max of 100);
//! - the planner's resident memory per source object (RSS once converged, the median
//!   of 9 readings, minus RSS before it started, over 25,000: it includes the records'
//!   desired and observed state, not only the objects the source keeps, and the code
//!   and buffers of a planner that runs at all; docs/scale.md gives the slope between
//!   two sizes, what one more object costs).
//!
//! The fake API server and the applier run in a child process (this binary again), so
//! that the bench's own RSS is the planner's.
//!
//! Run: `cargo bench -p dnsplane-e2e --bench kubernetes_kinds` (`-- 1000` for a tenth
//! of the objects). With `DNSPLANE_BENCH_EXIT_AFTER_MEMORY=1` it exits right after the
//! memory figure, without freeing anything: under `heaptrack`, the "leaks" are then
//! what the converged planner holds.
use dnsplane_common::Name;
use dnsplane_planner::config::{
    ConflictPolicy, KubernetesSourceConfig, PlannerConfig, Policy, SourceConfig, SyncConfig,
    ZoneConfig,
};
use dnsplane_testing::kube_api::{FakeKubeApi, Resource};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

/// The allocator of the `dnsplane-planner` binary, with its settings (`main` applies
/// them), so that RSS is what it would be.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ZONE: &str = "bench.example.";
const CHILD_ENV: &str = "DNSPLANE_BENCH_KUBE_CLUSTER";
const NAMESPACES: usize = 20;
const CHANGES: usize = 100;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Service `i`'s load-balancer address (`generation` moves it).
fn service_ip(i: usize, generation: usize) -> Ipv4Addr {
    let n = (generation * 20_000 + i) as u32;
    Ipv4Addr::new(100, 64 + (n >> 16) as u8, (n >> 8) as u8, n as u8)
}

const INGRESS_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const GATEWAY_IPS: [Ipv4Addr; 2] = [Ipv4Addr::new(192, 0, 2, 20), Ipv4Addr::new(192, 0, 2, 21)];

fn ns(i: usize) -> String {
    format!("team-{}", i % NAMESPACES)
}

fn condition(kind: &str, reason: &str) -> Value {
    json!({
        "type": kind, "status": "True", "reason": reason, "message": "",
        "observedGeneration": 1, "lastTransitionTime": "2026-11-01T00:00:00Z"
    })
}

/// A LoadBalancer Service as a cloud controller leaves it: labels, the hostname and
/// TTL annotations, kubectl's last-applied copy, ports, cluster IPs, the LB status.
fn service(i: usize, generation: usize) -> Value {
    let name = format!("svc-{i}");
    let spec = json!({
        "type": "LoadBalancer",
        "selector": {"app": name},
        "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP", "nodePort": 30000 + (i % 2000)}],
        "clusterIP": format!("10.96.{}.{}", (i >> 8) % 256, i % 256),
        "clusterIPs": [format!("10.96.{}.{}", (i >> 8) % 256, i % 256)],
        "sessionAffinity": "None",
        "externalTrafficPolicy": "Cluster",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "allocateLoadBalancerNodePorts": true,
        "internalTrafficPolicy": "Cluster",
    });
    let annotations = json!({
        "external-dns.kubernetes.io/hostname": format!("{name}.bench.example"),
        "external-dns.kubernetes.io/ttl": "60",
        "kubectl.kubernetes.io/last-applied-configuration": json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns(i), "annotations": {"external-dns.kubernetes.io/hostname": format!("{name}.bench.example")}},
            "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        }).to_string(),
    });
    json!({
        "metadata": {
            "name": name, "namespace": ns(i),
            "labels": {"app": name, "team": ns(i), "app.kubernetes.io/managed-by": "Helm"},
            "annotations": annotations,
        },
        "spec": spec,
        "status": {"loadBalancer": {"ingress": [{"ip": service_ip(i, generation).to_string(), "ipMode": "VIP"}]}},
    })
}

fn ingress(i: usize) -> Value {
    let host = format!("ing-{i}.bench.example");
    json!({
        "metadata": {
            "name": format!("ing-{i}"), "namespace": ns(i),
            "labels": {"app": format!("web-{i}"), "team": ns(i)},
            "annotations": {
                "nginx.ingress.kubernetes.io/rewrite-target": "/",
                "cert-manager.io/cluster-issuer": "letsencrypt",
                "external-dns.kubernetes.io/ttl": "60",
            },
        },
        "spec": {
            "ingressClassName": "nginx",
            "rules": [{"host": host, "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": format!("svc-{i}"), "port": {"number": 80}}}
            }]}}],
            "tls": [{"hosts": [host], "secretName": format!("ing-{i}-tls")}],
        },
        "status": {"loadBalancer": {"ingress": [{"ip": INGRESS_IP.to_string()}]}},
    })
}

fn gateway(g: usize) -> Value {
    json!({
        "metadata": {"name": format!("gw-{g}"), "namespace": "gateways", "labels": {"gateway": "public"}},
        "spec": {
            "gatewayClassName": "public",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}}],
        },
        "status": {
            "addresses": [{"type": "IPAddress", "value": GATEWAY_IPS[g].to_string()}],
            "conditions": [condition("Accepted", "Accepted"), condition("Programmed", "Programmed")],
        },
    })
}

fn route(i: usize) -> Value {
    let parent = json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": format!("gw-{}", i % 2), "namespace": "gateways"});
    json!({
        "metadata": {
            "name": format!("route-{i}"), "namespace": ns(i),
            "labels": {"app": format!("api-{i}"), "team": ns(i)},
            "annotations": {"external-dns.kubernetes.io/ttl": "60"},
        },
        "spec": {
            "parentRefs": [parent],
            "hostnames": [format!("route-{i}.bench.example")],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"name": format!("svc-{i}"), "port": 80}],
            }],
        },
        "status": {"parents": [{
            "parentRef": parent,
            "controllerName": "example.com/gateway-controller",
            "conditions": [condition("Accepted", "Accepted"), condition("ResolvedRefs", "ResolvedRefs")],
        }]},
    })
}

/// Sizes: (services, ingresses, routes).
fn sizes(scale: usize) -> (usize, usize, usize) {
    (scale, scale, scale / 2)
}

/// The child: the fake API server seeded, the embedded provider answering DNS; prints
/// `API_URL APPLIER_PORT DNS_PORT`, then takes `ip I GENERATION` lines on stdin (Service
/// I's load balancer moves) and answers each with `ok`, and `events` lines, answered
/// with how many Events the API holds.
fn child(scale: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let (services, ingresses, routes) = sizes(scale);
    let (api, applier_port, dns_port, _shutdown) = rt.block_on(async {
        let api = FakeKubeApi::start().await;
        api.apply_objects(
            Resource::Namespace,
            (0..NAMESPACES)
                .map(ns)
                .chain(["gateways".to_string()])
                .map(|n| json!({"metadata": {"name": n}})),
        );
        api.apply_objects(
            Resource::Node,
            (0..3).map(|n| {
                json!({
                    "metadata": {"name": format!("node-{n}"), "labels": {"kubernetes.io/hostname": format!("node-{n}")}},
                    "status": {"addresses": [{"type": "InternalIP", "address": format!("10.0.0.{}", n + 1)}, {"type": "ExternalIP", "address": format!("198.51.100.{}", n + 1)}]},
                })
            }),
        );
        api.apply_objects(
            Resource::EndpointSlice,
            (0..3).map(|n| {
                json!({
                    "metadata": {"name": format!("svc-{n}-abcde"), "namespace": ns(n), "labels": {"kubernetes.io/service-name": format!("svc-{n}")}},
                    "addressType": "IPv4",
                    "endpoints": [{"addresses": [format!("10.244.0.{}", n + 1)], "conditions": {"ready": true}, "nodeName": format!("node-{n}")}],
                    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                })
            }),
        );
        api.apply_objects(Resource::Gateway, (0..2).map(gateway));
        api.apply_objects(Resource::Service, (0..services).map(|i| service(i, 0)));
        api.apply_objects(Resource::Ingress, (0..ingresses).map(ingress));
        api.apply_objects(Resource::HttpRoute, (0..routes).map(route));
        let applier = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let applier_port = applier.local_addr().expect("addr").port();
        let dns_port = free_udp_port();
        let mut config = dnsplane_applier::ApplierConfig::embedded(
            dir.path().join("embedded"),
            Some(([127, 0, 0, 1], dns_port).into()),
            vec![Name::parse(ZONE).expect("zone")],
        );
        if let dnsplane_applier::config::DriverConfig::Memory(m) = &mut config.accounts[0].driver
        {
            // The bench's queries are the measurement, not abuse.
            m.dns_rate_limit.responses_per_second = 0;
        }
        let shutdown = tokio_util::sync::CancellationToken::new();
        tokio::spawn(dnsplane_applier::run(
            config,
            dnsplane_applier::Listeners {
                grpc: applier,
                admin: None,
            },
            shutdown.clone(),
        ));
        (api, applier_port, dns_port, shutdown)
    });
    println!("{} {applier_port} {dns_port}", api.url());
    std::io::stdout().flush().expect("flush");
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        if line == "events" {
            println!("{}", api.events().len());
            std::io::stdout().flush().expect("flush");
            continue;
        }
        let words: Vec<usize> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|w| w.parse().ok())
            .collect();
        if let [i, generation] = words[..] {
            api.apply_object(Resource::Service, service(i, generation));
            println!("ok");
            std::io::stdout().flush().expect("flush");
        }
    }
}

fn free_udp_port() -> u16 {
    loop {
        let udp = UdpSocket::bind("127.0.0.1:0").expect("udp");
        let port = udp.local_addr().expect("addr").port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A DNS client for A queries over UDP.
struct Dns {
    socket: UdpSocket,
    id: u16,
}

impl Dns {
    fn new(port: u16) -> Dns {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("udp");
        socket.connect(("127.0.0.1", port)).expect("connect");
        socket
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        Dns { socket, id: 0 }
    }

    /// The A addresses `name` answers with (empty: none, or no answer in time).
    fn a(&mut self, name: &str) -> Vec<Ipv4Addr> {
        self.id = self.id.wrapping_add(1);
        let mut q = Vec::with_capacity(64);
        q.extend_from_slice(&self.id.to_be_bytes());
        q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        for label in name.trim_end_matches('.').split('.') {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        if self.socket.send(&q).is_err() {
            return Vec::new();
        }
        let mut buf = [0u8; 1500];
        loop {
            let Ok(n) = self.socket.recv(&mut buf) else {
                return Vec::new();
            };
            let m = &buf[..n];
            if n < 12 || m[..2] != self.id.to_be_bytes() {
                continue; // a late answer to an earlier query
            }
            return answers(m);
        }
    }
}

/// The A records of a DNS answer.
fn answers(m: &[u8]) -> Vec<Ipv4Addr> {
    let count = |at: usize| u16::from_be_bytes([m[at], m[at + 1]]) as usize;
    let (qd, an) = (count(4), count(6));
    let skip_name = |mut at: usize| -> Option<usize> {
        loop {
            let len = *m.get(at)? as usize;
            if len == 0 {
                return Some(at + 1);
            }
            if len & 0xc0 == 0xc0 {
                return Some(at + 2);
            }
            at += 1 + len;
        }
    };
    let mut at = 12;
    for _ in 0..qd {
        let Some(next) = skip_name(at) else {
            return Vec::new();
        };
        at = next + 4;
    }
    let mut out = Vec::new();
    for _ in 0..an {
        let Some(next) = skip_name(at) else { break };
        let Some(rr) = m.get(next..next + 10) else {
            break;
        };
        let rtype = u16::from_be_bytes([rr[0], rr[1]]);
        let len = u16::from_be_bytes([rr[8], rr[9]]) as usize;
        if let (1, 4, Some(d)) = (rtype, len, m.get(next + 10..next + 14)) {
            out.push(Ipv4Addr::new(d[0], d[1], d[2], d[3]));
        }
        at = next + 10 + len;
    }
    out
}

fn planner_config(api: &str, applier_port: u16, state: &std::path::Path) -> PlannerConfig {
    let source = KubernetesSourceConfig {
        api_server: Some(api.to_string()),
        kinds: vec!["Service".into(), "Ingress".into(), "HTTPRoute".into()],
        ..KubernetesSourceConfig::default()
    };
    PlannerConfig {
        owner_id: "bench".into(),
        applier: format!("http://127.0.0.1:{applier_port}"),
        sync: SyncConfig {
            interval: Duration::from_secs(3600),
            ..SyncConfig::default()
        },
        sources: vec![SourceConfig::Kubernetes(Box::new(source))],
        state_dir: state.to_path_buf(),
        ..PlannerConfig::with_zones(vec![ZoneConfig {
            name: Name::parse(ZONE).expect("zone"),
            account: dnsplane_applier::config::EMBEDDED_ACCOUNT.into(),
            policy: Policy::Sync,
            conflict: ConflictPolicy::Report,
            default_ttl: 300,
            external_dns: None,
            merge: Default::default(),
        }])
    }
}

/// Every (name, address) the world should answer.
fn expected(scale: usize) -> Vec<(String, Ipv4Addr)> {
    let (services, ingresses, routes) = sizes(scale);
    let mut all = Vec::new();
    all.extend((0..services).map(|i| (format!("svc-{i}.bench.example"), service_ip(i, 0))));
    all.extend((0..ingresses).map(|i| (format!("ing-{i}.bench.example"), INGRESS_IP)));
    all.extend((0..routes).map(|i| (format!("route-{i}.bench.example"), GATEWAY_IPS[i % 2])));
    all
}

/// Waits until every name answers its address, 8 clients at once; returns when the
/// last one did.
fn wait_all(dns_port: u16, want: &[(String, Ipv4Addr)], deadline: Instant) -> Instant {
    std::thread::scope(|s| {
        let handles: Vec<_> = want
            .chunks(want.len().div_ceil(8))
            .map(|chunk| {
                s.spawn(move || {
                    let mut dns = Dns::new(dns_port);
                    let mut last = Instant::now();
                    for (name, ip) in chunk {
                        while !dns.a(name).contains(ip) {
                            assert!(Instant::now() < deadline, "{name} never answered {ip}");
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        last = Instant::now();
                    }
                    last
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("scan"))
            .max()
            .expect("one chunk")
    })
}

/// One request to the child (see [`child`]) and its one-line answer.
fn ask(
    to: &mut std::process::ChildStdin,
    from: &mut std::io::BufReader<std::process::ChildStdout>,
    request: &str,
) -> String {
    writeln!(to, "{request}").expect("to the cluster");
    let mut reply = String::new();
    from.read_line(&mut reply).expect("the cluster's answer");
    reply
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() {
    dnsplane_common::allocator::apply_settings();
    let scale: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    if std::env::var_os(CHILD_ENV).is_some() {
        return child(scale);
    }
    let (services, ingresses, routes) = sizes(scale);
    let objects = services + ingresses + routes;
    println!(
        "{services} Services + {ingresses} Ingresses + {routes} HTTPRoutes = {objects} objects, one A record each in {ZONE}"
    );
    let mut cluster = std::process::Command::new(std::env::current_exe().expect("exe"))
        .arg(scale.to_string())
        .env(CHILD_ENV, "1")
        .env("DNSPLANE_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the cluster");
    let mut to_cluster = cluster.stdin.take().expect("stdin");
    let mut from_cluster = std::io::BufReader::new(cluster.stdout.take().expect("stdout"));
    let mut line = String::new();
    from_cluster.read_line(&mut line).expect("cluster ready");
    let words: Vec<&str> = line.split_whitespace().collect();
    let [api, applier_port, dns_port] = words[..] else {
        panic!("the cluster said {line:?}")
    };
    let (applier_port, dns_port): (u16, u16) = (
        applier_port.parse().expect("port"),
        dns_port.parse().expect("port"),
    );
    let want = expected(scale);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let state = tempfile::tempdir().expect("tempdir");
    let config = planner_config(api, applier_port, state.path());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let grpc = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"));
    let before = rss_bytes();
    let started = Instant::now();
    let planner = rt.spawn(dnsplane_planner::run(
        config,
        dnsplane_planner::Listeners {
            grpc: grpc.expect("bind"),
            admin: None,
        },
        shutdown.clone(),
    ));
    let converged = wait_all(dns_port, &want, started + Duration::from_secs(600));
    let initial = converged - started;
    // Every object told its result (one Published event each) before memory is read:
    // the events writer's memory grows with each object told.
    let told = loop {
        let reply = ask(&mut to_cluster, &mut from_cluster, "events");
        if reply.trim().parse::<usize>().unwrap_or(0) >= objects {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the objects were never all told: {} events",
            reply.trim()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Let the last batches' results and the status/event writes settle before reading;
    // then the median of 9 readings 250 ms apart (the writers' rounds come and go each
    // second).
    std::thread::sleep(Duration::from_secs(2));
    let mut readings: Vec<u64> = (0..9)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(250));
            rss_bytes()
        })
        .collect();
    readings.sort_unstable();
    let after = readings[readings.len() / 2];
    let per_object = after.saturating_sub(before) as f64 / objects as f64;
    println!(
        "initial convergence (planner start → all {} names answered on the DNS port): {:.2} s",
        want.len(),
        initial.as_secs_f64()
    );
    println!(
        "every object told (one Published event each), from planner start: {:.2} s",
        told.as_secs_f64()
    );
    println!(
        "planner RSS: {:.1} MB before, {:.1} MB converged: {per_object:.0} B per source object",
        before as f64 / 1e6,
        after as f64 / 1e6
    );
    if std::env::var_os("DNSPLANE_BENCH_EXIT_AFTER_MEMORY").is_some() {
        // For a heap profiler: what is live now is reported as never freed.
        let _ = cluster.kill();
        std::process::exit(0);
    }

    let mut dns = Dns::new(dns_port);
    let mut latencies = Vec::with_capacity(CHANGES);
    for k in 0..CHANGES {
        let i = (k * 7919) % services;
        let name = format!("svc-{i}.bench.example");
        let new_ip = service_ip(i, k + 1);
        let t = Instant::now();
        ask(
            &mut to_cluster,
            &mut from_cluster,
            &format!("ip {i} {}", k + 1),
        );
        while dns.a(&name) != [new_ip] {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{name} never answered {new_ip}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        latencies.push(t.elapsed());
    }
    latencies.sort();
    println!(
        "one Service's load-balancer IP changed → new answer on the DNS port, p50 / p99 / max of {CHANGES}: {:.1} / {:.1} / {:.1} ms",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().expect("one").as_secs_f64() * 1e3,
    );
    shutdown.cancel();
    let _ = rt.block_on(planner);
    drop(to_cluster);
    let _ = cluster.wait();
}
