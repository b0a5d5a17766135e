//! Issue 13, hostile and malformed input, end to end: a planner with a file source and
//! an applier in front of a real PowerDNS. Once the zone has converged, everything
//! that once crashed, hung or emptied a zone is put into the watched directory at once
//! (a FIFO, a symlink to `/dev/zero`, a symlink out of the tree, a 20 KB deeply nested
//! file, a 5 MiB file, a 70 KB TXT value beside a valid record, a file truncated to
//! zero bytes and one overwritten with NUL bytes). The planner must stay up and
//! answer, create the valid new record, keep every record it owned, and name each bad
//! file with its reason in `dnsplane status`, which exits non-zero.
use dnsplane_common::Name;
use dnsplane_e2e::binary;
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Safety net for each wait; not a performance claim.
const WAIT: Duration = Duration::from_secs(60);

/// A DNSEndpoint manifest named `resource` with `(label, type, target)` endpoints.
fn manifest(zone: &Name, resource: &str, endpoints: &[(&str, &str, &str)]) -> String {
    let mut s = format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: {resource}\nspec:\n  endpoints:\n"
    );
    for (label, rtype, target) in endpoints {
        s.push_str(&format!(
            "    - dnsName: {label}.{zone}\n      recordType: {rtype}\n      recordTTL: 300\n      targets: [\"{target}\"]\n"
        ));
    }
    s
}

/// `dnsplane status` against the stack's planner: (exit code, stdout and stderr).
fn status(s: &RealStack) -> (Option<i32>, String) {
    let out = Command::new(binary("dnsplane"))
        .args([
            "status",
            "--addr",
            &format!("http://127.0.0.1:{}", s.planner_port),
        ])
        .env("DNSPLANE_LOG", "warn")
        .output()
        .expect("run dnsplane status");
    (out.status.code(), crate::stack::combined(&out))
}

/// Writes `text` to `path` through a rename, so the poller never sees half a file.
fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

#[test]
fn hostile_files_neither_crash_hang_nor_delete() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let zone = server.zone().clone();
    let desired = tempfile::tempdir().expect("temp dir");
    let outside = tempfile::tempdir().expect("temp dir");
    let dir = desired.path();

    // The valid state: 8 owned records in three files.
    let web = [
        ("www", "A", "192.0.2.10"),
        ("app", "A", "192.0.2.11"),
        ("api", "AAAA", "2001:db8::11"),
    ];
    let mail = [
        ("mail", "A", "192.0.2.25"),
        ("smtp", "A", "192.0.2.26"),
        ("imap", "A", "192.0.2.27"),
    ];
    let txt = [
        ("spf", "TXT", "v=spf1 -all"),
        ("verify", "TXT", "token=abc"),
    ];
    write_atomic(&dir.join("web.yaml"), &manifest(&zone, "web", &web));
    write_atomic(&dir.join("mail.yaml"), &manifest(&zone, "mail", &mail));
    write_atomic(&dir.join("txt.yaml"), &manifest(&zone, "txt", &txt));
    let owned: Vec<(&str, &str, String)> = web
        .iter()
        .chain(&mail)
        .map(|(l, t, v)| (*l, *t, v.to_string()))
        .chain(txt.iter().map(|(l, t, v)| (*l, *t, format!("\"{v}\""))))
        .collect();

    let opts = Options {
        planner_extra: format!(
            "\n[[sources]]\ntype = \"file\"\npaths = [\"{}\"]\n",
            dir.display()
        ),
        ..Options::default()
    };
    let mut s = RealStack::start(server, tools, opts);
    let all_there = |s: &RealStack| {
        owned
            .iter()
            .all(|(l, t, v)| s.dig(&format!("{l}.{zone}"), t) == [v.clone()])
    };
    s.wait_until("the zone converges on the 8 records", WAIT, |s| {
        all_there(s).then_some(())
    });
    let (code, out) = status(&s);
    assert_eq!(code, Some(0), "healthy before: {out}");

    // Everything at once.
    let fifo = dir.join("fifo.yaml");
    let ok = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(ok.success(), "mkfifo");
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).expect("symlink");
    let foreign = outside.path().join("foreign.yaml");
    std::fs::write(
        &foreign,
        manifest(&zone, "foreign", &[("foreign", "A", "192.0.2.66")]),
    )
    .expect("write");
    std::os::unix::fs::symlink(&foreign, dir.join("outside.yaml")).expect("symlink");
    write_atomic(&dir.join("deep.yaml"), &"- ".repeat(10_000)); // 20 KB
    let mut big = manifest(&zone, "big", &[("big", "A", "192.0.2.77")]);
    big.push_str(&format!("# {}\n", "x".repeat(5 << 20)));
    write_atomic(&dir.join("big.yaml"), &big);
    std::fs::write(dir.join("mail.yaml"), "").expect("truncate to zero bytes");
    let nul_len = std::fs::metadata(dir.join("txt.yaml")).expect("stat").len() as usize;
    std::fs::write(dir.join("txt.yaml"), vec![0u8; nul_len]).expect("NUL bytes");
    let huge = "v".repeat(70_000);
    write_atomic(
        &dir.join("new.yaml"),
        &manifest(
            &zone,
            "new",
            &[("new", "A", "192.0.2.99"), ("huge", "TXT", &huge)],
        ),
    );

    // The valid new record is created beside the huge one, which is refused alone.
    s.wait_until("new.<zone> A is created", WAIT, |s| {
        (s.dig(&format!("new.{zone}"), "A") == ["192.0.2.99"]).then_some(())
    });
    // Every bad file is named with its reason; the status exits non-zero.
    let zone_dir = std::fs::canonicalize(dir).expect("canonical");
    let path = |f: &str| dir.join(f).display().to_string();
    let expected: Vec<(String, String)> = vec![
        (path("fifo.yaml"), "a FIFO, not a regular file; skipped".into()),
        (
            path("zero.yaml"),
            format!("a symlink to /dev/zero, outside {}; skipped", zone_dir.display()),
        ),
        (path("outside.yaml"), "outside".into()),
        (path("deep.yaml"), "nested more than 64 deep".into()),
        (path("big.yaml"), "above the limit of 4 MiB for a manifest file".into()),
        (
            format!("{}:", path("new.yaml")),
            format!("huge.{zone} TXT: target \"vvv"),
        ),
        (
            path("mail.yaml"),
            "the file is empty (0 bytes); to remove its records, delete the file or write `endpoints: []`; keeping this file's 3 last accepted record(s)".into(),
        ),
        (
            path("txt.yaml"),
            "a NUL byte: this is not a YAML text (a truncated or corrupted write?); keeping this file's 2 last accepted record(s)".into(),
        ),
    ];
    let (code, out) = s.wait_until("status names every bad file", WAIT, |s| {
        let (code, out) = status(s);
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("source error: "))
            .collect();
        expected
            .iter()
            .all(|(file, why)| {
                lines.iter().any(|l| {
                    l.contains(&format!("source error: {file}")) && l.contains(why.as_str())
                })
            })
            .then_some((code, out))
    });
    assert_eq!(code, Some(2), "degraded by the source errors: {out}");
    assert!(
        out.contains("above the 65535 one record can carry") && !out.contains(&huge[..1000]),
        "the 70 KB value is refused with its size, not echoed: {out}"
    );

    // Nothing was deleted, even after a full sync against a fresh read, and nothing
    // from the bad files was written.
    let last = s.sync(true);
    assert_eq!(last.phase, "done", "{last:?}");
    assert!(
        all_there(&s),
        "every owned record is still served; logs:\n{}",
        s.logs()
    );
    for name in ["foreign", "big"] {
        assert_eq!(s.dig(&format!("{name}.{zone}"), "A"), Vec::<String>::new());
    }
    assert_eq!(s.dig(&format!("huge.{zone}"), "TXT"), Vec::<String>::new());
    assert_eq!(s.planner_exit(), None, "the planner is still running");
    let (code, _) = status(&s);
    assert_eq!(code, Some(2), "and still answers");
}
