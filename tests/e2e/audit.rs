//! Issue 18's audit trail: a conflict burst leaves exactly one audited CONFLICT
//! outcome per record in the audit file (rotated on the way), `dnsplane history` and
//! `Planner/History` read it back in the caller's scope, and every JSON log line of
//! the run carries each key once.
use crate::stack::{Stack, Tools, endpoints, seed};
use dnsplane_e2e::{Proc, binary, grpcurl, wait_for};
use dnsplane_planner::auth::tokens::digest_hex;
use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use std::collections::{BTreeMap, HashSet};
use std::process::Command;
use std::time::Duration;

const OTHER: &str = "example.org.";
const READER: &str = "audit-reader-token-0123456789";
const ORG_ONLY: &str = "audit-org-token-0123456789";

/// Any JSON value, refusing an object that names a key twice (serde_json's `Value`
/// would silently keep the last one).
struct Strict;

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_str<E>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut seen = HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            if !seen.insert(k.clone()) {
                return Err(A::Error::custom(format!("duplicate key {k:?}")));
            }
            map.next_value::<Strict>()?;
        }
        Ok(Strict)
    }
}

fn strict(line: &str) -> Result<(), String> {
    serde_json::from_str::<Strict>(line)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// grpcurl against the planner with a bearer token: (success, output).
fn call(s: &Stack, token: &str, method: &str, body: &str) -> (bool, String) {
    let addr = format!("127.0.0.1:{}", s.planner_port);
    let header = format!("authorization: Bearer {token}");
    let method = format!("dnsplane.v1.Planner/{method}");
    grpcurl(
        &s.tools.grpcurl,
        &["-H", &header, "-d", body, &addr, &method],
    )
}

fn counts(s: &Stack) -> (u64, u64) {
    let (ok, out) = call(s, READER, "GetStatus", "{}");
    if !ok {
        return (0, 0);
    }
    let st: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let zone = st["zones"]
        .as_array()
        .and_then(|z| z.iter().find(|z| z["zone"] == "example.com."))
        .cloned()
        .unwrap_or_default();
    let by = &zone["recordsByState"];
    (
        by["converged"].as_u64().unwrap_or(0),
        by["conflict"].as_u64().unwrap_or(0),
    )
}

/// Every event of the audit file and its rotated files, oldest first.
fn audit_events(s: &Stack) -> (Vec<serde_json::Value>, usize) {
    let dir = s.path("audit");
    let mut files: Vec<(usize, std::path::PathBuf)> = std::fs::read_dir(&dir)
        .expect("audit dir")
        .map(|e| e.expect("entry").path())
        .map(|p| {
            let n = p
                .extension()
                .and_then(|x| x.to_str())
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
            (n, p)
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut events = Vec::new();
    for (_, p) in &files {
        for line in std::fs::read_to_string(p).expect("audit file").lines() {
            strict(line).unwrap_or_else(|e| panic!("{}: {e}: {line}", p.display()));
            events.push(serde_json::from_str(line).expect("an event a line"));
        }
    }
    (events, files.len())
}

/// 60 desired names in example.com. of which another writer holds 50 (seeded before
/// the planner starts): 10 converge, 50 are conflicts. With `[audit]` rotating every
/// 4 KiB, `[auth]` (a reader, and a token scoped to example.org.) and JSON logs.
#[test]
fn a_conflict_burst_is_audited_once_per_record_and_history_reads_it_back() {
    let Some(tools) = Tools::find() else { return };
    let audit = "[audit]\nfile = \"audit/audit.jsonl\"\nmax_bytes = 4096\nkeep = 100";
    let (applier_extra, planner_extra, _other_state) = crate::auth::two_zones_with_auth(audit);
    let names: Vec<String> = (0..60).map(|i| format!("h{i}.example.com")).collect();
    let values: Vec<[String; 1]> = (0..60).map(|i| [format!("192.0.2.{i}")]).collect();
    let vrefs: Vec<Vec<&str>> = values
        .iter()
        .map(|v| v.iter().map(String::as_str).collect())
        .collect();
    let eps: Vec<(&str, &str, &[&str])> = names
        .iter()
        .zip(&vrefs)
        .map(|(n, v)| (n.as_str(), "A", v.as_slice()))
        .collect();
    let mut s = Stack::with_config(
        tools,
        &[("burst.yaml", &endpoints("burst", &eps))],
        "report",
        &applier_extra,
        &planner_extra,
    );
    std::fs::write(
        s.path("tokens.toml"),
        format!(
            "[[token]]\nname = \"reader\"\nsha256 = \"{}\"\nrole = \"read\"\n\
             [[token]]\nname = \"org-team\"\nsha256 = \"{}\"\nrole = \"write\"\nzones = [\"{OTHER}\"]\n",
            digest_hex(READER),
            digest_hex(ORG_ONLY)
        ),
    )
    .expect("tokens.toml");
    std::fs::create_dir_all(s.path("audit")).expect("audit dir");
    let held: Vec<(&str, &str, &str)> = names[..50]
        .iter()
        .map(|n| (n.as_str(), "A", "198.51.100.1"))
        .collect();
    seed(&s.state_dir(), &held);
    s.start_applier();
    let config = s.path("planner.toml");
    let listen = format!("127.0.0.1:{}", s.planner_port);
    s.planner = Some(Proc::spawn_with_env(
        "planner",
        &binary("dnsplane-planner"),
        &[
            "--config",
            config.to_str().expect("utf8"),
            "--listen",
            &listen,
        ],
        &[("DNSPLANE_LOG_FORMAT", "json"), ("DNSPLANE_LOG", "info")],
        s.path("planner.log"),
    ));
    crate::requeue::settle(&s, counts, (10, 50));

    // The file: exactly one CONFLICT outcome per held record, with the plan's reason;
    // an attempt and an APPLIED outcome (same batch) per free one. Rotated on the way.
    let (events, files) = audit_events(&s);
    assert!(
        files >= 3,
        "4 KiB files: expected rotation, got {files} file(s)"
    );
    let mut by_name: BTreeMap<String, Vec<&serde_json::Value>> = BTreeMap::new();
    for e in &events {
        by_name
            .entry(e["name"].as_str().expect("name").to_string())
            .or_default()
            .push(e);
    }
    for n in &names[..50] {
        let evs = &by_name[&format!("{n}.")];
        let conflicts: Vec<_> = evs.iter().filter(|e| e["outcome"] == "CONFLICT").collect();
        assert_eq!(conflicts.len(), 1, "{n}: {evs:#?}");
        assert_eq!(evs.len(), 1, "{n}: nothing was sent: {evs:#?}");
        let c = conflicts[0];
        assert_eq!(c["event"], "outcome");
        assert_eq!(c["zone"], "example.com.");
        assert_eq!(c["type"], "A");
        assert_eq!(c["old"], "60 198.51.100.1", "{c}");
        assert!(c["new"].as_str().unwrap().contains(" 192.0.2."), "{c}");
        assert!(
            c["reason"].as_str().unwrap().contains("nobody owns it"),
            "{c}"
        );
        assert!(c["source"].as_str().unwrap().starts_with("file:"), "{c}");
    }
    for n in &names[50..] {
        let evs = &by_name[&format!("{n}.")];
        let kinds: Vec<_> = evs
            .iter()
            .map(|e| (e["event"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [("attempt", ""), ("outcome", "APPLIED")],
            "{n}: {evs:#?}"
        );
        assert_eq!(evs[0]["batch_id"], evs[1]["batch_id"]);
        assert!(!evs[0]["batch_id"].as_str().unwrap().is_empty());
        assert_eq!(evs[1]["change"], "create");
        assert_eq!(evs[1]["old"], "");
    }

    // Planner/History over grpcurl: newest first, this name only.
    let (ok, out) = call(&s, READER, "History", r#"{"name":"h3.example.com"}"#);
    assert!(ok, "{out}");
    let h: serde_json::Value = serde_json::from_str(&out).expect("json");
    let evs = h["events"].as_array().expect("events");
    assert_eq!(evs.len(), 1, "{h}");
    assert_eq!(evs[0]["outcome"], "CONFLICT");
    let (ok, out) = call(&s, READER, "History", r#"{"name":"h55.example.com"}"#);
    assert!(ok, "{out}");
    let h: serde_json::Value = serde_json::from_str(&out).expect("json");
    let evs: Vec<_> = h["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["event"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(evs, ["outcome", "attempt"], "newest first: {h}");

    // The real `dnsplane history`.
    let tokfile = s.path("reader.token");
    std::fs::write(&tokfile, READER).expect("token file");
    let out = Command::new(binary("dnsplane"))
        .args(["history", "h3.example.com", "--zone", "example.com"])
        .args(["--addr", &format!("http://127.0.0.1:{}", s.planner_port)])
        .args(["--token-file", tokfile.to_str().expect("utf8")])
        .env("DNSPLANE_LOG", "warn")
        .output()
        .expect("run dnsplane");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("TIME"), "{text}");
    assert!(
        lines[1].contains("CONFLICT") && lines[1].contains("nobody owns it"),
        "{text}"
    );
    assert!(lines[1].contains("60 198.51.100.1 -> "), "{text}");
    assert_eq!(lines.last(), Some(&"1 event(s)"), "{text}");

    // Scopes: a token of example.org. cannot read example.com.'s history.
    let (ok, out) = call(&s, ORG_ONLY, "History", r#"{"name":"h3.example.com"}"#);
    assert!(!ok && out.contains("Code: PermissionDenied"), "{out}");
    assert!(
        !out.contains("198.51.100.1"),
        "nothing of the record shown: {out}"
    );
    // A push with [auth] on: its records' events name the token that pushed them, and
    // the scoped token reads the history of its own zone.
    let push = r#"{"source":"org","records":[{"name":"w.example.org","type":"A","ttl":60,"values":["192.0.2.9"]}]}"#;
    let (ok, out) = call(&s, ORG_ONLY, "PutDesired", push);
    assert!(ok, "{out}");
    let applied = wait_for(Duration::from_secs(30), || {
        let (ok, out) = call(
            &s,
            ORG_ONLY,
            "History",
            r#"{"name":"w.example.org","zone":"example.org"}"#,
        );
        let h: serde_json::Value = serde_json::from_str(&out).ok()?;
        let evs = h["events"].as_array()?.clone();
        (ok && evs.first()?["outcome"] == "APPLIED").then_some(evs)
    })
    .unwrap_or_else(|| panic!("the push was never audited as applied; logs:\n{}", s.logs()));
    for e in &applied {
        assert_eq!(e["caller"], "org-team", "{e}");
        assert_eq!(e["source"], "push:org", "{e}");
    }
    // A bad name: INVALID_ARGUMENT naming the field.
    let (ok, out) = call(&s, READER, "History", r#"{"name":"a..b"}"#);
    assert!(
        !ok && out.contains("Code: InvalidArgument") && out.contains("name"),
        "{out}"
    );

    // The JSON log: every line one object with each key once, the audit events
    // among them under their own target with their documented fields.
    let log = std::fs::read_to_string(s.path("planner.log")).expect("planner.log");
    let mut audited = 0;
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        strict(line).unwrap_or_else(|e| panic!("log line: {e}: {line}"));
        let v: serde_json::Value = serde_json::from_str(line).expect("json");
        if v["target"] == "dnsplane::audit" {
            audited += 1;
            for f in [
                "event",
                "zone",
                "name",
                "record_type",
                "old",
                "new",
                "change",
                "outcome",
                "reason",
                "batch_id",
                "trace_id",
                "source",
                "caller",
            ] {
                assert!(v["fields"].get(f).is_some(), "no {f}: {line}");
            }
        }
    }
    let (now, _) = audit_events(&s);
    assert_eq!(
        now.len(),
        events.len() + 2,
        "the push's attempt and outcome"
    );
    assert_eq!(audited, now.len(), "one log line per audit event");
}

/// The duplicate-key check can fail.
#[test]
fn the_strict_parser_refuses_a_key_named_twice() {
    assert!(strict(r#"{"fields":{"message":"a","message":"b"}}"#).is_err());
    assert!(strict(r#"{"a":[{"b":1},{"b":2}],"c":{"b":1}}"#).is_ok());
}

/// Without `[audit] file`, History says how to get one; a bad `[audit]` refuses the
/// start (exit 64) naming the key.
#[test]
fn history_needs_an_audit_file_and_bad_audit_config_refuses_the_start() {
    let Some(tools) = Tools::find() else { return };
    let base = endpoints("base", &[("base.example.com", "A", &["192.0.2.1"])]);
    let mut s = Stack::new(tools, &[("base.yaml", &base)], "report");
    s.start();
    let addr = format!("127.0.0.1:{}", s.planner_port);
    let (ok, out) = grpcurl(
        &s.tools.grpcurl,
        &[
            "-d",
            r#"{"name":"a.example.com"}"#,
            &addr,
            "dnsplane.v1.Planner/History",
        ],
    );
    assert!(!ok && out.contains("Code: FailedPrecondition"), "{out}");
    assert!(out.contains("[audit] file"), "{out}");
    drop(s);

    let dir = tempfile::tempdir().expect("tempdir");
    for (audit, key) in [
        (
            "[audit]\nfile = \"audit.jsonl\"\nmax_bytes = 0\n",
            "audit.max_bytes",
        ),
        (
            "[audit]\nfile = \"no/such/dir/audit.jsonl\"\n",
            "audit.file",
        ),
    ] {
        let config = dir.path().join("planner.toml");
        std::fs::write(
            &config,
            format!(
                "applier = \"http://127.0.0.1:1\"\nstate_dir = \"state\"\n\
                 [[zones]]\nname = \"example.com.\"\naccount = \"a\"\n{audit}"
            ),
        )
        .expect("config");
        let out = Command::new(binary("dnsplane-planner"))
            .args([
                "--config",
                config.to_str().expect("utf8"),
                "--listen",
                "127.0.0.1:0",
            ])
            .output()
            .expect("run planner");
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{key}: {text}");
        assert!(text.contains(key), "{key}: {text}");
    }
}
