use super::objects::Objects;
use super::status::{MAX_MESSAGE_CHARS, Phase, RecordOutcome, StatusWriter, condition};
use super::*;
use crate::source::testing::{entry, keys};
use dnsplane_testing::crd::{Crd, DNSPLANE_CRD, EXTERNAL_DNS_CRD};
use dnsplane_testing::kube_api::FakeKubeApi;
use serde_json::json;

/// The fake API server with dnsplane's CRD (deploy/k8s) installed: it prunes what
/// the CRD does not declare, as a cluster's API server does.
async fn fake() -> FakeKubeApi {
    FakeKubeApi::start_with_crd(Crd::parse(DNSPLANE_CRD).expect("deploy/k8s's CRD")).await
}

fn ep(name: &str, target: &str) -> serde_json::Value {
    json!({"dnsName": name, "recordType": "A", "targets": [target]})
}

fn text(ns: &str, name: &str, endpoints: serde_json::Value) -> String {
    json!({"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
           "metadata": {"name": name, "namespace": ns}, "spec": {"endpoints": endpoints}})
    .to_string()
}

/// A broken update keeps the object's last accepted endpoints, and the errors name the
/// object and the endpoint, not a line of a JSON text.
#[test]
fn a_broken_update_keeps_the_objects_last_accepted_records() {
    let mut objects = Objects::default();
    objects.apply(
        "default/web",
        Some(1),
        &text(
            "default",
            "web",
            json!([
                ep("a.example.com", "192.0.2.1"),
                ep("b.example.com", "192.0.2.2")
            ]),
        ),
    );
    let s = objects.snapshot(Vec::new());
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.entries[0].origin.source.as_ref(), "kubernetes");
    assert_eq!(
        &*s.entries[0].origin.location,
        "default/web spec.endpoints[0]"
    );
    assert_eq!(
        s.entries[0].origin.resource.as_ref(),
        "DNSEndpoint default/web"
    );

    // b's target broken, a changed: a's new value, b's old one kept.
    objects.apply(
        "default/web",
        Some(2),
        &text(
            "default",
            "web",
            json!([
                ep("a.example.com", "192.0.2.9"),
                ep("b.example.com", "300.1.1.1")
            ]),
        ),
    );
    let s = objects.snapshot(Vec::new());
    assert_eq!(
        keys(&s.entries),
        vec![
            entry("a.example.com.", "A", &["192.0.2.9"]),
            entry("b.example.com.", "A", &["192.0.2.2"])
        ]
    );
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    let e = s.errors[0].to_string();
    assert!(
        e.starts_with("default/web spec.endpoints[1]: b.example.com. A: target \"300.1.1.1\"")
            && e.contains("keeping the last accepted version"),
        "{e}"
    );

    // The whole spec gone: everything kept, said once for the object.
    objects.apply("default/web", Some(3), &json!({"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint", "metadata": {"name": "web", "namespace": "default"}}).to_string());
    let s = objects.snapshot(Vec::new());
    assert_eq!(s.entries.len(), 2);
    assert!(
        s.errors[0].to_string().starts_with("default/web: "),
        "{:?}",
        s.errors
    );
    assert_eq!(objects.get("default/web").unwrap().generation, Some(3));

    assert!(objects.delete("default/web"));
    assert!(objects.snapshot(Vec::new()).entries.is_empty());
}

/// A complete list of one namespace withdraws only that namespace's absent objects.
#[test]
fn a_relist_of_one_namespace_deletes_only_its_absent_objects() {
    let mut objects = Objects::default();
    for (ns, name, n) in [
        ("a", "x", "x.example.com"),
        ("a", "y", "y.example.com"),
        ("b", "z", "z.example.com"),
    ] {
        objects.apply(
            &format!("{ns}/{name}"),
            Some(1),
            &text(ns, name, json!([ep(n, "192.0.2.1")])),
        );
    }
    objects.replace_scope(
        Some("a"),
        vec![(
            "a/x".into(),
            Some(1),
            text("a", "x", json!([ep("x.example.com", "192.0.2.1")])),
        )],
    );
    let names: Vec<_> = objects.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, ["a/x", "b/z"]);
    objects.replace_scope::<String>(None, Vec::new());
    assert!(objects.is_empty());
}

async fn source_for(
    api: &FakeKubeApi,
    configure: impl FnOnce(&mut KubernetesSourceConfig),
) -> (
    mpsc::Receiver<Snapshot>,
    CancellationToken,
    Arc<Mutex<Objects>>,
    kube::Client,
) {
    let mut config = KubernetesSourceConfig {
        api_server: Some(api.url()),
        ..KubernetesSourceConfig::default()
    };
    configure(&mut config);
    let c = client(&config).await.expect("client");
    let src = KubernetesSource::new(config).with_watch_timeout(5);
    let objects = src.objects();
    let (tx, rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    src.watch(c.clone(), tx, cancel.clone());
    (rx, cancel, objects, c)
}

/// The next snapshot for which `pred` holds, within 10 s.
async fn until(
    rx: &mut mpsc::Receiver<Snapshot>,
    what: &str,
    pred: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut last = None;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(s)) if pred(&s) => return s,
            Ok(Some(s)) => last = Some(s),
            Ok(None) => panic!("the source stopped waiting for {what}"),
            Err(_) => panic!("no snapshot with {what} in 10 s; the last: {last:?}"),
        }
    }
}

fn values(s: &Snapshot) -> Vec<(String, Vec<String>)> {
    s.entries
        .iter()
        .map(|e| (e.name.to_string(), e.values.clone()))
        .collect()
}

/// Created, changed and deleted objects reach the snapshot; other namespaces' and
/// unselected objects do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_update_and_delete_reach_the_desired_state() {
    let api = fake().await;
    api.apply(
        "web",
        "a",
        &[("dns", "public")],
        json!([ep("a.example.com", "192.0.2.1")]),
    );
    api.apply(
        "web",
        "hidden",
        &[("dns", "private")],
        json!([ep("h.example.com", "192.0.2.1")]),
    );
    api.apply(
        "other",
        "b",
        &[("dns", "public")],
        json!([ep("b.example.com", "192.0.2.1")]),
    );
    let (mut rx, cancel, _, _) = source_for(&api, |c| {
        c.namespaces = vec!["web".into()];
        c.label_selector = Some("dns=public".into());
    })
    .await;
    let s = until(&mut rx, "ready", |s| s.unready.is_empty()).await;
    assert_eq!(
        values(&s),
        [("a.example.com.".to_string(), vec!["192.0.2.1".to_string()])]
    );

    api.apply(
        "web",
        "a",
        &[("dns", "public")],
        json!([ep("a.example.com", "192.0.2.7")]),
    );
    let s = until(&mut rx, "the update", |s| {
        values(s).iter().any(|(_, v)| v == &["192.0.2.7"])
    })
    .await;
    assert_eq!(s.entries.len(), 1);
    api.apply(
        "web",
        "c",
        &[("dns", "public")],
        json!([ep("c.example.com", "192.0.2.3")]),
    );
    until(&mut rx, "the new object", |s| s.entries.len() == 2).await;
    assert!(api.delete("web", "a"));
    let s = until(&mut rx, "the deletion", |s| s.entries.len() == 1).await;
    assert_eq!(s.entries[0].name.to_string(), "c.example.com.");
    assert!(s.unready.is_empty());
    cancel.cancel();
}

/// An expired watch (410 Gone) and an outage delete nothing: the records stay, the
/// source says it is not ready; the complete list after them is what withdraws an
/// object deleted meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_watch_and_an_outage_delete_nothing() {
    let api = fake().await;
    api.apply("web", "a", &[], json!([ep("a.example.com", "192.0.2.1")]));
    api.apply("web", "b", &[], json!([ep("b.example.com", "192.0.2.2")]));
    let (mut rx, cancel, _, _) = source_for(&api, |_| {}).await;
    until(&mut rx, "ready", |s| {
        s.unready.is_empty() && s.entries.len() == 2
    })
    .await;
    let (lists, _) = api.requests();

    // 410: not ready for a moment, nothing withdrawn; then a relist.
    api.delete_quietly("web", "b");
    api.expire();
    let s = until(&mut rx, "the expiry", |s| !s.unready.is_empty()).await;
    assert_eq!(
        s.entries.len(),
        2,
        "an expired watch withdrew records: {s:?}"
    );
    assert!(
        s.unready[0].contains("410") || s.unready[0].contains("too old"),
        "{:?}",
        s.unready
    );
    let s = until(&mut rx, "the relist", |s| s.unready.is_empty()).await;
    assert_eq!(
        values(&s),
        [("a.example.com.".to_string(), vec!["192.0.2.1".to_string()])],
        "the relist withdraws what was deleted meanwhile"
    );
    assert!(api.requests().0 > lists, "listed again");

    // An outage: 500s and cut connections. Records stay for as long as it lasts.
    api.set_failing(true);
    let s = until(&mut rx, "the outage", |s| !s.unready.is_empty()).await;
    assert_eq!(s.entries.len(), 1);
    assert!(
        s.unready[0].contains("keeping the last accepted records"),
        "{:?}",
        s.unready
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    while let Ok(s) = rx.try_recv() {
        assert_eq!(
            s.entries.len(),
            1,
            "records withdrawn during the outage: {s:?}"
        );
        assert!(!s.unready.is_empty());
    }
    api.set_failing(false);
    let s = until(&mut rx, "recovery", |s| s.unready.is_empty()).await;
    assert_eq!(s.entries.len(), 1);

    // A connection cut mid-watch: the same.
    api.drop_watches();
    let s = until(&mut rx, "the cut", |s| !s.unready.is_empty()).await;
    assert_eq!(s.entries.len(), 1);
    until(&mut rx, "recovery", |s| {
        s.unready.is_empty() && s.entries.len() == 1
    })
    .await;
    cancel.cancel();
}

/// Until its first list completes the source is not ready: an API that fails, or that
/// nobody answers at, gives only not-ready snapshots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_ready_until_the_first_list_completes() {
    let api = fake().await;
    api.apply("web", "a", &[], json!([ep("a.example.com", "192.0.2.1")]));
    api.set_failing(true);
    let (mut rx, cancel, _, _) = source_for(&api, |_| {}).await;
    let s = until(&mut rx, "a failed first list", |_| true).await;
    assert!(s.entries.is_empty());
    assert!(s.unready[0].contains("not listed yet"), "{:?}", s.unready);
    api.set_failing(false);
    let s = until(&mut rx, "ready", |s| s.unready.is_empty()).await;
    assert_eq!(s.entries.len(), 1);
    cancel.cancel();

    // Nobody listening at all.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let config = KubernetesSourceConfig {
        api_server: Some(url),
        ..Default::default()
    };
    let src = KubernetesSource::new(config.clone());
    assert!(
        !src.initial().unready.is_empty(),
        "not ready before anything is read"
    );
    let (tx, mut rx) = mpsc::channel(4);
    let cancel = CancellationToken::new();
    src.watch(client(&config).await.unwrap(), tx, cancel.clone());
    let s = until(&mut rx, "a failed connection", |_| true).await;
    assert!(s.entries.is_empty() && !s.unready.is_empty(), "{s:?}");
    cancel.cancel();
}

/// 10,000 endpoints across 500 objects load in one complete list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_objects_load() {
    let api = fake().await;
    for o in 0..500 {
        let eps: Vec<_> = (0..20)
            .map(|i| ep(&format!("r{i}.o{o}.example.com"), "192.0.2.1"))
            .collect();
        api.apply("bulk", &format!("o{o}"), &[], json!(eps));
    }
    let (mut rx, cancel, objects, _) = source_for(&api, |_| {}).await;
    let s = until(&mut rx, "ready", |s| s.unready.is_empty()).await;
    assert_eq!((s.entries.len(), s.errors.len()), (10_000, 0));
    assert_eq!(objects.lock().unwrap().len(), 500);
    cancel.cancel();
}

fn outcome(resource: &str, record: &str, phase: Phase, detail: &str) -> RecordOutcome {
    RecordOutcome {
        resource: resource.into(),
        record: record.into(),
        phase,
        detail: detail.into(),
    }
}

/// The condition follows the records: all converged is Ready; an invalid target (in
/// the object, or refused by the provider) Invalid; a conflict Conflict; else Pending.
#[test]
fn the_condition_follows_the_records() {
    let mut objects = Objects::default();
    objects.apply(
        "web/a",
        Some(4),
        &text(
            "web",
            "a",
            json!([
                ep("a.example.com", "192.0.2.1"),
                ep("b.example.com", "192.0.2.2")
            ]),
        ),
    );
    let state = objects.get("web/a").unwrap();
    let conv_a = outcome(
        "DNSEndpoint web/a",
        "a.example.com. A",
        Phase::Converged,
        "",
    );
    let conv_b = outcome(
        "DNSEndpoint web/a",
        "b.example.com. A",
        Phase::Converged,
        "",
    );
    let c = condition(state, "web/a", &[&conv_a, &conv_b]);
    assert_eq!(
        (c.ready, c.reason, c.message.as_str()),
        (true, "Ready", "2 record(s) converged")
    );

    let c = condition(state, "web/a", &[&conv_a]);
    assert_eq!(
        (c.ready, c.reason),
        (false, "Pending"),
        "a record not in force yet"
    );
    let pend = outcome("DNSEndpoint web/a", "b.example.com. A", Phase::Pending, "");
    let c = condition(state, "web/a", &[&conv_a, &pend]);
    assert_eq!(c.reason, "Pending");
    assert!(
        c.message.contains("1 of 2") && c.message.contains("b.example.com. A: pending"),
        "{}",
        c.message
    );
    let conf = outcome(
        "DNSEndpoint web/a",
        "b.example.com. A",
        Phase::Conflict,
        "exists: owned by nobody",
    );
    let c = condition(state, "web/a", &[&conv_a, &conf]);
    assert_eq!(c.reason, "Conflict");
    assert!(
        c.message.contains("b.example.com. A: conflict: exists"),
        "{}",
        c.message
    );
    let inv = outcome(
        "DNSEndpoint web/a",
        "b.example.com. A",
        Phase::Invalid,
        "422 bad value",
    );
    assert_eq!(
        condition(state, "web/a", &[&conv_a, &inv]).reason,
        "Invalid"
    );

    objects.apply(
        "web/bad",
        Some(1),
        &text("web", "bad", json!([ep("a.example.com", "300.1.1.1")])),
    );
    let c = condition(objects.get("web/bad").unwrap(), "web/bad", &[]);
    assert_eq!((c.ready, c.reason), (false, "Invalid"));
    assert!(
        c.message
            .starts_with("spec.endpoints[0]: a.example.com. A: target \"300.1.1.1\""),
        "{}",
        c.message
    );
}

/// Statuses are written by server-side apply, once per change, at most once per
/// interval per object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_are_applied_once_per_change_and_rate_limited() {
    let api = fake().await;
    api.apply("web", "a", &[], json!([ep("a.example.com", "192.0.2.1")]));
    api.apply("web", "bad", &[], json!([ep("b.example.com", "300.1.1.1")]));
    let (mut rx, cancel, objects, c) = source_for(&api, |_| {}).await;
    until(&mut rx, "ready", |s| s.unready.is_empty()).await;
    let mut writer = StatusWriter::new(c, Duration::from_secs(60));
    let pending = [outcome(
        "DNSEndpoint web/a",
        "a.example.com. A",
        Phase::Pending,
        "",
    )];
    assert_eq!(writer.round(&objects, &pending).await, 2);
    let writes = api.status_writes();
    let w = writes.iter().find(|w| w.name == "a").unwrap();
    assert_eq!(w.content_type, "application/apply-patch+yaml");
    assert!(
        w.query.contains("fieldManager=dnsplane") && w.query.contains("force=true"),
        "{}",
        w.query
    );
    let a = api.object("web", "a").unwrap();
    assert_eq!(a["status"]["observedGeneration"], 1);
    assert_eq!(a["status"]["conditions"][0]["reason"], "Pending");
    let bad = api.object("web", "bad").unwrap();
    assert_eq!(bad["status"]["conditions"][0]["status"], "False");
    assert_eq!(bad["status"]["conditions"][0]["reason"], "Invalid");

    // Unchanged: nothing written. Changed within the interval: not yet.
    assert_eq!(writer.round(&objects, &pending).await, 0);
    let converged = [outcome(
        "DNSEndpoint web/a",
        "a.example.com. A",
        Phase::Converged,
        "",
    )];
    assert_eq!(writer.round(&objects, &converged).await, 0);
    let mut writer = StatusWriter::new(api_client(&api).await, Duration::ZERO);
    writer.round(&objects, &converged).await;
    let a = api.object("web", "a").unwrap();
    assert_eq!(a["status"]["conditions"][0]["status"], "True");
    assert_eq!(a["status"]["conditions"][0]["reason"], "Ready");
    cancel.cancel();
}

async fn api_client(api: &FakeKubeApi) -> kube::Client {
    client(&KubernetesSourceConfig {
        api_server: Some(api.url()),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// What of the status a cluster keeps is the CRD's call: with external-dns's CRD
/// installed, the API server prunes every condition dnsplane writes (its status schema
/// declares only `observedGeneration`); with dnsplane's (deploy/k8s), the status of
/// each reason (Ready, Invalid, Conflict, Pending) is stored as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crd_decides_what_of_the_status_is_kept() {
    for (crd, keeps_conditions) in [(EXTERNAL_DNS_CRD, false), (DNSPLANE_CRD, true)] {
        let api = FakeKubeApi::start_with_crd(Crd::parse(crd).unwrap()).await;
        for name in ["ready", "conflict", "pending"] {
            api.apply(
                "web",
                name,
                &[],
                json!([ep(&format!("{name}.example.com"), "192.0.2.1")]),
            );
        }
        api.apply(
            "web",
            "bad",
            &[],
            json!([ep("bad.example.com", "300.1.1.1")]),
        );
        let (mut rx, cancel, objects, c) = source_for(&api, |_| {}).await;
        until(&mut rx, "ready", |s| s.unready.is_empty()).await;
        let outcomes = [
            outcome(
                "DNSEndpoint web/ready",
                "ready.example.com. A",
                Phase::Converged,
                "",
            ),
            outcome(
                "DNSEndpoint web/conflict",
                "conflict.example.com. A",
                Phase::Conflict,
                "exists: owned by nobody",
            ),
            outcome(
                "DNSEndpoint web/pending",
                "pending.example.com. A",
                Phase::Pending,
                "",
            ),
        ];
        let mut writer = StatusWriter::new(c, Duration::ZERO);
        assert_eq!(writer.round(&objects, &outcomes).await, 4);
        let writes = api.status_writes();
        for (name, reason) in [
            ("ready", "Ready"),
            ("conflict", "Conflict"),
            ("pending", "Pending"),
            ("bad", "Invalid"),
        ] {
            let written = &writes.iter().find(|w| w.name == name).unwrap().body["status"];
            assert_eq!(written["conditions"][0]["reason"], reason);
            assert_eq!(written["observedGeneration"], 1);
            let stored = &api.object("web", name).unwrap()["status"];
            if keeps_conditions {
                assert_eq!(stored, written, "{name}: the status is stored as written");
            } else {
                assert_eq!(stored, &json!({"observedGeneration": 1}), "{name}: pruned");
            }
        }
        cancel.cancel();
    }
}

/// A message never exceeds what metav1.Condition allows (an API server refuses the
/// whole status otherwise): ten long provider errors are cut.
#[test]
fn a_long_message_is_cut_to_the_conditions_limit() {
    let mut objects = Objects::default();
    let eps: Vec<_> = (0..12)
        .map(|i| ep(&format!("r{i}.example.com"), "192.0.2.1"))
        .collect();
    objects.apply("web/a", Some(1), &text("web", "a", json!(eps)));
    let long = "é".repeat(5000);
    let outcomes: Vec<_> = (0..12)
        .map(|i| {
            outcome(
                "DNSEndpoint web/a",
                &format!("r{i}.example.com. A"),
                Phase::Invalid,
                &long,
            )
        })
        .collect();
    let refs: Vec<_> = outcomes.iter().collect();
    let c = condition(objects.get("web/a").unwrap(), "web/a", &refs);
    assert_eq!(c.reason, "Invalid");
    assert_eq!(c.message.chars().count(), MAX_MESSAGE_CHARS);
    assert!(c.message.ends_with('…') && c.message.starts_with("r0.example.com. A"));
    // A short one is left alone.
    let c = condition(objects.get("web/a").unwrap(), "web/a", &refs[..1]);
    assert!(
        !c.message.contains('…') && c.message.contains("r0.example.com. A"),
        "{}",
        c.message
    );
}

mod kinds_through_the_api {
    //! The translated kinds through the real watch machinery against the fake API
    //! server: what a cluster holds becomes records; a dependency's change moves them;
    //! a kind the account may not read makes the source not ready and deletes nothing.
    use super::*;
    use dnsplane_testing::kube_api::{Resource, fixtures};

    const HOST: &str = "external-dns.alpha.kubernetes.io/hostname";

    async fn source(
        api: &FakeKubeApi,
        kinds: &[&str],
    ) -> (
        mpsc::Receiver<Snapshot>,
        CancellationToken,
        crate::source::SourceParts,
    ) {
        let config = KubernetesSourceConfig {
            api_server: Some(api.url()),
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            ..KubernetesSourceConfig::default()
        };
        let c = client(&config).await.expect("client");
        let src = KubernetesSource::new(config).with_watch_timeout(5);
        let parts = src.parts();
        let (tx, rx) = mpsc::channel(16);
        let cancel = CancellationToken::new();
        src.watch(c, tx, cancel.clone());
        (rx, cancel, parts)
    }

    fn record<'a>(s: &'a Snapshot, name: &str) -> Option<&'a crate::source::DesiredEntry> {
        s.entries.iter().find(|e| e.name.to_string() == name)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn services_ingresses_and_routes_become_records_and_follow_their_gateway() {
        let api = FakeKubeApi::start().await;
        api.apply_object(
            Resource::Service,
            fixtures::service_load_balancer(
                "web",
                "app",
                &[(HOST, "app.example.com")],
                &["192.0.2.1"],
            ),
        );
        api.apply_object(
            Resource::Ingress,
            fixtures::ingress(
                "web",
                "site",
                &[],
                Some("nginx"),
                &["site.example.com"],
                &[],
                &["lb.example.net"],
            ),
        );
        api.apply_object(
            Resource::Gateway,
            fixtures::gateway(
                "infra",
                "gw",
                &[("http", Some("*.example.com"))],
                &["192.0.2.50"],
            ),
        );
        api.apply_object(
            Resource::HttpRoute,
            fixtures::route(
                "HTTPRoute",
                "web",
                "r",
                &[],
                &[("infra", "gw")],
                &["shop.example.com"],
                true,
            ),
        );
        let (mut rx, cancel, parts) = source(&api, &["Service", "Ingress", "HTTPRoute"]).await;
        let s = until(&mut rx, "three records, ready", |s| {
            s.unready.is_empty() && s.entries.len() == 3
        })
        .await;
        let app = record(&s, "app.example.com.").expect("the Service's record");
        assert_eq!(
            (app.rtype.as_str(), app.values.clone()),
            ("A", vec!["192.0.2.1".to_string()])
        );
        assert_eq!(app.origin.resource.as_ref(), "Service web/app");
        let site = record(&s, "site.example.com.").expect("the Ingress's record");
        assert_eq!(site.rtype.as_str(), "CNAME");
        assert_eq!(site.origin.resource.as_ref(), "Ingress web/site");
        let shop = record(&s, "shop.example.com.").expect("the route's record");
        assert_eq!(shop.values, ["192.0.2.50"]);
        // Every watch is named in the parts, all ready.
        let names: Vec<String> = parts
            .lock()
            .unwrap()
            .iter()
            .map(|p| p.name.clone())
            .collect();
        for want in [
            "Service in all namespaces",
            "Ingress in all namespaces",
            "HTTPRoute in all namespaces",
            "Node",
            "Gateway in all namespaces",
            "Namespace",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        assert!(parts.lock().unwrap().iter().all(|p| p.ready));

        // The Gateway's address changes: the route's record follows.
        api.apply_object(
            Resource::Gateway,
            fixtures::gateway(
                "infra",
                "gw",
                &[("http", Some("*.example.com"))],
                &["192.0.2.51"],
            ),
        );
        until(&mut rx, "the route on the new address", |s| {
            record(s, "shop.example.com.").is_some_and(|e| e.values == ["192.0.2.51"])
        })
        .await;
        // The Service is deleted: its record goes, the others stay.
        api.delete_object(Resource::Service, "web", "app");
        let s = until(&mut rx, "the Service's record gone", |s| {
            record(s, "app.example.com.").is_none()
        })
        .await;
        assert_eq!(s.entries.len(), 2);
        cancel.cancel();
    }

    /// Never delete on doubt, before the first complete list: while one kind is
    /// refused from the start, what the other kinds listed is not handed on as the
    /// source's records (the planner plans nothing yet anyway); once every kind has
    /// listed, all the records come together.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_partial_first_list_hands_on_no_records() {
        let api = FakeKubeApi::start().await;
        api.apply_object(
            Resource::Service,
            fixtures::service_load_balancer(
                "web",
                "app",
                &[(HOST, "app.example.com")],
                &["192.0.2.1"],
            ),
        );
        api.apply_object(
            Resource::Ingress,
            fixtures::ingress(
                "web",
                "site",
                &[],
                Some("nginx"),
                &["site.example.com"],
                &[],
                &["192.0.2.9"],
            ),
        );
        api.forbid(Resource::Ingress);
        let (mut rx, cancel, _) = source(&api, &["Service", "Ingress"]).await;
        let s = until(&mut rx, "the Ingresses refused, the rest listed", |s| {
            s.unready.len() == 1 && s.unready[0].starts_with("Ingress")
        })
        .await;
        assert!(s.entries.is_empty(), "{:?}", s.entries);
        api.allow(Resource::Ingress);
        let s = until(&mut rx, "ready", |s| s.unready.is_empty()).await;
        assert!(record(&s, "app.example.com.").is_some(), "{:?}", s.entries);
        assert!(record(&s, "site.example.com.").is_some(), "{:?}", s.entries);
        cancel.cancel();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_kind_the_account_may_not_read_is_not_ready_and_deletes_nothing() {
        let api = FakeKubeApi::start().await;
        api.apply_object(
            Resource::Service,
            fixtures::service_load_balancer(
                "web",
                "app",
                &[(HOST, "app.example.com")],
                &["192.0.2.1"],
            ),
        );
        api.apply_object(
            Resource::Ingress,
            fixtures::ingress(
                "web",
                "site",
                &[],
                Some("nginx"),
                &["site.example.com"],
                &[],
                &["192.0.2.9"],
            ),
        );
        let (mut rx, cancel, parts) = source(&api, &["Service", "Ingress"]).await;
        until(&mut rx, "both records", |s| {
            s.unready.is_empty() && s.entries.len() == 2
        })
        .await;
        // RBAC loses the Ingresses, and the watches break: relisting Ingresses is refused.
        api.forbid(Resource::Ingress);
        api.drop_watches();
        // Every watch broke; the others list again, the Ingresses stay refused. The
        // broken connection itself may be reported first: wait for the refusal.
        let s = until(&mut rx, "the Ingress watch refused alone", |s| {
            s.unready.len() == 1
                && s.unready[0].starts_with("Ingress")
                && s.unready[0].contains("forbidden")
        })
        .await;
        assert_eq!(s.entries.len(), 2, "nothing deleted: {:?}", s.entries);
        assert_eq!(s.unready.len(), 1, "{:?}", s.unready);
        let u = &s.unready[0];
        assert!(u.starts_with("Ingress in all namespaces:"), "{u}");
        assert!(u.contains("forbidden"), "{u}");
        assert!(
            u.contains("list and watch ingresses in API group \"networking.k8s.io\""),
            "{u}"
        );
        let p = parts.lock().unwrap().clone();
        let ing = p
            .iter()
            .find(|p| p.name == "Ingress in all namespaces")
            .unwrap();
        assert!(!ing.ready);
        assert!(
            p.iter()
                .find(|p| p.name == "Service in all namespaces")
                .unwrap()
                .ready
        );
        // The Ingress deleted meanwhile is not seen, so it is kept; RBAC back: it goes.
        api.delete_object(Resource::Ingress, "web", "site");
        api.allow(Resource::Ingress);
        let s = until(&mut rx, "ready again, the Ingress gone", |s| {
            s.unready.is_empty() && s.entries.len() == 1
        })
        .await;
        assert_eq!(s.entries[0].name.to_string(), "app.example.com.");
        cancel.cancel();
    }
}

#[test]
fn outcomes_are_found_by_the_object_that_asked_for_them() {
    let outcomes = [
        outcome("Service a/web2", "b.example.com. A", Phase::Converged, ""),
        outcome("Service a/web", "a.example.com. A", Phase::Converged, ""),
        outcome("Ingress a/web", "c.example.com. A", Phase::Pending, ""),
        outcome("Service a/web", "a.example.com. AAAA", Phase::Conflict, "x"),
    ];
    let by = status::ByResource::new(&outcomes);
    let records =
        |r: &str| -> Vec<String> { by.get(r).iter().map(|o| o.record.to_string()).collect() };
    assert_eq!(
        records("Service a/web"),
        ["a.example.com. A", "a.example.com. AAAA"]
    );
    assert_eq!(records("Service a/web2"), ["b.example.com. A"]);
    assert_eq!(records("Ingress a/web"), ["c.example.com. A"]);
    assert!(records("Service a/we").is_empty());
    assert!(records("Service b/web").is_empty());
}
