//! A headless Service end to end (issue 30): one record per ready endpoint of its
//! EndpointSlices, and one per Pod hostname, as external-dns publishes them; read from
//! the fake API server by the planner process, written by the applier process to a
//! real PowerDNS.
use super::kubernetes_kinds::{HOSTNAME, runtime, stack, wait_dns, zone};
use dnsplane_testing::kube_api::fixtures::{endpoint_slice, pod, service_headless};
use dnsplane_testing::kube_api::{FakeKubeApi, Resource};
use serde_json::Value;

/// Pod `name` (hostname the same) at `ip`, selected by Service `db`.
fn db_pod(name: &str, ip: &str) -> Value {
    let mut p = pod("default", name, name, ip);
    p["metadata"]["labels"]["app"] = "db".into();
    p
}

/// The Service's EndpointSlice: `db-0` and `db-1` at .5 and .6, ready as given, and
/// `db-2` at .7 never ready.
fn slice(db1_ready: bool) -> Value {
    endpoint_slice(
        "default",
        "db",
        "abc12",
        &[
            ("10.244.0.5", true, Some("db-0")),
            ("10.244.0.6", db1_ready, Some("db-1")),
            ("10.244.0.7", false, Some("db-2")),
        ],
    )
}

/// Ready endpoints are published, under the Service's name and each Pod's hostname;
/// an endpoint that stops being ready takes its address out; the Service deleted takes
/// its records.
#[test]
fn a_headless_service_publishes_its_ready_endpoints() {
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    let Some(s) = stack(&api, &["Service"], "") else {
        return;
    };
    let z = zone(&s);
    let db = format!("db.{z}");

    for (i, ip) in ["10.244.0.5", "10.244.0.6", "10.244.0.7"]
        .iter()
        .enumerate()
    {
        api.apply_object(Resource::Pod, db_pod(&format!("db-{i}"), ip));
    }
    api.apply_object(Resource::EndpointSlice, slice(true));
    api.apply_object(
        Resource::Service,
        service_headless("default", "db", &[(HOSTNAME, &db)]),
    );
    wait_dns(&s, &db, "A", &["10.244.0.5", "10.244.0.6"]);
    wait_dns(&s, &format!("db-0.{db}"), "A", &["10.244.0.5"]);
    wait_dns(&s, &format!("db-1.{db}"), "A", &["10.244.0.6"]);
    wait_dns(&s, &format!("db-2.{db}"), "A", &[]);

    // db-1 is no longer ready: its address leaves both names.
    api.apply_object(Resource::EndpointSlice, slice(false));
    wait_dns(&s, &db, "A", &["10.244.0.5"]);
    wait_dns(&s, &format!("db-1.{db}"), "A", &[]);
    wait_dns(&s, &format!("db-0.{db}"), "A", &["10.244.0.5"]);

    assert!(api.delete_object(Resource::Service, "default", "db"));
    wait_dns(&s, &db, "A", &[]);
    wait_dns(&s, &format!("db-0.{db}"), "A", &[]);
}
