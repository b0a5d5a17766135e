//! The Kubernetes source end to end: planner and applier processes, the embedded
//! provider, and DNSEndpoints served by the fake API server of `dnsplane-testing`,
//! with dnsplane's CRD (deploy/k8s) installed: it prunes what the CRD does not
//! declare, as a cluster's API server does, so the statuses asserted here are the ones
//! a cluster keeps.
use crate::stack::{Stack, Tools, seed};
use dnsplane_testing::crd::{Crd, DNSPLANE_CRD};
use dnsplane_testing::kube_api::FakeKubeApi;
use dnsplane_testing::wait_for;
use serde_json::json;
use std::time::Duration;

fn ep(name: &str, target: &str) -> serde_json::Value {
    json!([{"dnsName": name, "recordType": "A", "targets": [target]}])
}

/// The fake API server with deploy/k8s's DNSEndpoint CRD.
fn fake(rt: &tokio::runtime::Runtime) -> FakeKubeApi {
    let crd = Crd::parse(DNSPLANE_CRD).expect("deploy/k8s/05-crd-dnsendpoint.yaml");
    rt.block_on(FakeKubeApi::start_with_crd(crd))
}

/// The object's `Ready` condition as last written: (status, reason).
fn ready_of(api: &FakeKubeApi, ns: &str, name: &str) -> Option<(String, String)> {
    let o = api.object(ns, name)?;
    let c = &o["status"]["conditions"][0];
    Some((
        c["status"].as_str()?.to_string(),
        c["reason"].as_str()?.to_string(),
    ))
}

fn wait_ready(s: &Stack, api: &FakeKubeApi, ns: &str, name: &str, want: (&str, &str)) {
    let mut last = None;
    let ok = wait_for(Duration::from_secs(30), || {
        last = ready_of(api, ns, name);
        (last.as_ref().map(|(a, b)| (a.as_str(), b.as_str())) == Some(want)).then_some(())
    });
    assert!(
        ok.is_some(),
        "{ns}/{name}: wanted {want:?}, last status {last:?}; object {:?}; logs:\n{}",
        api.object(ns, name),
        s.logs()
    );
}

/// A stack whose planner reads `api` (statuses every 200 ms) beside a file source (it
/// needs a manifest to start; its record, `static.example.com`, is beside the API's).
fn stack(tools: Tools, api: &FakeKubeApi) -> Stack {
    let file = "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: static}\nspec:\n  endpoints:\n    - {dnsName: static.example.com, recordType: A, targets: [192.0.2.1]}\n";
    let extra = format!(
        "[[sources]]\ntype = \"kubernetes\"\napi_server = \"{}\"\nstatus_interval = \"200ms\"\n",
        api.url()
    );
    Stack::with_config(tools, &[("static.yaml", file)], "report", "", &extra)
}

/// DNSEndpoints created, changed and deleted in the API reach the provider, each
/// object's status says how it went (Ready, Invalid, Conflict, with their messages
/// and observedGeneration, as the CRD keeps them; Pending is the planner's tests'),
/// and a planner restarted while the API fails deletes nothing.
#[test]
fn dnsendpoints_from_the_api_reach_the_provider_and_report_back() {
    let Some(tools) = Tools::find() else { return };
    let rt = crate::stack::threaded_runtime(1);
    let api = fake(&rt);
    api.apply("web", "app", &[], ep("app.example.com", "192.0.2.10"));
    api.apply("web", "bad", &[], ep("bad.example.com", "300.1.1.1"));
    api.apply("web", "taken", &[], ep("taken.example.com", "192.0.2.30"));
    let mut s = stack(tools, &api);
    // Another writer's record where `taken` wants one: a conflict ("report").
    seed(&s.state_dir(), &[("taken.example.com", "A", "192.0.2.99")]);
    s.start();
    s.wait_dns("app.example.com", "A", &["192.0.2.10"]);
    s.wait_dns("static.example.com", "A", &["192.0.2.1"]);
    wait_ready(&s, &api, "web", "app", ("True", "Ready"));
    wait_ready(&s, &api, "web", "bad", ("False", "Invalid"));
    wait_ready(&s, &api, "web", "taken", ("False", "Conflict"));
    let app = api.object("web", "app").expect("app");
    assert_eq!(app["status"]["observedGeneration"], 1);
    let ready = &app["status"]["conditions"][0];
    assert_eq!(ready["type"], "Ready");
    assert_eq!(ready["observedGeneration"], 1);
    assert_eq!(ready["message"], "1 record(s) converged");
    assert!(ready["lastTransitionTime"].is_string(), "{ready}");
    let taken = api.object("web", "taken").expect("taken");
    let message = taken["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or("");
    assert!(
        message.contains("taken.example.com. A: conflict"),
        "{message}"
    );
    let bad = api.object("web", "bad").expect("bad");
    let message = bad["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or("");
    assert!(
        message.contains("spec.endpoints[0]") && message.contains("300.1.1.1"),
        "{message}"
    );

    api.apply("web", "app", &[], ep("app.example.com", "192.0.2.11"));
    s.wait_dns("app.example.com", "A", &["192.0.2.11"]);
    let reported = wait_for(Duration::from_secs(30), || {
        let o = api.object("web", "app")?;
        (o["status"]["observedGeneration"] == 2 && o["status"]["conditions"][0]["status"] == "True")
            .then_some(())
    });
    assert!(
        reported.is_some(),
        "generation 2 not reported Ready: {:?}",
        api.object("web", "app")
    );
    api.apply("web", "gone", &[], ep("gone.example.com", "192.0.2.20"));
    s.wait_dns("gone.example.com", "A", &["192.0.2.20"]);
    assert!(api.delete("web", "gone"));
    s.wait_dns("gone.example.com", "A", &[]);

    // A planner that starts while the API fails plans nothing: app stays.
    s.planner.take().expect("planner").terminate();
    api.set_failing(true);
    s.start_planner();
    let status = s.planner_call("GetStatus", "{}");
    let text = status.to_string();
    assert!(
        text.contains("not listed yet") || text.contains("waiting for the first complete list"),
        "{text}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        s.dig("app.example.com", "A"),
        ["192.0.2.11"],
        "logs:\n{}",
        s.logs()
    );
    assert_eq!(s.dig("static.example.com", "A"), ["192.0.2.1"]);
    // The API back: the records stay, and changes flow again.
    api.set_failing(false);
    api.apply("web", "app", &[], ep("app.example.com", "192.0.2.12"));
    s.wait_dns("app.example.com", "A", &["192.0.2.12"]);
    drop(s);
    drop(api);
}

/// 10,000 endpoints in 100 DNSEndpoint objects converge onto the provider, and every
/// object reports Ready.
#[test]
fn ten_thousand_endpoints_from_the_api_converge_and_report_ready() {
    let Some(tools) = Tools::find() else { return };
    let rt = crate::stack::threaded_runtime(1);
    let api = fake(&rt);
    const OBJECTS: usize = 100;
    const PER_OBJECT: usize = 100;
    for o in 0..OBJECTS {
        let endpoints: Vec<serde_json::Value> = (0..PER_OBJECT)
            .map(|i| {
                json!({"dnsName": format!("h{i}.o{o}.example.com"), "recordType": "A",
                       "targets": [format!("10.0.{o}.{i}")]})
            })
            .collect();
        api.apply(
            "bulk",
            &format!("o{o}"),
            &[],
            serde_json::Value::from(endpoints),
        );
    }
    let mut s = stack(tools, &api);
    s.start();
    let mut not_ready = Vec::new();
    let all = wait_for(Duration::from_secs(120), || {
        not_ready = (0..OBJECTS)
            .filter(|o| {
                ready_of(&api, "bulk", &format!("o{o}")) != Some(("True".into(), "Ready".into()))
            })
            .collect();
        not_ready.is_empty().then_some(())
    });
    assert!(
        all.is_some(),
        "objects not Ready: {:?} (e.g. {:?}); logs:\n{}",
        not_ready.len(),
        not_ready
            .first()
            .and_then(|o| api.object("bulk", &format!("o{o}"))),
        s.logs()
    );
    for (o, i) in [(0, 0), (42, 17), (99, 99)] {
        assert_eq!(
            s.dig(&format!("h{i}.o{o}.example.com"), "A"),
            [format!("10.0.{o}.{i}")]
        );
    }
    drop(s);
    drop(api);
}
