//! The `dnsplane` CLI against a running stack: `plan` prints a readable diff, `records`
//! lists the stuck records with their reason and observed value, `status` counts, and
//! `sync` follows a sync to its end.
use crate::stack::{Stack, Tools, endpoints};
use dnsplane_e2e::{binary, wait_for};
use std::process::Command;
use std::time::Duration;

fn cli(s: &Stack, args: &[&str]) -> (bool, String) {
    let (code, text) = cli_code(s, args);
    (code == Some(0), text)
}

fn cli_code(s: &Stack, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(binary("dnsplane"))
        .args(args)
        .args(["--addr", &format!("http://127.0.0.1:{}", s.planner_port)])
        .env("DNSPLANE_LOG", "warn")
        .output()
        .expect("run dnsplane");
    (out.status.code(), crate::stack::combined(&out))
}

#[test]
fn cli_plan_records_status_and_sync() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::one_conflict(tools);
    s.start_until_www();

    let (ok, out) = cli(&s, &["plan"]);
    assert!(ok, "{out}");
    assert!(out.contains("zone example.com."), "{out}");
    assert!(
        out.contains("! legacy.example.com. A held back") && out.contains("198.51.100.7"),
        "the unowned record is shown with its observed value: {out}"
    );

    // A conflict is not converged: exit 2.
    let (code, out) = cli_code(&s, &["records"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("| legacy.example.com. | A    | conflict") && out.contains("60 198.51.100.7"),
        "{out}"
    );
    assert!(out.contains("1 record(s)"), "only the stuck record: {out}");

    let status = wait_for(Duration::from_secs(10), || {
        // The conflict makes the planner degraded: exit 2, with the rule's line.
        let (code, out) = cli_code(&s, &["status"]);
        (code == Some(2)
            && out.contains("converged=1")
            && out.contains("conflict=1")
            && out.contains("[conflicts]"))
        .then_some(out)
    });
    assert!(status.is_some(), "status never showed the counts");

    let (ok, out) = cli(&s, &["sync"]);
    assert!(ok, "{out}");
    assert!(out.contains("example.com. done"), "{out}");

    // `dnsplane status | head -0`: the reader is gone before the first line. The
    // command ends as Unix tools do on SIGPIPE (141), quietly, not with a panic.
    for args in [&["status"][..], &["records", "-o", "json"], &["plan"]] {
        let mut child = Command::new(binary("dnsplane"))
            .args(args)
            .args(["--addr", &format!("http://127.0.0.1:{}", s.planner_port)])
            .env("DNSPLANE_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run dnsplane");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }

    // An unreachable planner gets a message that says what to do.
    let out = Command::new(binary("dnsplane"))
        .args(["status", "--addr", "http://127.0.0.1:1"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && text.contains("cannot reach the planner"),
        "{text}"
    );
}

/// `plan` prints creates, updates and deletes as a readable diff (writes hang here, so
/// the plan stays pending).
#[test]
fn cli_plan_prints_a_readable_diff() {
    let Some(tools) = Tools::find() else { return };
    let desired = endpoints(
        "web",
        &[
            ("new.example.com", "A", &["192.0.2.1"]),
            ("mail.example.com", "MX", &["10 mx.example.net"]),
        ],
    );
    // Writes hang: the records stay in flight, which is what a sync would send again,
    // so `Plan` (the sync's own planning) lists them as changes. (Refused writes
    // would put them on their retry clock, and `Plan` would show them held back.)
    let hang_writes = "[[accounts.faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"1h\"\n";
    let mut s = Stack::with_config(tools, &[("web.yaml", &desired)], "report", hang_writes, "");
    s.start();
    let out = wait_for(Duration::from_secs(10), || {
        let (ok, out) = cli(&s, &["plan"]);
        (ok && out.contains("2 change(s)")).then_some(out)
    })
    .unwrap_or_else(|| panic!("plan never showed the two creates; logs:\n{}", s.logs()));
    assert!(out.contains("+ new.example.com. A 60 192.0.2.1"), "{out}");
    assert!(
        out.contains("+ mail.example.com. MX 60 10 mx.example.net."),
        "{out}"
    );
    assert!(out.contains("# missing"), "each change says why: {out}");
}

/// `Plan` is paginated: pages of `page_size` cover every change exactly once, and the
/// CLI follows them.
#[test]
fn plan_pages_cover_every_change_once() {
    let Some(tools) = Tools::find() else { return };
    let names: Vec<String> = (0..25).map(|i| format!("p{i}.example.com")).collect();
    let eps: Vec<(&str, &str, &[&str])> = names
        .iter()
        .map(|n| (n.as_str(), "A", &["192.0.2.1"][..]))
        .collect();
    // Writes hang: the records stay in flight, which is what a sync would send again,
    // so `Plan` (the sync's own planning) lists them as changes. (Refused writes
    // would put them on their retry clock, and `Plan` would show them held back.)
    let hang_writes = "[[accounts.faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"1h\"\n";
    let mut s = Stack::with_config(
        tools,
        &[("many.yaml", &endpoints("many", &eps))],
        "report",
        hang_writes,
        "",
    );
    s.start();
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let body = format!(r#"{{"pageSize":10,"pageToken":"{token}"}}"#);
        let page = s.planner_call("Plan", &body);
        pages += 1;
        for z in page["zones"].as_array().into_iter().flatten() {
            for c in z["changes"].as_array().into_iter().flatten() {
                seen.push(
                    c["change"]["ops"][0]["key"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                );
            }
        }
        match page["nextPageToken"].as_str() {
            Some(t) if !t.is_empty() => token = t.to_string(),
            _ => break,
        }
        assert!(pages < 10, "pagination does not end");
    }
    assert_eq!(pages, 3, "25 changes in pages of 10");
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 25, "every change exactly once: {seen:?}");
    let (ok, out) = cli(&s, &["plan"]);
    assert!(
        ok && out.contains("25 change(s)") && out.matches("zone example.com.").count() == 1,
        "{out}"
    );
}

/// A `dnsplane sync` of the whole zone plans every name, including those a push
/// marked for a targeted re-plan that has not come yet (source syncs are spaced by
/// `min_interval`, an hour here): once it is done they show converged, not pending.
#[test]
fn a_full_sync_clears_the_names_waiting_for_a_targeted_one() {
    let Some(tools) = Tools::find() else { return };
    let base = endpoints("base", &[("base.example.com", "A", &["192.0.2.9"])]);
    let mut s = Stack::new(tools, &[("base.yaml", &base)], "report");
    let config = s.path("planner.toml");
    let text = std::fs::read_to_string(&config).expect("planner.toml");
    let slow = text.replace("min_interval = \"100ms\"", "min_interval = \"1h\"");
    assert_ne!(slow, text, "the stack's min_interval was not found");
    std::fs::write(&config, slow).expect("planner.toml");
    s.start();
    let push = |source: &str, name: &str| {
        s.planner_call(
            "PutDesired",
            &format!(
                r#"{{"source":"{source}","records":[{{"name":"{name}","type":"A","values":["192.0.2.1"]}}]}}"#
            ),
        )
    };
    s.wait_dns("base.example.com", "A", &["192.0.2.9"]);
    // The start's sync was a source change too: these wait for the interval, unless
    // a full sync covers them.
    push("first", "one.example.com");
    push("second", "two.example.com");
    let waiting = s.planner_call("GetStatus", "{}")["zones"][0]["recordsByState"].clone();
    assert_eq!(waiting["pending"], 2, "{waiting}");
    let (ok, out) = cli(&s, &["sync"]);
    assert!(ok, "{out}");
    s.wait_dns("one.example.com", "A", &["192.0.2.1"]);
    s.wait_dns("two.example.com", "A", &["192.0.2.1"]);
    let by = s.planner_call("GetStatus", "{}")["zones"][0]["recordsByState"].clone();
    assert_eq!(by["converged"], 3, "{by}");
    assert!(by.get("pending").is_none_or(|p| p == 0), "{by}");
}
