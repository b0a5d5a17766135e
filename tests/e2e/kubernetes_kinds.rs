//! Services, Ingresses and Gateway API routes end to end (issue 30): the planner and
//! applier processes, the fake Kubernetes API server of `dnsplane-testing` (Gateway
//! API objects validated against the vendored CRDs), and a real PowerDNS answering on
//! its DNS port. The objects are the ones a cluster has, annotated as external-dns
//! users annotate them (the old `external-dns.alpha.kubernetes.io/` prefix): nothing
//! on them is dnsplane's.
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_testing::kube_api::{FakeKubeApi, Resource};
use dnsplane_testing::kubectl::Kubectl;
use dnsplane_testing::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

pub(super) const HOSTNAME: &str = "external-dns.alpha.kubernetes.io/hostname";
const TTL: &str = "external-dns.alpha.kubernetes.io/ttl";
pub(super) const CONDITION_TIME: &str = "2026-11-29T00:00:00Z";

/// The fake API server's runtime (it serves from this runtime's thread).
pub(super) fn runtime() -> tokio::runtime::Runtime {
    crate::stack::threaded_runtime(1)
}

/// A LoadBalancer Service asking for `host` (annotation), its load balancer at `lb`
/// (an IP, or none: `status.loadBalancer` empty).
fn lb_service(name: &str, host: &str, lb: Option<&str>) -> Value {
    let ingress: Vec<Value> = lb.into_iter().map(|ip| json!({"ip": ip})).collect();
    json!({
        "metadata": {"name": name, "namespace": "default",
                     "annotations": {HOSTNAME: host}},
        "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080,
                            "nodePort": 31080}],
                 "selector": {"app": name}},
        "status": {"loadBalancer": if ingress.is_empty() { json!({}) } else { json!({"ingress": ingress}) }}
    })
}

/// An `nginx` Ingress for `host`, its load balancer a host name (CNAME) or an IP.
fn ingress(name: &str, host: &str, lb: &str, annotations: Value) -> Value {
    let lb_entry = if lb.parse::<std::net::IpAddr>().is_ok() {
        json!({"ip": lb})
    } else {
        json!({"hostname": lb})
    };
    json!({
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"ingressClassName": "nginx",
                 "rules": [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix",
                     "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]},
        "status": {"loadBalancer": {"ingress": [lb_entry]}}
    })
}

/// A Gateway with an HTTP listener for `*.<zone>` accepting routes of its namespace,
/// at `address`.
fn gateway(zone: &str, address: &str) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "edge", "namespace": "default"},
        "spec": {"gatewayClassName": "example",
                 "listeners": [{"name": "http", "protocol": "HTTP", "port": 80,
                                "hostname": format!("*.{zone}"),
                                "allowedRoutes": {"namespaces": {"from": "Same"}}}]},
        "status": {"addresses": [{"type": "IPAddress", "value": address}]}
    })
}

/// An HTTPRoute for `host` through the Gateway `edge`, which accepted it.
fn http_route(name: &str, host: &str) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"parentRefs": [{"name": "edge"}], "hostnames": [host],
                 "rules": [{"backendRefs": [{"name": name, "port": 8080}]}]},
        "status": {"parents": [{
            "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"},
            "controllerName": "example.net/gateway-controller",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                            "message": "accepted by edge", "observedGeneration": 1,
                            "lastTransitionTime": CONDITION_TIME}]}]}
    })
}

/// The planner's `[[sources]]` table for `api` reading `kinds`, plus `extra` keys.
fn source_toml(api: &FakeKubeApi, kinds: &[&str], extra: &str) -> String {
    let kinds: Vec<String> = kinds.iter().map(|k| format!("\"{k}\"")).collect();
    format!(
        "[[sources]]\ntype = \"kubernetes\"\napi_server = \"{}\"\nkinds = [{}]\nstatus_interval = \"200ms\"\n{extra}\n",
        api.url(),
        kinds.join(", ")
    )
}

/// PowerDNS, then the applier and planner in front of it reading `api`.
pub(super) fn stack(api: &FakeKubeApi, kinds: &[&str], extra: &str) -> Option<RealStack> {
    let tools = Tools::find()?;
    let server = RealServer::start(Kind::Pdns)?;
    let opts = Options {
        planner_extra: source_toml(api, kinds, extra),
        log_filter: "info,dnsplane_planner::source::kubernetes=debug".into(),
        ..Options::default()
    };
    Some(RealStack::start(server, tools, opts))
}

/// The zone without its final dot (`pdns.test`).
pub(super) fn zone(s: &RealStack) -> String {
    s.zone().to_string().trim_end_matches('.').to_string()
}

fn dig(s: &RealStack, name: &str, rtype: &str) -> Vec<String> {
    s.server.dig(&s.tools.dig, name, rtype)
}

/// Waits (30 s at most) until PowerDNS answers `name rtype` with exactly `want`.
pub(super) fn wait_dns(s: &RealStack, name: &str, rtype: &str, want: &[&str]) {
    let mut want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
    want.sort();
    let mut last = Vec::new();
    let ok = wait_for(Duration::from_secs(30), || {
        last = dig(s, name, rtype);
        (last == want).then_some(())
    });
    assert!(
        ok.is_some(),
        "dig {name} {rtype}: wanted {want:?}, last saw {last:?}; planner status: {}\nlogs:\n{}",
        status_text(s),
        s.logs()
    );
}

/// `dnsplane status` as the operator sees it.
fn status_text(s: &RealStack) -> String {
    s.cli(&["status"]).1
}

/// Waits (30 s at most) for an event on `kind` `name` with `reason` whose message
/// contains `contains`; returns it.
fn wait_event(
    s: &RealStack,
    api: &FakeKubeApi,
    kind: &str,
    name: &str,
    reason: &str,
    contains: &str,
) -> Value {
    let find = || {
        api.events().into_iter().find(|e| {
            e["involvedObject"]["kind"] == kind
                && e["involvedObject"]["name"] == name
                && e["reason"] == reason
                && e["message"].as_str().unwrap_or("").contains(contains)
        })
    };
    wait_for(Duration::from_secs(30), find).unwrap_or_else(|| {
        panic!(
            "no {reason} event on {kind} {name} containing {contains:?}; events: {:#?}\nlogs:\n{}",
            api.events(),
            s.logs()
        )
    })
}

/// Each kind created, changed and deleted reaches PowerDNS: a LoadBalancer Service
/// (A), its IP changed, deleted; an Ingress whose load balancer is a host name
/// (CNAME), then an IP; an HTTPRoute through a Gateway whose address moves; an
/// ExternalName Service (CNAME) and a NodePort Service (the nodes' external IPs and
/// an SRV record per node port).
#[test]
fn each_kind_created_changed_and_deleted_reaches_powerdns() {
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    let Some(s) = stack(
        &api,
        &["Service", "Ingress", "HTTPRoute"],
        "ingress_classes = [\"nginx\"]\n",
    ) else {
        return;
    };
    let z = zone(&s);
    let web = format!("web.{z}");
    let shop = format!("shop.{z}");
    let api_host = format!("api.{z}");

    // Service
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.10")),
    );
    wait_dns(&s, &web, "A", &["192.0.2.10"]);
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.11")),
    );
    wait_dns(&s, &web, "A", &["192.0.2.11"]);

    // Ingress: a host-name load balancer, then an IP one.
    api.apply_object(
        Resource::Ingress,
        ingress("shop", &shop, "lb-1.example.net", json!({})),
    );
    wait_dns(&s, &shop, "CNAME", &["lb-1.example.net."]);
    api.apply_object(
        Resource::Ingress,
        ingress("shop", &shop, "192.0.2.20", json!({})),
    );
    wait_dns(&s, &shop, "A", &["192.0.2.20"]);
    wait_dns(&s, &shop, "CNAME", &[]);

    // HTTPRoute through a Gateway; the Gateway's address moves the route's record.
    api.apply_object(Resource::Gateway, gateway(&z, "192.0.2.30"));
    api.apply_object(Resource::HttpRoute, http_route("api", &api_host));
    wait_dns(&s, &api_host, "A", &["192.0.2.30"]);
    api.apply_object(Resource::Gateway, gateway(&z, "192.0.2.31"));
    wait_dns(&s, &api_host, "A", &["192.0.2.31"]);

    // ExternalName and NodePort Services.
    let legacy = format!("legacy.{z}");
    api.apply_object(
        Resource::Service,
        json!({"metadata": {"name": "legacy", "namespace": "default",
                            "annotations": {HOSTNAME: legacy}},
               "spec": {"type": "ExternalName", "externalName": "legacy.example.net"}}),
    );
    wait_dns(&s, &legacy, "CNAME", &["legacy.example.net."]);
    api.apply_object(
        Resource::Node,
        json!({"metadata": {"name": "node-1"},
               "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                                        {"type": "ExternalIP", "address": "192.0.2.41"}],
                          "conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    let ssh = format!("ssh.{z}");
    api.apply_object(
        Resource::Service,
        json!({"metadata": {"name": "ssh", "namespace": "default",
                            "annotations": {HOSTNAME: ssh}},
               "spec": {"type": "NodePort", "clusterIP": "10.96.0.22", "clusterIPs": ["10.96.0.22"],
                        "ports": [{"name": "ssh", "port": 22, "protocol": "TCP", "targetPort": 22,
                                   "nodePort": 30022}],
                        "selector": {"app": "ssh"}}}),
    );
    wait_dns(&s, &ssh, "A", &["192.0.2.41"]);
    wait_dns(
        &s,
        &format!("_ssh._tcp.{ssh}"),
        "SRV",
        &[&format!("0 50 30022 {ssh}.")],
    );

    // Deleted objects take their records, and only theirs.
    assert!(api.delete_object(Resource::Service, "default", "web"));
    wait_dns(&s, &web, "A", &[]);
    assert!(api.delete_object(Resource::Ingress, "default", "shop"));
    wait_dns(&s, &shop, "A", &[]);
    assert!(api.delete_object(Resource::HttpRoute, "default", "api"));
    wait_dns(&s, &api_host, "A", &[]);
    assert!(api.delete_object(Resource::Service, "default", "legacy"));
    wait_dns(&s, &legacy, "CNAME", &[]);
    assert_eq!(dig(&s, &ssh, "A"), ["192.0.2.41"], "{}", s.logs());
    drop(s);
}

/// After convergence `kubectl describe service web` (the real kubectl against the
/// fake) shows a `Published` event naming the record. An Ingress whose TTL
/// annotation becomes "abc" gets a Warning `Invalid` event naming the annotation and
/// keeps its last accepted record (its new load balancer is not published), while a
/// neighbour Ingress created meanwhile converges.
#[test]
fn kubectl_describe_shows_published_and_a_bad_annotation_keeps_the_last_record() {
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    let Some(kubectl) = Kubectl::for_fake(&api) else {
        return;
    };
    let Some(s) = stack(&api, &["Service", "Ingress"], "") else {
        return;
    };
    let z = zone(&s);
    let web = format!("web.{z}");
    let blog = format!("blog.{z}");
    let docs = format!("docs.{z}");
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.10")),
    );
    api.apply_object(
        Resource::Ingress,
        ingress("blog", &blog, "192.0.2.60", json!({TTL: "120"})),
    );
    wait_dns(&s, &web, "A", &["192.0.2.10"]);
    wait_dns(&s, &blog, "A", &["192.0.2.60"]);
    let published = wait_event(&s, &api, "Service", "web", "Published", &web);
    // The event names the object by its uid too (packed in 16 bytes while held).
    let service = api
        .get_object(Resource::Service, "default", "web")
        .expect("the Service");
    assert_eq!(
        published["involvedObject"]["uid"], service["metadata"]["uid"],
        "{published:#}"
    );

    let out = kubectl.run_blocking(&["describe", "service", "web"]);
    assert!(out.success, "{out:?}");
    let events = out.stdout.split("Events:").nth(1).unwrap_or("");
    for want in ["Normal", "Published", "dnsplane", web.as_str()] {
        assert!(
            events.contains(want),
            "{want} not in the Events of:\n{}",
            out.stdout
        );
    }

    // A TTL that does not read: the object keeps its last accepted record.
    api.apply_object(
        Resource::Ingress,
        ingress("blog", &blog, "192.0.2.61", json!({TTL: "abc"})),
    );
    let invalid = wait_event(&s, &api, "Ingress", "blog", "Invalid", "ttl");
    assert_eq!(invalid["type"], "Warning", "{invalid:#}");
    let message = invalid["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(TTL),
        "the message names the annotation: {message}"
    );
    api.apply_object(
        Resource::Ingress,
        ingress("docs", &docs, "192.0.2.70", json!({})),
    );
    wait_dns(&s, &docs, "A", &["192.0.2.70"]);
    assert_eq!(dig(&s, &blog, "A"), ["192.0.2.60"], "{}", s.logs());
    let out = kubectl.run_blocking(&["describe", "ingress", "blog"]);
    assert!(out.success, "{out:?}");
    let events = out.stdout.split("Events:").nth(1).unwrap_or("");
    for want in ["Warning", "Invalid", "abc"] {
        assert!(
            events.contains(want),
            "{want} not in the Events of:\n{}",
            out.stdout
        );
    }
    drop(s);
}

/// A load balancer that loses its address does not delete: with
/// `target_loss_grace = "3s"`, an emptied `status.loadBalancer` keeps the record,
/// `dnsplane status` says until when, a `Held` event is written; the address back
/// within the grace changes nothing; emptied again past the grace, the record goes.
#[test]
fn a_flapping_load_balancer_keeps_its_record_for_the_grace() {
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    let Some(s) = stack(&api, &["Service"], "target_loss_grace = \"3s\"\n") else {
        return;
    };
    let z = zone(&s);
    let web = format!("web.{z}");
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.10")),
    );
    wait_dns(&s, &web, "A", &["192.0.2.10"]);
    wait_event(&s, &api, "Service", "web", "Published", &web);

    api.apply_object(Resource::Service, lb_service("web", &web, None));
    let mut last = String::new();
    let held = wait_for(Duration::from_secs(10), || {
        last = status_text(&s);
        last.contains("its load balancer has no address")
            .then_some(())
    });
    assert!(held.is_some(), "status does not say it is held:\n{last}");
    eprintln!("held:\n{last}");
    assert!(
        last.contains("until") && last.contains("target_loss_grace 3s"),
        "{last}"
    );
    assert_eq!(dig(&s, &web, "A"), ["192.0.2.10"], "{}", s.logs());
    wait_event(&s, &api, "Service", "web", "Held", "");

    // Back within the grace: the record never moved, the hold is gone.
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.10")),
    );
    let cleared = wait_for(Duration::from_secs(10), || {
        last = status_text(&s);
        (!last.contains("its load balancer has no address")).then_some(())
    });
    assert!(cleared.is_some(), "the hold stays in status:\n{last}");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(dig(&s, &web, "A"), ["192.0.2.10"], "{}", s.logs());

    // Emptied again and past the grace: the record goes.
    api.apply_object(Resource::Service, lb_service("web", &web, None));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(dig(&s, &web, "A"), ["192.0.2.10"], "{}", s.logs());
    wait_dns(&s, &web, "A", &[]);
    drop(s);
}

/// Objects of three kinds converged; the planner killed (-9) and started again while
/// the API answers 500: it plans nothing (every record stays, status names the kinds
/// not ready); the API back, it converges again with nothing deleted.
#[test]
fn an_api_outage_during_a_restart_deletes_nothing() {
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    let Some(mut s) = stack(&api, &["Service", "Ingress", "HTTPRoute"], "") else {
        return;
    };
    let z = zone(&s);
    let (web, shop, api_host) = (format!("web.{z}"), format!("shop.{z}"), format!("api.{z}"));
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.10")),
    );
    api.apply_object(
        Resource::Ingress,
        ingress("shop", &shop, "192.0.2.20", json!({})),
    );
    api.apply_object(Resource::Gateway, gateway(&z, "192.0.2.30"));
    api.apply_object(Resource::HttpRoute, http_route("api", &api_host));
    let all = [
        (web.as_str(), "192.0.2.10"),
        (shop.as_str(), "192.0.2.20"),
        (api_host.as_str(), "192.0.2.30"),
    ];
    for (name, ip) in all {
        wait_dns(&s, name, "A", &[ip]);
    }

    s.restart_planner_with(|| api.set_failing(true));
    let mut text = String::new();
    let not_ready = wait_for(Duration::from_secs(10), || {
        text = status_text(&s);
        (text.contains("NOT READY")
            && text.contains("Service")
            && text.contains("Ingress")
            && text.contains("HTTPRoute"))
        .then_some(())
    });
    assert!(
        not_ready.is_some(),
        "status does not name the kinds not ready:\n{text}"
    );
    eprintln!("outage:\n{text}");
    std::thread::sleep(Duration::from_secs(3));
    for (name, ip) in all {
        assert_eq!(dig(&s, name, "A"), [ip], "{name}; logs:\n{}", s.logs());
    }

    api.set_failing(false);
    // A change made after the outage flows, and nothing else moved.
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.12")),
    );
    wait_dns(&s, &web, "A", &["192.0.2.12"]);
    for (name, ip) in &all[1..] {
        assert_eq!(dig(&s, name, "A"), [*ip], "{name}; logs:\n{}", s.logs());
    }
    drop(s);
}

/// RBAC missing for one kind: with Ingresses forbidden (403), `dnsplane status` shows
/// the Ingress watch NOT READY, "forbidden" and the verb and resource to grant; the
/// Service watch ready; no record of either kind deleted, while running (watches cut)
/// and across a restart.
#[test]
fn a_kind_the_account_may_not_read_is_named_and_deletes_nothing() {
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    let Some(mut s) = stack(&api, &["Service", "Ingress"], "") else {
        return;
    };
    let z = zone(&s);
    let (web, shop) = (format!("web.{z}"), format!("shop.{z}"));
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.10")),
    );
    api.apply_object(
        Resource::Ingress,
        ingress("shop", &shop, "192.0.2.20", json!({})),
    );
    wait_dns(&s, &web, "A", &["192.0.2.10"]);
    wait_dns(&s, &shop, "A", &["192.0.2.20"]);

    let forbidden_line = |l: &str| {
        l.contains("Ingress")
            && l.contains("NOT READY")
            && l.contains("forbidden")
            && l.contains("list and watch ingresses")
            && l.contains("networking.k8s.io")
    };
    let check = |s: &RealStack, web_ip: &str| {
        let mut text = String::new();
        let named = wait_for(Duration::from_secs(20), || {
            text = status_text(s);
            text.lines().any(forbidden_line).then_some(())
        });
        assert!(
            named.is_some(),
            "status does not name the Ingress watch:\n{text}"
        );
        eprintln!("forbidden:\n{text}");
        // Said once, in words: the API's message, not kube's debug dump of it.
        let line = text.lines().find(|l| forbidden_line(l)).unwrap_or_default();
        assert!(
            line.matches("is forbidden").count() == 1 && !line.contains("Status {"),
            "the 403 is not said once and plainly: {line}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains("Service") && l.contains("ready") && !l.contains("NOT READY")),
            "the Service watch is not shown ready:\n{text}"
        );
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(dig(s, &web, "A"), [web_ip], "{}", s.logs());
        assert_eq!(dig(s, &shop, "A"), ["192.0.2.20"], "{}", s.logs());
    };

    // Running: the role removed, the watches cut; the relist gets 403.
    api.forbid(Resource::Ingress);
    api.drop_watches();
    check(&s, "192.0.2.10");
    // A Service change still flows.
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.11")),
    );
    wait_dns(&s, &web, "A", &["192.0.2.11"]);
    assert_eq!(dig(&s, &shop, "A"), ["192.0.2.20"]);

    // Restarted without the role: never listed, still nothing deleted.
    s.restart_planner_with(|| {});
    check(&s, "192.0.2.11");

    // The role back: ready again, everything kept.
    api.allow(Resource::Ingress);
    let mut text = String::new();
    let ready = wait_for(Duration::from_secs(40), || {
        text = status_text(&s);
        (!text.contains("NOT READY")).then_some(())
    });
    assert!(
        ready.is_some(),
        "not ready again after the role is back:\n{text}"
    );
    assert_eq!(dig(&s, &shop, "A"), ["192.0.2.20"], "{}", s.logs());
    drop(s);
}

/// Only the lease holder writes events: a second planner with the same config (the
/// same file lease) stands by; the Service's events, on creation and on a change, all
/// name the leader as `reportingInstance`, none the standby.
#[test]
fn only_the_lease_holder_writes_events() {
    use dnsplane_e2e::{Proc, binary, free_port, grpcurl};
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    let Some(s) = stack(&api, &["Service"], "") else {
        return;
    };
    let port = free_port();
    let _standby = Proc::spawn(
        "standby",
        &binary("dnsplane-planner"),
        &[
            "--config",
            s.dir.path().join("planner.toml").to_str().expect("utf8"),
            "--listen",
            &format!("127.0.0.1:{port}"),
        ],
        s.dir.path().join("standby.log"),
    );
    let lease_of = |port: u16| -> Option<Value> {
        let (ok, out) = grpcurl(
            &s.tools.grpcurl,
            &[
                &format!("127.0.0.1:{port}"),
                "dnsplane.v1.Planner/GetStatus",
            ],
        );
        let v: Value = serde_json::from_str(&out).ok().filter(|_| ok)?;
        Some(v["lease"].clone())
    };
    let standby = wait_for(Duration::from_secs(30), || {
        lease_of(port).filter(|l| l["role"] == "standby")
    })
    .unwrap_or_else(|| {
        panic!(
            "the second planner is not standing by: {:?}",
            lease_of(port)
        )
    });
    let leader = lease_of(s.planner_port).expect("the leader's status");
    assert_eq!(leader["role"], "leader", "{leader}");
    let leader_id = leader["identity"].as_str().unwrap_or_default().to_string();
    let standby_id = standby["identity"].as_str().unwrap_or_default().to_string();
    assert!(
        !leader_id.is_empty() && leader_id != standby_id,
        "{leader} / {standby}"
    );

    let z = zone(&s);
    let web = format!("web.{z}");
    api.apply_object(
        Resource::Service,
        lb_service("web", &web, Some("192.0.2.10")),
    );
    wait_dns(&s, &web, "A", &["192.0.2.10"]);
    wait_event(&s, &api, "Service", "web", "Published", "web");
    api.apply_object(Resource::Service, lb_service("web", &web, None));
    wait_event(&s, &api, "Service", "web", "Held", "");
    // A few of the standby's rounds (one a second) pass.
    std::thread::sleep(Duration::from_secs(3));
    let events = api.events();
    assert!(events.len() >= 2, "{events:#?}");
    for e in &events {
        assert_eq!(
            e["reportingInstance"].as_str(),
            Some(leader_id.as_str()),
            "an event not by the leader {leader_id} (standby {standby_id}): {e:#}"
        );
    }
    drop(s);
}
