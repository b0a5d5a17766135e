//! Issue 7: one trace across both services. A real OTLP/gRPC trace receiver runs in the
//! test; `dnsplane-planner` and `dnsplane-applier` run as processes exporting to it
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`), the applier writing to a real PowerDNS through the
//! `pdns` driver. After one sync both services' spans (told apart by their
//! `service.name` resource) share one trace id, and the provider's HTTP call span
//! descends from the planner's `sync` span: `provider.call` → `batch` →
//! `dnsplane.v1.Applier/Apply` (applier) → ... → `sync` (planner).
//!
//! Why PowerDNS rather than the embedded driver: the `provider.call` span exists for
//! both, but only an HTTP driver carries the trace further. A recording TCP proxy in
//! front of the PowerDNS API shows that the applier's requests carry a W3C
//! `traceparent` naming that very `provider.call` span as their parent. The account
//! has a quota, so the write's `quota.wait` span is in the trace as well.
use crate::stack::{Tools, endpoints};
use crate::stack::{pdns_of, start_pdns};
use dnsplane_e2e::{Proc, binary, free_port, grpcurl, num, wait_for};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Span = dnsplane_testing::otlp::ReceivedSpan;

/// A TCP proxy to `target` that records every byte clients send (one buffer per
/// connection): the HTTP requests, headers included.
fn recording_proxy(target: u16) -> (u16, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let port = listener.local_addr().expect("addr").port();
    let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", target)) else {
                continue;
            };
            let (Ok(mut client_w), Ok(mut server_r)) = (client.try_clone(), server.try_clone())
            else {
                continue;
            };
            let slot = {
                let mut seen = record.lock().expect("lock");
                seen.push(Vec::new());
                seen.len() - 1
            };
            let record = record.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n) = client.read(&mut buf) {
                    if n == 0 || server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    record.lock().expect("lock")[slot].extend_from_slice(&buf[..n]);
                }
                let _ = server.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server_r, &mut client_w);
                let _ = client_w.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (port, seen)
}

#[test]
fn one_trace_spans_planner_applier_and_the_providers_http_call() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = start_pdns() else { return };
    let pdns = pdns_of(&server);
    let (proxy_port, requests) = recording_proxy(pdns.api_port);

    let rt = crate::stack::threaded_runtime(2);
    let receiver = dnsplane_testing::otlp::OtlpReceiver::default();
    let collector = rt.block_on(receiver.start());
    let endpoint = format!("http://{collector}");
    let otel = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];

    let dir = tempfile::tempdir().expect("tempdir");
    let zone = server.zone().to_string();
    let base = zone.trim_end_matches('.');
    // A quota on the account (generous): its token wait is a span of the trace too.
    let account = server
        .account_toml("pdns")
        .replace(&pdns.api_url(), &format!("http://127.0.0.1:{proxy_port}"))
        + "[accounts.quota]\nrate = 1000.0\nburst = 100\n";
    assert!(account.contains(&format!(":{proxy_port}\"")), "{account}");
    std::fs::write(dir.path().join("applier.toml"), account).expect("applier.toml");
    let desired = dir.path().join("desired");
    std::fs::create_dir_all(&desired).expect("dir");
    let names: Vec<String> = (1..=3).map(|i| format!("t{i}.{base}")).collect();
    let values = ["192.0.2.11", "192.0.2.12", "192.0.2.13"];
    let eps: Vec<(&str, &str, &[&str])> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| (n.as_str(), "A", std::slice::from_ref(v)))
        .collect();
    std::fs::write(desired.join("web.yaml"), endpoints("web", &eps)).expect("desired");
    let (applier_port, planner_port) = (free_port(), free_port());
    std::fs::write(
        dir.path().join("planner.toml"),
        format!(
            "owner_id = \"e2e\"\napplier = \"http://127.0.0.1:{applier_port}\"\n\
             [sync]\ninterval = \"10m\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n\
             [[zones]]\nname = \"{zone}\"\naccount = \"pdns\"\n\
             [[sources]]\ntype = \"file\"\npaths = [\"desired\"]\n"
        ),
    )
    .expect("planner.toml");

    let path = |f: &str| dir.path().join(f).to_str().expect("utf8").to_string();
    let mut applier = Proc::spawn_with_env(
        "applier",
        &binary("dnsplane-applier"),
        &[
            "--config",
            &path("applier.toml"),
            "--listen",
            &format!("127.0.0.1:{applier_port}"),
            "--admin-listen",
            "off",
        ],
        &otel,
        dir.path().join("applier.log"),
    );
    let logs = |procs: &[&Proc]| {
        procs
            .iter()
            .map(|p| format!("--- {} ---\n{}\n", p.name, p.log_text()))
            .collect::<String>()
    };
    let up = wait_for(Duration::from_secs(30), || {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[&format!("127.0.0.1:{applier_port}"), "list"],
        );
        (ok && out.contains("dnsplane.v1.Applier")).then_some(())
    });
    assert!(
        up.is_some(),
        "applier did not start:\n{}",
        logs(&[&applier])
    );
    let mut planner = Proc::spawn_with_env(
        "planner",
        &binary("dnsplane-planner"),
        &[
            "--config",
            &path("planner.toml"),
            "--listen",
            &format!("127.0.0.1:{planner_port}"),
            "--admin-listen",
            "off",
        ],
        &otel,
        dir.path().join("planner.log"),
    );
    let converged = wait_for(Duration::from_secs(60), || {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[
                &format!("127.0.0.1:{planner_port}"),
                "dnsplane.v1.Planner/GetStatus",
            ],
        );
        let st: serde_json::Value = if ok {
            serde_json::from_str(&out).ok()?
        } else {
            return None;
        };
        (num(&st["zones"][0]["recordsByState"]["converged"]) == 3).then_some(())
    });
    assert!(
        converged.is_some(),
        "the sync did not converge:\n{}",
        logs(&[&applier, &planner])
    );

    // SIGTERM: both flush their last spans before exiting.
    let planner_exit = planner.terminate();
    let applier_exit = applier.terminate();
    assert!(
        planner_exit.is_some_and(|e| e.success()) && applier_exit.is_some_and(|e| e.success()),
        "exits {planner_exit:?} {applier_exit:?}:\n{}",
        logs(&[&applier, &planner])
    );
    let spans = receiver.spans();
    drop(rt);
    let by_id: HashMap<&str, &Span> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let ancestry = |s: &Span| {
        let mut chain = vec![s.clone()];
        while let Some(p) = by_id.get(chain.last().expect("non-empty").parent.as_str()) {
            chain.push((*p).clone());
        }
        chain
    };
    let dump = || {
        spans
            .iter()
            .map(|s| {
                format!(
                    "{} {} {} {}<-{} {:?}",
                    s.service, s.name, s.trace_id, s.span_id, s.parent, s.attrs
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    for service in ["dnsplane-planner", "dnsplane-applier"] {
        assert!(
            spans.iter().any(|s| s.service == service),
            "no span from {service}:\n{}",
            dump()
        );
    }

    // The write: provider.call (pdns, apply) → batch → Apply → ... → the planner's sync.
    let call = spans
        .iter()
        .find(|s| {
            s.name == "provider.call"
                && s.attrs.get("operation").map(String::as_str) == Some("apply")
        })
        .unwrap_or_else(|| panic!("no provider.call span for the write:\n{}", dump()));
    assert_eq!(call.service, "dnsplane-applier");
    for (k, v) in [("provider", "pdns"), ("attempt", "0"), ("items", "6")] {
        assert_eq!(
            call.attrs.get(k).map(String::as_str),
            Some(v),
            "provider.call {k}: {:?}",
            call.attrs
        );
    }
    assert!(
        !call.attrs.contains_key("error.class"),
        "the write succeeded: {:?}",
        call.attrs
    );
    let chain = ancestry(call);
    let names: Vec<(&str, &str)> = chain
        .iter()
        .map(|s| (s.service.as_str(), s.name.as_str()))
        .collect();
    assert!(
        chain.iter().all(|s| s.trace_id == call.trace_id),
        "one trace id along {names:?}"
    );
    let sync = chain.iter().find(|s| s.name == "sync").unwrap_or_else(|| {
        panic!(
            "provider.call does not descend from a sync span: {names:?}\n{}",
            dump()
        )
    });
    assert_eq!(sync.service, "dnsplane-planner", "{names:?}");
    assert_eq!(sync.attrs.get("zone"), Some(&zone), "{:?}", sync.attrs);
    assert_eq!(names[1], ("dnsplane-applier", "batch"), "{names:?}");
    assert_eq!(
        names[2],
        ("dnsplane-applier", "dnsplane.v1.Applier/Apply"),
        "{names:?}"
    );
    let batch = &chain[1];
    for (k, v) in [
        ("zone", zone.as_str()),
        ("account", "pdns"),
        ("provider", "pdns"),
        ("batch.size", "3"),
        ("outcome.applied", "3"),
        ("provider.calls", "1"),
    ] {
        assert_eq!(
            batch.attrs.get(k).map(String::as_str),
            Some(v),
            "batch {k}: {:?}",
            batch.attrs
        );
    }
    assert_eq!(
        chain[2].attrs.get("rpc.method").map(String::as_str),
        Some("Apply")
    );
    let first_planner = chain
        .iter()
        .position(|s| s.service == "dnsplane-planner")
        .expect("a planner span");
    assert!(
        chain[..first_planner]
            .iter()
            .all(|s| s.service == "dnsplane-applier"),
        "{names:?}"
    );

    // The write waited for its quota token inside that provider.call.
    let quota = spans
        .iter()
        .find(|s| s.name == "quota.wait" && s.parent == call.span_id)
        .unwrap_or_else(|| {
            panic!(
                "no quota.wait span under the write's provider.call:\n{}",
                dump()
            )
        });
    assert_eq!(
        quota.attrs.get("operation").map(String::as_str),
        Some("apply"),
        "{:?}",
        quota.attrs
    );
    assert_eq!(
        quota.attrs.get("account").map(String::as_str),
        Some("pdns"),
        "{:?}",
        quota.attrs
    );

    // The planner's read of the zone joins the same sync's trace too.
    let read = spans
        .iter()
        .filter(|s| {
            s.name == "provider.call"
                && s.attrs.get("operation").map(String::as_str) == Some("list")
        })
        .find(|s| ancestry(s).iter().any(|a| a.span_id == sync.span_id))
        .unwrap_or_else(|| panic!("no provider read under the sync span:\n{}", dump()));
    assert_eq!(read.attrs.get("account").map(String::as_str), Some("pdns"));

    // The HTTP request of that write carried traceparent: same trace, parent = the
    // provider.call span.
    let sent: Vec<String> = requests
        .lock()
        .expect("lock")
        .iter()
        .flat_map(|bytes| {
            String::from_utf8_lossy(bytes)
                .lines()
                .filter_map(|l| l.strip_prefix("traceparent: ").map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect();
    let want = format!("00-{}-{}-01", call.trace_id, call.span_id);
    assert!(
        sent.contains(&want),
        "no PowerDNS request carried {want}; traceparents seen: {sent:?}"
    );
    let read_tp = format!("00-{}-{}-01", read.trace_id, read.span_id);
    assert!(
        sent.contains(&read_tp),
        "the read's request carried {read_tp}: {sent:?}"
    );
}
